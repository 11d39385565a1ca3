//! `openfiles hooks install|uninstall|status`: writing each agent's hook configuration so
//! it runs `openfiles hook --agent ID`, and taking it out again; with `--mcp`, its MCP
//! server configuration instead ([`mcp`]) — [`run`] is the one place that chooses. The
//! agents, their files and their own rules are one table ([`agents::AGENTS`], [`rules`]);
//! [`compare`] says how a file differs from what install writes (for `doctor`).
//!
//! JSON files are merged ([`merge`]): the user's other settings keep their values and
//! order, the change is shown as a unified diff before it is written (and only shown with
//! `--dry-run`), running install twice changes nothing, and uninstall removes exactly the
//! entries carrying our marker (deleting a file only when nothing of the user's is left).
//! A file that is not valid JSON is never touched: the error names it. OpenCode gets its
//! own plugin file. Writes are atomic (temp file + rename).

pub mod agents;
pub mod codex_trust;
pub mod compare;
pub mod mcp;
pub mod merge;
pub mod rules;

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use openfiles_gate::confine;
use openfiles_plugin_api::tools::{is_executable, on_path};
use serde_json::Value;

pub use agents::MARKER;
use agents::{Content, Target};
pub use agents::{Scope, SUPPORTED};

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Uninstall,
}

/// Options shared by the three commands.
#[derive(Debug, Clone)]
pub struct Options {
    /// Agent ids; empty means every supported agent (uninstall, status only).
    pub agents: Vec<String>,
    pub scope: Scope,
    pub dry_run: bool,
    /// The program agents run (default `openfiles`).
    pub bin: String,
}

/// The most bytes of an agent's settings file read.
pub const SETTINGS_CAP: u64 = 1 << 20;

/// Why a settings file was not read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unread(#[from] confine::ConfineError);

impl Unread {
    pub fn is_not_found(&self) -> bool {
        self.0.is_not_found()
    }
}

/// Read an agent's settings file (the one reader for them: `hooks`, `doctor`): inside the
/// workspace `root` from the root down without following any symlink; elsewhere (the
/// user's own, which a dotfile manager may link) following the last one; a regular file
/// only, never blocking on a FIFO, at most [`SETTINGS_CAP`] bytes, UTF-8.
pub fn read_settings(root: Option<&Path>, path: &Path) -> Result<String, Unread> {
    let bytes = match root.filter(|r| path.starts_with(r)) {
        Some(root) => confine::read_workspace_file(root, path, SETTINGS_CAP)?,
        None => confine::read_regular(path, confine::Last::Follow, SETTINGS_CAP)?,
    };
    String::from_utf8(bytes).map_err(|_| {
        Unread(confine::ConfineError::Io(io::Error::new(
            io::ErrorKind::InvalidData,
            "not UTF-8 text",
        )))
    })
}

/// [`read_settings`] for `scope`: `None` when there is no such file.
pub fn read_in(scope: &Scope, path: &Path) -> anyhow::Result<Option<String>> {
    let root = match scope {
        Scope::Workspace(d) => Some(d.as_path()),
        Scope::User(_) => None,
    };
    match read_settings(root, path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// What `openfiles hooks install|uninstall|status` asks.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `None`: status.
    pub action: Option<Action>,
    /// Status as JSON.
    pub json: bool,
    /// The agents' MCP server configuration instead of their hooks.
    pub mcp: bool,
    /// Agent ids (`--agent`, repeatable or comma-separated).
    pub agents: Vec<String>,
    pub workspace: Option<PathBuf>,
    pub user: bool,
    pub dry_run: bool,
    /// `--bin`.
    pub bin: Option<String>,
}

/// Run `hooks install|uninstall|status [--mcp]`, printing to `out`; `this_exe` is the
/// program written by default ([`resolve_bin`]).
pub fn run(
    req: Request,
    this_exe: impl FnOnce() -> anyhow::Result<PathBuf>,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let scope = scope(req.workspace.as_deref(), req.user)?;
    if req.mcp {
        return match req.action {
            Some(action) => {
                let bin = resolve_bin(req.bin.as_deref(), this_exe)?;
                mcp::apply(action, &req.agents, &scope, &bin, req.dry_run, out)
            }
            None if req.json => bail!("`hooks status --mcp` has no --json form yet"),
            None => mcp::status(&req.agents, &scope, out),
        };
    }
    let opts = Options {
        agents: req.agents,
        scope,
        dry_run: req.dry_run,
        bin: resolve_bin(req.bin.as_deref(), this_exe)?,
    };
    match req.action {
        Some(action) => apply(action, &opts, out),
        None if req.json => status_json(&opts, out),
        None => status(&opts, out),
    }
}

/// The command agents will run. `--bin` is kept as given when it resolves (a path to an
/// executable file, or a name found on `PATH`) and refused otherwise: an agent running a
/// command that is not there gets `sh: openfiles: not found` on every edit. By default:
/// `openfiles` when that name on `PATH` is this very program (portable across machines),
/// else this program's absolute path (`this_exe`: the stable one for Nix profiles).
pub fn resolve_bin(
    explicit: Option<&str>,
    this_exe: impl FnOnce() -> anyhow::Result<PathBuf>,
) -> anyhow::Result<String> {
    if let Some(bin) = explicit {
        if bin.contains('/') {
            if !is_executable(Path::new(bin)) {
                anyhow::bail!("--bin {bin}: not an executable file");
            }
        } else if on_path(bin).is_none() {
            anyhow::bail!(
                "--bin {bin}: not found on PATH ({}); give an absolute path",
                std::env::var("PATH").unwrap_or_default()
            );
        }
        return Ok(bin.to_owned());
    }
    let exe = this_exe()?;
    let same = |p: &Path| {
        p.canonicalize()
            .ok()
            .is_some_and(|c| exe.canonicalize().map(|e| e == c).unwrap_or(false))
    };
    match on_path("openfiles") {
        Some(found) if same(&found) => Ok("openfiles".to_owned()),
        _ => Ok(exe.to_string_lossy().into_owned()),
    }
}

/// Resolve `--workspace DIR | --user` (default: the current directory).
pub fn scope(workspace: Option<&Path>, user: bool) -> anyhow::Result<Scope> {
    if user {
        let home = agents::home().context("cannot find your home directory")?;
        return Ok(Scope::User(home));
    }
    let dir = match workspace {
        Some(d) => d.to_owned(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let dir =
        fs::canonicalize(&dir).with_context(|| format!("no such folder: {}", dir.display()))?;
    Ok(Scope::Workspace(dir))
}

fn targets(opts: &Options, require: bool) -> anyhow::Result<Vec<Target>> {
    let ids: Vec<String> = if opts.agents.is_empty() {
        if require {
            bail!(
                "name at least one agent with --agent ({})",
                SUPPORTED.join(", ")
            );
        }
        SUPPORTED.iter().map(|s| s.to_string()).collect()
    } else {
        opts.agents.clone()
    };
    let mut out = Vec::new();
    for id in &ids {
        for id in id.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let target = agents::target(id, &opts.scope, &opts.bin).with_context(|| {
                format!(
                    "`hooks install` does not know the agent `{id}` (known: {}); other agents can run `openfiles hook --agent {id}` from their own post-edit hook (contrib/hooks/README.md)",
                    SUPPORTED.join(", ")
                )
            })?;
            if !out.iter().any(|t: &Target| t.agent == target.agent) {
                out.push(target);
            }
        }
    }
    Ok(out)
}

/// `hooks install` / `hooks uninstall`: print each change as a diff, then write it
/// (unless `dry_run`). Returns the exit code.
pub fn apply(action: Action, opts: &Options, out: &mut dyn Write) -> anyhow::Result<u8> {
    // What is printed is a report: a reader that went away (`… | head -1`) must not cancel
    // the writes.
    let out = &mut Report(out);
    let targets = targets(opts, action == Action::Install)?;
    let verbs = Verbs::of(
        action,
        ["already installed", "install"],
        ["nothing to remove", "uninstall", "uninstall (delete file)"],
    );
    for target in &targets {
        let old = read_in(&opts.scope, &target.path)?;
        let new = planned(action, target, old.as_deref())?;
        let (old, new) = (old.as_deref(), new.as_deref());
        let done = say_and_write(
            out,
            target.agent,
            &target.path,
            old,
            new,
            &verbs,
            opts.dry_run,
        )?;
        if done == Done::Removed {
            remove_empty_parents(&target.path, &opts.scope);
        }
        if target.agent == "codex" && done != Done::Shown {
            codex_trust_apply(action, opts, target, old, new, out)?;
        }
    }
    if opts.dry_run {
        writeln!(out, "(dry run: nothing written)")?;
    }
    Ok(0)
}

/// How one change of a file is said in the report.
pub struct Verbs {
    /// The file already is as planned.
    pub unchanged: &'static str,
    /// The file is written.
    pub change: &'static str,
    /// The file is deleted (nothing of it is left).
    pub delete: &'static str,
}

impl Verbs {
    /// The words for `action`: on install (unchanged, change), on uninstall (unchanged,
    /// change, delete).
    pub fn of(action: Action, install: [&'static str; 2], uninstall: [&'static str; 3]) -> Verbs {
        match action {
            Action::Install => Verbs {
                unchanged: install[0],
                change: install[1],
                delete: install[1],
            },
            Action::Uninstall => Verbs {
                unchanged: uninstall[0],
                change: uninstall[1],
                delete: uninstall[2],
            },
        }
    }
}

/// What [`say_and_write`] did with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    Unchanged,
    /// Shown, not written (a dry run).
    Shown,
    Written,
    Removed,
}

/// One planned change of `path` (`old` → `new`, `None`: no file): said with its verb and
/// diff, then written (or the file removed) unless `dry_run`.
pub fn say_and_write(
    out: &mut dyn Write,
    agent: &str,
    path: &Path,
    old: Option<&str>,
    new: Option<&str>,
    verbs: &Verbs,
    dry_run: bool,
) -> anyhow::Result<Done> {
    let shown = path.display();
    if new == old {
        writeln!(out, "{agent}: {} in {shown}", verbs.unchanged)?;
        return Ok(Done::Unchanged);
    }
    let verb = if new.is_some() {
        verbs.change
    } else {
        verbs.delete
    };
    writeln!(out, "{agent}: {verb} in {shown}")?;
    write_diff(out, path, old, new)?;
    if dry_run {
        return Ok(Done::Shown);
    }
    match new {
        Some(text) => write_file(path, text).map(|()| Done::Written),
        None => fs::remove_file(path)
            .with_context(|| format!("cannot remove {shown}"))
            .map(|()| Done::Removed),
    }
}

/// Codex runs a hook only once the user trusted it: record that trust for our entries on
/// install (as Codex's `/hooks` screen does), take exactly those records out on uninstall
/// ([`codex_trust`]). Also says when Codex will not load the workspace's `.codex/` at all.
fn codex_trust_apply(
    action: Action,
    opts: &Options,
    target: &Target,
    old: Option<&str>,
    new: Option<&str>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let home = match &opts.scope {
        Scope::User(h) => h.clone(),
        Scope::Workspace(_) => agents::home().context("cannot find your home directory")?,
    };
    let config = codex_trust::config_path(&home);
    let text = read_in(&Scope::User(home.clone()), &config)?;
    let (entries, changed) = match action {
        Action::Install => {
            let entries = codex_trust::our_entries(&target.path, new.unwrap_or(""));
            let changed = codex_trust::trusted(text.as_deref(), &config, &entries)?;
            (entries, changed)
        }
        Action::Uninstall => {
            let entries = codex_trust::our_entries(&target.path, old.unwrap_or(""));
            let changed = codex_trust::untrusted(text.as_deref(), &config, &entries)?;
            (entries, changed)
        }
    };
    let shown = config.display();
    match (&changed, action) {
        (None, Action::Install) if !entries.is_empty() => {
            writeln!(out, "codex: the hook is already trusted in {shown}")?
        }
        (None, _) => {}
        (Some(after), Action::Install) => {
            writeln!(
                out,
                "codex: trust the hook in {shown} (Codex runs a hook only once it is trusted; installing it is asking for it, so this records the trust as Codex's /hooks screen does)"
            )?;
            write_diff(out, &config, text.as_deref(), Some(after))?;
        }
        (Some(after), Action::Uninstall) => {
            writeln!(out, "codex: remove the hook's trust from {shown}")?;
            write_diff(out, &config, text.as_deref(), Some(after))?;
        }
    }
    if let (Some(after), false) = (&changed, opts.dry_run) {
        write_file(&config, after)?;
    }
    if let (Action::Install, Scope::Workspace(dir)) = (action, &opts.scope) {
        let now = changed.as_deref().or(text.as_deref());
        if codex_trust::project_trusted(now, dir) != Some(true) {
            writeln!(
                out,
                "codex: note: Codex loads {}/.codex only in a trusted project; trust it when Codex asks, or add [projects.\"{}\"] trust_level = \"trusted\" to {shown}",
                dir.display(),
                dir.display()
            )?;
        }
    }
    Ok(())
}

/// A writer that never fails: output errors (a closed pipe) are dropped, so printing can
/// never stop a change half way.
struct Report<'a>(&'a mut dyn Write);

impl Write for Report<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// After deleting a file we wrote, remove the folders above it that are now empty (an
/// agent's `.codex/` created for it), up to the scope's root.
fn remove_empty_parents(file: &Path, scope: &Scope) {
    let root = match scope {
        Scope::Workspace(d) | Scope::User(d) => d,
    };
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == root.as_path() || !d.starts_with(root) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// How an existing JSON file is laid out, so a change keeps its look (and uninstall gives
/// back the very bytes install found): compact or indented (with its indent), and whether
/// it ends with a newline. A new file is indented by two spaces.
pub struct JsonStyle {
    indent: Option<String>,
    newline: bool,
}

impl JsonStyle {
    pub fn of(old: Option<&str>) -> JsonStyle {
        let Some(text) = old.filter(|t| !t.trim().is_empty()) else {
            return JsonStyle {
                indent: Some("  ".into()),
                newline: true,
            };
        };
        let body = text.trim_end();
        let indent = if body.contains('\n') {
            let first = body
                .lines()
                .skip(1)
                .map(|l| &l[..l.len() - l.trim_start().len()])
                .find(|w| !w.is_empty())
                .unwrap_or("  ");
            Some(first.to_owned())
        } else {
            None
        };
        JsonStyle {
            indent,
            newline: text.ends_with('\n'),
        }
    }

    pub fn render(&self, doc: &Value) -> anyhow::Result<String> {
        let mut text = match &self.indent {
            None => serde_json::to_string(doc)?,
            Some(indent) => {
                use serde::Serialize;
                let mut buf = Vec::new();
                let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
                let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
                doc.serialize(&mut ser)?;
                String::from_utf8(buf)?
            }
        };
        if self.newline {
            text.push('\n');
        }
        Ok(text)
    }
}

/// The file's new text (`None`: delete it) for `action`, from its current text.
pub fn planned(
    action: Action,
    target: &Target,
    old: Option<&str>,
) -> anyhow::Result<Option<String>> {
    match &target.content {
        Content::OwnFile(text) => Ok(match action {
            Action::Install => Some(text.clone()),
            Action::Uninstall => match old {
                Some(o) if !o.contains(MARKER) => Some(o.to_owned()),
                _ => None,
            },
        }),
        Content::Json { hooks, version } => {
            let mut doc = match old {
                Some(text) if !text.trim().is_empty() => serde_json::from_str::<Value>(text)
                    .with_context(|| {
                        format!(
                            "{} is not valid JSON; fix or move it, then run this again (nothing was changed)",
                            target.path.display()
                        )
                    })?,
                Some(_) | None if action == Action::Uninstall => return Ok(old.map(str::to_owned)),
                _ => Value::Object(Default::default()),
            };
            let changed = match action {
                Action::Install => merge::install(&mut doc, hooks, *version),
                Action::Uninstall => merge::uninstall(&mut doc),
            }
            .with_context(|| format!("cannot change {}", target.path.display()))?;
            if !changed {
                return Ok(old.map(str::to_owned));
            }
            if action == Action::Uninstall && merge::is_empty(&doc) {
                return Ok(None);
            }
            Ok(Some(JsonStyle::of(old).render(&doc)?))
        }
    }
}

/// A unified diff of the file's change; a missing side is `/dev/null`.
pub fn write_diff(
    out: &mut dyn Write,
    path: &Path,
    old: Option<&str>,
    new: Option<&str>,
) -> io::Result<()> {
    let name = path.display().to_string();
    let before = if old.is_some() {
        name.clone()
    } else {
        "/dev/null".into()
    };
    let after = match (old, new) {
        (_, None) => "/dev/null".into(),
        (Some(_), Some(_)) => name.clone(),
        (None, Some(_)) => format!("{name} (new)"),
    };
    let diff = similar::TextDiff::from_lines(old.unwrap_or(""), new.unwrap_or(""));
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&before, &after)
        .to_string();
    out.write_all(text.as_bytes())
}

/// Write `text` to `path` atomically, keeping the file's mode.
pub fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mode = fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644);
    openfiles_os::fsutil::write_atomic(path, text.as_bytes(), mode)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// One line of `hooks status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLine {
    pub agent: &'static str,
    pub path: PathBuf,
    /// `installed (events…)`, `not installed`, `no file`, or `unreadable: …`.
    pub state: String,
}

/// What is installed for each agent in the given scope.
pub fn status_lines(opts: &Options) -> anyhow::Result<Vec<StatusLine>> {
    let mut lines = Vec::new();
    for target in targets(opts, false)? {
        let state = match read_in(&opts.scope, &target.path) {
            Ok(None) => "no file".to_owned(),
            Err(e) => format!("unreadable: {e:#}"),
            Ok(Some(text)) => match &target.content {
                Content::OwnFile(_) if text.contains(MARKER) => "installed".to_owned(),
                Content::OwnFile(_) => "not installed (file is not ours)".to_owned(),
                Content::Json { .. } => match serde_json::from_str::<Value>(&text) {
                    Err(_) => "unreadable: not valid JSON".to_owned(),
                    Ok(doc) => {
                        let events = merge::installed_events(&doc);
                        if events.is_empty() {
                            "not installed".to_owned()
                        } else {
                            format!("installed ({})", events.join(", "))
                        }
                    }
                },
            },
        };
        lines.push(StatusLine {
            agent: target.agent,
            path: target.path,
            state,
        });
    }
    Ok(lines)
}

/// The scopes `hooks status` shows: the chosen one, and the user's beside a workspace.
fn status_scopes(opts: &Options) -> Vec<Scope> {
    let mut scopes = vec![opts.scope.clone()];
    if let (Scope::Workspace(_), Some(home)) = (&opts.scope, agents::home()) {
        scopes.push(Scope::User(home));
    }
    scopes
}

/// `hooks status --json`: `[{scope, folder, agent, path, state, installed}]`.
pub fn status_json(opts: &Options, out: &mut dyn Write) -> anyhow::Result<u8> {
    let mut rows = Vec::new();
    for scope in status_scopes(opts) {
        let (kind, folder) = match &scope {
            Scope::Workspace(d) => ("workspace", d.clone()),
            Scope::User(h) => ("user", h.clone()),
        };
        let o = Options {
            scope,
            ..opts.clone()
        };
        for line in status_lines(&o)? {
            rows.push(serde_json::json!({
                "scope": kind,
                "folder": folder,
                "agent": line.agent,
                "path": line.path,
                "state": line.state,
                "installed": line.state.starts_with("installed"),
            }));
        }
    }
    writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
    Ok(0)
}

/// `hooks status`: the workspace's and the user's configurations.
pub fn status(opts: &Options, out: &mut dyn Write) -> anyhow::Result<u8> {
    for scope in status_scopes(opts) {
        let label = match &scope {
            Scope::Workspace(d) => format!("workspace {}", d.display()),
            Scope::User(_) => "user".to_owned(),
        };
        writeln!(out, "{label}:")?;
        let o = Options {
            scope,
            ..opts.clone()
        };
        for line in status_lines(&o)? {
            writeln!(
                out,
                "  {:<9} {:<16} {}",
                line.agent,
                line.state,
                line.path.display()
            )?;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hooks status` and `hooks install` read an agent's settings through the one reader:
    /// a FIFO or a symlink a repository planted there is named, never waited on or followed.
    #[test]
    fn a_planted_fifo_or_symlink_is_unreadable_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::create_dir_all(root.join(".gemini")).unwrap();
        nix::unistd::mkfifo(
            &root.join(".claude/settings.local.json"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join(".gemini/settings.json")).unwrap();
        let opts = Options {
            agents: vec!["claude,gemini".into()],
            scope: Scope::Workspace(root.clone()),
            dry_run: true,
            bin: "openfiles".into(),
        };
        let lines = status_lines(&opts).unwrap();
        assert!(
            lines[0].state.contains("unreadable") && lines[0].state.contains("FIFO"),
            "{lines:?}"
        );
        assert!(lines[1].state.contains("symlink"), "{lines:?}");
        let err = apply(Action::Install, &opts, &mut Vec::new()).unwrap_err();
        assert!(format!("{err:#}").contains("FIFO"), "{err:#}");
    }
}
