//! The heartbeat file `.openfiles/vscode/openfiles-<session>.json`: proof to hooks and agents
//! that someone serves this workspace. Judged by mtime (fresh when < 60 s old), so it is
//! rewritten atomically every `heartbeat_seconds` and deleted on clean shutdown.
//!
//! Also answers the reverse question: is another OpenFiles server (the editor extension)
//! live here? Its heartbeat is any fresh `*.json` in the same folder whose `appName` is not
//! ours.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use openfiles_plugin_api::confine;

use crate::fsutil;
use crate::spec::{self, Heartbeat, MAX_HEARTBEAT_BYTES};

/// Path of our heartbeat file for `root`.
pub fn path(root: &Path, session_id: &str) -> PathBuf {
    root.join(spec::DIR)
        .join(spec::HEARTBEAT_DIR)
        .join(format!("openfiles-{session_id}.json"))
}

/// Write (or refresh) the heartbeat atomically.
pub fn write(root: &Path, session_id: &str) -> std::io::Result<()> {
    let beat = Heartbeat {
        version: 1,
        workspace_root: root.to_owned(),
        session_id: session_id.to_owned(),
        app_name: spec::APP_NAME.to_owned(),
        updated_at: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        files: Vec::new(),
    };
    let mut text = serde_json::to_vec_pretty(&beat).map_err(std::io::Error::other)?;
    text.push(b'\n');
    // Reached from the root by descriptor: a `.openfiles/` swapped for a symlink is refused.
    let rel = Path::new(spec::DIR)
        .join(spec::HEARTBEAT_DIR)
        .join(format!("openfiles-{session_id}.json"));
    fsutil::write_atomic_in(root, &rel, &text, fsutil::reader_mode(root), 0o755)
}

/// Remove our heartbeat (clean shutdown, or the workspace was forgotten).
pub fn remove(root: &Path, session_id: &str) {
    let _ = std::fs::remove_file(path(root, session_id));
}

/// True when a fresh heartbeat of another OpenFiles server (not this service) is present.
pub fn foreign_server_live(root: &Path) -> bool {
    let dir = root.join(spec::DIR).join(spec::HEARTBEAT_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return false;
    };
    let fresh = Duration::from_secs(spec::HEARTBEAT_FRESH_SECS);
    entries.flatten().any(|e| {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") {
            return false;
        }
        let is_fresh = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age < fresh);
        if !is_fresh {
            return false;
        }
        // Ours (any openfiles instance) do not count; unreadable or foreign ones do.
        match confine::read_regular(&p, confine::Last::NoFollow, MAX_HEARTBEAT_BYTES)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        {
            Some(v) => v.get("appName").and_then(|a| a.as_str()) != Some(spec::APP_NAME),
            None => true,
        }
    })
}
