//! `lsp`: an openfiles diagnostic source backed by real language servers.
//!
//! Three layers, like helix-lsp: [`transport`] (framing, pending requests, timeouts with
//! `$/cancelRequest`), [`client`] + [`diagnose`] (capabilities, server requests, fresh
//! diagnostics per DESIGN §4) and this registry, which maps each file to the servers that
//! handle its extension and keeps one [`server::Slot`] per (workspace, server, executable)
//! serving the project roots as workspace folders — or, for servers that take a single
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
pub mod config;
pub mod convert;
pub mod diagnose;
pub mod error;
pub mod fixes;
pub mod limits;
pub mod nav;
pub mod server;
pub mod transport;
pub mod tsserver;

use config::{Config, Resolver, ServerSpec};
use openfiles_plugin_api::gate::{Program, Scope};
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

/// One (file, server) pair to check.
struct Job {
    file: usize,
    spec: ServerSpec,
    exe: PathBuf,
    /// `exe`, allowed by the gate for the check's workspace and trust.
    program: Program,
    root: PathBuf,
    workspace: PathBuf,
    trusted: bool,
}

/// Which instance serves a job: `base` is the workspace when `shared`, else the project root.
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
        for s in servers.iter_mut().filter(|s| s.name == "intelephense") {
            // Its index cache goes to the plugin's state folder, not the system's temp folder.
            if s.initialization_options.is_none() {
                let store = init.state_dir.join("intelephense");
                s.initialization_options = Some(serde_json::json!({
                    "storagePath": store.join("workspaces"),
                    "globalStoragePath": store.join("global"),
                }));
            }
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lsp-plugin")
            .enable_all()
            .build()
            .map_err(|e| PluginError::io("cannot start the lsp runtime", e))?;
        // Claim only extensions some server can serve: one found now (on PATH, or an explicit
        // path), one that may live in a workspace's node_modules/.bin, or one the user added.
        let resolver = Resolver::default();
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let builtin: Vec<String> = config::builtin().into_iter().map(|s| s.name).collect();
        let mut extensions: Vec<String> = servers
            .iter()
            .filter(|s| {
                s.node_package
                    || !builtin.contains(&s.name)
                    || resolver.find(s, &here, &Scope::user()).is_some()
            })
            .flat_map(|s| s.extensions.clone())
            .collect();
        extensions.sort();
        extensions.dedup();
        let mut file_names: Vec<String> = servers
            .iter()
            .filter(|s| resolver.find(s, &here, &Scope::user()).is_some())
            .flat_map(|s| s.file_names.clone())
            .collect();
        file_names.sort();
        file_names.dedup();
        let mut project_markers: Vec<String> = servers
            .iter()
            .flat_map(|s| s.root_markers.clone())
            .collect();
        project_markers.sort();
        project_markers.dedup();
        let caps = Capabilities {
            extensions,
            file_names,
            project_markers,
            project_wide: false,
            needs_project: false,
            notes: Vec::new(),
            checks_texts: true,
            late_fixes: true,
        };
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
        self.rt.block_on(self.inner.clone().query(request))
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

/// Whether `spec` is for this file (by extension or exact file name).
fn handles(spec: &ServerSpec, ext: &str, name: &str) -> bool {
    (!ext.is_empty() && spec.extensions.iter().any(|e| e == ext))
        || spec.file_names.iter().any(|n| n == name)
}

/// Whether one of `spec`'s root markers is in a folder from `file`'s up to the workspace.
fn in_project(spec: &ServerSpec, file: &Path, workspace: &Path) -> bool {
    has_marker(&spec.root_markers, file, workspace)
}

fn has_marker(markers: &[String], file: &Path, workspace: &Path) -> bool {
    openfiles_plugin_api::markers::near(markers, file, workspace)
}

/// One server per group for a file: the first (in table order) whose `claims` the project
/// makes (`[tool.ty]` asks for ty), else the first found
/// ([`openfiles_plugin_api::markers::pick_one`], the pyright plugin's rule too). pyright,
/// basedpyright and ty would report the same type errors in different words.
fn pick_per_group(grouped: Vec<Job>, file: &Path, workspace: &Path) -> Vec<Job> {
    let mut groups: Vec<&Option<String>> = Vec::new();
    for j in &grouped {
        if !groups.contains(&&j.spec.group) {
            groups.push(&j.spec.group);
        }
    }
    let mut chosen: Vec<usize> = Vec::new();
    for g in groups {
        let members: Vec<usize> = (0..grouped.len())
            .filter(|&k| &grouped[k].spec.group == g)
            .collect();
        let pick = openfiles_plugin_api::markers::pick_one(&members, |&k| {
            let claims = &grouped[k].spec.claims;
            !claims.is_empty() && has_marker(claims, file, workspace)
        });
        chosen.extend(pick.map(|i| members[i]));
    }
    grouped
        .into_iter()
        .enumerate()
        .filter(|(i, _)| chosen.contains(i))
        .map(|(_, j)| j)
        .collect()
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
            base: if shared {
                job.workspace.clone()
            } else {
                job.root.clone()
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
                let (slot, task) = Slot::spawn(
                    job.spec.clone(),
                    job.program.clone(),
                    key.base.clone(),
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

    /// The (file, server) pairs of a check, and notes on files a server could not be started
    /// for (by file index).
    fn jobs(
        &self,
        workspace: &Path,
        files: &[PathBuf],
        trusted: bool,
    ) -> (Vec<Job>, Vec<(usize, Item)>) {
        let scope = Scope::workspace(workspace, trusted);
        let mut jobs = Vec::new();
        let mut notes = Vec::new();
        for (i, f) in files.iter().enumerate() {
            let ext = f.extension().and_then(|e| e.to_str()).unwrap_or_default();
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            // Servers of a group (the Python type checkers) found for this file, in order.
            let mut grouped: Vec<Job> = Vec::new();
            for spec in self.servers.iter().filter(|s| handles(s, ext, name)) {
                if spec.runs_project_code && !trusted {
                    continue;
                }
                if spec.needs_project && !in_project(spec, f, workspace) {
                    continue;
                }
                let root = config::project_root(spec, f, workspace);
                if let Some(exe) = self.resolver.find(spec, &root, &scope) {
                    let started = self.started_as(spec, &exe, f, &scope);
                    let (spec, program) = match started {
                        Ok(s) => s,
                        Err(why) => {
                            let why = format!("{} not started: {why}", spec.name);
                            tracing::info!(file = %f.display(), "{why}");
                            notes.push((i, Item::note(Severity::Info, SOURCE, why)));
                            continue;
                        }
                    };
                    // A server that finds each file's project itself is rooted at the
                    // workspace, as in an editor window (and so takes the TypeScript the
                    // workspace resolves) — unless the project brings its own server.
                    let root = if spec.finds_projects
                        && self.config.share_servers
                        && !exe.starts_with(&root)
                    {
                        workspace.to_path_buf()
                    } else {
                        root
                    };
                    let job = Job {
                        file: i,
                        spec,
                        exe,
                        program,
                        root,
                        workspace: workspace.to_path_buf(),
                        trusted,
                    };
                    if job.spec.group.is_some() {
                        grouped.push(job);
                    } else {
                        jobs.push(job);
                    }
                }
            }
            jobs.extend(pick_per_group(grouped, f, workspace));
        }
        (jobs, notes)
    }

    /// `spec` as started for `scope` (see [`config::for_untrusted`]) and its program; for
    /// clangd in an untrusted workspace, the filtered database of `file` written first.
    fn started_as(
        &self,
        spec: &ServerSpec,
        exe: &Path,
        file: &Path,
        scope: &Scope,
    ) -> Result<(ServerSpec, Program), PluginError> {
        let program = Program::at(exe, scope, "language server")
            .map_err(|e| PluginError::Tool(e.to_string()))?;
        if !scope.untrusted() {
            return Ok((spec.clone(), program));
        }
        let workspace = scope.workspace_root().unwrap_or(Path::new("/"));
        let dir = if spec.filtered_compile_db {
            Some(self.clangd_dbs.prepare(workspace, file)?)
        } else {
            None
        };
        let spec = config::for_untrusted(spec, exe, dir.as_deref(), workspace)?;
        Ok((spec, program))
    }

    async fn check(
        self: Arc<Self>,
        req: &CheckRequest,
        cancel: CancellationToken,
    ) -> Result<CheckResponse, PluginError> {
        let timeout_ms = if req.timeout_ms == 0 {
            self.config.default_timeout_ms
        } else {
            req.timeout_ms
        };
        // Answer a little before the host gives up, so a timeout item arrives instead of nothing.
        let margin = (timeout_ms / 10).min(500);
        let deadline = Instant::now() + Duration::from_millis(timeout_ms - margin);
        let workspace = req.workspace.clone();
        let files = req.files.clone();
        let me = self.clone();
        let trusted = req.trusted;
        let (jobs, notes) =
            tokio::task::spawn_blocking(move || me.jobs(&workspace, &files, trusted))
                .await
                .map_err(|e| PluginError::Tool(e.to_string()))?;
        let mut set = JoinSet::new();
        let (fix_jobs, jobs) = if req.fixes_only {
            (jobs, Vec::new())
        } else {
            (Vec::new(), jobs)
        };
        // Fixes for what the last check reported: only from servers already running.
        {
            for job in fix_jobs {
                let path = req.files[job.file].clone();
                let me = self.clone();
                let cancel = cancel.clone();
                set.spawn(async move {
                    let key = me.key(&job);
                    let slot = me.slot(&job, &key);
                    let items = match slot.status().await.and(Some(())) {
                        None => Vec::new(),
                        Some(()) => {
                            match tokio::time::timeout_at(deadline, me.client(&job)).await {
                                Ok(Ok(client)) => tokio::select! {
                                    items = fixes::fixes(&client, &path, deadline) => items,
                                    _ = cancel.cancelled() => Vec::new(),
                                },
                                _ => Vec::new(),
                            }
                        }
                    };
                    (job.file, items)
                });
            }
        }
        for job in jobs {
            let path = req.files[job.file].clone();
            // Other session files this server handles (for its file watcher).
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
        let mut per_file: HashMap<usize, Vec<Item>> = HashMap::new();
        if !req.fixes_only {
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
        let mut files: Vec<FileResult> = per_file
            .into_iter()
            .map(|(i, items)| FileResult {
                path: req.files[i].clone(),
                items: convert::merge(items),
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(CheckResponse { files })
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
            match slot.get(job.root.clone()).await {
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
