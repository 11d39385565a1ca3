//! The lifecycle of one server instance: a small actor.
//!
//! A [`Slot`] owns at most one [`Client`], for a base folder: a project root, or — when the
//! server is shared — the workspace, whose project roots the client serves as workspace
//! folders. [`Slot::get`] names the project root a check is for; a shared slot adds it with
//! `workspace/didChangeWorkspaceFolders` when the server supports several folders, and
//! answers [`SlotError::SingleFolder`] when it does not (the registry then falls back to one
//! slot per project root). A root unused for `idle_timeout_ms`, or no longer a project (its
//! markers gone, the package removed), is removed from the server's folders.
//!
//! A shared slot of a trusted workspace serves every worktree of its repository at that trust
//! level (the registry keys it by the repository): each worktree's project roots are folders
//! of the one server, and each file is read confined to its own worktree
//! ([`Client::root_for`]).
//!
//! The slot starts its client lazily on the first `get`, keeps it warm, shuts it down
//! (`shutdown` + `exit`) after `idle_timeout_ms` without use, on [`Slot::stop`] (the
//! registry's limits) or when the plugin stops, and restarts it after a crash with
//! exponential backoff (`restart_backoff_ms`, doubling), with every folder it served. More
//! than [`MAX_RESTARTS`] crashes within [`RESTART_WINDOW`] mark the slot broken: `get` then
//! answers with an explanation until the window has passed. A failed start counts as a crash.
//! A client held by a running check is never stopped (not for idleness, not for a limit).

use crate::client::Client;
use crate::config::ServerSpec;
use openfiles_plugin_api::gate::Program;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub const MAX_RESTARTS: usize = 5;
pub const RESTART_WINDOW: Duration = Duration::from_secs(180);

/// Why no client is available.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SlotError {
    #[error("{server} is not used: it crashed {count} times within 3 minutes ({last}); it will be retried after {retry_s} s")]
    Broken {
        server: String,
        count: usize,
        last: String,
        retry_s: u64,
    },
    #[error("{server} failed to start: {message}")]
    Start { server: String, message: String },
    #[error("{server} does not support several workspace folders")]
    SingleFolder { server: String },
    #[error("the lsp plugin is stopping")]
    Stopping,
}

/// A running instance, as the registry's limits see it.
#[derive(Debug, Clone, Copy)]
pub struct Status {
    pub pid: Option<u32>,
    pub last_used: Instant,
    /// Held by a running check.
    pub busy: bool,
}

type Reply<T> = oneshot::Sender<T>;

enum Cmd {
    Get(PathBuf, PathBuf, Reply<Result<Arc<Client>, SlotError>>),
    Status(Reply<Option<Status>>),
    Folders(Reply<Vec<PathBuf>>),
    Stop(Reply<bool>),
}

/// Cloneable handle to a slot actor.
#[derive(Clone)]
pub struct Slot {
    tx: mpsc::UnboundedSender<Cmd>,
}

/// Timing knobs of a slot.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub idle: Duration,
    pub startup: Duration,
    pub backoff: Duration,
}

impl Slot {
    /// Spawn the actor for `base` (a project root, or the workspace when `shared`); it stops
    /// (shutting its server down) when `stop` fires.
    pub fn spawn(
        spec: ServerSpec,
        exe: Program,
        base: PathBuf,
        shared: bool,
        timing: Timing,
        stop: CancellationToken,
    ) -> (Slot, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let actor = Actor {
            spec,
            exe,
            base,
            shared,
            multi: None,
            timing,
            client: None,
            folders: BTreeMap::new(),
            crashes: VecDeque::new(),
            last_error: String::new(),
            last_used: Instant::now(),
        };
        (Slot { tx }, tokio::spawn(actor.run(rx, stop)))
    }

    async fn ask<T>(&self, cmd: impl FnOnce(Reply<T>) -> Cmd) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(cmd(tx)).ok()?;
        rx.await.ok()
    }

    /// A running client serving the project root `root` of `workspace`, started if needed.
    pub async fn get(&self, root: PathBuf, workspace: PathBuf) -> Result<Arc<Client>, SlotError> {
        self.ask(|r| Cmd::Get(root, workspace, r))
            .await
            .unwrap_or(Err(SlotError::Stopping))
    }

    /// The running instance, if any.
    pub async fn status(&self) -> Option<Status> {
        self.ask(Cmd::Status).await.flatten()
    }

    /// The server's process id, if running (for tests and `openfiles plugins`).
    pub async fn pid(&self) -> Option<u32> {
        self.status().await.and_then(|s| s.pid)
    }

    /// The workspace folders of the running server (empty when none runs).
    pub async fn folders(&self) -> Vec<PathBuf> {
        self.ask(Cmd::Folders).await.unwrap_or_default()
    }

    /// Stop the server unless a check holds it; `true` if it was running and is stopping.
    pub async fn stop(&self) -> bool {
        self.ask(Cmd::Stop).await.unwrap_or(false)
    }
}

struct Actor {
    spec: ServerSpec,
    /// The server, with the scope (workspace and trust) it runs for.
    exe: Program,
    base: PathBuf,
    /// Serve several project roots as workspace folders, when the server supports it.
    shared: bool,
    /// Whether the server supports several folders, once a start told.
    multi: Option<bool>,
    timing: Timing,
    client: Option<Arc<Client>>,
    /// Project roots served, with their last use.
    folders: BTreeMap<PathBuf, Instant>,
    crashes: VecDeque<Instant>,
    last_error: String,
    last_used: Instant,
}

impl Actor {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Cmd>, stop: CancellationToken) {
        loop {
            let closed = self.client.as_ref().map(|c| c.closed());
            let idle_at = self.next_idle();
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    None => break,
                    Some(Cmd::Status(reply)) => {
                        let _ = reply.send(self.client.as_ref().map(|c| Status {
                            pid: c.transport.pid(),
                            last_used: self.last_used,
                            busy: Arc::strong_count(c) > 1,
                        }));
                    }
                    Some(Cmd::Folders(reply)) => {
                        let _ = reply.send(self.client.as_ref().map(|c| c.folders()).unwrap_or_default());
                    }
                    Some(Cmd::Stop(reply)) => {
                        let idle = self.client.as_ref().is_some_and(|c| Arc::strong_count(c) == 1);
                        let _ = reply.send(idle);
                        if idle {
                            tracing::info!(server = %self.spec.name, base = %self.base.display(), "stopped to keep within the limits");
                            self.shut_down().await;
                        }
                    }
                    Some(Cmd::Get(root, workspace, reply)) => {
                        self.last_used = Instant::now();
                        let r = tokio::select! {
                            r = self.get(root.clone(), workspace) => r,
                            _ = stop.cancelled() => Err(SlotError::Stopping),
                        };
                        let _ = reply.send(r);
                        self.last_used = Instant::now();
                        if let Some(t) = self.folders.get_mut(&root) {
                            *t = self.last_used;
                        }
                    }
                },
                _ = async {
                    match closed.as_ref() {
                        Some(c) => c.cancelled().await,
                        None => std::future::pending().await,
                    }
                }, if closed.is_some() => {
                    self.crashed();
                }
                _ = tokio::time::sleep_until(idle_at), if self.client.is_some() => {
                    self.idle_tick().await;
                }
                _ = stop.cancelled() => break,
            }
        }
        if let Some(c) = self.client.take() {
            c.shutdown().await;
        }
    }

    /// When the server, or one of its folders, becomes idle.
    fn next_idle(&self) -> Instant {
        let mut at = self.last_used + self.timing.idle;
        if self.client.as_ref().is_some_and(|c| c.caps.folders) {
            if let Some(t) = self.folders.values().min() {
                at = at.min(*t + self.timing.idle);
            }
        }
        at
    }

    async fn idle_tick(&mut self) {
        let now = Instant::now();
        let idle = self.timing.idle;
        let expired: Vec<PathBuf> = self
            .folders
            .iter()
            .filter(|(_, t)| **t + idle <= now)
            .map(|(f, _)| f.clone())
            .collect();
        let Some(c) = self.client.as_ref() else {
            return;
        };
        if self.last_used + idle <= now || expired.len() >= self.folders.len() {
            // A check still holding the client keeps it (the actor holds the other reference).
            if Arc::strong_count(c) > 1 {
                self.last_used = now;
                self.folders.values_mut().for_each(|t| *t = now);
                return;
            }
            tracing::info!(server = %self.spec.name, base = %self.base.display(), "idle; shutting down");
            self.shut_down().await;
        } else if c.caps.folders {
            for f in expired {
                self.folders.remove(&f);
                c.remove_folder(&f);
            }
        }
    }

    async fn shut_down(&mut self) {
        self.folders.clear();
        if let Some(c) = self.client.take() {
            c.shutdown().await;
        }
    }

    /// Folders that are no longer projects (markers gone, folder removed) leave the server.
    fn prune(&mut self) {
        if !self.shared {
            return;
        }
        let gone: Vec<PathBuf> = self
            .folders
            .keys()
            .filter(|f| {
                **f != self.base
                    && !self
                        .spec
                        .root_markers
                        .iter()
                        .any(|m| openfiles_plugin_api::markers::present(f, m))
            })
            .cloned()
            .collect();
        for f in gone {
            self.folders.remove(&f);
            if let Some(c) = &self.client {
                tracing::info!(server = %self.spec.name, folder = %f.display(), "no longer a project");
                c.remove_folder(&f);
            }
        }
    }

    async fn get(&mut self, root: PathBuf, workspace: PathBuf) -> Result<Arc<Client>, SlotError> {
        self.prune();
        let running = self
            .client
            .as_ref()
            .filter(|c| !c.closed().is_cancelled())
            .cloned();
        let c = match running {
            Some(c) => c,
            None => {
                self.folders.insert(root.clone(), Instant::now());
                self.ensure(&root).await?
            }
        };
        if !c.folders().contains(&root) {
            if !(self.shared && c.caps.folders) {
                return Err(SlotError::SingleFolder {
                    server: self.spec.name.clone(),
                });
            }
            c.add_folder(&root);
        }
        c.serve_workspace(&workspace);
        self.folders.insert(root, Instant::now());
        Ok(c)
    }

    fn crashed(&mut self) {
        if let Some(c) = self.client.take() {
            let tail = c.transport.stderr_tail();
            tracing::warn!(server = %self.spec.name, base = %self.base.display(), stderr = %tail, "server exited unexpectedly");
            self.last_error = if tail.is_empty() {
                "exited".into()
            } else {
                format!("exited; stderr: {tail}")
            };
            self.crashes.push_back(Instant::now());
        }
    }

    async fn ensure(&mut self, root: &std::path::Path) -> Result<Arc<Client>, SlotError> {
        if let Some(c) = &self.client {
            if !c.closed().is_cancelled() {
                return Ok(c.clone());
            }
            self.crashed();
        }
        let now = Instant::now();
        while self
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > RESTART_WINDOW)
        {
            self.crashes.pop_front();
        }
        if self.crashes.len() > MAX_RESTARTS {
            let oldest = self.crashes.front().copied().unwrap_or(now);
            return Err(SlotError::Broken {
                server: self.spec.name.clone(),
                count: self.crashes.len(),
                last: self.last_error.clone(),
                retry_s: (oldest + RESTART_WINDOW)
                    .saturating_duration_since(now)
                    .as_secs()
                    + 1,
            });
        }
        if let Some(&last) = self.crashes.back() {
            let n = self.crashes.len().min(8) as u32;
            tokio::time::sleep_until(last + self.timing.backoff * 2u32.pow(n - 1)).await;
        }
        // A shared server known to take several folders starts with every folder it serves
        // (after a crash or an idle stop of some, all of them); otherwise with the root asked for.
        let folders: Vec<PathBuf> = if self.shared && self.multi == Some(true) {
            self.folders.keys().cloned().collect()
        } else {
            vec![root.to_path_buf()]
        };
        match Client::start(
            &self.spec,
            &self.exe,
            &self.base,
            &folders,
            self.timing.startup,
        )
        .await
        {
            Ok(c) => {
                self.multi = Some(c.caps.folders);
                if !c.caps.folders {
                    let kept = c.folders();
                    self.folders.retain(|f, _| kept.contains(f));
                }
                self.client = Some(c.clone());
                Ok(c)
            }
            Err(e) => {
                self.last_error = e.to_string();
                self.crashes.push_back(Instant::now());
                Err(SlotError::Start {
                    server: self.spec.name.clone(),
                    message: e.to_string(),
                })
            }
        }
    }
}
