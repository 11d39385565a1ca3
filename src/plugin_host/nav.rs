//! Code-navigation questions (issue 41) on their way to a plugin: the child's side (each
//! question on a thread of its own, at most [`MAX_QUERIES`] at once, never queued behind the
//! checks), and the manager's (`PluginManager::query`: a fresh id, a deadline, the answer
//! from the plugin's supervisor). A library older than the `query` entry answers
//! [`QueryAnswer::unsupported`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openfiles_plugin_api::host::Instance;
use openfiles_plugin_api::query::{QueryAnswer, QueryRequest};
use tokio::sync::oneshot;

use super::child::Output;
use super::protocol::FromHost;
use super::supervisor::Cmd;
use super::{PluginError, PluginId, PluginManager};

/// Questions a plugin host answers at once; one more is refused (the asker may ask again).
pub const MAX_QUERIES: usize = 8;

/// How long a question may take when its request names no deadline.
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// Where an answer goes back to its asker.
pub(crate) type QueryReply = oneshot::Sender<Result<QueryAnswer, PluginError>>;

static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// The child: answer `request` on a thread of its own.
pub(super) fn child_query(request: QueryRequest, inst: Option<Arc<Instance>>, out: &Arc<Output>) {
    let id = request.id;
    let refuse = |error: String| {
        out.send(&FromHost::Answer {
            id,
            answer: None,
            error: Some(error),
        })
    };
    let Some(inst) = inst else {
        return refuse("plugin not initialised".into());
    };
    if RUNNING.fetch_add(1, Ordering::SeqCst) >= MAX_QUERIES {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
        return refuse(format!(
            "the plugin is answering {MAX_QUERIES} questions already; ask again"
        ));
    }
    let worker_out = Arc::clone(out);
    let spawned = std::thread::Builder::new()
        .name("query".into())
        .spawn(move || {
            let msg = answer(&inst, &request);
            worker_out.send(&msg);
            RUNNING.fetch_sub(1, Ordering::SeqCst);
        });
    if let Err(e) = spawned {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
        refuse(format!(
            "the plugin host cannot start a thread for the question: {e}"
        ));
    }
}

fn answer(inst: &Instance, request: &QueryRequest) -> FromHost {
    let id = request.id;
    let result = serde_json::to_vec(request)
        .map_err(|e| e.to_string())
        .and_then(|json| match inst.query(&json) {
            None => Ok(QueryAnswer::unsupported()),
            Some(r) => r.map_err(|e| e.to_string()).and_then(|bytes| {
                serde_json::from_slice::<QueryAnswer>(&bytes)
                    .map_err(|e| format!("plugin returned a bad answer: {e}"))
            }),
        });
    match result {
        Ok(answer) => FromHost::Answer {
            id,
            answer: Some(answer),
            error: None,
        },
        Err(error) => FromHost::Answer {
            id,
            answer: None,
            error: Some(error),
        },
    }
}

impl PluginManager {
    /// Ask plugin `id` a question about one file (the request's `id` is replaced by a fresh
    /// one); a plugin that does not answer such questions says
    /// [`QueryAnswer::unsupported`].
    pub async fn query(
        &self,
        id: PluginId,
        mut request: QueryRequest,
    ) -> Result<QueryAnswer, PluginError> {
        let (name, tx, query_id) = self.route(id).ok_or(PluginError::Unknown(id))?;
        request.id = query_id;
        let limit = match request.timeout_ms {
            0 => DEFAULT_QUERY_TIMEOUT,
            ms => Duration::from_millis(ms),
        };
        let stopped = || PluginError::Stopped {
            plugin: name.to_owned(),
        };
        let (reply, rx) = oneshot::channel();
        tx.send(Cmd::Query { request, reply })
            .await
            .map_err(|_| stopped())?;
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(stopped()),
            Err(_) => {
                let _ = tx.try_send(Cmd::Forget(query_id));
                Err(PluginError::Timeout {
                    plugin: name.to_owned(),
                    after_ms: limit.as_millis() as u64,
                })
            }
        }
    }
}
