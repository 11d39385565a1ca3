//! `lsp`: an openfiles diagnostic source backed by real language servers.
//!
//! Three layers, like helix-lsp: [`transport`] (framing, pending requests, timeouts with
//! `$/cancelRequest`), [`client`] + [`diagnose`] (capabilities, server requests, fresh
//! diagnostics per DESIGN §4) and this registry, which maps each file to the servers that
//! handle its extension and keeps one [`server::Slot`] per (project root, server).
//!
//! The host calls [`Plugin::check`] on its own threads; the plugin owns a small tokio runtime
//! and blocks on it. Dropping the plugin stops every server (`shutdown` + `exit`).
//! Columns in the output count Unicode scalar values of the line, 1-based, whatever position
//! encoding the server negotiated.

pub mod client;
pub mod config;
pub mod convert;
pub mod diagnose;
pub mod error;
pub mod server;
pub mod transport;
pub mod tsserver;

use config::{Config, Resolver, ServerSpec};
use openfiles_plugin_api::{
    Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin, Severity,
};
use server::{Slot, Timing};
use std::collections::HashMap;
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
    slots: Mutex<HashMap<(PathBuf, String), Slot>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    stop: CancellationToken,
    checks: Mutex<HashMap<u64, CancellationToken>>,
}

/// One (file, server) pair to check.
struct Job {
    file: usize,
    spec: ServerSpec,
    exe: PathBuf,
    root: PathBuf,
}

impl Plugin for LspPlugin {
    const NAME: &'static str = "lsp";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), String> {
        init_logging();
        let config = config::parse(&init.config)?;
        let servers = config.servers()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lsp-plugin")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the lsp runtime: {e}"))?;
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
                    || resolver.find(s, &here, &here).is_some()
            })
            .flat_map(|s| s.extensions.clone())
            .collect();
        extensions.sort();
        extensions.dedup();
        let mut project_markers: Vec<String> = servers
            .iter()
            .flat_map(|s| s.root_markers.clone())
            .collect();
        project_markers.sort();
        project_markers.dedup();
        let caps = Capabilities {
            extensions,
            file_names: Vec::new(),
            project_markers,
            project_wide: false,
            notes: Vec::new(),
            checks_texts: true,
        };
        let inner = Inner {
            config,
            servers,
            resolver,
            slots: Mutex::default(),
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

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, String> {
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
        let slots: Vec<_> = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|((_, n), s)| (n.clone(), s.clone()))
            .collect();
        self.rt.block_on(async {
            let mut out = Vec::new();
            for (name, slot) in slots {
                if let Some(pid) = slot.pid().await {
                    out.push((name, pid));
                }
            }
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
    fn slot(&self, job: &Job) -> Slot {
        let key = (job.root.clone(), job.spec.name.clone());
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .entry(key)
            .or_insert_with(|| {
                let timing = Timing {
                    idle: Duration::from_millis(self.config.idle_timeout_ms),
                    startup: Duration::from_millis(self.config.startup_timeout_ms),
                    backoff: Duration::from_millis(self.config.restart_backoff_ms),
                };
                let (slot, task) = Slot::spawn(
                    job.spec.clone(),
                    job.exe.clone(),
                    job.root.clone(),
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

    fn jobs(&self, workspace: &Path, files: &[PathBuf]) -> Vec<Job> {
        let mut jobs = Vec::new();
        for (i, f) in files.iter().enumerate() {
            let Some(ext) = f.extension().and_then(|e| e.to_str()) else {
                continue;
            };
            let mut python_checker = false;
            for spec in self
                .servers
                .iter()
                .filter(|s| s.extensions.iter().any(|e| e == ext))
            {
                // basedpyright stands in for pyright only when pyright is absent.
                let is_pyright = spec.name == "pyright" || spec.name == "basedpyright";
                if is_pyright && python_checker {
                    continue;
                }
                let root = config::project_root(spec, f, workspace);
                if let Some(exe) = self.resolver.find(spec, &root, workspace) {
                    python_checker |= is_pyright;
                    jobs.push(Job {
                        file: i,
                        spec: spec.clone(),
                        exe,
                        root,
                    });
                }
            }
        }
        jobs
    }

    async fn check(
        self: Arc<Self>,
        req: &CheckRequest,
        cancel: CancellationToken,
    ) -> Result<CheckResponse, String> {
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
        let jobs = tokio::task::spawn_blocking(move || me.jobs(&workspace, &files))
            .await
            .map_err(|e| e.to_string())?;
        let mut set = JoinSet::new();
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
        while let Some(r) = set.join_next().await {
            let (file, items) = r.map_err(|e| format!("lsp check task failed: {e}"))?;
            per_file.entry(file).or_default().extend(items);
        }
        if cancel.is_cancelled() {
            return Err("check cancelled".into());
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

    /// One server's items for one file; a crash mid-check restarts the server and tries again.
    async fn check_one(
        &self,
        job: &Job,
        path: &Path,
        also: &[PathBuf],
        deadline: Instant,
        given: Option<Arc<str>>,
    ) -> Vec<Item> {
        let slot = self.slot(job);
        let lang = config::language_id(
            &job.spec,
            path.extension()
                .and_then(|e| e.to_str())
                .unwrap_or_default(),
        );
        let name = &job.spec.name;
        let timed_out = || {
            vec![Item::note(
                Severity::Warning,
                SOURCE,
                format!("{name} timed out: no diagnostics before the check's deadline"),
            )]
        };
        for attempt in 0..3 {
            let client = match tokio::time::timeout_at(deadline, slot.get()).await {
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
