//! Talking to the service manager through `$NOTIFY_SOCKET` (sd-notify): `READY=1`, `STATUS=`,
//! watchdog pings at half of `WATCHDOG_USEC`, `STOPPING=1`.
//!
//! All calls are no-ops when the service was not started by systemd (no `NOTIFY_SOCKET`).
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

fn send(states: &[NotifyState]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(e) = sd_notify::notify(false, states) {
        tracing::warn!("sd_notify failed: {e}");
    }
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
