//! Typed Claws answers, as the requests are typed: the server builds the answer bodies of
//! the claws/1 terminal commands from these and clients read them back, so a field spelled
//! differently on one side is a compile error. Field order is the wire's (the answer's keys
//! come in this order). Reading is forgiving (`default`), as a client may speak to the
//! editor extension, whose answers carry fewer fields.
//!
//! [`Answered`] names each request's answer; `ping` answers [`Pong`], `list` [`TerminalList`].

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Close, Create, Exec, Hello, Poll, ReadLog, Send, Subscribe, Unsubscribe};

/// A request that names its answer's body.
pub trait Answered {
    type Reply: Serialize + DeserializeOwned;
}

impl Answered for Create {
    type Reply = Created;
}
impl Answered for Send {
    type Reply = Sent;
}
impl Answered for Exec {
    type Reply = ExecReply;
}
impl Answered for ReadLog {
    type Reply = LogPage;
}
impl Answered for Poll {
    type Reply = PollReply;
}
impl Answered for Close {
    type Reply = Closed;
}
impl Answered for Hello {
    type Reply = HelloReply;
}
impl Answered for Subscribe {
    type Reply = Subscribed;
}
impl Answered for Unsubscribe {
    type Reply = Unsubscribed;
}

/// `hello` (claws/2): the peer's id, what the server offers, the orchestrators present,
/// and the subscriptions a stable peer got back; `idempotent` on a second `hello`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HelloReply {
    pub peer_id: String,
    pub server_capabilities: Vec<String>,
    pub root_orchestrator_present: bool,
    pub orchestrator_present: bool,
    pub restored: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub idempotent: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored_subscriptions: Option<Vec<Subscription>>,
}

/// A subscription by id and pattern.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Subscription {
    pub subscription_id: String,
    pub topic: String,
}

/// `subscribe`: the subscription, and the cursor its replay (if any) ends at.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Subscribed {
    pub subscription_id: String,
    pub topic: String,
    pub resume_cursor: String,
}

/// `unsubscribe`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Unsubscribed {
    pub subscription_id: String,
}

/// `ping`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Pong {
    pub server_time: u64,
}

/// `list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TerminalList {
    pub terminals: Vec<TerminalEntry>,
}

/// One terminal in `list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TerminalEntry {
    pub id: String,
    pub name: String,
    pub pid: Option<u32>,
    pub pty_pid: Option<u32>,
    pub has_shell_integration: bool,
    pub active: bool,
    pub log_path: Option<PathBuf>,
    pub wrapped: bool,
    pub pty_mode: String,
    /// `running` or `exited`.
    pub status: String,
    pub exit_code: Option<i32>,
    pub shell_state: String,
    pub vehicle_state: String,
}

/// `create`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Created {
    pub id: String,
    pub wrapped: bool,
    pub log_path: Option<PathBuf>,
    pub pid: Option<u32>,
}

/// `send`: `wrapped` or `unwrapped`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sent {
    pub mode: String,
}

/// One finished command, as `exec` and `poll` return it (an event without an exit code
/// does not read as one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEvent {
    #[serde(default)]
    pub seq: u64,
    #[serde(default)]
    pub terminal_id: String,
    #[serde(default)]
    pub terminal_name: String,
    #[serde(default)]
    pub command_line: String,
    #[serde(default)]
    pub output: String,
    pub exit_code: i32,
    #[serde(default)]
    pub started_at: u64,
    #[serde(default)]
    pub ended_at: u64,
}

/// `exec`: the finished command, or `degraded` (no shell integration: nothing captured)
/// with a note.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExecReply {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<HistoryEvent>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub degraded: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `readLog`: one page of a wrapped terminal's output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LogPage {
    pub bytes: String,
    pub offset: u64,
    pub next_offset: u64,
    pub total_size: u64,
    pub buffer_start: u64,
    pub truncated: bool,
    /// Always null here (the extension named its log file).
    pub log_path: Option<PathBuf>,
}

/// `poll`: finished commands after a cursor.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PollReply {
    pub events: Vec<HistoryEvent>,
    pub cursor: u64,
    pub limit: usize,
    pub truncated: bool,
}

/// `close`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Closed {
    pub already_closed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes are the ones the server wrote before these types: keys in this order,
    /// absent optional parts left out, nulls kept where the answer always had them.
    #[test]
    fn answers_keep_their_bytes_and_read_back() {
        let entry = TerminalEntry {
            id: "1".into(),
            name: "b".into(),
            pid: Some(42),
            pty_pid: Some(42),
            has_shell_integration: true,
            active: false,
            log_path: None,
            wrapped: false,
            pty_mode: "pty".into(),
            status: "running".into(),
            exit_code: None,
            shell_state: "prompt".into(),
            vehicle_state: "READY".into(),
        };
        assert_eq!(
            serde_json::to_string(&entry).unwrap(),
            r#"{"id":"1","name":"b","pid":42,"ptyPid":42,"hasShellIntegration":true,"active":false,"logPath":null,"wrapped":false,"ptyMode":"pty","status":"running","exitCode":null,"shellState":"prompt","vehicleState":"READY"}"#
        );
        let degraded = ExecReply {
            degraded: true,
            note: Some("n".into()),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&degraded).unwrap(),
            r#"{"degraded":true,"note":"n"}"#
        );
        let page = LogPage {
            bytes: "x".into(),
            offset: 0,
            next_offset: 1,
            total_size: 1,
            buffer_start: 0,
            truncated: false,
            log_path: None,
        };
        assert_eq!(
            serde_json::to_string(&page).unwrap(),
            r#"{"bytes":"x","offset":0,"nextOffset":1,"totalSize":1,"bufferStart":0,"truncated":false,"logPath":null}"#
        );
        let first = HelloReply {
            peer_id: "p_1".into(),
            server_capabilities: vec!["push".into()],
            restored_subscriptions: Some(vec![]),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&first).unwrap(),
            r#"{"peerId":"p_1","serverCapabilities":["push"],"rootOrchestratorPresent":false,"orchestratorPresent":false,"restored":false,"restoredSubscriptions":[]}"#
        );
        let again = HelloReply {
            idempotent: true,
            restored_subscriptions: None,
            ..first
        };
        assert_eq!(
            serde_json::to_string(&again).unwrap(),
            r#"{"peerId":"p_1","serverCapabilities":["push"],"rootOrchestratorPresent":false,"orchestratorPresent":false,"restored":false,"idempotent":true}"#
        );
        // An answer with fewer fields (the editor extension's) still reads.
        let short: TerminalList =
            serde_json::from_str(r#"{"terminals":[{"id":"3","name":"x","pid":null}]}"#).unwrap();
        assert_eq!(short.terminals[0].id, "3");
        assert_eq!(short.terminals[0].pid, None);
    }
}
