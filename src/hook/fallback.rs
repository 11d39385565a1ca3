//! The hook without a reachable service: the editor extension's `hook.js` behaviour, for an
//! editor the hook can vouch for.
//!
//! 1. Find the workspace: walk up from each start folder to the nearest folder whose
//!    `.openfiles/vscode/` holds a heartbeat of a live editor ([`live_editor`]): a `*.json`
//!    that is a regular file (opened through `confine`: no symlink, no FIFO, bounded), owned
//!    by this user, modified less than 60 s ago and not in the future (beyond
//!    [`CLOCK_SKEW`]), and not tracked by git (a repository can commit a heartbeat, and a
//!    clone gives it a fresh mtime; git is started through the gate, as for an untrusted
//!    workspace, so neither a repository's `./git` nor its config runs anything). None: do
//!    nothing — no queue line, no text.
//! 2. Append one line to `.openfiles/queue.jsonl` with a single `write(2)` on an `O_APPEND`
//!    descriptor (so concurrent writers never interleave inside a line), never through a
//!    symlink.
//! 3. With feedback: wait until every path's entry in `diagnostics.json` has
//!    `checkedAt >=` the edit's timestamp, or until `hook.timeoutMs` after it, woken by a
//!    file watch (see [`super::watch`]) rather than a timer. The file is read only when it
//!    is a regular file of this user's that git does not track; the feedback then names the
//!    editor it came from ([`Editor::describe`]), never passing it off as openfiles's own.
//!
//! `diagnostics.json` comes from writers we do not control, so it is read leniently: an
//! entry or item that does not fit is skipped, not fatal.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::report::Entries;
use super::watch::Watcher;
use openfiles_gate::confine;
use openfiles_wire::spec::{
    Feedback, FileEntry, HookSettings, Item, QueueLine, Severity, DIAGNOSTICS_FILE, DIR,
    HEARTBEAT_DIR, HEARTBEAT_FRESH_SECS, MAX_HEARTBEAT_BYTES, QUEUE_FILE,
};

/// How far in the future a heartbeat's mtime may be (clocks of one machine's processes
/// agree; this covers a network file system's rounding). Further: planted, not live.
pub const CLOCK_SKEW: Duration = Duration::from_secs(2);

/// Longest editor name or session id the feedback quotes (characters).
const MAX_NAME_CHARS: usize = 60;

/// `diagnostics.json` as the fallback needs it.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    pub hook: HookSettings,
    pub files: BTreeMap<String, FileEntry>,
    pub baseline: Option<openfiles_wire::spec::BaselineInfo>,
}

/// A live editor the hook vouches for, from its heartbeat.
#[derive(Debug, Clone, PartialEq)]
pub struct Editor {
    /// The heartbeat file.
    pub heartbeat: PathBuf,
    /// Its `appName`, if it has one.
    pub app: Option<String>,
    /// Its `sessionId`, if it has one.
    pub session: Option<String>,
    /// Its `pid`, if it records one.
    pub pid: Option<u64>,
}

impl Editor {
    /// Who the feedback comes from, for the agent: `the editor "Visual Studio Code"
    /// (session 1f3a, pid 4242)`; names are escaped (`crate::visible`) and shortened.
    pub fn describe(&self) -> String {
        let short = |s: &str| -> String {
            let escaped = crate::visible::escape(s);
            let mut out: String = escaped.chars().take(MAX_NAME_CHARS).collect();
            if escaped.chars().count() > MAX_NAME_CHARS {
                out.push('…');
            }
            out
        };
        let file = self
            .heartbeat
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = match &self.app {
            Some(app) => format!("the editor \"{}\"", short(app)),
            None => format!("the editor of heartbeat {}", short(&file)),
        };
        let mut about = Vec::new();
        if let Some(s) = &self.session {
            about.push(format!("session {}", short(s)));
        }
        if let Some(pid) = self.pid {
            about.push(format!("pid {pid}"));
        }
        if about.is_empty() {
            name
        } else {
            format!("{name} ({})", about.join(", "))
        }
    }
}

/// A workspace served by a live editor.
#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub root: PathBuf,
    pub editor: Editor,
    /// Whether `diagnostics.json` may be read: git does not track it (a committed one is
    /// the repository's text, not the editor's).
    pub diagnostics_untracked: bool,
}

/// The nearest folder at or above one of `starts` (tried in order) with a live editor.
pub fn find_workspace(starts: &[PathBuf]) -> Option<Workspace> {
    let now = SystemTime::now();
    for start in starts {
        let mut dir = Some(start.as_path());
        while let Some(d) = dir {
            if let Some(w) = live_editor(d, now) {
                return Some(w);
            }
            dir = d.parent();
        }
    }
    None
}

/// True when `dir` has a live editor's heartbeat (see [`live_editor`]).
pub fn has_fresh_heartbeat(dir: &Path, now: SystemTime) -> bool {
    live_editor(dir, now).is_some()
}

/// `dir` as a workspace of a live editor: the freshest heartbeat in `dir/.openfiles/vscode/`
/// that passes every check of the module header, or `None`.
pub fn live_editor(dir: &Path, now: SystemTime) -> Option<Workspace> {
    let folder = dir.join(DIR).join(HEARTBEAT_DIR);
    // Real folders, not links a repository planted to someone else's heartbeats.
    for f in [dir.join(DIR), folder.clone()] {
        if !fs::symlink_metadata(&f).is_ok_and(|m| m.is_dir()) {
            return None;
        }
    }
    let me = nix::unistd::geteuid().as_raw();
    let fresh = Duration::from_secs(HEARTBEAT_FRESH_SECS);
    let mut beats: Vec<(SystemTime, Editor)> = fs::read_dir(&folder)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| {
            let path = e.path();
            let (file, _) = confine::open_regular(&path, confine::Last::NoFollow).ok()?;
            let meta = file.metadata().ok()?;
            if meta.uid() != me {
                return None;
            }
            let mtime = meta.modified().ok()?;
            if mtime > now + CLOCK_SKEW {
                return None;
            }
            if now.duration_since(mtime).is_ok_and(|age| age >= fresh) {
                return None;
            }
            let mut bytes = Vec::new();
            file.take(MAX_HEARTBEAT_BYTES)
                .read_to_end(&mut bytes)
                .ok()?;
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
            let editor = Editor {
                heartbeat: path,
                app: text("appName"),
                session: text("sessionId"),
                pid: v.get("pid").and_then(Value::as_u64),
            };
            Some((mtime, editor))
        })
        .collect();
    if beats.is_empty() {
        return None;
    }
    // Freshest first.
    beats.sort_by_key(|b| std::cmp::Reverse(b.0));
    let diagnostics = Path::new(DIR).join(DIAGNOSTICS_FILE);
    let mut rels: Vec<PathBuf> = beats
        .iter()
        .filter_map(|(_, e)| e.heartbeat.strip_prefix(dir).ok().map(Path::to_owned))
        .collect();
    rels.push(diagnostics.clone());
    let tracked = tracked_by_git(dir, &rels)?;
    let editor = beats.into_iter().map(|(_, e)| e).find(|e| {
        e.heartbeat
            .strip_prefix(dir)
            .is_ok_and(|rel| !tracked.iter().any(|t| t == rel))
    })?;
    Some(Workspace {
        root: dir.to_owned(),
        editor,
        diagnostics_untracked: !tracked.contains(&diagnostics),
    })
}

/// Which of `rels` (relative to `dir`) git tracks; not a repository: none. `None` when git
/// cannot be asked inside what looks like a repository (a `.git` at or above `dir`): then
/// nothing there can be vouched for.
///
/// git is started through the gate for an untrusted workspace (found on `PATH`'s absolute
/// entries outside `dir`, so a repository's own `./git` never runs; the repository's
/// fsmonitor, hooks and transports off) and with the same fixed settings as `crate::gitcmd`;
/// `ls-files` reads only the index, so no filter or diff driver is involved.
fn tracked_by_git(dir: &Path, rels: &[PathBuf]) -> Option<Vec<PathBuf>> {
    let in_repo = || dir.ancestors().any(|d| d.join(".git").exists());
    let scope = openfiles_gate::Scope::workspace(dir, false);
    let Ok(git) = openfiles_gate::Program::find("git", &scope, "hook: is a heartbeat tracked")
    else {
        return (!in_repo()).then(Vec::new);
    };
    let mut args: Vec<std::ffi::OsString> = vec!["-C".into(), dir.as_os_str().to_owned()];
    for setting in [
        "core.fsmonitor=false",
        "core.hooksPath=/dev/null",
        "protocol.allow=never",
        "gc.auto=0",
        "maintenance.auto=false",
    ] {
        args.push("-c".into());
        args.push(setting.into());
    }
    args.extend(["ls-files".into(), "-z".into(), "--".into()]);
    args.extend(rels.iter().map(|r| r.as_os_str().to_owned()));
    let out = git
        .command(args)
        // Names are names, not patterns (a `*` or `[` in a planted file name).
        .env("GIT_LITERAL_PATHSPECS", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        // Outside a repository git exits non-zero: nothing is tracked. Inside one (another
        // owner's, refused as unsafe; a broken index), nothing can be vouched for.
        Ok(o) if !o.status.success() => (!in_repo()).then(Vec::new),
        Ok(o) => Some(
            o.stdout
                .split(|b| *b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| PathBuf::from(std::ffi::OsStr::from_bytes(s)))
                .collect(),
        ),
        Err(_) => (!in_repo()).then(Vec::new),
    }
}

/// Append `line` to the workspace's queue in one `write(2)`.
pub fn append_queue(root: &Path, line: &QueueLine) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(io::Error::other)?;
    bytes.push(b'\n');
    let mut file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(root.join(DIR).join(QUEUE_FILE))?;
    let n = file.write(&bytes)?;
    if n != bytes.len() {
        return Err(io::Error::other(format!(
            "short write to the queue: {n} of {} bytes",
            bytes.len()
        )));
    }
    Ok(())
}

/// Read `.openfiles/diagnostics.json` of a live editor's workspace; `None` when missing,
/// tracked by git, not a regular file of this user's, too large, or not a JSON object.
pub fn read_diagnostics(ws: &Workspace) -> Option<Diagnostics> {
    if !ws.diagnostics_untracked {
        return None;
    }
    // The repository controls this path: no symlink, no FIFO or device, a bounded size.
    let (file, _) = confine::open_regular(
        &ws.root.join(DIR).join(DIAGNOSTICS_FILE),
        confine::Last::NoFollow,
    )
    .ok()?;
    if file.metadata().ok()?.uid() != nix::unistd::geteuid().as_raw() {
        return None;
    }
    let cap = openfiles_wire::spec::MAX_DIAGNOSTICS_BYTES;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > cap {
        return None;
    }
    let Value::Object(map) = serde_json::from_slice::<Value>(&bytes).ok()? else {
        return None;
    };
    let mut out = Diagnostics::default();
    if let Some(hook) = map.get("hook") {
        if let Some(f) = hook.get("feedback").and_then(Value::as_str) {
            out.hook.feedback = match f {
                "off" => Feedback::Off,
                "errors" => Feedback::Errors,
                _ => Feedback::ErrorsAndWarnings,
            };
        }
        if let Some(t) = hook.get("timeoutMs").and_then(Value::as_u64) {
            out.hook.timeout_ms = t;
        }
        if hook.get("feedbackScope").and_then(Value::as_str) == Some("all") {
            out.hook.feedback_scope = openfiles_wire::spec::FeedbackScope::All;
        }
    }
    out.baseline = map
        .get("baseline")
        .and_then(|b| serde_json::from_value(b.clone()).ok());
    if let Some(Value::Object(files)) = map.get("files") {
        for (key, entry) in files {
            if let Some(entry) = lenient_entry(entry) {
                out.files.insert(key.clone(), entry);
            }
        }
    }
    Some(out)
}

fn lenient_entry(v: &Value) -> Option<FileEntry> {
    let path = PathBuf::from(v.get("path")?.as_str()?);
    let num = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let items = v
        .get("items")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(lenient_item).collect())
        .unwrap_or_default();
    Some(FileEntry {
        path,
        checked_at: num("checkedAt") as u64,
        errors: num("errors") as u32,
        warnings: num("warnings") as u32,
        items,
        sources: v
            .get("sources")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default(),
        affected_by: v
            .get("affectedBy")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default(),
    })
}

fn lenient_item(v: &Value) -> Option<Item> {
    let severity = match v.get("severity")?.as_str()? {
        "error" => Severity::Error,
        "warning" => Severity::Warning,
        "info" => Severity::Info,
        _ => Severity::Hint,
    };
    let text = |k: &str| match v.get(k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let pos = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(1).max(1) as u32;
    Some(Item {
        introduced: v.get("introduced").and_then(Value::as_bool),
        // Fixes are read leniently too: a malformed list is no fixes, not a lost item.
        fixes: v
            .get("fixes")
            .and_then(|f| serde_json::from_value(f.clone()).ok())
            .unwrap_or_default(),
        line: pos("line"),
        column: pos("column"),
        severity,
        source: text("source").unwrap_or_default(),
        code: text("code"),
        message: text("message").unwrap_or_default(),
    })
}

/// A watch on `diagnostics.json`, set up before the edit is queued.
pub fn watch(ws: &Workspace) -> io::Result<Watcher> {
    Watcher::new(&ws.root.join(DIR), DIAGNOSTICS_FILE)
}

/// Wait until every path is checked at or after `since`, or until `hook.timeoutMs` after
/// `since`; return the last diagnostics read and the paths in the form that matches them.
pub fn wait(
    ws: &Workspace,
    paths: &[PathBuf],
    since: u64,
    mut watcher: Option<Watcher>,
) -> Option<(Diagnostics, Vec<PathBuf>)> {
    let root = ws.root.as_path();
    let mut diag = read_diagnostics(ws);
    let timeout_ms = diag
        .as_ref()
        .map(|d| d.hook.timeout_ms)
        .unwrap_or(openfiles_wire::spec::DEFAULT_HOOK_TIMEOUT_MS);
    let end_ms = since.saturating_add(timeout_ms);
    let deadline = Instant::now()
        + Duration::from_millis(end_ms.saturating_sub(openfiles_wire::spec::now_ms()));
    let canonical: Vec<Option<PathBuf>> = paths.iter().map(|p| fs::canonicalize(p).ok()).collect();
    loop {
        if let Some(d) = &diag {
            let forms = matching_forms(root, d, paths, &canonical);
            let entries = Entries {
                root,
                hook: &d.hook,
                files: &d.files,
                baseline: d.baseline.as_ref(),
            };
            if entries.all_checked(&forms, since) {
                return diag.map(|d| (d, forms));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match watcher.as_mut() {
            Some(w) => {
                if !w.wait(left) {
                    break;
                }
            }
            // No watch could be set up (inotify limits): re-read at a slow pace.
            None => std::thread::sleep(left.min(Duration::from_millis(150))),
        }
        diag = read_diagnostics(ws).or(diag);
    }
    // At the deadline, use what has been checked by then.
    let d = read_diagnostics(ws).or(diag)?;
    let forms = matching_forms(root, &d, paths, &canonical);
    Some((d, forms))
}

/// Each path as given, or canonicalized when only that form has an entry (the writer
/// may record real paths while the agent named a path through a symlink).
fn matching_forms(
    root: &Path,
    d: &Diagnostics,
    paths: &[PathBuf],
    canonical: &[Option<PathBuf>],
) -> Vec<PathBuf> {
    let entries = Entries {
        root,
        hook: &d.hook,
        files: &d.files,
        baseline: d.baseline.as_ref(),
    };
    paths
        .iter()
        .zip(canonical)
        .map(|(p, c)| match c {
            Some(c) if entries.find(p).is_none() && entries.find(c).is_some() => c.clone(),
            _ => p.clone(),
        })
        .collect()
}
