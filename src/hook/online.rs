//! The hook's conversation with the service over the control socket (blocking client, no
//! runtime): `edited` (connecting is what wakes a socket-activated service, so the first
//! reply may take as long as a service start), then, when feedback is wanted, `wait` with
//! the reply's `ts` as `since`; the service answers when every path is checked or at its
//! deadline, or — asked with `partial` — once the fast sources answered and only project-wide
//! ones still run after the grace `hooks.partial_after_ms` (the feedback then names them).
//! The hook's deadline is the edit's `ts` plus the workspace's `hook.timeoutMs`
//! (from the reply): when the service answered incomplete before that, the hook asks again
//! with an explicit `timeoutMs` for the rest (a few rounds at most). In a paused workspace
//! (`openfiles pause`) the edit is not taken and the feedback says so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::feedback::{self, Report};
use super::report::Entries;
use crate::control::client::{Client, ClientError};
use openfiles_wire::control::{Edited, EditedReply, Request, Wait, WaitReply};

/// Bound on the `edited` reply: long enough for a socket-activated start.
pub const EDITED_REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// Failure bound on the first `wait` reply (the service answers at its own deadline); a
/// repeated `wait` with an explicit timeout gets that timeout plus 5 s.
pub const WAIT_REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// How many `wait` requests one hook call sends at most.
const MAX_WAIT_ROUNDS: u32 = 4;

/// What went wrong, and whether the edit reached the service.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Nothing registered the edit: the fallback should run.
    #[error("{0}")]
    NotDelivered(ClientError),
    /// No control socket to try: its runtime folder was refused.
    #[error("{0}")]
    NoSocket(crate::paths::RuntimeDirError),
    /// The edit was accepted but the wait failed: report nothing.
    #[error("waiting for diagnostics failed: {0}")]
    WaitFailed(ClientError),
}

impl ServiceError {
    /// Whether the socket or its folder was refused as someone else's (not merely absent).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ServiceError::NoSocket(_) | ServiceError::NotDelivered(ClientError::Refused(_))
        )
    }
}

/// The edit as the hook reports it.
#[derive(Debug, Clone)]
pub struct Edit<'a> {
    pub paths: &'a [PathBuf],
    pub agent: &'a str,
    pub tool: Option<&'a str>,
    pub event: Option<&'a str>,
    pub ts: u64,
}

/// Report the edit; with `feedback`, wait and return the feedback text (if any).
pub fn report(
    socket: &Path,
    edit: &Edit<'_>,
    feedback: bool,
) -> Result<Option<String>, ServiceError> {
    let mut client =
        Client::connect(socket, Some(EDITED_REPLY_TIMEOUT)).map_err(ServiceError::NotDelivered)?;
    let reply: EditedReply = client
        .call_as(&Request::Edited(Edited {
            paths: edit.paths.to_vec(),
            agent: Some(edit.agent.to_owned()),
            tool: edit.tool.map(str::to_owned),
            event: edit.event.map(str::to_owned),
            ts: edit.ts,
        }))
        .map_err(ServiceError::NotDelivered)?;
    if !feedback {
        return Ok(None);
    }
    let accepted: Vec<PathBuf> = reply
        .workspaces
        .iter()
        .flat_map(|w| w.paths.iter().cloned())
        .collect();
    if accepted.is_empty() {
        return Ok(paused_text(&reply.paused));
    }
    let mut timeout_ms = None;
    let mut waited: WaitReply;
    let mut rounds = 0;
    loop {
        let bound = timeout_ms.map_or(WAIT_REPLY_TIMEOUT, |t| {
            Duration::from_millis(t) + Duration::from_secs(5)
        });
        client
            .set_read_timeout(Some(bound))
            .map_err(ServiceError::WaitFailed)?;
        waited = client
            .call_as(&Request::Wait(Wait {
                paths: accepted.clone(),
                since: reply.ts,
                timeout_ms,
                partial: true,
            }))
            .map_err(ServiceError::WaitFailed)?;
        rounds += 1;
        // The deadline is the edit's time plus the workspace's `hook.timeoutMs`; a service
        // that answered earlier (another default) is asked again for the rest.
        let limit = waited.workspaces.iter().map(|w| w.hook.timeout_ms).max();
        let end = reply.ts.saturating_add(limit.unwrap_or(0));
        let now = openfiles_wire::spec::now_ms();
        let silent = waited
            .workspaces
            .iter()
            .all(|w| w.hook.feedback == openfiles_wire::spec::Feedback::Off);
        if waited.complete
            || waited.partial
            || silent
            || now + 50 >= end
            || rounds >= MAX_WAIT_ROUNDS
        {
            break;
        }
        timeout_ms = Some(end - now);
    }
    Ok(feedback_text(&waited, &accepted, reply.ts))
}

/// What the agent is told when its edit landed in a paused workspace (`openfiles pause`).
pub fn paused_text(roots: &[PathBuf]) -> Option<String> {
    let root = roots.first()?;
    Some(format!(
        "openfiles: checking is paused in {} (`openfiles resume` turns it back on); this edit was not checked.",
        root.display()
    ))
}

/// The feedback for `paths` from a `wait` reply.
pub fn feedback_text(reply: &WaitReply, paths: &[PathBuf], since: u64) -> Option<String> {
    let mut report = Report::default();
    for ws in &reply.workspaces {
        let entries = Entries {
            root: &ws.root,
            hook: &ws.hook,
            files: &ws.files,
            baseline: ws.baseline.as_ref(),
        };
        report.extend(entries.report(paths, since));
    }
    feedback::format_report(&report)
}
