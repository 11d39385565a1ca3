//! The one way openfiles runs git: [`command`] builds every git `Command` (the baseline's,
//! `session add-git`'s, the review's diff), so no call site can forget the rule.
//!
//! The rule: a repository's files are data. Nothing a repository says — its `.git/config`
//! (and what that includes), its `.git/info/attributes`, its `.gitattributes` — may make
//! openfiles run a program. Every git command openfiles runs gets:
//!
//! - `core.fsmonitor=false` and `core.hooksPath=/dev/null` (the monitor and hooks a
//!   repository names);
//! - every filter driver (`filter.<name>.clean|smudge|process`) that the repository's own
//!   config defines set empty, so no attribute can run it (git runs no filter whose command
//!   is empty); drivers only the user's own config defines (git-lfs in `~/.gitconfig`) stay;
//! - for `diff`, `show` and `log`: `--no-ext-diff --no-textconv` (`diff.external`, diff
//!   drivers' commands and textconv);
//! - `GIT_PAGER` set to the user's pager (`pager.<command>` or `core.pager` from the
//!   user's global/system config or `-c`, else `$PAGER`, else `less`) when it is not set
//!   already, so a repository's `core.pager`/`pager.<command>` is never the one run;
//! - no lazy fetch from a promisor remote and no transport at all (`GIT_NO_LAZY_FETCH`,
//!   `protocol.allow=never`: a fetch would run the repository's `core.sshCommand`), no
//!   automatic gc or maintenance, no optional locks;
//! - `GIT_DIR`, `GIT_WORK_TREE` and `GIT_INDEX_FILE` removed (the repository is the one
//!   holding the folder named), stdin from `/dev/null`.
//!
//! The user's global and system config still apply (colours, their pager, their excludes).
//!
//! The config is read (`git config --get-regexp`, never run) once per repository and
//! config state, not once per command: [`command`] keeps what it read, keyed by the
//! repository's git folder and the modification times of every config file git would read
//! (the repository's `config` and `config.worktree`, the user's and the system's), so a
//! baseline job's many commands cost one read. The read has a deadline
//! ([`CONFIG_TIMEOUT`]); one that does not finish in time fails the command (the filters it
//! would have named stay unknown, so nothing may run).

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use openfiles_gate::Program;

/// Settings given on every git command line.
const ALWAYS: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "protocol.allow=never",
    "gc.auto=0",
    "maintenance.auto=false",
];

/// Config scopes that belong to the repository (`--show-scope`); everything else is the
/// user's (system, global, command line).
const REPOSITORY_SCOPES: &[&str] = &["local", "worktree", "unknown"];

/// Subcommands that may run diff drivers and textconv programs.
const DIFFING: &[&str] = &["diff", "show", "log"];

/// How long reading the config may take before the command fails.
pub const CONFIG_TIMEOUT: Duration = Duration::from_secs(5);

/// How many repositories' config reads are kept.
const CACHE_MAX: usize = 64;

/// `git -C dir ARGS…` with the rule of this module applied. `args` starts with the
/// subcommand. Git is the user's own program (`PATH`'s absolute entries, through the gate);
/// an error when there is none.
pub fn command<I, S>(dir: &Path, args: I) -> std::io::Result<Command>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<S> = args.into_iter().collect();
    let sub = args
        .first()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .unwrap_or_default();
    let found = parse(&repository_config(dir)?, &sub);
    let mut cmd = base(dir)?;
    // Command-line config is read last, so these win over the repository's. Set through
    // the environment (`GIT_CONFIG_KEY_n`), which takes a key with any characters; appended
    // after the user's own (`GIT_CONFIG_COUNT`) and the gate's.
    let first = cmd
        .get_envs()
        .find(|(k, _)| *k == "GIT_CONFIG_COUNT")
        .and_then(|(_, v)| v)
        .map(|v| v.to_os_string())
        .or_else(|| std::env::var_os("GIT_CONFIG_COUNT"))
        .and_then(|n| n.to_str().and_then(|n| n.parse::<usize>().ok()))
        .unwrap_or(0);
    let mut n = first;
    for name in &found.filters {
        for key in ["clean", "smudge", "process"] {
            cmd.env(
                format!("GIT_CONFIG_KEY_{n}"),
                format!("filter.{name}.{key}"),
            )
            .env(format!("GIT_CONFIG_VALUE_{n}"), "");
            n += 1;
        }
        cmd.env(
            format!("GIT_CONFIG_KEY_{n}"),
            format!("filter.{name}.required"),
        )
        .env(format!("GIT_CONFIG_VALUE_{n}"), "false");
        n += 1;
    }
    if n > first {
        cmd.env("GIT_CONFIG_COUNT", n.to_string());
    }
    if std::env::var_os("GIT_PAGER").is_none() {
        let pager = found
            .user_pager
            .or_else(|| std::env::var("PAGER").ok())
            .unwrap_or_else(|| "less".to_owned());
        cmd.env("GIT_PAGER", pager);
    }
    let mut args = args.into_iter();
    if let Some(s) = args.next() {
        cmd.arg(s.as_ref());
    }
    if DIFFING.contains(&sub.as_str()) {
        cmd.args(["--no-ext-diff", "--no-textconv"]);
    }
    cmd.args(args);
    Ok(cmd)
}

/// `git -C dir` with the fixed settings (no lookup of the repository's config).
fn base(dir: &Path) -> std::io::Result<Command> {
    let git = Program::user("git", "git")?;
    let mut cmd = git.command([OsStr::new("-C"), dir.as_os_str()]);
    for setting in ALWAYS {
        cmd.args(["-c", setting]);
    }
    cmd.env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null());
    Ok(cmd)
}

/// What the config says that [`command`] must counter.
#[derive(Debug, Default, PartialEq, Eq)]
struct Found {
    /// Filter drivers the repository's config defines.
    filters: Vec<String>,
    /// The user's own pager for `sub` (`pager.<sub>` if it names a program, else
    /// `core.pager`), from scopes outside the repository.
    user_pager: Option<String>,
}

/// What identifies one state of the config git reads in `dir`: the repository's git folder
/// and the modification time (and size) of each config file, `None` for one that is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConfigKey {
    dir: PathBuf,
    files: Vec<(PathBuf, Option<(SystemTime, u64)>)>,
    env: Vec<(String, String)>,
}

/// The config files git reads for a command in `dir` (without includes, which a changed
/// including file usually accompanies).
fn config_key(dir: &Path) -> ConfigKey {
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(git_dir) = git_dir(dir) {
        files.push(git_dir.join("config"));
        files.push(git_dir.join("config.worktree"));
        if let Some(common) = common_dir(&git_dir) {
            files.push(common.join("config"));
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(home) = &home {
        files.push(home.join(".gitconfig"));
    }
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".config")));
    if let Some(xdg) = xdg {
        files.push(xdg.join("git/config"));
    }
    files.push(PathBuf::from("/etc/gitconfig"));
    let stamped = files
        .into_iter()
        .map(|f| {
            let stamp = std::fs::metadata(&f)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())));
            (f, stamp)
        })
        .collect();
    let env = std::env::vars()
        .filter(|(k, _)| k.starts_with("GIT_CONFIG"))
        .collect();
    ConfigKey {
        dir: dir.to_owned(),
        files: stamped,
        env,
    }
}

/// The git folder of the repository holding `dir`: the nearest `.git` folder, or the one a
/// `.git` file (a worktree's, a submodule's) names. Read, never followed into a program.
fn git_dir(dir: &Path) -> Option<PathBuf> {
    for at in dir.ancestors() {
        let dot = at.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot) else {
            continue;
        };
        if meta.is_dir() {
            return Some(dot);
        }
        let text = openfiles_gate::confine::read_regular(
            &dot,
            openfiles_gate::confine::Last::NoFollow,
            4096,
        )
        .ok()?;
        let text = String::from_utf8_lossy(&text);
        let named = text.trim().strip_prefix("gitdir:")?.trim();
        return Some(at.join(named));
    }
    None
}

/// A worktree's common git folder (its `commondir` file), where the shared `config` lives.
fn common_dir(git_dir: &Path) -> Option<PathBuf> {
    let text = openfiles_gate::confine::read_regular(
        &git_dir.join("commondir"),
        openfiles_gate::confine::Last::NoFollow,
        4096,
    )
    .ok()?;
    Some(git_dir.join(String::from_utf8_lossy(&text).trim()))
}

type ConfigCache = Vec<(ConfigKey, std::sync::Arc<Vec<u8>>)>;
static CONFIG: Mutex<ConfigCache> = Mutex::new(Vec::new());

/// The output of reading (never running) the config relevant to [`command`], from the
/// cache when no config file changed since. Outside a repository, or without git, nothing
/// is found; a read past [`CONFIG_TIMEOUT`] is an error.
fn repository_config(dir: &Path) -> std::io::Result<std::sync::Arc<Vec<u8>>> {
    let key = config_key(dir);
    {
        let cache = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, out)) = cache.iter().find(|(k, _)| *k == key) {
            return Ok(out.clone());
        }
    }
    let out = std::sync::Arc::new(read_config(dir)?);
    let mut cache = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
    cache.retain(|(k, _)| k.dir != key.dir);
    if cache.len() >= CACHE_MAX {
        cache.remove(0);
    }
    cache.push((key, out.clone()));
    Ok(out)
}

/// Run `git config --show-scope -z --get-regexp` in `dir`, killed after [`CONFIG_TIMEOUT`].
fn read_config(dir: &Path) -> std::io::Result<Vec<u8>> {
    let child = base(dir).and_then(|mut c| {
        c.args([
            "config",
            "--show-scope",
            "-z",
            "--get-regexp",
            r"^(filter\..*|core\.pager|pager\..*)$",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    });
    let Ok(mut child) = child else {
        return Ok(Vec::new());
    };
    let Some(mut stdout) = child.stdout.take() else {
        return Ok(Vec::new());
    };
    // Read on a thread so the wait below can give up; the pipe closes when git exits or
    // is killed.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    let deadline = Instant::now() + CONFIG_TIMEOUT;
    loop {
        match child.try_wait()? {
            Some(_) => break,
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "reading git's config in {} took over {} s",
                        dir.display(),
                        CONFIG_TIMEOUT.as_secs()
                    ),
                ));
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    Ok(reader.join().unwrap_or_default())
}

/// Parse `git config --show-scope -z --get-regexp` output: `scope NUL name [LF value] NUL`.
fn parse(out: &[u8], sub: &str) -> Found {
    let text = String::from_utf8_lossy(out);
    let mut fields = text.split('\0');
    let mut found = Found::default();
    let (mut core_pager, mut sub_pager) = (None, None);
    let sub_key = format!("pager.{}", sub.to_ascii_lowercase());
    while let (Some(scope), Some(entry)) = (fields.next(), fields.next()) {
        let (name, value) = entry.split_once('\n').unwrap_or((entry, ""));
        let repository = REPOSITORY_SCOPES.contains(&scope);
        if let Some(rest) = name.strip_prefix("filter.") {
            if let Some((driver, _key)) = rest.rsplit_once('.') {
                if repository && !found.filters.iter().any(|f| f == driver) {
                    found.filters.push(driver.to_owned());
                }
            }
        } else if !repository && name.eq_ignore_ascii_case("core.pager") {
            core_pager = Some(value.to_owned());
        } else if !repository && name.eq_ignore_ascii_case(&sub_key) && !is_bool(value) {
            sub_pager = Some(value.to_owned());
        }
    }
    found.user_pager = sub_pager.or(core_pager);
    found
}

/// A config value git reads as a boolean (then `pager.<cmd>` only says whether to page).
fn is_bool(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "" | "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_s_filters_are_found_and_only_the_user_s_pager_is_kept() {
        let out = b"global\0core.pager\nless -R\0local\0core.pager\nevil\0\
local\0filter.ev.il.smudge\ntouch x\0global\0filter.lfs.clean\ngit-lfs clean\0\
local\0pager.diff\nevil2\0global\0pager.diff\ntrue\0local\0filter.bare.process\0";
        assert_eq!(
            parse(out, "diff"),
            Found {
                filters: vec!["ev.il".into(), "bare".into()],
                user_pager: Some("less -R".into()),
            }
        );
        let out = b"system\0pager.diff\ndelta\0global\0core.pager\nless\0";
        assert_eq!(parse(out, "diff").user_pager.as_deref(), Some("delta"));
        assert_eq!(parse(out, "log").user_pager.as_deref(), Some("less"));
        assert_eq!(parse(b"", "diff"), Found::default());
    }

    /// A real repository: the config is read once while no config file changes, and read
    /// again (finding the new filter) once one does.
    #[test]
    fn the_config_is_read_once_per_state_of_its_files() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().canonicalize().unwrap();
        let init = base(&dir).unwrap().args(["init", "-q"]).status().unwrap();
        assert!(init.success());
        let first = repository_config(&dir).unwrap();
        let again = repository_config(&dir).unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &again), "read twice");
        assert!(parse(&first, "diff").filters.is_empty());

        let config = dir.join(".git/config");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str("[filter \"ev\"]\n\tsmudge = touch pwned\n");
        std::fs::write(&config, text).unwrap();
        // A different stamp whatever the file system's time resolution.
        let later = SystemTime::now() + Duration::from_secs(10);
        std::fs::File::options()
            .write(true)
            .open(&config)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let changed = repository_config(&dir).unwrap();
        assert!(!std::sync::Arc::ptr_eq(&first, &changed));
        assert_eq!(parse(&changed, "diff").filters, ["ev"]);
        // And the command built now counters it.
        let cmd = command(&dir, ["status"]).unwrap();
        assert!(cmd
            .get_envs()
            .any(|(_, v)| v.is_some_and(|v| v == "filter.ev.smudge")));
    }

    #[test]
    fn diffing_commands_get_no_external_programs() {
        let t = tempfile::tempdir().unwrap();
        let cmd = command(t.path(), ["diff", "HEAD", "--", "a"]).unwrap();
        let args: Vec<_> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = args.iter().position(|a| a == "diff").unwrap();
        assert_eq!(
            &args[at..],
            ["diff", "--no-ext-diff", "--no-textconv", "HEAD", "--", "a"]
        );
        assert!(args.contains(&"core.fsmonitor=false".to_owned()));
        let cmd = command(t.path(), ["rev-parse", "HEAD"]).unwrap();
        assert!(!cmd.get_args().any(|a| a == "--no-ext-diff"));
    }
}
