//! The session of one workspace: every file changed since the session began, with what each
//! diagnostic source last said about it and for which content.
//!
//! Generations: each edit of a file bumps its `gen`. Per file and per source the session
//! records the generation the source last answered for ([`SourceState::answered`]); a result
//! counts only if the file is still at the generation it was computed for. The entry's
//! `items` are always the merge of the answers for the current generation (never an older
//! answer beside a fresh one); `checkedAt` is set only when every source that handles the
//! file has answered for it (DESIGN §9, per-source settling). Partial feedback is a reading
//! of this state ([`FileState::partial_ready`], the entry's `sources`), not a second pipeline.
//!
//! A project-wide source may report on a file it was not asked about (another file's edit
//! changed it). When that changes what the source says, the file's generation moves on too:
//! the reporting source is fresh for it, the others are asked again ([`Session::refreshed`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Item, Severity};

use super::baseline::{self, BaseView};
use super::{silencing, SourceId, SourceInfo};
use openfiles_wire::spec::{FileEntry, SourceStatus};

/// The pseudo-source of explanatory items (sensitive or unhandled files).
const NOTE_SOURCE: SourceId = usize::MAX;

/// What one source said about one file, and for which generation. Carries everything a
/// later classification (baseline: new / pre-existing / affected) needs per source.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceState {
    /// The plugin's name (the key in the entry's `sources`).
    pub name: String,
    /// A project-wide source (one run checks a project; usually the slow one).
    pub project_wide: bool,
    /// The generation this source last answered for; 0 = never.
    pub answered: u64,
    /// Epoch ms of that answer.
    pub at: u64,
    /// Its items for that generation.
    pub items: Vec<Item>,
    /// A project-wide source a partial answer waits for (within `hooks.knock_on_wait_ms`):
    /// its last run over the file's project was quick (set when it is launched).
    pub awaited: bool,
    /// Its check rides the session start's warm-up (`CheckRequest::committed`: the warm
    /// server's first analysis checks the edit's users first): a partial answer waits for
    /// it until the deadline, not only the knock-on time.
    pub rides: bool,
    /// Its answer for `answered` was early (`CheckResponse::more`): it still owes the rest,
    /// which its follow-up check brings; the file is not settled before.
    pub more: bool,
}

/// The baselines a file's classification still waits for. A partial answer waits only for
/// its own (`own`): what the per-file sources say is classified against the committed
/// text's check, which is quick; a project-wide source's run over the commit's snapshot
/// (seconds on a real project) holds back only that source's items, which join the entry,
/// classified, once it is in — never shown as if the agent had introduced them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    /// The session's baseline itself (its commit) or a per-file source's check of the
    /// file's committed text.
    pub own: bool,
    /// The project-wide sources (by name) whose run over the commit's snapshot is coming.
    pub wide: BTreeSet<String>,
}

impl Pending {
    /// Nothing is still coming.
    pub fn is_empty(&self) -> bool {
        !self.own && self.wide.is_empty()
    }

    /// Whether `source`'s answer can be classified now (its baseline is in).
    fn ready(&self, source: &str) -> bool {
        !self.own && !self.wide.contains(source)
    }
}

/// One session file.
#[derive(Debug, Clone)]
pub struct FileState {
    pub entry: FileEntry,
    /// Bumped on every edit (and when a source saw the file change through another file).
    pub gen: u64,
    /// Whether checks were dispatched for `gen` (then `sources` is the set that handles it).
    pub dispatched: bool,
    /// Every source that handles the file, with its last answer.
    pub sources: BTreeMap<SourceId, SourceState>,
    /// When the last edit was reported (epoch ms), to recognise the watcher's echo of it.
    pub edited_at: u64,
    /// The file's baseline and the text its items are for: how items are classified
    /// (introduced or already there). `None`: not classified.
    pub view: Option<BaseView>,
    /// The baselines this file's classification still waits for: the file does not settle
    /// before they are in (the feedback would otherwise miss what the edit broke).
    pub base_pending: Pending,
    /// The lines where an earlier content of the file (in this session) had an error the
    /// baseline did not have ([`silencing::silenceable`]): a cast to "anything" there is
    /// named, elsewhere not ([`silencing::keep_cast`]). They are lines of the text whose
    /// line hashes `errors_at` holds (when known), carried to the text the items are for
    /// ([`baseline::line_map_edited`]: an edited line stays itself).
    pub earlier_errors: BTreeSet<u32>,
    pub errors_at: Option<Vec<u64>>,
}

impl FileState {
    fn new(path: PathBuf) -> Self {
        FileState {
            entry: FileEntry::pending(path),
            gen: 0,
            dispatched: false,
            sources: BTreeMap::new(),
            edited_at: 0,
            view: None,
            base_pending: Pending::default(),
            earlier_errors: BTreeSet::new(),
            errors_at: None,
        }
    }

    /// True when the file's current content has been checked by every source.
    pub fn settled(&self) -> bool {
        self.entry.checked_at != 0
    }

    /// Whether `source` has answered for the current generation.
    pub fn fresh(&self, source: SourceId) -> bool {
        self.sources
            .get(&source)
            .is_some_and(|s| s.answered == self.gen)
    }

    /// Whether `source` still owes an answer for the dispatched generation (or the rest of
    /// an early one).
    pub fn owes(&self, source: SourceId) -> bool {
        self.dispatched
            && self
                .sources
                .get(&source)
                .is_some_and(|s| s.answered != self.gen || s.more)
    }

    /// Settled, or every source that is not project-wide has answered for the current
    /// content (and at least one source has) and their baselines are in: what the fast
    /// sources found is known, and what it broke elsewhere would be. A project-wide source's
    /// baseline is not waited for ([`Pending`]). With `knock_on`, the
    /// [`awaited`](SourceState::awaited) project-wide sources must have answered too, with
    /// their baselines in (what the edit broke in files nobody edited is then known).
    pub fn partial_ready(&self, knock_on: bool) -> bool {
        let pending = &self.base_pending;
        self.settled()
            || (self.dispatched
                && !pending.own
                && self.sources.values().any(|s| s.answered == self.gen)
                && self.sources.values().all(|s| {
                    (s.project_wide && !(knock_on && s.awaited) && !s.rides)
                        || (s.answered == self.gen && pending.ready(&s.name))
                }))
    }

    /// [`earlier_errors`](Self::earlier_errors) as lines of the text the view is for.
    fn earlier_errors_now(&self) -> BTreeSet<u32> {
        let now = self.view.as_ref().and_then(|v| v.now_lines.as_deref());
        match (self.errors_at.as_deref(), now) {
            (Some(at), Some(now)) if at != now => {
                let map = baseline::line_map_edited(at, now);
                self.earlier_errors
                    .iter()
                    .filter_map(|l| map.get((*l as usize).wrapping_sub(1)).copied().flatten())
                    .collect()
            }
            _ => self.earlier_errors.clone(),
        }
    }

    /// Rebuild the entry from the answers for the current generation, each source's items
    /// classified against the file's baseline where it is known.
    fn rebuild(&mut self, now: u64) {
        let gen = self.gen;
        let view = self.view.as_ref();
        let earlier = &self.earlier_errors_now();
        let pending = &self.base_pending;
        let classified: Vec<Vec<Item>> = self
            .sources
            .values()
            // A project-wide source whose baseline is still coming is held back: its items
            // could not be told introduced from already there.
            .filter(|s| s.answered == gen && !pending.wide.contains(&s.name))
            .map(|s| {
                let mut items = s.items.clone();
                if let Some(v) = view.filter(|v| v.known.contains(&s.name)) {
                    baseline::classify(Some(&v.file), v.now_lines.as_deref(), &s.name, &mut items);
                }
                if s.project_wide {
                    // A project-wide source's hints (the warm server's "is not accessed",
                    // given where it stands in for a language server: `CheckRequest::served`)
                    // have no baseline to be told new by: its run over the commit's snapshot
                    // is the command line's, which prints none. Left unclassified.
                    items
                        .iter_mut()
                        .filter(|i| i.severity == Severity::Hint)
                        .for_each(|i| i.introduced = None);
                }
                // What hides a problem is named only when the session added it (a cast only
                // where an earlier content had an error).
                items.retain(|i| silencing::keep_cast(i, earlier));
                items
            })
            .collect();
        let items = merge(classified.iter().flatten());
        let complete = self.dispatched
            && self.base_pending.is_empty()
            && self.sources.values().all(|s| s.answered == gen && !s.more);
        let path = std::mem::take(&mut self.entry.path);
        let affected_by = std::mem::take(&mut self.entry.affected_by);
        let mut entry = FileEntry::checked(path, if complete { now.max(1) } else { 0 }, items);
        entry.affected_by = affected_by;
        entry.sources = self
            .sources
            .iter()
            .filter(|(id, _)| **id != NOTE_SOURCE)
            .map(|(_, s)| {
                let answered_at = if s.answered == gen && !s.more {
                    s.at.max(1)
                } else {
                    0
                };
                (s.name.clone(), SourceStatus { answered_at })
            })
            .collect();
        self.entry = entry;
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
            // A checked entry stands as it was written; its sources are learnt again at
            // the next check (source ids do not outlive the service).
            st.dispatched = entry.checked_at != 0;
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

    pub fn iter(&self) -> impl Iterator<Item = (&PathBuf, &FileState)> {
        self.files.iter()
    }

    /// Record an edit: the file joins the session (if new), its generation moves on and its
    /// entry goes back to "not checked yet" with no items (none is for the new content).
    pub fn edited(&mut self, path: &Path, now: u64) -> u64 {
        let st = self
            .files
            .entry(path.to_owned())
            .or_insert_with(|| FileState::new(path.to_owned()));
        st.edited_at = now;
        // What the content before this edit had: the errors a cast in this edit may hide.
        st.earlier_errors = st.earlier_errors_now();
        if let Some(lines) = st.view.as_ref().and_then(|v| v.now_lines.clone()) {
            st.errors_at = Some(lines);
        }
        let errors = st.entry.items.iter().filter(|i| silencing::silenceable(i));
        st.earlier_errors.extend(errors.map(|i| i.line));
        st.gen += 1;
        st.dispatched = false;
        // Edited now: no longer only a file the session broke.
        st.entry.affected_by.clear();
        st.rebuild(now);
        st.gen
    }

    /// The file's baseline view changed (its baseline came in, or the text its items are for
    /// was read): classify again; `pending` says which baselines it needs are still coming.
    pub fn set_view(&mut self, path: &Path, view: Option<BaseView>, pending: Pending, now: u64) {
        if let Some(st) = self.files.get_mut(path) {
            if st.view != view || st.base_pending != pending {
                st.view = view;
                st.base_pending = pending;
                st.rebuild(now);
            }
        }
    }

    /// A file the session did not edit where a project-wide source found problems the
    /// baseline did not have: it joins (or stays in) the session as affected, settled with
    /// what the source says, `by` naming the edited files (keys) of the check that found them.
    /// An edited file is left alone (its own checks decide).
    #[allow(clippy::too_many_arguments)]
    pub fn affected(
        &mut self,
        path: &Path,
        source: SourceId,
        name: &str,
        items: Vec<Item>,
        view: BaseView,
        by: Vec<String>,
        now: u64,
    ) {
        if self
            .files
            .get(path)
            .is_some_and(|s| s.entry.affected_by.is_empty())
        {
            return;
        }
        let st = self
            .files
            .entry(path.to_owned())
            .or_insert_with(|| FileState::new(path.to_owned()));
        st.gen = st.gen.max(1);
        st.dispatched = true;
        st.sources.clear();
        st.sources.insert(
            source,
            SourceState {
                name: name.to_owned(),
                project_wide: true,
                answered: st.gen,
                at: now,
                items,
                awaited: false,
                rides: false,
                more: false,
            },
        );
        st.view = Some(view);
        st.base_pending = Pending::default();
        let mut by = by;
        by.sort();
        by.dedup();
        st.entry.affected_by = by;
        st.rebuild(now);
    }

    /// Mark whether a partial answer waits for project-wide `source` on this file.
    pub fn set_awaited(&mut self, path: &Path, source: SourceId, awaited: bool) {
        if let Some(s) = self
            .files
            .get_mut(path)
            .and_then(|st| st.sources.get_mut(&source))
        {
            s.awaited = awaited;
            s.rides = false;
        }
    }

    /// Mark project-wide `source`'s check of this file as riding the warm-up (see
    /// [`SourceState::rides`]).
    pub fn set_rides(&mut self, path: &Path, source: SourceId) {
        if let Some(s) = self
            .files
            .get_mut(path)
            .and_then(|st| st.sources.get_mut(&source))
        {
            s.rides = true;
        }
    }

    /// Whether the project-wide source that found an affected file's errors is checking an
    /// edited file again (it has not answered for that file's current content): what it
    /// found predates that edit, and may be gone (the agent reverted or fixed it).
    pub fn rechecking(&self, affected: &FileState) -> bool {
        affected.sources.keys().any(|id| {
            self.files.values().any(|f| {
                f.entry.affected_by.is_empty()
                    && f.sources.get(id).is_some_and(|s| s.answered != f.gen)
            })
        })
    }

    /// Whether `path` is in the session only because an edit broke it.
    pub fn is_affected(&self, path: &Path) -> bool {
        self.files
            .get(path)
            .is_some_and(|s| !s.entry.affected_by.is_empty())
    }

    /// A deleted file leaves the session. Returns true if it was there.
    pub fn remove(&mut self, path: &Path) -> bool {
        self.files.remove(path).is_some()
    }

    /// Forget every file.
    pub fn clear(&mut self) {
        self.files.clear();
    }

    /// Checks for the current generation go to `sources` (every source that handles the
    /// file). Returns the sources to ask: those that have not answered for this generation
    /// (all of them after an edit; the others after a [`Session::refreshed`]). When none is
    /// left to ask, the file settles now.
    pub fn dispatched(&mut self, path: &Path, sources: &[SourceInfo], now: u64) -> Vec<SourceId> {
        let Some(st) = self.files.get_mut(path) else {
            return Vec::new();
        };
        st.dispatched = true;
        let handling: BTreeSet<SourceId> = sources.iter().map(|s| s.id).collect();
        st.sources.retain(|id, _| handling.contains(id));
        for s in sources {
            let state = st.sources.entry(s.id).or_insert_with(|| SourceState {
                name: s.name.clone(),
                project_wide: s.project_wide,
                answered: 0,
                at: 0,
                items: Vec::new(),
                awaited: false,
                rides: false,
                more: false,
            });
            state.name.clone_from(&s.name);
            state.project_wide = s.project_wide;
        }
        let gen = st.gen;
        let ask: Vec<SourceId> = st
            .sources
            .iter()
            .filter(|(_, s)| s.answered != gen)
            .map(|(id, _)| *id)
            .collect();
        st.rebuild(now);
        ask
    }

    /// Fixes that came after `source`'s answer for `path` at generation `gen` (a plugin's
    /// second step, `CheckRequest::fixes_only`): each item of that answer, and of the entry,
    /// without fixes that matches a fixed item by position, code and message gets its fixes.
    /// Returns how many items got fixes; none when the file moved on (the fixes are for
    /// text it no longer has) or the source's answer is not the current one.
    pub fn add_fixes(&mut self, path: &Path, gen: u64, source: SourceId, fixed: &[Item]) -> usize {
        let Some(st) = self.files.get_mut(path) else {
            return 0;
        };
        if st.gen != gen {
            return 0;
        }
        let FileState { sources, entry, .. } = st;
        let Some(s) = sources.get_mut(&source).filter(|s| s.answered == gen) else {
            return 0;
        };
        let key = |i: &Item| (i.line, i.column, i.code.clone(), i.message.clone());
        let mut n = 0;
        for f in fixed.iter().filter(|f| !f.fixes.is_empty()) {
            for i in s.items.iter_mut().chain(entry.items.iter_mut()) {
                if i.fixes.is_empty() && key(i) == key(f) {
                    i.fixes.clone_from(&f.fixes);
                    n += 1;
                }
            }
        }
        n
    }

    /// A source answered for `path` at generation `gen`. Returns true if the file's entry
    /// changed (the answer is for the current content).
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
        if st.gen != gen || !st.dispatched {
            return false; // stale: a newer edit is on its way
        }
        let Some(state) = st.sources.get_mut(&source) else {
            return false; // the source no longer handles the file
        };
        state.answered = gen;
        state.at = now;
        state.items = items;
        state.more = false;
        st.rebuild(now);
        true
    }

    /// `source`'s answer for `path` at generation `gen` was early: the rest is owed (its
    /// follow-up check answers it); the file does not settle before.
    pub fn owes_more(&mut self, path: &Path, gen: u64, source: SourceId, now: u64) {
        let Some(st) = self.files.get_mut(path).filter(|st| st.gen == gen) else {
            return;
        };
        if let Some(s) = st.sources.get_mut(&source).filter(|s| s.answered == gen) {
            s.more = true;
            st.rebuild(now);
        }
    }

    /// A project-wide source reported on a file it was not asked about. When that changes
    /// what it says about a file whose current content it has already answered for (or that
    /// is settled), the file moves to a new generation: the source is fresh for it with these
    /// items, every other source must answer again. Returns true when the file needs that
    /// re-check. While the source still owes an answer for the file, its own answer decides.
    pub fn refreshed(
        &mut self,
        path: &Path,
        source: SourceId,
        name: &str,
        items: Vec<Item>,
        now: u64,
    ) -> bool {
        let Some(st) = self.files.get_mut(path) else {
            return false;
        };
        if !st.dispatched || st.owes(source) {
            return false;
        }
        if st.fresh(source) && st.sources.get(&source).is_some_and(|s| s.items == items) {
            return false;
        }
        if !st.settled() && !st.fresh(source) {
            return false;
        }
        st.gen += 1;
        st.dispatched = false;
        let state = st.sources.entry(source).or_insert_with(|| SourceState {
            name: name.to_owned(),
            project_wide: true,
            answered: 0,
            at: 0,
            items: Vec::new(),
            awaited: false,
            rides: false,
            more: false,
        });
        state.answered = st.gen;
        state.at = now;
        state.items = items;
        st.rebuild(now);
        true
    }

    /// Settle a file with exactly these items (no source handles it, or it is sensitive).
    pub fn settle_with(&mut self, path: &Path, items: Vec<Item>, now: u64) {
        if let Some(st) = self.files.get_mut(path) {
            st.dispatched = true;
            st.sources.clear();
            st.sources.insert(
                NOTE_SOURCE,
                SourceState {
                    name: "openfiles".into(),
                    project_wide: false,
                    answered: st.gen,
                    at: now,
                    items,
                    awaited: false,
                    rides: false,
                    more: false,
                },
            );
            st.rebuild(now);
        }
    }
}

/// Merge the sources' items (identical items once: same line, column, severity, code and
/// message, whichever source said it), sorted by position.
pub fn merge<'a>(items: impl Iterator<Item = &'a Item>) -> Vec<Item> {
    let mut seen = BTreeMap::new();
    let mut out: Vec<Item> = Vec::new();
    for it in items {
        let key = (
            it.line,
            it.column,
            it.severity,
            it.code.clone(),
            it.message.clone(),
        );
        match seen.get(&key) {
            None => {
                seen.insert(key, out.len());
                out.push(it.clone());
            }
            // The same problem from two sources (tsc and the language server): kept once,
            // with the fixes whichever had them.
            Some(&i) => {
                if out[i].fixes.is_empty() && !it.fixes.is_empty() {
                    out[i].fixes.clone_from(&it.fixes);
                }
            }
        }
    }
    out.sort_by_key(|a| (a.line, a.column, a.severity));
    out
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
    use crate::diagnostics::baseline::BaseFile;

    fn item(msg: &str) -> Item {
        Item {
            introduced: None,
            fixes: Vec::new(),
            line: 1,
            column: 1,
            severity: Severity::Error,
            source: "t".into(),
            code: None,
            message: msg.into(),
        }
    }

    fn src(id: SourceId, project_wide: bool) -> SourceInfo {
        SourceInfo {
            id,
            name: format!("s{id}"),
            project_wide,
            project_markers: Vec::new(),
            needs_project: false,
            checks_texts: false,
            late_fixes: false,
            warm: false,
            superseded: false,
            serves: Vec::new(),
        }
    }

    /// A cast to "anything" the session added (`as any`, at `line`).
    fn cast(line: u32) -> Item {
        Item {
            line,
            severity: Severity::Warning,
            source: silencing::ITEM_SOURCE.into(),
            code: Some(silencing::CAST_ANY.into()),
            introduced: Some(true),
            ..item("added `as any`")
        }
    }

    #[test]
    fn a_cast_is_named_only_where_an_earlier_content_had_an_error() {
        let mut s = Session::default();
        let p = Path::new("/w/a.ts");
        let g1 = s.edited(p, 1);
        s.dispatched(p, &[src(1, false)], 1);
        // The first edit: tsc finds a new error at line 3; one the baseline had at line 7.
        let new_error = Item {
            line: 3,
            introduced: Some(true),
            ..item("Type 'string' is not assignable to type 'number'.")
        };
        let old_error = Item {
            line: 7,
            introduced: Some(false),
            ..item("already there")
        };
        s.answered(p, g1, 1, vec![new_error, old_error.clone()], 2);
        // The second edit hides line 3's error with a cast; casts at 5 (fresh code, nothing
        // silenced) and 7 (an error the baseline had) are not named.
        let g2 = s.edited(p, 3);
        s.dispatched(p, &[src(1, false)], 3);
        s.answered(p, g2, 1, vec![cast(3), cast(5), cast(7)], 4);
        let lines: Vec<u32> = s
            .get(p)
            .unwrap()
            .entry
            .items
            .iter()
            .map(|i| i.line)
            .collect();
        assert_eq!(lines, vec![3]);
        // A cast in a file whose earlier contents had no error is never named.
        let q = Path::new("/w/fresh.ts");
        let g = s.edited(q, 5);
        s.dispatched(q, &[src(1, false)], 5);
        s.answered(q, g, 1, vec![cast(1)], 6);
        assert!(s.get(q).unwrap().entry.items.is_empty());
    }

    #[test]
    fn a_partial_answer_waits_for_the_per_file_baselines_not_a_project_wide_ones() {
        let mut s = Session::default();
        let p = Path::new("/w/utils.py");
        let g = s.edited(p, 1);
        let sources = [src(1, false), src(2, true)];
        s.dispatched(p, &sources, 1);
        let view = |known: &[&str]| BaseView {
            file: BaseFile {
                lines: None,
                items: [("s2".to_owned(), vec![item("already there")])].into(),
                covered: BTreeMap::new(),
            },
            known: known.iter().map(|k| (*k).to_owned()).collect(),
            now_lines: None,
        };
        // The per-file check of the committed text is still coming: no partial answer.
        let own = Pending {
            own: true,
            wide: ["s2".to_owned()].into(),
        };
        s.set_view(p, Some(view(&[])), own, 2);
        s.answered(p, g, 1, vec![item("undefined name")], 3);
        s.answered(p, g, 2, vec![item("already there"), item("new")], 3);
        assert!(!s.get(p).unwrap().partial_ready(false));
        // It is in; the project-wide source's snapshot run is not: the fast answer goes out,
        // without the project-wide source's items (old and new cannot be told apart yet).
        let wide = Pending {
            own: false,
            wide: ["s2".to_owned()].into(),
        };
        s.set_view(p, Some(view(&["s1"])), wide.clone(), 4);
        let st = s.get(p).unwrap();
        assert!(st.partial_ready(false));
        assert!(!st.settled());
        assert_eq!(
            st.entry
                .items
                .iter()
                .map(|i| i.message.as_str())
                .collect::<Vec<_>>(),
            vec!["undefined name"]
        );
        // An awaited project-wide source (knock-on time) still needs its baseline.
        s.set_awaited(p, 2, true);
        assert!(!s.get(p).unwrap().partial_ready(true));
        // The snapshot run is in: its items join, classified; the file settles.
        s.set_view(p, Some(view(&["s1", "s2"])), Pending::default(), 5);
        let st = s.get(p).unwrap();
        assert!(st.settled());
        let mut shown: Vec<(&str, Option<bool>)> = st
            .entry
            .items
            .iter()
            .map(|i| (i.message.as_str(), i.introduced))
            .collect();
        shown.sort();
        assert_eq!(
            shown,
            vec![
                ("already there", Some(false)),
                ("new", Some(true)),
                ("undefined name", Some(true))
            ]
        );
    }

    #[test]
    fn a_project_wide_sources_hints_are_left_unclassified() {
        // The warm server standing in for a language server gives its hints; the commit's
        // baseline of that source is the command line's, which has none.
        let mut s = Session::default();
        let p = Path::new("/w/app.py");
        let g = s.edited(p, 1);
        s.dispatched(p, &[src(1, false), src(2, true)], 1);
        let view = BaseView {
            file: BaseFile {
                lines: None,
                items: [("s2".to_owned(), vec![item("already there")])].into(),
                covered: BTreeMap::new(),
            },
            known: ["s1".to_owned(), "s2".to_owned()].into(),
            now_lines: None,
        };
        s.set_view(p, Some(view), Pending::default(), 2);
        let hint = |msg: &str| Item {
            severity: Severity::Hint,
            ..item(msg)
        };
        s.answered(p, g, 1, vec![hint("a language server's hint")], 3);
        s.answered(
            p,
            g,
            2,
            vec![
                item("already there"),
                item("new"),
                hint("\"os\" is not accessed"),
            ],
            3,
        );
        let mut shown: Vec<(&str, Option<bool>)> = s
            .get(p)
            .unwrap()
            .entry
            .items
            .iter()
            .map(|i| (i.message.as_str(), i.introduced))
            .collect();
        shown.sort();
        assert_eq!(
            shown,
            vec![
                ("\"os\" is not accessed", None),
                ("a language server's hint", Some(true)),
                ("already there", Some(false)),
                ("new", Some(true)),
            ]
        );
    }

    #[test]
    fn late_fixes_join_their_items_only_for_the_generation_they_are_for() {
        let mut s = Session::default();
        let p = Path::new("/w/a.ts");
        let g1 = s.edited(p, 1);
        s.dispatched(p, &[src(1, false)], 1);
        s.answered(p, g1, 1, vec![item("boom")], 2);
        let mut fixed = item("boom");
        fixed.fixes = vec![openfiles_plugin_api::Fix {
            title: "t".into(),
            safe: true,
            files: Vec::new(),
        }];
        assert_eq!(
            s.add_fixes(p, g1, 2, std::slice::from_ref(&fixed)),
            0,
            "another source"
        );
        assert_eq!(s.add_fixes(p, g1, 1, std::slice::from_ref(&fixed)), 2);
        assert_eq!(s.get(p).unwrap().entry.items[0].fixes.len(), 1);
        let g2 = s.edited(p, 3);
        s.dispatched(p, &[src(1, false)], 3);
        s.answered(p, g2, 1, vec![item("boom")], 4);
        assert_eq!(
            s.add_fixes(p, g1, 1, &[fixed.clone()]),
            0,
            "fixes for the old text"
        );
        assert!(s.get(p).unwrap().entry.items[0].fixes.is_empty());
        // Two sources with the same problem: one item, with the fixes one of them had.
        let merged = merge([item("boom"), fixed].iter());
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].fixes.len(), 1);
    }

    #[test]
    fn a_file_an_edit_broke_is_unconfirmed_while_its_source_checks_a_newer_edit() {
        let mut s = Session::default();
        let (a, b) = (Path::new("/w/a.py"), Path::new("/w/b.py"));
        let sources = [src(0, false), src(1, true)];
        let g = s.edited(a, 1);
        s.dispatched(a, &sources, 1);
        s.answered(a, g, 0, Vec::new(), 2);
        s.answered(a, g, 1, Vec::new(), 3);
        let by = vec!["a.py".to_string()];
        s.affected(
            b,
            1,
            "s1",
            vec![item("missing")],
            BaseView::default(),
            by,
            3,
        );
        let affected = |s: &Session| s.get(b).unwrap().clone();
        assert!(
            !s.rechecking(&affected(&s)),
            "found for a.py's current content"
        );
        // The agent edits a.py again (reverts): until the project-wide source answers for
        // that content, what it found in b.py predates the edit.
        let g2 = s.edited(a, 4);
        assert!(s.rechecking(&affected(&s)));
        s.dispatched(a, &sources, 4);
        s.answered(a, g2, 0, Vec::new(), 5);
        assert!(
            s.rechecking(&affected(&s)),
            "the language server's answer says nothing about b.py"
        );
        s.answered(a, g2, 1, Vec::new(), 6);
        assert!(!s.rechecking(&affected(&s)));
    }

    #[test]
    fn stale_result_never_settles_a_newer_edit() {
        let mut s = Session::default();
        let p = Path::new("/w/a.rs");
        let g1 = s.edited(p, 1);
        assert_eq!(s.dispatched(p, &[src(0, false)], 1), vec![0]);
        let g2 = s.edited(p, 1);
        assert!(!s.answered(p, g1, 0, vec![item("old")], 10));
        assert_eq!(s.get(p).unwrap().entry.checked_at, 0);
        s.dispatched(p, &[src(0, false)], 1);
        assert!(s.answered(p, g2, 0, vec![item("new")], 20));
        let e = &s.get(p).unwrap().entry;
        assert_eq!((e.checked_at, e.errors), (20, 1));
        assert_eq!(e.items[0].message, "new");
    }

    #[test]
    fn settles_only_when_every_source_answered_and_dedups() {
        let mut s = Session::default();
        let p = Path::new("/w/a.py");
        let g = s.edited(p, 1);
        s.dispatched(p, &[src(0, false), src(1, true)], 1);
        assert!(s.answered(p, g, 0, vec![item("x")], 5));
        let st = s.get(p).unwrap();
        assert_eq!(st.entry.checked_at, 0);
        assert!(st.partial_ready(false));
        assert!(
            st.partial_ready(true),
            "a project-wide source not awaited is not waited for"
        );
        s.set_awaited(p, 1, true);
        let st = s.get(p).unwrap();
        assert!(st.partial_ready(false));
        assert!(
            !st.partial_ready(true),
            "an awaited project-wide source is waited for while knock-on may be"
        );
        assert_eq!(
            st.entry.items.len(),
            1,
            "the fast source's items show at once"
        );
        assert_eq!(st.entry.running().collect::<Vec<_>>(), vec!["s1"]);
        assert!(s.answered(p, g, 1, vec![item("x"), item("y")], 6));
        assert_eq!(s.get(p).unwrap().entry.items.len(), 2);
        assert_eq!(s.get(p).unwrap().entry.checked_at, 6);
    }

    #[test]
    fn an_edit_drops_every_older_answer() {
        let mut s = Session::default();
        let p = Path::new("/w/a.ts");
        let g = s.edited(p, 1);
        s.dispatched(p, &[src(0, false), src(1, true)], 1);
        s.answered(p, g, 0, vec![item("old lsp")], 2);
        s.answered(p, g, 1, vec![item("old tsc")], 3);
        let g2 = s.edited(p, 4);
        s.dispatched(p, &[src(0, false), src(1, true)], 4);
        s.answered(p, g2, 1, vec![item("new tsc")], 5);
        let e = &s.get(p).unwrap().entry;
        assert_eq!(e.checked_at, 0);
        let msgs: Vec<_> = e.items.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(msgs, vec!["new tsc"], "no item for older content");
    }

    #[test]
    fn a_refresh_by_one_source_asks_the_others_again() {
        let mut s = Session::default();
        let p = Path::new("/w/b.ts");
        let g = s.edited(p, 1);
        s.dispatched(p, &[src(0, false), src(1, true)], 1);
        s.answered(p, g, 0, vec![item("Expected 1 arguments, but got 2")], 2);
        s.answered(p, g, 1, vec![item("Expected 1 arguments, but got 2")], 3);
        assert!(!s.refreshed(p, 1, "s1", vec![item("Expected 1 arguments, but got 2")], 4));
        assert!(s.refreshed(p, 1, "s1", vec![item("Expected 2 arguments")], 5));
        let st = s.get(p).unwrap();
        assert_eq!(st.entry.checked_at, 0);
        let msgs: Vec<_> = st.entry.items.iter().map(|i| i.message.as_str()).collect();
        assert_eq!(msgs, vec!["Expected 2 arguments"], "the stale item is gone");
        assert_eq!(s.dispatched(p, &[src(0, false), src(1, true)], 6), vec![0]);
        let g2 = s.get(p).unwrap().gen;
        assert!(s.answered(p, g2, 0, vec![item("Expected 2 arguments")], 7));
        assert_eq!(s.get(p).unwrap().entry.checked_at, 7);
    }
}
