//! The claws/2 bus: peers (`hello`), subscriptions with `*`/`**` patterns, `publish`,
//! `broadcast`, server-emitted topics, and the persisted event log with cursor replay.
//!
//! All bus state (peers, subscriptions, the sequence counter, the log's tail) has one owner:
//! a `std::sync::Mutex` held only for the few microseconds of an operation, never across an
//! `.await` and never across disk work: under it an event gets its sequence number and its
//! place in the log ([`log::Tail`]) and is queued for the log's writer thread (`writer.rs`),
//! in that order, before it is fanned out. Delivery is a `try_send` into each peer's bounded outgoing queue ([`Outbox`]);
//! a full queue drops the frame for that peer only and counts it, and the peer's writer
//! announces `{push:"dropped", count}` once its queue has drained — so a stuck subscriber
//! never slows the publisher, other peers or the terminals.
//!
//! Delivery is once per matching subscription: a peer with two subscriptions matching a
//! topic gets two frames, each carrying its `subscriptionId`. Stable peers (`hello` with an
//! `instanceNonce`) keep their subscriptions across reconnects. `system.heartbeat` and
//! `vehicle.<id>.content` are live-only; every other event is placed in the log before it
//! is delivered, so `subscribe` with `fromCursor` replays exactly the events before its
//! `resumeCursor` (the replay waits until the writer has written that far) and receives
//! every later one live. A publish acknowledged is queued for the log, which is written out
//! before the server's stop returns ([`Bus::flush_log`]).
//!
//! Rooms: `hello.rs` (registering a peer), `outbox.rs` (a peer's bounded queue),
//! `replay.rs` (a cursor's replay), `log.rs` + `writer.rs` (the event log and its thread).

mod hello;
pub mod log;
mod outbox;
mod replay;
pub mod topic;
mod writer;

pub use outbox::Outbox;
pub use replay::Replay;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use self::log::{Cursor, EventLog, Tail};
use self::writer::{Op, Writer};
use super::now_ms;
use super::Connection;
use openfiles_wire::claws::request;
use openfiles_wire::claws::{body, Failure, Role, PROTOCOL_2};

type Body = crate::commands::Body;

#[derive(Clone)]
struct Sub {
    id: String,
    pattern: String,
    segs: Vec<String>,
}

struct Peer {
    info: PeerInfo,
    outbox: Arc<Outbox>,
    subs: Vec<Sub>,
    /// Publishes in the current one-second window, and when it began.
    window: (u64, Instant),
    /// Publishes refused by the rate limit since the last heartbeat.
    rate_hits: u64,
}

/// Who a peer is, as `hello` declared it.
#[derive(Debug, Clone, Default)]
pub struct PeerInfo {
    pub peer_id: String,
    pub role: Role,
    pub name: String,
    pub stable: bool,
    pub terminal_id: Option<String>,
    pub capabilities: Vec<String>,
    pub wave_id: Option<String>,
    pub sub_worker_role: Option<String>,
    pub monitor_correlation_id: Option<String>,
}

struct State {
    peers: HashMap<u64, Peer>,
    /// Publishes accepted since the last heartbeat (`system.metrics`).
    published: u64,
    saved: HashMap<String, Vec<Sub>>,
    seq: u64,
    next_sub: u64,
    log: Option<Logging>,
}

/// The log as the bus sees it: where events go, and the writer that puts them there.
struct Logging {
    tail: Tail,
    writer: Arc<Writer>,
    /// Events not stored because the disk was behind by [`writer::MAX_QUEUED`] bytes, ever.
    not_stored: u64,
    /// Of those, the ones since the disk last caught up (0: it is keeping up).
    behind: u64,
}

impl Logging {
    /// Store `line` unless the disk is too far behind: then it is not placed (no cursor names
    /// it), only counted, and the first of a run and the catching up are logged. Never waits.
    fn append(&mut self, line: &str) {
        if !self.writer.has_room() {
            if self.behind == 0 {
                tracing::warn!(
                    "claws event log: {} MiB wait for the disk; events are delivered live but not stored for replay until it catches up",
                    writer::MAX_QUEUED >> 20
                );
            }
            self.behind += 1;
            self.not_stored += 1;
            return;
        }
        if self.behind > 0 {
            tracing::warn!(
                "claws event log: the disk caught up; {} events were not stored",
                self.behind
            );
            self.behind = 0;
        }
        let start = self.tail.place(line.len() as u64);
        let mut b = Vec::with_capacity(line.len() + 1);
        b.extend_from_slice(line.as_bytes());
        b.push(b'\n');
        self.writer.push(Op::Append { start, line: b });
    }
}

pub struct Bus {
    st: Mutex<State>,
    log_dir: Option<PathBuf>,
    writer: Option<Arc<Writer>>,
}

const CAPABILITIES: &[&str] = &[
    "push",
    "broadcast",
    "tasks",
    "replay",
    "wildcards",
    "backpressure",
];

fn ephemeral(topic: &str) -> bool {
    topic == "system.heartbeat" || (topic.starts_with("vehicle.") && topic.ends_with(".content"))
}

impl Bus {
    /// A bus whose log lives in `log`'s directory (none: live-only, nothing replays); `seq`
    /// the last sequence number stored. Starts the log's writer thread.
    pub fn new(log: Option<(EventLog, u64)>) -> std::io::Result<Bus> {
        let log_dir = log.as_ref().map(|(l, _)| l.dir().to_owned());
        let (logging, seq) = match log {
            Some((l, s)) => {
                let tail = l.tail();
                let writer = Arc::new(Writer::start(l, tail.position())?);
                (
                    Some(Logging {
                        tail,
                        writer,
                        not_stored: 0,
                        behind: 0,
                    }),
                    s,
                )
            }
            None => (None, 0),
        };
        let writer = logging.as_ref().map(|l| l.writer.clone());
        Ok(Bus {
            st: Mutex::new(State {
                peers: HashMap::new(),
                published: 0,
                saved: HashMap::new(),
                seq,
                next_sub: 0,
                log: logging,
            }),
            log_dir,
            writer,
        })
    }

    /// Wait until every event placed in the log so far is written (blocking: the server's
    /// stop, after its last events). The writer keeps running for any later one and drains
    /// its queue when the bus is dropped.
    pub fn flush_log(&self) {
        let at = self.lock().log.as_ref().map(|l| l.tail.position());
        if let (Some(at), Some(w)) = (at, &self.writer) {
            w.progress().wait_written(at);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Events the log did not store because the disk was too far behind, ever.
    pub fn events_not_stored(&self) -> u64 {
        self.lock().log.as_ref().map_or(0, |l| l.not_stored)
    }

    /// The last sequence number given out.
    pub fn last_sequence(&self) -> u64 {
        self.lock().seq
    }

    /// Delete event log segments older than `age` (on the writer thread).
    pub fn retain(&self, age: Duration) {
        if let Some(w) = &self.writer {
            w.push(Op::Retain(age));
        }
    }

    /// Every peer that said `hello`, in the order they did.
    pub fn peers(&self) -> Vec<PeerInfo> {
        let st = self.lock();
        let mut peers: Vec<(&u64, &Peer)> = st.peers.iter().collect();
        peers.sort_by_key(|(conn, _)| **conn);
        peers.into_iter().map(|(_, p)| p.info.clone()).collect()
    }

    pub fn peer_count(&self) -> usize {
        self.lock().peers.len()
    }

    /// Emit a server event (`from: "server"`).
    pub fn publish_server(&self, topic: &str, payload: Value) {
        let mut st = self.lock();
        deliver(&mut st, "server", topic, payload, None, !ephemeral(topic));
    }

    /// The peer of a connection, if it said `hello`.
    pub fn peer(&self, conn: &Connection) -> Option<PeerInfo> {
        self.lock().peers.get(&conn.conn_id).map(|p| p.info.clone())
    }

    /// A connected peer by id.
    pub fn peer_by_id(&self, peer_id: &str) -> Option<PeerInfo> {
        self.lock()
            .peers
            .values()
            .find(|p| p.info.peer_id == peer_id)
            .map(|p| p.info.clone())
    }

    /// Count one publish of this connection's peer against `max_hz` per second; false (and a
    /// counted hit) when over. Orchestrators are exempt.
    pub fn rate_check(&self, conn: &Connection, max_hz: u64) -> bool {
        let mut st = self.lock();
        let Some(p) = st.peers.get_mut(&conn.conn_id) else {
            return true;
        };
        if p.info.role == Role::Orchestrator {
            return true;
        }
        let now = Instant::now();
        if now.duration_since(p.window.1) >= Duration::from_secs(1) {
            p.window = (0, now);
        }
        p.window.0 += 1;
        if p.window.0 > max_hz {
            p.rate_hits += 1;
            return false;
        }
        true
    }

    /// Per-peer figures for `system.peer.metrics.<peerId>` (peers with drops or rate-limit
    /// hits since the last call), and the publish count since the last call.
    pub fn take_metrics(&self) -> (u64, Vec<(PeerInfo, u64, u64, u64)>) {
        let mut st = self.lock();
        let published = std::mem::take(&mut st.published);
        let mut out = Vec::new();
        for p in st.peers.values_mut() {
            let dropped = p.outbox.dropped();
            let hits = std::mem::take(&mut p.rate_hits);
            if dropped > 0 || hits > 0 {
                out.push((p.info.clone(), dropped, hits, p.window.0));
            }
        }
        (published, out)
    }

    /// Push one frame straight to a peer, outside its subscriptions (`deliver-cmd`,
    /// `rpc.call`): `{push:"message", topic, from, payload, sentAt, sequence?}`.
    pub fn push_to(
        &self,
        peer_id: &str,
        topic: &str,
        from: &str,
        payload: &Value,
        sequence: Option<u64>,
    ) -> bool {
        let st = self.lock();
        let Some(p) = st.peers.values().find(|p| p.info.peer_id == peer_id) else {
            return false;
        };
        let mut f = json!({"push": "message", "protocol": PROTOCOL_2, "topic": topic, "from": from,
                           "payload": payload, "sentAt": now_ms()});
        if let Some(seq) = sequence {
            f["sequence"] = json!(seq);
        }
        let mut line = f.to_string();
        line.push('\n');
        p.outbox.push(line.into())
    }

    /// Append an event to the log without fanning it out; its bus sequence number.
    pub fn persist(&self, topic: &str, from: &str, payload: Value, schema: &str) -> u64 {
        let mut st = self.lock();
        st.seq += 1;
        let seq = st.seq;
        let ev = json!({"sequence": seq, "topic": topic, "from": from, "schema": schema,
                        "payload": payload, "sentAt": now_ms()})
        .to_string();
        if let Some(log) = st.log.as_mut() {
            log.append(&ev);
        }
        seq
    }

    /// Persist and fan out an event on behalf of `from` (a peer id or `server`), skipping the
    /// connection `skip`; (deliveries, sequence).
    pub fn publish_from(
        &self,
        from: &str,
        topic: &str,
        payload: Value,
        skip: Option<u64>,
    ) -> (usize, u64) {
        let mut st = self.lock();
        deliver(&mut st, from, topic, payload, skip, true)
    }

    pub fn subscribe(
        &self,
        conn: &Connection,
        req: request::Subscribe,
    ) -> Result<(Map<String, Value>, Option<Replay>), Failure> {
        let topic = req.topic.as_deref().unwrap_or("");
        let from = match &req.from_cursor {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(Cursor::parse(s).ok_or("invalid cursor format")?),
            Some(_) => return Err("invalid cursor format".into()),
        };
        let mut st = self.lock();
        if !st.peers.contains_key(&conn.conn_id) {
            return Err("call hello first".into());
        }
        if !topic::valid_pattern(topic) {
            return Err(format!("invalid topic: {topic:?}").into());
        }
        st.next_sub += 1;
        let id = format!("s_{:04}", st.next_sub);
        let until = st.log.as_ref().map_or(
            Cursor {
                segment: 1,
                offset: 0,
            },
            |l| l.tail.position(),
        );
        if let Some(p) = st.peers.get_mut(&conn.conn_id) {
            p.subs.push(Sub {
                id: id.clone(),
                pattern: topic.to_owned(),
                segs: topic::segments(topic),
            });
        }
        let replay = match (from, &self.log_dir, &self.writer) {
            (Some(from), Some(dir), Some(w)) => Some(Replay {
                dir: dir.clone(),
                written: w.progress(),
                sub_id: id.clone(),
                segs: topic::segments(topic),
                from,
                until,
            }),
            _ => None,
        };
        Ok((
            hello::reply(&request::Subscribed {
                subscription_id: id,
                topic: topic.to_owned(),
                resume_cursor: until.to_string(),
            }),
            replay,
        ))
    }

    pub fn unsubscribe(&self, conn: &Connection, req: request::Unsubscribe) -> Body {
        let mut st = self.lock();
        let Some(p) = st.peers.get_mut(&conn.conn_id) else {
            return Err("call hello first".into());
        };
        let id = req.subscription_id.as_deref().unwrap_or("");
        let before = p.subs.len();
        p.subs.retain(|s| s.id != id);
        if p.subs.len() == before {
            return Err("subscription not found".into());
        }
        Ok(hello::reply(&request::Unsubscribed {
            subscription_id: id.to_owned(),
        }))
    }

    /// Publish `payload` (already checked and stamped by the caller) from this connection's
    /// peer; `echo` also delivers to the publisher's own subscriptions.
    pub fn publish(&self, conn: &Connection, topic: &str, payload: Value, echo: bool) -> Body {
        let mut st = self.lock();
        let Some(p) = st.peers.get(&conn.conn_id) else {
            return Err("call hello first".into());
        };
        let from = p.info.peer_id.clone();
        if !topic::valid_topic(topic) {
            return Err(format!("invalid topic: {topic:?}").into());
        }
        st.published += 1;
        let skip = (!echo).then_some(conn.conn_id);
        let (n, seq) = deliver(&mut st, &from, topic, payload, skip, true);
        Ok(body(json!({"deliveredTo": n, "sequence": seq})))
    }

    /// `broadcast`: a `system.broadcast` frame to every peer of `target_role` (`all`: every
    /// peer but the sender). Orchestrators only. Returns the answer and the peers reached.
    pub fn broadcast(
        &self,
        conn: &Connection,
        text: &str,
        target_role: &str,
    ) -> Result<(Map<String, Value>, Vec<PeerInfo>), Failure> {
        let mut st = self.lock();
        let Some(p) = st.peers.get(&conn.conn_id) else {
            return Err("call hello first".into());
        };
        if p.info.role != Role::Orchestrator {
            return Err("requires role: orchestrator".into());
        }
        let from = p.info.peer_id.clone();
        st.seq += 1;
        let mut frame =
            json!({"push": "message", "protocol": PROTOCOL_2, "topic": "system.broadcast",
                               "from": from, "payload": {"text": text}, "sentAt": now_ms(),
                               "sequence": st.seq})
            .to_string();
        frame.push('\n');
        let frame: Arc<str> = frame.into();
        let reached: Vec<PeerInfo> = st
            .peers
            .iter()
            .filter(|(cid, p)| {
                if target_role == "all" {
                    **cid != conn.conn_id
                } else {
                    p.info.role.as_str() == target_role
                }
            })
            .filter(|(_, p)| p.outbox.push(frame.clone()))
            .map(|(_, p)| p.info.clone())
            .collect();
        Ok((body(json!({"deliveredTo": reached.len()})), reached))
    }

    /// The connection ended: forget the peer (a stable one keeps its subscriptions); who it
    /// was, if it said `hello`.
    pub fn disconnect(&self, conn: &Connection) -> Option<PeerInfo> {
        let mut st = self.lock();
        let p = st.peers.remove(&conn.conn_id)?;
        if p.info.stable && !p.subs.is_empty() {
            st.saved.insert(p.info.peer_id.clone(), p.subs);
        }
        deliver(
            &mut st,
            "server",
            "system.peer.disconnected",
            json!({"peerId": p.info.peer_id}),
            None,
            true,
        );
        deliver(
            &mut st,
            "server",
            "system.peer.left",
            json!({"peerId": p.info.peer_id, "role": p.info.role, "reason": "clean"}),
            None,
            true,
        );
        Some(p.info)
    }
}

/// The capabilities a peer declared, with `push` always granted.
fn with_push(mut caps: Vec<String>) -> Vec<String> {
    if !caps.iter().any(|c| c == "push") {
        caps.push("push".to_owned());
    }
    caps
}

/// A terminal id given as a string or a number.
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Number, persist (when asked) and fan out one event; (deliveries, sequence).
fn deliver(
    st: &mut State,
    from: &str,
    topic: &str,
    payload: Value,
    skip: Option<u64>,
    persist: bool,
) -> (usize, u64) {
    st.seq += 1;
    let seq = st.seq;
    let ev = json!({"sequence": seq, "topic": topic, "from": from, "payload": payload, "sentAt": now_ms()})
        .to_string();
    if persist {
        if let Some(log) = st.log.as_mut() {
            log.append(&ev);
        }
    }
    let tsegs: Vec<&str> = topic.split('.').collect();
    let prefix = format!(
        "{{\"push\":\"message\",\"protocol\":\"{PROTOCOL_2}\",{}",
        &ev[1..ev.len() - 1]
    );
    let mut n = 0;
    for (cid, p) in &st.peers {
        if Some(*cid) == skip {
            continue;
        }
        for s in &p.subs {
            if topic::matches(&s.segs, &tsegs) {
                let frame = format!("{prefix},\"subscriptionId\":\"{}\"}}\n", s.id);
                if p.outbox.push(frame.into()) {
                    n += 1;
                }
            }
        }
    }
    (n, seq)
}

#[cfg(test)]
mod tests;
