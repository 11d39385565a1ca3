//! The `openfiles/1` envelope: decoding a request line (the id to echo, the command or why it
//! failed), encoding a request, the success and error replies, and a reply as a client sees it.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Request, PROTOCOL};

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
    let cmd = match map.remove("cmd") {
        Some(Value::String(c)) => c,
        Some(_) | None => return Err(DecodeError::MissingCmd),
    };
    Request::from_parts(&cmd, map)
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
    use crate::control::{Edited, PathArg};

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
