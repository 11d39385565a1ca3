//! Idle exit of an autostarted service (`serve --autostarted`, see `crate::autostart`): the
//! one task that ends the service once nothing has happened for `[service]
//! idle_exit_seconds` — no request (edits, waits, MCP and CLI calls), no open control
//! connection (a waiting hook holds one; `crate::control::activity`), no check running (an
//! edit the watcher or the queue brought), no Claws terminal and no Claws client. Nothing is lost by exiting: the shutdown path is the usual one (sessions and
//! marks are on disk), and the next client autostarts a service that restores them.
//!
//! The task wakes once per idle period at most: at `last activity + idle`; busy then (a
//! connection, a terminal or a Claws client), it counts as activity and sleeps again.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::control::activity::Activity;
use crate::workspace::instance::WorkspaceDeps;

/// End the service (cancel `shutdown`) after `idle` without activity; returns when it did or
/// when the service stops for another reason. The socket file goes first, so a client
/// arriving during the shutdown finds no socket and starts a new service instead of
/// connecting to one that will not answer.
pub async fn exit_when_idle(
    activity: Arc<Activity>,
    idle: Duration,
    shared: Arc<WorkspaceDeps>,
    socket: Option<super::activation::OwnSocketFile>,
    shutdown: CancellationToken,
) {
    let idle_ms = idle.as_millis() as u64;
    loop {
        let due = activity.last_ms().saturating_add(idle_ms);
        let now = openfiles_wire::spec::now_ms();
        if now < due {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(due - now)) => {}
            }
            continue;
        }
        let terminals = shared.claws_registry.terminal_count();
        let clients = shared.claws_registry.client_count();
        let connections = activity.connections();
        if terminals + clients + connections + activity.checks() > 0 {
            activity.touch();
            continue;
        }
        tracing::info!(
            idle_exit_seconds = idle.as_secs(),
            "autostarted and idle (no edits, requests, connections, terminals or Claws \
             clients): stopping; the next client starts it again"
        );
        if let Some(file) = &socket {
            file.remove();
        }
        shutdown.cancel();
        return;
    }
}
