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
//!
//! The `wait` names the agent session (`Edit::session`): when it ends at the deadline with
//! files still being checked, the hook says so in one line and the service owes their
//! results to the session; a later hook of the session gets them in `earlier`, once, and
//! prints them before its own feedback ([`super::late`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::feedback::{self, Report};
use super::late;
use super::report::{display_path, Entries};
use crate::control::client::ClientError;
use openfiles_wire::control::{Edited, EditedReply, Wait, WaitReply};

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
    /// The agent session (`agent/session_id`, or the agent alone), for late results.
    pub session: Option<&'a str>,
}

/// Report the edit; with `feedback`, wait and return the feedback text (if any).
pub fn report(
    socket: &Path,
    edit: &Edit<'_>,
    feedback: bool,
) -> Result<Option<String>, ServiceError> {
    // No service and nothing to socket-activate one: start it (`crate::autostart`).
    let mut client = crate::autostart::connect(socket, Some(EDITED_REPLY_TIMEOUT))
        .map_err(ServiceError::NotDelivered)?;
    let reply: EditedReply = client
        .call(&Edited {
            paths: edit.paths.to_vec(),
            agent: Some(edit.agent.to_owned()),
            tool: edit.tool.map(str::to_owned),
            event: edit.event.map(str::to_owned),
            ts: edit.ts,
        })
        .map_err(ServiceError::NotDelivered)?;
    if !feedback {
        return Ok(None);
    }
    let accepted: Vec<PathBuf> = reply
        .workspaces
        .iter()
        .flat_map(|w| w.paths.iter().cloned())
        .collect();
    let not_checked = not_checked_text(&reply.rejected);
    if accepted.is_empty() {
        return Ok(paused_text(&reply.paused).or(not_checked));
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
            .call(&Wait {
                paths: accepted.clone(),
                since: reply.ts,
                timeout_ms,
                partial: true,
                session: edit.session.map(str::to_owned),
                fixes: false,
            })
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
    let text = feedback_text(&waited, &accepted, reply.ts);
    Ok(match (text, not_checked) {
        (Some(text), Some(note)) => Some(format!("{text}\n\n{note}")),
        (text, note) => text.or(note),
    })
}

/// What the agent is told about edited files an ignore rule left unchecked: the rule and
/// how to change it, once per file (the service gives the notice once).
pub fn not_checked_text(rejected: &[openfiles_wire::control::Rejected]) -> Option<String> {
    let notes: Vec<String> = rejected
        .iter()
        .filter(|r| r.is_notice())
        .map(|r| format!("openfiles: {}.", r.reason))
        .collect();
    (!notes.is_empty()).then(|| notes.join("\n"))
}

/// Ask the service to warm the checkers of the workspace holding `dir` (a session start);
/// the service answers at once, the servers start in the background.
pub fn warm(socket: &Path, dir: &Path) -> Result<openfiles_wire::control::WarmReply, ClientError> {
    // A session start is the earliest moment to start a service nothing socket-activates.
    let mut client = crate::autostart::connect(socket, Some(EDITED_REPLY_TIMEOUT))?;
    client.call(&openfiles_wire::control::Warm(
        openfiles_wire::control::PathArg {
            path: dir.to_owned(),
            force: false,
        },
    ))
}

/// What the agent is told when its edit landed in a paused workspace (`openfiles pause`).
pub fn paused_text(roots: &[PathBuf]) -> Option<String> {
    let root = roots.first()?;
    Some(format!(
        "openfiles: checking is paused in {} (`openfiles resume` turns it back on); this edit was not checked.",
        root.display()
    ))
}

/// The feedback for `paths` from a `wait` reply: results that came late for an earlier
/// hook of the session, the one line naming files still being checked at the deadline (a
/// reply neither complete nor partial), then the feedback for `paths`.
pub fn feedback_text(reply: &WaitReply, paths: &[PathBuf], since: u64) -> Option<String> {
    let mut report = Report::default();
    let mut pending: Vec<String> = Vec::new();
    let mut timeout_ms = 0;
    let at_deadline = !reply.complete && !reply.partial;
    for ws in &reply.workspaces {
        let entries = Entries {
            root: &ws.root,
            hook: &ws.hook,
            files: &ws.files,
            baseline: ws.baseline.as_ref(),
        };
        report.extend(entries.report(paths, since));
        if at_deadline && ws.hook.feedback != openfiles_wire::spec::Feedback::Off {
            timeout_ms = timeout_ms.max(ws.hook.timeout_ms);
            for p in paths {
                if entries.find(p).is_some_and(|e| e.checked_at < since) {
                    pending.push(display_path(&ws.root, p));
                }
            }
        }
    }
    let mut earlier = Vec::new();
    let mut broken_by = std::collections::BTreeMap::new();
    for ws in &reply.earlier {
        let entries = Entries {
            root: &ws.root,
            hook: &ws.hook,
            files: &ws.files,
            baseline: ws.baseline.as_ref(),
        };
        let files: Vec<PathBuf> = ws.files.values().map(|e| e.path.clone()).collect();
        earlier.extend(entries.views(&files, 0));
        for e in ws.files.values().filter(|e| !e.affected_by.is_empty()) {
            broken_by.insert(display_path(&ws.root, &e.path), e.affected_by.clone());
        }
    }
    let earlier_has_problems = earlier.iter().any(|f| !f.items.is_empty());
    late::combine(
        late::deadline_note(&pending, timeout_ms),
        late::earlier_section(&earlier, &broken_by),
        feedback::format_report(&report),
        earlier_has_problems,
    )
}
