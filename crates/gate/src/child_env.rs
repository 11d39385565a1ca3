//! The environment of the children the service starts.
//!
//! Owns one list: variables that concern the service process only (the service manager's
//! handshakes). Every child the service starts (plugin hosts, terminals, language servers
//! through the hosts) gets them removed, so no child can impersonate the service to systemd
//! or grab its sockets. A leaf: it imports nothing of the workspace.

/// Variables no child inherits.
pub const PRIVATE_ENV: &[&str] = &[
    "NOTIFY_SOCKET",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
];
