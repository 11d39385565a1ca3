//! Waiters: `wait` requests parked until their files are checked.
//!
//! A waiter is answered from the session in memory (never from the written file): when every
//! path has `checkedAt ≥ since` (complete); when it asked for partial answers, once its grace
//! (`hooks.partial_after_ms` after `since`) has passed and every path is
//! [`partial_ready`](super::session::FileState::partial_ready) — the fast sources have
//! answered, only project-wide ones still run; at its deadline; or when the asker is gone.
//! Until its knock-on time (`hooks.knock_on_wait_ms` after `since`), a partial answer also
//! waits for the project-wide sources marked awaited (quick the last time they ran), so the
//! edit's own hook names the callers it broke in files nobody edited.
//! The entries it gets carry, per source, whether it answered for the current content, so the
//! asker can say which sources are still running.
//!
//! A waiter that names its agent session (a hook's) settles that session's debts for its
//! paths, is handed the session's results that came in late since ([`Late::take`]), and, when
//! it is answered before its paths settled — at its deadline, or partially —, leaves them
//! owed with the marks of what it showed (whatever comes later and was not shown is told).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use tokio::sync::oneshot;
// Tokio's clock (the same as std's outside tests): deadlines follow paused test time.
use tokio::time::Instant;

use super::late::{self, Late, Reading};
use super::session::Session;
use super::WorkspaceEntries;
use openfiles_wire::spec::FileEntry;

/// The answer to a `wait`.
#[derive(Debug, Clone, Default)]
pub struct WaitOutcome {
    /// Every path was checked (by every source) at or after `since`.
    pub complete: bool,
    /// Answered before the deadline without being complete: the fast sources answered for
    /// every path, project-wide ones still run (named in the entries' `sources`).
    pub partial: bool,
    pub entries: WorkspaceEntries,
    /// The session's results that came in after an earlier wait's deadline (handed out once).
    pub earlier: Option<WorkspaceEntries>,
}

/// One parked `wait`.
pub struct Waiter {
    pub paths: Vec<PathBuf>,
    pub since: u64,
    pub deadline: Instant,
    /// When a partial answer may be given; `None`: only complete answers (or the deadline).
    pub partial_at: Option<Instant>,
    /// Until then a partial answer waits for the awaited project-wide sources too.
    pub knock_on_until: Option<Instant>,
    /// The agent session asking, if it said (see [`Late`]).
    pub session: Option<String>,
    pub reply: oneshot::Sender<WaitOutcome>,
}

/// Every parked `wait` of one workspace.
#[derive(Default)]
pub struct Waiters(Vec<Waiter>);

impl Waiters {
    pub fn push(&mut self, w: Waiter) {
        self.0.push(w);
    }

    /// The next instant at which a waiter must be looked at again without any news.
    pub fn next_timer(&self) -> Option<Instant> {
        let now = Instant::now();
        self.0
            .iter()
            .flat_map(|w| {
                [
                    Some(w.deadline),
                    w.partial_at.filter(|at| *at > now),
                    w.knock_on_until
                        .filter(|at| *at > now && w.partial_at.is_some()),
                ]
            })
            .flatten()
            .min()
    }

    /// Answer every waiter that can be answered (all of them with `all`); `entries` builds
    /// the reply's entries for a waiter's paths (with the entries of files the session broke
    /// when its flag is set), `late` is what the sessions are owed, `key` a path's key.
    /// True when `late` changed (it is persisted).
    pub fn answer(
        &mut self,
        session: &Session,
        late: &mut Late,
        all: bool,
        key: &dyn Fn(&Path) -> String,
        entries: impl Fn(&[PathBuf], bool) -> WorkspaceEntries,
    ) -> bool {
        let now = Instant::now();
        let mut keep = Vec::new();
        let mut changed = false;
        for w in std::mem::take(&mut self.0) {
            let complete = w.paths.iter().all(|p| {
                session
                    .get(p)
                    .is_none_or(|s| s.entry.checked_at >= w.since && s.settled())
            });
            let knock_on = w.knock_on_until.is_some_and(|at| now < at);
            let partial = !complete
                && w.partial_at.is_some_and(|at| now >= at)
                && w.paths
                    .iter()
                    .all(|p| session.get(p).is_none_or(|s| s.partial_ready(knock_on)));
            if complete || partial || all || now >= w.deadline || w.reply.is_closed() {
                let mut entries_now = entries(&w.paths, true);
                let mut earlier = None;
                if let Some(owner) = w.session.as_deref().filter(|_| !w.reply.is_closed()) {
                    let debts = Debts {
                        owner,
                        session,
                        key,
                    };
                    earlier = debts.settle(&w, late, &entries, &mut entries_now, &mut changed);
                    if !complete {
                        let pending: Vec<PathBuf> = w
                            .paths
                            .iter()
                            .filter(|p| {
                                session.get(p).is_some_and(|s| {
                                    !(s.entry.checked_at >= w.since && s.settled())
                                })
                            })
                            .cloned()
                            .collect();
                        let shown = marks(
                            entries_now.files.values().chain(
                                earlier
                                    .iter()
                                    .flat_map(|e: &WorkspaceEntries| e.files.values()),
                            ),
                        );
                        changed |= !pending.is_empty();
                        late.owe(owner, &pending, w.since, !partial, &shown);
                    }
                }
                tracing::debug!(
                    ms = openfiles_wire::spec::now_ms().saturating_sub(w.since),
                    complete,
                    partial,
                    knock_on,
                    "wait answered"
                );
                let _ = w.reply.send(WaitOutcome {
                    complete,
                    partial,
                    entries: entries_now,
                    earlier,
                });
            } else {
                keep.push(w);
            }
        }
        self.0 = keep;
        changed
    }
}

/// One session's debts, read from the session.
struct Debts<'a> {
    owner: &'a str,
    session: &'a Session,
    key: &'a dyn Fn(&Path) -> String,
}

impl Debts<'_> {
    /// The debts of session `owner` a wait settles: its own paths are told by it; what is due
    /// from earlier hooks is taken, as entries holding only the owed problems. A file nobody
    /// edited that is told there leaves the reply's own entries (told first, not twice).
    fn settle(
        &self,
        w: &Waiter,
        late: &mut Late,
        entries: &impl Fn(&[PathBuf], bool) -> WorkspaceEntries,
        entries_now: &mut WorkspaceEntries,
        changed: &mut bool,
    ) -> Option<WorkspaceEntries> {
        *changed |= late.covered(self.owner, &w.paths);
        let how = Reading {
            hook: &entries_now.hook,
            key: self.key,
        };
        let taken = late.take(self.owner, self.session, &how, changed);
        if taken.is_empty() {
            return None;
        }
        let paths: Vec<PathBuf> = taken.iter().map(|d| d.path.clone()).collect();
        let mut earlier = entries(&paths, false);
        for entry in earlier.files.values_mut() {
            if let Some(d) = taken.iter().find(|d| d.path == entry.path) {
                let mut owed =
                    FileEntry::checked(entry.path.clone(), entry.checked_at, d.items.clone());
                owed.sources = std::mem::take(&mut entry.sources);
                owed.affected_by = std::mem::take(&mut entry.affected_by);
                *entry = owed;
            }
        }
        entries_now
            .files
            .retain(|_, f| f.affected_by.is_empty() || !paths.contains(&f.path));
        Some(earlier)
    }
}

/// The marks of every problem in `entries`.
fn marks<'a>(entries: impl Iterator<Item = &'a FileEntry>) -> BTreeSet<u64> {
    entries
        .flat_map(|e| e.items.iter().map(|i| late::mark(&e.path, i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn waiter(deadline: Instant, partial_at: Option<Instant>) -> Waiter {
        Waiter {
            paths: Vec::new(),
            since: 0,
            deadline,
            partial_at,
            knock_on_until: None,
            session: None,
            reply: oneshot::channel().0,
        }
    }

    #[test]
    fn the_next_timer_is_the_earliest_deadline_or_grace_still_ahead() {
        let now = Instant::now();
        let s = Duration::from_secs;
        let mut w = Waiters::default();
        assert_eq!(w.next_timer(), None);
        w.push(waiter(now + s(10), Some(now + s(3))));
        w.push(waiter(now + s(5), None));
        assert_eq!(w.next_timer(), Some(now + s(3)));
        // A grace that has passed is no timer (the actor would wake at once, forever); the
        // waiter is answered when its files are ready, or at its deadline.
        let mut w = Waiters::default();
        w.push(waiter(now + s(10), Some(now - s(1))));
        assert_eq!(w.next_timer(), Some(now + s(10)));
        // The end of the knock-on wait is a timer while it is ahead.
        let mut knock = waiter(now + s(10), Some(now - s(1)));
        knock.knock_on_until = Some(now + s(2));
        w.push(knock);
        assert_eq!(w.next_timer(), Some(now + s(2)));
    }
}
