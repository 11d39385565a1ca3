//! Typed requests of the claws/2 orchestration layer (command channel, tasks, lifecycle,
//! monitors, waves, pipelines, RPC, schemas), decoded as leniently as the claws/1 ones: a
//! field of the wrong type reads as absent, numbers may come as strings. Field names are the
//! editor extension's (camelCase; `correlation_id` is snake_case where the extension's
//! clients send it so).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lenient::{boolean, id, number, string, strings};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DeliverCmd {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub target_peer_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub cmd_topic: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CmdAck {
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(
        rename = "correlation_id",
        deserialize_with = "string",
        skip_serializing_if = "Option::is_none"
    )]
    pub correlation_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskAssign {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub deliver: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskUpdate {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Kept as sent (a number).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_pct: Option<Value>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskComplete {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskCancel {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TaskList {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub since: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LifecyclePlan {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub worker_mode: Option<String>,
    /// Checked by the handler: a positive integer (a string does not count, as in the
    /// extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_workers: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LifecycleAdvance {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LifecycleReflect {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub reflect: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RegisterSpawn {
    #[serde(deserialize_with = "id", skip_serializing_if = "Option::is_none")]
    pub terminal_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RegisterMonitor {
    #[serde(deserialize_with = "id", skip_serializing_if = "Option::is_none")]
    pub terminal_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MarkWorkerStatus {
    #[serde(deserialize_with = "id", skip_serializing_if = "Option::is_none")]
    pub terminal_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// `monitors.*`: the correlation id (`correlation_id`, as the extension's monitors send it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Correlation {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WaveCreate {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub wave_id: Option<String>,
    #[serde(deserialize_with = "strings", skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<String>>,
    #[serde(deserialize_with = "strings", skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WaveRef {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub wave_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WaveComplete {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub wave_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(deserialize_with = "strings", skip_serializing_if = "Option::is_none")]
    pub commits: Option<Vec<String>>,
    #[serde(deserialize_with = "boolean", skip_serializing_if = "Option::is_none")]
    pub regression_clean: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PipelineCreate {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Checked by the handler: `[{role: "source"|"sink", terminalId}]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PipelineClose {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub pipeline_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RpcCall {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub target_peer_id: Option<String>,
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(deserialize_with = "number", skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SchemaGet {
    #[serde(deserialize_with = "string", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
