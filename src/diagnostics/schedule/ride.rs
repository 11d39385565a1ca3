//! A check riding the session start's warm-up (issue 42.2, cold): which checks ride
//! ([`Scheduler::rides`]) and what their request carries — the changed files' committed
//! texts and whether the source's baseline is known already ([`with_committed`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use openfiles_plugin_api::{CheckRequest, CheckResponse};

use super::{AtCommit, Scheduler};
use crate::diagnostics::session::Session;
use crate::diagnostics::{CheckError, Checker, SourceId, SourceInfo};

impl Scheduler {
    /// Whether a check of `files` by `source` over `project` rides the warm server: a source
    /// keeping one, `files` the session's only edits, and either
    /// - the session start's warm-up still running (the server in its first analysis): on
    ///   click, the caller an edit made a second after the session started broke came
    ///   4.3–5.3 s after it instead of after the whole first analysis and the baseline's run
    ///   over the commit beside it (12–14 s); 2.7–3.7 s, in the edit's own hook, with the
    ///   baseline known;
    /// - or the warm-up over and the source's baseline over `project` not held (a tree the
    ///   commit does not match gives the warm-up's answer no worth as a baseline, so it comes
    ///   from a run over the commit's snapshot): the ride's pulls give the edit's users their
    ///   baseline instead of that run, which waits for the ride ([`Scheduler::riding`]) — on
    ///   click, a tree an earlier session left changed, the edit 8 s after the session start:
    ///   the caller in the edit's own hook 1.3–1.9 s after it, against 7.3 s (owed to the
    ///   next hook) after the run.
    ///
    /// Its request then carries the committed texts of `files` and of the tree's other
    /// changed files when the tree changed only files' contents since `HEAD`
    /// (`CheckRequest::committed`: the warm server checks the edit's users with those texts
    /// and without, and answers their baseline with them), and a partial answer waits for it
    /// until the deadline (`SourceState::rides`).
    pub(super) fn rides(
        &self,
        session: &Session,
        source: &SourceInfo,
        project: &Path,
        files: &[PathBuf],
    ) -> bool {
        let Some(at) = &self.baseline else {
            return false;
        };
        let held = || {
            at.held
                .iter()
                .any(|(s, p)| *s == source.name && p == project)
        };
        source.warm
            && session.iter().all(|(p, _)| files.contains(p))
            && match self.warm_up {
                Some((_, to)) if to == u64::MAX => true,
                Some(_) => !held(),
                None => false,
            }
    }

    /// Whether a check riding the warm server after the warm-up is in flight: the project-wide
    /// baseline runs asked for meanwhile wait for its answer (`base_jobs.rs`), as they wait for
    /// the warm-up's: beside the ride's pulls, on 2 cores, a run over the commit made the
    /// edit's hook 2.7–3.5 s long instead of 1.3–1.9 s (click).
    pub fn riding(&self) -> bool {
        self.in_flight.values().any(|r| r.rides)
            && self.warm_up.is_some_and(|(_, to)| to != u64::MAX)
    }
}

/// `checker`'s check of `request` by `source`, riding the warm server: with the committed
/// texts of its files and the tree's other changed ones (`CheckRequest::committed`,
/// `git::committed_of_changed`, read off the actor), and whether the source's baseline over
/// the project is known — held by the session or kept at the commit (`kept`: the commit's
/// place, the source's name, the project; then `CheckRequest::baseline_known`, and
/// `base_jobs.rs` only reads a kept run).
///
/// During the warm-up (`after` false), without texts the source is not asked now: an early
/// answer with nothing (its follow-up check waits for the warm server's first analysis), so
/// the partial answer waiting for a ride (`SourceState::rides`) is not held to the deadline.
/// After it, without texts or with the baseline kept, the check is the usual one: the warm
/// server has analysed the project, and a ride's pulls would take longer than its answer.
pub(super) fn with_committed(
    checker: Arc<dyn Checker>,
    source: SourceId,
    mut request: CheckRequest,
    kept: Option<(AtCommit, String, PathBuf)>,
    after: bool,
) -> futures_util::future::BoxFuture<'static, Result<CheckResponse, CheckError>> {
    Box::pin(async move {
        let (root, files) = (request.workspace.clone(), request.files.clone());
        let texts = tokio::task::spawn_blocking(move || {
            let known = kept.is_some_and(|(at, name, proj)| at.known(&root, &name, &proj));
            if after && known {
                return Ok((None, known));
            }
            crate::diagnostics::baseline::git::committed_of_changed(&root, &files)
                .map(|t| (t, known))
        })
        .await;
        match texts {
            Ok(Ok((Some(texts), known))) => {
                request.committed = texts;
                request.baseline_known = known;
                checker.check(source, request).await
            }
            _ if after => checker.check(source, request).await,
            _ => Ok(CheckResponse {
                more: true,
                ..Default::default()
            }),
        }
    })
}
