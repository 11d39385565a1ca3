//! The baseline's jobs, off the pipeline's actor (see `base.rs` for its side): a per-file
//! source's check of a file's committed text, a project-wide source's run over a commit's
//! snapshot — one run per repository, commit and trust level, shared by the worktrees at it
//! ([`shared`]) — and the session start's prefetch of such a run; when the actor starts the
//! project-wide ones (deferred while the session start's warm-up runs, unless a run kept at
//! the commit is only read).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openfiles_plugin_api::CheckRequest;

use super::handle::{BaseMsg, Committed, JobError, Msg};
use super::Pipeline;
use crate::diagnostics::baseline::git;
use crate::diagnostics::baseline::{self, shared, CommittedFiles};
use crate::diagnostics::bound::Class;
use crate::diagnostics::{project_root, CheckError, Checker, SourceInfo};

/// A per-file source's answer for `path`'s committed text.
pub(super) async fn file_job(
    checker: Arc<dyn Checker>,
    root: &Path,
    commit: &str,
    source: &SourceInfo,
    path: &Path,
    timeout_ms: u64,
) -> Result<Option<Committed>, JobError> {
    let (r, c, p) = (root.to_owned(), commit.to_owned(), path.to_owned());
    let text = tokio::task::spawn_blocking(move || git::committed_text(&r, &c, &p)).await??;
    let Some(text) = text else {
        return Ok(None);
    };
    let lines = baseline::line_hashes(&text);
    let files = vec![path.to_owned()];
    let request = CheckRequest {
        workspace: root.to_owned(),
        // The servers the file's checks leave out, its committed text's check leaves out too.
        served: crate::diagnostics::served(&*checker, &files),
        files,
        texts: BTreeMap::from([(path.to_owned(), text)]),
        timeout_ms,
        ..Default::default()
    };
    let resp = checker.check(source.id, request).await?;
    let items = resp
        .files
        .into_iter()
        .filter(|f| f.path == path)
        .flat_map(|f| f.items)
        .collect();
    Ok(Some((lines, items)))
}

/// Run `source`'s baseline over `project` at `HEAD`'s commit ahead of the session's first
/// edit (the warm-up's prefetch, `warm.rs`): the run lands in the shared store
/// ([`shared`]), where the first edit's own job (or one of a worktree at the same commit)
/// finds it — waiting for it while it runs — instead of starting a second. What it found is
/// not kept here: the session's baseline is fixed at its first edit.
pub(super) async fn prefetch(
    checker: Arc<dyn Checker>,
    root: PathBuf,
    store: PathBuf,
    source: SourceInfo,
    file: PathBuf,
    timeout_ms: u64,
) -> Result<String, JobError> {
    let r = root.clone();
    let commit = tokio::task::spawn_blocking(move || git::head_commit(&r)).await??;
    let project = project_root(&file, &root, &source.project_markers);
    let job = ProjectJob {
        checker,
        root,
        commit: commit.clone(),
        store,
        legacy: None,
        source,
        project,
        file,
        timeout_ms,
    };
    job.run().await.map(|_| commit)
}

impl Pipeline {
    /// The session start's warm-up has its language servers up, or ended, or a check riding a
    /// warm server answered: once the warm-up ended (its warm servers' first analysis too)
    /// and no check rides, the project-wide baseline runs asked for meanwhile start.
    pub(super) fn base_warmed(&mut self) {
        if self.runs_wait() {
            return; // its warm servers still analyse, or an edit rides one: at its end
        }
        let jobs = std::mem::take(&mut self.base.deferred);
        self.spawn_project_jobs(jobs);
    }

    /// Start the project-wide baseline runs the prepared files asked for — or, while the
    /// session start's warm-up runs (language servers loading, a warm server's first
    /// analysis), defer them: beside that analysis, on click, a run over the commit took
    /// 10.9 s and the analysis 12.4 s instead of ~7 (2 cores), and an edit riding it
    /// (`schedule/ride.rs`) has its users' baseline from it. So do they while an edit rides a
    /// warm server after the warm-up (`Scheduler::riding`), until its answer. A run kept at
    /// the commit (an earlier session's, another worktree's) is only read: its job is looked
    /// for off the actor and, when it is kept, started at once ([`BaseMsg::Kept`]).
    pub(super) fn start_project_jobs(&mut self) {
        let due = std::mem::take(&mut self.base.due);
        if !self.runs_wait() {
            let mut jobs = std::mem::take(&mut self.base.deferred);
            jobs.extend(due);
            self.spawn_project_jobs(jobs);
            return;
        }
        // One workspace, one commit: one place to look in.
        let Some(first) = due.first() else {
            return;
        };
        let (store, commit, trusted) = (
            first.store.clone(),
            first.commit.clone(),
            first.checker.trusted(),
        );
        let root = first.root.clone();
        let asked: Vec<(String, PathBuf)> = due
            .iter()
            .map(|j| (j.source.name.clone(), j.project.clone()))
            .collect();
        self.base.deferred.extend(due);
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let Ok(place) = shared::Place::find(&store, &root, &commit, trusted) else {
                return;
            };
            for (source, project) in asked {
                let rel = project.strip_prefix(&root).unwrap_or(Path::new(""));
                if place.kept_run(&source, rel).is_some() {
                    let kept = BaseMsg::Kept { source, project };
                    let _ = tx.send(Msg::Base(kept));
                }
            }
        });
    }

    /// Whether project-wide baseline runs wait ([`Pipeline::start_project_jobs`]): the
    /// session start's warm-up runs, a check rides a warm server after it
    /// (`Scheduler::riding`), or files a warm source checks wait for their per-file
    /// baselines (its check, which may ride, is dispatched once those answered).
    fn runs_wait(&self) -> bool {
        let warm = |p: &PathBuf| {
            let sources = self.scheduler.sources_for(p);
            sources.iter().any(|s| s.warm && s.project_wide)
        };
        self.servers_warming
            || self.warming()
            || self.scheduler.riding()
            || self.base.held().any(warm)
    }

    /// `source`'s run over `project` is kept at the commit: its deferred job (if it still
    /// is) starts now — it only reads the run.
    pub(super) fn base_kept(&mut self, source: &str, project: &Path) {
        let (now, later): (Vec<ProjectJob>, Vec<ProjectJob>) =
            std::mem::take(&mut self.base.deferred)
                .into_iter()
                .partition(|j| j.source.name == source && j.project == project);
        self.base.deferred = later;
        if !now.is_empty() {
            tracing::info!(root = %self.root.display(), source, project = %project.display(), "the commit's baseline is kept: read during the warm-up");
        }
        self.spawn_project_jobs(now);
    }

    /// Spawn `jobs`: those of one warm source (`Capabilities::warm`) at one commit as one run
    /// of all their projects (as the scheduler launches a warm source's projects due at once:
    /// the pyright plugin checks a monorepo's packages as one program), the others one each.
    fn spawn_project_jobs(&mut self, jobs: Vec<ProjectJob>) {
        let mut together: BTreeMap<(String, String), Vec<ProjectJob>> = BTreeMap::new();
        for job in jobs {
            if job.source.warm {
                let key = (job.source.name.clone(), job.commit.clone());
                together.entry(key).or_default().push(job);
            } else {
                job.spawn(self.tx.clone());
            }
        }
        for jobs in together.into_values() {
            spawn_together(jobs, self.tx.clone());
        }
    }
}

/// A project-wide source's run over the committed tree of one project.
pub(super) struct ProjectJob {
    pub(super) checker: Arc<dyn Checker>,
    pub(super) root: PathBuf,
    pub(super) commit: String,
    /// The store of shared baselines (`<state>/baselines`).
    pub(super) store: PathBuf,
    /// This workspace's folder of an older openfiles (snapshots per workspace), removed.
    pub(super) legacy: Option<PathBuf>,
    pub(super) source: SourceInfo,
    pub(super) project: PathBuf,
    /// A file of the project (the run is asked about it; it need not exist in the commit).
    pub(super) file: PathBuf,
    pub(super) timeout_ms: u64,
}

impl ProjectJob {
    /// Run it in the background; its result comes back to the actor through `tx`.
    pub(super) fn spawn(self, tx: tokio::sync::mpsc::UnboundedSender<Msg>) {
        spawn_together(vec![self], tx);
    }

    /// The run, shared by every worktree of the repository at the commit and trust level
    /// ([`shared`]): the first job runs it, the others wait for it and read it.
    async fn run(self) -> Result<CommittedFiles, JobError> {
        // One job, one result.
        run_together(vec![self])
            .await
            .pop()
            .map_or(Err(JobError::TrustChanged), |(_, _, result)| result)
    }
}

/// Jobs of one source over projects of one commit, run in the background; each project's
/// result comes back to the actor through `tx` (see [`run_together`]).
pub(super) fn spawn_together(jobs: Vec<ProjectJob>, tx: tokio::sync::mpsc::UnboundedSender<Msg>) {
    tokio::spawn(async move {
        for (source, project, result) in run_together(jobs).await {
            let _ = tx.send(Msg::Base(BaseMsg::Project {
                source,
                project,
                result,
            }));
        }
    });
}

/// Each job's source, project and result.
type Together = Vec<(String, PathBuf, Result<CommittedFiles, JobError>)>;

/// The runs of `jobs` — one source, one workspace, one commit; their projects differ — over
/// the commit's snapshot: each project's run is shared by every worktree of the repository
/// at the commit and trust level ([`shared`]: its run file, and one flight at a time over
/// it), and those not run yet are checked in one request (the projects of a warm source due
/// at once, as the scheduler launches them: the pyright plugin checks its packages as one
/// program), its answer split per project.
async fn run_together(jobs: Vec<ProjectJob>) -> Together {
    let Some(first) = jobs.first() else {
        return Vec::new();
    };
    let (checker, source) = (first.checker.clone(), first.source.clone());
    let trusted = checker.trusted();
    let (root, commit, store) = (
        first.root.clone(),
        first.commit.clone(),
        first.store.clone(),
    );
    let legacy: Vec<PathBuf> = jobs.iter().filter_map(|j| j.legacy.clone()).collect();
    let (r, c) = (root.clone(), commit.clone());
    let place = blocking(move || {
        for old in legacy {
            let _ = std::fs::remove_dir_all(old);
        }
        shared::Place::find(&store, &r, &c, trusted)
    })
    .await;
    let place = match place {
        Ok(p) => p,
        Err(e) => return fail_all(&jobs, e),
    };
    // Every project's flight, taken in one order (no two batches wait for each other).
    let mut files: Vec<(PathBuf, &ProjectJob)> = jobs
        .iter()
        .map(|j| {
            let rel = j.project.strip_prefix(&root).unwrap_or(Path::new(""));
            (place.run_file(&source.name, rel), j)
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut flight_files: Vec<&PathBuf> = files.iter().map(|(f, _)| f).collect();
    flight_files.dedup();
    let flights: Vec<_> = flight_files
        .into_iter()
        .map(|f| shared::flight(f))
        .collect();
    let mut held = Vec::new();
    for f in &flights {
        held.push(f.lock().await);
    }
    if let Some(runs) = kept_whole(&files, &place).await {
        return answers(&files, runs, &root, &source, Path::new(""));
    }
    let (r, c, p) = (root.clone(), commit.clone(), place.clone());
    let snap = blocking(move || {
        p.touch_and_prune();
        git::snapshot(&r, &c, &p.commit_dir)
    })
    .await;
    let snap = match snap {
        Ok(s) => s,
        Err(e) => return fail_all(&jobs, e),
    };
    let runs = match kept_or_run(&files, &root, &snap, trusted).await {
        Ok(runs) => runs,
        Err(e) => return fail_all(&jobs, e),
    };
    drop(held);
    answers(&files, runs, &root, &source, &snap)
}

/// Each job's answer from its project's run (in `files`' order), read over the snapshot at
/// `snap` (for a run kept whole, not read).
fn answers(
    files: &[(PathBuf, &ProjectJob)],
    runs: Vec<Option<shared::Run>>,
    root: &Path,
    source: &SourceInfo,
    snap: &Path,
) -> Together {
    files
        .iter()
        .zip(runs)
        .map(|((_, job), run)| {
            let files = run.map(|r| committed(&r, root, snap)).unwrap_or_default();
            (source.name.clone(), job.project.clone(), Ok(files))
        })
        .collect()
}

/// Every project's run, when each is kept whole (a warm-up's answer with its committed
/// lines, [`shared::Place::keep_seed`]): no snapshot of the commit is needed to read them.
async fn kept_whole(
    files: &[(PathBuf, &ProjectJob)],
    place: &shared::Place,
) -> Option<Vec<Option<shared::Run>>> {
    let (run_files, place): (Vec<PathBuf>, _) = (
        files.iter().map(|(f, _)| f.clone()).collect(),
        place.clone(),
    );
    let runs = blocking(move || {
        let snap = place.snap();
        let whole =
            |f: &PathBuf| shared::Run::load(f).filter(|r| r.snap == snap && r.lines.is_some());
        let runs = run_files.iter().map(whole).collect::<Option<Vec<_>>>();
        if runs.is_some() {
            place.touch_and_prune(); // used now
        }
        Ok::<_, JobError>(runs)
    })
    .await;
    Some(runs.ok()??.into_iter().map(Some).collect())
}

/// Each project's run (by its run file, in `files`' order): the one kept for the snapshot
/// `snap`, else from one check of all those without one, saved for the other worktrees —
/// none if the trust level the check ran at (`trusted`) changed meanwhile.
async fn kept_or_run(
    files: &[(PathBuf, &ProjectJob)],
    root: &Path,
    snap: &Path,
    trusted: bool,
) -> Result<Vec<Option<shared::Run>>, JobError> {
    let mut runs: Vec<Option<shared::Run>> = files
        .iter()
        .map(|(f, _)| shared::Run::load(f).filter(|r| r.snap == snap))
        .collect();
    let due: Vec<&ProjectJob> = files
        .iter()
        .zip(&runs)
        .filter(|(_, run)| run.is_none())
        .map(|((_, j), _)| *j)
        .collect();
    let Some(first) = due.first() else {
        return Ok(runs);
    };
    let checker = first.checker.clone();
    let found = check_together(&due, root, snap).await?;
    if checker.trusted() != trusted {
        return Err(JobError::TrustChanged);
    }
    for ((file, job), run) in files.iter().zip(runs.iter_mut()) {
        if run.is_none() {
            let new = shared::Run {
                origin: root.to_owned(),
                snap: snap.to_owned(),
                files: found.get(&job.project).cloned().unwrap_or_default(),
                lines: None,
            };
            new.save(file);
            *run = Some(new);
        }
    }
    Ok(runs)
}

/// `f` off the runtime's threads, its error or the task's as a job's.
async fn blocking<T: Send + 'static, E: Into<JobError> + Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, JobError> {
    tokio::task::spawn_blocking(f).await?.map_err(Into::into)
}

/// Every job's result, `e` (shared by all of them).
fn fail_all(jobs: &[ProjectJob], e: JobError) -> Together {
    let e = Arc::new(e);
    jobs.iter()
        .map(|j| {
            let err = JobError::Together(e.clone());
            (j.source.name.clone(), j.project.clone(), Err(err))
        })
        .collect()
}

/// What a kept run found, per file of the workspace at `root`, with the committed lines (the
/// run's own, else read in the snapshot at `snap`).
fn committed(run: &shared::Run, root: &Path, snap: &Path) -> CommittedFiles {
    run.items_for(root)
        .into_iter()
        .map(|(rel, items)| {
            let lines = match &run.lines {
                Some(kept) => kept.get(&rel).cloned(),
                None => std::fs::read(snap.join(&rel))
                    .ok()
                    .map(|b| baseline::line_hashes(&String::from_utf8_lossy(&b))),
            };
            (root.join(rel), lines, items)
        })
        .collect()
}

/// The source over the snapshot at `snap`, asked about a file of each of `jobs`' projects at
/// once: per project, the files it found problems in (relative to `snap`), each file given to
/// the deepest of the projects holding it.
async fn check_together(
    jobs: &[&ProjectJob],
    root: &Path,
    snap: &Path,
) -> Result<BTreeMap<PathBuf, Vec<(PathBuf, Vec<openfiles_plugin_api::Item>)>>, CheckError> {
    let Some(first) = jobs.first() else {
        return Ok(BTreeMap::new());
    };
    if jobs.len() > 1 {
        tracing::debug!(root = %root.display(), source = %first.source.name,
            projects = jobs.len(), "baseline run of projects together");
    }
    let in_snap = |p: &Path| snap.join(p.strip_prefix(root).unwrap_or(p));
    let request = CheckRequest {
        workspace: snap.to_owned(),
        files: jobs.iter().map(|j| in_snap(&j.file)).collect(),
        report_all: true,
        cache_of: Some(root.to_owned()),
        timeout_ms: first.timeout_ms,
        ..Default::default()
    };
    let bound = first.checker.run_bound();
    let _place = match &bound {
        Some(b) => Some(b.acquire(Class::Baseline).await),
        None => None,
    };
    let resp = first.checker.check(first.source.id, request).await?;
    let projects: Vec<(PathBuf, PathBuf)> = jobs
        .iter()
        .map(|j| (j.project.clone(), in_snap(&j.project)))
        .collect();
    let mut found: BTreeMap<PathBuf, Vec<(PathBuf, Vec<openfiles_plugin_api::Item>)>> =
        BTreeMap::new();
    for f in resp.files.into_iter().filter(|f| !f.items.is_empty()) {
        let Ok(rel) = f.path.strip_prefix(snap).map(Path::to_owned) else {
            continue;
        };
        let deepest = projects
            .iter()
            .filter(|(_, at)| f.path.starts_with(at))
            .max_by_key(|(_, at)| at.components().count());
        // One project: every file it reported is its run's (as a lone run keeps them).
        let owner = deepest.or(projects.first().filter(|_| projects.len() == 1));
        if let Some((project, _)) = owner {
            found
                .entry(project.clone())
                .or_default()
                .push((rel, f.items));
        }
    }
    Ok(found)
}
