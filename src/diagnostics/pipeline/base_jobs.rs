//! The baseline's jobs, off the pipeline's actor (see `base.rs` for its side): a per-file
//! source's check of a file's committed text, a project-wide source's run over a commit's
//! snapshot — one run per repository, commit and trust level, shared by the worktrees at it
//! ([`shared`]) — and the session start's prefetch of such a run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openfiles_plugin_api::CheckRequest;

use super::handle::{BaseMsg, Committed, JobError, Msg};
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
        let (source, project) = (self.source.name.clone(), self.project.clone());
        tokio::spawn(async move {
            let result = self.run().await;
            let _ = tx.send(Msg::Base(BaseMsg::Project {
                source,
                project,
                result,
            }));
        });
    }

    /// The run, shared by every worktree of the repository at the commit and trust level
    /// ([`shared`]): the first job runs it, the others wait for it and read it.
    async fn run(self) -> Result<CommittedFiles, JobError> {
        let trusted = self.checker.trusted();
        let (root, commit, store, legacy) = (
            self.root.clone(),
            self.commit.clone(),
            self.store.clone(),
            self.legacy.clone(),
        );
        let place = tokio::task::spawn_blocking(move || {
            if let Some(old) = legacy {
                let _ = std::fs::remove_dir_all(old);
            }
            shared::Place::find(&store, &root, &commit, trusted)
        })
        .await??;
        let rel_project = self
            .project
            .strip_prefix(&self.root)
            .unwrap_or(Path::new(""));
        let run_file = place.run_file(&self.source.name, rel_project);
        let flight = shared::flight(&run_file);
        let _one_run = flight.lock().await;
        let (root, commit, p) = (self.root.clone(), self.commit.clone(), place.clone());
        let snap = tokio::task::spawn_blocking(move || {
            p.touch_and_prune();
            git::snapshot(&root, &commit, &p.commit_dir)
        })
        .await??;
        let run = match shared::Run::load(&run_file).filter(|r| r.snap == snap) {
            Some(run) => run,
            None => {
                let run = self.check(&snap).await?;
                if self.checker.trusted() != trusted {
                    return Err(JobError::TrustChanged);
                }
                run.save(&run_file);
                run
            }
        };
        Ok(run
            .items_for(&self.root)
            .into_iter()
            .map(|(rel, items)| {
                let lines = std::fs::read(snap.join(&rel))
                    .ok()
                    .map(|b| baseline::line_hashes(&String::from_utf8_lossy(&b)));
                (self.root.join(rel), lines, items)
            })
            .collect())
    }

    /// Run the source over the snapshot at `snap`.
    async fn check(&self, snap: &Path) -> Result<shared::Run, CheckError> {
        let rel_file = self.file.strip_prefix(&self.root).unwrap_or(&self.file);
        let request = CheckRequest {
            workspace: snap.to_owned(),
            files: vec![snap.join(rel_file)],
            report_all: true,
            cache_of: Some(self.root.clone()),
            timeout_ms: self.timeout_ms,
            ..Default::default()
        };
        let bound = self.checker.run_bound();
        let _place = match &bound {
            Some(b) => Some(b.acquire(Class::Baseline).await),
            None => None,
        };
        let resp = self.checker.check(self.source.id, request).await?;
        let files = resp
            .files
            .into_iter()
            .filter(|f| !f.items.is_empty())
            .filter_map(|f| Some((f.path.strip_prefix(snap).ok()?.to_owned(), f.items)))
            .collect();
        Ok(shared::Run {
            origin: self.root.clone(),
            snap: snap.to_owned(),
            files,
        })
    }
}
