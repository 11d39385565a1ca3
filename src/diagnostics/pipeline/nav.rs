//! Code-navigation questions (issue 41) in a workspace's pipeline: the asked file passes the
//! path policy as an edited one does (never a sensitive, ignored or outside file), then each
//! per-file source that handles it is asked in turn — the same sources, with the same trust,
//! a check of that file would use — until one answers. The question runs beside the actor,
//! never in it: a slow server delays no edit. A question nobody waits for any more is
//! dropped, which cancels it down to the server.

use std::sync::Arc;

use openfiles_plugin_api::query::{QueryAnswer, QueryRequest};
use tokio::sync::oneshot;

use super::Pipeline;
use crate::diagnostics::Checker;
use crate::policy::Verdict;

/// Why a question was not asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The file may not be read by a checker (sensitive, ignored, outside, gone).
    #[error("{path}: {reason}")]
    Refused { path: String, reason: String },
    /// The pipeline stopped before answering.
    #[error("the workspace's pipeline stopped")]
    Stopped,
}

impl Pipeline {
    /// Ask `request` about its file (its workspace set here); the answer goes to `reply`.
    pub(super) fn query(
        &mut self,
        mut request: QueryRequest,
        mut reply: oneshot::Sender<Result<QueryAnswer, QueryError>>,
    ) {
        let refused = |path: &std::path::Path, reason: &str| QueryError::Refused {
            path: path.display().to_string(),
            reason: reason.to_owned(),
        };
        request.file = match self.policy.judge(&request.file) {
            Verdict::Check(p) => p,
            Verdict::Sensitive(p) => {
                let _ = reply.send(Err(refused(
                    &p,
                    "a sensitive file: never read by a checker",
                )));
                return;
            }
            Verdict::Deleted(p) => {
                let _ = reply.send(Err(refused(&p, "no such file")));
                return;
            }
            Verdict::Skip { path, reason } | Verdict::Outside { path, reason } => {
                let _ = reply.send(Err(refused(&path, &reason)));
                return;
            }
        };
        request.workspace = self.root.clone();
        let checker = self.scheduler.checker();
        tokio::spawn(async move {
            // An asker that goes away (its client hung up) cancels the question: dropping
            // it reaches the plugin, which tells the server.
            tokio::select! {
                answer = ask(checker, request) => {
                    let _ = reply.send(Ok(answer));
                }
                () = reply.closed() => {}
            }
        });
    }
}

/// The first answer of the per-file sources that handle the file; failures become notes.
async fn ask(checker: Arc<dyn Checker>, request: QueryRequest) -> QueryAnswer {
    let mut notes = Vec::new();
    for source in checker.sources_for(&request.file) {
        if source.project_wide {
            continue;
        }
        match checker.query(source.id, request.clone()).await {
            Ok(answer) if answer.unsupported => notes.extend(answer.notes),
            Ok(answer) => return answer,
            Err(e) => notes.push(format!("{}: {e}", source.name)),
        }
    }
    if notes.is_empty() {
        notes.push("no language server answers questions about this file".into());
    }
    QueryAnswer {
        notes,
        ..QueryAnswer::unsupported()
    }
}
