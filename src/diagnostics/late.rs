//! Results owed to agent sessions: whatever a source reports after a hook answered — at its
//! deadline, or with a partial answer while project-wide sources still ran — is handed, once,
//! to the next `wait` of the same session.
//!
//! Owned by the pipeline actor next to the [`Session`] and persisted with it (the `late`
//! field of the session state), so an owed result survives a config reload and a restart.
//! A session is the key the hook sends (`agent/session_id`, or the agent alone when its
//! payload carries no session). A record is one file a hook answered for before every source
//! had ([`Owed`]), with what that hook showed ([`Owed::shown`]). When the file has settled,
//! what is due is read from the session as it is then ([`Late::take`]): the file's problems
//! the hook did not show, and the problems the file's edit introduced in files nobody edited
//! (`affectedBy` entries naming it) that the hook did not show either. Invariants:
//! - nothing doubled: a problem the hook showed (same file, line, column and severity,
//!   whichever source said it) is not owed again; a file is handed at most once per record;
//! - nothing old blamed: only what the feedback would list (its level; under the
//!   `introduced` scope nothing the baseline had; of a file nobody edited only introduced
//!   errors, as the "broken elsewhere" section);
//! - read late, so a revert or a fix before the next hook leaves nothing due;
//! - a (session, file) pair is owed at most once; owing it again moves its `since` on;
//! - [`Late::take`] removes what it returns, and only the actor calls it, one waiter after
//!   another: concurrent hooks of one session get each result exactly once;
//! - a later wait of the session that covers the file itself (it edited the file again, or
//!   asked again) settles the debt: the agent is told about that file by that wait;
//! - a session that never hooks again leaves it in the session (`review` lists the file);
//! - bounded: at most [`MAX_OWED`] records of at most [`MAX_SHOWN`] marks, the oldest
//!   dropped first; files that leave the session leave here ([`Late::retain`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Item, Severity};
use serde::{Deserialize, Serialize};

use super::session::Session;
use openfiles_wire::spec::{self, Feedback, FeedbackScope, HookSettings};

/// Most records kept per workspace (a session that never comes back must not grow this).
pub const MAX_OWED: usize = 256;
/// Most marks of shown problems one record keeps (past that, a problem may be told twice).
pub const MAX_SHOWN: usize = 4096;

/// One owed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owed {
    pub session: String,
    pub path: PathBuf,
    /// The edit's time (the `wait`'s `since`): a result checked at or after it is the answer.
    pub since: u64,
    /// The hook said the file was still being checked (its deadline passed): its result is
    /// told even when it found nothing. A partial answer promised nothing: only problems it
    /// did not show are told. (Records written before partial answers were owed were all
    /// deadline ones.)
    #[serde(default = "promised_by_default")]
    pub promised: bool,
    /// Marks ([`mark`]) of the problems the hook showed: never owed again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shown: Vec<u64>,
}

fn promised_by_default() -> bool {
    true
}

/// One file due to a session now, with the problems owed in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    pub path: PathBuf,
    pub items: Vec<Item>,
}

/// What reading what is due needs besides the session: the feedback's settings (level and
/// scope) and the key of a path (as `affectedBy` names edited files).
pub struct Reading<'a> {
    pub hook: &'a HookSettings,
    pub key: &'a dyn Fn(&Path) -> String,
}

/// The results owed to the agent sessions of one workspace and their counters (persisted).
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

/// A problem's mark: its file, line, column and severity (two sources that report the same
/// spot report the same problem, in their own words; `session::merge` keeps one of them).
/// FNV-1a, so a persisted mark means the same after an upgrade.
pub fn mark(path: &Path, item: &Item) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(path.as_os_str().as_encoded_bytes());
    eat(&[0]);
    eat(&item.line.to_le_bytes());
    eat(&item.column.to_le_bytes());
    eat(&[item.severity as u8]);
    h
}

impl Late {
    /// A wait of `session` answered for `paths` before every source had: at its deadline
    /// (`promised`: it said they are still being checked) or partially. `shown` are the
    /// marks of what it showed.
    pub fn owe(
        &mut self,
        session: &str,
        paths: &[PathBuf],
        since: u64,
        promised: bool,
        shown: &BTreeSet<u64>,
    ) {
        if paths.is_empty() {
            return;
        }
        if promised {
            self.notes += 1;
        }
        let shown: Vec<u64> = shown.iter().take(MAX_SHOWN).copied().collect();
        for path in paths {
            self.owed
                .retain(|o| !(o.session == session && o.path == *path));
            self.owed.push(Owed {
                session: session.to_owned(),
                path: path.clone(),
                since,
                promised,
                shown: shown.clone(),
            });
        }
        if self.owed.len() > MAX_OWED {
            let extra = self.owed.len() - MAX_OWED;
            self.owed.drain(..extra);
        }
    }

    /// A wait of `session` answered for `paths`: what it says about them replaces any debt.
    /// True if there was one.
    pub fn covered(&mut self, session: &str, paths: &[PathBuf]) -> bool {
        let before = self.owed.len();
        self.owed
            .retain(|o| !(o.session == session && paths.contains(&o.path)));
        self.owed.len() != before
    }

    /// Take the results owed to `session` that are in now (the file settled at or after the
    /// edit): returned once (one [`Due`] per file), removed here (a record whose result is
    /// in but found nothing new goes too; `taken` says whether any went).
    pub fn take(
        &mut self,
        session: &str,
        current: &Session,
        how: &Reading,
        taken: &mut bool,
    ) -> Vec<Due> {
        let before = self.owed.len();
        let mut out: BTreeMap<PathBuf, Vec<Item>> = BTreeMap::new();
        self.owed.retain(|o| {
            if o.session != session {
                return true;
            }
            match due(o, current, how) {
                None => true,
                Some(files) => {
                    for d in files {
                        add(out.entry(d.path).or_default(), d.items);
                    }
                    false
                }
            }
        });
        self.delivered += out.len() as u64;
        *taken |= self.owed.len() != before;
        out.into_iter()
            .map(|(path, items)| Due { path, items })
            .collect()
    }

    /// How many files are owed now, over every session: files whose result is due, and
    /// files a hook's deadline left that are still being checked (what `status` shows).
    pub fn count(&self, current: &Session, how: &Reading) -> usize {
        let mut files: BTreeSet<(&str, PathBuf)> = BTreeSet::new();
        for o in &self.owed {
            match due(o, current, how) {
                None if o.promised => {
                    files.insert((&o.session, o.path.clone()));
                }
                None => {}
                Some(due) => files.extend(due.into_iter().map(|d| (o.session.as_str(), d.path))),
            }
        }
        files.len()
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

/// Add `items` to `into`, each once (two records may owe the same file).
fn add(into: &mut Vec<Item>, items: Vec<Item>) {
    for it in items {
        if !into.contains(&it) {
            into.push(it);
        }
    }
}

/// What record `o` makes due now; `None` while its file is still being checked.
fn due(o: &Owed, current: &Session, how: &Reading) -> Option<Vec<Due>> {
    let Some(st) = current.get(&o.path) else {
        // Gone from the session (deleted, cleared): nothing left to tell.
        return Some(Vec::new());
    };
    if !(st.settled() && st.entry.checked_at >= o.since) {
        return None;
    }
    let shown: BTreeSet<u64> = o.shown.iter().copied().collect();
    let unshown = |path: &Path, i: &&Item| !shown.contains(&mark(path, i));
    let own: Vec<Item> = st
        .entry
        .items
        .iter()
        .filter(|i| listed(how.hook, i))
        .filter(|i| unshown(&o.path, i))
        .cloned()
        .collect();
    let mut out = Vec::new();
    if o.promised || !own.is_empty() {
        out.push(Due {
            path: o.path.clone(),
            items: own,
        });
    }
    // What the edit broke in files nobody edited, as the "broken elsewhere" section lists it.
    // Told even while the source that found it checks another edit (the reply leaves such a
    // file out until then): the next hook is usually for another edit of the same project,
    // and the edited file itself has settled since, so the finding is not stale.
    let key = (how.key)(&o.path);
    for (path, s) in current.iter() {
        if !s.entry.affected_by.contains(&key) {
            continue;
        }
        let broke: Vec<Item> = s
            .entry
            .items
            .iter()
            .filter(|i| i.introduced == Some(true) && i.severity == Severity::Error)
            .filter(|i| unshown(path, i))
            .cloned()
            .collect();
        if !broke.is_empty() && how.hook.feedback != Feedback::Off {
            out.push(Due {
                path: path.clone(),
                items: broke,
            });
        }
    }
    Some(out)
}

/// Whether the feedback lists `item` of an edited file (its level and scope).
fn listed(hook: &HookSettings, item: &Item) -> bool {
    let level = match hook.feedback {
        Feedback::Off => false,
        // What hides a problem is about errors: listed at the errors-only level too.
        Feedback::Errors => item.severity == Severity::Error || spec::is_silencing(item),
        Feedback::ErrorsAndWarnings => {
            matches!(item.severity, Severity::Error | Severity::Warning)
        }
    };
    level && (hook.feedback_scope == FeedbackScope::All || item.introduced != Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::baseline::BaseView;

    #[test]
    fn the_errors_only_level_owes_what_hides_a_problem_too() {
        let hook = HookSettings {
            feedback: Feedback::Errors,
            ..HookSettings::default()
        };
        let warning = crate::diagnostics::testing::error(1, "src", "w");
        let warning = Item {
            severity: Severity::Warning,
            ..warning
        };
        let silencer = Item {
            source: spec::SILENCING_SOURCE.to_owned(),
            code: Some(spec::SILENCING_CODES[0].to_owned()),
            ..warning.clone()
        };
        assert!(!listed(&hook, &warning));
        assert!(listed(&hook, &silencer));
    }

    fn error(line: u32, message: &str) -> Item {
        crate::diagnostics::testing::error(line, "src", message)
    }

    fn session_with(path: &Path, checked_at: Option<u64>, items: Vec<Item>) -> Session {
        let mut s = Session::default();
        s.edited(path, 1);
        if let Some(at) = checked_at {
            s.settle_with(path, items, at);
        }
        s
    }

    fn key(p: &Path) -> String {
        p.strip_prefix("/w")
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned()
    }

    fn take(late: &mut Late, session: &str, current: &Session) -> Vec<Due> {
        let hook = HookSettings::default();
        let how = Reading {
            hook: &hook,
            key: &key,
        };
        late.take(session, current, &how, &mut false)
    }

    fn count(late: &Late, current: &Session) -> usize {
        let hook = HookSettings::default();
        let how = Reading {
            hook: &hook,
            key: &key,
        };
        late.count(current, &how)
    }

    fn paths(due: &[Due]) -> Vec<&Path> {
        due.iter().map(|d| d.path.as_path()).collect()
    }

    fn messages(d: &Due) -> Vec<&str> {
        d.items.iter().map(|i| i.message.as_str()).collect()
    }

    #[test]
    fn a_result_after_the_deadline_is_taken_once_when_it_is_in() {
        let p = PathBuf::from("/w/a.py");
        let mut late = Late::default();
        late.owe(
            "claude/s1",
            std::slice::from_ref(&p),
            10,
            true,
            &BTreeSet::new(),
        );
        assert_eq!(late.notes, 1);
        // Not checked yet: nothing to take, the debt stays (and counts: it was promised).
        let pending = session_with(&p, None, Vec::new());
        assert!(take(&mut late, "claude/s1", &pending).is_empty());
        assert_eq!(count(&late, &pending), 1);
        // Promised, so told even when clean.
        let done = session_with(&p, Some(20), Vec::new());
        // Another session gets nothing.
        assert!(take(&mut late, "claude/s2", &done).is_empty());
        assert_eq!(
            paths(&take(&mut late, "claude/s1", &done)),
            vec![p.as_path()]
        );
        assert!(take(&mut late, "claude/s1", &done).is_empty());
        assert_eq!((late.delivered, count(&late, &done)), (1, 0));
    }

    #[test]
    fn after_a_partial_answer_only_what_it_did_not_show_is_owed() {
        let p = PathBuf::from("/w/a.py");
        let shown_item = error(1, "shown by the fast source");
        let shown = BTreeSet::from([mark(&p, &shown_item)]);
        let mut late = Late::default();
        late.owe("s", std::slice::from_ref(&p), 10, false, &shown);
        assert_eq!(late.notes, 0, "a partial answer is no deadline note");
        let pending = session_with(&p, None, Vec::new());
        assert_eq!(count(&late, &pending), 0, "nothing found late yet");

        // The slow source found nothing new (the same problem in its own words): nothing due,
        // and the record goes.
        let same_spot = Item {
            message: "the same problem, said otherwise".into(),
            source: "slow".into(),
            ..shown_item.clone()
        };
        let clean = session_with(&p, Some(20), vec![same_spot.clone()]);
        assert_eq!(count(&late, &clean), 0);
        let mut taken = false;
        let hook = HookSettings::default();
        let how = Reading {
            hook: &hook,
            key: &key,
        };
        assert!(late.take("s", &clean, &how, &mut taken).is_empty());
        assert!(taken && late.owed.is_empty(), "settled with nothing new");

        // It found something new: that alone is due, once.
        late.owe("s", std::slice::from_ref(&p), 10, false, &shown);
        let mut old = error(5, "was there before");
        old.introduced = Some(false);
        let found = session_with(&p, Some(20), vec![same_spot, error(3, "late"), old]);
        assert_eq!(count(&late, &found), 1);
        let due = take(&mut late, "s", &found);
        assert_eq!(due.len(), 1);
        assert_eq!(messages(&due[0]), vec!["late"], "nothing shown or old");
        assert!(take(&mut late, "s", &found).is_empty());
    }

    /// What an edit broke in a file nobody edited (an `affectedBy` entry naming the edited
    /// file) after its hook answered partially is owed too; what the hook showed of it is not,
    /// and a revert (the entry gone) leaves nothing due.
    #[test]
    fn a_knock_on_found_after_a_partial_answer_is_owed_once() {
        let (m, b, c) = (
            PathBuf::from("/w/m.py"),
            PathBuf::from("/w/b.py"),
            PathBuf::from("/w/c.py"),
        );
        let mut current = session_with(&m, Some(20), Vec::new());
        let view = || BaseView {
            known: BTreeSet::from(["pyright".to_owned()]),
            ..BaseView::default()
        };
        let broke = |s: &mut Session, path: &Path, by: &str| {
            s.affected(
                path,
                1,
                "pyright",
                vec![error(3, "argument missing")],
                view(),
                vec![by.to_owned()],
                20,
            );
        };
        broke(&mut current, &b, "m.py");
        // Another edit's knock-on is not this record's.
        broke(&mut current, &c, "other.py");
        assert_eq!(
            current.get(&b).unwrap().entry.items[0].introduced,
            Some(true)
        );

        let mut late = Late::default();
        late.owe("s", std::slice::from_ref(&m), 10, false, &BTreeSet::new());
        assert_eq!(count(&late, &current), 1);
        let due = take(&mut late, "s", &current);
        assert_eq!(paths(&due), vec![b.as_path()]);
        assert_eq!(messages(&due[0]), vec!["argument missing"]);
        assert!(take(&mut late, "s", &current).is_empty(), "once");

        // Shown by the partial answer: not owed again.
        let shown: BTreeSet<u64> = current
            .get(&b)
            .unwrap()
            .entry
            .items
            .iter()
            .map(|i| mark(&b, i))
            .collect();
        late.owe("s", std::slice::from_ref(&m), 10, false, &shown);
        assert!(take(&mut late, "s", &current).is_empty());

        // Reverted before the next hook: the entry left, nothing is due.
        late.owe("s", std::slice::from_ref(&m), 10, false, &BTreeSet::new());
        current.remove(&b);
        assert_eq!(count(&late, &current), 0);
        assert!(take(&mut late, "s", &current).is_empty());
    }

    #[test]
    fn a_wait_that_covers_the_file_settles_the_debt() {
        let p = PathBuf::from("/w/a.py");
        let mut late = Late::default();
        late.owe("s", std::slice::from_ref(&p), 10, true, &BTreeSet::new());
        late.owe("s", std::slice::from_ref(&p), 30, true, &BTreeSet::new());
        assert_eq!(late.owed.len(), 1, "owed once, with the newer edit's time");
        // A result for the older edit is no answer for the newer one.
        assert!(take(&mut late, "s", &session_with(&p, Some(20), Vec::new())).is_empty());
        assert!(late.covered("s", std::slice::from_ref(&p)));
        assert!(late.owed.is_empty());
    }

    #[test]
    fn files_gone_from_the_session_are_dropped_and_the_list_is_bounded() {
        let mut late = Late::default();
        let none = BTreeSet::new();
        late.owe("s", &[PathBuf::from("/w/gone.py")], 1, true, &none);
        assert!(take(&mut late, "s", &Session::default()).is_empty());
        assert!(late.owed.is_empty());
        let many: Vec<PathBuf> = (0..MAX_OWED + 5)
            .map(|i| PathBuf::from(format!("/w/{i}.py")))
            .collect();
        late.owe("s", &many, 1, true, &none);
        assert_eq!(late.owed.len(), MAX_OWED);
        assert_eq!(
            late.owed[0].path,
            PathBuf::from("/w/5.py"),
            "oldest dropped"
        );
    }

    #[test]
    fn a_record_of_an_older_writer_is_a_deadline_one() {
        let o: Owed =
            serde_json::from_str(r#"{"session":"s","path":"/w/a.py","since":3}"#).unwrap();
        assert!(o.promised && o.shown.is_empty());
    }
}
