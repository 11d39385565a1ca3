//! The claws/1 envelope. Framing: one JSON object per line both ways; a line past
//! [`MAX_LINE`] without a newline gets `request too large` and the connection is dropped;
//! an unparseable line gets `bad json` (no id) and the connection stays. The request's last
//! `id` is echoed as `id` (which a body field such as `create`'s terminal id may replace, as
//! the editor extension did) and as `rid` (never replaced). Both are omitted when the request
//! had no `id`. Every answer says `protocol: "claws/1"`, except `hello`'s (`claws/2`).

use serde_json::{Map, Value};

/// Largest unprocessed request line.
pub const MAX_LINE: usize = 1 << 20;
pub const PROTOCOL: &str = "claws/1";
pub const PROTOCOL_2: &str = "claws/2";

/// A parsed request (duplicate keys: the last one wins, as in JavaScript).
pub struct Request {
    pub map: Map<String, Value>,
}

impl Request {
    pub fn parse(line: &[u8]) -> Option<Request> {
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(map)) => Some(Request { map }),
            _ => None,
        }
    }

    pub fn id(&self) -> Option<&Value> {
        self.map.get("id")
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.map.get(key).and_then(Value::as_str)
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        self.map.get(key).and_then(Value::as_bool)
    }

    pub fn u64(&self, key: &str) -> Option<u64> {
        match self.map.get(key)? {
            Value::Number(n) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// `protocol` check: absent, `claws/1` or `claws/2` pass.
    pub fn protocol_error(&self) -> Option<String> {
        match self.map.get("protocol") {
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

/// One answer line (with its newline).
pub fn answer(
    id: Option<&Value>,
    protocol: &str,
    body: Result<Map<String, Value>, String>,
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
            m.insert("error".into(), Value::String(e));
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
}
