//! The control socket: the blocking client the CLI commands use ([`client`]; the
//! `openfiles/1` protocol itself is `openfiles_wire::control`) and the service side that accepts and dispatches
//! connections ([`server`]), with its `tools` lookups in the service's environment
//! ([`tools`]) and its record of requests and open connections ([`activity`]).

pub mod activity;
pub mod client;
pub mod nav;
pub mod server;
pub mod tools;
