//! The command channel, orchestrator → worker: `deliver-cmd` pushes a command frame straight
//! to one worker with that worker's next sequence number (1, 2, … per worker), persisted as a
//! `cmd-deliver-v1` record; a repeated `idempotencyKey` answers `duplicate: true` with the
//! first delivery's number and pushes nothing. The worker answers with `cmd.ack`, fanned out
//! on `cmd.<workerPeerId>.ack`. `broadcast` reaches every peer of a role and, with `inject`,
//! types the text into their terminals, a leading `[CLAWS_CMD ` carrying a bumped
//! `seq=<n>`. Idempotency keys are remembered for the last [`KEYS_KEPT`] deliveries.

use openfiles_wire::claws::Role;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::{obj, require_role, Body};
use crate::{Connection, ServerState};
use openfiles_wire::claws::request::{Broadcast, CmdAck, DeliverCmd};

/// Idempotency keys remembered (oldest forgotten first).
pub const KEYS_KEPT: usize = 65_536;

#[derive(Default)]
pub struct CmdChannel {
    st: Mutex<State>,
    broadcast_seq: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Last sequence number per worker peer id.
    seqs: HashMap<String, u64>,
    keys: HashMap<String, u64>,
    order: VecDeque<String>,
}

impl CmdChannel {
    /// The sequence number for a delivery: the recorded one when `key` was seen (and true).
    fn allocate(&self, target: &str, key: &str) -> (u64, bool) {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&seq) = st.keys.get(key) {
            return (seq, true);
        }
        let seq = {
            let n = st.seqs.entry(target.to_owned()).or_insert(0);
            *n += 1;
            *n
        };
        st.keys.insert(key.to_owned(), seq);
        st.order.push_back(key.to_owned());
        while st.order.len() > KEYS_KEPT {
            if let Some(old) = st.order.pop_front() {
                st.keys.remove(&old);
            }
        }
        (seq, false)
    }

    /// Forget a worker's counter when it leaves without a stable identity.
    pub fn forget(&self, peer_id: &str) {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        st.seqs.remove(peer_id);
    }
}

pub fn deliver(shared: &ServerState, conn: &Connection, req: DeliverCmd) -> Body {
    let me = require_role(shared, conn, &[Role::Orchestrator])?;
    let Some(target) = req.target_peer_id.filter(|s| !s.is_empty()) else {
        return Err("deliver-cmd:missing-targetPeerId".into());
    };
    let Some(topic) = req.cmd_topic.filter(|s| !s.is_empty()) else {
        return Err("deliver-cmd:missing-cmdTopic".into());
    };
    let Some(key) = req.idempotency_key.filter(|s| !s.is_empty()) else {
        return Err("deliver-cmd:missing-idempotencyKey".into());
    };
    if shared.bus.peer_by_id(&target).is_none() {
        return Err(format!("deliver-cmd:target-not-found:{target}").into());
    }
    let (seq, duplicate) = shared.orch.cmds.allocate(&target, &key);
    if duplicate {
        return Ok(obj(json!({"duplicate": true, "seq": seq})));
    }
    shared.bus.persist(
        &topic,
        &me.peer_id,
        json!({"targetPeerId": target, "cmdTopic": topic, "idempotencyKey": key, "seq": seq}),
        "cmd-deliver-v1",
    );
    let payload = req.payload.unwrap_or(Value::Null);
    shared
        .bus
        .push_to(&target, &topic, &me.peer_id, &payload, Some(seq));
    Ok(obj(json!({ "seq": seq })))
}

pub fn ack(shared: &ServerState, conn: &Connection, req: CmdAck) -> Body {
    let me = require_role(shared, conn, &[Role::Worker])?;
    let topic = format!("cmd.{}.ack", me.peer_id);
    let mut payload = json!({"seq": req.seq, "status": req.status, "workerPeerId": me.peer_id});
    if let Some(c) = req.correlation_id {
        payload["correlation_id"] = Value::String(c);
    }
    shared
        .bus
        .publish_from(&me.peer_id, &topic, payload, Some(conn.conn_id));
    Ok(obj(json!({})))
}

pub fn broadcast(shared: &Arc<ServerState>, conn: &Connection, req: Broadcast) -> Body {
    let text = req.text.unwrap_or_default();
    let target = req.target_role.unwrap_or_else(|| "worker".to_owned());
    let inject = req.inject.unwrap_or(false);
    let text = if inject {
        stamp_seq(&text, || {
            shared
                .orch
                .cmds
                .broadcast_seq
                .fetch_add(1, Ordering::Relaxed)
                + 1
        })
    } else {
        text
    };
    let (body, reached) = shared.bus.broadcast(conn, &text, &target)?;
    if inject {
        for p in reached {
            let term = p
                .terminal_id
                .as_deref()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .and_then(|id| shared.terminal(id));
            if let Some(t) = term {
                if let Err(e) = t.send(&text, true, true) {
                    tracing::warn!("broadcast inject: {e}");
                }
            }
        }
    }
    Ok(body)
}

/// `[CLAWS_CMD …` → `[CLAWS_CMD seq=<n> …` (also `[CLAWS_CMD]` → `[CLAWS_CMD seq=<n>]`);
/// other text unchanged and no number taken.
pub fn stamp_seq(text: &str, next: impl FnOnce() -> u64) -> String {
    if let Some(rest) = text.strip_prefix("[CLAWS_CMD ") {
        format!("[CLAWS_CMD seq={} {rest}", next())
    } else if let Some(rest) = text.strip_prefix("[CLAWS_CMD]") {
        format!("[CLAWS_CMD seq={}]{rest}", next())
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_are_per_worker_and_keys_dedupe() {
        let c = CmdChannel::default();
        assert_eq!(c.allocate("a", "k1"), (1, false));
        assert_eq!(c.allocate("a", "k2"), (2, false));
        assert_eq!(c.allocate("b", "k3"), (1, false));
        assert_eq!(c.allocate("a", "k1"), (1, true));
    }

    #[test]
    fn claws_cmd_header_gets_the_sequence() {
        assert_eq!(
            stamp_seq("[CLAWS_CMD r=x] go", || 7),
            "[CLAWS_CMD seq=7 r=x] go"
        );
        assert_eq!(stamp_seq("[CLAWS_CMD] go", || 8), "[CLAWS_CMD seq=8] go");
        assert_eq!(
            stamp_seq("plain", || panic!("no number for plain text")),
            "plain"
        );
    }
}
