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

// The reply types the service's rooms build (diagnostics, review, workspace) are defined here,
// so both sides of the protocol name them in one place; those rooms re-export them.

/// A path an intake refused, and why (answered to `edited`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    pub path: PathBuf,
    pub reason: String,
}

impl Rejected {
    /// How a reason meant for the agent begins: an ignore rule left the path unchecked (the
    /// service gives it once per file, naming the rule and how to change it; the hook shows
    /// it).
    pub const NOTICE: &'static str = "not checked: ";

    /// Whether the reason is a notice for the agent ([`Rejected::NOTICE`]).
    pub fn is_notice(&self) -> bool {
        self.reason.starts_with(Self::NOTICE)
    }
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
    /// How it was registered.
    pub source: WorkspaceSource,
    /// Registered with `openfiles add` or by an edit: survives restarts.
    pub persisted: bool,
}

mod call;
pub mod client;
mod envelope;
pub mod nav;
mod status;

/// Longest accepted request line, in bytes (without the newline).
pub use crate::line::MAX_LINE;
pub use call::{
    Add, Call, Done, Forget, Pause, Resume, Review, SessionClear, Shutdown, Status, Warm,
    Workspaces,
};
pub use client::{Client, ClientError};
pub use envelope::{decode, encode_request, error_reply, ok_reply, DecodeError, Incoming, Reply};
pub use status::{
    Activation, PluginOrigin, PluginState, PluginStatus, Ran, StatusReply, WarmState,
    WorkspaceStatus, RAN_SHOWN,
};

/// Protocol name and major version; both sides refuse anything else.
pub const PROTOCOL: &str = "openfiles/1";

/// The `cmd` of every request: the one place each is spelled. Encoding, decoding,
/// [`Request::name`] and [`Call::CMD`] all read these.
pub mod cmd {
    pub const HELLO: &str = "hello";
    pub const STATUS: &str = "status";
    pub const WORKSPACES: &str = "workspaces";
    pub const ADD: &str = "add";
    pub const FORGET: &str = "forget";
    pub const SHUTDOWN: &str = "shutdown";
    pub const EDITED: &str = "edited";
    pub const WAIT: &str = "wait";
    pub const CHECK: &str = "check";
    pub const SESSION_CLEAR: &str = "sessionClear";
    pub const TOOLS: &str = "tools";
    pub const REVIEW: &str = "review";
    pub const REVIEW_MARK: &str = "reviewMark";
    pub const PAUSE: &str = "pause";
    pub const RESUME: &str = "resume";
    pub const TRUST: &str = "trust";
    pub const WARM: &str = "warm";
    pub const NAV: &str = "nav";
}

/// A request, tagged by `cmd` on the wire (`{"cmd": …, ...args}`).
#[derive(Debug, Clone, PartialEq)]
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
            Request::Hello(_) => cmd::HELLO,
            Request::Status => cmd::STATUS,
            Request::Workspaces => cmd::WORKSPACES,
            Request::Add(_) => cmd::ADD,
            Request::Forget(_) => cmd::FORGET,
            Request::Shutdown => cmd::SHUTDOWN,
            Request::Edited(_) => cmd::EDITED,
            Request::Wait(_) => cmd::WAIT,
            Request::Check(_) => cmd::CHECK,
            Request::SessionClear(_) => cmd::SESSION_CLEAR,
            Request::Tools(_) => cmd::TOOLS,
            Request::Review(_) => cmd::REVIEW,
            Request::ReviewMark(_) => cmd::REVIEW_MARK,
            Request::Pause(_) => cmd::PAUSE,
            Request::Resume(_) => cmd::RESUME,
            Request::Trust(_) => cmd::TRUST,
            Request::Warm(_) => cmd::WARM,
            Request::Nav(_) => cmd::NAV,
        }
    }

    /// The arguments as a JSON object (empty for the commands that take none).
    fn args(&self) -> Result<Map<String, Value>, serde_json::Error> {
        let v = match self {
            Request::Status | Request::Workspaces | Request::Shutdown => return Ok(Map::new()),
            Request::Hello(a) => serde_json::to_value(a)?,
            Request::Add(a)
            | Request::Forget(a)
            | Request::SessionClear(a)
            | Request::Review(a)
            | Request::Pause(a)
            | Request::Resume(a)
            | Request::Warm(a) => serde_json::to_value(a)?,
            Request::Edited(a) => serde_json::to_value(a)?,
            Request::Wait(a) => serde_json::to_value(a)?,
            Request::Check(a) => serde_json::to_value(a)?,
            Request::Tools(a) => serde_json::to_value(a)?,
            Request::ReviewMark(a) => serde_json::to_value(a)?,
            Request::Trust(a) => serde_json::to_value(a)?,
            Request::Nav(a) => serde_json::to_value(a)?,
        };
        match v {
            Value::Object(m) => Ok(m),
            _ => Err(serde::ser::Error::custom(
                "request arguments must be an object",
            )),
        }
    }

    /// The request named `name` from its arguments (the request object without `cmd`;
    /// fields no command reads are ignored).
    pub fn from_parts(name: &str, args: Map<String, Value>) -> Result<Request, DecodeError> {
        fn arg<T: serde::de::DeserializeOwned>(
            name: &str,
            args: Map<String, Value>,
        ) -> Result<T, DecodeError> {
            serde_json::from_value(Value::Object(args)).map_err(|e| DecodeError::Invalid {
                cmd: name.to_owned(),
                reason: e.to_string(),
            })
        }
        Ok(match name {
            cmd::HELLO => Request::Hello(arg(name, args)?),
            cmd::STATUS => Request::Status,
            cmd::WORKSPACES => Request::Workspaces,
            cmd::ADD => Request::Add(arg(name, args)?),
            cmd::FORGET => Request::Forget(arg(name, args)?),
            cmd::SHUTDOWN => Request::Shutdown,
            cmd::EDITED => Request::Edited(arg(name, args)?),
            cmd::WAIT => Request::Wait(arg(name, args)?),
            cmd::CHECK => Request::Check(arg(name, args)?),
            cmd::SESSION_CLEAR => Request::SessionClear(arg(name, args)?),
            cmd::TOOLS => Request::Tools(arg(name, args)?),
            cmd::REVIEW => Request::Review(arg(name, args)?),
            cmd::REVIEW_MARK => Request::ReviewMark(arg(name, args)?),
            cmd::PAUSE => Request::Pause(arg(name, args)?),
            cmd::RESUME => Request::Resume(arg(name, args)?),
            cmd::TRUST => Request::Trust(arg(name, args)?),
            cmd::WARM => Request::Warm(arg(name, args)?),
            cmd::NAV => Request::Nav(arg(name, args)?),
            other => return Err(DecodeError::UnknownCmd(other.to_owned())),
        })
    }
}

/// `{"cmd": name, ...args}`, `cmd` first.
impl Serialize for Request {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = Map::new();
        m.insert("cmd".into(), Value::from(self.name()));
        m.extend(self.args().map_err(serde::ser::Error::custom)?);
        Value::Object(m).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut m = Map::deserialize(d)?;
        let name = match m.remove("cmd") {
            Some(Value::String(c)) => c,
            _ => return Err(serde::de::Error::custom(DecodeError::MissingCmd)),
        };
        Request::from_parts(&name, m).map_err(serde::de::Error::custom)
    }
}

/// How a workspace was registered (`WorkspaceInfo::source`, `WorkspaceStatus::source`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WorkspaceSource {
    /// Named on `openfiles serve`'s command line.
    Cli,
    /// Named in the config's `workspaces`.
    Config,
    /// `openfiles add` (persisted).
    #[default]
    Added,
    /// Found under the config's `roots`.
    Discovered,
    /// Registered by an edit inside it.
    Edit,
}

impl WorkspaceSource {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceSource::Cli => "cli",
            WorkspaceSource::Config => "config",
            WorkspaceSource::Added => "added",
            WorkspaceSource::Discovered => "discovered",
            WorkspaceSource::Edit => "edit",
        }
    }
}

impl std::fmt::Display for WorkspaceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> PathArg {
        PathArg {
            path: p.into(),
            force: false,
        }
    }

    /// Sends `c`, decodes it as the service does, and holds `Call::CMD` to the name it went
    /// out as.
    fn round_trip<C: Call>(c: &C) {
        let req = c.request();
        assert_eq!(req.name(), C::CMD);
        let inc = decode(&encode_request(1, &req));
        assert_eq!(inc.request, Ok(req), "{}", C::CMD);
    }

    /// Every command, through its typed request, survives the wire both ways.
    #[test]
    fn every_request_round_trips_and_names_its_command() {
        round_trip(&Hello {
            client: "t".into(),
            version: "1".into(),
        });
        round_trip(&Status);
        round_trip(&Workspaces);
        round_trip(&Add(PathArg {
            path: "/a".into(),
            force: true,
        }));
        round_trip(&Forget(path("/a")));
        round_trip(&Shutdown);
        round_trip(&Edited {
            paths: vec!["/a".into()],
            agent: Some("claude".into()),
            ..Default::default()
        });
        round_trip(&Wait {
            paths: vec!["/a".into()],
            since: 4,
            timeout_ms: Some(9),
            partial: true,
            session: Some("s".into()),
            fixes: true,
        });
        round_trip(&Check {
            paths: vec!["/a".into()],
            ..Default::default()
        });
        round_trip(&SessionClear(path("/a")));
        round_trip(&ToolsQuery {
            tools: vec![ToolQuery {
                name: "rg".into(),
                probe: vec!["--version".into()],
            }],
            root: None,
        });
        round_trip(&Review(path("/a")));
        round_trip(&ReviewMark {
            paths: vec!["/a".into()],
            reviewed: false,
        });
        round_trip(&Pause(path("/a")));
        round_trip(&Resume(path("/a")));
        round_trip(&TrustArg {
            path: "/a".into(),
            trusted: true,
        });
        round_trip(&Warm(path("/a")));
        round_trip(&nav::Nav {
            kind: nav::QueryKind::References,
            path: "/a".into(),
            line: None,
            column: None,
            symbol: Some("C/m".into()),
            query: None,
            new_name: None,
            limit: Some(3),
            page: Some(2),
            timeout_ms: None,
        });
    }

    /// The bytes on the wire are the ones the tagged encoding wrote: `cmd` first, the
    /// arguments in field order, then `id` and `protocol`.
    #[test]
    fn request_bytes_are_unchanged() {
        let line = encode_request(
            3,
            &Request::Edited(Edited {
                paths: vec!["/a".into()],
                agent: Some("claude".into()),
                ts: 5,
                ..Default::default()
            }),
        );
        assert_eq!(
            String::from_utf8(line).unwrap(),
            r#"{"cmd":"edited","paths":["/a"],"agent":"claude","ts":5,"id":3,"protocol":"openfiles/1"}"#
        );
        assert_eq!(
            String::from_utf8(encode_request(1, &Request::Status)).unwrap(),
            r#"{"cmd":"status","id":1,"protocol":"openfiles/1"}"#
        );
        assert_eq!(
            serde_json::to_value(Request::Status).unwrap(),
            serde_json::json!({"cmd": "status"})
        );
    }

    #[test]
    fn enums_keep_their_wire_spellings() {
        for s in [
            WorkspaceSource::Cli,
            WorkspaceSource::Config,
            WorkspaceSource::Added,
            WorkspaceSource::Discovered,
            WorkspaceSource::Edit,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for a in [
            Activation::Systemd,
            Activation::Launchd,
            Activation::Bound,
            Activation::Autostarted,
        ] {
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
    }

    /// A reply read by the typed call: the body as the command's reply, `ok:false` as the
    /// service's error.
    #[test]
    fn replies_are_read_as_the_commands_reply() {
        let line = ok_reply(
            Some(&Value::from(1)),
            PauseReply {
                root: "/a".into(),
                paused: true,
                was_paused: false,
            },
        );
        let reply: <Pause as Call>::Reply = Reply::parse(&line).unwrap().into_result().unwrap();
        assert!(reply.paused && !reply.was_paused);
        let err = Reply::parse(&error_reply(None, "no workspace"))
            .unwrap()
            .into_result::<<Pause as Call>::Reply>()
            .unwrap_err();
        assert_eq!(err.to_string(), "no workspace");
    }
}
