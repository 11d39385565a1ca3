//! The dispatcher of one server's messages: answers every server request (unknown ones get
//! `MethodNotFound`, so none is left unanswered) and records what the server pushes into the
//! client's [`State`] — `publishDiagnostics` per file with a global sequence number, dynamic
//! registrations (pull diagnostics, watched files), work-done progress and announced
//! indexing — bumping the `watch` channel after each message. One function per request or
//! notification kind; the requests answered with `null` are a table.

use super::{folder_json, Push, State};
use crate::config::ServerSpec;
use crate::convert::uri_to_path;
use crate::transport::{Incoming, Transport};
use lsp_types::Diagnostic;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{mpsc, watch};

const METHOD_NOT_FOUND: i64 = -32601;
const REQUEST_FAILED: i64 = -32803;

/// An answer to a server request: a result, or a JSON-RPC error code and message.
type Answer = Result<Value, (i64, String)>;

/// Server requests acknowledged with `null` and nothing else: progress tokens, refresh
/// requests (every check asks afresh anyway), and message boxes nobody sees.
const ACKNOWLEDGED: &[&str] = &[
    "window/workDoneProgress/create",
    "workspace/diagnostic/refresh",
    "workspace/semanticTokens/refresh",
    "workspace/inlayHint/refresh",
    "workspace/inlineValue/refresh",
    "workspace/codeLens/refresh",
    "workspace/foldingRange/refresh",
    "window/showMessageRequest",
];

/// What the dispatcher shares with its [`super::Client`].
pub(super) struct Dispatcher {
    pub(super) state: Arc<Mutex<State>>,
    pub(super) spec: ServerSpec,
    /// The workspace folders, changed only by the client.
    pub(super) folders: Arc<Mutex<Vec<PathBuf>>>,
}

impl Dispatcher {
    /// Answer and record every message of `inbox` until the server is gone.
    pub(super) async fn run(
        self,
        t: Arc<Transport>,
        mut inbox: mpsc::UnboundedReceiver<Incoming>,
        changed: watch::Sender<u64>,
    ) {
        let bump = || changed.send_modify(|n| *n += 1);
        while let Some(msg) = inbox.recv().await {
            match msg {
                Incoming::Request { id, method, params } => {
                    t.respond(id, self.answer(&method, &params));
                    bump();
                }
                Incoming::Notification { method, params } => {
                    self.note(&method, params);
                    bump();
                }
            }
        }
        bump();
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn answer(&self, method: &str, params: &Value) -> Answer {
        if ACKNOWLEDGED.contains(&method) {
            return Ok(Value::Null);
        }
        match method {
            "workspace/configuration" => Ok(self.configuration(params)),
            "client/registerCapability" => {
                self.register(params);
                Ok(Value::Null)
            }
            "client/unregisterCapability" => {
                self.unregister(params);
                Ok(Value::Null)
            }
            "workspace/workspaceFolders" => {
                let f = self.folders.lock().unwrap_or_else(|e| e.into_inner());
                Ok(Value::Array(f.iter().map(|p| folder_json(p)).collect()))
            }
            "workspace/applyEdit" => {
                Ok(json!({"applied": false, "failureReason": "openfiles does not edit files"}))
            }
            "window/showDocument" => Ok(json!({"success": false})),
            "vscode/content" => self.content(params),
            _ => {
                tracing::debug!(server = %self.spec.name, method, "unknown server request");
                Err((
                    METHOD_NOT_FOUND,
                    format!("openfiles does not handle {method}"),
                ))
            }
        }
    }

    /// `workspace/configuration`: each item's section of the server's settings.
    fn configuration(&self, params: &Value) -> Value {
        let items = params
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let out: Vec<Value> = items
            .iter()
            .map(|i| {
                section(
                    &self.spec.settings,
                    i.get("section").and_then(Value::as_str),
                )
            })
            .collect();
        Value::Array(out)
    }

    /// `client/registerCapability`: pull diagnostics (with their identifier) and file
    /// watchers are recorded; the rest is accepted and ignored.
    fn register(&self, params: &Value) {
        for r in list(params, "registrations") {
            let id = r
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            match r.get("method").and_then(Value::as_str) {
                Some("textDocument/diagnostic") => {
                    let ident = r
                        .pointer("/registerOptions/identifier")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    self.state().pull_registrations.insert(id, ident);
                }
                Some("workspace/didChangeWatchedFiles") => self.state().watchers += 1,
                _ => {}
            }
        }
    }

    /// `client/unregisterCapability`: the reverse of [`Dispatcher::register`].
    fn unregister(&self, params: &Value) {
        // The spec's field name really is misspelt "unregisterations".
        for r in list(params, "unregisterations") {
            let id = r.get("id").and_then(Value::as_str).unwrap_or_default();
            match r.get("method").and_then(Value::as_str) {
                Some("textDocument/diagnostic") => {
                    self.state().pull_registrations.remove(id);
                }
                Some("workspace/didChangeWatchedFiles") => {
                    let mut s = self.state();
                    s.watchers = s.watchers.saturating_sub(1);
                }
                _ => {}
            }
        }
    }

    /// `vscode/content`: a schema behind a URL (yaml-language-server and the JSON server ask
    /// the client for them): openfiles downloads nothing at check time. A schema file (asked
    /// for in an untrusted workspace, see `ServerSpec::schemas_from_client`): only one inside
    /// the server's folders, read the confined way.
    fn content(&self, params: &Value) -> Answer {
        let uri = params
            .as_str()
            .or_else(|| params.get(0).and_then(Value::as_str))
            .unwrap_or_default();
        match uri.strip_prefix("file://").and_then(|_| uri_to_path(uri)) {
            Some(path) if self.spec.schemas_from_client => schema_file(
                &path,
                &self.folders.lock().unwrap_or_else(|e| e.into_inner()),
            ),
            Some(_) => Err((REQUEST_FAILED, "openfiles reads no schema file here".into())),
            None => Err((
                REQUEST_FAILED,
                "openfiles does not download schemas: name a schema file instead".into(),
            )),
        }
    }

    fn note(&self, method: &str, params: Value) {
        match method {
            "textDocument/publishDiagnostics" => self.publish(params),
            "$/progress" => self.progress(&params),
            "experimental/serverStatus" => {
                let quiescent = params.get("quiescent").and_then(Value::as_bool);
                self.state
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .quiescent = quiescent;
            }
            m => match self.indexing(m) {
                Some(begun) => self.indexed(begun),
                None if matches!(m, "window/logMessage" | "window/showMessage") => {
                    let msg = params
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    tracing::debug!(server = %self.spec.name, "{method}: {msg}");
                }
                None => {}
            },
        }
    }

    /// `textDocument/publishDiagnostics`: the file's latest push, numbered.
    fn publish(&self, params: Value) {
        let Some(path) = params
            .get("uri")
            .and_then(Value::as_str)
            .and_then(uri_to_path)
        else {
            return;
        };
        let version = params
            .get("version")
            .and_then(Value::as_i64)
            .map(|v| v as i32);
        let diagnostics = list(&params, "diagnostics")
            .filter_map(diagnostic)
            .collect::<Vec<_>>();
        tracing::trace!(server = %self.spec.name, path = %path.display(), ?version, n = diagnostics.len(), "push");
        let mut s = self.state();
        s.seq += 1;
        let seq = s.seq;
        s.pushes.insert(
            path,
            Push {
                seq,
                version,
                diagnostics,
            },
        );
    }

    /// `$/progress`: the progresses that began and are still active (all of them; those
    /// waited for; those that speak of indexing).
    fn progress(&self, params: &Value) {
        let token = match params.get("token") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => return,
        };
        let kind = params
            .pointer("/value/kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let title = params
            .pointer("/value/title")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let message = params
            .pointer("/value/message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut s = self.state();
        if kind == "begin" && title.to_lowercase().contains("index") {
            s.index_progress.insert(token.clone(), title.to_owned());
        }
        if kind == "report" && !message.is_empty() {
            if let Some(t) = s.index_progress.get_mut(&token) {
                let title = t.split(" (").next().unwrap_or_default().to_owned();
                *t = format!("{title} ({message})");
            }
        }
        match kind {
            "begin" => {
                s.progress_active.insert(token.clone());
                if is_waited(&self.spec, &token, title) {
                    s.waited_begun += 1;
                    s.waited_active.insert(token, ());
                }
            }
            "end" => {
                s.progress_active.remove(&token);
                s.index_progress.remove(&token);
                s.waited_active.remove(&token);
            }
            _ => {}
        }
    }

    /// Indexing began, or ended: only a push after the end is complete.
    fn indexed(&self, begun: bool) {
        let mut s = self.state();
        s.indexing = begun;
        if !begun {
            s.indexed_at = s.seq;
        }
    }

    /// Whether `method` is the server's own notification that indexing began (`true`) or
    /// ended (`false`) ([`ServerSpec::indexing`]).
    fn indexing(&self, method: &str) -> Option<bool> {
        let (begin, end) = self.spec.indexing.as_ref()?;
        if begin == method {
            Some(true)
        } else if end == method {
            Some(false)
        } else {
            None
        }
    }
}

/// The array at `key` of `params` (none if absent).
fn list<'a>(params: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    params
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// One pushed diagnostic; clangd's inline fixes (`codeActionsInline`) ride in `data`.
fn diagnostic(d: &Value) -> Option<Diagnostic> {
    let mut diag = serde_json::from_value::<Diagnostic>(d.clone()).ok()?;
    if let Some(actions) = d.get("codeActions").filter(|a| a.is_array()) {
        diag.data = Some(json!({
            crate::convert::INLINE_ACTIONS: actions,
            "data": diag.data.take(),
        }));
    }
    Some(diag)
}

/// The largest schema file served.
const MAX_SCHEMA_BYTES: u64 = 8 << 20;

/// A schema file's text for the server: only inside one of its folders, read confined.
fn schema_file(path: &Path, folders: &[PathBuf]) -> Answer {
    let Some(folder) = folders.iter().find(|f| path.starts_with(f)) else {
        return Err((
            REQUEST_FAILED,
            format!(
                "openfiles reads no schema outside the workspace ({})",
                path.display()
            ),
        ));
    };
    openfiles_plugin_api::confine::read_workspace_file(folder, path, MAX_SCHEMA_BYTES)
        .map(|b| Value::String(String::from_utf8_lossy(&b).into_owned()))
        .map_err(|e| (REQUEST_FAILED, format!("{}: {e}", path.display())))
}

/// The value at a dotted section path of `settings` (`null` if absent; no section = all).
pub fn section(settings: &Value, path: Option<&str>) -> Value {
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return settings.clone();
    };
    if let Some(v) = settings.get(path) {
        return v.clone(); // a literal dotted key
    }
    let mut v = settings;
    for part in path.split('.') {
        match v.get(part) {
            Some(x) => v = x,
            None => return Value::Null,
        }
    }
    v.clone()
}

fn is_waited(spec: &ServerSpec, token: &str, title: &str) -> bool {
    let (token, title) = (token.to_lowercase(), title.to_lowercase());
    spec.wait_for_progress
        .iter()
        .map(|w| w.to_lowercase())
        .any(|w| token.contains(&w) || title.contains(&w))
}
