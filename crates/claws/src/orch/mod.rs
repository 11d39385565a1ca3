//! The claws/2 orchestration layer: the sub-rooms fleets of agents rely on, each owning its
//! own state behind its own lock (never held across an `.await`), all reached through the
//! one typed dispatch in `commands.rs` and all announcing through the one bus:
//!
//! - `peers.rs` — identity rules: HMAC `hello` tokens, who may publish where, the envelope;
//! - `cmdchan.rs` — `deliver-cmd` (per-worker sequence numbers, idempotency) and `cmd.ack`;
//! - `tasks.rs` — `task.*`; `lifecycle.rs` — the phase machine and its state file;
//! - `monitors.rs` — `monitors.*` (intent vs claim of a correlation id);
//! - `waves.rs`, `pipelines.rs`, `rpc.rs`, `schemas.rs` — the rest of the extension's layer.
//!
//! Handlers answer with the extension's shapes and error strings; a refusal that carries more
//! than `error` (the extension's `message`, `details`, `requestId`) is built by [`refusal`].

pub mod cmdchan;
pub mod lifecycle;
pub mod monitors;
pub mod peers;
pub mod pipelines;
pub mod rpc;
pub mod schemas;
pub mod tasks;
pub mod waves;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::bus::PeerInfo;
use super::{iso_now, now_ms, uuid, Connection, ServerState};
use crate::config::ClawsConfig;
use openfiles_wire::claws::request::{Hello, Publish};
use openfiles_wire::claws::{RefusalKind, Role, PROTOCOL_2};

pub use crate::commands::Body;

/// Every sub-room's state, one owner each.
pub struct Orchestra {
    pub auth: peers::Auth,
    pub cmds: cmdchan::CmdChannel,
    pub tasks: tasks::Tasks,
    pub lifecycle: lifecycle::Lifecycle,
    pub monitors: monitors::Monitors,
    pub waves: waves::Waves,
    pub pipelines: pipelines::Pipelines,
    pub rpc: rpc::Rpc,
    /// Publishes being handled now (admission control).
    pub in_flight: AtomicUsize,
}

impl Orchestra {
    pub fn new(root: &Path, claws_dir: &Path, cfg: &ClawsConfig) -> Orchestra {
        Orchestra {
            auth: peers::Auth::new(root, claws_dir, &cfg.auth, now_ms()),
            cmds: cmdchan::CmdChannel::default(),
            tasks: tasks::Tasks::default(),
            lifecycle: lifecycle::Lifecycle::load(claws_dir),
            monitors: monitors::Monitors::default(),
            waves: waves::Waves::default(),
            pipelines: pipelines::Pipelines::default(),
            rpc: rpc::Rpc::default(),
            in_flight: AtomicUsize::new(0),
        }
    }
}

/// A refusal with fields beside `error`: a body whose `ok` is false (`openfiles_wire::claws::answer` writes
/// body fields over its own `ok`).
pub fn refusal(kind: RefusalKind, extra: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("ok".into(), Value::Bool(false));
    m.insert("error".into(), Value::from(kind.as_str()));
    if let Value::Object(e) = extra {
        m.extend(e);
    }
    m
}

/// A refusal with the extension's `message`.
pub fn refuse(kind: RefusalKind, message: &str) -> Body {
    Ok(refusal(kind, json!({ "message": message })))
}

/// The caller's peer when its role is one of `roles`; the extension's errors otherwise.
pub fn require_role(
    shared: &ServerState,
    conn: &Connection,
    roles: &[Role],
) -> Result<PeerInfo, RoleError> {
    let Some(p) = shared.bus.peer(conn) else {
        return Err(RoleError::NoHello);
    };
    if roles.contains(&p.role) {
        Ok(p)
    } else {
        let names: Vec<&str> = roles.iter().map(Role::as_str).collect();
        Err(RoleError::Requires(names.join("|")))
    }
}

/// Why a caller may not make a request. The texts are the wire's (the extension's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleError {
    #[error("call hello first")]
    NoHello,
    /// The roles that may (`a|b`).
    #[error("requires role: {0}")]
    Requires(String),
}

impl From<RoleError> for openfiles_wire::claws::Failure {
    fn from(e: RoleError) -> openfiles_wire::claws::Failure {
        e.to_string().into()
    }
}

/// Build a body map from a `json!({...})` object.
pub fn obj(v: Value) -> Map<String, Value> {
    openfiles_wire::claws::body(v)
}

/// Decrements the in-flight publish count when a publish is done.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `hello`: protocol, auth token (a refusal counts against the connection, an acceptance
/// opens a WebSocket connection's other commands), then the bus registers the peer; monitor
/// claims and wave sub-worker heartbeats follow from its fields.
pub fn hello(shared: &ServerState, conn: &Connection, req: Hello) -> Body {
    if req.protocol.as_deref() != Some(PROTOCOL_2) {
        return Err(format!("hello requires protocol: {PROTOCOL_2}").into());
    }
    let mut roots = shared.registry.roots();
    roots.push(shared.root.clone());
    if let Err(e) = shared.orch.auth.check(&req, now_ms(), &roots) {
        conn.hello_refused();
        return Err(e.to_owned().into());
    }
    conn.authenticated();
    let (body, info) = shared.bus.hello(conn, req)?;
    if let Some(c) = &info.monitor_correlation_id {
        shared.orch.monitors.claim(&info.peer_id, c);
    }
    if let (Some(w), Some(r)) = (&info.wave_id, &info.sub_worker_role) {
        shared.orch.waves.heartbeat(w, r, &info.peer_id);
    }
    Ok(body)
}

/// `publish`: who may publish where, the rate limit and admission control, the envelope and
/// the topic's schema; then the bus fans it out, and RPC answers, wave heartbeats and
/// pipelines act on it.
pub fn publish(shared: &Arc<ServerState>, conn: &Connection, req: Publish) -> Body {
    let Some(me) = shared.bus.peer(conn) else {
        return Err("call hello first".into());
    };
    let topic = req.topic.unwrap_or_default();
    if !crate::bus::topic::valid_topic(&topic) {
        return Err(format!("invalid topic: {topic:?}").into());
    }
    if shared.cfg.strict_topics {
        peers::may_publish(&me.peer_id, &me.role, &topic, |t| {
            shared.orch.tasks.assignee(t)
        })?;
    }
    if !shared.bus.rate_check(conn, shared.cfg.max_publish_rate_hz) {
        return Err("rate-limit-exceeded".into());
    }
    let busy = shared.orch.in_flight.fetch_add(1, Ordering::Relaxed);
    let _guard = InFlight(&shared.orch.in_flight);
    if busy > shared.cfg.max_queue_depth {
        return Err("admission-control:backlog".into());
    }
    let mut payload = req.payload.unwrap_or_else(|| json!({}));
    let schema = schemas::for_topic(&topic);
    let mut issues = Vec::new();
    if peers::is_envelope(&payload) {
        if let Value::Object(m) = &mut payload {
            peers::stamp(m, &me.peer_id, &me.name, &iso_now())?;
        }
        issues = schemas::issues(schemas::ENVELOPE, &payload);
        if let Some(t) = schema {
            let mut path = vec!["data".to_owned()];
            schemas::check(t, payload.get("data"), &mut path, &mut issues);
        }
    } else if let Some(t) = schema {
        issues = schemas::issues(t, &payload);
        let now = iso_now();
        payload = json!({"v": 1, "id": uuid(), "from_peer": me.peer_id, "from_name": me.name,
                         "ts_published": now, "ts_server": now, "schema": "claws/2",
                         "data": payload});
    }
    if !issues.is_empty() {
        shared.bus.publish_server(
            "system.malformed.received",
            json!({"from": me.peer_id, "topic": topic, "error": issues}),
        );
        if shared.cfg.strict_event_validation {
            return Ok(refusal(
                RefusalKind::PayloadInvalid,
                json!({ "details": issues }),
            ));
        }
    }
    shared.orch.rpc.answer(&topic, &payload);
    let routes = shared.orch.pipelines.route(&topic, &payload);
    let body = shared
        .bus
        .publish(conn, &topic, payload, req.echo.unwrap_or(false))?;
    shared.orch.waves.lead_seen(&me.peer_id);
    let mut segs = topic.split('.');
    if segs.next() == Some("worker") && segs.nth(1) == Some("heartbeat") && segs.next().is_none() {
        if let (Some(w), Some(r)) = (&me.wave_id, &me.sub_worker_role) {
            shared.orch.waves.heartbeat(w, r, &me.peer_id);
        }
    }
    for (sink, text, step_topic, ev) in routes {
        if let Some(t) = sink.parse::<u64>().ok().and_then(|id| shared.terminal(id)) {
            if let Err(e) = t.send(&text, true, false) {
                tracing::warn!("{e}");
            }
        }
        shared.bus.publish_server(&step_topic, ev);
    }
    Ok(body)
}

/// A connection ended: the bus forgets the peer; its monitor claim ends, its wave watch
/// stops, and a peer without a stable identity fails its open tasks.
pub fn disconnected(shared: &ServerState, conn: &Connection) {
    let Some(p) = shared.bus.disconnect(conn) else {
        return;
    };
    shared.orch.monitors.release(&p.peer_id);
    shared.orch.waves.peer_left(&p.peer_id);
    if !p.stable {
        for ev in shared.orch.tasks.peer_left(&p.peer_id) {
            shared.bus.publish_server("task.completed", ev);
        }
        shared.orch.cmds.forget(&p.peer_id);
    }
}
