//! The hook's conversation with the service over the control socket (blocking client, no
//! runtime): `edited` (connecting is what wakes a socket-activated service, so the first
//! reply may take as long as a service start), then, when feedback is wanted, `wait` with
//! the reply's `ts` as `since`; the service answers when every path is checked or at the
//! workspace's `hook.timeoutMs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::feedback::{self, FileView};
use super::report::Entries;
use crate::control::client::{Client, ClientError};
use crate::control::protocol::{Edited, EditedReply, Request, Wait, WaitReply};

/// Bound on the `edited` reply: long enough for a socket-activated start.
pub const EDITED_REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// Failure bound on the `wait` reply (the service answers at its own deadline).
pub const WAIT_REPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// What went wrong, and whether the edit reached the service.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// Nothing registered the edit: the fallback should run.
    #[error("{0}")]
    NotDelivered(ClientError),
    /// The edit was accepted but the wait failed: report nothing.
    #[error("waiting for diagnostics failed: {0}")]
    WaitFailed(ClientError),
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
        return Ok(None);
    }
    client
        .set_read_timeout(Some(WAIT_REPLY_TIMEOUT))
        .map_err(ServiceError::WaitFailed)?;
    let waited: WaitReply = client
        .call_as(&Request::Wait(Wait {
            paths: accepted.clone(),
            since: reply.ts,
            timeout_ms: None,
        }))
        .map_err(ServiceError::WaitFailed)?;
    Ok(feedback_text(&waited, &accepted, reply.ts))
}

/// The feedback for `paths` from a `wait` reply.
pub fn feedback_text(reply: &WaitReply, paths: &[PathBuf], since: u64) -> Option<String> {
    let mut views: Vec<FileView> = Vec::new();
    for ws in &reply.workspaces {
        let entries = Entries {
            root: &ws.root,
            hook: &ws.hook,
            files: &ws.files,
        };
        views.extend(entries.views(paths, since));
    }
    feedback::format(&views)
}
