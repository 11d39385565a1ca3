//! Scheduling: which checks run when (DESIGN §4.3).
//!
//! The pipeline hands over the files that became dirty after a burst; the scheduler asks the
//! [`Session`] which sources owe an answer for each, batches them per source (one request
//! per source, or per source and project for project-wide sources) and starts the checks.
//! A warm project-wide source's projects due at once (the monorepo case) run as ONE check —
//! its plugin serves them together, one analysis of its warm server — whose answer is split
//! per project: each project is in flight, answered and followed up as if it ran alone.
//! Project-wide sources have at most one run per project in flight, with one follow-up that
//! collects every file dirtied meanwhile; for a source a newer edit supersedes
//! ([`SourceInfo::superseded`], the project's tests) the run in flight is cancelled instead
//! (its task aborted, which cancels the check in the plugin) and one run starts for its files
//! and the new ones. A finished check comes back to the pipeline as a
//! [`Checked`] through the `done` callback; the pipeline merges it into the session and calls
//! [`Scheduler::finished`] to start the follow-up. A run that answered early
//! (`CheckResponse::more`: the source goes on) has a follow-up over its files at once, which
//! brings the rest; a newer edit of its project does not wait behind that follow-up (the
//! rest of an analysis the new content restarts) but cancels it, as for a superseded source,
//! and one run checks its files and the new ones — the new edit's hook is not held up by
//! the previous edit's rest.
//!
//! It also keeps how long each project-wide source's last runs over each project took: a
//! source that was quick in one of its last [`RUNS_KEPT`] runs (at most
//! `hooks.knock_on_wait_ms`; one run slowed by a busy machine does not stop the waits), or
//! has not run yet (unless it keeps a warm server the session start's warm-up is still
//! analysing with), is marked awaited on the files it is launched for, so a hook's partial
//! answer waits for what the edit broke elsewhere (see [`super::waiters`]). A warm source's
//! first run over a project — its server's start and whole first analysis — is not kept (on
//! click, 10–12 s against 1 s for an edit's run: the session's second edit would not wait
//! for it).
//!
//! A project-wide run takes a place under the service-wide bound on such runs
//! ([`super::bound`]) before it starts.
//!
//! The scheduler owns no session state: it reads and marks the session the pipeline lends it.

mod ride;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use openfiles_plugin_api::{markers, CheckRequest, CheckResponse};

use super::baseline::shared::AtCommit;
use super::bound::Class;
use super::session::{self, Session};
use super::{project_root, CheckError, Checker, SourceId, SourceInfo};
use ride::with_committed;

/// How many of a project-wide source's last run times per project decide whether it is quick.
pub const RUNS_KEPT: usize = 3;

/// A finished check: which source, for which project, for which files at which generation.
pub struct Checked {
    /// The check's id (a run in flight is known by it).
    pub check: u64,
    pub source: SourceId,
    pub project: Option<PathBuf>,
    pub files: Vec<(PathBuf, u64)>,
    pub result: Result<CheckResponse, CheckError>,
    /// How long the check took.
    pub took: Duration,
}

/// A project-wide run that ended, for [`Scheduler::finished`].
pub struct Ended {
    /// Its check id.
    pub check: u64,
    pub source: SourceId,
    pub project: PathBuf,
    /// How long it took, when it succeeded.
    pub ran: Option<Duration>,
    /// It answered early (`CheckResponse::more`): its files' follow-up runs at once.
    pub more: bool,
}

/// Where finished checks go (the pipeline's channel).
pub type Done = Arc<dyn Fn(Checked) + Send + Sync>;

/// A project-wide run in flight: its check id, its files, and how to cancel it.
struct Running {
    check: u64,
    files: Vec<PathBuf>,
    abort: tokio::task::AbortHandle,
    /// The rest of an early answer over the same content (no file dirtied since): a newer
    /// edit of the project cancels it, as for a superseded source (see [`Scheduler`]).
    rest: bool,
    /// A warm source's first run over the project: its time is the server's start and first
    /// analysis, not what an edit costs, and is not kept in `last_runs`. (Not every run
    /// during the session start's warm-up: the warm-up's own analysis can outlast many
    /// edits, whose runs are the ones that tell the source's speed.)
    cold: bool,
    /// A check riding the warm server (`Scheduler::rides`): the project's baseline runs wait
    /// for its answer ([`Scheduler::riding`]).
    rides: bool,
}

/// Checks in flight and follow-ups of one workspace.
pub struct Scheduler {
    root: PathBuf,
    checker: Arc<dyn Checker>,
    done: Done,
    in_flight: BTreeMap<(SourceId, PathBuf), Running>,
    follow_up: BTreeMap<(SourceId, PathBuf), BTreeSet<PathBuf>>,
    /// How long the last successful runs of a project-wide source over a project took
    /// (oldest first, at most [`RUNS_KEPT`]).
    last_runs: BTreeMap<(SourceId, PathBuf), VecDeque<Duration>>,
    /// When the last session start's warm-up (`warm.rs`) began and ended (epoch ms; the end
    /// is `u64::MAX` while it runs): a source that keeps a warm server is analysing the whole
    /// workspace for it, and language servers are loading their projects.
    warm_up: Option<(u64, u64)>,
    /// Where the runs kept at the session's baseline's commit are, when it is taken at one (an
    /// edit riding the warm-up answers part of it: see [`Scheduler::rides`]).
    baseline: Option<AtCommit>,
    /// The (source, project) pairs with a run that ended (see [`Running::cold`]).
    ran_once: BTreeSet<(SourceId, PathBuf)>,
    next_check: u64,
}

impl Scheduler {
    pub fn new(root: &Path, checker: Arc<dyn Checker>, done: Done) -> Scheduler {
        Scheduler {
            root: root.to_owned(),
            checker,
            done,
            in_flight: BTreeMap::new(),
            follow_up: BTreeMap::new(),
            last_runs: BTreeMap::new(),
            warm_up: None,
            baseline: None,
            ran_once: BTreeSet::new(),
            next_check: 1,
        }
    }

    /// The sources that handle `path`: those the checker names, less those that handle a file
    /// only inside a project when no folder from `path`'s up to the workspace marks one.
    pub fn sources_for(&self, path: &Path) -> Vec<SourceInfo> {
        let mut sources = self.checker.sources_for(path);
        sources.retain(|s| !s.needs_project || markers::near(&s.project_markers, path, &self.root));
        sources
    }

    /// The checker, for checks outside the session (the baseline's).
    pub fn checker(&self) -> Arc<dyn Checker> {
        self.checker.clone()
    }

    /// Dispatch the dirty files: sensitive ones, those refused at dispatch (swapped, special
    /// or larger than `max_file_bytes`) and those no source handles settle at once with an
    /// explanatory item; the others go to every source that owes them an answer.
    pub fn dispatch(
        &mut self,
        session: &mut Session,
        dirty: BTreeSet<PathBuf>,
        sensitive: &BTreeSet<PathBuf>,
        timeout_ms: u64,
        max_file_bytes: u64,
        knock_on_wait_ms: u64,
    ) {
        let now = openfiles_wire::spec::now_ms();
        let mut per_source: BTreeMap<SourceId, (SourceInfo, Vec<PathBuf>)> = BTreeMap::new();
        for path in dirty {
            if session.get(&path).is_none() {
                continue;
            }
            if sensitive.contains(&path) {
                session.settle_with(&path, vec![session::sensitive_item()], now);
                continue;
            }
            if let Err(why) = crate::policy::checkable(&path, max_file_bytes) {
                session.settle_with(&path, vec![session::refused_item(&why)], now);
                continue;
            }
            let sources = self.sources_for(&path);
            if sources.is_empty() {
                session.settle_with(&path, vec![session::unhandled_item(&path)], now);
                continue;
            }
            let ask = session.dispatched(&path, &sources, now);
            for s in sources.into_iter().filter(|s| ask.contains(&s.id)) {
                per_source
                    .entry(s.id)
                    .or_insert_with(|| (s, Vec::new()))
                    .1
                    .push(path.clone());
            }
        }
        for (_, (info, files)) in per_source {
            if !info.project_wide {
                self.launch(session, &info, None, files, timeout_ms, false);
                continue;
            }
            self.dispatch_projects(session, &info, files, timeout_ms, knock_on_wait_ms);
        }
    }

    /// Dispatch a project-wide source's files: per project, a run now, or its files joined
    /// to the run in flight's follow-up (or, for a superseded source, that run cancelled and
    /// one run for both). A warm source's projects due now run as one check (see
    /// [`Scheduler::launch_together`]).
    fn dispatch_projects(
        &mut self,
        session: &mut Session,
        info: &SourceInfo,
        files: Vec<PathBuf>,
        timeout_ms: u64,
        knock_on_wait_ms: u64,
    ) {
        let id = info.id;
        let mut due: Vec<(PathBuf, Vec<PathBuf>, bool)> = Vec::new();
        let mut by_project: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        for f in files {
            let proj = project_root(&f, &self.root, &info.project_markers);
            by_project.entry(proj).or_default().push(f);
        }
        for (proj, files) in by_project {
            let awaited = self.quick(
                info,
                &proj,
                self.edited_warming(session, &files),
                knock_on_wait_ms,
            );
            for f in &files {
                session.set_awaited(f, id, awaited);
            }
            let rides = self.rides(session, info, &proj, &files);
            if rides && knock_on_wait_ms > 0 {
                for f in &files {
                    session.set_rides(f, id);
                }
            }
            let key = (id, proj.clone());
            let rest = self.in_flight.get(&key).is_some_and(|r| r.rest);
            if (info.superseded || rest) && self.in_flight.contains_key(&key) {
                // Its run is over content that is gone (or only the rest of an early
                // answer, which a run over the new content brings too): cancel it, and
                // check its files with these (and any follow-up) in one run now.
                let mut all: BTreeSet<PathBuf> = files.into_iter().collect();
                if let Some(old) = self.in_flight.remove(&key) {
                    old.abort.abort();
                    all.extend(old.files);
                }
                all.extend(self.follow_up.remove(&key).unwrap_or_default());
                let owed: Vec<PathBuf> = all
                    .into_iter()
                    .filter(|p| session.get(p).is_some_and(|s| s.owes(id)))
                    .collect();
                for f in &owed {
                    session.set_awaited(f, id, awaited);
                }
                self.launch(session, info, Some(proj), owed, timeout_ms, false);
            } else if self.in_flight.contains_key(&key) {
                self.follow_up.entry(key).or_default().extend(files);
            } else {
                due.push((proj, files, rides));
            }
        }
        if info.warm && !info.superseded && due.len() > 1 {
            let due = due.into_iter().map(|(p, f, _)| (p, f)).collect();
            self.launch_together(session, info, due, timeout_ms);
        } else {
            for (proj, files, rides) in due {
                self.launch(session, info, Some(proj), files, timeout_ms, rides);
            }
        }
    }

    /// The session start's warm-up began (`true`) or ended.
    pub fn set_warming(&mut self, on: bool) {
        let now = openfiles_wire::spec::now_ms();
        self.warm_up = if on {
            Some((now, u64::MAX))
        } else {
            self.warm_up.map(|(from, _)| (from, now))
        };
    }

    /// Where the runs kept at the session's baseline's commit are, when it is taken at one
    /// (`Baseline::usable`): set before each dispatch.
    pub fn set_baseline(&mut self, at: Option<AtCommit>) {
        self.baseline = at;
    }

    /// Whether one of `files` was last edited while the session start's warm-up ran (its
    /// check may be dispatched after it ended: held until a language server, busy with the
    /// warm-up, checked the committed text).
    fn edited_warming(&self, session: &Session, files: &[PathBuf]) -> bool {
        let Some((from, to)) = self.warm_up else {
            return false;
        };
        files.iter().any(|f| {
            session
                .get(f)
                .is_some_and(|s| (from..to).contains(&s.edited_at))
        })
    }

    /// Whether a partial answer should wait for project-wide `source` over `project`: one of
    /// its last successful runs took at most `knock_on_wait_ms`, or it has not run yet (the
    /// wait is bounded by that time anyway) — unless the files were edited during the
    /// session start's warm-up (`warming`) and it has no run kept. A source that keeps a
    /// warm server then answers after the warm-up's whole analysis, and its baseline comes
    /// from a run over the commit's snapshot (an edit during the warm-up makes its answer no
    /// baseline, `seed.rs`). Any other's first run competes with the language servers still
    /// loading their projects, its baseline run besides (on ky, 2 cores: `tsc` took 2.1 s
    /// and the TypeScript server's load 0.6 s longer). Either way the hook would wait out
    /// the knock-on time for nothing: the edited file's own problems go out at once, and
    /// what the source finds is owed to the session.
    fn quick(
        &self,
        source: &SourceInfo,
        project: &Path,
        warming: bool,
        knock_on_wait_ms: u64,
    ) -> bool {
        let limit = Duration::from_millis(knock_on_wait_ms);
        knock_on_wait_ms > 0
            && match self.last_runs.get(&(source.id, project.to_owned())) {
                Some(runs) => runs.iter().any(|took| *took <= limit),
                None => !warming,
            }
    }

    /// Whether a run of `source` over `project` launched now is cold (see [`Running::cold`]).
    fn cold(&self, source: &SourceInfo, project: &Path) -> bool {
        source.warm && !self.ran_once.contains(&(source.id, project.to_owned()))
    }

    /// A project-wide run ended: start its follow-up with the files that still owe it.
    pub fn finished(
        &mut self,
        session: &mut Session,
        ended: Ended,
        timeout_ms: u64,
        knock_on_wait_ms: u64,
    ) {
        let Ended {
            check,
            source,
            project,
            ran,
            more,
        } = ended;
        // A run cancelled for a newer one may still have answered: the newer one is in flight.
        let key = (source, project.clone());
        let cold = self
            .in_flight
            .get(&key)
            .is_some_and(|r| r.check == check && r.cold);
        self.ran_once.insert(key.clone());
        if let Some(took) = ran.filter(|_| !cold) {
            let runs = self.last_runs.entry(key.clone()).or_default();
            if runs.len() == RUNS_KEPT {
                runs.pop_front();
            }
            runs.push_back(took);
        }
        // Only the rest of an early answer: no file was dirtied while it ran.
        let rest = more && !self.follow_up.contains_key(&key);
        match self.in_flight.get(&key) {
            Some(r) if r.check == check => {
                if let Some(done) = self.in_flight.remove(&key) {
                    if more {
                        // The rest of its answer: the same files (those still owing it).
                        self.follow_up
                            .entry(key.clone())
                            .or_default()
                            .extend(done.files);
                    }
                }
            }
            _ => return,
        }
        let Some(next) = self.follow_up.remove(&(source, project.clone())) else {
            return;
        };
        let files: Vec<PathBuf> = next
            .into_iter()
            .filter(|p| session.get(p).is_some_and(|s| s.owes(source)))
            .collect();
        let info = files.first().and_then(|f| {
            self.checker
                .sources_for(f)
                .into_iter()
                .find(|s| s.id == source)
        });
        if let Some(info) = info {
            let warming = self.edited_warming(session, &files);
            let awaited = self.quick(&info, &project, warming, knock_on_wait_ms);
            for f in &files {
                session.set_awaited(f, source, awaited);
            }
            self.launch(session, &info, Some(project), files, timeout_ms, false);
            if let Some(r) = self.in_flight.get_mut(&key) {
                r.rest = rest;
            }
        }
    }

    /// The other session files of `project` that `source` handles: a project-wide run
    /// reports on them too.
    fn also_report(
        &self,
        session: &Session,
        source: SourceId,
        project: &Path,
        files: &[PathBuf],
    ) -> Vec<PathBuf> {
        session
            .iter()
            .map(|(p, _)| p)
            .filter(|p| p.starts_with(project) && !files.contains(p))
            .filter(|p| self.sources_for(p).iter().any(|s| s.id == source))
            .cloned()
            .collect()
    }

    fn launch(
        &mut self,
        session: &Session,
        info: &SourceInfo,
        project: Option<PathBuf>,
        files: Vec<PathBuf>,
        timeout_ms: u64,
        rides: bool,
    ) {
        let with_gen: Vec<(PathBuf, u64)> = files
            .iter()
            .filter_map(|f| session.get(f).map(|s| (f.clone(), s.gen)))
            .collect();
        if with_gen.is_empty() {
            return;
        }
        let also_report = match &project {
            Some(proj) => self.also_report(session, info.id, proj, &files),
            None => Vec::new(),
        };
        let check = self.next_check;
        let files: Vec<PathBuf> = with_gen.iter().map(|(p, _)| p.clone()).collect();
        let request = CheckRequest {
            id: check,
            workspace: self.root.clone(),
            served: super::served(&*self.checker, &files),
            files,
            also_report,
            timeout_ms,
            // Every file of the project with a problem: what the edits broke elsewhere.
            report_all: project.is_some(),
            ..Default::default()
        };
        self.next_check += 1;
        tracing::debug!(
            root = %self.root.display(),
            check,
            source = %info.name,
            files = request.files.len(),
            also = request.also_report.len(),
            project = ?project,
            "check sent"
        );
        let fut = if rides {
            let kept = self.baseline.clone().zip(project.clone());
            let kept = kept.map(|(at, proj)| (at, info.name.clone(), proj));
            let after = self.warm_up.is_some_and(|(_, to)| to != u64::MAX);
            with_committed(self.checker.clone(), info.id, request, kept, after)
        } else {
            self.checker.check(info.id, request)
        };
        let done = self.done.clone();
        let (source, name) = (info.id, info.name.clone());
        // A project-wide run first waits for a place under the service-wide bound; its
        // time (and the guard below) starts once it has one.
        let bound = project.as_ref().and_then(|_| self.checker.run_bound());
        let files_asked: Vec<PathBuf> = with_gen.iter().map(|(p, _)| p.clone()).collect();
        let key = project.as_ref().map(|p| (info.id, p.clone()));
        let task = tokio::spawn(async move {
            let (result, took) = answer(fut, bound, timeout_ms, name).await;
            done(Checked {
                check,
                source,
                project,
                files: with_gen,
                result,
                took,
            });
        });
        if let Some((_, proj)) = key {
            self.track(info, proj, check, files_asked, task.abort_handle(), rides);
        }
    }

    /// Launch a warm source's due projects as ONE check (the plugin serves them together:
    /// one analysis of its warm server, not one run after the other), its answer split per
    /// project ([`split`]): each comes back as that project's run — its own [`Checked`], in
    /// flight under its own key until then, with its own follow-up.
    fn launch_together(
        &mut self,
        session: &Session,
        info: &SourceInfo,
        due: Vec<(PathBuf, Vec<PathBuf>)>,
        timeout_ms: u64,
    ) {
        let mut parts: Vec<(PathBuf, Vec<(PathBuf, u64)>)> = Vec::new();
        let mut also_report = Vec::new();
        for (proj, files) in due {
            let with_gen: Vec<(PathBuf, u64)> = files
                .iter()
                .filter_map(|f| session.get(f).map(|s| (f.clone(), s.gen)))
                .collect();
            if with_gen.is_empty() {
                continue;
            }
            also_report.extend(self.also_report(session, info.id, &proj, &files));
            parts.push((proj, with_gen));
        }
        if parts.is_empty() {
            return;
        }
        let check = self.next_check;
        self.next_check += 1;
        let mut request = CheckRequest {
            id: check,
            workspace: self.root.clone(),
            files: parts
                .iter()
                .flat_map(|(_, files)| files.iter().map(|(p, _)| p.clone()))
                .collect(),
            also_report,
            timeout_ms,
            report_all: true,
            ..Default::default()
        };
        request.served = super::served(&*self.checker, &request.files);
        tracing::debug!(
            root = %self.root.display(),
            check,
            source = %info.name,
            files = request.files.len(),
            projects = parts.len(),
            "check sent (projects together)"
        );
        let fut = self.checker.check(info.id, request);
        let done = self.done.clone();
        let (source, name) = (info.id, info.name.clone());
        let bound = self.checker.run_bound();
        let projects = parts.clone();
        let task = tokio::spawn(async move {
            let (result, took) = answer(fut, bound, timeout_ms, name).await;
            let roots: Vec<PathBuf> = projects.iter().map(|(p, _)| p.clone()).collect();
            for ((project, files), result) in projects.into_iter().zip(split(result, &roots)) {
                done(Checked {
                    check,
                    source,
                    project: Some(project),
                    files,
                    result,
                    took,
                });
            }
        });
        let abort = task.abort_handle();
        for (proj, files) in parts {
            let files = files.into_iter().map(|(p, _)| p).collect();
            self.track(info, proj, check, files, abort.clone(), false);
        }
    }

    /// Keep a project-wide run launched now as in flight.
    fn track(
        &mut self,
        info: &SourceInfo,
        project: PathBuf,
        check: u64,
        files: Vec<PathBuf>,
        abort: tokio::task::AbortHandle,
        rides: bool,
    ) {
        let cold = self.cold(info, &project);
        let running = Running {
            check,
            files,
            abort,
            rest: false,
            cold,
            rides,
        };
        self.in_flight.insert((info.id, project), running);
    }
}

/// A check's answer and how long it took from when it had its place under the service-wide
/// `bound` on project-wide runs (when it is one).
async fn answer(
    fut: futures_util::future::BoxFuture<'static, Result<CheckResponse, CheckError>>,
    bound: Option<Arc<super::bound::RunBound>>,
    timeout_ms: u64,
    name: String,
) -> (Result<CheckResponse, CheckError>, Duration) {
    let asked = tokio::time::Instant::now();
    let _place = match bound {
        Some(b) => Some(b.acquire(Class::Edit).await),
        None => None,
    };
    let started = tokio::time::Instant::now();
    let queued_ms = (started - asked).as_millis() as u64;
    // The plugin host enforces the deadline; this bound only guards against a host bug.
    let limit = Duration::from_millis(timeout_ms + 10_000);
    let result = match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(CheckError::NoAnswer {
            source_name: name.clone(),
            after_ms: limit.as_millis() as u64,
        }),
    };
    let took = started.elapsed();
    tracing::debug!(
        source = %name,
        ms = took.as_millis() as u64,
        queued_ms,
        ok = result.is_ok(),
        more = result.as_ref().is_ok_and(|r| r.more),
        "check answered"
    );
    (result, took)
}

/// A joint check's answer as each of `projects`' own: a file's result goes to the deepest
/// project holding it (the one whose own run would have reported it); a failure is every
/// project's.
fn split(
    result: Result<CheckResponse, CheckError>,
    projects: &[PathBuf],
) -> Vec<Result<CheckResponse, CheckError>> {
    match result {
        Ok(mut resp) => {
            let files = std::mem::take(&mut resp.files);
            let mut parts = vec![resp; projects.len()];
            for f in files {
                let deepest = (0..projects.len())
                    .filter(|&i| f.path.starts_with(&projects[i]))
                    .max_by_key(|&i| projects[i].components().count());
                if let Some(i) = deepest {
                    parts[i].files.push(f);
                }
            }
            parts.into_iter().map(Ok).collect()
        }
        Err(e) => projects
            .iter()
            .map(|_| {
                Err(match &e {
                    CheckError::NoAnswer {
                        source_name,
                        after_ms,
                    } => CheckError::NoAnswer {
                        source_name: source_name.clone(),
                        after_ms: *after_ms,
                    },
                    CheckError::Source(why) => CheckError::Source(why.to_string().into()),
                })
            })
            .collect(),
    }
}
