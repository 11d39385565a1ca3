//! A check riding the session start's warm-up (issue 42.2, cold): which checks ride
//! ([`Scheduler::rides`]) and what their request carries — the changed files' committed
//! texts and whether the source's baseline is known already ([`with_committed`]).

use std::path::PathBuf;
use std::sync::Arc;

use openfiles_plugin_api::{CheckRequest, CheckResponse};

use super::{AtCommit, Scheduler};
use crate::diagnostics::session::Session;
use crate::diagnostics::{CheckError, Checker, SourceId, SourceInfo};

impl Scheduler {
    /// Whether a check of `files` by `source` rides the session start's warm-up: a source
    /// keeping a warm server, the warm-up still running, `files` the session's only edits.
    /// Its request then carries their committed texts — and those of the tree's other changed
    /// files — when the tree changed only files' contents since `HEAD`
    /// (`CheckRequest::committed`: the warm server, still in its first analysis,
    /// checks the edit's users first, with those texts and without, and answers their
    /// baseline with them), and a partial answer waits for it until the deadline
    /// (`SourceState::rides`): on click, the caller an edit made a second after the session
    /// started broke came 4.3–5.3 s after it instead of after the whole first analysis and
    /// the baseline's run over the commit beside it (12–14 s); 2.7–3.7 s, in the edit's own
    /// hook, with the baseline known.
    pub(super) fn rides(&self, session: &Session, source: &SourceInfo, files: &[PathBuf]) -> bool {
        source.warm
            && self.baseline.is_some()
            && self.warm_up.is_some_and(|(_, to)| to == u64::MAX)
            && session.iter().all(|(p, _)| files.contains(p))
    }
}

/// `checker`'s check of `request` by `source`, riding the warm-up: with the committed texts
/// of its files and the tree's other changed ones (`CheckRequest::committed`,
/// `git::committed_of_changed`, read off the actor), and whether the source's baseline over the project is known — held by
/// the session or kept at the commit (`kept`: the commit's place, the source's name, the
/// project; then `CheckRequest::baseline_known`, and `base_jobs.rs` only reads a kept run).
/// Without texts the source is not asked now: an early answer with nothing (its follow-up
/// check waits for the warm server's first analysis), so the partial answer waiting for a
/// ride (`SourceState::rides`) is not held to the deadline.
pub(super) fn with_committed(
    checker: Arc<dyn Checker>,
    source: SourceId,
    mut request: CheckRequest,
    kept: Option<(AtCommit, String, PathBuf)>,
) -> futures_util::future::BoxFuture<'static, Result<CheckResponse, CheckError>> {
    Box::pin(async move {
        let (root, files) = (request.workspace.clone(), request.files.clone());
        let texts = tokio::task::spawn_blocking(move || {
            let known = kept.is_some_and(|(at, name, proj)| at.known(&root, &name, &proj));
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
            _ => Ok(CheckResponse {
                more: true,
                ..Default::default()
            }),
        }
    })
}
