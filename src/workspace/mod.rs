//! Workspaces: the registry of folders the service serves, and each one's run-time state.
//!
//! The [`Registry`] is an actor (one task owns the map; everyone else holds a cloneable
//! [`RegistryHandle`]). A workspace is registered from the command line (`serve -w`), the
//! config (`service.workspaces`), `openfiles add`, discovery under `service.roots`, or an
//! edit inside a folder nobody registered yet; the last two sources and `add` are persisted
//! in the state dir so a restart restores them. Each registered folder gets an
//! [`instance::Instance`]: `.openfiles/` housekeeping, the heartbeat, the diagnostics
//! pipeline and the Claws server. Only the explicitly named workspaces and the first
//! restored ones are started before `READY=1`; the actor starts the rest (the scan of
//! `service.roots` included) in batches afterwards, never letting a request see one missing
//! ([`pending`]).

pub mod discovery;
pub mod heartbeat;
pub mod instance;
pub mod pending;
pub mod resolve;
pub mod store;
pub mod trust;

use openfiles_wire::control::WorkspaceSource;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

pub use openfiles_wire::control::{WorkspaceInfo, WorkspaceStatus};

use crate::config::Config;
use crate::diagnostics::pipeline::PipelineHandle;
use instance::{Instance, WorkspaceDeps};
use pending::{Pending, Phase};
use resolve::ResolveError;

/// How a workspace came to be registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Cli,
    Config,
    Added,
    /// `openfiles add --force`: as `Added`, and the home folder is allowed.
    AddedForce,
    Discovered,
    Edit,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        self.wire().as_str()
    }
    /// The wire's name for it (`added` for both kinds of `add`).
    pub fn wire(self) -> WorkspaceSource {
        match self {
            Source::Cli => WorkspaceSource::Cli,
            Source::Config => WorkspaceSource::Config,
            Source::Added | Source::AddedForce => WorkspaceSource::Added,
            Source::Discovered => WorkspaceSource::Discovered,
            Source::Edit => WorkspaceSource::Edit,
        }
    }
    pub(crate) fn parse(s: &str) -> Source {
        match s {
            "edit" => Source::Edit,
            "discovered" => Source::Discovered,
            _ => Source::Added,
        }
    }
    /// Registrations that survive a restart through the state file.
    fn persisted(self) -> bool {
        matches!(
            self,
            Source::Added | Source::AddedForce | Source::Edit | Source::Discovered
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("{}: {source}", root.display())]
    Start {
        root: PathBuf,
        source: instance::StartError,
    },
    #[error("{}: cannot record the trust: {source}", root.display())]
    Trust {
        root: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is not a registered workspace")]
    NotRegistered(PathBuf),
    #[error("the service is shutting down")]
    ShuttingDown,
}

enum Cmd {
    Add {
        dir: PathBuf,
        source: Source,
        reply: oneshot::Sender<Result<WorkspaceInfo, WorkspaceError>>,
    },
    Forget {
        dir: PathBuf,
        reply: oneshot::Sender<Result<WorkspaceInfo, WorkspaceError>>,
    },
    List {
        reply: oneshot::Sender<Vec<WorkspaceInfo>>,
    },
    Status {
        reply: oneshot::Sender<Vec<WorkspaceStatus>>,
    },
    /// The instance serving `path` (registering its workspace if `register`).
    Lookup {
        path: PathBuf,
        register: bool,
        reply: oneshot::Sender<Result<PipelineHandle, WorkspaceError>>,
    },
    Reload {
        config: Arc<Config>,
    },
    Trust {
        dir: PathBuf,
        trusted: bool,
        reply: oneshot::Sender<Result<openfiles_wire::control::TrustReply, WorkspaceError>>,
    },
    Stop {
        reply: oneshot::Sender<()>,
    },
}

/// A cloneable handle to the registry actor.
#[derive(Clone)]
pub struct RegistryHandle {
    tx: mpsc::Sender<Cmd>,
}

impl RegistryHandle {
    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Cmd) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).await.ok()?;
        rx.await.ok()
    }

    pub async fn add(&self, dir: PathBuf, source: Source) -> Result<WorkspaceInfo, WorkspaceError> {
        self.ask(|reply| Cmd::Add { dir, source, reply })
            .await
            .unwrap_or(Err(WorkspaceError::ShuttingDown))
    }

    /// Trust `dir` (or revoke it): recorded, and applied to its instance when served.
    pub async fn trust(
        &self,
        dir: PathBuf,
        trusted: bool,
    ) -> Result<openfiles_wire::control::TrustReply, WorkspaceError> {
        self.ask(|reply| Cmd::Trust {
            dir,
            trusted,
            reply,
        })
        .await
        .unwrap_or(Err(WorkspaceError::ShuttingDown))
    }

    pub async fn forget(&self, dir: PathBuf) -> Result<WorkspaceInfo, WorkspaceError> {
        self.ask(|reply| Cmd::Forget { dir, reply })
            .await
            .unwrap_or(Err(WorkspaceError::ShuttingDown))
    }

    pub async fn list(&self) -> Vec<WorkspaceInfo> {
        self.ask(|reply| Cmd::List { reply })
            .await
            .unwrap_or_default()
    }

    pub async fn status(&self) -> Vec<WorkspaceStatus> {
        self.ask(|reply| Cmd::Status { reply })
            .await
            .unwrap_or_default()
    }

    /// The instance that serves `path`; with `register`, a workspace is found for it
    /// (nearest `.openfiles/`, else VCS root) and registered.
    pub async fn lookup(
        &self,
        path: PathBuf,
        register: bool,
    ) -> Result<PipelineHandle, WorkspaceError> {
        self.ask(|reply| Cmd::Lookup {
            path,
            register,
            reply,
        })
        .await
        .unwrap_or(Err(WorkspaceError::ShuttingDown))
    }

    pub async fn reload(&self, config: Arc<Config>) {
        let _ = self.tx.send(Cmd::Reload { config }).await;
    }

    /// Stop every instance (heartbeats removed, Claws sockets closed) and end the actor.
    pub async fn stop(&self) {
        let _ = self.ask(|reply| Cmd::Stop { reply }).await;
    }
}

struct Entry {
    source: Source,
    instance: Instance,
}

/// The registry actor's state.
pub struct Registry {
    shared: Arc<WorkspaceDeps>,
    config: Arc<Config>,
    entries: BTreeMap<PathBuf, Entry>,
    /// Registered, not started yet (restored past the pre-READY budget, discovered).
    pending: Pending,
    /// Its own handle, for the discovery watcher it (re)starts.
    handle: RegistryHandle,
    /// Cancels the discovery watcher of the current `roots`.
    discovery: CancellationToken,
    /// A scan queued workspaces: watch the roots once they are all started.
    watch_roots: bool,
    /// The heartbeat sweep's period (`service.heartbeat_seconds`).
    heartbeat_every: tokio::sync::watch::Sender<std::time::Duration>,
    /// `openfiles trust` decisions.
    trust: trust::TrustStore,
}

impl Registry {
    /// Start the registry: register the `cli` and config workspaces and, within
    /// [`pending::PRE_READY_STARTS`], the restored ones. Returns once those are set up, so
    /// `READY=1` can follow; the actor then scans `service.roots` and starts the rest in
    /// batches ([`pending`]). `started` is the service's start, for the "all served" line.
    pub async fn start(
        config: Arc<Config>,
        shared: Arc<WorkspaceDeps>,
        cli: &[PathBuf],
        started: Instant,
    ) -> RegistryHandle {
        let (tx, rx) = mpsc::channel(64);
        let handle = RegistryHandle { tx };
        let discovery = shared.shutdown.child_token();
        let (heartbeat_every, every) = tokio::sync::watch::channel(heartbeat_period(&config));
        let shared_state_dir = shared.state_dir.clone();
        let mut reg = Registry {
            shared,
            config,
            entries: BTreeMap::new(),
            pending: Pending::default(),
            handle: handle.clone(),
            discovery,
            watch_roots: false,
            heartbeat_every,
            trust: trust::load(&shared_state_dir),
        };
        let from_config = reg.config.service.workspaces.clone();
        let mut budget = pending::PRE_READY_STARTS.saturating_sub(from_config.len() + cli.len());
        for stored in store::load(&reg.shared.state_dir) {
            let source = Source::parse(&stored.source);
            if budget == 0 {
                reg.pending.push(stored.root, source, Phase::Restored);
                continue;
            }
            budget -= 1;
            if let Err(e) = reg.add(&stored.root, source).await {
                tracing::warn!("not restoring workspace {}: {e}", stored.root.display());
            }
        }
        for dir in &from_config {
            if let Err(e) = reg.add(dir, Source::Config).await {
                tracing::error!("config workspace {}: {e}", dir.display());
            }
        }
        for dir in cli {
            if let Err(e) = reg.add(dir, Source::Cli).await {
                tracing::error!("workspace {}: {e}", dir.display());
            }
        }
        reg.shared.update_status(reg.entries.len());
        let scan = !reg.config.service.roots.is_empty();
        if scan || !reg.pending.is_empty() {
            reg.pending.begin(started);
        } else {
            reg.persist();
        }
        tokio::spawn(heartbeat::run(
            reg.shared.heartbeats.clone(),
            every,
            reg.shared.gone_tx.clone(),
            reg.shared.shutdown.clone(),
        ));
        if let Some(mut gone) = reg.shared.take_gone() {
            let (h, token) = (handle.clone(), reg.shared.shutdown.clone());
            tokio::spawn(async move {
                loop {
                    let root = tokio::select! {
                        _ = token.cancelled() => return,
                        r = gone.recv() => match r { Some(r) => r, None => return },
                    };
                    if let Err(e) = h.forget(root.clone()).await {
                        tracing::debug!(root = %root.display(), "dropping a deleted workspace: {e}");
                    }
                }
            });
        }
        tokio::spawn(reg.run(rx, scan));
        handle
    }

    /// The actor: first the scan of `service.roots`, then commands, with
    /// pending workspaces started [`pending::BATCH`] at a time whenever no command waits.
    async fn run(mut self, mut rx: mpsc::Receiver<Cmd>, scan: bool) {
        if scan {
            self.discover();
        }
        loop {
            let cmd = if self.pending.is_empty() {
                match rx.recv().await {
                    Some(cmd) => cmd,
                    None => return,
                }
            } else {
                match rx.try_recv() {
                    Ok(cmd) => cmd,
                    Err(mpsc::error::TryRecvError::Empty) => {
                        self.start_pending(pending::BATCH).await;
                        tokio::task::yield_now().await;
                        continue;
                    }
                    Err(mpsc::error::TryRecvError::Disconnected) => return,
                }
            };
            if !self.handle(cmd).await {
                return;
            }
            self.shared.update_status(self.entries.len());
        }
    }

    /// Answer one command; `false` once the registry has stopped.
    async fn handle(&mut self, cmd: Cmd) -> bool {
        match cmd {
            Cmd::Add { dir, source, reply } => {
                let r = self.add(&dir, source).await;
                if r.is_ok() {
                    self.persist();
                }
                let _ = reply.send(r);
            }
            Cmd::Forget { dir, reply } => {
                self.finish_pending().await;
                let _ = reply.send(self.forget(&dir).await);
            }
            Cmd::List { reply } => {
                self.finish_pending().await;
                let _ = reply.send(self.infos());
            }
            Cmd::Status { reply } => {
                self.finish_pending().await;
                let mut out = Vec::new();
                for (root, e) in &self.entries {
                    out.push(e.instance.status(root, e.source.wire()).await);
                }
                let _ = reply.send(out);
            }
            Cmd::Lookup {
                path,
                register,
                reply,
            } => {
                let _ = reply.send(self.lookup(&path, register).await);
            }
            Cmd::Reload { config } => {
                self.finish_pending().await;
                self.reload(config).await;
            }
            Cmd::Trust {
                dir,
                trusted,
                reply,
            } => {
                self.start_pending_holding(&dir).await;
                let _ = reply.send(self.set_trust(&dir, trusted));
            }
            Cmd::Stop { reply } => {
                self.pending.clear();
                let entries = std::mem::take(&mut self.entries);
                for (root, e) in entries {
                    e.instance.stop(&root).await;
                }
                let _ = reply.send(());
                return false;
            }
        }
        true
    }

    /// Register and start one workspace. The count in the status line is published by the
    /// caller, once per command or batch (not once per workspace: a thousand starting after
    /// READY would be a thousand status messages to the service manager).
    async fn add(&mut self, dir: &Path, source: Source) -> Result<WorkspaceInfo, WorkspaceError> {
        // The home folder only when the user named it (command line, config, `add --force`).
        let allow_home = matches!(source, Source::Cli | Source::Config | Source::AddedForce);
        let source = match source {
            Source::AddedForce => Source::Added,
            s => s,
        };
        let root = resolve::workspace_dir(dir, allow_home)?;
        if let Some(e) = self.entries.get_mut(&root) {
            // Keep the strongest reason: an explicit add outranks an edit or discovery.
            if source == Source::Added && e.source != Source::Added {
                e.source = Source::Added;
            }
            if trust::by_source(source) {
                e.instance.set_trusted(true);
            }
            return Ok(info(&root, e.source));
        }
        let trusted = trust::is_trusted(&root, &self.trust, trust::by_source(source));
        let flag = trust::TrustFlag::new(&root, trusted);
        let instance = Instance::start(&root, &self.config, self.shared.clone(), flag)
            .await
            .map_err(|source| WorkspaceError::Start {
                root: root.clone(),
                source,
            })?;
        tracing::info!(
            root = %root.display(),
            source = source.as_str(),
            trusted,
            "serving workspace"
        );
        self.entries
            .insert(root.clone(), Entry { source, instance });
        Ok(info(&root, source))
    }

    /// Apply a reloaded configuration: every instance takes its new settings, workspaces
    /// newly listed in `service.workspaces` are served, those found under new
    /// `service.roots` are queued (started in batches, as at start), and the discovery
    /// watcher follows the new roots. Workspaces the new config no longer
    /// lists keep running (they are persisted); `openfiles forget` drops one.
    async fn reload(&mut self, config: Arc<Config>) {
        let old = std::mem::replace(&mut self.config, config);
        let period = heartbeat_period(&self.config);
        self.heartbeat_every
            .send_if_modified(|p| std::mem::replace(p, period) != period);
        for (root, e) in self.entries.iter_mut() {
            e.instance.reload(root, &self.config).await;
        }
        let mut added = false;
        let listed = self.config.service.workspaces.clone();
        for dir in listed
            .iter()
            .filter(|d| !old.service.workspaces.contains(d))
        {
            match self.add(dir, Source::Config).await {
                Ok(_) => added = true,
                Err(e) => tracing::error!("config workspace {}: {e}", dir.display()),
            }
        }
        if self.config.service.roots != old.service.roots {
            // Started in batches like at start; saved once all are served.
            self.pending.begin(Instant::now());
            self.discovery.cancel();
            self.discovery = self.shared.shutdown.child_token();
            self.discover();
        }
        if added {
            self.persist();
        }
    }

    fn set_trust(
        &mut self,
        dir: &Path,
        trusted: bool,
    ) -> Result<openfiles_wire::control::TrustReply, WorkspaceError> {
        let root = resolve::workspace_dir(dir, true)?;
        let keyed = self
            .trust
            .set(&root, trusted)
            .map_err(|source| WorkspaceError::Trust {
                root: root.clone(),
                source,
            })?;
        let entry = self.entries.get(&root);
        let named = entry.is_some_and(|e| trust::by_source(e.source));
        let now = trust::is_trusted(&root, &self.trust, named);
        if let Some(e) = entry {
            e.instance.set_trusted(now);
        }
        tracing::info!(root = %root.display(), trusted = now, "workspace trust changed");
        Ok(openfiles_wire::control::TrustReply {
            root,
            trusted: now,
            served: entry.is_some(),
            named,
            inode_only: keyed.is_some_and(trust::Keyed::inode_only),
        })
    }

    async fn forget(&mut self, dir: &Path) -> Result<WorkspaceInfo, WorkspaceError> {
        let root = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
        let Some(e) = self.entries.remove(&root) else {
            return Err(WorkspaceError::NotRegistered(root));
        };
        e.instance.stop(&root).await;
        self.persist();
        tracing::info!(root = %root.display(), "forgot workspace");
        Ok(info(&root, e.source))
    }

    async fn lookup(
        &mut self,
        path: &Path,
        register: bool,
    ) -> Result<PipelineHandle, WorkspaceError> {
        self.start_pending_holding(path).await;
        // The deepest registered workspace, unless the path lies in a repository nested in
        // it: that one is its own workspace, with its own trust (never the outer one's).
        let root = resolve::workspace_for(self.entries.keys(), path);
        if let Some(e) = root.as_ref().ok().and_then(|r| self.entries.get(r)) {
            return Ok(e.instance.handle());
        }
        if !register {
            return Err(ResolveError::NoWorkspace(path.to_owned()).into());
        }
        let root = root?;
        if let Err(e) = self.add(&root, Source::Edit).await {
            // The edit's answer says why too; the log keeps it for `openfiles logs`.
            tracing::warn!("not serving {} for an edit: {e}", root.display());
            return Err(e);
        }
        self.persist();
        self.entries
            .get(&root)
            .map(|e| e.instance.handle())
            .ok_or(WorkspaceError::NotRegistered(root))
    }

    fn infos(&self) -> Vec<WorkspaceInfo> {
        self.entries
            .iter()
            .map(|(root, e)| info(root, e.source))
            .collect()
    }

    /// Save the persisted workspaces, pending ones included (a restored workspace not
    /// started yet is still registered).
    fn persist(&self) {
        let mut keep: BTreeMap<&Path, Source> = BTreeMap::new();
        for (root, e) in &self.entries {
            keep.insert(root, e.source);
        }
        for item in self.pending.iter() {
            keep.entry(&item.dir).or_insert(item.source);
        }
        let list: Vec<store::StoredWorkspace> = keep
            .into_iter()
            .filter(|(_, source)| source.persisted())
            .map(|(root, source)| store::StoredWorkspace {
                root: root.to_owned(),
                source: source.as_str().into(),
            })
            .collect();
        if let Err(e) = store::save(&self.shared.state_dir, &list) {
            tracing::error!(
                "cannot save the workspace list in {}: {e}",
                self.shared.state_dir.display()
            );
        }
    }
}

fn heartbeat_period(cfg: &Config) -> std::time::Duration {
    std::time::Duration::from_secs(cfg.service.heartbeat_seconds)
}

fn info(root: &Path, source: Source) -> WorkspaceInfo {
    WorkspaceInfo {
        root: root.to_owned(),
        source: source.wire(),
        persisted: source.persisted(),
    }
}
