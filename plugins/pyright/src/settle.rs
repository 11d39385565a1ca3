//! When a warm server's check is answered: what a check's wait compares the server's pushes
//! with, taken when its notification went out ([`Start`]).
//!
//! Settled: every changed file the server published before re-published twice (its first
//! publish repeats the old text's diagnostics) and its users once (re-checked), no
//! work-done progress running, and either one ended since the check's notification (pyright
//! reports "N files to analyze" while it re-checks dependents) with [`QUIET_MS`] of silence
//! after it, or — when it re-checked without progress — the pushes stopped for
//! [`NO_PROGRESS_QUIET_MS`]; a server that says nothing at all for [`SILENT_MS`] had nothing
//! to re-check. A first analysis (a server or root just added) waits for the changed files
//! its projects track to be published, or, none tracked, for its end.
//!
//! Early: as soon as the changed files and their users were re-published after the
//! notification ([`Start::early`]); a changed file's own diagnostics only once it was
//! re-published twice ([`Start::stale`]).

use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Silence after the last progress ended before a check's answer.
pub const QUIET_MS: u64 = 100;
/// Silence after pushes with no progress before a check's answer (pyright re-checks a
/// few dependents without reporting progress, a second apart on a loaded machine).
pub const NO_PROGRESS_QUIET_MS: u64 = 1_000;
/// Silence from the notification on that means nothing was re-checked (a changed file the
/// server never published: not part of its project).
pub const SILENT_MS: u64 = 3_000;
/// The same two for a server or root just added (its first analysis, which starts by
/// clearing every file's diagnostics and may take seconds to begin).
pub const FIRST_QUIET_MS: u64 = 1_500;
pub const FIRST_SILENT_MS: u64 = 20_000;

/// What a check's wait compares the server's pushes with (see the module's doc).
pub struct Start {
    pub since: Instant,
    pub events: u64,
    pub ended: u64,
    /// The changed files published before, and how often.
    pub before: Vec<(String, u64)>,
    /// Their users published before, and how often.
    pub users: Vec<(String, u64)>,
    /// The changed files notified.
    pub uris: Vec<String>,
    /// Those of them a project of the check tracks (a first analysis publishes only those;
    /// see `tracked::tracks`).
    pub tracked: Vec<String>,
    /// The server or the root was just added.
    pub first: bool,
    pub pushes_quiet: u64,
    pub silent: u64,
}

impl Start {
    /// Whether the changed files (all of them published before) and their users were
    /// re-published since the notification (not for a first analysis).
    pub fn early(&self, p: &crate::rpc::Pushed) -> bool {
        let again = |(u, n): &(String, u64)| p.published.get(u).is_some_and(|m| m > n);
        !self.first
            && !self.uris.is_empty()
            && self.before.len() == self.uris.len()
            && self.before.iter().all(again)
            && self.users.iter().all(again)
    }

    /// The changed files not re-published since their first publish after the notification
    /// (which repeats the old text's diagnostics before the server re-checked it).
    pub fn stale(&self, p: &crate::rpc::Pushed) -> HashSet<String> {
        self.before
            .iter()
            .filter(|(u, n)| p.published.get(u).is_none_or(|m| *m <= n + 1))
            .map(|(u, _)| u.clone())
            .collect()
    }

    pub fn settled(&self, p: &crate::rpc::Pushed) -> bool {
        let uris = &self.uris;
        let ms = Duration::from_millis;
        let (quiet, waited) = (p.last_event.elapsed(), self.since.elapsed());
        // Re-checked: each changed file published twice (its first publish repeats the old
        // text's diagnostics) and each user once since the notification. A progress that
        // ends after the notification may be the analysis it interrupted (a check sent while
        // the server was still analysing an earlier change): its end alone settles nothing.
        let again = |(u, n): &(String, u64), times: u64| {
            p.published.get(u).is_some_and(|m| *m >= n + times)
        };
        let rechecked = (self.before.iter().all(|b| again(b, 2))
            && self.users.iter().all(|b| again(b, 1)))
            || waited >= ms(self.silent);
        // A root just added: its files are published once it has found them — the changed
        // ones its projects track (another, such as the session start's pick outside
        // `include`, never is: then its first analysis has ended).
        let found = !self.first
            || if self.tracked.is_empty() {
                p.ended > self.ended
            } else {
                self.tracked.iter().all(|u| p.published.contains_key(u))
            }
            || waited >= ms(FIRST_SILENT_MS);
        p.active.is_empty()
            && rechecked
            && found
            && if p.ended > self.ended {
                quiet >= ms(QUIET_MS)
            } else if p.events > self.events || (uris.is_empty() && !self.first) {
                // Nothing notified (the server was told these texts: a follow-up of an
                // early answer): the analysis under way, if any, settles.
                quiet >= ms(self.pushes_quiet)
            } else {
                waited >= ms(self.silent)
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Issue 42.2: a check sent while the server still analyses an earlier change sees that
    /// analysis end; it is settled only once its own files and their users were re-checked
    /// (a revert answered from the old analysis left the broken caller standing).
    #[test]
    fn an_interrupted_analysis_ending_settles_nothing() {
        let long_ago = Instant::now() - Duration::from_secs(2);
        let start = Start {
            since: Instant::now(),
            events: 10,
            ended: 1,
            before: vec![("file:///w/utils.py".into(), 1)],
            users: vec![("file:///w/core.py".into(), 1)],
            uris: vec!["file:///w/utils.py".into()],
            tracked: Vec::new(),
            first: false,
            pushes_quiet: NO_PROGRESS_QUIET_MS,
            silent: SILENT_MS,
        };
        let pushed = |utils: u64, core: u64| crate::rpc::Pushed {
            diagnostics: HashMap::new(),
            published: HashMap::from([
                ("file:///w/utils.py".to_owned(), utils),
                ("file:///w/core.py".to_owned(), core),
            ]),
            active: HashSet::new(),
            ended: 2,
            events: 12,
            last_event: long_ago,
            initialized: true,
            closed: false,
            answers: HashMap::new(),
        };
        assert!(!start.settled(&pushed(2, 1)), "the old analysis's end");
        assert!(!start.settled(&pushed(3, 1)), "the caller not re-checked");
        assert!(
            !start.settled(&pushed(2, 2)),
            "the changed file's old publish only"
        );
        assert!(start.settled(&pushed(3, 2)));
    }

    /// A server's first analysis asked about a file its projects do not track (the session
    /// start's pick outside `include`): never published, so the answer waits for that
    /// analysis to end, not for [`FIRST_SILENT_MS`]; a tracked file, for its publish.
    #[test]
    fn a_first_analysis_waits_for_the_tracked_files_or_its_end() {
        let long_ago = Instant::now() - Duration::from_secs(2);
        let start = |tracked: Vec<String>| Start {
            since: long_ago,
            events: 0,
            ended: 0,
            before: Vec::new(),
            users: Vec::new(),
            uris: vec!["file:///w/docs/conf.py".into(), "file:///w/src/m.py".into()],
            tracked,
            first: true,
            pushes_quiet: FIRST_QUIET_MS,
            silent: FIRST_SILENT_MS,
        };
        let pushed = |ended: u64, m: bool| crate::rpc::Pushed {
            diagnostics: HashMap::new(),
            published: if m {
                HashMap::from([("file:///w/src/m.py".to_owned(), 1)])
            } else {
                HashMap::new()
            },
            active: HashSet::new(),
            ended,
            events: 5,
            last_event: long_ago,
            initialized: true,
            closed: false,
            answers: HashMap::new(),
        };
        let untracked = start(Vec::new());
        assert!(!untracked.settled(&pushed(0, false)), "not analysed yet");
        assert!(untracked.settled(&pushed(1, false)), "its analysis ended");
        let tracked = start(vec!["file:///w/src/m.py".into()]);
        assert!(
            !tracked.settled(&pushed(1, false)),
            "its file not published"
        );
        assert!(tracked.settled(&pushed(1, true)));
    }
}
