//! The hook without a reachable service: the editor extension's `hook.js` behaviour.
//!
//! 1. Find the workspace: walk up from each start folder to the nearest folder whose
//!    `.openfiles/vscode/` holds a `*.json` modified less than 60 s ago (contents not read).
//!    None: do nothing.
//! 2. Append one line to `.openfiles/queue.jsonl` with a single `write(2)` on an `O_APPEND`
//!    descriptor (so concurrent writers never interleave inside a line), never through a
//!    symlink.
//! 3. With feedback: wait until every path's entry in `diagnostics.json` has
//!    `checkedAt >=` the edit's timestamp, or until `hook.timeoutMs` after it, woken by a
//!    file watch (see [`super::watch`]) rather than a timer.
//!
//! `diagnostics.json` comes from writers we do not control, so it is read leniently: an
//! entry or item that does not fit is skipped, not fatal.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::report::Entries;
use super::watch::Watcher;
use openfiles_wire::spec::{
    Feedback, FileEntry, HookSettings, Item, QueueLine, Severity, DIAGNOSTICS_FILE, DIR,
    HEARTBEAT_DIR, HEARTBEAT_FRESH_SECS, QUEUE_FILE,
};

/// `diagnostics.json` as the fallback needs it.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    pub hook: HookSettings,
    pub files: BTreeMap<String, FileEntry>,
    pub baseline: Option<openfiles_wire::spec::BaselineInfo>,
}

/// The nearest folder at or above one of `starts` (tried in order) with a fresh heartbeat.
pub fn find_workspace(starts: &[PathBuf]) -> Option<PathBuf> {
    let now = SystemTime::now();
    for start in starts {
        let mut dir = Some(start.as_path());
        while let Some(d) = dir {
            if has_fresh_heartbeat(d, now) {
                return Some(d.to_owned());
            }
            dir = d.parent();
        }
    }
    None
}

/// True when `dir/.openfiles/vscode/` holds a `*.json` modified less than 60 s before `now`.
pub fn has_fresh_heartbeat(dir: &Path, now: SystemTime) -> bool {
    let Ok(read) = fs::read_dir(dir.join(DIR).join(HEARTBEAT_DIR)) else {
        return false;
    };
    read.flatten().any(|e| {
        let name = e.file_name();
        if !name.to_string_lossy().ends_with(".json") {
            return false;
        }
        let Ok(mtime) = e.metadata().and_then(|m| m.modified()) else {
            return false;
        };
        // A heartbeat from the future (clock skew) counts as fresh.
        now.duration_since(mtime)
            .map(|age| age < Duration::from_secs(HEARTBEAT_FRESH_SECS))
            .unwrap_or(true)
    })
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

/// Read `root/.openfiles/diagnostics.json`; `None` when missing or not a JSON object.
pub fn read_diagnostics(root: &Path) -> Option<Diagnostics> {
    // The repository controls this path: no symlink, no FIFO or device, a bounded size.
    let bytes = openfiles_plugin_api::confine::read_regular(
        &root.join(DIR).join(DIAGNOSTICS_FILE),
        openfiles_plugin_api::confine::Last::NoFollow,
        openfiles_wire::spec::MAX_DIAGNOSTICS_BYTES,
    )
    .ok()?;
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
pub fn watch(root: &Path) -> io::Result<Watcher> {
    Watcher::new(&root.join(DIR), DIAGNOSTICS_FILE)
}

/// Wait until every path is checked at or after `since`, or until `hook.timeoutMs` after
/// `since`; return the last diagnostics read and the paths in the form that matches them.
pub fn wait(
    root: &Path,
    paths: &[PathBuf],
    since: u64,
    mut watcher: Option<Watcher>,
) -> Option<(Diagnostics, Vec<PathBuf>)> {
    let mut diag = read_diagnostics(root);
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
        diag = read_diagnostics(root).or(diag);
    }
    // At the deadline, use what has been checked by then.
    let d = read_diagnostics(root).or(diag)?;
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
