//! The `status` reply and its rows: one line per workspace (`WorkspaceStatus`), the programs
//! the service started (`Ran`), a session start's warm-up (`WarmState`) and the plugin host's
//! rows (`PluginStatus`, also `openfiles plugins` and `doctor`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

use openfiles_plugin_api::Capabilities;

use super::WorkspaceSource;

/// One workspace's line in `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceStatus {
    pub root: PathBuf,
    pub source: WorkspaceSource,
    pub heartbeat: PathBuf,
    /// Another OpenFiles server (the editor extension) is live here; the service stands back.
    #[serde(default)]
    pub standing_back: bool,
    #[serde(default)]
    pub session_files: usize,
    #[serde(default)]
    pub pending: usize,
    /// Valid queue lines taken, ever (persisted with the session).
    #[serde(default)]
    pub queue_lines: u64,
    #[serde(default)]
    pub malformed_queue_lines: u64,
    #[serde(default)]
    pub watches: usize,
    /// Batches of file changes the watcher did not count as edits because git was busy.
    #[serde(default)]
    pub git_batches_ignored: usize,
    #[serde(default)]
    pub terminals: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claws_socket: Option<PathBuf>,
    /// Edits are not noticed until `openfiles resume` (the session is kept).
    #[serde(default)]
    pub paused: bool,
    /// Session files not reviewed since their last edit.
    #[serde(default)]
    pub unreviewed: usize,
    /// The user trusts this workspace: its checks may run what the repository brings
    /// (`node_modules/.bin`, `cargo check`'s build scripts). `openfiles trust DIR`.
    #[serde(default)]
    pub trusted: bool,
    /// Files whose check finished after a hook's deadline, told to a later hook of the same
    /// agent session (`Earlier edit …`), ever (persisted with the session).
    #[serde(default)]
    pub late_deliveries: u64,
    /// Hooks that reached their deadline with files still being checked (and said which).
    #[serde(default)]
    pub deadline_notes: u64,
    /// Files owed to an agent session: checked late, not yet told.
    #[serde(default)]
    pub owed: usize,
    /// The last warm-up an agent's session start asked for (`warm`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm: Option<WarmState>,
    /// The programs the service process started for this workspace, most recent last (at
    /// most [`RAN_SHOWN`]); what plugin hosts start is recorded in those processes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ran: Vec<Ran>,
    /// How many programs the service process started for it, of those it still keeps.
    #[serde(default)]
    pub ran_total: usize,
}

/// How many of a workspace's started programs `status` shows.
pub const RAN_SHOWN: usize = 16;

/// One program openfiles started (`openfiles_gate::spawn::recent`): what, for which trust,
/// and why it was allowed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ran {
    /// When (ms since the epoch).
    pub at_ms: u64,
    pub program: PathBuf,
    /// Its first arguments (cut).
    #[serde(default)]
    pub args: Vec<String>,
    /// `user`, `trusted` or `untrusted`: the environment and executables it was allowed.
    pub trust: String,
    /// Why it ran, in the starter's words.
    pub why: String,
}

/// What a warm-up (`warm`, sent by a session-start hook) did in one workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarmState {
    /// Epoch ms when it was asked for.
    pub started_at: u64,
    /// Epoch ms when every source it started had answered; 0 while they start.
    #[serde(default)]
    pub done_at: u64,
    /// The sources started (their servers spawned and initialized by one check each).
    #[serde(default)]
    pub sources: Vec<String>,
    /// The workspace's files those checks read (results are not kept).
    #[serde(default)]
    pub files: Vec<PathBuf>,
    /// Sources whose warm-up check failed, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}
// The plugin host's status rows (`status`, `openfiles plugins`, `doctor`).

/// Where a candidate was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PluginOrigin {
    Config,
    Env,
    Executable,
}

/// Where a plugin stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PluginState {
    /// A search-path entry that does not exist.
    Missing,
    /// The library was refused (`kind` says why: `abi-mismatch`, `missing-symbol`,
    /// `load-error`, `bad-table`, `create-failed`, `host-failed`, `duplicate`).
    Refused,
    /// Named in `plugins.disabled`.
    Disabled,
    Loaded,
    /// Its host died; a new one is being started.
    Restarting,
    /// It could not be restarted; checks fail with the reason.
    Broken,
    Stopped,
}

impl PluginState {
    /// The wire spelling (`loaded`, `refused`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            PluginState::Missing => "missing",
            PluginState::Refused => "refused",
            PluginState::Disabled => "disabled",
            PluginState::Loaded => "loaded",
            PluginState::Restarting => "restarting",
            PluginState::Broken => "broken",
            PluginState::Stopped => "stopped",
        }
    }
}

/// One row of `openfiles plugins` / the service status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    pub path: PathBuf,
    pub origin: PluginOrigin,
    pub state: PluginState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub restarts: u32,
    /// Checks sent to this plugin since the service started.
    #[serde(default)]
    pub checks: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
}

impl PluginStatus {
    pub fn new(path: PathBuf, origin: PluginOrigin, state: PluginState) -> Self {
        PluginStatus {
            path,
            origin,
            state,
            name: None,
            version: None,
            kind: None,
            reason: None,
            restarts: 0,
            checks: 0,
            pid: None,
            capabilities: None,
        }
    }
}

/// Reply to `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReply {
    pub version: String,
    pub pid: u32,
    pub uptime_ms: u64,
    pub activation: Activation,
    pub socket: PathBuf,
    pub workspaces: Vec<WorkspaceStatus>,
    pub terminals: usize,
    /// Per-plugin state, filled by the plugin host supervisor.
    #[serde(default)]
    pub plugins: Vec<PluginStatus>,
    /// The last config reload's error, until a reload succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_reload_error: Option<String>,
    /// The binary the service runs, and its modification time (ms) when the service
    /// started: a client seeing a newer file there knows the service is older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_mtime_ms: Option<u64>,
    /// The programs the service process started for no workspace (plugin hosts), most
    /// recent last; each workspace's are in its row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ran: Vec<Ran>,
    #[serde(default)]
    pub ran_total: usize,
}

impl StatusReply {
    /// When the binary on disk is not the one the service started from (an upgrade
    /// replaced it), the advice to restart; `None` when they match or cannot be compared.
    pub fn outdated(&self) -> Option<String> {
        let (path, started) = (self.binary.as_ref()?, self.binary_mtime_ms?);
        let now = crate::spec::mtime_ms(path)?;
        (now != started).then(|| {
            format!(
                "the service is older than its binary ({} changed since it started): restart it \
                 with `openfiles service restart`",
                path.display()
            )
        })
    }
}

/// How the service got its control socket (`status`'s `activation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Activation {
    /// Socket activation by a systemd user unit.
    Systemd,
    /// Socket activation by a launchd agent.
    Launchd,
    /// The service bound the socket itself (started by hand).
    #[default]
    Bound,
    /// A client started it on first use (autostart).
    Autostarted,
}

impl Activation {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Activation::Systemd => "systemd",
            Activation::Launchd => "launchd",
            Activation::Bound => "bound",
            Activation::Autostarted => "autostarted",
        }
    }
}

impl std::fmt::Display for Activation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
