//! The mission lifecycle (`lifecycle.*`): the extension's phase machine (schema v3) with its
//! rules, gates and auto-advance, persisted in `.claws/lifecycle-state.json` (temp file +
//! fsync + rename after every change; a file of another schema is ignored, as the extension
//! does). The state is serialized under its mutex and written by a thread of its own
//! ([`Saver`], the newest state wins), so no lock is held and no runtime thread waits across
//! the disk; a `lifecycle.*` answer is sent once its state is written ([`Lifecycle::saved`]).
//!
//! Phases: SESSION-BOOT → PLAN → SPAWN → DEPLOY ⇄ RECOVER → OBSERVE → HARVEST → CLEANUP →
//! REFLECT → (PLAN | SESSION-END), FAILED from most. Gates: REFLECT needs every spawned
//! worker closed. Auto-advance after each worker change: SPAWN→DEPLOY when every expected
//! worker is spawned and monitored, DEPLOY→OBSERVE when one has moved on, OBSERVE→HARVEST
//! when done (single: one; fleet: all; army: never — waves decide), HARVEST→CLEANUP when all
//! are at a terminal status, CLEANUP→REFLECT when all are closed; each announced as
//! `lifecycle.phase-changed`. At start, workers recorded as spawned are marked closed (no
//! terminal survives a restart of this server).

use openfiles_wire::claws::{Phase, RefusalKind};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{obj, refuse, Body};
use crate::{iso_now, now_ms, ServerState};
use openfiles_wire::claws::request::{
    CloseOrigin, LifecycleAdvance, LifecyclePlan, LifecycleReflect, MarkWorkerStatus,
    RegisterMonitor, RegisterSpawn,
};

mod phases;

use phases::{between_missions, can_transition, explain, transitions, OpenTerminals};

const DEFAULT_IDLE_MS: u64 = 600_000;
const DEFAULT_MAX_MS: u64 = 14_400_000;

fn terminal_status(s: &str) -> bool {
    matches!(
        s,
        "completed" | "failed" | "timeout" | "closed" | "terminated"
    )
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Worker {
    pub id: String,
    pub correlation_id: String,
    pub name: String,
    pub spawned_at: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_activity_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Monitor {
    pub terminal_id: String,
    pub correlation_id: String,
    pub command: String,
    pub armed_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Closed {
    pub id: String,
    pub closed: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    pub v: u32,
    pub phase: Phase,
    pub phases_completed: Vec<Phase>,
    pub plan: String,
    pub worker_mode: String,
    pub expected_workers: u64,
    pub spawned_workers: Vec<Worker>,
    pub monitors: Vec<Monitor>,
    pub workers: Vec<Closed>,
    pub mission_n: u64,
    pub session_started_at: String,
    pub mission_started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflect: Option<String>,
    #[serde(default)]
    pub failure_cause: Value,
}

impl State {
    fn set_phase(&mut self, to: Phase) {
        if self.phase == to {
            return;
        }
        if !self.phases_completed.contains(&to) {
            self.phases_completed.push(to);
        }
        self.phase = to;
    }

    fn reflect_gate(&self) -> Result<(), OpenTerminals> {
        let open: Vec<&str> = self
            .spawned_workers
            .iter()
            .filter(|w| w.status != "closed")
            .map(|w| w.id.as_str())
            .collect();
        if open.is_empty() {
            Ok(())
        } else {
            Err(OpenTerminals(open.into_iter().map(str::to_owned).collect()))
        }
    }

    fn next_auto(&self) -> Option<Phase> {
        let w = &self.spawned_workers;
        let done = w.iter().filter(|w| terminal_status(&w.status)).count() as u64;
        match self.phase {
            Phase::Spawn => {
                let monitored = w
                    .iter()
                    .all(|w| self.monitors.iter().any(|m| m.terminal_id == w.id));
                (w.len() as u64 == self.expected_workers && monitored).then_some(Phase::Deploy)
            }
            Phase::Deploy => w
                .iter()
                .any(|w| w.status != "spawned")
                .then_some(Phase::Observe),
            Phase::Observe => match self.worker_mode.as_str() {
                "single" if done >= 1 => Some(Phase::Harvest),
                "fleet" if done >= self.expected_workers => Some(Phase::Harvest),
                _ => None,
            },
            Phase::Harvest => w
                .iter()
                .all(|w| terminal_status(&w.status))
                .then_some(Phase::Cleanup),
            Phase::Cleanup => self.reflect_gate().is_ok().then_some(Phase::Reflect),
            _ => None,
        }
    }
}

/// Writes the state file off the caller's thread: each change hands over its serialized
/// state with a version number; one thread at a time writes the newest and announces the
/// version written. Started when there is something to write, gone when there is not.
struct Saver {
    path: PathBuf,
    st: Mutex<Saving>,
    done: tokio::sync::watch::Sender<u64>,
}

struct Saving {
    latest: Option<(u64, Vec<u8>)>,
    requested: u64,
    running: bool,
}

impl Saver {
    fn lock(&self) -> std::sync::MutexGuard<'_, Saving> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn save(self: &Arc<Self>, text: Vec<u8>) {
        let mut st = self.lock();
        st.requested += 1;
        st.latest = Some((st.requested, text));
        if st.running {
            return;
        }
        st.running = true;
        drop(st);
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("claws-lifecycle".into())
            .spawn(move || me.run());
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no thread for the lifecycle state; writing it here");
            self.run();
        }
    }

    fn run(&self) {
        loop {
            let (v, text) = {
                let mut st = self.lock();
                match st.latest.take() {
                    Some(x) => x,
                    None => {
                        st.running = false;
                        return;
                    }
                }
            };
            if let Err(e) = openfiles_os::fsutil::write_atomic(&self.path, &text, 0o600) {
                tracing::warn!(error = %e, path = %self.path.display(), "lifecycle state not saved");
            }
            self.done.send_replace(v);
        }
    }

    /// Wait until every state handed over so far is written.
    async fn saved(&self) {
        let v = self.lock().requested;
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|d| *d >= v).await;
    }
}

pub struct Lifecycle {
    saver: Arc<Saver>,
    session_started_at: String,
    st: Mutex<Option<State>>,
    /// TTL bookkeeping of spawned workers by terminal id (this run only).
    ttl: Mutex<HashMap<String, Ttl>>,
}

/// When a worker was spawned, when its terminal last printed, how much it had printed.
#[derive(Debug, Clone, Copy)]
struct Ttl {
    spawned_ms: u64,
    active_ms: u64,
    seen_bytes: u64,
}

/// Why a worker expired, if it did: past its hard ceiling, or idle past its window.
fn expired(t: &Ttl, now: u64, idle_ms: u64, max_ms: u64) -> Option<CloseOrigin> {
    if now.saturating_sub(t.spawned_ms) > max_ms {
        Some(CloseOrigin::TtlMax)
    } else if now.saturating_sub(t.active_ms) > idle_ms {
        Some(CloseOrigin::IdleTimeout)
    } else {
        None
    }
}

impl Lifecycle {
    /// Load `.claws/lifecycle-state.json` (schema v3 only) and close workers left spawned.
    pub fn load(claws_dir: &Path) -> Lifecycle {
        let path = claws_dir.join("lifecycle-state.json");
        let mut state = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<State>(&b).ok())
            .filter(|s| s.v == 3 && !transitions(s.phase).is_empty() || s_phase_end(s));
        let l = Lifecycle {
            saver: Arc::new(Saver {
                path,
                st: Mutex::new(Saving {
                    latest: None,
                    requested: 0,
                    running: false,
                }),
                done: tokio::sync::watch::channel(0).0,
            }),
            session_started_at: iso_now(),
            st: Mutex::new(None),
            ttl: Mutex::new(HashMap::new()),
        };
        if let Some(s) = state.as_mut() {
            let now = iso_now();
            for w in &mut s.spawned_workers {
                if w.status == "spawned" {
                    w.status = "closed".into();
                    w.completed_at = Some(now.clone());
                }
            }
            for w in &mut s.workers {
                w.closed = true;
            }
            l.flush(s);
        }
        *l.st.lock().unwrap_or_else(|e| e.into_inner()) = state;
        l
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<State>> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hand the state to the saver (called under the state's lock, so versions follow the
    /// order of the changes).
    fn flush(&self, s: &State) {
        let mut text = serde_json::to_vec_pretty(s).unwrap_or_default();
        text.push(b'\n');
        self.saver.save(text);
    }

    /// Every change made so far is written (or its failure logged).
    pub async fn saved(&self) {
        self.saver.saved().await;
    }

    /// In a mission (PLAN … CLEANUP or FAILED): `create` passes the plan gate.
    pub fn has_plan(&self) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|s| !between_missions(s.phase))
    }

    /// Apply `f` to the state, persist, then auto-advance; the phase changes to announce.
    fn change<R>(&self, f: impl FnOnce(&mut State) -> R, reason: &str) -> (R, Vec<Value>) {
        let mut g = self.lock();
        let Some(s) = g.as_mut() else {
            drop(g);
            return (f(&mut self.blank()), Vec::new());
        };
        let r = f(s);
        let mut changes = Vec::new();
        for _ in 0..10 {
            let Some(next) = s.next_auto() else { break };
            if !can_transition(s.phase, next) {
                break;
            }
            let prev = s.phase;
            s.set_phase(next);
            changes.push(json!({"from": prev, "to": next, "reason": reason, "ts": iso_now()}));
        }
        self.flush(s);
        (r, changes)
    }

    fn blank(&self) -> State {
        State {
            v: 3,
            phase: Phase::SessionBoot,
            phases_completed: vec![Phase::SessionBoot],
            plan: String::new(),
            worker_mode: "single".into(),
            expected_workers: 0,
            spawned_workers: Vec::new(),
            monitors: Vec::new(),
            workers: Vec::new(),
            mission_n: 0,
            session_started_at: self.session_started_at.clone(),
            mission_started_at: String::new(),
            reflect: None,
            failure_cause: Value::Null,
        }
    }

    /// The TTL watchdog (every 30 s): a spawned worker whose terminal printed since the last
    /// scan is active; one idle past `idle_ms` (10 min) or alive past `max_ms` (4 h) has its
    /// terminal closed (origin `idle_timeout` / `ttl_max`), which marks it closed.
    pub fn watchdog(&self, shared: &Arc<ServerState>) {
        let now = now_ms();
        let workers: Vec<(String, u64, u64)> = self.lock().as_ref().map_or_else(Vec::new, |s| {
            s.spawned_workers
                .iter()
                .filter(|w| w.status == "spawned")
                .map(|w| {
                    let idle = w.idle_ms.unwrap_or(DEFAULT_IDLE_MS);
                    (w.id.clone(), idle, w.max_ms.unwrap_or(DEFAULT_MAX_MS))
                })
                .collect()
        });
        let mut due = Vec::new();
        {
            let mut ttl = self.ttl.lock().unwrap_or_else(|e| e.into_inner());
            for (id, idle, max) in workers {
                let Some(t) = ttl.get_mut(&id) else { continue };
                let term = id.parse::<u64>().ok().and_then(|n| shared.terminal(n));
                if let Some(end) = term.map(|t| t.extent().1) {
                    if end != t.seen_bytes {
                        t.seen_bytes = end;
                        t.active_ms = now;
                    }
                }
                if let Some(reason) = expired(t, now, idle, max) {
                    due.push((id, reason));
                }
            }
        }
        for (id, reason) in due {
            tracing::info!(terminal = %id, reason = reason.as_str(), "lifecycle worker expired; closing");
            if let Ok(n) = id.parse::<u64>() {
                shared.close_terminal(n, reason);
            }
        }
    }

    /// A worker's status changed (also: its terminal closed); null when it is not one.
    pub fn mark(&self, shared: &ServerState, terminal_id: &str, status: &str) -> Option<Worker> {
        let (w, changes) = self.change(
            |s| {
                let w = s.spawned_workers.iter_mut().find(|w| w.id == terminal_id)?;
                w.status = status.to_owned();
                if status != "spawned" {
                    w.completed_at = Some(iso_now());
                }
                let w = w.clone();
                for c in s.workers.iter_mut().filter(|c| c.id == terminal_id) {
                    c.closed = status == "closed";
                }
                Some(w)
            },
            &format!("mark-worker-status:{status}"),
        );
        announce(shared, changes);
        w
    }
}

/// A stored state at SESSION-END has no transitions but is still a valid file.
fn s_phase_end(s: &State) -> bool {
    s.v == 3 && s.phase == Phase::SessionEnd
}

fn announce(shared: &ServerState, changes: Vec<Value>) {
    for c in changes {
        shared.bus.publish_server("lifecycle.phase-changed", c);
    }
}

fn state_value(s: &Option<State>) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}

pub fn plan(shared: &ServerState, req: LifecyclePlan) -> Body {
    let text = req.plan.unwrap_or_default();
    if text.trim().is_empty() {
        return refuse(RefusalKind::PlanEmpty, "plan text must be non-empty");
    }
    let Some(mode) = req.worker_mode.filter(|m| !m.is_empty()) else {
        return refuse(
            RefusalKind::WorkerModeRequired,
            "workerMode required (single|fleet|army)",
        );
    };
    let n = match req.expected_workers.as_ref().and_then(Value::as_f64) {
        Some(n) if n >= 1.0 => n,
        _ => {
            return refuse(
                RefusalKind::ExpectedWorkersRequired,
                "expectedWorkers must be positive integer",
            )
        }
    };
    if !matches!(mode.as_str(), "single" | "fleet" | "army") {
        return refuse(
            RefusalKind::InvalidWorkerMode,
            &format!("must be single|fleet|army, got: {mode}"),
        );
    }
    if n.fract() != 0.0 {
        return refuse(
            RefusalKind::InvalidExpectedWorkers,
            "must be positive integer",
        );
    }
    let l = &shared.orch.lifecycle;
    let mut g = l.lock();
    let existing = g.as_ref().map(|s| s.phase);
    let mut s = g.take().unwrap_or_else(|| l.blank());
    let recovering = s.phase == Phase::Failed;
    let active = !between_missions(s.phase) && !recovering;
    if !active {
        let mission = if s.phase == Phase::Reflect || recovering {
            s.mission_n + 1
        } else {
            1
        };
        s.set_phase(Phase::Plan);
        s.plan = text.trim().to_owned();
        s.worker_mode = mode;
        s.expected_workers = n as u64;
        s.spawned_workers.clear();
        s.monitors.clear();
        s.workers.clear();
        s.mission_n = mission;
        s.mission_started_at = iso_now();
        s.reflect = None;
        if !recovering {
            s.failure_cause = Value::Null;
        }
        l.flush(&s);
    }
    let idempotent = existing.is_some_and(|p| !between_missions(p));
    *g = Some(s);
    Ok(obj(
        json!({"state": state_value(&g), "idempotent": idempotent}),
    ))
}

pub fn advance(shared: &ServerState, req: LifecycleAdvance) -> Body {
    let l = &shared.orch.lifecycle;
    let mut g = l.lock();
    let Some(s) = g.as_mut() else {
        return refuse(
            RefusalKind::PlanRequired,
            "no lifecycle state — call lifecycle.plan first",
        );
    };
    let asked = req.to.unwrap_or_default();
    let to = match Phase::parse(&asked) {
        Some(to) if can_transition(s.phase, to) => to,
        _ => return refuse(RefusalKind::InvalidTransition, &explain(s.phase, &asked)),
    };
    if s.phase == to {
        return Ok(obj(json!({"state": s, "idempotent": true})));
    }
    if to == Phase::Reflect {
        if let Err(reason) = s.reflect_gate() {
            return refuse(RefusalKind::ReflectGate, &reason.to_string());
        }
    }
    s.set_phase(to);
    l.flush(s);
    Ok(obj(json!({ "state": s })))
}

pub fn snapshot(shared: &ServerState) -> Body {
    Ok(obj(
        json!({"state": state_value(&shared.orch.lifecycle.lock())}),
    ))
}

pub fn reflect(shared: &ServerState, req: LifecycleReflect) -> Body {
    let text = req.reflect.unwrap_or_default();
    if text.trim().is_empty() {
        return refuse(RefusalKind::ReflectEmpty, "reflect text must be non-empty");
    }
    let l = &shared.orch.lifecycle;
    let mut g = l.lock();
    let Some(s) = g.as_mut() else {
        return refuse(RefusalKind::PlanRequired, "no lifecycle state");
    };
    if !can_transition(s.phase, Phase::Reflect) {
        return refuse(
            RefusalKind::InvalidTransition,
            &explain(s.phase, Phase::Reflect.as_str()),
        );
    }
    if let Err(reason) = s.reflect_gate() {
        return refuse(RefusalKind::ReflectGate, &reason.to_string());
    }
    s.set_phase(Phase::Reflect);
    s.reflect = Some(text.trim().to_owned());
    l.flush(s);
    Ok(obj(json!({ "state": s })))
}

pub fn register_spawn(shared: &ServerState, req: RegisterSpawn) -> Body {
    let (Some(tid), Some(corr), Some(name)) = (
        req.terminal_id.filter(|s| !s.is_empty()),
        req.correlation_id.filter(|s| !s.is_empty()),
        req.name.filter(|s| !s.is_empty()),
    ) else {
        return refuse(
            RefusalKind::RegisterSpawnArgs,
            "terminalId, correlationId, name required",
        );
    };
    let l = &shared.orch.lifecycle;
    if l.lock().is_none() {
        return refuse(RefusalKind::NoState, "lifecycle:no-state");
    }
    let now = now_ms();
    let (r, changes) = l.change(
        |s| {
            if let Some(w) = s.spawned_workers.iter().find(|w| w.id == tid) {
                if w.status == "spawned" && w.correlation_id == corr {
                    return Ok(w.clone());
                }
                if w.status == "spawned" {
                    return Err(format!(
                        "terminal {tid} already registered with different corrId"
                    ));
                }
            }
            let now = iso_now();
            let w = Worker {
                id: tid.clone(),
                correlation_id: corr.clone(),
                name: name.clone(),
                spawned_at: now.clone(),
                status: "spawned".into(),
                completed_at: None,
                idle_ms: Some(DEFAULT_IDLE_MS),
                max_ms: Some(DEFAULT_MAX_MS),
                last_activity_at: Some(now),
            };
            match s.spawned_workers.iter_mut().find(|x| x.id == tid) {
                Some(x) => *x = w.clone(),
                None => s.spawned_workers.push(w.clone()),
            }
            match s.workers.iter_mut().find(|x| x.id == tid) {
                Some(x) => x.closed = false,
                None => s.workers.push(Closed {
                    id: tid.clone(),
                    closed: false,
                }),
            }
            Ok(w)
        },
        "register-spawn",
    );
    announce(shared, changes);
    if r.is_ok() {
        l.ttl
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(tid.clone())
            .or_insert(Ttl {
                spawned_ms: now,
                active_ms: now,
                seen_bytes: 0,
            });
    }
    match r {
        Ok(w) => Ok(obj(json!({ "worker": w }))),
        Err(m) => refuse(RefusalKind::CorrelationIdConflict, &m),
    }
}

pub fn register_monitor(shared: &ServerState, req: RegisterMonitor) -> Body {
    let (Some(tid), Some(corr), Some(command)) = (
        req.terminal_id.filter(|s| !s.is_empty()),
        req.correlation_id.filter(|s| !s.is_empty()),
        req.command.filter(|s| !s.is_empty()),
    ) else {
        return refuse(
            RefusalKind::RegisterMonitorArgs,
            "terminalId, correlationId, command required",
        );
    };
    let l = &shared.orch.lifecycle;
    if l.lock().is_none() {
        return refuse(RefusalKind::NoState, "lifecycle:no-state");
    }
    let (m, changes) = l.change(
        |s| {
            s.monitors.retain(|m| m.terminal_id != tid);
            let m = Monitor {
                terminal_id: tid.clone(),
                correlation_id: corr.clone(),
                command: command.clone(),
                armed_at: iso_now(),
            };
            s.monitors.push(m.clone());
            m
        },
        "register-monitor",
    );
    announce(shared, changes);
    Ok(obj(json!({ "monitor": m })))
}

pub fn mark_worker_status(shared: &ServerState, req: MarkWorkerStatus) -> Body {
    let (Some(tid), Some(status)) = (
        req.terminal_id.filter(|s| !s.is_empty()),
        req.status.filter(|s| !s.is_empty()),
    ) else {
        return refuse(RefusalKind::MarkStatusArgs, "terminalId, status required");
    };
    let w = shared.orch.lifecycle.mark(shared, &tid, &status);
    Ok(obj(json!({ "worker": w })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_expiry() {
        let t = Ttl {
            spawned_ms: 0,
            active_ms: 1_000,
            seen_bytes: 0,
        };
        assert_eq!(expired(&t, 500_000, DEFAULT_IDLE_MS, DEFAULT_MAX_MS), None);
        assert_eq!(
            expired(&t, 700_000, DEFAULT_IDLE_MS, DEFAULT_MAX_MS),
            Some(CloseOrigin::IdleTimeout)
        );
        let busy = Ttl {
            active_ms: 14_400_000,
            ..t
        };
        assert_eq!(
            expired(&busy, 14_400_001, DEFAULT_IDLE_MS, DEFAULT_MAX_MS),
            Some(CloseOrigin::TtlMax)
        );
    }

    #[test]
    fn transition_table_and_explanations() {
        assert!(can_transition(Phase::Plan, Phase::Spawn));
        assert!(!can_transition(Phase::Plan, Phase::Observe));
        assert_eq!(
            explain(Phase::Plan, "OBSERVE"),
            "cannot go from PLAN to OBSERVE; allowed: SPAWN, FAILED"
        );
        assert_eq!(
            explain(Phase::SessionEnd, "PLAN"),
            "phase SESSION-END is terminal — no transitions allowed"
        );
    }
}
