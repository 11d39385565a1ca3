//! The session of one workspace: every file changed since the session began, with what each
//! diagnostic source last said about it and whether the current content has been checked.
//!
//! Generations: each edit of a file bumps its `gen`. A check is dispatched for a generation;
//! its result counts only if the file is still at that generation. A file is settled when
//! every source that handles it has answered for its current generation; only then does its
//! entry get `checkedAt`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Item, Severity};

use super::SourceId;
use crate::spec::FileEntry;

/// One session file.
#[derive(Debug, Clone)]
pub struct FileState {
    pub entry: FileEntry,
    /// Bumped on every edit.
    pub gen: u64,
    /// The generation a check has been dispatched for, if any.
    pub dispatched: Option<u64>,
    /// Sources that still owe a result for `dispatched`.
    pub waiting_on: BTreeSet<SourceId>,
    /// The latest items of each source.
    pub by_source: BTreeMap<SourceId, Vec<Item>>,
    /// When the last edit was reported (epoch ms), to recognise the watcher's echo of it.
    pub edited_at: u64,
}

impl FileState {
    fn new(path: PathBuf) -> Self {
        FileState {
            entry: FileEntry::pending(path),
            gen: 0,
            dispatched: None,
            waiting_on: BTreeSet::new(),
            by_source: BTreeMap::new(),
            edited_at: 0,
        }
    }

    /// True when the file's current content has been checked.
    pub fn settled(&self) -> bool {
        self.entry.checked_at != 0 && self.dispatched.is_none()
    }
}

/// All session files of a workspace, keyed by absolute canonical path.
#[derive(Debug, Default)]
pub struct Session {
    files: BTreeMap<PathBuf, FileState>,
}

impl Session {
    /// Rebuild a session from persisted entries. Entries that were never checked are
    /// returned so they can be scheduled again.
    pub fn restore(entries: impl IntoIterator<Item = FileEntry>) -> (Session, Vec<PathBuf>) {
        let mut s = Session::default();
        let mut unchecked = Vec::new();
        for entry in entries {
            let path = entry.path.clone();
            if entry.checked_at == 0 {
                unchecked.push(path.clone());
            }
            let mut st = FileState::new(path.clone());
            st.entry = entry;
            s.files.insert(path, st);
        }
        (s, unchecked)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn get(&self, path: &Path) -> Option<&FileState> {
        self.files.get(path)
    }

    pub fn get_mut(&mut self, path: &Path) -> Option<&mut FileState> {
        self.files.get_mut(path)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&PathBuf, &FileState)> {
        self.files.iter()
    }

    /// Record an edit: the file joins the session (if new), its generation moves on and its
    /// entry goes back to "not checked yet" (old items kept until new ones arrive).
    pub fn edited(&mut self, path: &Path, now: u64) -> u64 {
        let st = self
            .files
            .entry(path.to_owned())
            .or_insert_with(|| FileState::new(path.to_owned()));
        st.edited_at = now;
        st.gen += 1;
        st.entry.checked_at = 0;
        st.dispatched = None;
        st.waiting_on.clear();
        st.gen
    }

    /// A deleted file leaves the session. Returns true if it was there.
    pub fn remove(&mut self, path: &Path) -> bool {
        self.files.remove(path).is_some()
    }

    /// Forget every file.
    pub fn clear(&mut self) {
        self.files.clear();
    }

    /// Mark that a check for the current generation was sent to `sources`.
    pub fn dispatched(&mut self, path: &Path, sources: BTreeSet<SourceId>) -> Option<u64> {
        let st = self.files.get_mut(path)?;
        st.dispatched = Some(st.gen);
        st.by_source.retain(|k, _| sources.contains(k));
        st.waiting_on = sources;
        Some(st.gen)
    }

    /// A source answered for `path` at generation `gen`. Returns true if the file's entry
    /// changed (it settled, or its items were refreshed).
    pub fn answered(
        &mut self,
        path: &Path,
        gen: u64,
        source: SourceId,
        items: Vec<Item>,
        now: u64,
    ) -> bool {
        let Some(st) = self.files.get_mut(path) else {
            return false;
        };
        if st.gen != gen || st.dispatched != Some(gen) {
            return false; // stale: a newer edit is on its way
        }
        st.by_source.insert(source, items);
        st.waiting_on.remove(&source);
        if st.waiting_on.is_empty() {
            st.dispatched = None;
            settle(st, now);
            return true;
        }
        false
    }

    /// A project-wide source reported on a file it was not asked about. The result counts
    /// only for a settled file (nothing newer in flight).
    pub fn refreshed(&mut self, path: &Path, source: SourceId, items: Vec<Item>, now: u64) -> bool {
        let Some(st) = self.files.get_mut(path) else {
            return false;
        };
        if !st.settled() || st.by_source.get(&source) == Some(&items) {
            return false;
        }
        st.by_source.insert(source, items);
        settle(st, now);
        true
    }

    /// Settle a file with exactly these items (no source handles it, or it is sensitive).
    pub fn settle_with(&mut self, path: &Path, items: Vec<Item>, now: u64) {
        if let Some(st) = self.files.get_mut(path) {
            st.dispatched = None;
            st.waiting_on.clear();
            st.by_source.clear();
            st.by_source.insert(usize::MAX, items);
            settle(st, now);
        }
    }
}

/// Merge the sources' items into the entry (identical items once), counts, `checkedAt`.
fn settle(st: &mut FileState, now: u64) {
    let mut seen = BTreeSet::new();
    let mut items: Vec<Item> = Vec::new();
    for it in st.by_source.values().flatten() {
        let key = (
            it.line,
            it.column,
            it.severity,
            it.code.clone(),
            it.message.clone(),
        );
        if seen.insert(key) {
            items.push(it.clone());
        }
    }
    items.sort_by_key(|a| (a.line, a.column, a.severity));
    let path = std::mem::take(&mut st.entry.path);
    st.entry = FileEntry::checked(path, now.max(1), items);
}

/// The explanatory item for a file no checker may read.
pub fn sensitive_item() -> Item {
    Item::note(
        Severity::Info,
        "openfiles",
        "not checked: this file may hold secrets, so openfiles never hands it to a checker",
    )
}

/// The explanatory item for a file refused at dispatch (see `policy::checkable`).
pub fn refused_item(why: &str) -> Item {
    Item::note(
        Severity::Warning,
        "openfiles",
        format!("not checked: {why}"),
    )
}

/// The explanatory item for a file no source handles.
pub fn unhandled_item(path: &Path) -> Item {
    let kind = path
        .extension()
        .map(|e| format!(".{} files", e.to_string_lossy()))
        .unwrap_or_else(|| "this file".into());
    Item::note(
        Severity::Info,
        "openfiles",
        format!("not checked: no diagnostic source handles {kind} (see `openfiles plugins`)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(msg: &str) -> Item {
        Item {
            line: 1,
            column: 1,
            severity: Severity::Error,
            source: "t".into(),
            code: None,
            message: msg.into(),
        }
    }

    #[test]
    fn stale_result_never_settles_a_newer_edit() {
        let mut s = Session::default();
        let p = Path::new("/w/a.rs");
        s.edited(p, 1);
        let g1 = s.dispatched(p, [0].into()).unwrap();
        let g2 = s.edited(p, 1);
        assert!(!s.answered(p, g1, 0, vec![item("old")], 10));
        assert_eq!(s.get(p).unwrap().entry.checked_at, 0);
        s.dispatched(p, [0].into());
        assert!(s.answered(p, g2, 0, vec![item("new")], 20));
        let e = &s.get(p).unwrap().entry;
        assert_eq!((e.checked_at, e.errors), (20, 1));
        assert_eq!(e.items[0].message, "new");
    }

    #[test]
    fn settles_only_when_every_source_answered_and_dedups() {
        let mut s = Session::default();
        let p = Path::new("/w/a.py");
        s.edited(p, 1);
        let g = s.dispatched(p, [0, 1].into()).unwrap();
        assert!(!s.answered(p, g, 0, vec![item("x")], 5));
        assert_eq!(s.get(p).unwrap().entry.checked_at, 0);
        assert!(s.answered(p, g, 1, vec![item("x"), item("y")], 6));
        assert_eq!(s.get(p).unwrap().entry.items.len(), 2);
    }
}
