//! The lifecycle of one server for one project root: a small actor.
//!
//! A [`Slot`] owns at most one [`Client`]. It starts it lazily on the first `get`, keeps it
//! warm, shuts it down (`shutdown` + `exit`) after `idle_timeout_ms` without use or when the
//! plugin stops, and restarts it after a crash with exponential backoff
//! (`restart_backoff_ms`, doubling). More than [`MAX_RESTARTS`] crashes within
//! [`RESTART_WINDOW`] mark the slot broken: `get` then answers with an explanation until the
//! window has passed. A failed start counts as a crash.

use crate::client::Client;
use crate::config::ServerSpec;
use std::collections::VecDeque;
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
    #[error("the lsp plugin is stopping")]
    Stopping,
}

enum Cmd {
    Get(oneshot::Sender<Result<Arc<Client>, SlotError>>),
    Pid(oneshot::Sender<Option<u32>>),
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
    /// Spawn the actor; it stops (shutting its server down) when `stop` fires.
    pub fn spawn(
        spec: ServerSpec,
        exe: PathBuf,
        root: PathBuf,
        timing: Timing,
        stop: CancellationToken,
    ) -> (Slot, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let actor = Actor {
            spec,
            exe,
            root,
            timing,
            client: None,
            crashes: VecDeque::new(),
            last_error: String::new(),
            last_used: Instant::now(),
        };
        (Slot { tx }, tokio::spawn(actor.run(rx, stop)))
    }

    /// A running client, started if needed.
    pub async fn get(&self) -> Result<Arc<Client>, SlotError> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Cmd::Get(tx))
            .map_err(|_| SlotError::Stopping)?;
        rx.await.map_err(|_| SlotError::Stopping)?
    }

    /// The server's process id, if running (for tests and `openfiles plugins`).
    pub async fn pid(&self) -> Option<u32> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Cmd::Pid(tx)).ok()?;
        rx.await.ok().flatten()
    }
}

struct Actor {
    spec: ServerSpec,
    exe: PathBuf,
    root: PathBuf,
    timing: Timing,
    client: Option<Arc<Client>>,
    crashes: VecDeque<Instant>,
    last_error: String,
    last_used: Instant,
}

impl Actor {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Cmd>, stop: CancellationToken) {
        loop {
            let closed = self.client.as_ref().map(|c| c.closed());
            let idle_at = self.last_used + self.timing.idle;
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    None => break,
                    Some(Cmd::Pid(reply)) => {
                        let _ = reply.send(self.client.as_ref().and_then(|c| c.transport.pid()));
                    }
                    Some(Cmd::Get(reply)) => {
                        self.last_used = Instant::now();
                        let r = tokio::select! {
                            r = self.ensure() => r,
                            _ = stop.cancelled() => Err(SlotError::Stopping),
                        };
                        let _ = reply.send(r);
                        self.last_used = Instant::now();
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
                    // A check still holding the client keeps it (the actor holds the other reference).
                    if self.client.as_ref().is_some_and(|c| Arc::strong_count(c) > 1) {
                        self.last_used = Instant::now();
                        continue;
                    }
                    tracing::info!(server = %self.spec.name, root = %self.root.display(), "idle; shutting down");
                    if let Some(c) = self.client.take() {
                        c.shutdown().await;
                    }
                }
                _ = stop.cancelled() => break,
            }
        }
        if let Some(c) = self.client.take() {
            c.shutdown().await;
        }
    }

    fn crashed(&mut self) {
        if let Some(c) = self.client.take() {
            let tail = c.transport.stderr_tail();
            tracing::warn!(server = %self.spec.name, root = %self.root.display(), stderr = %tail, "server exited unexpectedly");
            self.last_error = if tail.is_empty() {
                "exited".into()
            } else {
                format!("exited; stderr: {tail}")
            };
            self.crashes.push_back(Instant::now());
        }
    }

    async fn ensure(&mut self) -> Result<Arc<Client>, SlotError> {
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
        match Client::start(&self.spec, &self.exe, &self.root, self.timing.startup).await {
            Ok(c) => {
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
