//! Talking to the service manager through `$NOTIFY_SOCKET` (sd-notify): `READY=1`, `STATUS=`,
//! watchdog pings at half of `WATCHDOG_USEC`, `STOPPING=1`.
//!
//! All calls are no-ops when the service was not started by systemd (no `NOTIFY_SOCKET`);
//! a send never waits: a manager that stopped reading loses notifications, not the service.
//! The watchdog pings come from a task on the service's runtime, so a wedged runtime stops
//! pinging and systemd restarts it — which is the point.

use std::time::Duration;

use sd_notify::NotifyState;
use tokio_util::sync::CancellationToken;

/// Tell the manager we are ready, with a first status line.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

/// Update the one-line status shown by `systemctl status`.
pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

/// Tell the manager we are shutting down.
pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

/// Whether a failed send was already reported (a manager that stopped reading would
/// otherwise put a warning in the log at every watchdog ping).
static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn send(states: &[NotifyState]) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let msg: String = states.iter().map(|s| format!("{s}\n")).collect();
    if let Err(e) = send_to(&path, msg.as_bytes()) {
        if WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::debug!("sd_notify failed: {e}");
        } else {
            tracing::warn!("sd_notify failed: {e} (the service manager is not reading its socket; notifications are dropped, the service goes on)");
        }
    }
}

/// One datagram to `$NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
fn send_to(path: &std::ffi::OsStr, msg: &[u8]) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let sock = UnixDatagram::unbound()?;
    // Never wait: a full queue (a manager that stopped reading) drops the notification.
    sock.set_nonblocking(true)?;
    let bytes = path.as_bytes();
    let addr = match bytes.strip_prefix(b"@") {
        #[cfg(target_os = "linux")]
        Some(name) => {
            use std::os::linux::net::SocketAddrExt as _;
            SocketAddr::from_abstract_name(name)?
        }
        _ => SocketAddr::from_pathname(std::path::Path::new(path))?,
    };
    sock.send_to_addr(msg, &addr).map(|_| ())
}

/// The watchdog interval asked for by the manager, if any: `WATCHDOG_USEC`, when
/// `WATCHDOG_PID` is absent or names us (the rule of `sd_watchdog_enabled(3)`; the
/// `sd-notify` crate insists on `WATCHDOG_PID`, which wrappers such as
/// `systemd-socket-activate -E WATCHDOG_USEC` do not set).
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Ok(pid) = std::env::var("WATCHDOG_PID") {
        if pid.parse::<u32>().ok()? != std::process::id() {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec))
}

/// Ping the watchdog at half its interval until `shutdown`.
pub async fn watchdog(interval: Duration, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(interval / 2);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => send(&[NotifyState::Watchdog]),
        }
    }
}
