//! Peer identity rules: the optional HMAC token on `hello` (`[claws.auth]`), who may publish
//! where (event-protocol §10), and the universal event envelope the server stamps.
//!
//! Auth: token = hex HMAC-SHA256(secret, "<peerName>:<role>:<nonce>:<timestamp>"), the secret
//! being the trimmed contents of `token_path` (read on every `hello`, so rotating it needs no
//! restart). A missing field is `auth:required`; a timestamp in the future or older than five
//! minutes, a nonce seen before, an unreadable secret or a wrong token are `auth:invalid`.
//! Used nonces are remembered for the five-minute window only (a replay past it fails the
//! timestamp check), so the set stays bounded.

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::config::ClawsAuthConfig;
use openfiles_wire::claws::auth::{hello_message, hex, hmac_sha256};
use openfiles_wire::claws::request::Hello;

/// Token age past which a `hello` is refused.
pub const MAX_TOKEN_AGE_MS: u64 = 5 * 60 * 1000;
/// Bound on remembered nonces (more within five minutes are refused as `auth:invalid`).
const MAX_NONCES: usize = 100_000;

pub struct Auth {
    enabled: bool,
    token_path: PathBuf,
    used: Mutex<Nonces>,
}

#[derive(Default)]
struct Nonces {
    set: HashSet<String>,
    order: VecDeque<(Instant, String)>,
}

impl Auth {
    pub fn new(root: &Path, cfg: &ClawsAuthConfig) -> Auth {
        Auth {
            enabled: cfg.enabled,
            token_path: root.join(&cfg.token_path),
            used: Mutex::new(Nonces::default()),
        }
    }

    /// Check a `hello`'s token; the extension's error string when refused.
    pub fn check(&self, h: &Hello, now_ms: u64) -> Result<(), &'static str> {
        if !self.enabled {
            return Ok(());
        }
        let (Some(token), Some(nonce), Some(ts)) = (&h.token, &h.nonce, h.timestamp) else {
            return Err("auth:required");
        };
        if ts > now_ms || now_ms - ts > MAX_TOKEN_AGE_MS {
            return Err("auth:invalid");
        }
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let window = Duration::from_millis(MAX_TOKEN_AGE_MS);
        while let Some((at, _)) = used.order.front() {
            if at.elapsed() <= window {
                break;
            }
            if let Some((_, n)) = used.order.pop_front() {
                used.set.remove(&n);
            }
        }
        if used.set.contains(nonce) || used.set.len() >= MAX_NONCES {
            return Err("auth:invalid");
        }
        let Ok(secret) = std::fs::read_to_string(&self.token_path) else {
            return Err("auth:invalid");
        };
        let msg = hello_message(
            h.peer_name.as_deref().unwrap_or("undefined"),
            h.role.as_deref().unwrap_or("undefined"),
            nonce,
            ts,
        );
        let expected = hmac_sha256(secret.trim().as_bytes(), msg.as_bytes());
        if !constant_time_eq_hex(token, &expected) {
            return Err("auth:invalid");
        }
        used.set.insert(nonce.clone());
        used.order.push_back((Instant::now(), nonce.clone()));
        Ok(())
    }
}

/// Compare a hex token with the expected digest without an early exit on the first
/// difference (a malformed token compares unequal).
fn constant_time_eq_hex(token: &str, expected: &[u8; 32]) -> bool {
    let t = token.as_bytes();
    if t.len() != 64 {
        return false;
    }
    let want = hex(expected);
    let mut diff = 0u8;
    for (a, b) in t.iter().zip(want.as_bytes()) {
        diff |= a.to_ascii_lowercase() ^ b;
    }
    diff == 0
}

/// Whether a peer may publish on `topic` (event-protocol §10); the refusal otherwise.
/// `system.*` is the server's, except `system.worker.*`, which the orchestrator's MCP server
/// announces (Claws's `mcp_server.js` emits `system.worker.spawned/completed/boot_failed`);
/// `cmd.*` the orchestrator's; `worker.<id>.*` belongs to the worker `<id>`;
/// `task.<taskId>.*` to the task's assignee and the orchestrator.
pub fn may_publish(
    peer_id: &str,
    role: &str,
    topic: &str,
    task_assignee: impl Fn(&str) -> Option<String>,
) -> Result<(), String> {
    let mut seg = topic.split('.');
    let (first, second) = (seg.next().unwrap_or(""), seg.next());
    match (first, second) {
        ("system", Some("worker")) if role == "orchestrator" => Ok(()),
        ("system", _) => Err("publish forbidden — system.* is server-only".into()),
        ("cmd", _) if role != "orchestrator" => {
            Err("publish forbidden — cmd.* is orchestrator-only".into())
        }
        ("worker", Some(owner)) if owner != peer_id => {
            Err("publish forbidden — not your topic".into())
        }
        ("task", Some(task)) if role != "orchestrator" => match task_assignee(task) {
            Some(a) if a != peer_id => Err("publish forbidden — not your task".into()),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Whether a payload carries the universal envelope (`v` and `data`).
pub fn is_envelope(payload: &Value) -> bool {
    payload
        .as_object()
        .is_some_and(|m| m.get("v").is_some_and(Value::is_number) && m.contains_key("data"))
}

/// Stamp an envelope as the server does: `ts_server`, and `from_peer`/`from_name` when
/// missing. A `from_peer` naming another peer is refused.
pub fn stamp(
    m: &mut Map<String, Value>,
    peer_id: &str,
    name: &str,
    ts: &str,
) -> Result<(), String> {
    match m.get("from_peer") {
        None | Some(Value::Null) => {
            m.insert("from_peer".into(), Value::String(peer_id.to_owned()));
        }
        Some(Value::String(s)) if s == peer_id => {}
        Some(_) => return Err("publish forbidden — from_peer does not match the publisher".into()),
    }
    if !m.contains_key("from_name") {
        m.insert("from_name".into(), Value::String(name.to_owned()));
    }
    m.insert("ts_server".into(), Value::String(ts.to_owned()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_rules() {
        let none = |_: &str| None;
        assert!(may_publish("p_1", "worker", "worker.p_1.boot", none).is_ok());
        assert_eq!(
            may_publish("p_1", "worker", "worker.p_2.boot", none).unwrap_err(),
            "publish forbidden — not your topic"
        );
        assert!(may_publish("p_1", "worker", "cmd.p_1.x", none).is_err());
        assert!(may_publish("o", "orchestrator", "cmd.p_1.x", none).is_ok());
        assert!(may_publish("o", "orchestrator", "system.peer.joined", none).is_err());
        assert!(may_publish("o", "orchestrator", "system.worker.completed", none).is_ok());
        assert!(may_publish("w", "worker", "system.worker.completed", none).is_err());
        let owner = |_: &str| Some("p_2".to_owned());
        assert!(may_publish("p_1", "worker", "task.t_001.note", owner).is_err());
        assert!(may_publish("p_2", "worker", "task.t_001.note", owner).is_ok());
        assert!(may_publish("p_1", "worker", "output.3.line", none).is_ok());
    }

    #[test]
    fn envelope_stamping_refuses_a_foreign_from_peer() {
        let mut m = serde_json::json!({"v": 1, "data": {}})
            .as_object()
            .cloned()
            .unwrap();
        stamp(&mut m, "p_1", "w", "2026-01-01T00:00:00.000Z").unwrap();
        assert_eq!(
            (m["from_peer"].as_str(), m["from_name"].as_str()),
            (Some("p_1"), Some("w"))
        );
        let mut m = serde_json::json!({"v": 1, "data": {}, "from_peer": "p_9"})
            .as_object()
            .cloned()
            .unwrap();
        assert!(stamp(&mut m, "p_1", "w", "t").is_err());
    }
}
