//! Typed Claws requests: one struct per command, decoded from the request object after the
//! envelope ([`super::Request`]: `id`, `protocol`, `clientVersion`) is checked.
//!
//! Decoding is lenient the way the editor extension's JavaScript is: a field of the wrong
//! type reads as absent (so its default applies), numbers may come as strings, unknown
//! fields are ignored. Only the command name can fail: `unknown cmd: <name>` (a non-string
//! `cmd` is named by its JSON). Handlers validate the values that have rules of their own
//! (`env` must be an object of strings, a cursor must parse) with the errors the notes fix.
//! [`Command::parse`] is the one exhaustive mapping from names to types ([`Command::name`] the
//! way back, and a test holds the two equal); the server's dispatch is the one exhaustive
//! `match` over [`Command`]. Clients build the same structs and send [`Command::to_value`], so
//! a field the server would not read cannot be sent.

mod lenient;
mod orch;
pub mod reply;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::{ErrorCode, Request, Role};
use lenient::{boolean, number, role, string, strings};
pub use orch::*;
pub use reply::*;

/// The `cmd` of every command: the one place each is spelled ([`Command::parse`],
/// [`Command::name`] and the server's checks read these).
pub mod cmd {
    pub const PING: &str = "ping";
    pub const LIST: &str = "list";
    pub const CREATE: &str = "create";
    pub const SHOW: &str = "show";
    pub const SEND: &str = "send";
    pub const EXEC: &str = "exec";
    pub const READ_LOG: &str = "readLog";
    pub const POLL: &str = "poll";
    pub const CLOSE: &str = "close";
    pub const RESIZE: &str = "resize";
    pub const INTROSPECT: &str = "introspect";
    pub const HELLO: &str = "hello";
    pub const PEERS: &str = "peers";
    pub const SUBSCRIBE: &str = "subscribe";
    pub const UNSUBSCRIBE: &str = "unsubscribe";
    pub const PUBLISH: &str = "publish";
    pub const BROADCAST: &str = "broadcast";
    pub const DELIVER_CMD: &str = "deliver-cmd";
    pub const CMD_ACK: &str = "cmd.ack";
    pub const TASK_ASSIGN: &str = "task.assign";
    pub const TASK_UPDATE: &str = "task.update";
    pub const TASK_COMPLETE: &str = "task.complete";
    pub const TASK_CANCEL: &str = "task.cancel";
    pub const TASK_LIST: &str = "task.list";
    pub const LIFECYCLE_PLAN: &str = "lifecycle.plan";
    pub const LIFECYCLE_ADVANCE: &str = "lifecycle.advance";
    pub const LIFECYCLE_SNAPSHOT: &str = "lifecycle.snapshot";
    pub const LIFECYCLE_REFLECT: &str = "lifecycle.reflect";
    pub const LIFECYCLE_REGISTER_SPAWN: &str = "lifecycle.register-spawn";
    pub const LIFECYCLE_REGISTER_MONITOR: &str = "lifecycle.register-monitor";
    pub const LIFECYCLE_MARK_WORKER_STATUS: &str = "lifecycle.mark-worker-status";
    pub const MONITORS_REGISTER_INTENT: &str = "monitors.register-intent";
    pub const MONITORS_IS_CORR_ARMED: &str = "monitors.is-corr-armed";
    pub const WAVE_CREATE: &str = "wave.create";
    pub const WAVE_STATUS: &str = "wave.status";
    pub const WAVE_COMPLETE: &str = "wave.complete";
    pub const PIPELINE_CREATE: &str = "pipeline.create";
    pub const PIPELINE_LIST: &str = "pipeline.list";
    pub const PIPELINE_CLOSE: &str = "pipeline.close";
    pub const RPC_CALL: &str = "rpc.call";
    pub const SCHEMA_LIST: &str = "schema.list";
    pub const SCHEMA_GET: &str = "schema.get";
    /// Every command, in [`super::Command`]'s order.
    pub const ALL: &[&str] = &[
        PING,
        LIST,
        CREATE,
        SHOW,
        SEND,
        EXEC,
        READ_LOG,
        POLL,
        CLOSE,
        RESIZE,
        INTROSPECT,
        HELLO,
        PEERS,
        SUBSCRIBE,
        UNSUBSCRIBE,
        PUBLISH,
        BROADCAST,
        DELIVER_CMD,
        CMD_ACK,
        TASK_ASSIGN,
        TASK_UPDATE,
        TASK_COMPLETE,
        TASK_CANCEL,
        TASK_LIST,
        LIFECYCLE_PLAN,
        LIFECYCLE_ADVANCE,
        LIFECYCLE_SNAPSHOT,
        LIFECYCLE_REFLECT,
        LIFECYCLE_REGISTER_SPAWN,
        LIFECYCLE_REGISTER_MONITOR,
        LIFECYCLE_MARK_WORKER_STATUS,
        MONITORS_REGISTER_INTENT,
        MONITORS_IS_CORR_ARMED,
        WAVE_CREATE,
        WAVE_STATUS,
        WAVE_COMPLETE,
        PIPELINE_CREATE,
        PIPELINE_LIST,
        PIPELINE_CLOSE,
        RPC_CALL,
        SCHEMA_LIST,
        SCHEMA_GET,
    ];
}

/// Why a request object is not a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// `cmd` is absent (`undefined`), not a string (named by its JSON) or not a command.
    #[error("unknown cmd: {0}")]
    UnknownCmd(String),
    /// A field outside its own leniency. Every field of today's commands reads a value of
    /// the wrong type as absent, so this names a field that stopped being lenient rather
    /// than blanking the whole request.
    #[error("invalid {cmd} request: {reason}")]
    Invalid { cmd: &'static str, reason: String },
}

impl ParseError {
    /// The code clients match (`code` beside `error` on the wire).
    pub fn code(&self) -> ErrorCode {
        match self {
            ParseError::UnknownCmd(_) => ErrorCode::UnknownCmd,
            ParseError::Invalid { .. } => ErrorCode::InvalidRequest,
        }
    }
}

/// A decoded request.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Ping,
    List,
    Create(Create),
    Show(Target),
    Send(Send),
    Exec(Exec),
    ReadLog(ReadLog),
    Poll(Poll),
    Close(Close),
    Resize(Resize),
    Introspect,
    Hello(Hello),
    /// claws/2: the peers that said `hello` on this server.
    Peers,
    Subscribe(Subscribe),
    Unsubscribe(Unsubscribe),
    Publish(Publish),
    Broadcast(Broadcast),
    DeliverCmd(DeliverCmd),
    CmdAck(CmdAck),
    TaskAssign(TaskAssign),
    TaskUpdate(TaskUpdate),
    TaskComplete(TaskComplete),
    TaskCancel(TaskCancel),
    TaskList(TaskList),
    LifecyclePlan(LifecyclePlan),
    LifecycleAdvance(LifecycleAdvance),
    LifecycleSnapshot,
    LifecycleReflect(LifecycleReflect),
    LifecycleRegisterSpawn(RegisterSpawn),
    LifecycleRegisterMonitor(RegisterMonitor),
    LifecycleMarkWorkerStatus(MarkWorkerStatus),
    MonitorsRegisterIntent(Correlation),
    MonitorsIsCorrArmed(Correlation),
    WaveCreate(WaveCreate),
    WaveStatus(WaveRef),
    WaveComplete(WaveComplete),
    PipelineCreate(PipelineCreate),
    PipelineList,
    PipelineClose(PipelineClose),
    RpcCall(RpcCall),
    SchemaList,
    SchemaGet(SchemaGet),
}

impl Command {
    /// Decode `req` by its `cmd`.
    pub fn parse(req: &Request) -> Result<Command, ParseError> {
        let name = match req.get("cmd") {
            Some(Value::String(s)) => s.as_str(),
            Some(v) => return Err(ParseError::UnknownCmd(v.to_string())),
            None => return Err(ParseError::UnknownCmd("undefined".to_owned())),
        };
        macro_rules! d {
            ($c:ident) => {
                decode(cmd::$c, req)?
            };
        }
        Ok(match name {
            cmd::PING => Command::Ping,
            cmd::LIST => Command::List,
            cmd::CREATE => Command::Create(d!(CREATE)),
            cmd::SHOW => Command::Show(Target::of(req)),
            cmd::SEND => Command::Send(Send {
                target: Target::of(req),
                ..d!(SEND)
            }),
            cmd::EXEC => Command::Exec(Exec {
                target: Target::of(req),
                ..d!(EXEC)
            }),
            cmd::READ_LOG => Command::ReadLog(ReadLog {
                target: Target::of(req),
                ..d!(READ_LOG)
            }),
            cmd::POLL => Command::Poll(d!(POLL)),
            cmd::CLOSE => Command::Close(Close {
                target: Target::of(req),
                ..d!(CLOSE)
            }),
            cmd::RESIZE => Command::Resize(Resize {
                target: Target::of(req),
                ..d!(RESIZE)
            }),
            cmd::INTROSPECT => Command::Introspect,
            cmd::HELLO => Command::Hello(d!(HELLO)),
            cmd::PEERS => Command::Peers,
            cmd::SUBSCRIBE => Command::Subscribe(d!(SUBSCRIBE)),
            cmd::UNSUBSCRIBE => Command::Unsubscribe(d!(UNSUBSCRIBE)),
            cmd::PUBLISH => Command::Publish(d!(PUBLISH)),
            cmd::BROADCAST => Command::Broadcast(d!(BROADCAST)),
            other => return parse_orch(other, req),
        })
    }
}

/// The orchestration commands (command channel, tasks, lifecycle, monitors, waves,
/// pipelines, RPC, schemas).
fn parse_orch(name: &str, req: &Request) -> Result<Command, ParseError> {
    macro_rules! d {
        ($c:ident) => {
            decode(cmd::$c, req)?
        };
    }
    Ok(match name {
        cmd::DELIVER_CMD => Command::DeliverCmd(d!(DELIVER_CMD)),
        cmd::CMD_ACK => Command::CmdAck(d!(CMD_ACK)),
        cmd::TASK_ASSIGN => Command::TaskAssign(d!(TASK_ASSIGN)),
        cmd::TASK_UPDATE => Command::TaskUpdate(d!(TASK_UPDATE)),
        cmd::TASK_COMPLETE => Command::TaskComplete(d!(TASK_COMPLETE)),
        cmd::TASK_CANCEL => Command::TaskCancel(d!(TASK_CANCEL)),
        cmd::TASK_LIST => Command::TaskList(d!(TASK_LIST)),
        cmd::LIFECYCLE_PLAN => Command::LifecyclePlan(d!(LIFECYCLE_PLAN)),
        cmd::LIFECYCLE_ADVANCE => Command::LifecycleAdvance(d!(LIFECYCLE_ADVANCE)),
        cmd::LIFECYCLE_SNAPSHOT => Command::LifecycleSnapshot,
        cmd::LIFECYCLE_REFLECT => Command::LifecycleReflect(d!(LIFECYCLE_REFLECT)),
        cmd::LIFECYCLE_REGISTER_SPAWN => {
            Command::LifecycleRegisterSpawn(d!(LIFECYCLE_REGISTER_SPAWN))
        }
        cmd::LIFECYCLE_REGISTER_MONITOR => {
            Command::LifecycleRegisterMonitor(d!(LIFECYCLE_REGISTER_MONITOR))
        }
        cmd::LIFECYCLE_MARK_WORKER_STATUS => {
            Command::LifecycleMarkWorkerStatus(d!(LIFECYCLE_MARK_WORKER_STATUS))
        }
        cmd::MONITORS_REGISTER_INTENT => {
            Command::MonitorsRegisterIntent(d!(MONITORS_REGISTER_INTENT))
        }
        cmd::MONITORS_IS_CORR_ARMED => Command::MonitorsIsCorrArmed(d!(MONITORS_IS_CORR_ARMED)),
        cmd::WAVE_CREATE => Command::WaveCreate(d!(WAVE_CREATE)),
        cmd::WAVE_STATUS => Command::WaveStatus(d!(WAVE_STATUS)),
        cmd::WAVE_COMPLETE => Command::WaveComplete(d!(WAVE_COMPLETE)),
        cmd::PIPELINE_CREATE => Command::PipelineCreate(d!(PIPELINE_CREATE)),
        cmd::PIPELINE_LIST => Command::PipelineList,
        cmd::PIPELINE_CLOSE => Command::PipelineClose(d!(PIPELINE_CLOSE)),
        cmd::RPC_CALL => Command::RpcCall(d!(RPC_CALL)),
        cmd::SCHEMA_LIST => Command::SchemaList,
        cmd::SCHEMA_GET => Command::SchemaGet(d!(SCHEMA_GET)),
        other => return Err(ParseError::UnknownCmd(other.to_owned())),
    })
}

impl Command {
    /// The `cmd` this request is sent as.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Ping => cmd::PING,
            Command::List => cmd::LIST,
            Command::Create(_) => cmd::CREATE,
            Command::Show(_) => cmd::SHOW,
            Command::Send(_) => cmd::SEND,
            Command::Exec(_) => cmd::EXEC,
            Command::ReadLog(_) => cmd::READ_LOG,
            Command::Poll(_) => cmd::POLL,
            Command::Close(_) => cmd::CLOSE,
            Command::Resize(_) => cmd::RESIZE,
            Command::Introspect => cmd::INTROSPECT,
            Command::Hello(_) => cmd::HELLO,
            Command::Peers => cmd::PEERS,
            Command::Subscribe(_) => cmd::SUBSCRIBE,
            Command::Unsubscribe(_) => cmd::UNSUBSCRIBE,
            Command::Publish(_) => cmd::PUBLISH,
            Command::Broadcast(_) => cmd::BROADCAST,
            Command::DeliverCmd(_) => cmd::DELIVER_CMD,
            Command::CmdAck(_) => cmd::CMD_ACK,
            Command::TaskAssign(_) => cmd::TASK_ASSIGN,
            Command::TaskUpdate(_) => cmd::TASK_UPDATE,
            Command::TaskComplete(_) => cmd::TASK_COMPLETE,
            Command::TaskCancel(_) => cmd::TASK_CANCEL,
            Command::TaskList(_) => cmd::TASK_LIST,
            Command::LifecyclePlan(_) => cmd::LIFECYCLE_PLAN,
            Command::LifecycleAdvance(_) => cmd::LIFECYCLE_ADVANCE,
            Command::LifecycleSnapshot => cmd::LIFECYCLE_SNAPSHOT,
            Command::LifecycleReflect(_) => cmd::LIFECYCLE_REFLECT,
            Command::LifecycleRegisterSpawn(_) => cmd::LIFECYCLE_REGISTER_SPAWN,
            Command::LifecycleRegisterMonitor(_) => cmd::LIFECYCLE_REGISTER_MONITOR,
            Command::LifecycleMarkWorkerStatus(_) => cmd::LIFECYCLE_MARK_WORKER_STATUS,
            Command::MonitorsRegisterIntent(_) => cmd::MONITORS_REGISTER_INTENT,
            Command::MonitorsIsCorrArmed(_) => cmd::MONITORS_IS_CORR_ARMED,
            Command::WaveCreate(_) => cmd::WAVE_CREATE,
            Command::WaveStatus(_) => cmd::WAVE_STATUS,
            Command::WaveComplete(_) => cmd::WAVE_COMPLETE,
            Command::PipelineCreate(_) => cmd::PIPELINE_CREATE,
            Command::PipelineList => cmd::PIPELINE_LIST,
            Command::PipelineClose(_) => cmd::PIPELINE_CLOSE,
            Command::RpcCall(_) => cmd::RPC_CALL,
            Command::SchemaList => cmd::SCHEMA_LIST,
            Command::SchemaGet(_) => cmd::SCHEMA_GET,
        }
    }

    /// Whether this is a claws/2 (bus) command: sent with `protocol: "claws/2"`.
    pub fn is_bus(&self) -> bool {
        !matches!(
            self,
            Command::Ping
                | Command::List
                | Command::Create(_)
                | Command::Show(_)
                | Command::Send(_)
                | Command::Exec(_)
                | Command::ReadLog(_)
                | Command::Poll(_)
                | Command::Close(_)
                | Command::Resize(_)
                | Command::Introspect
        ) && !self.name().starts_with("lifecycle.")
    }

    /// The request object a client sends (without `id` unless the command names a terminal,
    /// whose id then travels as `id`, the way claws/1 clients send it).
    pub fn to_value(&self) -> Value {
        fn obj<T: Serialize>(t: &T) -> serde_json::Map<String, Value> {
            match serde_json::to_value(t) {
                Ok(Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            }
        }
        let (mut m, target) = match self {
            Command::Ping
            | Command::List
            | Command::Introspect
            | Command::Peers
            | Command::LifecycleSnapshot
            | Command::PipelineList
            | Command::SchemaList => (serde_json::Map::new(), None),
            Command::Create(c) => (obj(c), None),
            Command::Show(t) => (serde_json::Map::new(), Some(t)),
            Command::Send(c) => (obj(c), Some(&c.target)),
            Command::Exec(c) => (obj(c), Some(&c.target)),
            Command::ReadLog(c) => (obj(c), Some(&c.target)),
            Command::Poll(c) => (obj(c), None),
            Command::Close(c) => (obj(c), Some(&c.target)),
            Command::Resize(c) => (obj(c), Some(&c.target)),
            Command::Hello(c) => (obj(c), None),
            Command::Subscribe(c) => (obj(c), None),
            Command::Unsubscribe(c) => (obj(c), None),
            Command::Publish(c) => (obj(c), None),
            Command::Broadcast(c) => (obj(c), None),
            Command::DeliverCmd(c) => (obj(c), None),
            Command::CmdAck(c) => (obj(c), None),
            Command::TaskAssign(c) => (obj(c), None),
            Command::TaskUpdate(c) => (obj(c), None),
            Command::TaskComplete(c) => (obj(c), None),
            Command::TaskCancel(c) => (obj(c), None),
            Command::TaskList(c) => (obj(c), None),
            Command::LifecyclePlan(c) => (obj(c), None),
            Command::LifecycleAdvance(c) => (obj(c), None),
            Command::LifecycleReflect(c) => (obj(c), None),
            Command::LifecycleRegisterSpawn(c) => (obj(c), None),
            Command::LifecycleRegisterMonitor(c) => (obj(c), None),
            Command::LifecycleMarkWorkerStatus(c) => (obj(c), None),
            Command::MonitorsRegisterIntent(c) => (obj(c), None),
            Command::MonitorsIsCorrArmed(c) => (obj(c), None),
            Command::WaveCreate(c) => (obj(c), None),
            Command::WaveStatus(c) => (obj(c), None),
            Command::WaveComplete(c) => (obj(c), None),
            Command::PipelineCreate(c) => (obj(c), None),
            Command::PipelineClose(c) => (obj(c), None),
            Command::RpcCall(c) => (obj(c), None),
            Command::SchemaGet(c) => (obj(c), None),
        };
        m.insert("cmd".into(), Value::from(self.name()));
        if let Some(Target(Some(id))) = target {
            m.insert("id".into(), Value::from(id.as_str()));
        }
        if self.is_bus() && !m.contains_key("protocol") {
            m.insert("protocol".into(), Value::from(super::PROTOCOL_2));
        }
        Value::Object(m)
    }
}

/// Decode the request object into `T`. Leniency is per field (each field reads a value of
/// the wrong type as absent), so a field that stops being lenient fails its command by name
/// instead of blanking every other field.
fn decode<T: for<'de> Deserialize<'de>>(cmd: &'static str, req: &Request) -> Result<T, ParseError> {
    T::deserialize(req.value()).map_err(|e| ParseError::Invalid {
        cmd,
        reason: e.to_string(),
    })
}

/// The terminal a request names: `terminalId`, else `id` (the extension accepted both), as
/// the client spelled it (a string or a number).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Target(pub Option<String>);

impl Target {
    /// The terminal with this id.
    pub fn id(id: impl Into<String>) -> Target {
        Target(Some(id.into()))
    }
}

/// Why a terminal was closed, as `system.terminal.closed` announces it (`close_origin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseOrigin {
    /// A client's `close` that gave no origin.
    Client,
    /// The orchestrator closed it (a `close` on its behalf, `wave.complete`).
    Orchestrator,
    /// The worker printed its completion marker.
    Marker,
    /// The worker failed.
    Error,
    /// The worker did not finish in time.
    Timeout,
    /// A wave's rules were broken by the worker.
    WaveViolation,
    /// The lifecycle's maximum lifetime passed.
    TtlMax,
    /// The worker was idle past the lifecycle's limit.
    IdleTimeout,
    /// The server stopped.
    Shutdown,
}

impl CloseOrigin {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseOrigin::Client => "client",
            CloseOrigin::Orchestrator => "orchestrator",
            CloseOrigin::Marker => "marker",
            CloseOrigin::Error => "error",
            CloseOrigin::Timeout => "timeout",
            CloseOrigin::WaveViolation => "wave_violation",
            CloseOrigin::TtlMax => "ttl_max",
            CloseOrigin::IdleTimeout => "idle_timeout",
            CloseOrigin::Shutdown => "shutdown",
        }
    }
}

/// `close`: the terminal, and why (announced in `system.terminal.closed`; `client` when
/// absent or not one of [`CloseOrigin`]'s spellings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Close {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "origin", skip_serializing_if = "Option::is_none")]
    pub close_origin: Option<CloseOrigin>,
}

fn origin<'de, D: Deserializer<'de>>(d: D) -> Result<Option<CloseOrigin>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

impl Target {
    fn of(req: &Request) -> Target {
        let v = req.get("terminalId").or_else(|| req.get("id"));
        Target(match v {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Create {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(deserialize_with = "boolean", skip_serializing_if = "Option::is_none")]
    pub wrapped: Option<bool>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub shell_path: Option<String>,
    /// Checked by the handler: an object of strings (numbers and booleans are written out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Value>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub cols: Option<u64>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(deserialize_with = "boolean", skip_serializing_if = "Option::is_none")]
    pub opost: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Send {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(deserialize_with = "boolean", skip_serializing_if = "Option::is_none")]
    pub newline: Option<bool>,
    #[serde(deserialize_with = "boolean", skip_serializing_if = "Option::is_none")]
    pub paste: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Exec {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ReadLog {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(deserialize_with = "boolean", skip_serializing_if = "Option::is_none")]
    pub strip: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Poll {
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Resize {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub cols: Option<u64>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Hello {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(deserialize_with = "role", skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub peer_name: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub instance_nonce: Option<String>,
    /// Echoed as given in `system.peer.connected`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<Value>,
    /// Echoed as given in `system.peer.connected`; the peer's terminal (broadcast `inject`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal_id: Option<Value>,
    #[serde(deserialize_with = "strings", skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub wave_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub sub_worker_role: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub monitor_correlation_id: Option<String>,
    /// HMAC auth (`[claws.auth]`): hex token, single-use nonce, client clock in ms.
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Subscribe {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// Checked by the bus: absent or null, else a cursor string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_cursor: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Unsubscribe {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Publish {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[serde(deserialize_with = "boolean", skip_serializing_if = "Option::is_none")]
    pub echo: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Broadcast {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub target_role: Option<String>,
    #[serde(deserialize_with = "boolean", skip_serializing_if = "Option::is_none")]
    pub inject: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orchestration_commands_parse() {
        let Ok(Command::DeliverCmd(d)) = parse(
            r#"{"cmd":"deliver-cmd","targetPeerId":"p_1","cmdTopic":"cmd.p_1.x","idempotencyKey":"k","payload":{"a":1}}"#,
        ) else {
            panic!("not a deliver-cmd")
        };
        assert_eq!(d.target_peer_id.as_deref(), Some("p_1"));
        assert_eq!(d.payload, Some(serde_json::json!({"a":1})));
        let Ok(Command::CmdAck(a)) =
            parse(r#"{"cmd":"cmd.ack","seq":"3","status":"executed","correlation_id":"c"}"#)
        else {
            panic!("not a cmd.ack")
        };
        assert_eq!((a.seq, a.correlation_id.as_deref()), (Some(3), Some("c")));
        let Ok(Command::LifecycleRegisterSpawn(r)) = parse(
            r#"{"cmd":"lifecycle.register-spawn","terminalId":7,"correlationId":"c","name":"w"}"#,
        ) else {
            panic!("not a register-spawn")
        };
        assert_eq!(r.terminal_id.as_deref(), Some("7"));
    }

    fn parse(line: &str) -> Result<Command, ParseError> {
        Command::parse(&Request::parse(line.as_bytes()).expect("json object"))
    }

    fn round_trip(c: &Command) -> Command {
        let line = serde_json::to_vec(&c.to_value()).unwrap();
        Command::parse(&Request::parse(&line).unwrap()).unwrap()
    }

    /// Every command a client can build is the one the server decodes: names and fields.
    #[test]
    fn every_command_survives_the_wire_both_ways() {
        let all = vec![
            Command::Ping,
            Command::List,
            Command::Create(Create {
                name: Some("b".into()),
                wrapped: Some(true),
                ..Default::default()
            }),
            Command::Show(Target::id("3")),
            Command::Send(Send {
                target: Target::id("3"),
                text: Some("ls".into()),
                newline: Some(false),
                ..Default::default()
            }),
            Command::Exec(Exec {
                target: Target::id("3"),
                command: Some("true".into()),
                timeout_ms: Some(5),
            }),
            Command::ReadLog(ReadLog {
                target: Target::id("3"),
                strip: Some(true),
                ..Default::default()
            }),
            Command::Poll(Poll {
                since: Some(2),
                limit: None,
            }),
            Command::Close(Close {
                target: Target::id("3"),
                close_origin: Some(CloseOrigin::Marker),
            }),
            Command::Resize(Resize {
                target: Target::id("3"),
                cols: Some(100),
                rows: Some(30),
            }),
            Command::Introspect,
            Command::Hello(Hello {
                protocol: Some("claws/2".into()),
                role: Some("worker".into()),
                peer_name: Some("w".into()),
                ..Default::default()
            }),
            Command::Peers,
            Command::Subscribe(Subscribe {
                topic: Some("a.**".into()),
                from_cursor: None,
            }),
            Command::Unsubscribe(Unsubscribe {
                subscription_id: Some("s1".into()),
            }),
            Command::Publish(Publish {
                topic: Some("t".into()),
                payload: Some(serde_json::json!({"x": 1})),
                echo: None,
            }),
            Command::Broadcast(Broadcast {
                text: Some("hi".into()),
                ..Default::default()
            }),
            Command::DeliverCmd(DeliverCmd {
                cmd_topic: Some("cmd.p.x".into()),
                ..Default::default()
            }),
            Command::CmdAck(CmdAck {
                seq: Some(1),
                correlation_id: Some("c".into()),
                ..Default::default()
            }),
            Command::TaskAssign(TaskAssign {
                title: Some("t".into()),
                ..Default::default()
            }),
            Command::TaskUpdate(TaskUpdate {
                task_id: Some("t1".into()),
                ..Default::default()
            }),
            Command::TaskComplete(TaskComplete {
                task_id: Some("t1".into()),
                ..Default::default()
            }),
            Command::TaskCancel(TaskCancel {
                task_id: Some("t1".into()),
                ..Default::default()
            }),
            Command::TaskList(TaskList::default()),
            Command::LifecyclePlan(LifecyclePlan {
                plan: Some("p".into()),
                ..Default::default()
            }),
            Command::LifecycleAdvance(LifecycleAdvance {
                to: Some("SPAWN".into()),
                ..Default::default()
            }),
            Command::LifecycleSnapshot,
            Command::LifecycleReflect(LifecycleReflect::default()),
            Command::LifecycleRegisterSpawn(RegisterSpawn {
                terminal_id: Some("7".into()),
                ..Default::default()
            }),
            Command::LifecycleRegisterMonitor(RegisterMonitor::default()),
            Command::LifecycleMarkWorkerStatus(MarkWorkerStatus {
                terminal_id: Some("7".into()),
                status: Some("closed".into()),
            }),
            Command::MonitorsRegisterIntent(Correlation::default()),
            Command::MonitorsIsCorrArmed(Correlation::default()),
            Command::WaveCreate(WaveCreate::default()),
            Command::WaveStatus(WaveRef::default()),
            Command::WaveComplete(WaveComplete::default()),
            Command::PipelineCreate(PipelineCreate::default()),
            Command::PipelineList,
            Command::PipelineClose(PipelineClose::default()),
            Command::RpcCall(RpcCall::default()),
            Command::SchemaList,
            Command::SchemaGet(SchemaGet::default()),
        ];
        for c in &all {
            assert_eq!(&round_trip(c), c, "{}", c.name());
        }
        // Every command is spelled once, and the table names each of them.
        let names: Vec<&str> = all.iter().map(Command::name).collect();
        assert_eq!(names, cmd::ALL);
    }

    #[test]
    fn roles_keep_their_spelling_and_any_other_string() {
        let Ok(Command::Hello(h)) = parse(r#"{"cmd":"hello","role":"orchestrator"}"#) else {
            panic!("not a hello")
        };
        assert_eq!(h.role, Some(Role::Orchestrator));
        let Ok(Command::Hello(h)) = parse(r#"{"cmd":"hello","role":"reviewer","peerName":"r"}"#)
        else {
            panic!("not a hello")
        };
        assert_eq!(h.role, Some(Role::Other("reviewer".into())));
        assert_eq!(Command::Hello(h).to_value()["role"], "reviewer");
        let Ok(Command::Hello(h)) = parse(r#"{"cmd":"hello","role":7,"peerName":"r"}"#) else {
            panic!("not a hello")
        };
        assert_eq!((h.role, h.peer_name.as_deref()), (None, Some("r")));
    }

    #[test]
    fn close_carries_its_origin_and_an_unknown_origin_reads_as_absent() {
        let Ok(Command::Close(c)) = parse(r#"{"cmd":"close","id":"4","close_origin":"timeout"}"#)
        else {
            panic!("not a close")
        };
        assert_eq!(
            (c.target, c.close_origin),
            (Target::id("4"), Some(CloseOrigin::Timeout))
        );
        let Ok(Command::Close(c)) = parse(r#"{"cmd":"close","id":4,"close_origin":"nonsense"}"#)
        else {
            panic!("not a close")
        };
        assert_eq!(c.close_origin, None);
        assert_eq!(
            serde_json::to_value(CloseOrigin::WaveViolation).unwrap(),
            CloseOrigin::WaveViolation.as_str()
        );
    }

    #[test]
    fn bus_commands_say_claws_2_and_terminal_commands_do_not() {
        assert_eq!(Command::Peers.to_value()["protocol"], "claws/2");
        assert!(Command::List.to_value().get("protocol").is_none());
        let send = Command::Send(Send {
            target: Target::id("9"),
            ..Default::default()
        })
        .to_value();
        assert_eq!(
            (send["cmd"].as_str(), send["id"].as_str()),
            (Some("send"), Some("9"))
        );
    }

    #[test]
    fn unknown_and_missing_commands_are_named() {
        let text = |l: &str| parse(l).unwrap_err().to_string();
        assert_eq!(text(r#"{"cmd":"nope"}"#), "unknown cmd: nope");
        assert_eq!(text(r#"{"cmd":5}"#), "unknown cmd: 5");
        assert_eq!(text(r#"{"id":1}"#), "unknown cmd: undefined");
        assert_eq!(
            parse(r#"{"cmd":"nope"}"#).unwrap_err().code(),
            ErrorCode::UnknownCmd
        );
    }

    #[test]
    fn wrong_types_read_as_absent_and_numbers_may_be_strings() {
        let Ok(Command::ReadLog(r)) =
            parse(r#"{"cmd":"readLog","id":"3","limit":"64","offset":-1,"strip":"yes"}"#)
        else {
            panic!("not a readLog")
        };
        assert_eq!(r.target.0.as_deref(), Some("3"));
        assert_eq!(r.limit, Some(64));
        assert_eq!(r.offset, None);
        assert_eq!(r.strip, None);
    }

    #[test]
    fn terminal_id_wins_over_the_envelope_id() {
        let Ok(Command::Send(s)) = parse(r#"{"cmd":"send","id":9,"terminalId":4,"text":7}"#) else {
            panic!("not a send")
        };
        assert_eq!(s.target.0.as_deref(), Some("4"));
        assert_eq!(s.text, None);
    }
}
