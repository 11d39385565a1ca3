//! The one way openfiles starts a process.
//!
//! Every program the service, the CLI, the plugin host and the plugins start is built here,
//! by [`Program`], from a [`Scope`]: the workspace it is started for (if any) and how far the
//! user trusts it. The gate
//!
//! - resolves the executable: an absolute path, or a name found on `PATH`'s *absolute*
//!   entries (a relative entry — `.`, `bin`, an empty one — is never searched, so a program
//!   run from inside a repository cannot find the repository's `./go`); for a workspace
//!   the user has not trusted, never a file inside that workspace, also not through a
//!   symlink on `PATH` that leads into it;
//! - sets the environment the trust level calls for ([`Scope::untrusted`]): the service
//!   manager's handshakes never inherited; `PATH` without its relative entries (and, for an
//!   untrusted workspace, without the entries inside it); for an untrusted workspace also Go
//!   kept local (`GOTOOLCHAIN=local`: a repository's `toolchain` line downloads and runs a
//!   toolchain; `CGO_ENABLED=0`: cgo runs a C compiler with the repository's flags;
//!   `-buildvcs=false`) and git's repository-run programs off for any git a child runs
//!   (`core.fsmonitor`, `core.hooksPath`, transports: the config given on git's command line
//!   through `GIT_CONFIG_COUNT`, which wins over the repository's own);
//! - records what it started ([`recent`]): program, arguments, workspace, trust and why, so
//!   `openfiles status --json` can say what ran for a workspace and why it was allowed.
//!
//! `tests/it/house.rs` fails the build when a process is started anywhere else
//! (`Command::new`, `fork`, `exec*`, `posix_spawn`).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::child_env::PRIVATE_ENV;

/// How far the user trusts what a program is started for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// Not on behalf of a workspace: the user's own programs (their shell in a terminal,
    /// their editor, the service itself, `systemctl`). Resolved like a shell would, less
    /// relative `PATH` entries.
    User,
    /// A workspace the user trusts: its own tools (`node_modules/.bin`, `.venv/bin`) may run.
    Trusted,
    /// A workspace the user has not trusted: only programs installed outside it, with the
    /// features that obey a repository's files off.
    Untrusted,
}

impl Trust {
    /// The wire spelling (`status --json`).
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::User => "user",
            Trust::Trusted => "trusted",
            Trust::Untrusted => "untrusted",
        }
    }
}

/// What a program is started for.
#[derive(Debug, Clone)]
pub struct Scope {
    workspace: Option<PathBuf>,
    trust: Trust,
    /// The workspace with its symlinks resolved, found on the first lookup that needs it
    /// (not part of the scope's identity: equality and hashing leave it out).
    real_workspace: OnceLock<PathBuf>,
}

impl PartialEq for Scope {
    fn eq(&self, other: &Scope) -> bool {
        self.workspace == other.workspace && self.trust == other.trust
    }
}

impl Eq for Scope {}

impl std::hash::Hash for Scope {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.workspace.hash(state);
        self.trust.hash(state);
    }
}

impl Scope {
    /// The user's own program, for no workspace.
    pub fn user() -> Scope {
        Scope {
            workspace: None,
            trust: Trust::User,
            real_workspace: OnceLock::new(),
        }
    }

    /// A program started for `workspace`, trusted or not.
    pub fn workspace(workspace: &Path, trusted: bool) -> Scope {
        Scope {
            workspace: Some(workspace.to_path_buf()),
            trust: if trusted {
                Trust::Trusted
            } else {
                Trust::Untrusted
            },
            real_workspace: OnceLock::new(),
        }
    }

    pub fn trust(&self) -> Trust {
        self.trust
    }

    pub fn workspace_root(&self) -> Option<&Path> {
        self.workspace.as_deref()
    }

    /// Whether the features that obey a repository's files must be off.
    pub fn untrusted(&self) -> bool {
        self.trust == Trust::Untrusted
    }

    /// Whether `path` lies in the workspace, as written or once its symlinks are resolved.
    fn holds(&self, path: &Path) -> bool {
        let Some(ws) = &self.workspace else {
            return false;
        };
        if path.starts_with(ws) {
            return true;
        }
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        real.starts_with(self.real_workspace(ws)) || real.starts_with(ws)
    }

    /// `ws` (this scope's workspace) canonical: resolved once, then kept; a folder that
    /// cannot be resolved (yet) counts as written, and is tried again next time.
    fn real_workspace<'a>(&'a self, ws: &'a Path) -> &'a Path {
        if let Some(real) = self.real_workspace.get() {
            return real;
        }
        match std::fs::canonicalize(ws) {
            Ok(real) => self.real_workspace.get_or_init(|| real),
            Err(_) => ws,
        }
    }

    /// Whether a `PATH` entry may be searched for this scope.
    fn searches(&self, dir: &Path) -> bool {
        dir.is_absolute() && !(self.untrusted() && self.holds(dir))
    }
}

/// Why a program was not started.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("`{name}` was not found on PATH")]
    NotFound { name: String },
    #[error("`{}` is a relative path; only absolute ones run", path.display())]
    Relative { path: PathBuf },
    #[error(
        "`{}` is inside the workspace {}, which is not trusted (`openfiles trust {}` lets it run its own tools)",
        path.display(),
        workspace.display(),
        workspace.display()
    )]
    InWorkspace { path: PathBuf, workspace: PathBuf },
    #[error("`{}` is not an executable file", path.display())]
    NotExecutable { path: PathBuf },
}

impl From<Refused> for std::io::Error {
    fn from(e: Refused) -> std::io::Error {
        let kind = match e {
            Refused::NotFound { .. } => std::io::ErrorKind::NotFound,
            _ => std::io::ErrorKind::PermissionDenied,
        };
        std::io::Error::new(kind, e)
    }
}

/// A program the gate allowed for a scope: build its [`Command`] with [`Program::command`].
#[derive(Debug, Clone)]
pub struct Program {
    path: PathBuf,
    scope: Scope,
    why: &'static str,
}

/// Whether `p` is a regular file (after symlinks) with an execute bit.
pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `name` would be found for `scope` on the current `PATH`, by the gate's rules (for
/// lookups that only report: `doctor`, `tools`).
pub fn search(name: &str, scope: &Scope) -> Option<PathBuf> {
    search_in(name, scope, std::env::var_os("PATH").as_deref())
}

fn search_in(name: &str, scope: &Scope, path: Option<&OsStr>) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    std::env::split_paths(path?)
        .filter(|d| scope.searches(d))
        .map(|d| d.join(name))
        .find(|p| is_executable(p) && !(scope.untrusted() && scope.holds(p)))
}

impl Program {
    /// `name` as the user installed it: found on `PATH`'s absolute entries (never inside an
    /// untrusted workspace). A name with a `/` is taken as a path ([`Program::at`]).
    pub fn find(name: &str, scope: &Scope, why: &'static str) -> Result<Program, Refused> {
        if name.contains('/') {
            return Program::at(Path::new(name), scope, why);
        }
        match search(name, scope) {
            Some(path) => Ok(Program {
                path,
                scope: scope.clone(),
                why,
            }),
            None => Err(Refused::NotFound {
                name: name.to_owned(),
            }),
        }
    }

    /// The user's own program `name` (for no workspace: `systemctl`, `journalctl`, their
    /// shell, their clipboard tool), found on `PATH`'s absolute entries.
    pub fn user(name: &str, why: &'static str) -> Result<Program, Refused> {
        Program::find(name, &Scope::user(), why)
    }

    /// The program at `path`, which must be absolute, executable and — for an untrusted
    /// workspace — outside it (a workspace's `node_modules/.bin` server is found by its
    /// caller and allowed here only when the workspace is trusted).
    pub fn at(path: &Path, scope: &Scope, why: &'static str) -> Result<Program, Refused> {
        if !path.is_absolute() {
            return Err(Refused::Relative {
                path: path.to_path_buf(),
            });
        }
        if scope.untrusted() && scope.holds(path) {
            return Err(Refused::InWorkspace {
                path: path.to_path_buf(),
                workspace: scope.workspace.clone().unwrap_or_default(),
            });
        }
        if !is_executable(path) {
            return Err(Refused::NotExecutable {
                path: path.to_path_buf(),
            });
        }
        Ok(Program {
            path: path.to_path_buf(),
            scope: scope.clone(),
            why,
        })
    }

    /// This very program (`std::env::current_exe`): the service started by a client, a
    /// plugin host started by the service.
    pub fn this_exe(why: &'static str) -> std::io::Result<Program> {
        Ok(Program {
            path: std::env::current_exe()?,
            scope: Scope::user(),
            why,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The [`Command`] that runs this program with `args`, with the environment of its
    /// scope; recorded in [`recent`]. Callers set stdio, cwd and further variables; one that
    /// needs `tokio::process::Command` converts it with `From`.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut cmd = Command::new(&self.path);
        cmd.args(&args);
        for (k, v) in environment(&self.scope, |k| std::env::var_os(k)) {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        record(self, &args);
        cmd
    }
}

/// Start the process `cmd` runs at a lower CPU priority: its niceness raised by `by` (a
/// project's test suite run for a check must not slow the user's editor or agent). Only
/// ever lowers the priority; a failure to do so is ignored (the process runs as it would).
pub fn lower_priority(cmd: &mut Command, by: i32) {
    use std::os::unix::process::CommandExt;
    let by = by.clamp(0, 19);
    // SAFETY: nice(2) is a plain syscall, async-signal-safe; nothing else runs between the
    // fork and the exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::nice(by);
            Ok(())
        });
    }
}

/// The variables a child of `scope` gets set (`Some`) or removed (`None`), given the
/// current environment `get`.
pub fn environment(
    scope: &Scope,
    get: impl Fn(&str) -> Option<OsString>,
) -> Vec<(String, Option<OsString>)> {
    let mut out: Vec<(String, Option<OsString>)> =
        PRIVATE_ENV.iter().map(|k| (k.to_string(), None)).collect();
    if let Some(path) = get("PATH") {
        let kept: Vec<PathBuf> = std::env::split_paths(&path)
            .filter(|d| scope.searches(d))
            .collect();
        if let Ok(joined) = std::env::join_paths(kept) {
            out.push(("PATH".into(), Some(joined)));
        }
    }
    if scope.untrusted() {
        out.push(("GOTOOLCHAIN".into(), Some("local".into())));
        out.push(("CGO_ENABLED".into(), Some("0".into())));
        let mut goflags = get("GOFLAGS")
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !goflags
            .split_whitespace()
            .any(|f| f.starts_with("-buildvcs"))
        {
            if !goflags.is_empty() {
                goflags.push(' ');
            }
            goflags.push_str("-buildvcs=false");
        }
        out.push(("GOFLAGS".into(), Some(goflags.into())));
        let first = get("GIT_CONFIG_COUNT")
            .and_then(|n| n.to_str().and_then(|n| n.parse::<usize>().ok()))
            .unwrap_or(0);
        let mut n = first;
        for (key, value) in GIT_OFF {
            out.push((format!("GIT_CONFIG_KEY_{n}"), Some((*key).into())));
            out.push((format!("GIT_CONFIG_VALUE_{n}"), Some((*value).into())));
            n += 1;
        }
        out.push(("GIT_CONFIG_COUNT".into(), Some(n.to_string().into())));
        out.push(("GIT_TERMINAL_PROMPT".into(), Some("0".into())));
        out.push(("GIT_NO_LAZY_FETCH".into(), Some("1".into())));
    }
    out
}

/// Git settings given to every git a child of an untrusted workspace runs: no program the
/// repository's config names.
const GIT_OFF: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("protocol.allow", "never"),
    ("core.sshCommand", "false"),
    ("diff.external", ""),
];

/// One program the gate started, in this process or (reported by it, [`note`]) in a child
/// process of ours that runs code of its own: a plugin library in its plugin host.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ran {
    /// When (ms since the epoch).
    pub at_ms: u64,
    pub program: PathBuf,
    /// The first arguments (at most [`ARGS_KEPT`], each at most [`TEXT_KEPT`] bytes).
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub workspace: Option<PathBuf>,
    pub trust: Trust,
    /// Why it runs (the caller's words: "language server", "doctor probe", …).
    pub why: Cow<'static, str>,
}

/// How many programs [`recent`] keeps.
pub const KEPT: usize = 128;
/// How many of a program's arguments are kept.
pub const ARGS_KEPT: usize = 8;
/// How many bytes of an argument (or of a reported `why`) are kept.
pub const TEXT_KEPT: usize = 200;

/// What ran, and how much of it was handed on by [`unreported`].
struct Record {
    list: VecDeque<Ran>,
    /// Programs recorded since the process started.
    total: u64,
    /// Of `total`, how many [`unreported`] handed on.
    reported: u64,
}

static RAN: Mutex<Record> = Mutex::new(Record {
    list: VecDeque::new(),
    total: 0,
    reported: 0,
});

fn the_record() -> std::sync::MutexGuard<'static, Record> {
    RAN.lock().unwrap_or_else(|e| e.into_inner())
}

/// `s` cut to [`TEXT_KEPT`] bytes (at a character boundary, marked `…`).
fn cut(mut s: String) -> String {
    if s.len() > TEXT_KEPT {
        let mut end = TEXT_KEPT;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

fn keep(ran: Ran) {
    let mut record = the_record();
    if record.list.len() == KEPT {
        record.list.pop_front();
    }
    record.list.push_back(ran);
    record.total += 1;
}

fn record(program: &Program, args: &[OsString]) {
    let at_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let args = args
        .iter()
        .take(ARGS_KEPT)
        .map(|a| cut(a.to_string_lossy().into_owned()))
        .collect();
    keep(Ran {
        at_ms,
        program: program.path.clone(),
        args,
        workspace: program.scope.workspace.clone(),
        trust: program.scope.trust,
        why: Cow::Borrowed(program.why),
    });
}

/// The programs this process started, oldest first (at most [`KEPT`]).
pub fn recent() -> Vec<Ran> {
    the_record().list.iter().cloned().collect()
}

/// The programs recorded since the last call, oldest first (those that fell out of the
/// [`KEPT`] last are gone): what a process hands on to the one that shows what ran. A plugin
/// library has its own copy of the gate, which its host cannot read; its answers carry these.
pub fn unreported() -> Vec<Ran> {
    let mut record = the_record();
    let new = (record.total - record.reported).min(record.list.len() as u64) as usize;
    record.reported = record.total;
    let skip = record.list.len() - new;
    record.list.iter().skip(skip).cloned().collect()
}

/// Record a program a child process of ours reports it started (a plugin, through its
/// host), cut as this process's own are: it is shown in `status` beside them.
pub fn note(ran: Ran) {
    keep(Ran {
        args: ran.args.into_iter().take(ARGS_KEPT).map(cut).collect(),
        why: Cow::Owned(cut(ran.why.into_owned())),
        ..ran
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn lower_priority_raises_the_childs_niceness() {
        let sh = Program::user("sh", "test").unwrap();
        let own = std::fs::read_to_string("/proc/self/stat").ok();
        let mut cmd = sh.command(["-c", "cut -d' ' -f19 /proc/self/stat"]);
        lower_priority(&mut cmd, 7);
        let out = cmd.output().unwrap();
        let nice: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let ours: i32 = own
            .and_then(|s| s.rsplit(')').next().map(str::to_owned))
            .and_then(|s| s.split_whitespace().nth(16).and_then(|n| n.parse().ok()))
            .unwrap_or(0);
        assert_eq!(nice, (ours + 7).min(19));
    }

    fn exe(dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_relative_path_entry_is_never_searched() {
        let t = tempfile::tempdir().unwrap();
        exe(t.path(), "openfiles-gate-tool");
        let cwd = std::env::current_dir().unwrap();
        let rel = pathdiff(t.path(), &cwd);
        let path = std::env::join_paths([rel.clone(), PathBuf::from(".")]).unwrap();
        assert_eq!(
            search_in("openfiles-gate-tool", &Scope::user(), Some(&path)),
            None,
            "relative entry {rel:?} searched"
        );
        let abs = std::env::join_paths([t.path()]).unwrap();
        assert_eq!(
            search_in("openfiles-gate-tool", &Scope::user(), Some(&abs)),
            Some(t.path().join("openfiles-gate-tool"))
        );
    }

    fn pathdiff(target: &Path, from: &Path) -> PathBuf {
        let up = from.components().count() - 1;
        let mut p = PathBuf::new();
        for _ in 0..up {
            p.push("..");
        }
        p.join(target.strip_prefix("/").unwrap())
    }

    #[test]
    fn an_untrusted_workspace_supplies_no_program() {
        let t = tempfile::tempdir().unwrap();
        let ws = t.path().join("repo");
        let bin = ws.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        let tool = exe(&bin, "openfiles-gate-server");
        // A symlink on an absolute PATH entry outside the workspace that leads into it.
        let outside = t.path().join("bin");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&tool, outside.join("openfiles-gate-linked")).unwrap();
        let untrusted = Scope::workspace(&ws, false);
        let trusted = Scope::workspace(&ws, true);
        assert!(matches!(
            Program::at(&tool, &untrusted, "test"),
            Err(Refused::InWorkspace { .. })
        ));
        assert!(Program::at(&tool, &trusted, "test").is_ok());
        let path = std::env::join_paths([bin.clone(), outside.clone()]).unwrap();
        assert_eq!(
            search_in("openfiles-gate-server", &untrusted, Some(&path)),
            None
        );
        assert_eq!(
            search_in("openfiles-gate-linked", &untrusted, Some(&path)),
            None
        );
        assert_eq!(
            search_in("openfiles-gate-server", &trusted, Some(&path)),
            Some(tool.clone())
        );
        assert!(matches!(
            Program::at(Path::new("node_modules/.bin/x"), &trusted, "test"),
            Err(Refused::Relative { .. })
        ));
    }

    #[test]
    fn a_workspace_named_through_a_symlink_is_resolved_once_and_holds_its_files() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("repo");
        let bin = real.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        let tool = exe(&bin, "openfiles-gate-own");
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let scope = Scope::workspace(&link, false);
        assert_eq!(
            scope.real_workspace.get(),
            None,
            "nothing resolved before a lookup"
        );
        assert!(matches!(
            Program::at(&tool, &scope, "test"),
            Err(Refused::InWorkspace { .. })
        ));
        assert_eq!(
            scope.real_workspace.get(),
            Some(&real.canonicalize().unwrap()),
            "the canonical root is kept for the next lookup"
        );
        assert!(matches!(
            Program::at(&tool, &scope, "test"),
            Err(Refused::InWorkspace { .. })
        ));
        // The kept root is no part of the scope's identity.
        assert_eq!(scope, Scope::workspace(&link, false));
        let hash = |s: &Scope| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            s.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&scope), hash(&Scope::workspace(&link, false)));
        // A folder that does not exist yet is not resolved, so it is tried again later.
        let later = Scope::workspace(&t.path().join("later"), false);
        assert!(!later.holds(&t.path().join("elsewhere")));
        assert_eq!(later.real_workspace.get(), None);
    }

    #[test]
    fn an_untrusted_child_keeps_go_and_git_local() {
        let ws = Path::new("/home/u/repo");
        let env = |scope: &Scope| {
            environment(scope, |k| match k {
                "PATH" => Some("/usr/bin:.::/home/u/repo/bin:bin".into()),
                "GIT_CONFIG_COUNT" => Some("2".into()),
                "GOFLAGS" => Some("-mod=readonly".into()),
                _ => None,
            })
        };
        let get = |e: &[(String, Option<OsString>)], k: &str| {
            e.iter()
                .rev()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.clone())
        };
        let u = env(&Scope::workspace(ws, false));
        assert_eq!(get(&u, "PATH"), Some("/usr/bin".into()));
        assert_eq!(get(&u, "GOTOOLCHAIN"), Some("local".into()));
        assert_eq!(get(&u, "CGO_ENABLED"), Some("0".into()));
        assert_eq!(
            get(&u, "GOFLAGS"),
            Some("-mod=readonly -buildvcs=false".into())
        );
        assert_eq!(get(&u, "GIT_CONFIG_KEY_2"), Some("core.fsmonitor".into()));
        assert_eq!(
            get(&u, "GIT_CONFIG_COUNT"),
            Some((2 + GIT_OFF.len()).to_string().into())
        );
        for var in PRIVATE_ENV {
            assert!(u.contains(&(var.to_string(), None)), "{var} inherited");
        }
        let t = env(&Scope::workspace(ws, true));
        assert_eq!(get(&t, "PATH"), Some("/usr/bin:/home/u/repo/bin".into()));
        assert_eq!(get(&t, "GOTOOLCHAIN"), None);
        assert_eq!(get(&t, "GIT_CONFIG_COUNT"), None);
    }

    #[test]
    fn what_ran_is_recorded_with_its_scope() {
        let p = Program::find("sh", &Scope::workspace(Path::new("/w"), false), "test").unwrap();
        let status = p.command(["-c", "exit 3"]).status().unwrap();
        assert_eq!(status.code(), Some(3));
        let last = recent()
            .into_iter()
            .rev()
            .find(|r| r.why == "test" && r.args == ["-c", "exit 3"])
            .unwrap();
        assert_eq!(last.trust, Trust::Untrusted);
        assert_eq!(last.workspace.as_deref(), Some(Path::new("/w")));
    }

    #[test]
    fn what_a_child_reports_is_kept_cut_and_handed_on_once() {
        let long = "x".repeat(TEXT_KEPT + 50);
        let reported = Ran {
            at_ms: 7,
            program: "/usr/bin/child-tool".into(),
            args: vec![long.clone(); ARGS_KEPT + 3],
            workspace: Some("/w/child".into()),
            trust: Trust::Trusted,
            why: Cow::Owned(long),
        };
        let wire = serde_json::to_value(&reported).unwrap();
        assert_eq!(wire["trust"], "trusted");
        assert_eq!(wire["atMs"], 7);
        let back: Ran = serde_json::from_value(wire).unwrap();
        assert_eq!(back, reported);
        note(back);
        let kept = recent()
            .into_iter()
            .rev()
            .find(|r| r.program == Path::new("/usr/bin/child-tool"))
            .unwrap();
        assert_eq!(kept.args.len(), ARGS_KEPT);
        assert!(kept
            .args
            .iter()
            .all(|a| a.len() <= TEXT_KEPT + '…'.len_utf8()));
        assert!(kept.why.len() <= TEXT_KEPT + '…'.len_utf8());
        // Handed on once: a second call no longer has it.
        let first = unreported();
        assert!(first
            .iter()
            .any(|r| r.program == Path::new("/usr/bin/child-tool")));
        assert!(!unreported()
            .iter()
            .any(|r| r.program == Path::new("/usr/bin/child-tool")));
    }
}
