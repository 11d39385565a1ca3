//! One initialized language server: capabilities, server requests, pushed state.
//!
//! Owns the [`Transport`] of one server and a dispatcher task (`dispatch`) that answers
//! every server request (unknown ones get `MethodNotFound`, so none is left unanswered) and records what
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
use crate::convert::{path_to_uri, Encoding};
use crate::transport::{Error, Transport};
use lsp_types::request::Request;
use lsp_types::{Diagnostic, InitializeResult};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

mod dispatch;

pub use dispatch::section;
use dispatch::Dispatcher;

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
    /// Active work-done progresses whose title speaks of indexing (clangd's background
    /// index, rust-analyzer's cache priming): token → title and last message. While one
    /// runs, an answer about other files may be incomplete (`crate::completeness` says which).
    pub index_progress: HashMap<String, String>,
    /// Every active work-done progress, by token.
    pub progress_active: HashSet<String>,
    /// rust-analyzer's last `experimental/serverStatus`: `Some(false)` while it loads the
    /// workspace or primes its caches, `Some(true)` once quiescent, `None` before the first.
    pub quiescent: Option<bool>,
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

impl ServerCaps {
    /// The facts of `initialize`'s capabilities the client uses.
    fn from_lsp(c: &lsp_types::ServerCapabilities) -> ServerCaps {
        let pull = c.diagnostic_provider.as_ref().map(|p| match p {
            lsp_types::DiagnosticServerCapabilities::Options(o) => o.identifier.clone(),
            lsp_types::DiagnosticServerCapabilities::RegistrationOptions(o) => {
                o.diagnostic_options.identifier.clone()
            }
        });
        let (save, save_include_text) = save_caps(c.text_document_sync.as_ref());
        let folders = c
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
        ServerCaps {
            encoding: Encoding::from_lsp(c.position_encoding.as_ref().map(|e| e.as_str())),
            pull,
            save,
            save_include_text,
            commands: c
                .execute_command_provider
                .as_ref()
                .map(|e| e.commands.clone())
                .unwrap_or_default(),
            folders,
            code_actions: !matches!(
                c.code_action_provider,
                None | Some(lsp_types::CodeActionProviderCapability::Simple(false))
            ),
        }
    }
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
    /// `text` is a text the service gave (a committed one, for its baseline), not the
    /// file's: a check of the file's own text does not take an answer for it.
    pub given: bool,
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
    /// The workspaces whose files it checks, `root` first: more than one when worktrees of
    /// one repository share it. A file is read confined to the one that holds it.
    workspaces: Mutex<Vec<PathBuf>>,
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
    /// Per file, whose turn it is to send a text and take an answer: checks of the file's
    /// own text share it, a check of a given text has it alone (`crate::diagnose`).
    turns: Mutex<HashMap<PathBuf, Arc<tokio::sync::RwLock<()>>>>,
}

impl Client {
    /// The lock of `path`'s turns (see `Client::turns`).
    pub fn turn(&self, path: &Path) -> Arc<tokio::sync::RwLock<()>> {
        let mut turns = self.turns.lock().unwrap_or_else(|e| e.into_inner());
        turns.entry(path.to_path_buf()).or_default().clone()
    }

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
        let dispatcher = Dispatcher {
            state: state.clone(),
            spec: spec.clone(),
            folders: folders.clone(),
        };
        tokio::spawn(dispatcher.run(transport.clone(), inbox, tx));
        let listed = folders.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let init = initialize_or_stop(&transport, spec, &listed, startup).await?;
        initialized(&transport, spec);
        let caps = ServerCaps::from_lsp(&init.capabilities);
        tracing::info!(server = %spec.name, root = %root.display(), folders = listed.len(), folder_support = caps.folders, encoding = ?caps.encoding, pull = caps.pull.is_some(), "server initialized");
        Ok(Arc::new(Client {
            name: spec.name.clone(),
            spec: spec.clone(),
            root: root.to_path_buf(),
            workspaces: Mutex::new(vec![root.to_path_buf()]),
            folders,
            transport,
            caps,
            state,
            changed: rx,
            docs: Mutex::default(),
            turns: Mutex::default(),
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

    /// Check files of `workspace` too (another worktree of the repository sharing the server).
    pub fn serve_workspace(&self, workspace: &Path) {
        let mut w = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
        if !w.iter().any(|x| x == workspace) {
            w.push(workspace.to_path_buf());
        }
    }

    /// The folder `path` is read confined to: the deepest served workspace (or `root`) that
    /// holds it, else `root` (and the read is refused).
    pub fn root_for(&self, path: &Path) -> PathBuf {
        let w = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
        w.iter()
            .filter(|r| path.starts_with(r))
            .max_by_key(|r| r.components().count())
            .cloned()
            .unwrap_or_else(|| self.root.clone())
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

/// [`initialize`]; a server that fails it is killed, and its error carries the server's
/// last stderr lines.
async fn initialize_or_stop(
    t: &Transport,
    spec: &ServerSpec,
    folders: &[PathBuf],
    timeout: Duration,
) -> Result<InitializeResult, Error> {
    let e = match initialize(t, spec, folders, timeout).await {
        Ok(r) => return Ok(r),
        Err(e) => e,
    };
    t.kill().await;
    t.stderr_closed(Duration::from_secs(1)).await;
    let tail = t.stderr_tail();
    Err(if tail.is_empty() {
        e
    } else {
        Error::Startup {
            cause: Box::new(e),
            stderr: tail,
        }
    })
}

/// `initialized`, the server's own notifications to follow it, and its settings pushed.
fn initialized(t: &Transport, spec: &ServerSpec) {
    t.notify("initialized", json!({}));
    for (method, params) in &spec.after_initialized {
        t.notify(method, params.clone());
    }
    if !spec.settings.is_null() {
        t.notify(
            "workspace/didChangeConfiguration",
            json!({"settings": spec.settings}),
        );
    }
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
            // rust-analyzer's `experimental/serverStatus`: `quiescent` once the workspace is
            // loaded and indexed (`crate::completeness`); other servers ignore it.
            "experimental": {"serverStatusNotification": true},
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
