//! openfiles-wire: every protocol openfiles speaks, typed once for the service and for every
//! client (CLI, hook, MCP server, review).
//!
//! - [`control`]: `openfiles/1` on the control socket — one `Request` enum, one reply type
//!   per command, the envelope;
//! - [`claws`]: the Claws protocol — the claws/1 envelope, the claws/2 constants, one struct
//!   per command ([`claws::request`]) that clients serialize and the server decodes;
//! - [`line`](mod@line): the one line codec and the blocking connection every client uses;
//! - [`spec`]: the OpenFiles files other tools read (`diagnostics.json`, queue lines,
//!   heartbeats);
//! - [`summary`]: the review summary (`status.json`) clients read beside a workspace's state;
//!
//! A request is built from the same struct the other side decodes, so a field one side
//! spells differently from the other is a compile error, not a silent drop.
//!
//! Depends on serde and the plugin API's item types, nothing else: no runtime, no I/O beyond
//! what a blocking client needs.

pub mod claws;
pub mod control;
pub mod line;
pub mod spec;
pub mod summary;
