//! The pipeline's side of the baseline (see [`crate::diagnostics::baseline`]): asking for it
//! when the session's first edit arrives, taking it (git and checks through the `Checker`,
//! off the actor; a project-wide source's is the session start's warm-up answer when it
//! kept one for the commit, `seed.rs`), and what it changes in the session: each file's classification view, the
//! files held back until a per-file source checked their committed text (a language server
//! must get the committed text before the current one; the files of one batch that the same
//! sources check are released together), the project-wide baseline runs (a warm source's
//! projects of one batch as one run), and the entries of files an edit
//! broke (`affectedBy`), added when a project-wide run finds new errors in them and removed
//! when those are gone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{confine, FileResult, Item, Severity};

use super::base_jobs::{file_job, ProjectJob};
use super::handle::{BaseMsg, Committed, JobError, Msg};
use super::Pipeline;
use crate::diagnostics::baseline::shared::AtCommit;
use crate::diagnostics::baseline::{
    self, git, BaseView, Baseline, CommittedFiles, Coverage, Taken,
};
use crate::diagnostics::session::Pending;
use crate::diagnostics::{project_root, writer, SourceId, SourceInfo};
use crate::policy::Verdict;
use openfiles_wire::spec::BaselineInfo;

/// Largest file read to map an item's line through the edit's diff.
const MAX_DIFF_BYTES: u64 = 4 << 20;

/// The baseline's state in the actor.
pub(super) struct BaseState {
    pub baseline: Baseline,
    /// Where snapshots and their runs are kept (shared by the worktrees of a repository);
    /// `None` when no baseline is taken.
    store: Option<PathBuf>,
    /// The per-workspace snapshot folder of an older openfiles, removed at the first run.
    legacy: Option<PathBuf>,
    /// The baseline changed since it was last written.
    pub changed: bool,
    asking_commit: bool,
    /// Files that wait for the commit to be known.
    awaiting_commit: BTreeSet<PathBuf>,
    /// Files held until their per-file baseline checks answered (count outstanding), and the
    /// group they are released with ([`Release`]).
    held: BTreeMap<PathBuf, (usize, Release)>,
    /// Files whose baseline checks answered, waiting for the rest of their group.
    released: BTreeMap<Release, Vec<PathBuf>>,
    /// The number of the last batch of files prepared.
    batch: u64,
    /// Reports on unedited files that wait for their project's baseline.
    knocks: Vec<Knock>,
    /// Project-wide baselines the session start's warm-up already holds (`seed.rs`); kept
    /// across sessions.
    pub seeds: super::seed::Seeds,
    /// Project-wide baseline runs asked for while the session start's warm-up has language
    /// servers loading their projects: they start once those answered
    /// ([`Pipeline::base_warmed`]), not beside them (on ky, 2 cores, a `tsc` run over the
    /// snapshot made the TypeScript server's load 0.6 s longer, and the first edit's own
    /// problems that much later). A warm project-wide source's analysis is not waited for.
    pub(super) deferred: Vec<ProjectJob>,
    /// Project-wide baseline runs asked for by the files being prepared, started together
    /// once they all were ([`Pipeline::start_project_jobs`]).
    pub(super) due: Vec<ProjectJob>,
}

/// Files prepared in one batch that the same sources check: held for their baselines, they
/// are dispatched together once the last one's answered — so a monorepo's packages edited at
/// once reach a project-wide source in one check (one program for the pyright plugin), not
/// as their committed texts' checks happen to answer; files of other kinds do not wait for
/// them.
type Release = (u64, Vec<String>);

/// A project-wide source's report on a file nobody edited, to judge against the baseline.
struct Knock {
    source: SourceId,
    name: String,
    project: PathBuf,
    path: PathBuf,
    items: Vec<Item>,
    by: Vec<String>,
}

impl BaseState {
    /// For a workspace whose session state lives at `state_path`, with commits' baselines
    /// kept in `store` (`None`: none is taken).
    pub fn load(state_path: Option<&Path>, store: Option<PathBuf>) -> BaseState {
        let (baseline, legacy) = match state_path {
            Some(p) => (
                writer::load_baseline(&writer::baseline_file(p)),
                p.parent()
                    .map(|d| d.join("baseline"))
                    .filter(|d| d.exists()),
            ),
            None => (Baseline::off(), None),
        };
        BaseState {
            baseline,
            store: store.filter(|_| state_path.is_some()),
            legacy,
            changed: false,
            asking_commit: false,
            awaiting_commit: BTreeSet::new(),
            held: BTreeMap::new(),
            released: BTreeMap::new(),
            batch: 0,
            knocks: Vec::new(),
            seeds: super::seed::Seeds::default(),
            deferred: Vec::new(),
            due: Vec::new(),
        }
    }

    /// Whether commits' baselines are taken (a warm-up's answer may then seed one).
    pub fn takes_baselines(&self) -> bool {
        self.store.is_some()
    }

    /// The files waiting for their per-file baseline checks before being dispatched.
    pub(super) fn held(&self) -> impl Iterator<Item = &PathBuf> {
        self.held.keys()
    }

    /// The store of shared baselines (`None`: no baseline is taken).
    pub(super) fn store(&self) -> Option<PathBuf> {
        self.store.clone()
    }

    /// Where the runs kept at the session's baseline's commit are, for checks at trust level
    /// `trusted`: `None` unless it is taken at a commit.
    pub(super) fn at_commit(&self, trusted: bool) -> Option<AtCommit> {
        let store = self.store.clone()?;
        let commit = self.baseline.commit()?.to_owned();
        let held = self
            .baseline
            .projects
            .iter()
            .flat_map(|(source, projects)| {
                let ready = projects.iter().filter(|(_, c)| **c == Coverage::Ready);
                ready.map(move |(project, _)| (source.clone(), project.clone()))
            });
        Some(AtCommit {
            store,
            commit,
            trusted,
            held: held.collect(),
        })
    }

    /// A new session: a new baseline at its first edit.
    pub fn clear(&mut self) {
        if self.baseline.taken != Taken::Off {
            self.baseline = Baseline::default();
            self.changed = true;
        }
        self.awaiting_commit.clear();
        self.held.clear();
        self.released.clear();
        self.knocks.clear();
        self.deferred.clear();
    }

    /// What `diagnostics.json` and `wait` replies say about it.
    pub fn info(&self) -> BaselineInfo {
        let (from, commit, why) = match &self.baseline.taken {
            Taken::Pending => ("pending", None, None),
            Taken::Head { commit } => ("head", Some(commit.clone()), None),
            Taken::None { why } => ("none", None, Some(why.clone())),
            Taken::Off => ("off", None, None),
        };
        BaselineInfo {
            from: from.into(),
            commit,
            why,
            failed: self.baseline.failures(),
        }
    }
}

impl Pipeline {
    /// Before dirty files are dispatched: ask for what their classification needs. Returns
    /// the files that may be dispatched now; the others are held until their baseline
    /// checks answered.
    pub(super) fn base_prepare(&mut self, dirty: BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
        match &self.base.baseline.taken {
            Taken::Off | Taken::None { .. } => return dirty,
            Taken::Pending => {
                self.base.awaiting_commit.extend(dirty);
                self.ask_commit();
                return BTreeSet::new();
            }
            Taken::Head { .. } => {}
        }
        let mut ready = BTreeSet::new();
        self.base.batch += 1;
        for path in dirty {
            if self.base.held.contains_key(&path) {
                continue; // dispatched when its baseline checks answer
            }
            if self.session.get(&path).is_none() || self.sensitive.contains(&path) {
                ready.insert(path);
                continue;
            }
            let mut waiting = 0;
            let sources = self.scheduler.sources_for(&path);
            for source in &sources {
                waiting += usize::from(self.start_baseline_for(&path, source));
            }
            if waiting > 0 {
                let names = sources.into_iter().map(|s| s.name).collect();
                let group = (self.base.batch, names);
                self.base.held.insert(path.clone(), (waiting, group));
            } else {
                ready.insert(path.clone());
            }
            self.refresh_view(&path);
        }
        ready
    }

    fn ask_commit(&mut self) {
        if self.base.asking_commit {
            return;
        }
        self.base.asking_commit = true;
        let (root, tx) = (self.root.clone(), self.tx.clone());
        tokio::task::spawn_blocking(move || {
            let r = git::head_commit(&root);
            let _ = tx.send(Msg::Base(BaseMsg::Commit(r)));
        });
    }

    /// Start what `source`'s baseline for `path` needs, if it is not in or on its way.
    /// Returns true when the file must wait for it before being dispatched (a per-file
    /// source checks the committed text first).
    fn start_baseline_for(&mut self, path: &Path, source: &SourceInfo) -> bool {
        let (Some(store), Some(commit)) = (
            self.base.store.clone(),
            self.base.baseline.commit().map(str::to_owned),
        ) else {
            return false;
        };
        let timeout_ms = self.config.diagnostics.check_timeout_ms;
        let checker = self.scheduler.checker();
        let (root, tx) = (self.root.clone(), self.tx.clone());
        if source.project_wide {
            let project = project_root(path, &self.root, &source.project_markers);
            if self.base.baseline.project(&source.name, &project).is_some() {
                return false;
            }
            if self.seeded(&commit, checker.trusted(), &source.name, &project) {
                return false;
            }
            self.base
                .baseline
                .set_project(&source.name, &project, Coverage::Running);
            let job = ProjectJob {
                checker,
                root,
                commit,
                store,
                legacy: self.base.legacy.take(),
                source: source.clone(),
                project,
                file: path.to_owned(),
                timeout_ms,
            };
            self.base.due.push(job);
            return false;
        }
        if self
            .base
            .baseline
            .file_coverage(&source.name, path)
            .is_some()
        {
            return false;
        }
        if !source.checks_texts {
            self.base.baseline.set_file_coverage(
                &source.name,
                path,
                Coverage::Failed {
                    why: "this source cannot check a committed text".into(),
                },
            );
            self.base.changed = true;
            return false;
        }
        self.base
            .baseline
            .set_file_coverage(&source.name, path, Coverage::Running);
        let (path, source) = (path.to_owned(), source.clone());
        tokio::spawn(async move {
            let result = file_job(checker, &root, &commit, &source, &path, timeout_ms).await;
            let _ = tx.send(Msg::Base(BaseMsg::File {
                path,
                source: source.name,
                result,
            }));
        });
        true
    }

    /// Take `source`'s baseline over `project` from the session start's warm-up when it
    /// kept one for `commit` (`seed.rs`): no snapshot run. Whether it did.
    fn seeded(&mut self, commit: &str, trusted: bool, source: &str, project: &Path) -> bool {
        let Some(files) = self
            .base
            .seeds
            .get(commit, trusted, source, project)
            .cloned()
        else {
            return false;
        };
        self.base_msg(BaseMsg::Project {
            source: source.to_owned(),
            project: project.to_owned(),
            result: Ok(files),
        });
        true
    }

    /// A baseline job ended.
    pub(super) fn base_msg(&mut self, m: BaseMsg) {
        self.base.changed = true;
        self.needs_write = true;
        match m {
            BaseMsg::Commit(r) => self.base_commit(r),
            BaseMsg::File {
                path,
                source,
                result,
            } => self.base_file(path, source, result),
            BaseMsg::Project {
                source,
                project,
                result,
            } => self.base_project(source, project, result),
            BaseMsg::Kept { source, project } => self.base_kept(&source, &project),
        }
    }

    /// The session's commit was asked for: the files waiting for it go on.
    fn base_commit(&mut self, r: Result<String, git::GitError>) {
        self.base.asking_commit = false;
        self.base.baseline.taken = match r {
            Ok(commit) => Taken::Head { commit },
            Err(why) => {
                tracing::info!(root = %self.root.display(), "no baseline for this session: {why}");
                Taken::None {
                    why: why.to_string(),
                }
            }
        };
        let waiting = std::mem::take(&mut self.base.awaiting_commit);
        self.dirty.extend(waiting);
    }

    /// A per-file source checked `path`'s committed text: recorded, and the file released
    /// once every such check of it is in.
    fn base_file(
        &mut self,
        path: PathBuf,
        source: String,
        result: Result<Option<Committed>, JobError>,
    ) {
        let coverage = match result {
            Ok(found) => {
                let (lines, items) = match found {
                    Some((lines, items)) => (Some(lines), items),
                    None => (None, Vec::new()),
                };
                self.base.baseline.record(&source, &path, lines, items);
                Coverage::Ready
            }
            Err(why) => {
                tracing::warn!(root = %self.root.display(), path = %path.display(), "baseline of {source} failed: {why}");
                Coverage::Failed {
                    why: why.to_string(),
                }
            }
        };
        self.base
            .baseline
            .set_file_coverage(&source, &path, coverage);
        if let Some((n, _)) = self.base.held.get_mut(&path) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                if let Some((_, group)) = self.base.held.remove(&path) {
                    self.release(path.clone(), group);
                }
            }
        }
        self.refresh_view(&path);
    }

    /// `path`'s baseline checks answered: dispatched with the rest of its group once none of
    /// them is held any more.
    fn release(&mut self, path: PathBuf, group: Release) {
        let waiting = self.base.held.values().any(|(_, g)| *g == group);
        let mut files = self.base.released.remove(&group).unwrap_or_default();
        files.push(path);
        if waiting {
            self.base.released.insert(group, files);
        } else {
            self.dirty.extend(files);
        }
    }

    /// A project-wide source's run over the commit's snapshot ended: recorded, the project's
    /// files classified again, and the knock-on entries that waited for it made.
    fn base_project(
        &mut self,
        source: String,
        project: PathBuf,
        result: Result<CommittedFiles, JobError>,
    ) {
        let coverage = match result {
            Ok(files) => {
                for (path, lines, items) in files {
                    self.base.baseline.record(&source, &path, lines, items);
                }
                Coverage::Ready
            }
            Err(why) => {
                tracing::warn!(root = %self.root.display(), project = %project.display(), "baseline of {source} failed: {why}");
                Coverage::Failed {
                    why: why.to_string(),
                }
            }
        };
        self.base.baseline.set_project(&source, &project, coverage);
        let paths: Vec<PathBuf> = self
            .session
            .iter()
            .filter(|(p, s)| p.starts_with(&project) && s.entry.affected_by.is_empty())
            .map(|(p, _)| p.clone())
            .collect();
        for p in paths {
            self.refresh_view(&p);
        }
        let (now, later): (Vec<Knock>, Vec<Knock>) = std::mem::take(&mut self.base.knocks)
            .into_iter()
            .partition(|k| k.name == source && k.project == project);
        self.base.knocks = later;
        for k in now {
            self.knock_on(k);
        }
    }

    /// A project-wide source's baseline of some files ahead of its run over `project` (its
    /// warm server's answer with the changed files' committed texts, `CheckResponse::baseline`):
    /// recorded per file, unless that run is in. An edited file's lines are its committed
    /// text's (recorded by its per-file baseline); another's, its text now: a ride answers
    /// only for files the tree did not change since the commit (`schedule/ride.rs`; the
    /// pyright plugin rides for no user the tree changed).
    pub(super) fn base_ahead(&mut self, source: &str, project: &Path, files: Vec<FileResult>) {
        if source.is_empty()
            || !self.base.baseline.usable()
            || self.base.baseline.project(source, project) == Some(&Coverage::Ready)
        {
            return;
        }
        for FileResult { path, items } in files {
            if !path.starts_with(project) {
                continue;
            }
            let edited = self.session.get(&path).is_some() && !self.session.is_affected(&path);
            let lines = if edited {
                None
            } else {
                current_lines(&self.root, &path)
            };
            self.base.baseline.record(source, &path, lines, items);
            self.base
                .baseline
                .set_file_coverage(source, &path, Coverage::Ready);
            self.base.changed = true;
            if edited {
                self.refresh_view(&path);
            }
        }
    }

    /// Compute `path`'s classification view from the baseline and the file's current text.
    pub(super) fn refresh_view(&mut self, path: &Path) {
        let Some(st) = self.session.get(path) else {
            return;
        };
        if !st.entry.affected_by.is_empty() {
            return;
        }
        let b = &self.base.baseline;
        if !b.usable() {
            let pending = Pending {
                own: b.taken == Taken::Pending && self.base.store.is_some(),
                ..Pending::default()
            };
            self.session
                .set_view(path, None, pending, openfiles_wire::spec::now_ms());
            return;
        }
        let mut known = BTreeSet::new();
        let mut pending = Pending::default();
        for s in self.scheduler.sources_for(path) {
            let project = project_root(path, &self.root, &s.project_markers);
            match b.known(&s.name, s.project_wide, path, &project) {
                Some(true) => {
                    known.insert(s.name);
                }
                Some(false) => {}
                None if s.project_wide => {
                    pending.wide.insert(s.name);
                }
                None => pending.own = true,
            }
        }
        let file = b.file(path).cloned().unwrap_or_default();
        // The lines also carry the session's earlier errors to this text (a cast that hides
        // one is named: `silencing::keep_cast`).
        let now_lines = if file.items.is_empty() && !crate::diagnostics::silencing::handles(path) {
            None
        } else {
            current_lines(&self.root, path)
        };
        let view = BaseView {
            file,
            known,
            now_lines,
        };
        self.session
            .set_view(path, Some(view), pending, openfiles_wire::spec::now_ms());
    }

    /// A project-wide source reported on `path`, which the session did not edit: if the
    /// baseline shows new errors there, the file joins the session as affected by the edited
    /// files `by`; if it shows none, an affected entry leaves.
    pub(super) fn knock_on_report(
        &mut self,
        source: SourceId,
        name: &str,
        project: &Path,
        path: PathBuf,
        items: Vec<Item>,
        by: Vec<String>,
    ) {
        self.knock_on(Knock {
            source,
            name: name.to_owned(),
            project: project.to_owned(),
            path,
            items,
            by,
        });
    }

    fn knock_on(&mut self, k: Knock) {
        if !self.base.baseline.usable() {
            return; // never blame an unedited file without a baseline
        }
        if !matches!(self.policy.judge(&k.path), Verdict::Check(_)) {
            return;
        }
        match self.base.baseline.known(&k.name, true, &k.path, &k.project) {
            None => {
                self.base
                    .knocks
                    .retain(|o| !(o.name == k.name && o.path == k.path));
                self.base.knocks.push(k);
                return;
            }
            Some(false) => return,
            Some(true) => {}
        }
        let file = self
            .base
            .baseline
            .file(&k.path)
            .cloned()
            .unwrap_or_default();
        let now_lines = current_lines(&self.root, &k.path);
        let mut items = k.items.clone();
        baseline::classify(Some(&file), now_lines.as_deref(), &k.name, &mut items);
        let broke = items
            .iter()
            .any(|i| i.introduced == Some(true) && i.severity == Severity::Error);
        let now = openfiles_wire::spec::now_ms();
        if broke {
            let view = BaseView {
                file,
                known: BTreeSet::from([k.name.clone()]),
                now_lines,
            };
            self.session
                .affected(&k.path, k.source, &k.name, k.items, view, k.by, now);
        } else if self.session.is_affected(&k.path) {
            self.session.remove(&k.path);
        }
        self.needs_write = true;
    }

    /// After a successful project-wide run of `name` over `project`: affected entries it
    /// found by that source and no longer reported are fixed (or reverted): they leave.
    pub(super) fn knock_on_cleared(
        &mut self,
        name: &str,
        project: &Path,
        reported: &BTreeSet<PathBuf>,
    ) {
        let gone: Vec<PathBuf> = self
            .session
            .iter()
            .filter(|(p, s)| {
                !s.entry.affected_by.is_empty()
                    && p.starts_with(project)
                    && !reported.contains(*p)
                    && s.sources.values().any(|src| src.name == name)
            })
            .map(|(p, _)| p.clone())
            .collect();
        for p in gone {
            self.session.remove(&p);
            self.needs_write = true;
        }
    }
}

/// The hashes of `path`'s current lines, read the confined way.
fn current_lines(root: &Path, path: &Path) -> Option<Vec<u64>> {
    let bytes = confine::read_workspace_file(root, path, MAX_DIFF_BYTES).ok()?;
    Some(baseline::line_hashes(&String::from_utf8_lossy(&bytes)))
}
