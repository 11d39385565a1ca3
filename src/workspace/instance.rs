//! One served workspace at run time: `.openfiles/` housekeeping, the heartbeat, the
//! diagnostics pipeline with its queue intake and file watcher, and (when enabled) the Claws
//! server. Everything it starts hangs off one cancellation token, so `stop` ends it all and
//! removes what it created (heartbeat, Claws socket).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::control::protocol::WorkspaceStatus;
use crate::diagnostics::pipeline::{self, Pipeline};
use crate::diagnostics::Checker;
use crate::fsutil;
use crate::queue::{intake, policy::Policy, watch};
use crate::spec;

pub use pipeline::Handle;

/// What every instance shares with the service.
pub struct Shared {
    pub state_dir: PathBuf,
    /// Identifies this service run (heartbeat file name and `sessionId`).
    pub session_id: String,
    pub shutdown: CancellationToken,
    pub checker: Arc<dyn Checker>,
    /// The service's one file watcher.
    pub fswatch: crate::fswatch::FsWatch,
    /// Every Claws socket served, for `introspect`.
    pub claws_registry: Arc<crate::claws::ClawsRegistry>,
    workspaces: AtomicUsize,
    /// Roots whose folder disappeared, reported by their heartbeat loop; the registry
    /// takes the receiver ([`Shared::take_gone`]) and forgets them.
    gone_tx: tokio::sync::mpsc::UnboundedSender<PathBuf>,
    gone_rx: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<PathBuf>>>,
}

impl Shared {
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
        Shared {
            state_dir,
            session_id: format!("{:x}-{:08x}", std::process::id(), nanos),
            shutdown,
            checker,
            fswatch,
            claws_registry: crate::claws::ClawsRegistry::new(),
            workspaces: AtomicUsize::new(0),
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
        self.workspaces.store(workspaces, Ordering::Relaxed);
    }

    pub fn workspace_count(&self) -> usize {
        self.workspaces.load(Ordering::Relaxed)
    }
}

/// A running workspace.
pub struct Instance {
    pipeline: Handle,
    token: CancellationToken,
    shared: Arc<Shared>,
    watches: watch::WatchCount,
    /// This workspace's subscriptions on the service's file watcher.
    subscriber: crate::fswatch::SubscriberId,
    /// The Claws server (`.claws/claws.sock`), unless disabled or refused.
    claws: Option<crate::claws::ClawsServer>,
}

impl Instance {
    /// Set up `.openfiles/`, write the first heartbeat, start the pipeline and its intakes.
    pub async fn start(
        root: &Path,
        config: &Config,
        shared: Arc<Shared>,
    ) -> Result<Instance, String> {
        let cfg = Arc::new(config.for_workspace(root).map_err(|e| e.to_string())?);
        housekeeping(root)
            .map_err(|e| format!("cannot prepare {}: {e}", root.join(spec::DIR).display()))?;
        heartbeat_once(root, &shared.session_id)?;
        let (pipeline, cursor) =
            Pipeline::start(root, cfg.clone(), shared.checker.clone(), &shared.state_dir)?;
        let token = shared.shutdown.child_token();
        let subscriber = shared.fswatch.subscriber();
        let fs = (&shared.fswatch, subscriber);
        let (paused_tx, paused_rx) = tokio::sync::watch::channel(false);
        if let Err(e) = intake::spawn(root, cursor, pipeline.clone(), paused_rx, fs, token.clone())
        {
            shared.fswatch.unwatch_all(subscriber);
            token.cancel();
            pipeline.stop().await;
            return Err(format!(
                "cannot watch {}: {e}",
                root.join(spec::DIR).display()
            ));
        }
        let watches = watch::WatchCount::default();
        if cfg.watch.enabled {
            let policy = Policy::new(root, &cfg.diagnostics).map_err(|e| e.to_string())?;
            if let Err(e) = watch::spawn(
                root,
                policy,
                pipeline.clone(),
                watches.clone(),
                fs,
                token.clone(),
            ) {
                tracing::error!(root = %root.display(), "watch mode off: {e}");
            }
        }
        tokio::spawn(heartbeat_loop(
            root.to_owned(),
            shared.session_id.clone(),
            Duration::from_secs(config.service.heartbeat_seconds),
            pipeline.clone(),
            paused_tx,
            shared.gone_tx.clone(),
            token.clone(),
        ));
        let claws = if cfg.claws.enabled {
            match crate::claws::ClawsServer::start_with(
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
        } else {
            None
        };
        Ok(Instance {
            pipeline,
            token,
            shared,
            watches,
            subscriber,
            claws,
        })
    }

    pub fn handle(&self) -> Handle {
        self.pipeline.clone()
    }

    pub async fn status(&self, root: &Path, source: &str) -> WorkspaceStatus {
        let p = self.pipeline.status().await;
        WorkspaceStatus {
            root: root.to_owned(),
            source: source.into(),
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
        }
    }

    pub fn reload(&self, root: &Path, config: &Config) {
        match config.for_workspace(root) {
            Ok(cfg) => self.pipeline.reload(Arc::new(cfg)),
            Err(e) => tracing::error!(root = %root.display(), "{e}; keeping the previous settings"),
        }
    }

    /// Stop everything this workspace runs and remove its heartbeat.
    pub async fn stop(self, root: &Path) {
        self.token.cancel();
        self.shared.fswatch.unwatch_all(self.subscriber);
        if let Some(claws) = self.claws {
            claws.stop().await;
        }
        self.pipeline.stop().await;
        super::heartbeat::remove(root, &self.shared.session_id);
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

fn heartbeat_once(root: &Path, session: &str) -> Result<(), String> {
    super::heartbeat::write(root, session)
        .map_err(|e| format!("cannot write the heartbeat in {}: {e}", root.display()))
}

/// Refresh the heartbeat, and stand back while an editor serves the workspace.
async fn heartbeat_loop(
    root: PathBuf,
    session: String,
    every: Duration,
    pipeline: Handle,
    paused: tokio::sync::watch::Sender<bool>,
    gone: tokio::sync::mpsc::UnboundedSender<PathBuf>,
    token: CancellationToken,
) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tick.tick() => {}
        }
        let (r, s) = (root.clone(), session.clone());
        let result = tokio::task::spawn_blocking(move || {
            let foreign = super::heartbeat::foreign_server_live(&r);
            (super::heartbeat::write(&r, &s), foreign)
        })
        .await;
        let Ok((written, foreign)) = result else {
            return;
        };
        if let Err(e) = written {
            if !root.exists() {
                tracing::warn!(root = %root.display(), "workspace folder disappeared; dropping it");
                let _ = gone.send(root);
                return;
            }
            tracing::error!(root = %root.display(), "heartbeat write failed: {e}");
        }
        pipeline.stand_back(foreign);
        let _ = paused.send(foreign);
    }
}
