//! Peer identity rules: the optional HMAC token on `hello` (`[claws.auth]`), who may publish
//! where (event-protocol §10), and the universal event envelope the server stamps.
//!
//! Auth: token = hex HMAC-SHA256(secret, `"<peerName>:<role>:<nonce>:<timestamp>"`), the secret
//! being the trimmed contents of the user's secret (`crate::secret`: the user's state folder
//! or `token_path` from the user's config, never a workspace's file; read on every `hello`,
//! so rotating it needs no restart). A
//! missing field is `auth:required`; a timestamp in the future or older than five minutes, a
//! nonce seen before (or longer than [`MAX_NONCE_BYTES`]), an unreadable, empty or blank
//! secret, or a wrong token are `auth:invalid`. An empty secret is never a key: the server
//! says so at start and refuses every `hello`.
//!
//! Used nonces are remembered with their timestamp for the five-minute window (a replay past
//! it fails the timestamp check), at most [`MAX_NONCES`] at once, and appended to
//! `.claws/auth-nonces.jsonl` (0600, never followed through a symlink, rewritten without the
//! expired ones when it grows), so a `hello` captured before a restart stays refused after
//! it. When that record cannot be read at start, every `hello` signed before the start is
//! refused instead (fail closed).
//!
//! A connection is closed after [`MAX_FAILED_HELLOS`] refused `hello`s (see `conn.rs`):
//! guessing costs a connection per few tries.

use std::collections::{HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::config::ClawsAuthConfig;
use openfiles_wire::claws::auth::{hello_message, hex, hmac_sha256};
use openfiles_wire::claws::request::Hello;
use openfiles_wire::claws::Role;

/// Token age past which a `hello` is refused.
pub const MAX_TOKEN_AGE_MS: u64 = 5 * 60 * 1000;
/// Bound on remembered nonces (more within five minutes are refused as `auth:invalid`).
const MAX_NONCES: usize = 10_000;
/// Longest nonce accepted (the record stays small).
pub const MAX_NONCE_BYTES: usize = 256;
/// Refused `hello`s after which a connection is closed.
pub const MAX_FAILED_HELLOS: u32 = 5;
/// The used-nonce record, in `.claws/`.
const NONCE_FILE: &str = "auth-nonces.jsonl";
/// Largest record read at start (far above what [`MAX_NONCES`] lines take).
const MAX_NONCE_FILE_BYTES: u64 = 16 << 20;

pub struct Auth {
    enabled: bool,
    token_path: PathBuf,
    used: Mutex<Nonces>,
}

#[derive(Default)]
struct Nonces {
    set: HashSet<String>,
    /// (the hello's timestamp, nonce), in acceptance order.
    order: VecDeque<(u64, String)>,
    /// Where they are recorded (None: auth off).
    file: Option<PathBuf>,
    /// Lines in the file (it is rewritten when they outgrow the live entries).
    lines: usize,
    /// Hellos signed before this are refused (the record could not be read).
    not_before: u64,
}

impl Auth {
    pub fn new(root: &Path, claws_dir: &Path, cfg: &ClawsAuthConfig, now_ms: u64) -> Auth {
        let mut used = Nonces::default();
        if cfg.enabled {
            used.load(claws_dir.join(NONCE_FILE), now_ms);
        }
        Auth {
            enabled: cfg.enabled,
            token_path: crate::secret::token_path(cfg, root),
            used: Mutex::new(used),
        }
    }

    /// Check a `hello`'s token; the extension's error string when refused. The secret must
    /// lie outside every one of `workspaces` (`crate::secret::read`).
    pub fn check(
        &self,
        h: &Hello,
        now_ms: u64,
        workspaces: &[PathBuf],
    ) -> Result<(), &'static str> {
        if !self.enabled {
            return Ok(());
        }
        let (Some(token), Some(nonce), Some(ts)) = (&h.token, &h.nonce, h.timestamp) else {
            return Err("auth:required");
        };
        if ts > now_ms || now_ms - ts > MAX_TOKEN_AGE_MS || nonce.len() > MAX_NONCE_BYTES {
            return Err("auth:invalid");
        }
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.prune(now_ms);
        if ts < used.not_before || used.set.contains(nonce) || used.set.len() >= MAX_NONCES {
            return Err("auth:invalid");
        }
        let secret = match crate::secret::read(&self.token_path, workspaces) {
            Ok(s) => s,
            Err(e) => {
                // Said at start (an error); per hello only at debug, so refused hellos
                // cannot flood the log.
                tracing::debug!("claws hello refused: [claws.auth] secret unusable: {e}");
                return Err("auth:invalid");
            }
        };
        let msg = hello_message(
            h.peer_name.as_deref().unwrap_or("undefined"),
            h.role.as_ref().map_or("undefined", Role::as_str),
            nonce,
            ts,
        );
        let expected = hmac_sha256(&secret, msg.as_bytes());
        if !constant_time_eq_hex(token, &expected) {
            return Err("auth:invalid");
        }
        used.insert(nonce.clone(), ts);
        Ok(())
    }
}

/// One line of the used-nonce record.
#[derive(serde::Serialize, serde::Deserialize)]
struct Used {
    nonce: String,
    ts: u64,
}

impl Nonces {
    /// Read the record left by an earlier run, keeping the nonces still inside their window.
    fn load(&mut self, file: PathBuf, now_ms: u64) {
        match openfiles_os::fsutil::read_regular_capped_nofollow(&file, MAX_NONCE_FILE_BYTES) {
            Ok(bytes) => {
                for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    // A torn last line (a crash mid-append) is skipped.
                    if let Ok(u) = serde_json::from_slice::<Used>(line) {
                        if now_ms.saturating_sub(u.ts) <= MAX_TOKEN_AGE_MS
                            && self.set.insert(u.nonce.clone())
                        {
                            self.order.push_back((u.ts, u.nonce));
                        }
                    }
                }
                self.lines = usize::MAX; // rewritten at the first append
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::error!(
                    "claws auth: the used-nonce record is unreadable ({e}); hellos signed \
                     before now are refused"
                );
                self.not_before = now_ms;
                self.lines = usize::MAX;
            }
        }
        self.file = Some(file);
    }

    /// Forget the nonces whose window has passed.
    fn prune(&mut self, now_ms: u64) {
        let expired = |ts: u64| now_ms.saturating_sub(ts) > MAX_TOKEN_AGE_MS;
        if !self.order.iter().any(|(ts, _)| expired(*ts)) {
            return;
        }
        let set = &mut self.set;
        self.order.retain(|(ts, n)| {
            let keep = !expired(*ts);
            if !keep {
                set.remove(n);
            }
            keep
        });
    }

    fn insert(&mut self, nonce: String, ts: u64) {
        self.set.insert(nonce.clone());
        self.order.push_back((ts, nonce));
        if let Err(e) = self.record() {
            tracing::error!("claws auth: cannot record a used nonce: {e}");
        }
    }

    /// Append the newest nonce to the record, or rewrite it with the live ones when it has
    /// grown past twice their number.
    fn record(&mut self) -> std::io::Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let line = |ts: u64, nonce: &str| -> std::io::Result<Vec<u8>> {
            let mut l = serde_json::to_vec(&Used {
                nonce: nonce.to_owned(),
                ts,
            })?;
            l.push(b'\n');
            Ok(l)
        };
        if self.lines >= 2 * self.order.len() + 1024 {
            let mut all = Vec::new();
            for (ts, n) in &self.order {
                all.extend(line(*ts, n)?);
            }
            openfiles_os::fsutil::write_atomic(file, &all, 0o600)?;
            self.lines = self.order.len();
            return Ok(());
        }
        let Some((ts, n)) = self.order.back() else {
            return Ok(());
        };
        let mut f = std::os::unix::fs::OpenOptionsExt::custom_flags(
            std::os::unix::fs::OpenOptionsExt::mode(
                std::fs::OpenOptions::new().append(true).create(true),
                0o600,
            ),
            libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
        .open(file)?;
        f.write_all(&line(*ts, n)?)?;
        self.lines += 1;
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
    role: &Role,
    topic: &str,
    task_assignee: impl Fn(&str) -> Option<String>,
) -> Result<(), Forbidden> {
    let mut seg = topic.split('.');
    let (first, second) = (seg.next().unwrap_or(""), seg.next());
    match (first, second) {
        ("system", Some("worker")) if *role == Role::Orchestrator => Ok(()),
        ("system", _) => Err(Forbidden::System),
        ("cmd", _) if *role != Role::Orchestrator => Err(Forbidden::Cmd),
        ("worker", Some(owner)) if owner != peer_id => Err(Forbidden::NotYourTopic),
        ("task", Some(task)) if *role != Role::Orchestrator => match task_assignee(task) {
            Some(a) if a != peer_id => Err(Forbidden::NotYourTask),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Why a publish is refused. The texts are the wire's: Claws clients read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Forbidden {
    #[error("publish forbidden — system.* is server-only")]
    System,
    #[error("publish forbidden — cmd.* is orchestrator-only")]
    Cmd,
    #[error("publish forbidden — not your topic")]
    NotYourTopic,
    #[error("publish forbidden — not your task")]
    NotYourTask,
    #[error("publish forbidden — from_peer does not match the publisher")]
    FromPeer,
}

impl From<Forbidden> for openfiles_wire::claws::Failure {
    fn from(e: Forbidden) -> openfiles_wire::claws::Failure {
        e.to_string().into()
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
) -> Result<(), Forbidden> {
    match m.get("from_peer") {
        None | Some(Value::Null) => {
            m.insert("from_peer".into(), Value::String(peer_id.to_owned()));
        }
        Some(Value::String(s)) if s == peer_id => {}
        Some(_) => return Err(Forbidden::FromPeer),
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
        assert!(may_publish("p_1", &Role::from("worker"), "worker.p_1.boot", none).is_ok());
        assert_eq!(
            may_publish("p_1", &Role::from("worker"), "worker.p_2.boot", none)
                .unwrap_err()
                .to_string(),
            "publish forbidden — not your topic"
        );
        assert!(may_publish("p_1", &Role::from("worker"), "cmd.p_1.x", none).is_err());
        assert!(may_publish("o", &Role::from("orchestrator"), "cmd.p_1.x", none).is_ok());
        assert!(may_publish("o", &Role::from("orchestrator"), "system.peer.joined", none).is_err());
        assert!(may_publish(
            "o",
            &Role::from("orchestrator"),
            "system.worker.completed",
            none
        )
        .is_ok());
        assert!(may_publish("w", &Role::from("worker"), "system.worker.completed", none).is_err());
        let owner = |_: &str| Some("p_2".to_owned());
        assert!(may_publish("p_1", &Role::from("worker"), "task.t_001.note", owner).is_err());
        assert!(may_publish("p_2", &Role::from("worker"), "task.t_001.note", owner).is_ok());
        assert!(may_publish("p_1", &Role::from("worker"), "output.3.line", none).is_ok());
    }

    #[test]
    fn the_nonce_record_keeps_live_nonces_and_fails_closed() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join(NONCE_FILE);
        let now = 10 * MAX_TOKEN_AGE_MS;
        let old = now - MAX_TOKEN_AGE_MS - 1;
        let live = now - 1000;
        // An expired entry, a live one, and a line torn by a crash.
        std::fs::write(
            &file,
            format!(
                "{{\"nonce\":\"old\",\"ts\":{old}}}\n{{\"nonce\":\"live\",\"ts\":{live}}}\n{{\"nonce\":\"to"
            ),
        )
        .unwrap();
        let mut n = Nonces::default();
        n.load(file.clone(), now);
        assert!(n.set.contains("live") && !n.set.contains("old"));
        assert_eq!(n.not_before, 0);
        // The first record after a load rewrites the file with the live nonces, 0600.
        n.insert("new".into(), now);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains("\"live\"") && text.contains("\"new\""),
            "{text}"
        );
        assert!(
            !text.contains("\"old\"") && !text.contains("\"to"),
            "{text}"
        );
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Later ones are appended.
        n.insert("newer".into(), now);
        assert!(std::fs::read_to_string(&file).unwrap().contains("newer"));
        // Past the window they are forgotten.
        n.prune(now + MAX_TOKEN_AGE_MS + 1);
        assert!(n.set.is_empty() && n.order.is_empty());
        // A record that cannot be read (here a symlink, never followed): fail closed.
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let mut n = Nonces::default();
        n.load(link, now);
        assert_eq!(n.not_before, now);
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
