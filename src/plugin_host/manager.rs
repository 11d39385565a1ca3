//! [`PluginManager`]: starts a host child for every plugin library found, keeps the
//! table of what was found, loaded or refused (and why), and routes checks to the
//! supervising actor of each plugin.
//!
//! Startup is sequential in search-path order, so when two libraries call themselves by
//! the same name the first one wins (the other is refused as a duplicate). A plugin named
//! in `plugins.disabled` is loaded only far enough to learn its name, then stopped.
//! Checks get a fresh id (unique in this process), a deadline (`timeout_ms`, default
//! [`DEFAULT_TIMEOUT`]) after which the plugin is told to cancel, and are cancelled too
//! when the caller drops the future.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openfiles_plugin_api::{Capabilities, CheckRequest, CheckResponse, Init};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::discover;
use super::supervisor::{Cmd, Host, Spec, StatusSlot, Supervisor};
use super::{PluginError, PluginId};
use crate::diagnostics::bound::{self, RunBound};
use openfiles_wire::control::{PluginState, PluginStatus};

/// Deadline of a check whose request says `timeout_ms: 0`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// How to find plugins and run their hosts; [`ManagerOptions::from_env`] is what the
/// service uses. Tests and benchmarks running inside another executable set `host_exe`
/// to the `openfiles` binary.
#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// The `openfiles` executable (run as `<host_exe> plugin-host <library>`).
    pub host_exe: PathBuf,
    /// `OPENFILES_PLUGIN_PATH`.
    pub env_path: Option<OsString>,
    /// `../lib/openfiles/plugins` next to the executable.
    pub exe_dir: Option<PathBuf>,
}

impl ManagerOptions {
    pub fn from_env() -> Self {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("openfiles"));
        ManagerOptions {
            exe_dir: discover::exe_plugin_dir(&exe),
            host_exe: exe,
            env_path: std::env::var_os("OPENFILES_PLUGIN_PATH"),
        }
    }
}

struct Loaded {
    /// Its row in `rows`.
    index: usize,
    name: String,
    capabilities: Capabilities,
    tx: mpsc::Sender<Cmd>,
}

/// The daemon's view of its plugins. Cloning is cheap (one shared inner state), so a
/// check's future can own its manager (see the `Checker` impl in `super::checker`).
#[derive(Clone)]
pub struct PluginManager {
    inner: Arc<Inner>,
}

struct Inner {
    loaded: Vec<Loaded>,
    rows: Arc<Mutex<Vec<PluginStatus>>>,
    next_id: AtomicU64,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The service-wide bound on concurrent project-wide runs.
    runs: Arc<RunBound>,
}

impl PluginManager {
    /// Discover and start every plugin (see the module docs); hosts stop when `shutdown`
    /// is cancelled. Never fails: problems are in [`PluginManager::status_rows`].
    pub async fn start(
        cfg: &crate::config::Config,
        state_dir: &Path,
        shutdown: CancellationToken,
    ) -> PluginManager {
        Self::start_with(cfg, state_dir, shutdown, ManagerOptions::from_env()).await
    }

    /// [`PluginManager::start`] with explicit options.
    pub async fn start_with(
        cfg: &crate::config::Config,
        state_dir: &Path,
        shutdown: CancellationToken,
        opts: ManagerOptions,
    ) -> PluginManager {
        let search = discover::search_path(
            &cfg.plugins.paths,
            opts.env_path.as_deref(),
            opts.exe_dir.as_deref(),
        );
        let (candidates, problems) = discover::candidates(&search);
        let mut manager = Inner {
            loaded: Vec::new(),
            rows: Arc::new(Mutex::new(Vec::new())),
            next_id: AtomicU64::new(1),
            tasks: Mutex::new(Vec::new()),
            runs: RunBound::new(bound::limit_for(cfg.service.max_project_runs)),
        };
        for p in problems {
            let mut row = PluginStatus::new(p.path, p.origin, PluginState::Missing);
            row.reason = Some(p.message);
            manager.push_row(row);
        }
        let mut admit = Admission {
            disabled: cfg.plugins.disabled.iter().cloned().collect(),
            names: HashSet::new(),
        };
        for cand in candidates {
            match open(cfg, state_dir, &opts.host_exe, &cand, &mut admit).await {
                Opened::Ready(ready) => manager.supervise(*ready, &opts.host_exe, &shutdown),
                Opened::Not(row) => {
                    manager.push_row(*row);
                }
            }
        }
        PluginManager {
            inner: Arc::new(manager),
        }
    }

    /// Every loaded plugin.
    pub fn ids(&self) -> Vec<PluginId> {
        (0..self.inner.loaded.len()).map(PluginId).collect()
    }

    /// The plugins whose capabilities claim `path` (by extension or exact file name).
    pub fn plugins_for(&self, path: &Path) -> Vec<PluginId> {
        let ext = path.extension().and_then(|e| e.to_str());
        let file = path.file_name().and_then(|f| f.to_str());
        self.inner
            .loaded
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                let c = &p.capabilities;
                ext.is_some_and(|e| c.extensions.iter().any(|x| x == e))
                    || file.is_some_and(|f| c.file_names.iter().any(|x| x == f))
            })
            .map(|(i, _)| PluginId(i))
            .collect()
    }

    pub fn capabilities(&self, id: PluginId) -> Option<&Capabilities> {
        self.inner.loaded.get(id.0).map(|p| &p.capabilities)
    }

    pub fn name(&self, id: PluginId) -> Option<&str> {
        self.inner.loaded.get(id.0).map(|p| p.name.as_str())
    }

    /// A config reload: the new `[service] max_project_runs`.
    pub fn set_max_project_runs(&self, configured: usize) {
        self.inner.runs.set_limit(bound::limit_for(configured));
    }

    /// The service-wide bound on project-wide runs, which the pipelines' schedulers and
    /// baseline jobs take a place in before they ask a project-wide plugin.
    pub fn run_bound(&self) -> Arc<RunBound> {
        self.inner.runs.clone()
    }

    /// Run one check. The request's `id` is replaced by a fresh one. Files in the answer
    /// that were neither requested nor in `also_report` are dropped (with `report_all`, those
    /// inside the workspace are kept).
    pub async fn check(
        &self,
        id: PluginId,
        mut request: CheckRequest,
    ) -> Result<CheckResponse, PluginError> {
        let plugin = self
            .inner
            .loaded
            .get(id.0)
            .ok_or(PluginError::Unknown(id))?;
        let check_id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut rows) = self.inner.rows.lock() {
            if let Some(row) = rows.get_mut(plugin.index) {
                row.checks += 1;
            }
        }
        request.id = check_id;
        let limit = match request.timeout_ms {
            0 => DEFAULT_TIMEOUT,
            ms => Duration::from_millis(ms),
        };
        let (report_all, workspace) = (request.report_all, request.workspace.clone());
        let wanted: HashSet<PathBuf> = request
            .files
            .iter()
            .chain(request.also_report.iter())
            .cloned()
            .collect();
        let (reply, rx) = oneshot::channel();
        let stopped = || PluginError::Stopped {
            plugin: plugin.name.clone(),
        };
        plugin
            .tx
            .send(Cmd::Check { request, reply })
            .await
            .map_err(|_| stopped())?;
        let mut guard = CancelOnDrop {
            tx: &plugin.tx,
            id: check_id,
            armed: true,
        };
        let outcome = tokio::time::timeout(limit, rx).await;
        let result = match outcome {
            Ok(Ok(result)) => {
                guard.armed = false;
                result
            }
            Ok(Err(_)) => {
                guard.armed = false;
                Err(stopped())
            }
            Err(_) => Err(PluginError::Timeout {
                plugin: plugin.name.clone(),
                after_ms: limit.as_millis() as u64,
            }),
        };
        drop(guard);
        result.map(|mut resp| {
            resp.files.retain(|f| {
                wanted.contains(&f.path) || (report_all && f.path.starts_with(&workspace))
            });
            resp
        })
    }

    /// Plugin `id`'s name, its actor and a fresh request id (for `super::nav`).
    pub(super) fn route(&self, id: PluginId) -> Option<(&str, &mpsc::Sender<Cmd>, u64)> {
        let plugin = self.inner.loaded.get(id.0)?;
        let fresh = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        Some((plugin.name.as_str(), &plugin.tx, fresh))
    }

    /// The status rows, typed.
    pub fn status_rows(&self) -> Vec<PluginStatus> {
        self.inner
            .rows
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Wait until every host has stopped (after the shutdown token was cancelled).
    pub async fn wait_stopped(&self) {
        let tasks = self
            .inner
            .tasks
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl Inner {
    fn push_row(&mut self, row: PluginStatus) -> usize {
        let mut rows = self.rows.lock().unwrap_or_else(|e| e.into_inner());
        rows.push(row);
        rows.len() - 1
    }

    /// Give a started plugin its status row and its supervising actor.
    fn supervise(&mut self, ready: Ready, host_exe: &Path, shutdown: &CancellationToken) {
        let Ready {
            host,
            mut row,
            name,
            library,
            init,
            capabilities,
        } = ready;
        tracing::info!(plugin = %name, library = %library.display(), "plugin loaded");
        row.state = PluginState::Loaded;
        row.pid = Some(host.pid);
        row.capabilities = Some(capabilities.clone());
        let index = self.push_row(row);
        let (tx, rx) = mpsc::channel(256);
        let spec = Spec {
            host_exe: host_exe.to_path_buf(),
            library,
            name: name.clone(),
            init,
        };
        let status = StatusSlot {
            rows: Arc::clone(&self.rows),
            index,
        };
        let actor = Supervisor::new(spec, rx, status, shutdown.child_token());
        let task = tokio::spawn(actor.run(host));
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.push(task);
        }
        self.loaded.push(Loaded {
            index,
            name,
            capabilities,
            tx,
        });
    }
}

/// Which plugins may load: not those the config disables, not a second one of a name.
struct Admission {
    disabled: HashSet<String>,
    names: HashSet<String>,
}

impl Admission {
    /// Why plugin `name` may not load, as a row's `(kind, reason)`; `None` admits it.
    fn refuse(&mut self, name: &str) -> Option<(Option<&'static str>, String)> {
        if self.disabled.contains(name) {
            return Some((None, "listed in plugins.disabled".into()));
        }
        if !self.names.insert(name.to_owned()) {
            return Some((
                Some("duplicate"),
                format!("another library already provides plugin {name:?}"),
            ));
        }
        None
    }
}

/// A plugin host that said hello and answered `init`: ready to be supervised.
struct Ready {
    host: Host,
    row: PluginStatus,
    name: String,
    library: PathBuf,
    init: Init,
    capabilities: Capabilities,
}

/// What came of one candidate library.
enum Opened {
    Ready(Box<Ready>),
    /// Refused, disabled, a duplicate or failed: its row says why.
    Not(Box<PluginStatus>),
}

/// Start a host for `cand`, learn the plugin's name, admit it and initialise it.
async fn open(
    cfg: &crate::config::Config,
    state_dir: &Path,
    host_exe: &Path,
    cand: &discover::Candidate,
    admit: &mut Admission,
) -> Opened {
    let mut row = PluginStatus::new(cand.path.clone(), cand.origin, PluginState::Refused);
    let (mut host, name, version) = match Host::spawn(host_exe, &cand.path).await {
        Ok(ok) => ok,
        Err(e) => {
            tracing::warn!(library = %cand.path.display(), "plugin refused: {}", e.message());
            row.kind = Some(e.kind().to_owned());
            row.reason = Some(e.message());
            return Opened::Not(Box::new(row));
        }
    };
    row.name = Some(name.clone());
    row.version = Some(version);
    if let Some((kind, reason)) = admit.refuse(&name) {
        host.stop().await;
        if kind.is_none() {
            row.state = PluginState::Disabled;
        }
        row.kind = kind.map(str::to_owned);
        row.reason = Some(reason);
        return Opened::Not(Box::new(row));
    }
    let init = Init {
        config: cfg.plugin_settings(&name),
        state_dir: state_dir.join("plugins").join(&name),
        host_version: env!("CARGO_PKG_VERSION").into(),
    };
    match initialise(&mut host, &name, &init).await {
        Ok(capabilities) => Opened::Ready(Box::new(Ready {
            host,
            row,
            name,
            library: cand.path.clone(),
            init,
            capabilities,
        })),
        Err((kind, reason)) => {
            host.stop().await;
            row.kind = Some(kind);
            row.reason = Some(reason);
            Opened::Not(Box::new(row))
        }
    }
}

/// The plugin's private state folder, then `init`; a failure as a row's `(kind, reason)`.
async fn initialise(
    host: &mut Host,
    name: &str,
    init: &Init,
) -> Result<Capabilities, (String, String)> {
    if let Err(e) = openfiles_os::fsutil::ensure_private_dir(&init.state_dir, 0o700) {
        return Err((
            "host-failed".into(),
            format!("cannot create state dir {}: {e}", init.state_dir.display()),
        ));
    }
    host.init(init).await.map_err(|e| {
        tracing::warn!(plugin = %name, "plugin failed to start: {}", e.message());
        (e.kind().to_owned(), e.message())
    })
}

/// Tells the plugin to cancel a check whose caller gave up (deadline or dropped future).
struct CancelOnDrop<'a> {
    tx: &'a mpsc::Sender<Cmd>,
    id: u64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.try_send(Cmd::Cancel(self.id));
        }
    }
}
