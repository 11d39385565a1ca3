//! Pipelines (`pipeline.create/list/close`): a named route from a source terminal's output
//! events to a sink terminal's input. A publish on `output.<sourceTerminalId>.*` types the
//! payload's `text` (else its JSON) into every active pipeline's sink terminal and announces
//! `pipeline.<id>.step.<stepId>`; creation and closing announce `pipeline.<id>.created` and
//! `.closed`. Ids are `pipe_0001`, …; steps `pipe_0001_step_0`, …. At most [`MAX_PIPELINES`]
//! are kept (the oldest closed ones forgotten first).

use openfiles_wire::claws::Role;
use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{json, Value};

use super::{obj, require_role, Body};
use crate::{iso_now, Connection, ServerState};
use openfiles_wire::claws::request::{PipelineClose, PipelineCreate};

pub const MAX_PIPELINES: usize = 1000;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    step_id: String,
    role: String,
    terminal_id: String,
    state: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pipeline {
    pipeline_id: String,
    name: String,
    steps: Vec<Step>,
    state: String,
    created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    closed_at: Option<String>,
}

#[derive(Default)]
pub struct Pipelines {
    st: Mutex<(u64, BTreeMap<u64, Pipeline>)>,
}

impl Pipelines {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, BTreeMap<u64, Pipeline>)> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Route a publish on `output.<source>.*`: (sink terminal, text, step event) for every
    /// active pipeline with that source.
    pub fn route(&self, topic: &str, payload: &Value) -> Vec<(String, String, String, Value)> {
        let Some(source) = topic
            .strip_prefix("output.")
            .and_then(|r| r.split_once('.'))
            .map(|(s, _)| s)
        else {
            return Vec::new();
        };
        let text = payload
            .get("text")
            .and_then(Value::as_str)
            .map_or_else(|| payload.to_string(), str::to_owned);
        let st = self.lock();
        let mut out = Vec::new();
        for p in st.1.values().filter(|p| p.state == "active") {
            let src = p.steps.iter().find(|s| s.role == "source");
            let sink = p.steps.iter().find(|s| s.role == "sink");
            let (Some(src), Some(sink)) = (src, sink) else {
                continue;
            };
            if src.terminal_id != source {
                continue;
            }
            let ev = json!({"pipelineId": p.pipeline_id, "stepId": src.step_id, "role": "source",
                            "terminalId": source, "state": "active", "ts": iso_now()});
            out.push((
                sink.terminal_id.clone(),
                text.clone(),
                format!("pipeline.{}.step.{}", p.pipeline_id, src.step_id),
                ev,
            ));
        }
        out
    }
}

pub fn create(shared: &ServerState, conn: &Connection, req: PipelineCreate) -> Body {
    require_role(shared, conn, &[Role::Orchestrator])?;
    let steps: Vec<(String, String)> = req
        .steps
        .as_ref()
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|s| {
                    let role = s
                        .get("role")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let tid = match s.get("terminalId") {
                        Some(Value::String(t)) => t.clone(),
                        Some(Value::Number(n)) => n.to_string(),
                        _ => String::new(),
                    };
                    (role, tid)
                })
                .collect()
        })
        .unwrap_or_default();
    if steps.len() < 2 {
        return Err("pipeline.create:steps-required (min 2 steps)".into());
    }
    if !steps.iter().any(|s| s.0 == "source") {
        return Err("pipeline.create:source-step-required".into());
    }
    if !steps.iter().any(|s| s.0 == "sink") {
        return Err("pipeline.create:sink-step-required".into());
    }
    let p = {
        let mut st = shared.orch.pipelines.lock();
        st.0 += 1;
        let n = st.0;
        let id = format!("pipe_{n:04}");
        let p = Pipeline {
            steps: steps
                .into_iter()
                .enumerate()
                .map(|(i, (role, terminal_id))| Step {
                    step_id: format!("{id}_step_{i}"),
                    role,
                    terminal_id,
                    state: "active".into(),
                })
                .collect(),
            pipeline_id: id,
            name: req.name.unwrap_or_else(|| "pipeline".into()),
            state: "active".into(),
            created_at: iso_now(),
            closed_at: None,
        };
        st.1.insert(n, p.clone());
        while st.1.len() > MAX_PIPELINES {
            let old =
                st.1.iter()
                    .find(|(_, p)| p.state == "closed")
                    .map(|(k, _)| *k);
            let Some(k) = old.or_else(|| st.1.keys().next().copied()) else {
                break;
            };
            st.1.remove(&k);
        }
        p
    };
    shared.bus.publish_server(
        &format!("pipeline.{}.created", p.pipeline_id),
        json!({"pipelineId": p.pipeline_id, "name": p.name, "steps": p.steps,
               "state": p.state, "createdAt": p.created_at}),
    );
    Ok(obj(json!({"pipelineId": p.pipeline_id, "pipeline": p})))
}

pub fn list(shared: &ServerState) -> Body {
    let st = shared.orch.pipelines.lock();
    let all: Vec<&Pipeline> = st.1.values().collect();
    Ok(obj(json!({ "pipelines": all })))
}

pub fn close(shared: &ServerState, conn: &Connection, req: PipelineClose) -> Body {
    require_role(shared, conn, &[Role::Orchestrator])?;
    let Some(id) = req.pipeline_id.filter(|s| !s.is_empty()) else {
        return Err("pipeline.close:pipelineId-required".into());
    };
    let closed = {
        let mut st = shared.orch.pipelines.lock();
        let Some(p) = st.1.values_mut().find(|p| p.pipeline_id == id) else {
            return Err(format!("pipeline.close:not-found:{id}").into());
        };
        p.state = "closed".into();
        p.closed_at = Some(iso_now());
        for s in &mut p.steps {
            s.state = "closed".into();
        }
        p.clone()
    };
    shared.bus.publish_server(
        &format!("pipeline.{id}.closed"),
        json!({"pipelineId": id, "state": "closed", "closedAt": closed.closed_at,
               "steps": closed.steps}),
    );
    Ok(obj(json!({ "pipelineId": id })))
}
