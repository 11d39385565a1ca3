//! Results owed to agent sessions: files a hook's `wait` left still being checked at its
//! deadline, to be handed, once, to the next `wait` of the same session.
//!
//! Owned by the pipeline actor next to the [`Session`] and persisted with it (the `late`
//! field of the session state), so an owed result survives a config reload and a restart.
//! A session is the key the hook sends (`agent/session_id`, or the agent alone when its
//! payload carries no session). Invariants:
//! - a (session, file) pair is owed at most once; owing it again moves its `since` on;
//! - [`Late::take`] removes what it returns, and only the actor calls it, one waiter after
//!   another: concurrent hooks of one session get each result exactly once;
//! - a later wait of the session that covers the file itself (it edited the file again, or
//!   asked again) settles the debt: the agent is told about that file by that wait;
//! - bounded: at most [`MAX_OWED`] records, the oldest dropped first; files that leave the
//!   session leave here ([`Late::retain`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::session::Session;

/// Most records kept per workspace (a session that never comes back must not grow this).
pub const MAX_OWED: usize = 256;

/// One owed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owed {
    pub session: String,
    pub path: PathBuf,
    /// The edit's time (the `wait`'s `since`): a result checked at or after it is the answer.
    pub since: u64,
}

/// The owed results of one workspace and their counters (persisted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Late {
    #[serde(default)]
    pub owed: Vec<Owed>,
    /// Files handed to a later wait, ever.
    #[serde(default)]
    pub delivered: u64,
    /// Waits that ended at their deadline with files still being checked, ever.
    #[serde(default)]
    pub notes: u64,
}

impl Late {
    /// A wait of `session` reached its deadline with `paths` still being checked.
    pub fn owe(&mut self, session: &str, paths: &[PathBuf], since: u64) {
        if paths.is_empty() {
            return;
        }
        self.notes += 1;
        for path in paths {
            self.owed
                .retain(|o| !(o.session == session && o.path == *path));
            self.owed.push(Owed {
                session: session.to_owned(),
                path: path.clone(),
                since,
            });
        }
        if self.owed.len() > MAX_OWED {
            let extra = self.owed.len() - MAX_OWED;
            self.owed.drain(..extra);
        }
    }

    /// A wait of `session` answered for `paths`: what it says about them replaces any debt.
    pub fn covered(&mut self, session: &str, paths: &[PathBuf]) {
        self.owed
            .retain(|o| !(o.session == session && paths.contains(&o.path)));
    }

    /// Take the results owed to `session` that are in now (the file settled at or after the
    /// edit): returned once, removed here.
    pub fn take(&mut self, session: &str, current: &Session) -> Vec<PathBuf> {
        let mut out = Vec::new();
        self.owed.retain(|o| {
            if o.session != session {
                return true;
            }
            match current.get(&o.path) {
                Some(s) if s.settled() && s.entry.checked_at >= o.since => {
                    out.push(o.path.clone());
                    false
                }
                Some(_) => true,
                // Gone from the session (deleted, cleared): nothing left to tell.
                None => false,
            }
        });
        self.delivered += out.len() as u64;
        out
    }

    /// Keep only the records of files `keep` says are still there.
    pub fn retain(&mut self, keep: impl Fn(&Path) -> bool) {
        self.owed.retain(|o| keep(&o.path));
    }

    /// Forget every owed result (the session was cleared); the counters stay.
    pub fn clear(&mut self) {
        self.owed.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session_with(path: &Path, checked_at: Option<u64>) -> Session {
        let mut s = Session::default();
        s.edited(path, 1);
        if let Some(at) = checked_at {
            s.settle_with(path, Vec::new(), at);
        }
        s
    }

    #[test]
    fn an_owed_result_is_taken_once_when_it_is_in() {
        let p = PathBuf::from("/w/a.py");
        let mut late = Late::default();
        late.owe("claude/s1", std::slice::from_ref(&p), 10);
        assert_eq!(late.notes, 1);
        // Not checked yet: nothing to take, the debt stays.
        assert!(late.take("claude/s1", &session_with(&p, None)).is_empty());
        let done = session_with(&p, Some(20));
        // Another session gets nothing.
        assert!(late.take("claude/s2", &done).is_empty());
        assert_eq!(late.take("claude/s1", &done), vec![p.clone()]);
        assert!(late.take("claude/s1", &done).is_empty());
        assert_eq!(late.delivered, 1);
    }

    #[test]
    fn a_wait_that_covers_the_file_settles_the_debt() {
        let p = PathBuf::from("/w/a.py");
        let mut late = Late::default();
        late.owe("s", std::slice::from_ref(&p), 10);
        late.owe("s", std::slice::from_ref(&p), 30);
        assert_eq!(late.owed.len(), 1, "owed once, with the newer edit's time");
        // A result for the older edit is no answer for the newer one.
        assert!(late.take("s", &session_with(&p, Some(20))).is_empty());
        late.covered("s", std::slice::from_ref(&p));
        assert!(late.owed.is_empty());
    }

    #[test]
    fn files_gone_from_the_session_are_dropped_and_the_list_is_bounded() {
        let mut late = Late::default();
        late.owe("s", &[PathBuf::from("/w/gone.py")], 1);
        assert!(late.take("s", &Session::default()).is_empty());
        assert!(late.owed.is_empty());
        let many: Vec<PathBuf> = (0..MAX_OWED + 5)
            .map(|i| PathBuf::from(format!("/w/{i}.py")))
            .collect();
        late.owe("s", &many, 1);
        assert_eq!(late.owed.len(), MAX_OWED);
        assert_eq!(
            late.owed[0].path,
            PathBuf::from("/w/5.py"),
            "oldest dropped"
        );
    }
}
