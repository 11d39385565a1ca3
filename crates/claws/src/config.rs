//! `[claws]` of the service's configuration: the Claws server's settings, with the editor
//! extension's spellings accepted as aliases ([`ClawsConfig::effective`] folds them in).
//! Owned here so the Claws crate stands alone; the service's `config` module embeds it.

use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};

fn exec_timeout_range<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = u64::deserialize(d)?;
    if !(1..=86_400_000).contains(&v) {
        return Err(serde::de::Error::custom(format!(
            "exec_timeout_ms must be between 1 and 86400000 (24 h), got {v}"
        )));
    }
    Ok(v)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClawsConfig {
    /// Serve `.claws/claws.sock` in every workspace.
    pub enabled: bool,
    /// Capture ring size per wrapped terminal, bytes (the extension's `maxCaptureBytes`).
    pub ring_bytes: usize,
    /// Live terminals per workspace.
    pub max_terminals: usize,
    /// Default `exec` timeout (1 ms to 24 h; 0 would time out every `exec` at once).
    #[serde(deserialize_with = "exec_timeout_range")]
    pub exec_timeout_ms: u64,
    /// Upper bound on `poll` results.
    pub poll_limit: usize,
    /// History events kept for `poll` (the extension's `maxHistory`).
    pub history_events: usize,
    /// Bytes of output kept per history event (the extension's `maxOutputBytes`).
    pub history_output_bytes: usize,
    /// Bus event log: rotate a segment past this size.
    pub event_segment_bytes: u64,
    /// Bus event log: total size kept.
    pub event_log_bytes: u64,
    /// Bus event log: rotate a segment older than this many seconds.
    pub event_segment_seconds: u64,
    /// Bus: push frames queued per peer before further ones are dropped (and counted).
    pub peer_queue_frames: usize,
    /// Bus: bytes of push frames queued per peer before drops (a stuck subscriber of large
    /// publishes is bounded in memory, not only in frames).
    pub peer_queue_bytes: usize,
    /// Bus: bytes of push frames queued for all peers of the service together.
    pub total_queue_bytes: usize,
    /// Bus: milliseconds between `system.heartbeat` (and `system.metrics`) events; 0: none.
    pub heartbeat_interval_ms: u64,
    /// Deprecated spelling of `heartbeat_interval_ms` in seconds; wins when set.
    pub heartbeat_seconds: Option<u64>,
    /// Unwrapped terminals: `<id>.log` is rotated to `<id>.log.1` at this size (0: no cap).
    pub terminal_log_bytes: u64,
    /// Default of `create`'s `opost`: keep the tty's output processing (`\n` → `\r\n`).
    /// Off is faster for output only machines read, but programs' `\n` stays a bare `\n`.
    pub opost: bool,
    /// The extension's `socketPath`: accepted; only the default is served (clients find the
    /// socket there).
    pub socket_path: String,
    /// The extension's `logDirectory`: accepted; only the default is used.
    pub log_directory: String,
    /// `create` without `wrapped` makes a wrapped terminal.
    pub default_wrapped: bool,
    /// Aliases of `history_output_bytes`, `history_events` and `ring_bytes` under the
    /// extension's names; win when set.
    pub max_output_bytes: Option<usize>,
    pub max_history: Option<usize>,
    pub max_capture_bytes: Option<usize>,
    /// Publishing an event that fails its topic's schema is refused (`payload:invalid`)
    /// instead of only announced on `system.malformed.received`.
    pub strict_event_validation: bool,
    /// Who may publish where (event-protocol §10): `system.*` the server's, `cmd.*` the
    /// orchestrator's, `worker.<id>.*` that worker's, `task.<id>.*` its assignee's. Off by
    /// default, as in the editor extension, whose own MCP server publishes across them.
    pub strict_topics: bool,
    /// Publishes per second allowed to one non-orchestrator peer (`rate-limit-exceeded`).
    pub max_publish_rate_hz: u64,
    /// Publishes in flight past which new ones are refused (`admission-control:backlog`).
    pub max_queue_depth: usize,
    /// The extension's flat WebSocket settings (`enableWebSocket`, `webSocketPort`); win
    /// over `[claws.web_socket]` when set.
    pub enable_web_socket: Option<bool>,
    pub web_socket_port: Option<u16>,
    pub event_log: ClawsEventLogConfig,
    pub auth: ClawsAuthConfig,
    pub web_socket: ClawsWebSocketConfig,
    pub lifecycle: ClawsLifecycleConfig,
}

/// `[claws.event_log]`: retention and compaction of the bus event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClawsEventLogConfig {
    /// Segments older than this many days are deleted (checked every heartbeat); 0: keep.
    pub retention_days: u64,
    /// At start, remove empty segments left by earlier runs.
    pub compact: bool,
}

impl Default for ClawsEventLogConfig {
    fn default() -> Self {
        ClawsEventLogConfig {
            retention_days: 7,
            compact: true,
        }
    }
}

/// `[claws.auth]`: HMAC tokens on `hello`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClawsAuthConfig {
    pub enabled: bool,
    /// The shared secret's file: an absolute path outside every workspace, named only by
    /// the user's own config. Unset (the default): one per workspace in the user's state
    /// folder, made when missing (the `secret` module; `openfiles claws token` prints it).
    pub token_path: Option<PathBuf>,
}

/// `[claws.web_socket]`: the optional WebSocket listener beside the Unix socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClawsWebSocketConfig {
    pub enabled: bool,
    pub port: u16,
    /// Address to listen on; anything but loopback requires `[claws.auth] enabled`.
    pub host: String,
    /// Both set: `wss://` with this certificate chain and key (PEM; regular files of at most
    /// 1 MiB). An empty string is unset.
    pub cert_path: Option<PathBuf>,
    pub key_path: Option<PathBuf>,
    /// Browser origins allowed to connect (`"http://localhost:3000"`); a handshake that
    /// carries any other `Origin` — every web page sends one, Claws's own clients none — is
    /// refused.
    pub allowed_origins: Vec<String>,
}

impl Default for ClawsWebSocketConfig {
    fn default() -> Self {
        ClawsWebSocketConfig {
            enabled: false,
            port: 9876,
            host: "127.0.0.1".to_owned(),
            cert_path: None,
            key_path: None,
            allowed_origins: Vec::new(),
        }
    }
}

/// `[claws.lifecycle]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClawsLifecycleConfig {
    /// Refuse `create` with `lifecycle:plan-required` until `lifecycle.plan` (the
    /// extension's behaviour; off so plain claws/1 clients can create terminals).
    pub require_plan: bool,
}

impl Default for ClawsConfig {
    fn default() -> Self {
        ClawsConfig {
            enabled: true,
            ring_bytes: 8 << 20,
            max_terminals: 64,
            exec_timeout_ms: 180_000,
            poll_limit: 100,
            history_events: 500,
            history_output_bytes: 256 << 10,
            event_segment_bytes: 8 << 20,
            event_log_bytes: 256 << 20,
            event_segment_seconds: 3600,
            peer_queue_frames: 4096,
            peer_queue_bytes: 8 << 20,
            total_queue_bytes: 64 << 20,
            heartbeat_interval_ms: 60_000,
            heartbeat_seconds: None,
            terminal_log_bytes: 64 << 20,
            opost: true,
            socket_path: ".claws/claws.sock".to_owned(),
            log_directory: ".claws/terminals".to_owned(),
            default_wrapped: false,
            max_output_bytes: None,
            max_history: None,
            max_capture_bytes: None,
            strict_event_validation: false,
            strict_topics: false,
            max_publish_rate_hz: 10_000,
            max_queue_depth: 500,
            enable_web_socket: None,
            web_socket_port: None,
            event_log: ClawsEventLogConfig::default(),
            auth: ClawsAuthConfig::default(),
            web_socket: ClawsWebSocketConfig::default(),
            lifecycle: ClawsLifecycleConfig::default(),
        }
    }
}

impl ClawsConfig {
    /// The settings with the extension's aliases folded into ours.
    pub fn effective(&self) -> ClawsConfig {
        let mut c = self.clone();
        if let Some(s) = c.heartbeat_seconds {
            c.heartbeat_interval_ms = s.saturating_mul(1000);
        }
        if let Some(v) = c.max_output_bytes {
            c.history_output_bytes = v;
        }
        if let Some(v) = c.max_history {
            c.history_events = v;
        }
        if let Some(v) = c.max_capture_bytes {
            c.ring_bytes = v;
        }
        if let Some(v) = c.enable_web_socket {
            c.web_socket.enabled = v;
        }
        if let Some(v) = c.web_socket_port {
            c.web_socket.port = v;
        }
        // `cert_path = ""` (as Claws's suites write it) is unset, not a file named "".
        let set = |p: &Option<PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
        c.web_socket.cert_path = set(&c.web_socket.cert_path);
        c.web_socket.key_path = set(&c.web_socket.key_path);
        c
    }
}
