//! The review summary: the one-line status of a workspace the service writes beside its
//! session state (`status.json`), read by `openfiles status --short` on every shell prompt
//! and by `openfiles review` without waking the service, and where a workspace's state lives
//! in the user's state folder. The service writes these types, the clients read them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The agent name recorded for edits that carry none (the watcher, `check`).
pub const NO_AGENT: &str = "unknown";

/// The summary's file name, beside `session.json`.
pub const SUMMARY_FILE: &str = "status.json";

/// The largest summary a client reads (they are a few hundred bytes).
pub const MAX_SUMMARY_BYTES: u64 = 64 << 10;

/// The one-line status of a workspace, written beside its session state as `status.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub version: u32,
    pub root: PathBuf,
    /// Session files.
    pub files: usize,
    /// Session files not reviewed since their last edit.
    pub unreviewed: usize,
    /// Problems in the session files' current entries.
    pub errors: u64,
    pub warnings: u64,
    /// Files whose checks have not all answered yet.
    pub pending: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_agent: Option<String>,
    pub paused: bool,
    /// Epoch ms of the write.
    pub updated_at: u64,
}

/// The folder of a workspace's state (session, baseline, summary) in `state_dir`: the
/// root's last component and a hash of the whole path.
pub fn workspace_state_dir(state_dir: &Path, root: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut h);
    let name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into());
    state_dir
        .join("workspaces")
        .join(format!("{name}-{:016x}", h.finish()))
}

/// Where a workspace's summary lives (beside its session state).
pub fn summary_file(state_dir: &Path, root: &Path) -> PathBuf {
    workspace_state_dir(state_dir, root).join(SUMMARY_FILE)
}
