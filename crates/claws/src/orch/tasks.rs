//! Tasks (`task.assign/update/complete/cancel/list`): an orchestrator assigns a task to a
//! worker peer, the worker reports progress and completion. Every change is announced by the
//! server on the bus and so persisted in the event log: `task.assigned.<assignee>` (the whole
//! record), `task.status`, `task.completed`, `task.cancel_requested.<assignee>`. A worker
//! that disconnects without a stable identity fails its open tasks (`task.completed`,
//! `status: failed`). Task ids are `t_001`, `t_002`, …; at most [`MAX_TASKS`] are kept, the
//! oldest finished ones forgotten first.

use openfiles_wire::claws::Role;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{json, Value};

use super::{obj, require_role, Body};
use crate::{now_ms, Connection, ServerState};
use openfiles_wire::claws::request::{TaskAssign, TaskCancel, TaskComplete, TaskList, TaskUpdate};

pub const MAX_TASKS: usize = 10_000;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    task_id: String,
    title: String,
    prompt: String,
    assignee: String,
    assigned_by: String,
    status: String,
    assigned_at: u64,
    updated_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    progress_pct: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    artifacts: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cancel_requested: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cancel_reason: Option<String>,
}

impl Task {
    fn finished(&self) -> bool {
        matches!(self.status.as_str(), "succeeded" | "failed" | "skipped")
    }
}

#[derive(Default)]
pub struct Tasks {
    st: Mutex<State>,
}

#[derive(Default)]
struct State {
    seq: u64,
    /// By number, so iteration is in assignment order.
    tasks: BTreeMap<u64, Task>,
}

impl State {
    fn find(&mut self, id: &str) -> Option<&mut Task> {
        let n = id.strip_prefix("t_")?.parse::<u64>().ok()?;
        self.tasks.get_mut(&n)
    }

    /// Task `id`, which must exist and be assigned to `peer` (update and complete).
    fn own(&mut self, id: &str, peer: &str) -> Result<&mut Task, NotOwned> {
        let t = self
            .find(id)
            .ok_or_else(|| NotOwned::NotFound(id.to_owned()))?;
        if t.assignee != peer {
            return Err(NotOwned::NotYours);
        }
        Ok(t)
    }
}

/// Why a worker cannot update or complete a task. The texts are the wire's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum NotOwned {
    #[error("task not found: {0}")]
    NotFound(String),
    #[error("not your task")]
    NotYours,
}

impl From<NotOwned> for openfiles_wire::claws::Failure {
    fn from(e: NotOwned) -> openfiles_wire::claws::Failure {
        e.to_string().into()
    }
}

impl Tasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Who a task is assigned to.
    pub fn assignee(&self, task_id: &str) -> Option<String> {
        self.lock().find(task_id).map(|t| t.assignee.clone())
    }

    /// A worker left for good: fail its open tasks. Returns the events to announce.
    pub fn peer_left(&self, peer_id: &str) -> Vec<Value> {
        let mut st = self.lock();
        let now = now_ms();
        let mut out = Vec::new();
        for t in st.tasks.values_mut() {
            if t.assignee == peer_id && !t.finished() {
                t.status = "failed".into();
                t.note = Some("assignee disconnected".into());
                t.updated_at = now;
                out.push(json!({"taskId": t.task_id, "status": "failed", "result": Value::Null}));
            }
        }
        out
    }
}

pub fn assign(shared: &Arc<ServerState>, conn: &Connection, req: TaskAssign) -> Body {
    let me = require_role(shared, conn, &[Role::Orchestrator])?;
    let (Some(title), Some(assignee), Some(prompt)) = (
        req.title.filter(|s| !s.is_empty()),
        req.assignee.filter(|s| !s.is_empty()),
        req.prompt.filter(|s| !s.is_empty()),
    ) else {
        return Err("title, assignee, and prompt are required".into());
    };
    let Some(peer) = shared.bus.peer_by_id(&assignee) else {
        return Err(format!("assignee peer not found: {assignee}").into());
    };
    let now = now_ms();
    let task = {
        let mut st = shared.orch.tasks.lock();
        st.seq += 1;
        let n = st.seq;
        let task = Task {
            task_id: format!("t_{n:03}"),
            title,
            prompt: prompt.clone(),
            assignee: assignee.clone(),
            assigned_by: me.peer_id,
            status: "pending".into(),
            assigned_at: now,
            updated_at: now,
            timeout_ms: req.timeout_ms,
            progress_pct: None,
            note: None,
            result: None,
            artifacts: None,
            completed_at: None,
            cancel_requested: None,
            cancel_reason: None,
        };
        st.tasks.insert(n, task.clone());
        while st.tasks.len() > MAX_TASKS {
            let old = st.tasks.iter().find(|(_, t)| t.finished()).map(|(k, _)| *k);
            let Some(k) = old.or_else(|| st.tasks.keys().next().copied()) else {
                break;
            };
            st.tasks.remove(&k);
        }
        task
    };
    let deliver = req.deliver.unwrap_or_else(|| "publish".into());
    if deliver == "publish" || deliver == "both" {
        let record = serde_json::to_value(&task).unwrap_or(Value::Null);
        shared
            .bus
            .publish_server(&format!("task.assigned.{assignee}"), record);
    }
    if deliver == "inject" || deliver == "both" {
        let term = peer
            .terminal_id
            .as_deref()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .and_then(|id| shared.terminal(id));
        if let Some(t) = term {
            if let Err(e) = t.send(&prompt, true, true) {
                tracing::warn!("task prompt: {e}");
            }
        }
    }
    Ok(obj(json!({"taskId": task.task_id, "assignedAt": now})))
}

pub fn update(shared: &ServerState, conn: &Connection, req: TaskUpdate) -> Body {
    let me = require_role(shared, conn, &[Role::Worker])?;
    let id = req.task_id.unwrap_or_default();
    let event = {
        let mut st = shared.orch.tasks.lock();
        let t = st.own(&id, &me.peer_id)?;
        if t.finished() {
            return Err("task already completed".into());
        }
        if let Some(s) = req.status {
            t.status = s;
        }
        if req.progress_pct.is_some() {
            t.progress_pct = req.progress_pct;
        }
        if req.note.is_some() {
            t.note = req.note;
        }
        t.updated_at = now_ms();
        json!({"taskId": t.task_id, "assignee": t.assignee, "status": t.status,
               "progressPct": t.progress_pct, "note": t.note})
    };
    shared.bus.publish_server("task.status", event);
    Ok(obj(json!({})))
}

pub fn complete(shared: &ServerState, conn: &Connection, req: TaskComplete) -> Body {
    let me = require_role(shared, conn, &[Role::Worker])?;
    let id = req.task_id.unwrap_or_default();
    let event = {
        let mut st = shared.orch.tasks.lock();
        let t = st.own(&id, &me.peer_id)?;
        if t.finished() {
            return Ok(obj(json!({})));
        }
        let now = now_ms();
        t.status = req.status.unwrap_or_else(|| "succeeded".into());
        t.result = req.result;
        t.artifacts = req.artifacts;
        t.completed_at = Some(now);
        t.updated_at = now;
        json!({"taskId": t.task_id, "status": t.status, "result": t.result,
               "artifacts": t.artifacts})
    };
    shared.bus.publish_server("task.completed", event);
    Ok(obj(json!({})))
}

pub fn cancel(shared: &ServerState, conn: &Connection, req: TaskCancel) -> Body {
    require_role(shared, conn, &[Role::Orchestrator])?;
    let id = req.task_id.unwrap_or_default();
    let (assignee, event) = {
        let mut st = shared.orch.tasks.lock();
        let Some(t) = st.find(&id) else {
            return Err(format!("task not found: {id}").into());
        };
        t.cancel_requested = Some(true);
        t.cancel_reason = req.reason.clone();
        t.updated_at = now_ms();
        (
            t.assignee.clone(),
            json!({"taskId": t.task_id, "reason": req.reason}),
        )
    };
    shared
        .bus
        .publish_server(&format!("task.cancel_requested.{assignee}"), event);
    Ok(obj(json!({})))
}

pub fn list(shared: &ServerState, req: TaskList) -> Body {
    let st = shared.orch.tasks.lock();
    let tasks: Vec<&Task> = st
        .tasks
        .values()
        .filter(|t| req.assignee.as_ref().is_none_or(|a| &t.assignee == a))
        .filter(|t| req.status.as_ref().is_none_or(|s| &t.status == s))
        .filter(|t| req.since.is_none_or(|s| t.updated_at >= s))
        .collect();
    Ok(obj(json!({ "tasks": tasks })))
}
