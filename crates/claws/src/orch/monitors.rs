//! Monitor arming (`monitors.register-intent`, `monitors.is-corr-armed`): a correlation id
//! is *pending* once an intent is registered (at spawn time) and *claimed* once a monitor
//! peer says `hello` with `monitorCorrelationId`; the claim graduates the intent, and the
//! claim ends when that peer disconnects. `armed` = pending or claimed. One claim per peer.
//! At most [`MAX_INTENTS`] pending intents are kept (the oldest forgotten first).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::json;

use super::{obj, Body};
use crate::ServerState;
use openfiles_wire::claws::request::Correlation;

pub const MAX_INTENTS: usize = 10_000;

#[derive(Default)]
pub struct Monitors {
    st: Mutex<State>,
}

#[derive(Default)]
struct State {
    pending: VecDeque<String>,
    /// correlation id → peer id, and back.
    claims: HashMap<String, String>,
    by_peer: HashMap<String, String>,
}

impl Monitors {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A monitor peer claimed `corr` at `hello`.
    pub fn claim(&self, peer_id: &str, corr: &str) {
        let mut st = self.lock();
        if let Some(old) = st.by_peer.remove(peer_id) {
            st.claims.remove(&old);
        }
        st.claims.insert(corr.to_owned(), peer_id.to_owned());
        st.by_peer.insert(peer_id.to_owned(), corr.to_owned());
        st.pending.retain(|c| c != corr);
    }

    /// The peer left: its claim ends (the intent it graduated does not come back).
    pub fn release(&self, peer_id: &str) {
        let mut st = self.lock();
        if let Some(corr) = st.by_peer.remove(peer_id) {
            st.claims.remove(&corr);
        }
    }
}

pub fn register_intent(shared: &ServerState, req: Correlation) -> Body {
    let Some(corr) = req.correlation_id.filter(|s| !s.is_empty()) else {
        return Err("monitors.register-intent:missing-correlation_id".into());
    };
    let mut st = shared.orch.monitors.lock();
    if !st.pending.contains(&corr) && !st.claims.contains_key(&corr) {
        st.pending.push_back(corr.clone());
        while st.pending.len() > MAX_INTENTS {
            st.pending.pop_front();
        }
    }
    Ok(obj(json!({ "correlation_id": corr })))
}

pub fn is_armed(shared: &ServerState, req: Correlation) -> Body {
    let Some(corr) = req.correlation_id.filter(|s| !s.is_empty()) else {
        return Err("monitors.is-corr-armed:missing-correlation_id".into());
    };
    let st = shared.orch.monitors.lock();
    let peer = st.claims.get(&corr).cloned();
    let pending = st.pending.contains(&corr);
    Ok(obj(json!({
        "correlation_id": corr,
        "armed": pending || peer.is_some(),
        "pending": pending,
        "claimed": peer.is_some(),
        "peerId": peer,
    })))
}
