//! Typed RPC between peers (`rpc.call`): the caller's request is pushed to the target as
//! `rpc.<targetPeerId>.request` (`{requestId, method, params, callerPeerId}`) and the call
//! stays open until the target publishes on `rpc.response.<callerPeerId>.<requestId>` (the
//! answer is `{requestId, result: <that payload>}`) or the timeout passes (default 5 s:
//! `rpc.call:timeout`). A pending call is removed on answer or timeout, so the map never
//! outgrows the calls in flight.

use openfiles_wire::claws::RefusalKind;
use openfiles_wire::claws::Role;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::{obj, refusal, require_role, Body};
use crate::{uuid, Connection, ServerState};
use openfiles_wire::claws::request::RpcCall;

pub const DEFAULT_TIMEOUT_MS: u64 = 5000;

#[derive(Default)]
pub struct Rpc {
    pending: Mutex<HashMap<String, (String, oneshot::Sender<Value>)>>,
}

impl Rpc {
    /// A publish on `topic` answers a pending call when it is
    /// `rpc.response.<callerPeerId>.<requestId>`.
    pub fn answer(&self, topic: &str, payload: &Value) {
        let Some(rest) = topic.strip_prefix("rpc.response.") else {
            return;
        };
        let Some((caller, id)) = rest.rsplit_once('.') else {
            return;
        };
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if p.get(id).is_some_and(|(c, _)| c == caller) {
            if let Some((_, tx)) = p.remove(id) {
                let _ = tx.send(payload.clone());
            }
        }
    }

    fn forget(&self, id: &str) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

pub async fn call(shared: &ServerState, conn: &Connection, req: RpcCall) -> Body {
    let me = require_role(
        shared,
        conn,
        &[Role::Orchestrator, Role::Worker, Role::Observer],
    )?;
    let Some(target) = req.target_peer_id.filter(|s| !s.is_empty()) else {
        return Err("rpc.call:missing-targetPeerId".into());
    };
    let Some(method) = req.method.filter(|s| !s.is_empty()) else {
        return Err("rpc.call:missing-method".into());
    };
    if shared.bus.peer_by_id(&target).is_none() {
        return Err(format!("rpc.call:target-not-found:{target}").into());
    }
    let id = uuid();
    let (tx, rx) = oneshot::channel();
    shared
        .orch
        .rpc
        .pending
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id.clone(), (me.peer_id.clone(), tx));
    let frame = json!({"requestId": id, "method": method,
                       "params": req.params.unwrap_or_else(|| json!({})),
                       "callerPeerId": me.peer_id});
    shared.bus.push_to(
        &target,
        &format!("rpc.{target}.request"),
        &me.peer_id,
        &frame,
        None,
    );
    let ms = req.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    match tokio::time::timeout(Duration::from_millis(ms), rx).await {
        Ok(Ok(result)) => Ok(obj(json!({"requestId": id, "result": result}))),
        _ => {
            shared.orch.rpc.forget(&id);
            Ok(refusal(RefusalKind::RpcTimeout, json!({ "requestId": id })))
        }
    }
}
