//! The wire protocol between the daemon and an `openfiles plugin-host` child.
//!
//! Framing: newline-delimited JSON, one object per line, UTF-8, over the child's stdin
//! (daemon → host, [`ToHost`]) and stdout (host → daemon, [`FromHost`]). The child's stderr
//! is free text and goes to the daemon's log. Both directions are tagged with `op`.
//!
//! Order: the host first loads the library and sends `hello` (or `refused` and exits);
//! the daemon answers `init` (or `shutdown`, when the plugin is disabled or a duplicate);
//! the host answers `ready` with the capabilities (or `failed`). After that the daemon
//! sends `check` (each with an id unique in this host process; several may be in flight,
//! answers come in any order as `result`, each with the programs the plugin started since
//! its previous one), `cancel`, and finally `shutdown`; EOF on stdin also means shutdown.
//! `query` (a code-navigation question, its id from the same counter) is answered by
//! `answer`, on a thread of its own, never queued behind checks. Trust: the host is our own
//! binary, but it runs third-party code,
//! so the daemon treats every line as untrusted input (a bad line is logged, not fatal).

use serde::{Deserialize, Serialize};

use openfiles_plugin_api::query::{QueryAnswer, QueryRequest};
use openfiles_plugin_api::{Capabilities, CheckRequest, CheckResponse, Init};

/// Daemon → host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum ToHost {
    Init { init: Init },
    Check { request: CheckRequest },
    Cancel { id: u64 },
    Query { request: QueryRequest },
    Shutdown,
}

/// Host → daemon.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum FromHost {
    /// The library loaded and its table is valid.
    Hello {
        name: String,
        version: String,
        pid: u32,
    },
    /// The library was refused; `kind` is `load-error`, `missing-symbol`, `abi-mismatch` or
    /// `bad-table`. The host exits after sending it.
    Refused { kind: String, message: String },
    /// `create` succeeded (boxed: the other messages are small).
    Ready { capabilities: Box<Capabilities> },
    /// `create` failed (an error or a panic); the host exits after sending it.
    Failed { message: String },
    /// The answer to one check: exactly one of `response` / `error`.
    Result {
        id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        response: Option<CheckResponse>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The programs the plugin started since its previous answer (its copy of the
        /// gate's record, which only it can read); the daemon adds them to its own, which
        /// `status` shows.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ran: Vec<openfiles_gate::spawn::Ran>,
    },
    /// The answer to one query: exactly one of `answer` / `error`.
    Answer {
        id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<Box<QueryAnswer>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// Exit status of a host whose library was refused (not worth restarting).
pub const EXIT_REFUSED: u8 = 3;
/// Exit status of a host whose plugin failed to start.
pub const EXIT_CREATE_FAILED: u8 = 4;
