//! Typed Claws requests: one struct per command, decoded from the request object after the
//! envelope ([`super::proto::Request`]: `id`, `protocol`, `clientVersion`) is checked.
//!
//! Decoding is lenient the way the editor extension's JavaScript is: a field of the wrong
//! type reads as absent (so its default applies), numbers may come as strings, unknown
//! fields are ignored. Only the command name can fail: `unknown cmd: <name>` (a non-string
//! `cmd` is named by its JSON). Handlers validate the values that have rules of their own
//! (`env` must be an object of strings, a cursor must parse) with the errors the notes fix.
//! [`Command::parse`] is the one exhaustive mapping from names to types; the dispatch in
//! `commands.rs` is the one exhaustive `match` over [`Command`].

mod orch;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::Request;
pub use orch::*;

/// A decoded request.
#[derive(Debug)]
pub enum Command {
    Ping,
    List,
    Create(Create),
    Show(Target),
    Send(Send),
    Exec(Exec),
    ReadLog(ReadLog),
    Poll(Poll),
    Close(Target),
    Resize(Resize),
    Introspect,
    Hello(Hello),
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
    pub fn parse(req: &Request) -> Result<Command, String> {
        let name = match req.get("cmd") {
            Some(Value::String(s)) => s.as_str(),
            Some(v) => return Err(format!("unknown cmd: {v}")),
            None => return Err("unknown cmd: undefined".to_owned()),
        };
        Ok(match name {
            "ping" => Command::Ping,
            "list" => Command::List,
            "create" => Command::Create(decode(req)),
            "show" => Command::Show(Target::of(req)),
            "send" => Command::Send(Send {
                target: Target::of(req),
                ..decode(req)
            }),
            "exec" => Command::Exec(Exec {
                target: Target::of(req),
                ..decode(req)
            }),
            "readLog" => Command::ReadLog(ReadLog {
                target: Target::of(req),
                ..decode(req)
            }),
            "poll" => Command::Poll(decode(req)),
            "close" => Command::Close(Target::of(req)),
            "resize" => Command::Resize(Resize {
                target: Target::of(req),
                ..decode(req)
            }),
            "introspect" => Command::Introspect,
            "hello" => Command::Hello(decode(req)),
            "subscribe" => Command::Subscribe(decode(req)),
            "unsubscribe" => Command::Unsubscribe(decode(req)),
            "publish" => Command::Publish(decode(req)),
            "broadcast" => Command::Broadcast(decode(req)),
            "deliver-cmd" => Command::DeliverCmd(decode(req)),
            "cmd.ack" => Command::CmdAck(decode(req)),
            "task.assign" => Command::TaskAssign(decode(req)),
            "task.update" => Command::TaskUpdate(decode(req)),
            "task.complete" => Command::TaskComplete(decode(req)),
            "task.cancel" => Command::TaskCancel(decode(req)),
            "task.list" => Command::TaskList(decode(req)),
            "lifecycle.plan" => Command::LifecyclePlan(decode(req)),
            "lifecycle.advance" => Command::LifecycleAdvance(decode(req)),
            "lifecycle.snapshot" => Command::LifecycleSnapshot,
            "lifecycle.reflect" => Command::LifecycleReflect(decode(req)),
            "lifecycle.register-spawn" => Command::LifecycleRegisterSpawn(decode(req)),
            "lifecycle.register-monitor" => Command::LifecycleRegisterMonitor(decode(req)),
            "lifecycle.mark-worker-status" => Command::LifecycleMarkWorkerStatus(decode(req)),
            "monitors.register-intent" => Command::MonitorsRegisterIntent(decode(req)),
            "monitors.is-corr-armed" => Command::MonitorsIsCorrArmed(decode(req)),
            "wave.create" => Command::WaveCreate(decode(req)),
            "wave.status" => Command::WaveStatus(decode(req)),
            "wave.complete" => Command::WaveComplete(decode(req)),
            "pipeline.create" => Command::PipelineCreate(decode(req)),
            "pipeline.list" => Command::PipelineList,
            "pipeline.close" => Command::PipelineClose(decode(req)),
            "rpc.call" => Command::RpcCall(decode(req)),
            "schema.list" => Command::SchemaList,
            "schema.get" => Command::SchemaGet(decode(req)),
            other => return Err(format!("unknown cmd: {other}")),
        })
    }
}

/// Decode the request object into `T`. Every field of every request type is lenient and
/// defaulted, so this cannot fail; the fallback keeps it total all the same.
fn decode<T: for<'de> Deserialize<'de> + Default>(req: &Request) -> T {
    T::deserialize(req.value()).unwrap_or_default()
}

/// The terminal a request names: `terminalId`, else `id` (the extension accepted both), as
/// the client spelled it (a string or a number).
#[derive(Debug, Clone, Default)]
pub struct Target(pub Option<String>);

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

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Create {
    #[serde(deserialize_with = "string")]
    pub name: Option<String>,
    #[serde(deserialize_with = "string")]
    pub cwd: Option<String>,
    #[serde(deserialize_with = "boolean")]
    pub wrapped: Option<bool>,
    #[serde(deserialize_with = "string")]
    pub shell_path: Option<String>,
    /// Checked by the handler: an object of strings (numbers and booleans are written out).
    pub env: Option<Value>,
    #[serde(deserialize_with = "number")]
    pub cols: Option<u64>,
    #[serde(deserialize_with = "number")]
    pub rows: Option<u64>,
    #[serde(deserialize_with = "string")]
    pub correlation_id: Option<String>,
    #[serde(deserialize_with = "boolean")]
    pub opost: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Send {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "string")]
    pub text: Option<String>,
    #[serde(deserialize_with = "boolean")]
    pub newline: Option<bool>,
    #[serde(deserialize_with = "boolean")]
    pub paste: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Exec {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "string")]
    pub command: Option<String>,
    #[serde(deserialize_with = "number")]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ReadLog {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "number")]
    pub offset: Option<u64>,
    #[serde(deserialize_with = "number")]
    pub limit: Option<u64>,
    #[serde(deserialize_with = "boolean")]
    pub strip: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Poll {
    #[serde(deserialize_with = "number")]
    pub since: Option<u64>,
    #[serde(deserialize_with = "number")]
    pub limit: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Resize {
    #[serde(skip)]
    pub target: Target,
    #[serde(deserialize_with = "number")]
    pub cols: Option<u64>,
    #[serde(deserialize_with = "number")]
    pub rows: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Hello {
    #[serde(deserialize_with = "string")]
    pub protocol: Option<String>,
    #[serde(deserialize_with = "string")]
    pub role: Option<String>,
    #[serde(deserialize_with = "string")]
    pub peer_name: Option<String>,
    #[serde(deserialize_with = "string")]
    pub instance_nonce: Option<String>,
    /// Echoed as given in `system.peer.connected`.
    pub correlation_id: Option<Value>,
    /// Echoed as given in `system.peer.connected`; the peer's terminal (broadcast `inject`).
    pub terminal_id: Option<Value>,
    #[serde(deserialize_with = "strings")]
    pub capabilities: Option<Vec<String>>,
    #[serde(deserialize_with = "string")]
    pub wave_id: Option<String>,
    #[serde(deserialize_with = "string")]
    pub sub_worker_role: Option<String>,
    #[serde(deserialize_with = "string")]
    pub monitor_correlation_id: Option<String>,
    /// HMAC auth (`[claws.auth]`): hex token, single-use nonce, client clock in ms.
    #[serde(deserialize_with = "string")]
    pub token: Option<String>,
    #[serde(deserialize_with = "string")]
    pub nonce: Option<String>,
    #[serde(deserialize_with = "number")]
    pub timestamp: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Subscribe {
    #[serde(deserialize_with = "string")]
    pub topic: Option<String>,
    /// Checked by the bus: absent or null, else a cursor string.
    pub from_cursor: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Unsubscribe {
    #[serde(deserialize_with = "string")]
    pub subscription_id: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Publish {
    #[serde(deserialize_with = "string")]
    pub topic: Option<String>,
    pub payload: Option<Value>,
    #[serde(deserialize_with = "boolean")]
    pub echo: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Broadcast {
    #[serde(deserialize_with = "string")]
    pub text: Option<String>,
    #[serde(deserialize_with = "string")]
    pub target_role: Option<String>,
    #[serde(deserialize_with = "boolean")]
    pub inject: Option<bool>,
}

/// An array of strings (other items skipped), else absent.
fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(a) => Some(
            a.into_iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}

/// A string, or a number written out, else absent (terminal ids).
fn id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// A string, else absent.
fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// A boolean, else absent.
fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(d)?.as_bool())
}

/// A non-negative number (fractions truncated) or a string holding one, else absent.
fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
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

    fn parse(line: &str) -> Result<Command, String> {
        Command::parse(&Request::parse(line.as_bytes()).expect("json object"))
    }

    #[test]
    fn unknown_and_missing_commands_are_named() {
        assert_eq!(parse(r#"{"cmd":"nope"}"#).unwrap_err(), "unknown cmd: nope");
        assert_eq!(parse(r#"{"cmd":5}"#).unwrap_err(), "unknown cmd: 5");
        assert_eq!(parse(r#"{"id":1}"#).unwrap_err(), "unknown cmd: undefined");
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
