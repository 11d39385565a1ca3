//! The control socket: the `openfiles/1` protocol ([`protocol`]), the blocking client the
//! CLI commands use ([`client`]) and the service side that accepts and dispatches
//! connections ([`server`]), with its `tools` lookups in the service's environment
//! ([`tools`]).

pub mod client;
pub mod protocol;
pub mod server;
pub mod tools;
