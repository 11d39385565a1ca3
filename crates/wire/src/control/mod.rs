//! The `openfiles/1` control protocol, shared by the service and every client
//! (`hook`, `status`, `add`, `check`, …).
//!
//! Framing: one JSON object per line (`\n`), both ways, UTF-8. A line longer than
//! [`MAX_LINE`] gets an error reply and the connection is closed; a line that is not
//! JSON gets `bad json` and the connection stays open. Replies on one connection come
//! in request order.
//!
//! Envelope: a request is `{"id"?, "protocol"?, "cmd", ...args}`. `id` (any JSON value)
//! is echoed; `protocol`, when present, must be [`PROTOCOL`]. A reply is
//! `{"id"?, "ok": true, "protocol": "openfiles/1", ...body}` or
//! `{"id"?, "ok": false, "protocol": "openfiles/1", "error": "..."}`.
//!
//! Trust boundary: the socket is 0600 in a 0700 directory and the service refuses peers
//! of another uid, so every peer is the user; inputs are still validated (paths are
//! canonicalized and confined to workspaces by the service, sizes capped here).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;

use crate::spec::{BaselineInfo, FileEntry, HookSettings};
use openfiles_plugin_api::Capabilities;

// The reply types the service's rooms build (diagnostics, review, workspace) are defined here,
// so both sides of the protocol name them in one place; those rooms re-export them.

/// A path an intake refused, and why (answered to `edited`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    pub path: PathBuf,
    pub reason: String,
}

/// The entries of one workspace, keyed as in its `diagnostics.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceEntries {
    pub root: PathBuf,
    pub hook: HookSettings,
    pub files: std::collections::BTreeMap<String, FileEntry>,
    /// Where the session's baseline came from (absent from older services).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineInfo>,
}

/// Review data of one session file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mark {
    /// Every agent that edited the file this session, in order of first edit; the last edit's
    /// agent is [`Mark::last_agent`].
    #[serde(default)]
    pub agents: Vec<String>,
    #[serde(default)]
    pub last_agent: String,
    /// Epoch ms of the last edit.
    #[serde(default)]
    pub edited_at: u64,
    /// Epoch ms when a person marked the file reviewed; 0 = not reviewed since its last edit.
    #[serde(default)]
    pub reviewed_at: u64,
}

impl Mark {
    pub fn reviewed(&self) -> bool {
        self.reviewed_at != 0
    }
}

/// One session file as `openfiles review` shows it: its entry and its review data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewFile {
    /// The key in `diagnostics.json` (workspace-relative, `/`-separated).
    pub key: String,
    #[serde(flatten)]
    pub mark: Mark,
    pub entry: FileEntry,
}

/// A workspace's session for review (the reply to the `review` control request).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceReview {
    pub root: PathBuf,
    pub paused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_agent: Option<String>,
    pub files: Vec<ReviewFile>,
}

/// A registered workspace, as `workspaces`, `add` and `forget` answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceInfo {
    pub root: PathBuf,
    /// How it was registered: `cli`, `config`, `added`, `discovered`, `edit`.
    pub source: String,
    /// Registered with `openfiles add` or by an edit: survives restarts.
    pub persisted: bool,
}

/// One workspace's line in `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceStatus {
    pub root: PathBuf,
    pub source: String,
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

pub mod client;
pub mod nav;

/// Longest accepted request line, in bytes (without the newline).
pub use crate::line::MAX_LINE;
pub use client::{Client, ClientError};

/// Protocol name and major version; both sides refuse anything else.
pub const PROTOCOL: &str = "openfiles/1";

/// A request, tagged by `cmd`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "camelCase")]
pub enum Request {
    /// Handshake: learn the service's version and protocol.
    Hello(Hello),
    /// Counts and per-workspace state.
    Status,
    /// The registered workspaces.
    Workspaces,
    /// Register a workspace folder (persisted).
    Add(PathArg),
    /// Unregister a workspace folder.
    Forget(PathArg),
    /// Stop the service (the same path as SIGTERM).
    Shutdown,
    /// Files were edited: register their workspaces and schedule checks.
    Edited(Edited),
    /// Answer when every path has `checkedAt >= since`, or at the deadline.
    Wait(Wait),
    /// Check these paths now and answer with their entries.
    Check(Check),
    /// Forget the session files of the workspace holding `path`.
    SessionClear(PathArg),
    /// Look executables up the way the service and its plugins would: on the service's own
    /// `PATH` (and a workspace's `node_modules/.bin`), running each one's probe.
    Tools(ToolsQuery),
    /// The session of the workspace holding `path`, with agents and reviewed marks.
    Review(PathArg),
    /// Mark session files reviewed (or not, with `reviewed: false`).
    ReviewMark(ReviewMark),
    /// Stop noticing edits in the workspace holding `path` (the session is kept).
    Pause(PathArg),
    /// Notice edits in the workspace holding `path` again.
    Resume(PathArg),
    /// Trust the workspace folder `path` (or stop trusting it): whether its checks may run
    /// what the repository brings (`node_modules/.bin`, `cargo check`'s build scripts).
    Trust(TrustArg),
    /// An agent session starts in the folder `path`: start the checkers of its workspace in
    /// the background (language servers spawned and initialized), answering at once.
    Warm(PathArg),
    /// A code-navigation question about a position or a file (`nav.rs`).
    Nav(nav::Nav),
}

impl Request {
    /// The `cmd` string of this request.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Hello(_) => "hello",
            Request::Status => "status",
            Request::Workspaces => "workspaces",
            Request::Add(_) => "add",
            Request::Forget(_) => "forget",
            Request::Shutdown => "shutdown",
            Request::Edited(_) => "edited",
            Request::Wait(_) => "wait",
            Request::Check(_) => "check",
            Request::SessionClear(_) => "sessionClear",
            Request::Tools(_) => "tools",
            Request::Review(_) => "review",
            Request::ReviewMark(_) => "reviewMark",
            Request::Pause(_) => "pause",
            Request::Resume(_) => "resume",
            Request::Trust(_) => "trust",
            Request::Warm(_) => "warm",
            Request::Nav(_) => "nav",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    #[serde(default)]
    pub client: String,
    #[serde(default)]
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathArg {
    pub path: PathBuf,
    /// `add` only: serve the home folder too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edited {
    pub paths: Vec<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Epoch ms of the edit, as the client saw it (informational; the reply's `ts` counts).
    #[serde(default)]
    pub ts: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wait {
    pub paths: Vec<PathBuf>,
    /// Epoch ms; usually the `ts` of the `edited` reply.
    pub since: u64,
    /// How long to wait at most, from now; absent = until `since` plus the workspace's
    /// `hook.timeoutMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Answer early (`partial` in the reply) once the grace `hooks.partial_after_ms` after
    /// `since` has passed and only project-wide sources still run. The hook asks for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The agent session asking (the hook's `agent/session_id`). When the wait ends at its
    /// deadline with files still being checked, their results are owed to this session and
    /// come, once, in the `earlier` of its next wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Once complete, also wait for the fixes a source fetches after its answer (bounded by
    /// their budget) and answer with the items that carry them. The MCP tools ask for it;
    /// the hook does not (a result never waits for its fixes there).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixes: bool,
}

/// Reply to `warm`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarmReply {
    /// The workspace being warmed.
    pub root: PathBuf,
    /// False when a warm-up of this workspace was already running (nothing new started).
    pub started: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub paths: Vec<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Who changed the files, recorded for review (`session add-git` says `git`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewMark {
    /// Absolute paths of session files.
    pub paths: Vec<PathBuf>,
    /// `false` clears the mark.
    #[serde(default = "yes")]
    pub reviewed: bool,
}

fn yes() -> bool {
    true
}

/// Reply to `reviewMark`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewMarked {
    /// The session files whose mark was set (canonical).
    pub marked: Vec<PathBuf>,
    /// Paths not in any session, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
}

/// Arguments of `trust`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustArg {
    /// The workspace folder.
    pub path: PathBuf,
    /// `false` revokes the trust.
    #[serde(default = "yes")]
    pub trusted: bool,
}

/// Reply to `trust`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustReply {
    /// The folder (canonical).
    pub root: PathBuf,
    /// The state now.
    pub trusted: bool,
    /// It is a workspace the service serves now (a folder not served yet keeps the decision
    /// for when it is).
    pub served: bool,
    /// Still trusted because the user named it (command line, config, `openfiles add`):
    /// revoking the recorded trust does not change that.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub named: bool,
    /// The filesystem gave neither the folder's birth time nor an extended attribute for
    /// its trust mark: the trust is keyed to device and inode only, which a folder
    /// re-created at the same path may get again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inode_only: bool,
}

/// Reply to `pause` and `resume`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PauseReply {
    pub root: PathBuf,
    /// The state now.
    pub paused: bool,
    /// The state before the request.
    pub was_paused: bool,
}

/// Most tools one `tools` request may name.
pub const MAX_TOOLS: usize = 64;

/// Arguments of `tools`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsQuery {
    pub tools: Vec<ToolQuery>,
    /// A workspace folder whose `node_modules/.bin` and `.venv/bin` are searched before
    /// `PATH` when the service trusts it (an unregistered folder is not trusted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
}

/// One executable to look up: a plain file name, and the arguments of a quick run that must
/// succeed for the tool to count (the lsp plugin's probe, e.g. `rust-analyzer --version`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolQuery {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe: Vec<String>,
}

/// Reply to `tools`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsReply {
    /// The service's `PATH` (what its plugins and language servers inherit).
    #[serde(default)]
    pub path: Option<String>,
    pub tools: Vec<ToolFound>,
}

/// Where the service found one tool, and whether its probe passed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFound {
    pub name: String,
    /// `None`: not found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Why the probe failed (the service does not use the tool); `None` when it passed or
    /// there was none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_error: Option<String>,
    /// A copy inside the workspace (`node_modules/.bin`, `.venv/bin`) that is neither used
    /// nor run because the user has not trusted the workspace (`openfiles trust`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back: Option<PathBuf>,
}

/// Reply to `hello`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloReply {
    pub server: String,
    pub version: String,
    pub pid: u32,
}

/// Reply to `edited`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditedReply {
    /// Epoch ms at which the service accepted the edit: pass it as `wait.since`.
    pub ts: u64,
    /// Accepted paths (canonical), grouped by workspace.
    pub workspaces: Vec<WorkspacePaths>,
    /// Paths that will not be checked, and why.
    #[serde(default)]
    pub rejected: Vec<Rejected>,
    /// Workspaces that are paused (`openfiles pause`): their paths were not taken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paused: Vec<PathBuf>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspacePaths {
    pub root: PathBuf,
    pub paths: Vec<PathBuf>,
}

/// Reply to `wait` and `check`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitReply {
    /// True when every path was checked at or after `since`; false at the deadline.
    pub complete: bool,
    /// True when answered early without being complete: the fast sources answered, the
    /// entries' `sources` name those still running.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    pub workspaces: Vec<WorkspaceEntries>,
    /// Results owed to the asking session (`wait.session`): files an earlier wait of it left
    /// still being checked at its deadline, checked since. Each is handed out once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<WorkspaceEntries>,
    /// For `check`: the paths that will not be checked, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
}

/// Reply to `sessionClear`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionCleared {
    pub root: PathBuf,
    pub cleared: usize,
}

/// Reply to `workspaces`, `add` and `forget`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspacesReply {
    pub workspaces: Vec<WorkspaceInfo>,
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
    /// `systemd`, `launchd`, `bound` (started by hand) or `autostarted` (by a client).
    pub activation: String,
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

/// Why a request line could not be turned into a [`Request`].
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DecodeError {
    #[error("bad json")]
    BadJson,
    #[error("request must be a JSON object")]
    NotAnObject,
    #[error("missing cmd")]
    MissingCmd,
    #[error("unknown cmd: {0}")]
    UnknownCmd(String),
    #[error("incompatible protocol version (server: {PROTOCOL}, client: {0})")]
    Protocol(String),
    #[error("invalid {cmd} request: {reason}")]
    Invalid { cmd: String, reason: String },
}

/// A decoded request line: the id to echo (if any) and the request or the reason it failed.
#[derive(Debug)]
pub struct Incoming {
    pub id: Option<Value>,
    pub request: Result<Request, DecodeError>,
}

const COMMANDS: &[&str] = &[
    "hello",
    "status",
    "workspaces",
    "add",
    "forget",
    "shutdown",
    "edited",
    "wait",
    "check",
    "sessionClear",
    "tools",
    "review",
    "reviewMark",
    "pause",
    "resume",
    "trust",
    "warm",
    "nav",
];

/// Decode one request line (without its newline).
pub fn decode(line: &[u8]) -> Incoming {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(_) => {
            return Incoming {
                id: None,
                request: Err(DecodeError::BadJson),
            }
        }
    };
    let Value::Object(mut map) = value else {
        return Incoming {
            id: None,
            request: Err(DecodeError::NotAnObject),
        };
    };
    let id = map.remove("id");
    let request = decode_object(map);
    Incoming { id, request }
}

fn decode_object(mut map: Map<String, Value>) -> Result<Request, DecodeError> {
    match map.remove("protocol") {
        None => {}
        Some(Value::String(p)) if p == PROTOCOL => {}
        Some(Value::String(p)) => return Err(DecodeError::Protocol(p)),
        Some(other) => return Err(DecodeError::Protocol(other.to_string())),
    }
    let cmd = match map.get("cmd") {
        Some(Value::String(c)) => c.clone(),
        Some(_) | None => return Err(DecodeError::MissingCmd),
    };
    if !COMMANDS.contains(&cmd.as_str()) {
        return Err(DecodeError::UnknownCmd(cmd));
    }
    serde_json::from_value(Value::Object(map)).map_err(|e| DecodeError::Invalid {
        cmd,
        reason: e.to_string(),
    })
}

/// Encode a request for the wire (with `protocol`, without the newline).
pub fn encode_request(id: u64, request: &Request) -> Vec<u8> {
    let mut value = serde_json::to_value(request).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("id".into(), Value::from(id));
        map.insert("protocol".into(), Value::from(PROTOCOL));
    }
    serde_json::to_vec(&value).unwrap_or_default()
}

/// Build a success reply: `body` (an object) plus the envelope fields.
pub fn ok_reply(id: Option<&Value>, body: impl Serialize) -> Vec<u8> {
    let mut map = match serde_json::to_value(body) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    map.insert("ok".into(), Value::Bool(true));
    envelope(map, id)
}

/// Build an error reply.
pub fn error_reply(id: Option<&Value>, error: impl std::fmt::Display) -> Vec<u8> {
    let mut map = Map::new();
    map.insert("ok".into(), Value::Bool(false));
    map.insert("error".into(), Value::String(error.to_string()));
    envelope(map, id)
}

fn envelope(mut map: Map<String, Value>, id: Option<&Value>) -> Vec<u8> {
    map.insert("protocol".into(), Value::from(PROTOCOL));
    if let Some(id) = id {
        map.insert("id".into(), id.clone());
    }
    serde_json::to_vec(&Value::Object(map)).unwrap_or_default()
}

/// A reply as a client sees it.
#[derive(Debug, Clone)]
pub struct Reply {
    pub ok: bool,
    pub error: Option<String>,
    pub body: Map<String, Value>,
}

impl Reply {
    /// Parse a reply line.
    pub fn parse(line: &[u8]) -> Result<Reply, DecodeError> {
        let Value::Object(mut body) =
            serde_json::from_slice::<Value>(line).map_err(|_| DecodeError::BadJson)?
        else {
            return Err(DecodeError::NotAnObject);
        };
        let ok = body.remove("ok").and_then(|v| v.as_bool()).unwrap_or(false);
        let error = body
            .remove("error")
            .and_then(|v| v.as_str().map(str::to_owned));
        body.remove("protocol");
        body.remove("id");
        Ok(Reply { ok, error, body })
    }

    /// Deserialize the body into the command's reply type.
    pub fn into_body<T: serde::de::DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        serde_json::from_value(Value::Object(self.body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_known_commands_and_echoes_id() {
        let inc = decode(br#"{"id":7,"cmd":"add","path":"/tmp/x"}"#);
        assert_eq!(inc.id, Some(Value::from(7)));
        assert_eq!(
            inc.request,
            Ok(Request::Add(PathArg {
                path: "/tmp/x".into(),
                force: false,
            }))
        );
    }

    #[test]
    fn names_unknown_commands_and_bad_protocols() {
        assert_eq!(
            decode(br#"{"cmd":"frobnicate"}"#).request,
            Err(DecodeError::UnknownCmd("frobnicate".into()))
        );
        let err = decode(br#"{"cmd":"status","protocol":"openfiles/9"}"#)
            .request
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "incompatible protocol version (server: openfiles/1, client: openfiles/9)"
        );
        assert_eq!(decode(b"{nope").request, Err(DecodeError::BadJson));
    }

    #[test]
    fn invalid_arguments_name_the_command() {
        let err = decode(br#"{"cmd":"wait","paths":"x"}"#)
            .request
            .unwrap_err();
        assert!(err.to_string().starts_with("invalid wait request"), "{err}");
    }

    #[test]
    fn request_round_trips_through_the_wire_format() {
        let req = Request::Edited(Edited {
            paths: vec!["/a".into()],
            agent: Some("claude".into()),
            ts: 5,
            ..Default::default()
        });
        let line = encode_request(3, &req);
        let inc = decode(&line);
        assert_eq!(inc.id, Some(Value::from(3)));
        assert_eq!(inc.request, Ok(req));
    }
}
