//! Code-navigation questions (issue 41) on their way to a plugin, the manager's side
//! (`PluginManager::query`: a fresh id, a deadline, the answer from the plugin's supervisor,
//! which carries it to the child as `query`; the child answers each on a thread of its own,
//! never queued behind the checks, and for a library older than the `query` entry with
//! [`QueryAnswer::unsupported`]). A question whose asker gives up — its deadline, or the
//! future dropped because the client went away — is cancelled in the host (the plugin's
//! `cancel`, which the lsp plugin turns into `$/cancelRequest`).

use std::time::Duration;

use openfiles_plugin_api::query::{QueryAnswer, QueryRequest};
use tokio::sync::oneshot;

use super::supervisor::Cmd;
use super::{PluginError, PluginId, PluginManager};

/// How long a question may take when its request names no deadline.
pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(60);

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
        // Until answered, a caller that gives up (its deadline, or its future dropped: the
        // asker went away) has the host cancel the question.
        let mut forget = ForgetOnDrop {
            tx,
            id: query_id,
            armed: true,
        };
        let answer = tokio::time::timeout(limit, rx).await;
        match answer {
            Ok(Ok(result)) => {
                forget.armed = false;
                result
            }
            Ok(Err(_)) => {
                forget.armed = false;
                Err(stopped())
            }
            Err(_) => Err(PluginError::Timeout {
                plugin: name.to_owned(),
                after_ms: limit.as_millis() as u64,
            }),
        }
    }
}

/// Tells the plugin's supervisor that a question's asker gave up: its reply is dropped and
/// the host cancels it.
struct ForgetOnDrop<'a> {
    tx: &'a tokio::sync::mpsc::Sender<Cmd>,
    id: u64,
    armed: bool,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.try_send(Cmd::Forget(self.id));
        }
    }
}
