//! One served workspace at run time: `.openfiles/` housekeeping, the heartbeat (refreshed by
//! the service's one [`Sweep`](super::heartbeat::Sweep)), the diagnostics pipeline with its
//! queue intake and file watcher, and (when enabled) the Claws server. Everything it starts
//! hangs off one cancellation token, so `stop` ends it all and removes what it created
//! (heartbeat, Claws socket). Nothing here runs on a timer: an idle workspace is a few
//! parked tasks waiting for file events, messages or connections.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::WorkspaceStatus;
use crate::config::Config;
use crate::diagnostics::pipeline::{Pipeline, PipelineHandle};
use crate::diagnostics::Checker;
use crate::intake::{queue as queue_intake, watch};
use crate::policy::Policy;
use openfiles_os::fsutil;
use openfiles_wire::control::WorkspaceSource;
use openfiles_wire::spec;

/// What every instance shares with the service.
pub struct WorkspaceDeps {
    pub state_dir: PathBuf,
    /// Identifies this service run (heartbeat file name and `sessionId`).
    pub session_id: String,
    pub shutdown: CancellationToken,
    pub checker: Arc<dyn Checker>,
    /// The service's one file watcher.
    pub fswatch: crate::fswatch::FsWatch,
    /// Every Claws socket served, for `introspect`.
    pub claws_registry: Arc<openfiles_claws::ClawsRegistry>,
    workspaces: AtomicUsize,
    /// Woken when `workspaces` changes.
    workspaces_changed: tokio::sync::Notify,
    /// Every workspace's heartbeat, refreshed on one timer.
    pub heartbeats: Arc<super::heartbeat::Sweep>,
    /// Roots whose folder disappeared, reported by the heartbeat sweep; the registry
    /// takes the receiver ([`WorkspaceDeps::take_gone`]) and forgets them.
    pub(super) gone_tx: tokio::sync::mpsc::UnboundedSender<PathBuf>,
    gone_rx: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<PathBuf>>>,
}

impl WorkspaceDeps {
    pub fn new(
        state_dir: PathBuf,
        shutdown: CancellationToken,
        checker: Arc<dyn Checker>,
        fswatch: crate::fswatch::FsWatch,
    ) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let (gone_tx, gone_rx) = tokio::sync::mpsc::unbounded_channel();
        let session_id = format!("{:x}-{:08x}", std::process::id(), nanos);
        WorkspaceDeps {
            state_dir,
            heartbeats: super::heartbeat::Sweep::new(session_id.clone()),
            session_id,
            shutdown,
            checker,
            fswatch,
            claws_registry: openfiles_claws::ClawsRegistry::new(),
            workspaces: AtomicUsize::new(0),
            workspaces_changed: tokio::sync::Notify::new(),
            gone_tx,
            gone_rx: std::sync::Mutex::new(Some(gone_rx)),
        }
    }

    /// The receiving end of "this workspace's folder disappeared" (once).
    pub fn take_gone(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<PathBuf>> {
        self.gone_rx.lock().ok()?.take()
    }

    /// Called by the registry when the number of workspaces changes.
    pub fn update_status(&self, workspaces: usize) {
        if self.workspaces.swap(workspaces, Ordering::Relaxed) != workspaces {
            self.workspaces_changed.notify_one();
        }
    }

    /// Resolves once the workspace or terminal count changed (since it last resolved).
    pub async fn counts_changed(&self) {
        tokio::select! {
            _ = self.workspaces_changed.notified() => {}
            _ = self.claws_registry.terminals_changed() => {}
        }
    }

    pub fn workspace_count(&self) -> usize {
        self.workspaces.load(Ordering::Relaxed)
    }
}

/// A running workspace.
pub struct Instance {
    pipeline: PipelineHandle,
    token: CancellationToken,
    shared: Arc<WorkspaceDeps>,
    /// The effective settings it runs with (the user's config plus the workspace's
    /// overrides); a reload compares against them to restart only what changed.
    cfg: Arc<Config>,
    watches: watch::WatchCount,
    /// This workspace's queue-intake subscription on the service's file watcher.
    subscriber: crate::fswatch::SubscriberId,
    /// Watch mode, when enabled and running.
    watch_mode: Option<WatchMode>,
    /// The Claws server (`.claws/claws.sock`), unless disabled or refused.
    claws: Option<openfiles_claws::ClawsServer>,
    /// The user trusts it; read by its checker on every request ([`super::trust`]).
    trusted: Arc<super::trust::TrustFlag>,
}

/// A running watch-mode task: its own token and its own watcher subscription, so a
/// reload can restart it without touching the queue intake.
struct WatchMode {
    token: CancellationToken,
    subscriber: crate::fswatch::SubscriberId,
}

impl Instance {
    /// Set up `.openfiles/`, write the first heartbeat, start the pipeline and its intakes.
    /// `trusted` is the user's trust in the workspace (what its checks may run), shared
    /// with the registry, which changes it (`openfiles trust`).
    pub async fn start(
        root: &Path,
        config: &Config,
        shared: Arc<WorkspaceDeps>,
        trusted: Arc<super::trust::TrustFlag>,
    ) -> Result<Instance, StartError> {
        let cfg = Arc::new(config.for_workspace(root)?);
        housekeeping(root).map_err(|source| StartError::Prepare {
            dir: root.join(spec::DIR),
            source,
        })?;
        let history = served_history(&shared.state_dir, root);
        let checker = super::trust::Trusting::wrap(shared.checker.clone(), trusted.clone());
        let (pipeline, cursor) = Pipeline::start(root, cfg.clone(), checker, &shared.state_dir)?;
        let cursor = match history {
            Some(history) => persist_history(&pipeline, history).await,
            None => cursor,
        };
        let token = shared.shutdown.child_token();
        let subscriber = shared.fswatch.subscriber();
        if let Err(e) = start_intakes(root, cursor, &pipeline, &shared, subscriber, &token) {
            shared.fswatch.unwatch_all(subscriber);
            token.cancel();
            pipeline.stop().await;
            return Err(e);
        }
        // Claws first: its `.claws/` is made before watch mode watches the root, so our own
        // folder does not come back as a change.
        let claws = if cfg.claws.enabled {
            start_claws(root, &cfg, &shared, &token).await
        } else {
            None
        };
        let watches = watch::WatchCount::default();
        let watch_mode = start_watch(root, &cfg, &shared, &pipeline, &watches, &token).await;
        Ok(Instance {
            pipeline,
            token,
            shared,
            cfg,
            watches,
            subscriber,
            watch_mode,
            claws,
            trusted,
        })
    }

    pub fn handle(&self) -> PipelineHandle {
        self.pipeline.clone()
    }

    pub async fn status(&self, root: &Path, source: WorkspaceSource) -> WorkspaceStatus {
        let p = self.pipeline.status().await;
        let (ran, ran_total) = ran_for(Some(root));
        WorkspaceStatus {
            root: root.to_owned(),
            source,
            heartbeat: super::heartbeat::path(root, &self.shared.session_id),
            standing_back: p.standing_back,
            session_files: p.session_files,
            pending: p.pending,
            queue_lines: p.queue_lines,
            malformed_queue_lines: p.malformed_queue_lines,
            watches: self.watches.watches.load(Ordering::Relaxed),
            git_batches_ignored: self.watches.git_batches.load(Ordering::Relaxed),
            terminals: self.claws.as_ref().map_or(0, |c| c.terminal_count()),
            claws_socket: self.claws.as_ref().map(|c| c.socket_path().to_owned()),
            paused: p.paused,
            unreviewed: p.unreviewed,
            trusted: self.trusted(),
            late_deliveries: p.late_deliveries,
            deadline_notes: p.deadline_notes,
            owed: p.owed,
            silenced: p.silenced,
            warm: p.warm,
            ran_total,
            ran,
        }
    }

    /// Whether the user trusts this workspace (what its checks may run): decided so, for
    /// the folder that is there now.
    pub fn trusted(&self) -> bool {
        self.trusted.get()
    }

    /// Trust the workspace, or stop trusting it, as its folder is now; the next check runs
    /// accordingly.
    pub fn set_trusted(&self, trusted: bool) {
        self.trusted.set(trusted);
    }

    /// Apply a reloaded configuration (SIGHUP): the pipeline takes `[hooks]` and
    /// `[diagnostics]` at once, watch mode restarts when
    /// `[watch]` or `[diagnostics]` changed, and the Claws server starts or stops when
    /// `[claws] enabled` flips. Other `[claws]` settings would need the server (and its
    /// terminals) restarted, so they wait for the next service start, and the log says so.
    pub async fn reload(&mut self, root: &Path, config: &Config) {
        let cfg = match config.for_workspace(root) {
            Ok(cfg) => Arc::new(cfg),
            Err(e) => {
                tracing::error!(root = %root.display(), "{e}; keeping the previous settings");
                return;
            }
        };
        self.pipeline.reload(cfg.clone()).await;
        if cfg.watch != self.cfg.watch || cfg.diagnostics != self.cfg.diagnostics {
            self.stop_watch();
            self.watch_mode = start_watch(
                root,
                &cfg,
                &self.shared,
                &self.pipeline,
                &self.watches,
                &self.token,
            )
            .await;
        }
        match (&self.claws, cfg.claws.enabled) {
            (None, true) => self.claws = start_claws(root, &cfg, &self.shared, &self.token).await,
            (Some(_), false) => {
                if let Some(server) = self.claws.take() {
                    tracing::info!(root = %root.display(), "claws disabled by the reloaded configuration; closing its terminals");
                    server.stop().await;
                }
            }
            (Some(_), true) if cfg.claws != self.cfg.claws => tracing::warn!(
                root = %root.display(),
                "[claws] settings changed: they apply when the service restarts (running terminals are kept until then)"
            ),
            _ => {}
        }
        self.cfg = cfg;
    }

    fn stop_watch(&mut self) {
        if let Some(w) = self.watch_mode.take() {
            w.token.cancel();
            self.shared.fswatch.unwatch_all(w.subscriber);
            self.watches.watches.store(0, Ordering::Relaxed);
        }
    }

    /// Stop everything this workspace runs and remove its heartbeat.
    pub async fn stop(mut self, root: &Path) {
        self.token.cancel();
        self.stop_watch();
        self.shared.fswatch.unwatch_all(self.subscriber);
        if let Some(claws) = self.claws {
            claws.stop().await;
        }
        self.pipeline.stop().await;
        self.shared.heartbeats.remove(root);
    }
}

/// Why a workspace could not be served.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot prepare {}: {source}", dir.display())]
    Prepare {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Pipeline(#[from] crate::diagnostics::StartError),
    #[error("cannot watch {}: {source}", dir.display())]
    Watch { dir: PathBuf, source: notify::Error },
    #[error("cannot write the heartbeat in {}: {source}", root.display())]
    Heartbeat {
        root: PathBuf,
        source: std::io::Error,
    },
}

/// The queue's history cursor, when the session state does not hold where reading stands:
/// `root` never served before — what `queue.jsonl` holds already is history (written before
/// openfiles served this folder, perhaps committed with it), not requests; the cursor past
/// it is written at once into the marker that says the folder is served (so lines written
/// while the service is down later are read) — or served before, stopped before its session
/// state was first written: the marker's cursor (an older, empty marker: none).
fn served_history(state_dir: &Path, root: &Path) -> Option<crate::diagnostics::writer::Cursor> {
    let state = crate::diagnostics::writer::state_file(state_dir, root);
    if state.exists() {
        return None;
    }
    let served = state.with_extension("served");
    if served.exists() {
        let kept = std::fs::read(&served).ok()?;
        return serde_json::from_slice(&kept).ok();
    }
    let history = queue_intake::history(root);
    let made = state
        .parent()
        .map_or(Ok(()), |d| fsutil::ensure_private_dir(d, 0o700))
        .and_then(|()| {
            let json = serde_json::to_vec(&history).map_err(std::io::Error::other)?;
            fsutil::write_atomic(&served, &json, 0o600)
        });
    if let Err(e) = made {
        tracing::warn!("{}: {e}", served.display());
    }
    Some(history)
}

/// The history cursor persisted with the session at once (see [`served_history`]).
async fn persist_history(
    pipeline: &PipelineHandle,
    history: crate::diagnostics::writer::Cursor,
) -> crate::diagnostics::writer::Cursor {
    if history.main.is_some() || history.draining.is_some() {
        pipeline.queue_lines(Vec::new(), history).await;
    }
    history
}

/// The queue intake on the service's watcher, then the heartbeat (which also carries the
/// pause switch the intake reads).
fn start_intakes(
    root: &Path,
    cursor: crate::diagnostics::writer::Cursor,
    pipeline: &PipelineHandle,
    shared: &WorkspaceDeps,
    subscriber: crate::fswatch::SubscriberId,
    token: &CancellationToken,
) -> Result<(), StartError> {
    let fs = (&shared.fswatch, subscriber);
    let (paused_tx, paused_rx) = tokio::sync::watch::channel(false);
    queue_intake::spawn(root, cursor, pipeline.clone(), paused_rx, fs, token.clone()).map_err(
        |source| StartError::Watch {
            dir: root.join(spec::DIR),
            source,
        },
    )?;
    shared
        .heartbeats
        .add(root, pipeline.clone(), paused_tx)
        .map_err(|source| StartError::Heartbeat {
            root: root.to_owned(),
            source,
        })
}

/// Start watch mode if the settings ask for it; a failure is logged and leaves it off.
async fn start_watch(
    root: &Path,
    cfg: &Config,
    shared: &WorkspaceDeps,
    pipeline: &PipelineHandle,
    count: &watch::WatchCount,
    parent: &CancellationToken,
) -> Option<WatchMode> {
    if !cfg.watch.enabled {
        return None;
    }
    let policy = match Policy::new(root, &cfg.diagnostics) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(root = %root.display(), "watch mode off: {e}");
            return None;
        }
    };
    let mode = WatchMode {
        token: parent.child_token(),
        subscriber: shared.fswatch.subscriber(),
    };
    let fs = (&shared.fswatch, mode.subscriber);
    match watch::spawn(
        root,
        policy,
        pipeline.clone(),
        count.clone(),
        fs,
        mode.token.clone(),
    )
    .await
    {
        Ok(()) => Some(mode),
        Err(e) => {
            tracing::error!(root = %root.display(), "watch mode off: {e}");
            shared.fswatch.unwatch_all(mode.subscriber);
            None
        }
    }
}

async fn start_claws(
    root: &Path,
    cfg: &Config,
    shared: &WorkspaceDeps,
    token: &CancellationToken,
) -> Option<openfiles_claws::ClawsServer> {
    match openfiles_claws::ClawsServer::start_with(
        root,
        &cfg.claws,
        shared.claws_registry.clone(),
        token.clone(),
    )
    .await
    {
        Ok(server) => Some(server),
        Err(e) => {
            tracing::error!(root = %root.display(), "claws socket not served: {e}");
            None
        }
    }
}

/// Make sure `.openfiles/` exists (never through a symlink) with a `.gitignore` of `*`
/// (created only if missing, never overwritten).
fn housekeeping(root: &Path) -> std::io::Result<()> {
    let dir = root.join(spec::DIR);
    fsutil::ensure_own_dir(&dir, 0o755)?;
    let gitignore = dir.join(".gitignore");
    // An explicit mode: the default 0666 would be world-writable under umask 000.
    match std::os::unix::fs::OpenOptionsExt::mode(
        std::fs::OpenOptions::new().write(true).create_new(true),
        0o644,
    )
    .open(&gitignore)
    {
        Ok(mut f) => std::io::Write::write_all(&mut f, b"*\n"),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// What the service process started for `root` (or, with `None`, for no workspace: plugin
/// hosts), from the gate's record (`status`): the last
/// [`openfiles_wire::control::RAN_SHOWN`], and how many it keeps.
pub fn ran_for(root: Option<&Path>) -> (Vec<openfiles_wire::control::Ran>, usize) {
    let mine: Vec<openfiles_gate::spawn::Ran> = openfiles_gate::spawn::recent()
        .into_iter()
        .filter(|r| r.workspace.as_deref() == root)
        .collect();
    let total = mine.len();
    let skip = total.saturating_sub(openfiles_wire::control::RAN_SHOWN);
    let shown = mine
        .into_iter()
        .skip(skip)
        .map(|r| openfiles_wire::control::Ran {
            at_ms: r.at_ms,
            program: r.program,
            args: r.args,
            trust: r.trust.as_str().into(),
            why: r.why.into(),
        })
        .collect();
    (shown, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The history cursor of a folder served for the first time is kept in the served
    /// marker at once: a service stopped before its session state was first written still
    /// finds it (the planted line stays history), and a session state, once written, wins.
    #[test]
    fn the_queue_history_outlives_a_stop_before_the_first_state_write() {
        let t = tempfile::tempdir().unwrap();
        let (state_dir, root) = (t.path().join("state"), t.path().join("ws"));
        std::fs::create_dir_all(root.join(spec::DIR)).unwrap();
        let line = "{\"v\":1,\"paths\":[\"/etc/passwd\"],\"agent\":\"planted\"}\n";
        std::fs::write(root.join(spec::DIR).join(spec::QUEUE_FILE), line).unwrap();
        let first = served_history(&state_dir, &root).expect("first serve");
        assert_eq!(first.main.map(|p| p.offset), Some(line.len() as u64));
        // Stopped before the session state was written: the same history again.
        assert_eq!(served_history(&state_dir, &root), Some(first));
        // Once the session state exists, it holds where reading stands.
        let state = crate::diagnostics::writer::state_file(&state_dir, &root);
        std::fs::write(&state, "{}").unwrap();
        assert_eq!(served_history(&state_dir, &root), None);
    }
}
