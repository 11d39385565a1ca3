//! The diagnostics pipeline of one workspace: session, scheduling, merging, waiting and
//! writing `diagnostics.json`.
//!
//! Data flow: intakes (control socket `edited`, `queue.jsonl`, the file watcher) hand paths to
//! the workspace's [`pipeline`] actor after the path policy (`policy`). The actor keeps
//! the [`session`] (every file changed this session, with its entry and, per source, the
//! generation it answered for), dispatches batches to the diagnostic sources through a
//! [`Checker`] ([`schedule`]), merges their answers, wakes [`waiters`], and hands
//! snapshots to the [`writer`], which rewrites `diagnostics.json` atomically and persists the
//! session (with the queue cursor) in the state dir. Beside the session the actor keeps the
//! [`review`] data (agents per file, reviewed marks, paused) and what agent sessions are owed
//! ([`late`]: results that came in after a hook's deadline), persisted with it.
//!
//! The [`baseline`] (the problems before the session's edits) classifies every item as
//! introduced or already there, and lets a project-wide source's report on files nobody
//! edited name the files an edit broke (entries with `affectedBy`).
//!
//! Freshness invariant: every edit bumps the file's generation; a result computed for an older
//! generation never marks the file checked.

pub mod baseline;
pub mod bound;
pub mod late;
pub mod pipeline;
pub mod review;
pub mod schedule;
pub mod session;
pub mod silencing;
#[cfg(test)]
pub mod testing;
pub mod waiters;
pub mod writer;

use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use openfiles_plugin_api::query::{QueryAnswer, QueryRequest};
use openfiles_plugin_api::{CheckRequest, CheckResponse};

pub use openfiles_wire::control::{Rejected, WorkspaceEntries};

/// Identifies a diagnostic source (a plugin) for the lifetime of the service.
pub type SourceId = usize;

/// What the pipeline needs to know about a source that handles a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    pub id: SourceId,
    pub name: String,
    /// One run checks a whole project: at most one run per project in flight.
    pub project_wide: bool,
    /// Files marking a project root, for grouping project-wide runs.
    pub project_markers: Vec<String>,
    /// Handles a file only inside a project (one of `project_markers` at or above it).
    pub needs_project: bool,
    /// Checks a given text (`CheckRequest::texts`): its baseline can come from a committed text.
    pub checks_texts: bool,
    /// Fetches fixes in a second step (`CheckRequest::fixes_only`), asked after each answer.
    pub late_fixes: bool,
    /// A project-wide source with a warm server: the session-start warm-up checks it too.
    pub warm: bool,
    /// A newer edit cancels its run in flight over the project (`Capabilities::superseded`).
    pub superseded: bool,
    /// The per-file language servers whose diagnostics its warm server gives
    /// (`Capabilities::serves`): see [`served`].
    pub serves: Vec<String>,
}

/// Why a source gave no answer for a check. Every variant becomes an explanatory item on
/// each requested file ("not checked: …"), never silence.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The source itself failed (its host died, it timed out, it reported an error); the
    /// [`Checker`] says why.
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
    /// The checker did not come back at all within the pipeline's own guard (a host bug).
    #[error("{source_name} did not answer within {after_ms} ms")]
    NoAnswer { source_name: String, after_ms: u64 },
}

/// Why a workspace's pipeline could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Policy(#[from] crate::policy::GlobError),
}

/// The diagnostic sources, as seen by the pipeline. Implemented by the plugin host
/// manager (`plugin_host::PluginManager`); the pipeline does not know about processes or libraries.
pub trait Checker: Send + Sync + 'static {
    /// The sources that handle `path`.
    fn sources_for(&self, path: &Path) -> Vec<SourceInfo>;
    /// Run one check. An `Err` becomes an explanatory item on every requested file.
    fn check(
        &self,
        source: SourceId,
        request: CheckRequest,
    ) -> BoxFuture<'static, Result<CheckResponse, CheckError>>;
    /// The trust level the checks run at (`CheckRequest::trusted` as sent): a baseline run is
    /// shared only with workspaces of the same level. Untrusted unless a wrapper says so.
    fn trusted(&self) -> bool {
        false
    }
    /// The service-wide bound on project-wide runs ([`bound`]) a project-wide check takes a
    /// place in first; `None`: unbounded. Wrappers pass their inner checker's on.
    fn run_bound(&self) -> Option<std::sync::Arc<bound::RunBound>> {
        None
    }
    /// Ask one source a code-navigation question (`pipeline/nav.rs`); a source that does not
    /// answer questions says [`QueryAnswer::unsupported`] (the default).
    fn query(
        &self,
        _source: SourceId,
        _request: QueryRequest,
    ) -> BoxFuture<'static, Result<QueryAnswer, CheckError>> {
        Box::pin(async { Ok(QueryAnswer::unsupported()) })
    }
}

/// Per file of `files`, the per-file language servers a project-wide source's warm server
/// stands in for (`CheckRequest::served`): in a trusted workspace only, the servers named by
/// the [`SourceInfo::serves`] of a project-wide source with a warm server that handles the
/// file (the pyright plugin's `pyright` and `basedpyright`). The per-file sources leave them
/// out of their checks and the project-wide source gives their items: one analysis of the
/// project, not two. The same answer for a file's checks and its committed text's (the
/// per-file baseline), so both leave out the same servers. Files with none are not listed.
pub fn served(
    checker: &dyn Checker,
    files: &[PathBuf],
) -> std::collections::BTreeMap<PathBuf, Vec<String>> {
    if !checker.trusted() {
        return Default::default();
    }
    files
        .iter()
        .filter_map(|f| {
            let names: Vec<String> = checker
                .sources_for(f)
                .into_iter()
                .filter(|s| s.project_wide && s.warm)
                .flat_map(|s| s.serves)
                .collect();
            (!names.is_empty()).then(|| (f.clone(), names))
        })
        .collect()
}

/// The project root of `file` for a project-wide source: the nearest ancestor (inside the
/// workspace) holding one of `markers`, else the workspace root.
pub fn project_root(file: &Path, workspace: &Path, markers: &[String]) -> PathBuf {
    openfiles_plugin_api::markers::project_root(file, workspace, markers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A checker with fixed sources and trust.
    struct Fixed {
        trusted: bool,
        sources: Vec<SourceInfo>,
    }

    impl Checker for Fixed {
        fn sources_for(&self, _: &Path) -> Vec<SourceInfo> {
            self.sources.clone()
        }
        fn check(
            &self,
            _: SourceId,
            _: CheckRequest,
        ) -> BoxFuture<'static, Result<CheckResponse, CheckError>> {
            Box::pin(async { Ok(CheckResponse::default()) })
        }
        fn trusted(&self) -> bool {
            self.trusted
        }
    }

    #[test]
    fn a_warm_project_wide_source_stands_in_for_its_servers_only_where_trusted() {
        let lsp = testing::per_file(0, "lsp");
        let mut pyright = testing::project_wide(1, "pyright", &["pyrightconfig.json"]);
        pyright.warm = true;
        pyright.serves = vec!["pyright".into(), "basedpyright".into()];
        let files = vec![PathBuf::from("/w/a.py")];
        let served_by =
            |trusted: bool, sources: Vec<SourceInfo>| served(&Fixed { trusted, sources }, &files);
        assert_eq!(
            served_by(true, vec![lsp.clone(), pyright.clone()]),
            BTreeMap::from([(files[0].clone(), pyright.serves.clone())])
        );
        // Untrusted; no warm server (the command line only); no such source.
        assert_eq!(
            served_by(false, vec![lsp.clone(), pyright.clone()]),
            BTreeMap::new()
        );
        let cold = SourceInfo {
            warm: false,
            ..pyright.clone()
        };
        assert_eq!(served_by(true, vec![lsp.clone(), cold]), BTreeMap::new());
        assert_eq!(served_by(true, vec![lsp]), BTreeMap::new());
    }
}
