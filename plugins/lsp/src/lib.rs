//! `lsp`: an openfiles diagnostic source backed by real language servers.
//!
//! Three layers, like helix-lsp: [`transport`] (framing, pending requests, timeouts with
//! `$/cancelRequest`), [`client`] + [`diagnose`] (capabilities, server requests, fresh
//! diagnostics per DESIGN §4) and this registry, which maps each file to the servers that
//! handle its extension and keeps one [`server::Slot`] per (workspace, server, executable)
//! serving the project roots as workspace folders (per (repository, server, executable) for
//! trusted worktrees of one repository: `repository_of`) — or, for servers that take a single
//! folder (learned at their first start) and with `share_servers = false`, one per (project
//! root, server, executable). It also keeps the running instances within `max_servers` and
//! `max_memory_mib` ([`limits`]): before an instance starts, and after each check.
//!
//! Trust: every server is a [`gate::Program`](openfiles_plugin_api::gate::Program) of the
//! check's workspace and trust (so an untrusted workspace's gopls gets `GOTOOLCHAIN=local`,
//! `CGO_ENABLED=0`, …), and an instance serves one trust level (a workspace trusted later
//! gets a new one). In a workspace the user has not trusted, a server that runs project code
//! is not started, and the others start as [`config::for_untrusted`] says (clangd with its
//! project configuration off and only the database [`clangd_db`] wrote).
//!
//! The host calls [`Plugin::check`] on its own threads; the plugin owns a small tokio runtime
//! and blocks on it. Dropping the plugin stops every server (`shutdown` + `exit`).
//! Columns in the output count Unicode scalar values of the line, 1-based, whatever position
//! encoding the server negotiated.

pub mod clangd_db;
pub mod client;
mod completeness;
pub mod config;
pub mod convert;
pub mod diagnose;
pub mod error;
pub mod fixes;
mod jobs;
pub mod limits;
pub mod nav;
pub mod server;
pub mod transport;
pub mod tsserver;

use config::{Config, Resolver, ServerSpec};
use jobs::Job;
use openfiles_plugin_api::gate::Scope;
use openfiles_plugin_api::{
    Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin, PluginError,
    Severity,
};
use server::{Slot, SlotError, Timing};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Source name of the plugin's own explanatory items.
pub const SOURCE: &str = "openfiles";

/// The plugin instance.
pub struct LspPlugin {
    rt: tokio::runtime::Runtime,
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    servers: Vec<ServerSpec>,
    resolver: Resolver,
    /// The compile databases clangd gets in untrusted workspaces.
    clangd_dbs: clangd_db::ClangdDbs,
    slots: Mutex<HashMap<SlotKey, Slot>>,
    /// (server, executable) pairs that take a single workspace folder: one slot per root.
    single_folder: Mutex<HashSet<(String, PathBuf)>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    stop: CancellationToken,
    checks: Mutex<HashMap<u64, CancellationToken>>,
}

/// The repository a workspace at the top of a git worktree belongs to (its common git
/// folder: `.git` itself, or for a linked worktree the folder its `.git` file's `gitdir:`
/// names the `worktrees/` entry of), else the workspace itself. `.git` is data, read
/// confined; only trusted workspaces' servers are shared this way.
fn repository_of(workspace: &Path) -> PathBuf {
    let dot_git = workspace.join(".git");
    match std::fs::symlink_metadata(&dot_git) {
        Ok(m) if m.is_dir() => return dot_git,
        Ok(m) if m.is_file() => {
            let text =
                openfiles_plugin_api::confine::read_workspace_file(workspace, &dot_git, 4096)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
            if let Some(dir) = text.trim().strip_prefix("gitdir:") {
                let gitdir = workspace.join(dir.trim());
                let common = gitdir
                    .parent()
                    .filter(|p| p.file_name().is_some_and(|n| n == "worktrees"))
                    .and_then(Path::parent);
                if let Some(common) = common {
                    return common.canonicalize().unwrap_or_else(|_| common.to_owned());
                }
            }
        }
        _ => {}
    }
    workspace.to_owned()
}

/// Which instance serves a job: `base` is the workspace when `shared` (the repository, for a
/// trusted worktree), else the project root.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SlotKey {
    base: PathBuf,
    server: String,
    exe: PathBuf,
    shared: bool,
    /// An instance serves one trust level: started with that environment and those options.
    trusted: bool,
}

impl Plugin for LspPlugin {
    const NAME: &'static str = "lsp";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        init_logging();
        let config = config::parse(&init.config)?;
        let mut servers = config.servers()?;
        store_in(&mut servers, &init.state_dir);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lsp-plugin")
            .enable_all()
            .build()
            .map_err(|e| PluginError::io("cannot start the lsp runtime", e))?;
        let resolver = Resolver::default();
        let caps = capabilities(&servers, &resolver);
        let inner = Inner {
            config,
            servers,
            resolver,
            clangd_dbs: clangd_db::ClangdDbs::new(init.state_dir.join("clangd")),
            slots: Mutex::default(),
            single_folder: Mutex::default(),
            tasks: Mutex::default(),
            stop: CancellationToken::new(),
            checks: Mutex::default(),
        };
        Ok((
            LspPlugin {
                rt,
                inner: Arc::new(inner),
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        let cancel = CancellationToken::new();
        self.inner
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(request.id, cancel.clone());
        let r = self.rt.block_on(self.inner.clone().check(&request, cancel));
        self.inner
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request.id);
        r
    }

    fn query(
        &self,
        request: openfiles_plugin_api::query::QueryRequest,
    ) -> Result<openfiles_plugin_api::query::QueryAnswer, PluginError> {
        // Cancelled like a check (the ids share one counter): the question's requests are
        // dropped, which tells the server `$/cancelRequest`.
        let cancel = CancellationToken::new();
        let id = request.id;
        self.inner
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, cancel.clone());
        let r = self.rt.block_on(async {
            tokio::select! {
                r = self.inner.clone().query(request) => r,
                _ = cancel.cancelled() => Err(PluginError::Cancelled),
            }
        });
        self.inner
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        r
    }

    fn cancel(&self, check_id: u64) {
        if let Some(c) = self
            .inner
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&check_id)
        {
            c.cancel();
        }
    }
}

openfiles_plugin_api::export_plugin!(LspPlugin);

/// Servers that keep an index cache keep it in the plugin's state folder, not the system's
/// temp folder (intelephense, unless configured otherwise).
fn store_in(servers: &mut [ServerSpec], state_dir: &Path) {
    for s in servers.iter_mut().filter(|s| s.name == "intelephense") {
        if s.initialization_options.is_none() {
            let store = state_dir.join("intelephense");
            s.initialization_options = Some(serde_json::json!({
                "storagePath": store.join("workspaces"),
                "globalStoragePath": store.join("global"),
            }));
        }
    }
}

/// What the plugin claims: only extensions some server can serve — one found now (on PATH,
/// or an explicit path), one that may live in a workspace's node_modules/.bin, or one the
/// user added —, the file names of servers found now, and every server's root markers.
fn capabilities(servers: &[ServerSpec], resolver: &Resolver) -> Capabilities {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let found = |s: &ServerSpec| resolver.find(s, &here, &Scope::user()).is_some();
    let builtin: Vec<String> = config::builtin().into_iter().map(|s| s.name).collect();
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v.dedup();
        v
    };
    let extensions = servers
        .iter()
        .filter(|s| s.node_package || !builtin.contains(&s.name) || found(s))
        .flat_map(|s| s.extensions.clone())
        .collect();
    let file_names = servers
        .iter()
        .filter(|s| found(s))
        .flat_map(|s| s.file_names.clone())
        .collect();
    let project_markers = servers
        .iter()
        .flat_map(|s| s.root_markers.clone())
        .collect();
    Capabilities {
        extensions: sorted(extensions),
        file_names: sorted(file_names),
        project_markers: sorted(project_markers),
        project_wide: false,
        needs_project: false,
        notes: Vec::new(),
        checks_texts: true,
        late_fixes: true,
        warm: false,
        superseded: false,
        serves: Vec::new(),
    }
}

/// Send this library's `tracing` events (server stderr lines, restarts, timeouts) to stderr,
/// which the plugin host forwards to the service log. Loaded as a cdylib, the plugin has its
/// own copy of `tracing` with no subscriber; linked as an rlib into a program that installed
/// one, this does nothing. `OPENFILES_LSP_LOG` (an env-filter) overrides the default `info`.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("OPENFILES_LSP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("openfiles_plugin_lsp=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .try_init();
}

impl LspPlugin {
    /// Process ids of the running servers, by server name (for tests and status output).
    pub fn server_pids(&self) -> Vec<(String, u32)> {
        let slots = self.inner.all_slots();
        self.rt.block_on(async {
            let mut out = Vec::new();
            for (key, slot) in slots {
                if let Some(pid) = slot.pid().await {
                    out.push((key.server, pid));
                }
            }
            out
        })
    }

    /// The workspace folders of each running server, by server name (for tests and status
    /// output); a server per project root has that root only.
    pub fn server_folders(&self) -> Vec<(String, Vec<PathBuf>)> {
        let slots = self.inner.all_slots();
        self.rt.block_on(async {
            let mut out = Vec::new();
            for (key, slot) in slots {
                let mut folders = slot.folders().await;
                if !folders.is_empty() {
                    folders.sort();
                    out.push((key.server, folders));
                }
            }
            out.sort();
            out
        })
    }
}

impl Drop for LspPlugin {
    fn drop(&mut self) {
        self.inner.stop.cancel();
        let tasks =
            std::mem::take(&mut *self.inner.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        self.rt.block_on(async {
            for t in tasks {
                let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
            }
        });
    }
}

impl Inner {
    fn all_slots(&self) -> Vec<(SlotKey, Slot)> {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, s)| (k.clone(), s.clone()))
            .collect()
    }

    fn key(&self, job: &Job) -> SlotKey {
        let shared = self.config.share_servers
            && !self
                .single_folder
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&(job.spec.name.clone(), job.exe.clone()));
        SlotKey {
            base: match (shared, job.trusted) {
                // Worktrees of one repository share a trusted workspace's servers.
                (true, true) => repository_of(&job.workspace),
                (true, false) => job.workspace.clone(),
                (false, _) => job.root.clone(),
            },
            server: job.spec.name.clone(),
            exe: job.exe.clone(),
            shared,
            trusted: job.trusted,
        }
    }

    fn slot(&self, job: &Job, key: &SlotKey) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .entry(key.clone())
            .or_insert_with(|| {
                let timing = Timing {
                    idle: Duration::from_millis(self.config.idle_timeout_ms),
                    startup: Duration::from_millis(self.config.startup_timeout_ms),
                    backoff: Duration::from_millis(self.config.restart_backoff_ms),
                };
                // A shared server runs in the workspace that started it (the key of a
                // worktree's is its repository).
                let base = match key.shared {
                    true => job.workspace.clone(),
                    false => key.base.clone(),
                };
                let (slot, task) = Slot::spawn(
                    job.spec.clone(),
                    job.program.clone(),
                    base,
                    key.shared,
                    timing,
                    self.stop.child_token(),
                );
                self.tasks
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(task);
                slot
            })
            .clone()
    }

    async fn check(
        self: Arc<Self>,
        req: &CheckRequest,
        cancel: CancellationToken,
    ) -> Result<CheckResponse, PluginError> {
        let deadline = self.deadline(req);
        let (workspace, files, trusted) = (req.workspace.clone(), req.files.clone(), req.trusted);
        let me = self.clone();
        let (mut jobs, notes) =
            tokio::task::spawn_blocking(move || me.jobs(&workspace, &files, trusted))
                .await
                .map_err(|e| PluginError::Tool(e.to_string()))?;
        // A server another source stands in for (the pyright plugin's warm server for a
        // Python type checker, over the files its project tracks) is left out of this check,
        // and not started for it; questions (`query`) still go to it.
        jobs.retain(|j| !served_elsewhere(req, j));
        let mut set = JoinSet::new();
        let mut per_file: HashMap<usize, Vec<Item>> = HashMap::new();
        if req.fixes_only {
            self.spawn_fixes(&mut set, jobs, req, deadline, &cancel);
        } else {
            self.spawn_checks(&mut set, jobs, req, deadline, &cancel);
            for (file, note) in notes {
                per_file.entry(file).or_default().push(note);
            }
        }
        while let Some(r) = set.join_next().await {
            let (file, items) =
                r.map_err(|e| PluginError::Tool(format!("lsp check task failed: {e}")))?;
            per_file.entry(file).or_default().extend(items);
        }
        // Memory is measured once the check's servers are idle again, off the answer's path.
        if self.config.max_memory_mib > 0 {
            let me = self.clone();
            tokio::spawn(async move { me.enforce_memory().await });
        }
        if cancel.is_cancelled() {
            return Err(PluginError::Cancelled);
        }
        Ok(response(req, per_file))
    }

    /// When a check answers: a little before the host gives up (its timeout, else the
    /// configured default), so a timeout item arrives instead of nothing.
    fn deadline(&self, req: &CheckRequest) -> Instant {
        let timeout_ms = if req.timeout_ms == 0 {
            self.config.default_timeout_ms
        } else {
            req.timeout_ms
        };
        let margin = (timeout_ms / 10).min(500);
        Instant::now() + Duration::from_millis(timeout_ms - margin)
    }

    /// Fixes for what the last check reported (`CheckRequest::fixes_only`): only from
    /// servers already running.
    fn spawn_fixes(
        self: &Arc<Self>,
        set: &mut JoinSet<(usize, Vec<Item>)>,
        jobs: Vec<Job>,
        req: &CheckRequest,
        deadline: Instant,
        cancel: &CancellationToken,
    ) {
        for job in jobs {
            let path = req.files[job.file].clone();
            let me = self.clone();
            let cancel = cancel.clone();
            set.spawn(async move {
                let key = me.key(&job);
                let slot = me.slot(&job, &key);
                let items = match slot.status().await.and(Some(())) {
                    None => Vec::new(),
                    Some(()) => match tokio::time::timeout_at(deadline, me.client(&job)).await {
                        Ok(Ok(client)) => tokio::select! {
                            items = fixes::fixes(&client, &path, deadline) => items,
                            _ = cancel.cancelled() => Vec::new(),
                        },
                        _ => Vec::new(),
                    },
                };
                (job.file, items)
            });
        }
    }

    /// One task per (file, server) pair, each told the other session files its server
    /// handles (for its file watcher) and given the text to check, if the request has one.
    fn spawn_checks(
        self: &Arc<Self>,
        set: &mut JoinSet<(usize, Vec<Item>)>,
        jobs: Vec<Job>,
        req: &CheckRequest,
        deadline: Instant,
        cancel: &CancellationToken,
    ) {
        for job in jobs {
            let path = req.files[job.file].clone();
            let handles = |p: &Path| {
                let ext = p.extension().and_then(|e| e.to_str()).unwrap_or_default();
                job.spec.extensions.iter().any(|e| e == ext)
            };
            let also: Vec<PathBuf> = req
                .also_report
                .iter()
                .filter(|p| **p != path && handles(p))
                .cloned()
                .collect();
            let me = self.clone();
            let cancel = cancel.clone();
            let given = req.texts.get(&path).map(|t| Arc::<str>::from(t.as_str()));
            set.spawn(async move {
                let items = tokio::select! {
                    items = me.check_one(&job, &path, &also, deadline, given) => items,
                    _ = cancel.cancelled() => Vec::new(),
                };
                (job.file, items)
            });
        }
    }

    /// Running instances other than `except`, as the limits see them.
    async fn running(&self, except: Option<&SlotKey>) -> Vec<(SlotKey, Slot, server::Status)> {
        let mut out = Vec::new();
        for (key, slot) in self.all_slots() {
            if Some(&key) == except {
                continue;
            }
            if let Some(status) = slot.status().await {
                out.push((key, slot, status));
            }
        }
        out
    }

    /// Stop least recently used instances so that `key`'s can start within `max_servers`.
    async fn make_room(&self, key: &SlotKey, slot: &Slot) {
        let max = self.config.max_servers;
        if max == 0 || slot.status().await.is_some() {
            return;
        }
        let running = self.running(Some(key)).await;
        let view: Vec<limits::Running<usize>> = running
            .iter()
            .enumerate()
            .map(|(i, (_, _, s))| limits::Running {
                key: i,
                last_used: s.last_used,
                busy: s.busy,
                rss: 0,
            })
            .collect();
        for i in limits::over_count(&view, max, 1) {
            let (k, victim, _) = &running[i];
            if victim.stop().await {
                tracing::info!(server = %k.server, base = %k.base.display(), max_servers = max, "least recently used server stopped");
            }
        }
    }

    /// Stop least recently used instances until the servers' RSS is within `max_memory_mib`.
    async fn enforce_memory(&self) {
        let max = self.config.max_memory_mib << 20;
        let running = self.running(None).await;
        if running.len() < 2 {
            return; // the most recently used instance is always kept: nothing to measure
        }
        let pids: Vec<u32> = running.iter().map(|(_, _, s)| s.pid.unwrap_or(0)).collect();
        let rss = tokio::task::spawn_blocking(move || limits::tree_rss(&pids))
            .await
            .unwrap_or_default();
        let view: Vec<limits::Running<usize>> = running
            .iter()
            .zip(rss)
            .enumerate()
            .map(|(i, ((_, _, s), rss))| limits::Running {
                key: i,
                last_used: s.last_used,
                busy: s.busy,
                rss,
            })
            .collect();
        for i in limits::over_memory(&view, max) {
            let (k, victim, _) = &running[i];
            if victim.stop().await {
                tracing::info!(server = %k.server, base = %k.base.display(), rss_mib = view[i].rss >> 20, max_memory_mib = self.config.max_memory_mib, "least recently used server stopped to free memory");
            }
        }
    }

    /// A running client for `job`; a server that turns out to take a single workspace folder
    /// is remembered, and the job goes to a slot of its own project root.
    async fn client(&self, job: &Job) -> Result<Arc<client::Client>, SlotError> {
        loop {
            let key = self.key(job);
            let slot = self.slot(job, &key);
            self.make_room(&key, &slot).await;
            match slot.get(job.root.clone(), job.workspace.clone()).await {
                Err(SlotError::SingleFolder { .. }) if key.shared => {
                    tracing::info!(server = %job.spec.name, "takes a single workspace folder: one server per project root");
                    self.single_folder
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert((job.spec.name.clone(), job.exe.clone()));
                    // The shared instance serves one root no check will send it again.
                    slot.stop().await;
                }
                r => return r,
            }
        }
    }

    /// One server's items for one file; a crash mid-check restarts the server and tries again.
    async fn check_one(
        &self,
        job: &Job,
        path: &Path,
        also: &[PathBuf],
        deadline: Instant,
        given: Option<Arc<str>>,
    ) -> Vec<Item> {
        let lang = config::language_id(&job.spec, path);
        let name = &job.spec.name;
        let timed_out = || {
            vec![Item::note(
                Severity::Warning,
                SOURCE,
                format!("{name} timed out: no diagnostics before the check's deadline"),
            )]
        };
        for attempt in 0..3 {
            let client = match tokio::time::timeout_at(deadline, self.client(job)).await {
                Err(_) => return timed_out(),
                Ok(Err(e)) => return vec![Item::note(Severity::Warning, SOURCE, e.to_string())],
                Ok(Ok(c)) => c,
            };
            let started = Instant::now();
            let quiet = self.config.quiet();
            let text = given.clone();
            match diagnose::diagnose(&client, path, also, &lang, deadline, quiet, text).await {
                Ok(items) => {
                    let ms = started.elapsed().as_millis() as u64;
                    tracing::debug!(server = %name, path = %path.display(), n = items.len(), ms, "checked");
                    return items;
                }
                Err(error::CheckError::Timeout(_)) => return timed_out(),
                Err(e @ error::CheckError::Crashed { .. }) if attempt < 2 => {
                    tracing::warn!("{e}; restarting");
                }
                Err(e) => return vec![Item::note(Severity::Warning, SOURCE, e.to_string())],
            }
        }
        Vec::new()
    }
}

/// Whether `job`'s server is one the request says another source gives the diagnostics of,
/// for its file ([`CheckRequest::served`]; only trusted workspaces' requests carry it), and
/// that source's project reports on the file ([`tracked::tracks`]: a file its `include`
/// leaves out keeps this server's analysis).
fn served_elsewhere(req: &CheckRequest, job: &Job) -> bool {
    let Some(file) = req.files.get(job.file) else {
        return false;
    };
    req.trusted
        && req
            .served
            .get(file)
            .is_some_and(|names| names.contains(&job.spec.name))
        && openfiles_plugin_api::tracked::tracks(&job.spec.name, &job.root, file)
}

/// The answer: each file's items merged ([`convert::merge`]), files in path order.
fn response(req: &CheckRequest, per_file: HashMap<usize, Vec<Item>>) -> CheckResponse {
    let mut files: Vec<FileResult> = per_file
        .into_iter()
        .map(|(i, items)| FileResult {
            path: req.files[i].clone(),
            items: convert::merge(items),
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    CheckResponse {
        files,
        ..Default::default()
    }
}
