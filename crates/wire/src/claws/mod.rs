//! The Claws protocol as both sides speak it: the claws/1 envelope, the claws/2 bus constants,
//! and the typed requests ([`request`]).
//!
//! The claws/1 envelope. Framing: one JSON object per line both ways; a line past
//! [`MAX_LINE`] without a newline gets `request too large` and the connection is dropped;
//! an unparseable line gets `bad json` (no id) and the connection stays. The request's last
//! `id` is echoed as `id` (which a body field such as `create`'s terminal id may replace, as
//! the editor extension did) and as `rid` (never replaced). Both are omitted when the request
//! had no `id`. Every answer says `protocol: "claws/1"`, except `hello`'s (`claws/2`).
//! A request's `clientVersion` is compared with [`COMPATIBLE_EXTENSION_VERSION`] by the server
//! ([`minor_behind`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub mod auth;
pub mod kinds;
pub mod request;

pub use kinds::{Phase, RefusalKind};

/// Largest unprocessed request line.
pub use crate::line::MAX_LINE;
/// The protocol of every answer but `hello`'s.
pub const PROTOCOL: &str = "claws/1";
/// The bus protocol: `hello`'s answer and every push frame. The one place it is spelled.
pub const PROTOCOL_2: &str = "claws/2";

/// The Claws editor-extension release whose protocol this server speaks, and what
/// `introspect` reports as `extensionVersion`. Clients (claws-mcp, the Python client) send
/// their own release in `clientVersion`, and the spec asks for a one-shot warning when a
/// client is a minor release or more behind the server's: such a client was written against
/// an older protocol text. Our contract (shared/spec/claws-protocol.md) is the extension's
/// 0.5 line — its example says `extensionVersion: "0.5.0"` and WebSocket is "planned, v0.6"
/// — so that is the version we claim. Raise it when the spec we implement moves on.
pub const COMPATIBLE_EXTENSION_VERSION: &str = "0.5.0";

/// `major.minor.patch` of a SemVer string (a leading `v`, pre-release and build suffixes
/// allowed); `None` when it is not one.
pub fn semver(s: &str) -> Option<(u64, u64, u64)> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let core = s.split(['-', '+']).next()?;
    let mut it = core.split('.').map(|p| {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            None
        } else {
            p.parse::<u64>().ok()
        }
    });
    let v = (it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(v)
}

/// Whether `client` is at least one minor release behind `ours` (an older major counts).
/// `None` when either is not SemVer.
pub fn minor_behind(client: &str, ours: &str) -> Option<bool> {
    let (c, o) = (semver(client)?, semver(ours)?);
    Some((c.0, c.1) < (o.0, o.1))
}

/// A parsed request envelope (duplicate keys: the last one wins, as in JavaScript). The
/// command and its arguments are decoded from it by `request::Command::parse`.
pub struct Request {
    /// Always a JSON object.
    value: Value,
}

impl Request {
    pub fn parse(line: &[u8]) -> Option<Request> {
        Request::from_value(serde_json::from_slice::<Value>(line).ok()?)
    }

    /// The envelope of a request object (`None` for anything but an object).
    pub fn from_value(value: Value) -> Option<Request> {
        matches!(value, Value::Object(_)).then_some(Request { value })
    }

    /// The request as a JSON value (an object).
    pub fn value(&self) -> &Value {
        &self.value
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.value.get(key)
    }

    pub fn id(&self) -> Option<&Value> {
        self.get("id")
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// `protocol` check: absent, `claws/1` or `claws/2` pass.
    pub fn protocol_error(&self) -> Option<String> {
        match self.get("protocol") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s == PROTOCOL || s == PROTOCOL_2 => None,
            Some(Value::String(s)) => Some(incompatible(s)),
            Some(v) => Some(incompatible(&v.to_string())),
        }
    }
}

fn incompatible(client: &str) -> String {
    format!("incompatible protocol version (server: {PROTOCOL}, client: {client})")
}

/// The codes of the errors clients act on, sent as `code` beside `error` (an additive field:
/// a client that reads only `error` sees what it always saw).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// The server does not know the command (`unknown cmd: …`): an older server.
    UnknownCmd,
    /// A field of the command is not one the server can read (`invalid … request: …`).
    InvalidRequest,
    /// `exec` did not see its command finish in time (`exec timeout after …ms`).
    ExecTimeout,
}

impl ErrorCode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::UnknownCmd => "unknown-cmd",
            ErrorCode::InvalidRequest => "invalid-request",
            ErrorCode::ExecTimeout => "exec-timeout",
        }
    }
}

/// An error answer: the text the spec fixes (`error`) and, for the errors clients act on,
/// their [`ErrorCode`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub message: String,
    pub code: Option<ErrorCode>,
}

impl Failure {
    /// An error clients recognise by `code`.
    pub fn coded(code: ErrorCode, message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            code: Some(code),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure {
            message,
            code: None,
        }
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Failure {
        Failure::from(message.to_owned())
    }
}

impl From<request::ParseError> for Failure {
    fn from(e: request::ParseError) -> Failure {
        Failure::coded(e.code(), e.to_string())
    }
}

/// The `code` of an error answer, when the server sent one it knows.
pub fn error_code(answer: &Value) -> Option<ErrorCode> {
    serde_json::from_value(answer.get("code")?.clone()).ok()
}

/// A peer's role (`hello`'s `role`): the three the extension names, or any other string,
/// kept as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Role {
    Orchestrator,
    Worker,
    /// A `hello` without a role.
    #[default]
    Observer,
    Other(String),
}

impl Role {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Role::Orchestrator => "orchestrator",
            Role::Worker => "worker",
            Role::Observer => "observer",
            Role::Other(s) => s,
        }
    }
}

impl From<&str> for Role {
    fn from(s: &str) -> Role {
        match s {
            "orchestrator" => Role::Orchestrator,
            "worker" => Role::Worker,
            "observer" => Role::Observer,
            other => Role::Other(other.to_owned()),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Role, D::Error> {
        Ok(Role::from(String::deserialize(d)?.as_str()))
    }
}

/// One answer line (with its newline).
pub fn answer(
    id: Option<&Value>,
    protocol: &str,
    body: Result<Map<String, Value>, Failure>,
) -> String {
    let mut m = Map::new();
    if let Some(id) = id {
        m.insert("id".into(), id.clone());
    }
    match body {
        Ok(b) => {
            m.insert("ok".into(), Value::Bool(true));
            for (k, v) in b {
                m.insert(k, v);
            }
        }
        Err(e) => {
            m.insert("ok".into(), Value::Bool(false));
            m.insert("error".into(), Value::String(e.message));
            if let Some(code) = e.code {
                m.insert("code".into(), Value::from(code.as_str()));
            }
        }
    }
    if let Some(id) = id {
        m.insert("rid".into(), id.clone());
    }
    m.insert("protocol".into(), Value::String(protocol.into()));
    let mut s = Value::Object(m).to_string();
    s.push('\n');
    s
}

pub fn bad_json() -> String {
    answer(None, PROTOCOL, Err("bad json".into()))
}

pub fn too_large() -> String {
    answer(None, PROTOCOL, Err("request too large".into()))
}

/// Build a body map from a `json!({...})` object.
pub fn body(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_id_wins_and_rid_is_never_shadowed() {
        let r = Request::parse(br#"{"id":7,"cmd":"send","id":"1"}"#).unwrap();
        assert_eq!(r.id(), Some(&Value::String("1".into())));
        let a = answer(
            Some(&Value::from(3)),
            PROTOCOL,
            Ok(body(serde_json::json!({"id":"5","rid":9}))),
        );
        let v: Value = serde_json::from_str(&a).unwrap();
        assert_eq!(v["id"], "5");
        assert_eq!(v["rid"], 3);
    }

    #[test]
    fn an_error_code_is_a_field_beside_the_error() {
        let a = answer(
            Some(&Value::from(1)),
            PROTOCOL,
            Err(Failure::coded(
                ErrorCode::ExecTimeout,
                "exec timeout after 5ms",
            )),
        );
        assert_eq!(
            a,
            "{\"id\":1,\"ok\":false,\"error\":\"exec timeout after 5ms\",\"code\":\"exec-timeout\",\"rid\":1,\"protocol\":\"claws/1\"}\n"
        );
        let v: Value = serde_json::from_str(&a).unwrap();
        assert_eq!(error_code(&v), Some(ErrorCode::ExecTimeout));
        // An error without a code is what it always was.
        assert_eq!(
            answer(None, PROTOCOL, Err("bad json".into())),
            "{\"ok\":false,\"error\":\"bad json\",\"protocol\":\"claws/1\"}\n"
        );
        assert_eq!(
            error_code(&serde_json::json!({"ok": false, "error": "x"})),
            None
        );
        for c in [
            ErrorCode::UnknownCmd,
            ErrorCode::InvalidRequest,
            ErrorCode::ExecTimeout,
        ] {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
    }

    #[test]
    fn semver_parsing() {
        assert_eq!(semver("0.5.0"), Some((0, 5, 0)));
        assert_eq!(semver("v1.2.3-beta.1+build.7"), Some((1, 2, 3)));
        assert_eq!(semver(" 10.20.30 "), Some((10, 20, 30)));
        for bad in [
            "", "1", "1.2", "1.2.3.4", "a.b.c", "1..3", "1.2.x", "-1.2.3", "1.+2.3",
        ] {
            assert_eq!(semver(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn minor_release_behind() {
        let ours = "0.5.0";
        assert_eq!(minor_behind("0.4.9", ours), Some(true));
        assert_eq!(minor_behind("0.3.0", ours), Some(true));
        assert_eq!(minor_behind("0.5.0", ours), Some(false));
        assert_eq!(minor_behind("0.5.7", ours), Some(false));
        assert_eq!(minor_behind("0.6.0", ours), Some(false));
        assert_eq!(minor_behind("1.0.0", ours), Some(false));
        assert_eq!(minor_behind("1.9.0", "2.0.0"), Some(true));
        assert_eq!(minor_behind("2.0.0-rc.1", "2.1.0"), Some(true));
        assert_eq!(minor_behind("junk", ours), None);
    }
}
