//! One initialized language server: capabilities, server requests, pushed state.
//!
//! Owns the [`Transport`] of one server and a dispatcher task that answers every server
//! request (unknown ones get `MethodNotFound`, so none is left unanswered) and records what
//! the server pushes: `publishDiagnostics` per file with a global sequence number, dynamic
//! registrations (pull diagnostics, watched files), and work-done progress. Waiters in
//! [`crate::diagnose`] read that state under a short lock and sleep on a `watch` channel
//! that the dispatcher bumps after each change; no lock is held across an `.await`.
//!
//! A client serves one or more project roots as workspace folders: the folder list is
//! shared with the dispatcher (it answers `workspace/workspaceFolders`) and changed only by
//! [`Client::add_folder`] / [`Client::remove_folder`], which send
//! `workspace/didChangeWorkspaceFolders`; that is used only when the server said it supports
//! several folders and their change notifications ([`ServerCaps::folders`]).

use crate::config::ServerSpec;
use crate::convert::{path_to_uri, uri_to_path, Encoding};
use crate::transport::{Error, Incoming, Transport};
use lsp_types::request::Request;
use lsp_types::{Diagnostic, InitializeResult};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

const METHOD_NOT_FOUND: i64 = -32601;
const REQUEST_FAILED: i64 = -32803;

/// The latest push for one file.
#[derive(Debug, Clone)]
pub struct Push {
    /// Global arrival order (see [`State::seq`]).
    pub seq: u64,
    pub version: Option<i32>,
    pub diagnostics: Vec<Diagnostic>,
}

/// What the dispatcher records; read by waiters under a short lock.
#[derive(Debug, Default)]
pub struct State {
    /// Bumped on every publishDiagnostics, so "received after the change" is `seq > mark`.
    pub seq: u64,
    pub pushes: HashMap<PathBuf, Push>,
    /// Dynamic `textDocument/diagnostic` registrations: id → identifier.
    pub pull_registrations: HashMap<String, Option<String>>,
    /// Dynamic `workspace/didChangeWatchedFiles` registrations.
    pub watchers: usize,
    /// Active progress tokens whose title matches the server's `wait_for_progress`.
    pub waited_active: HashMap<String, ()>,
    /// How many such progresses have begun.
    pub waited_begun: u64,
    /// The server said it is indexing ([`ServerSpec::indexing`]) and has not said it ended.
    pub indexing: bool,
    /// [`State::seq`] when indexing last ended: only a push after it is complete.
    pub indexed_at: u64,
}

/// Static facts from `initialize`.
#[derive(Debug, Clone)]
pub struct ServerCaps {
    pub encoding: Encoding,
    /// `diagnosticProvider` present, with its identifier.
    pub pull: Option<Option<String>>,
    pub save: bool,
    pub save_include_text: bool,
    /// `executeCommandProvider.commands`.
    pub commands: Vec<String>,
    /// `workspace.workspaceFolders`: several folders supported, and changes to them.
    pub folders: bool,
    /// `codeActionProvider`: quick fixes can be asked for (`crate::fixes`).
    pub code_actions: bool,
}

/// What the last check of a file reported: the text positions refer to, and the
/// diagnostics (for their fixes, `crate::fixes`).
#[derive(Debug, Clone)]
pub struct Reported {
    pub text: Arc<str>,
    pub diagnostics: Vec<Diagnostic>,
}

/// An open document as the server knows it.
#[derive(Debug, Clone)]
pub struct Doc {
    pub version: i32,
    pub text: Arc<str>,
    /// [`State::seq`] just before this version was sent: a push received after it (or
    /// carrying this version) is fresh for `text`.
    pub seq_mark: u64,
    /// [`State::waited_begun`] just before this version was sent.
    pub progress_mark: u64,
    /// [`Client::world`] once this version was sent.
    pub world: u64,
}

/// A running, initialized server for one or more project roots.
pub struct Client {
    pub name: String,
    pub spec: ServerSpec,
    /// The folder the server runs in and files are read under: the project root, or the
    /// workspace when the server is shared by the workspace's project roots.
    pub root: PathBuf,
    /// The workspace folders the server knows (project roots), in the order they were added.
    folders: Arc<Mutex<Vec<PathBuf>>>,
    pub transport: Arc<Transport>,
    pub caps: ServerCaps,
    pub state: Arc<Mutex<State>>,
    pub changed: watch::Receiver<u64>,
    pub docs: Mutex<HashMap<PathBuf, Doc>>,
    /// Bumped whenever what the server knows changes: a document opened, changed or closed,
    /// watched files reported. A file's last result is still fresh only if its text is
    /// unchanged and nothing else changed since it was sent.
    pub world: std::sync::atomic::AtomicU64,
    /// Modification times of unopened files last reported by `didChangeWatchedFiles`.
    pub watched: Mutex<HashMap<PathBuf, Option<std::time::SystemTime>>>,
    /// What the last check of each file reported, for its fixes (`crate::fixes`).
    pub reported: Mutex<HashMap<PathBuf, Reported>>,
}

impl Client {
    /// Spawn `exe` in `root`, run `initialize`/`initialized` with `folders` as the workspace
    /// folders (the first is also `rootUri`), push settings.
    pub async fn start(
        spec: &ServerSpec,
        exe: &openfiles_plugin_api::gate::Program,
        root: &Path,
        folders: &[PathBuf],
        startup: Duration,
    ) -> Result<Arc<Client>, Error> {
        let (transport, inbox) = Transport::spawn(&spec.name, exe, &spec.args, root)?;
        let state = Arc::new(Mutex::new(State::default()));
        let (tx, rx) = watch::channel(0u64);
        let folders = Arc::new(Mutex::new(if folders.is_empty() {
            vec![root.to_path_buf()]
        } else {
            folders.to_vec()
        }));
        tokio::spawn(dispatch(
            transport.clone(),
            inbox,
            state.clone(),
            tx,
            spec.clone(),
            folders.clone(),
        ));
        let listed = folders.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let init = match initialize(&transport, spec, &listed, startup).await {
            Ok(r) => r,
            Err(e) => {
                transport.kill().await;
                transport.stderr_closed(Duration::from_secs(1)).await;
                let tail = transport.stderr_tail();
                return Err(if tail.is_empty() {
                    e
                } else {
                    Error::Startup {
                        cause: Box::new(e),
                        stderr: tail,
                    }
                });
            }
        };
        transport.notify("initialized", json!({}));
        for (method, params) in &spec.after_initialized {
            transport.notify(method, params.clone());
        }
        if !spec.settings.is_null() {
            transport.notify(
                "workspace/didChangeConfiguration",
                json!({"settings": spec.settings}),
            );
        }
        let c = &init.capabilities;
        let encoding = Encoding::from_lsp(c.position_encoding.as_ref().map(|e| e.as_str()));
        let pull = c.diagnostic_provider.as_ref().map(|p| match p {
            lsp_types::DiagnosticServerCapabilities::Options(o) => o.identifier.clone(),
            lsp_types::DiagnosticServerCapabilities::RegistrationOptions(o) => {
                o.diagnostic_options.identifier.clone()
            }
        });
        let (save, save_include_text) = save_caps(c.text_document_sync.as_ref());
        let commands = c
            .execute_command_provider
            .as_ref()
            .map(|e| e.commands.clone())
            .unwrap_or_default();
        let folder_support = c
            .workspace
            .as_ref()
            .and_then(|w| w.workspace_folders.as_ref())
            .is_some_and(|f| {
                f.supported == Some(true)
                    && matches!(
                        f.change_notifications,
                        Some(lsp_types::OneOf::Left(true) | lsp_types::OneOf::Right(_))
                    )
            });
        tracing::info!(server = %spec.name, root = %root.display(), folders = listed.len(), folder_support, ?encoding, pull = pull.is_some(), "server initialized");
        Ok(Arc::new(Client {
            name: spec.name.clone(),
            spec: spec.clone(),
            root: root.to_path_buf(),
            folders,
            transport,
            caps: ServerCaps {
                encoding,
                pull,
                save,
                save_include_text,
                commands,
                folders: folder_support,
                code_actions: !matches!(
                    c.code_action_provider,
                    None | Some(lsp_types::CodeActionProviderCapability::Simple(false))
                ),
            },
            state,
            changed: rx,
            docs: Mutex::default(),
            world: Default::default(),
            watched: Mutex::default(),
            reported: Mutex::default(),
        }))
    }

    /// Typed request: the method name comes from `R::METHOD`.
    pub async fn call<R: Request>(
        &self,
        params: R::Params,
        timeout: Duration,
    ) -> Result<R::Result, Error> {
        call::<R>(&self.transport, params, timeout).await
    }

    /// The workspace folders the server knows.
    pub fn folders(&self) -> Vec<PathBuf> {
        self.folders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Add a project root as a workspace folder (no-op if known). Only for servers with
    /// [`ServerCaps::folders`].
    pub fn add_folder(&self, folder: &Path) {
        let mut f = self.folders.lock().unwrap_or_else(|e| e.into_inner());
        if f.iter().any(|x| x == folder) {
            return;
        }
        f.push(folder.to_path_buf());
        drop(f);
        tracing::info!(server = %self.name, folder = %folder.display(), "workspace folder added");
        self.transport.notify(
            "workspace/didChangeWorkspaceFolders",
            json!({"event": {"added": [folder_json(folder)], "removed": []}}),
        );
    }

    /// Remove a workspace folder: close the documents it owns (those under it and not under
    /// a deeper folder still present), then tell the server.
    pub fn remove_folder(&self, folder: &Path) {
        let mut f = self.folders.lock().unwrap_or_else(|e| e.into_inner());
        let Some(i) = f.iter().position(|x| x == folder) else {
            return;
        };
        f.remove(i);
        let deeper: Vec<PathBuf> = f
            .iter()
            .filter(|x| x.starts_with(folder))
            .cloned()
            .collect();
        drop(f);
        let mut docs = self.docs.lock().unwrap_or_else(|e| e.into_inner());
        let owned: Vec<PathBuf> = docs
            .keys()
            .filter(|p| p.starts_with(folder) && !deeper.iter().any(|d| p.starts_with(d)))
            .cloned()
            .collect();
        for p in &owned {
            docs.remove(p);
            self.transport.notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": path_to_uri(p)}}),
            );
        }
        if !owned.is_empty() {
            self.world.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        drop(docs);
        self.watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p, _| !p.starts_with(folder) || deeper.iter().any(|d| p.starts_with(d)));
        tracing::info!(server = %self.name, folder = %folder.display(), closed = owned.len(), "workspace folder removed");
        self.transport.notify(
            "workspace/didChangeWorkspaceFolders",
            json!({"event": {"added": [], "removed": [folder_json(folder)]}}),
        );
    }

    /// Fires when the server process is gone.
    pub fn closed(&self) -> CancellationToken {
        self.transport.closed()
    }

    /// Polite stop: `shutdown`, `exit`, then kill if it lingers.
    pub async fn shutdown(&self) {
        if !self.transport.closed().is_cancelled() {
            let _ = self
                .call::<lsp_types::request::Shutdown>((), Duration::from_secs(2))
                .await;
            self.transport.notify("exit", Value::Null);
        }
        self.transport.reap(Duration::from_secs(2)).await;
    }
}

async fn call<R: Request>(
    t: &Transport,
    params: R::Params,
    timeout: Duration,
) -> Result<R::Result, Error> {
    let params = serde_json::to_value(params).map_err(|source| Error::Decode {
        method: R::METHOD.into(),
        source,
    })?;
    let v = t.request(R::METHOD, params, timeout).await?;
    serde_json::from_value(v).map_err(|source| Error::Decode {
        method: R::METHOD.into(),
        source,
    })
}

fn save_caps(sync: Option<&lsp_types::TextDocumentSyncCapability>) -> (bool, bool) {
    use lsp_types::{TextDocumentSyncCapability as C, TextDocumentSyncSaveOptions as S};
    match sync {
        Some(C::Options(o)) => match &o.save {
            Some(S::Supported(b)) => (*b, false),
            Some(S::SaveOptions(s)) => (true, s.include_text.unwrap_or(false)),
            None => (false, false),
        },
        // Legacy kind-only capability: saving is harmless, send it.
        Some(C::Kind(_)) => (true, false),
        None => (false, false),
    }
}

/// A workspace folder as the protocol writes it (`{uri, name}`).
fn folder_json(folder: &Path) -> Value {
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    json!({"uri": path_to_uri(folder), "name": name})
}

async fn initialize(
    t: &Transport,
    spec: &ServerSpec,
    folders: &[PathBuf],
    timeout: Duration,
) -> Result<InitializeResult, Error> {
    let root = folders
        .first()
        .map(PathBuf::as_path)
        .unwrap_or(Path::new("/"));
    let params = json!({
        "processId": std::process::id(),
        "clientInfo": {"name": "openfiles", "version": env!("CARGO_PKG_VERSION")},
        "rootUri": path_to_uri(root),
        "rootPath": root,
        "workspaceFolders": folders.iter().map(|f| folder_json(f)).collect::<Vec<_>>(),
        "initializationOptions": spec.initialization_options,
        "capabilities": {
            "general": {"positionEncodings": ["utf-8", "utf-32", "utf-16"]},
            "textDocument": {
                "synchronization": {"dynamicRegistration": false, "didSave": true},
                "publishDiagnostics": {"relatedInformation": true, "versionSupport": true,
                    "tagSupport": {"valueSet": [1, 2]}, "codeDescriptionSupport": true, "dataSupport": true,
                    "codeActionsInline": true},
                "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix"]}},
                    "isPreferredSupport": true, "dataSupport": true},
                "diagnostic": {"dynamicRegistration": true, "relatedDocumentSupport": false},
            },
            "workspace": {
                "configuration": true,
                "workspaceFolders": true,
                "didChangeConfiguration": {"dynamicRegistration": true},
                "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": true},
                "diagnostics": {"refreshSupport": true},
            },
            "window": {"workDoneProgress": true, "showMessage": {}},
        },
    });
    let decode = |source| Error::Decode {
        method: "initialize".into(),
        source,
    };
    // Checked against the typed shape, sent as written: the typed shape would drop
    // extensions such as clangd's `codeActionsInline`.
    let _: lsp_types::InitializeParams = serde_json::from_value(params.clone()).map_err(decode)?;
    let v = t.request("initialize", params, timeout).await?;
    serde_json::from_value(v).map_err(decode)
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

async fn dispatch(
    t: Arc<Transport>,
    mut inbox: mpsc::UnboundedReceiver<Incoming>,
    state: Arc<Mutex<State>>,
    changed: watch::Sender<u64>,
    spec: ServerSpec,
    folders: Arc<Mutex<Vec<PathBuf>>>,
) {
    let bump = || changed.send_modify(|n| *n += 1);
    while let Some(msg) = inbox.recv().await {
        match msg {
            Incoming::Request { id, method, params } => {
                let answer = answer_request(&method, &params, &state, &spec, &folders);
                t.respond(id, answer);
                bump();
            }
            Incoming::Notification { method, params } => {
                note(&method, params, &state, &spec);
                bump();
            }
        }
    }
    bump();
}

fn answer_request(
    method: &str,
    params: &Value,
    state: &Mutex<State>,
    spec: &ServerSpec,
    folders: &Mutex<Vec<PathBuf>>,
) -> Result<Value, (i64, String)> {
    let st = || state.lock().unwrap_or_else(|e| e.into_inner());
    match method {
        "workspace/configuration" => {
            let items = params
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let out: Vec<Value> = items
                .iter()
                .map(|i| section(&spec.settings, i.get("section").and_then(Value::as_str)))
                .collect();
            Ok(Value::Array(out))
        }
        "client/registerCapability" => {
            for r in params
                .get("registrations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
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
                        st().pull_registrations.insert(id, ident);
                    }
                    Some("workspace/didChangeWatchedFiles") => st().watchers += 1,
                    _ => {}
                }
            }
            Ok(Value::Null)
        }
        "client/unregisterCapability" => {
            // The spec's field name really is misspelt "unregisterations".
            for r in params
                .get("unregisterations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let id = r.get("id").and_then(Value::as_str).unwrap_or_default();
                match r.get("method").and_then(Value::as_str) {
                    Some("textDocument/diagnostic") => {
                        st().pull_registrations.remove(id);
                    }
                    Some("workspace/didChangeWatchedFiles") => {
                        let mut s = st();
                        s.watchers = s.watchers.saturating_sub(1);
                    }
                    _ => {}
                }
            }
            Ok(Value::Null)
        }
        "window/workDoneProgress/create"
        | "workspace/diagnostic/refresh"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/inlineValue/refresh"
        | "workspace/codeLens/refresh"
        | "workspace/foldingRange/refresh"
        | "window/showMessageRequest" => Ok(Value::Null),
        "workspace/workspaceFolders" => {
            let f = folders.lock().unwrap_or_else(|e| e.into_inner());
            Ok(Value::Array(f.iter().map(|p| folder_json(p)).collect()))
        }
        "workspace/applyEdit" => {
            Ok(json!({"applied": false, "failureReason": "openfiles does not edit files"}))
        }
        "window/showDocument" => Ok(json!({"success": false})),
        // A schema behind a URL (yaml-language-server and the JSON server ask the client for
        // them): openfiles downloads nothing at check time. A schema file (asked for in an
        // untrusted workspace, see `ServerSpec::schemas_from_client`): only one inside the
        // server's folders, read the confined way.
        "vscode/content" => {
            let uri = params
                .as_str()
                .or_else(|| params.get(0).and_then(Value::as_str))
                .unwrap_or_default();
            match uri.strip_prefix("file://").and_then(|_| uri_to_path(uri)) {
                Some(path) if spec.schemas_from_client => {
                    schema_file(&path, &folders.lock().unwrap_or_else(|e| e.into_inner()))
                }
                Some(_) => Err((REQUEST_FAILED, "openfiles reads no schema file here".into())),
                None => Err((
                    REQUEST_FAILED,
                    "openfiles does not download schemas: name a schema file instead".into(),
                )),
            }
        }
        _ => {
            tracing::debug!(server = %spec.name, method, "unknown server request");
            Err((
                METHOD_NOT_FOUND,
                format!("openfiles does not handle {method}"),
            ))
        }
    }
}

/// The largest schema file served.
const MAX_SCHEMA_BYTES: u64 = 8 << 20;

/// A schema file's text for the server: only inside one of its folders, read confined.
fn schema_file(path: &Path, folders: &[PathBuf]) -> Result<Value, (i64, String)> {
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

fn note(method: &str, params: Value, state: &Mutex<State>, spec: &ServerSpec) {
    match method {
        "textDocument/publishDiagnostics" => {
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
            let diagnostics = params
                .get("diagnostics")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|d| {
                    let mut diag = serde_json::from_value::<Diagnostic>(d.clone()).ok()?;
                    // clangd's inline fixes (`codeActionsInline`) ride in `data`.
                    if let Some(actions) = d.get("codeActions").filter(|a| a.is_array()) {
                        diag.data = Some(json!({
                            crate::convert::INLINE_ACTIONS: actions,
                            "data": diag.data.take(),
                        }));
                    }
                    Some(diag)
                })
                .collect::<Vec<_>>();
            tracing::trace!(server = %spec.name, path = %path.display(), ?version, n = diagnostics.len(), "push");
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
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
        "$/progress" => {
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
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            match kind {
                "begin" if is_waited(spec, &token, title) => {
                    s.waited_begun += 1;
                    s.waited_active.insert(token, ());
                }
                "end" => {
                    s.waited_active.remove(&token);
                }
                _ => {}
            }
        }
        m if spec.indexing.as_ref().is_some_and(|(begin, _)| begin == m) => {
            state.lock().unwrap_or_else(|e| e.into_inner()).indexing = true;
        }
        m if spec.indexing.as_ref().is_some_and(|(_, end)| end == m) => {
            let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
            s.indexing = false;
            s.indexed_at = s.seq;
        }
        "window/logMessage" | "window/showMessage" => {
            let msg = params
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            tracing::debug!(server = %spec.name, "{method}: {msg}");
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_sections_resolve_by_path() {
        let s = json!({"python": {"analysis": {"typeCheckingMode": "strict"}}, "a.b": 1});
        assert_eq!(
            section(&s, Some("python.analysis")),
            json!({"typeCheckingMode": "strict"})
        );
        assert_eq!(section(&s, Some("a.b")), json!(1));
        assert_eq!(section(&s, Some("python.missing")), Value::Null);
        assert_eq!(section(&s, None), s);
    }
}
