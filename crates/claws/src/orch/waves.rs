//! Waves (`wave.create/status/complete`): a LEAD peer runs a wave of sub-workers (roles
//! lead, tester, reviewer, auditor, bench, doc). `wave.create` announces
//! `wave.<id>.lead.boot`; sub-workers are tracked by their `hello` (`waveId`,
//! `subWorkerRole`) and their `worker.*.heartbeat` publishes, and terminals created by a wave
//! peer are the wave's. A sub-worker silent for [`VIOLATION_MS`] gets a
//! `wave.<id>.violation` event and its terminal closed (origin `wave_violation`); a LEAD
//! silent that long while the wave has sub-worker terminals gets a `silent_lead_with_active_subs`
//! violation. Violations repeat every window until resolved. `wave.complete` (LEAD only)
//! announces `wave.<id>.complete`, closes ("harvests") the wave's terminals and announces
//! `wave.<id>.harvested`. The checks run in [`Waves::scan`], called every second.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{obj, Body};
use crate::{iso_now, now_ms, Connection, ServerState};
use openfiles_wire::claws::request::{CloseOrigin, WaveComplete, WaveCreate, WaveRef};

pub const VIOLATION_MS: u64 = 25_000;
/// Waves kept (the oldest complete ones forgotten first).
pub const MAX_WAVES: usize = 1000;

struct Sub {
    peer_id: Option<String>,
    last_heartbeat_ms: u64,
    /// When the violation check next looks at this sub-worker (None: not watched).
    due: Option<Instant>,
    complete: bool,
    terminal_id: Option<String>,
}

struct Wave {
    layers: Vec<String>,
    subs: BTreeMap<String, Sub>,
    lead: String,
    created_at: u64,
    completed_at: Option<u64>,
    summary: Option<String>,
    commits: Vec<String>,
    regression_clean: Option<bool>,
    complete: bool,
    terminals: Vec<String>,
    harvested_at: Option<u64>,
    orphaned: Vec<String>,
    lead_due: Instant,
}

#[derive(Default)]
pub struct Waves {
    st: Mutex<BTreeMap<String, Wave>>,
}

fn window() -> Duration {
    Duration::from_millis(VIOLATION_MS)
}

impl Waves {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Wave>> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A heartbeat (or `hello`) from a sub-worker.
    pub fn heartbeat(&self, wave: &str, role: &str, peer_id: &str) {
        let mut st = self.lock();
        let Some(w) = st.get_mut(wave) else { return };
        let done = w.complete;
        let Some(s) = w.subs.get_mut(role) else {
            return;
        };
        s.last_heartbeat_ms = now_ms();
        s.peer_id = Some(peer_id.to_owned());
        s.due = (!s.complete && !done).then(|| Instant::now() + window());
    }

    /// Any command from a wave's LEAD resets its silence window.
    pub fn lead_seen(&self, peer_id: &str) {
        let mut st = self.lock();
        for w in st.values_mut().filter(|w| w.lead == peer_id && !w.complete) {
            w.lead_due = Instant::now() + window();
        }
    }

    /// A terminal created by a peer of `wave`.
    pub fn track(&self, wave: &str, terminal_id: &str, role: Option<&str>) {
        let mut st = self.lock();
        let Some(w) = st.get_mut(wave).filter(|w| !w.complete) else {
            return;
        };
        if !w.terminals.iter().any(|t| t == terminal_id) {
            w.terminals.push(terminal_id.to_owned());
        }
        if let Some(s) = role.and_then(|r| w.subs.get_mut(r)) {
            s.terminal_id.get_or_insert_with(|| terminal_id.to_owned());
        }
    }

    /// A peer left: stop watching the sub-workers it was.
    pub fn peer_left(&self, peer_id: &str) {
        let mut st = self.lock();
        for w in st.values_mut().filter(|w| !w.complete) {
            for s in w.subs.values_mut() {
                if s.peer_id.as_deref() == Some(peer_id) && !s.complete {
                    s.due = None;
                }
            }
        }
    }

    /// Violations due now: (event topic, payload, terminal to close).
    fn due(&self) -> Vec<(String, Value, Option<String>)> {
        let now = Instant::now();
        let mut out = Vec::new();
        let mut st = self.lock();
        for (id, w) in st.iter_mut().filter(|(_, w)| !w.complete) {
            for (role, s) in w.subs.iter_mut() {
                if s.complete || s.due.is_none_or(|d| d > now) {
                    continue;
                }
                s.due = Some(now + window());
                let silent = now_ms().saturating_sub(s.last_heartbeat_ms);
                out.push((
                    format!("wave.{id}.violation"),
                    json!({"waveId": id, "subWorker": role, "silentMs": silent, "ts": iso_now()}),
                    s.terminal_id.take(),
                ));
            }
            if w.lead_due <= now && w.harvested_at.is_none() {
                w.lead_due = now + window();
                if !w.terminals.is_empty() {
                    out.push((
                        format!("wave.{id}.violation"),
                        json!({"waveId": id, "kind": "silent_lead_with_active_subs",
                               "subWorkerCount": w.terminals.len(), "ts": iso_now()}),
                        None,
                    ));
                }
            }
        }
        out
    }

    /// Emit due violations and close the silent sub-workers' terminals.
    pub fn scan(&self, shared: &Arc<ServerState>) {
        for (topic, payload, term) in self.due() {
            shared.bus.publish_server(&topic, payload);
            if let Some(id) = term.and_then(|t| t.parse::<u64>().ok()) {
                shared.close_terminal(id, CloseOrigin::WaveViolation);
            }
        }
    }
}

pub fn create(shared: &ServerState, conn: &Connection, req: WaveCreate) -> Body {
    let Some(id) = req.wave_id.filter(|s| !s.is_empty()) else {
        return Err("wave.create:missing-waveId".into());
    };
    let manifest = req.manifest.unwrap_or_default();
    if manifest.is_empty() {
        return Err("wave.create:missing-manifest".into());
    }
    let me = shared.bus.peer(conn);
    let lead = me
        .as_ref()
        .map_or_else(|| "unknown".to_owned(), |p| p.peer_id.clone());
    let name = me.as_ref().map_or_else(|| lead.clone(), |p| p.name.clone());
    let (created_at, layers, fresh) = {
        let mut st = shared.orch.waves.lock();
        let fresh = !st.contains_key(&id);
        let w = st.entry(id.clone()).or_insert_with(|| {
            let now = now_ms();
            let due = Instant::now() + window();
            Wave {
                layers: req.layers.unwrap_or_default(),
                subs: manifest
                    .iter()
                    .map(|r| {
                        let s = Sub {
                            peer_id: None,
                            last_heartbeat_ms: now,
                            due: Some(due),
                            complete: false,
                            terminal_id: None,
                        };
                        (r.clone(), s)
                    })
                    .collect(),
                lead: lead.clone(),
                created_at: now,
                completed_at: None,
                summary: None,
                commits: Vec::new(),
                regression_clean: None,
                complete: false,
                terminals: Vec::new(),
                harvested_at: None,
                orphaned: Vec::new(),
                lead_due: due,
            }
        });
        let out = (w.created_at, w.layers.clone(), fresh);
        if st.len() > MAX_WAVES {
            if let Some(k) = st.iter().find(|(_, w)| w.complete).map(|(k, _)| k.clone()) {
                st.remove(&k);
            }
        }
        out
    };
    if fresh {
        shared.bus.publish_server(
            &format!("wave.{id}.lead.boot"),
            json!({"waveId": id, "peerName": name, "layers": layers, "manifest": manifest,
                   "started_at": crate::iso(created_at)}),
        );
    }
    Ok(obj(json!({"waveId": id, "createdAt": created_at})))
}

pub fn status(shared: &ServerState, req: WaveRef) -> Body {
    let Some(id) = req.wave_id.filter(|s| !s.is_empty()) else {
        return Err("wave.status:missing-waveId".into());
    };
    let st = shared.orch.waves.lock();
    let Some(w) = st.get(&id) else {
        return Err(format!("wave.status:not-found:{id}").into());
    };
    let subs: Vec<Value> = w
        .subs
        .iter()
        .map(|(role, s)| {
            let p = s.peer_id.as_deref().and_then(|p| shared.bus.peer_by_id(p));
            json!({"role": role, "peerId": s.peer_id,
                   "peerName": p.as_ref().map(|p| p.name.clone()),
                   "terminalId": s.terminal_id.clone().or_else(|| p.and_then(|p| p.terminal_id)),
                   "lastHeartbeatMs": s.last_heartbeat_ms, "complete": s.complete})
        })
        .collect();
    let lead = shared.bus.peer_by_id(&w.lead);
    let lead_name = lead.as_ref().map(|p| p.name.clone());
    let lead_term = lead.as_ref().and_then(|p| p.terminal_id.clone());
    Ok(obj(json!({
        "waveId": id, "layers": w.layers, "leadPeerId": w.lead, "leadPeerName": lead_name,
        "leadTerminalId": lead_term,
        "lead": {"peerId": w.lead, "peerName": lead_name, "terminalId": lead_term,
                 "status": if w.complete { "complete" } else { "active" },
                 "lastSeenMs": Value::Null},
        "subWorkers": subs, "subWorkerTerminals": w.terminals, "orphanedTerminals": w.orphaned,
        "harvestedAt": w.harvested_at, "complete": w.complete, "createdAt": w.created_at,
        "completedAt": w.completed_at, "summary": w.summary, "commits": w.commits,
        "regressionClean": w.regression_clean,
    })))
}

pub fn complete(shared: &Arc<ServerState>, conn: &Connection, req: WaveComplete) -> Body {
    let Some(id) = req.wave_id.filter(|s| !s.is_empty()) else {
        return Err("wave.complete:missing-waveId".into());
    };
    let me = shared
        .bus
        .peer(conn)
        .map_or_else(|| "unknown".to_owned(), |p| p.peer_id);
    let (completed_at, terminals) = {
        let mut st = shared.orch.waves.lock();
        let Some(w) = st.get_mut(&id) else {
            return Err(format!("wave.complete:not-found:{id}").into());
        };
        if w.lead != me {
            return Err("wave.complete:not-lead — only the LEAD peer may complete a wave".into());
        }
        if w.complete {
            return Err(format!("wave.complete:already-complete:{id}").into());
        }
        let now = now_ms();
        w.complete = true;
        w.completed_at = Some(now);
        w.summary = req.summary;
        w.commits = req.commits.clone().unwrap_or_default();
        w.regression_clean = req.regression_clean;
        for s in w.subs.values_mut() {
            s.due = None;
        }
        w.harvested_at = Some(now);
        w.orphaned = w.terminals.clone();
        (now, w.terminals.clone())
    };
    shared.bus.publish_server(
        &format!("wave.{id}.complete"),
        json!({"waveId": id, "status": "ok", "commits": req.commits.unwrap_or_default(),
               "regression_clean": req.regression_clean.unwrap_or(false)}),
    );
    let (mut closed, mut already) = (Vec::new(), Vec::new());
    for t in &terminals {
        let done = t
            .parse::<u64>()
            .is_ok_and(|n| shared.close_terminal(n, CloseOrigin::Orchestrator));
        if done {
            closed.push(t.clone())
        } else {
            already.push(t.clone())
        }
    }
    shared.bus.publish_server(
        &format!("wave.{id}.harvested"),
        json!({"waveId": id, "orphaned_count": terminals.len(), "closed_terminals": closed,
               "already_closed": already, "ts": iso_now()}),
    );
    Ok(obj(
        json!({"waveId": id, "completedAt": completed_at, "harvested": closed.len()}),
    ))
}
