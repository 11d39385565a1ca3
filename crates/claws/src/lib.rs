//! openfiles-claws, a headless Claws server: terminals driven over
//! `<workspace>/.claws/claws.sock` (claws/1) and the claws/2 message bus, without an editor.
//! The requests are decoded with the wire crate's types (`openfiles_wire::claws::request`),
//! the ones every client builds; the service depends on this crate, never the other way. Contract: `shared/spec/claws-protocol.md` and
//! `claws-notes.md`; DESIGN §5.
//!
//! One [`ClawsServer`] per workspace folder owns the socket, the terminals (`terminal.rs`:
//! a real PTY per shell, capture ring, shell-integration marks), the command history
//! (`history.rs`), the bus (`bus/`) and the persisted state under `.claws/` (`state.json`
//! for the terminal id counter, `terminals/<id>.log` for unwrapped terminals, `events/` for
//! the bus log, `shell/` for the integration scripts). Nothing there is followed through a
//! pre-existing symlink. `introspect` lists every served folder through the
//! [`ClawsRegistry`] the caller passes to [`ClawsServer::start_with`] (or a private one with
//! [`ClawsServer::start`]).
//!
//! The socket costs one listening descriptor; everything else is made when the first client
//! connects (`Lazy`): the shell scripts, the id counter, the event log, the orchestration
//! state and the server's timers (bus heartbeat, wave and lifecycle checks). A workspace no
//! Claws client ever uses therefore costs no task that wakes, no open log and no files but
//! `.claws/.gitignore` and the socket.
//!
//! Trust boundaries: the Unix socket serves our own uid only (0600 socket in a 0700 folder,
//! SO_PEERCRED), so claws/1 there needs no `hello`. The optional WebSocket listener
//! (`ws.rs`) is loopback-only without `[claws.auth]`; with auth on, a WebSocket connection
//! gets `auth:required` for everything but `hello` until one is accepted. Tokens, nonces
//! (persisted across restarts) and refused-`hello` limits: `orch/peers.rs`. Every file the
//! settings name (secret, certificate, key) is read bounded and must be a regular file. An
//! optional transport that cannot start is logged and leaves the Unix socket served.
//!
//! Shutdown has one path: the `shutdown` token (or [`ClawsServer::stop`]) stops accepting
//! and ends every connection; `stop` then hangs up the terminals and removes the socket file.

pub mod bus;
mod commands;
pub mod config;
mod conn;
mod drift;
mod exec;
mod history;
mod orch;
mod pty;
mod ring;
pub mod secret;
mod shell;
mod state;
mod strip;
mod terminal;
mod ws;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::ClawsConfig;
use openfiles_wire::claws::request::CloseOrigin;
pub use terminal::MAX_QUEUED_INPUT;
use terminal::{Terminal, CLOSE_GRACE};

pub use openfiles_wire::claws::{COMPATIBLE_EXTENSION_VERSION, MAX_LINE, PROTOCOL, PROTOCOL_2};

/// Why a Claws server could not start for a folder.
#[derive(Debug, thiserror::Error)]
pub enum ClawsError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("another Claws server already answers at {0}; not serving this folder")]
    AlreadyServed(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
}

/// Every folder served in this process, for `introspect`.
#[derive(Debug, Default)]
pub struct ClawsRegistry {
    servers: Mutex<Vec<(PathBuf, PathBuf)>>,
    /// The WebSocket listeners, one per `host:port`, shared by the workspaces served there.
    web_sockets: Mutex<std::collections::HashMap<String, std::sync::Weak<ws::Shared>>>,
    /// Bytes of push frames queued for every peer of every server (see `bus::Outbox`).
    pub(crate) queued_bytes: Arc<std::sync::atomic::AtomicUsize>,
    /// Terminals open in every server.
    terminals: std::sync::atomic::AtomicUsize,
    /// Clients connected to every server (Unix socket and WebSocket).
    clients: std::sync::atomic::AtomicUsize,
    /// Woken when `terminals` changes (the service's status line).
    terminals_changed: tokio::sync::Notify,
}

impl ClawsRegistry {
    /// The WebSocket listener `cfg` asks for: the one already serving that address, else a
    /// new one (`None` when off).
    fn web_socket(&self, cfg: &ClawsConfig) -> Result<Option<Arc<ws::Shared>>, ws::WsError> {
        if !cfg.web_socket.enabled {
            return Ok(None);
        }
        let key = format!("{}:{}", cfg.web_socket.host, cfg.web_socket.port);
        let mut map = self.web_sockets.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, w| w.strong_count() > 0);
        if cfg.web_socket.port != 0 {
            if let Some(shared) = map.get(&key).and_then(std::sync::Weak::upgrade) {
                return Ok(Some(shared));
            }
        }
        let Some(listener) = ws::bind(cfg, &self.roots())? else {
            return Ok(None);
        };
        let shared = ws::Shared::start(listener);
        map.insert(key, Arc::downgrade(&shared));
        Ok(Some(shared))
    }

    pub fn new() -> Arc<ClawsRegistry> {
        Arc::new(ClawsRegistry::default())
    }

    /// The folders of the servers registered here (canonical): where no secret may lie.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.servers().into_iter().map(|(root, _)| root).collect()
    }

    /// (workspace, socket) pairs, in start order.
    pub fn servers(&self) -> Vec<(PathBuf, PathBuf)> {
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn add(&self, ws: &Path, sock: &Path) {
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((ws.to_owned(), sock.to_owned()));
    }

    fn remove(&self, sock: &Path) {
        self.servers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(_, s)| s != sock);
    }

    /// Terminals open in every server.
    pub fn terminal_count(&self) -> usize {
        self.terminals.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Clients connected to every server (an autostarted service is not idle while any is).
    pub fn client_count(&self) -> usize {
        self.clients.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Count one client for as long as the returned guard lives.
    pub(crate) fn client(self: &Arc<Self>) -> ClientGuard {
        self.clients
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ClientGuard(self.clone())
    }

    /// Resolves once the terminal count changed (since the last time it resolved).
    pub async fn terminals_changed(&self) {
        self.terminals_changed.notified().await
    }

    fn count_terminals(&self, opened: usize, closed: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        self.terminals.fetch_add(opened, Relaxed);
        self.terminals.fetch_sub(closed, Relaxed);
        self.terminals_changed.notify_one();
    }
}

/// One connected client, counted in [`ClawsRegistry::client_count`] until dropped.
pub(crate) struct ClientGuard(Arc<ClawsRegistry>);

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.0
            .clients
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(crate) use openfiles_wire::spec::{iso_ms as iso, iso_now};

/// A random (version 4) UUID.
pub(crate) fn uuid() -> String {
    let h = format!("{}{}", shell::unique_hex(), shell::unique_hex());
    let b = h.as_bytes();
    let s = |r: std::ops::Range<usize>| String::from_utf8_lossy(&b[r]).into_owned();
    let variant = ["8", "9", "a", "b"][usize::from(b[16] % 4)];
    format!(
        "{}-{}-4{}-{variant}{}-{}",
        s(0..8),
        s(8..12),
        s(13..16),
        s(17..20),
        s(20..32)
    )
}

/// One connected client, as every handler sees it: the connection's id (the bus keys its
/// peer by it), its push queue, and where it stands with `[claws.auth]`.
pub struct Connection {
    pub conn_id: u64,
    pub outbox: Arc<bus::Outbox>,
    /// Every command but `hello` is refused with `auth:required` until a `hello` is
    /// accepted (WebSocket connections with `[claws.auth]` on; see `conn::Transport`).
    needs_hello: AtomicBool,
    /// `hello`s refused for their token (`auth:*`); the connection closes at
    /// [`orch::peers::MAX_FAILED_HELLOS`].
    refused_hellos: AtomicU32,
}

impl Connection {
    fn new(conn_id: u64, outbox: Arc<bus::Outbox>, needs_hello: bool) -> Connection {
        Connection {
            conn_id,
            outbox,
            needs_hello: AtomicBool::new(needs_hello),
            refused_hellos: AtomicU32::new(0),
        }
    }

    /// Whether this connection must still say `hello` before anything else.
    pub(crate) fn needs_hello(&self) -> bool {
        self.needs_hello.load(Ordering::Relaxed)
    }

    /// A `hello` passed the auth check.
    pub(crate) fn authenticated(&self) {
        self.needs_hello.store(false, Ordering::Relaxed);
    }

    /// A `hello` was refused for its token.
    pub(crate) fn hello_refused(&self) {
        self.refused_hellos.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether this connection has used up its `hello` attempts.
    pub(crate) fn out_of_hellos(&self) -> bool {
        self.refused_hellos.load(Ordering::Relaxed) >= orch::peers::MAX_FAILED_HELLOS
    }
}

/// State shared by the connections and terminal tasks of one server.
pub(crate) struct ServerState {
    root: PathBuf,
    claws_dir: PathBuf,
    shell_dir: PathBuf,
    cfg: ClawsConfig,
    registry: Arc<ClawsRegistry>,
    started: Instant,
    terminals: Mutex<BTreeMap<u64, Arc<Terminal>>>,
    ids: state::IdCounter,
    history: history::History,
    bus: bus::Bus,
    /// The one-shot `clientVersion` drift warning (drift.rs).
    drift: drift::DriftWarning,
    /// The orchestration sub-rooms (orch/).
    orch: orch::Orchestra,
}

impl ServerState {
    fn terms(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Terminal>>> {
        self.terminals.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn terminal(&self, id: u64) -> Option<Arc<Terminal>> {
        self.terms().get(&id).cloned()
    }

    fn terminals_sorted(&self) -> Vec<Arc<Terminal>> {
        self.terms().values().cloned().collect()
    }

    fn live_count(&self) -> usize {
        self.terms().values().filter(|t| t.is_live()).count()
    }

    fn insert_terminal(&self, t: Arc<Terminal>) {
        let replaced = self.terms().insert(t.id, t);
        self.registry
            .count_terminals(1, usize::from(replaced.is_some()));
    }

    fn remove_terminal(&self, id: u64) -> Option<Arc<Terminal>> {
        let removed = self.terms().remove(&id);
        if removed.is_some() {
            self.registry.count_terminals(0, 1);
        }
        removed
    }

    /// Close a terminal (as `close` does): announce, mark its lifecycle worker closed, hang
    /// it up in the background. False when no such terminal is open.
    fn close_terminal(self: &Arc<Self>, id: u64, origin: CloseOrigin) -> bool {
        let Some(t) = self.remove_terminal(id) else {
            return false;
        };
        self.announce_closed(&t, origin);
        tokio::spawn(async move { t.hang_up(CLOSE_GRACE).await });
        true
    }

    fn announce_closed(&self, t: &Terminal, origin: CloseOrigin) {
        // CLOSED follows once the shell is gone (the reaper).
        t.to_vehicle(self, terminal::Vehicle::Closing);
        self.orch.lifecycle.mark(self, &t.id.to_string(), "closed");
        let id = t.id.to_string();
        self.bus.publish_server(
            "system.terminal.closed",
            json!({"terminal_id": id, "close_origin": origin.as_str(), "closed_at": now_ms()}),
        );
        self.bus.publish_server(
            "system.worker.terminated",
            json!({"terminal_id": id, "correlation_id": t.correlation_id}),
        );
    }
}

/// The Claws socket of one workspace folder.
pub struct ClawsServer {
    lazy: Arc<Lazy>,
    socket: PathBuf,
    /// Where the WebSocket listener listens, when `[claws.web_socket]` is on.
    ws_addr: Option<std::net::SocketAddr>,
    /// Why the WebSocket listener asked for is not listening.
    ws_error: Option<String>,
    /// What is wrong with `[claws.auth]`'s secret, as logged at start (kept for callers
    /// without a log: `openfiles claws serve`).
    auth_warnings: Vec<String>,
    /// This workspace's route on the shared WebSocket listener (leaves when dropped).
    _ws_member: Option<ws::Member>,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

/// A server's state, made when the first client connects (then kept until the server stops).
pub(crate) struct Lazy {
    root: PathBuf,
    claws_dir: PathBuf,
    cfg: ClawsConfig,
    registry: Arc<ClawsRegistry>,
    stop: CancellationToken,
    /// When the socket was bound (`uptimeMs` counts from here, not from the first client).
    started: Instant,
    state: tokio::sync::OnceCell<Arc<ServerState>>,
    /// The timers started with the state.
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Lazy {
    /// The state, made now if no client came before. A failure is returned to this client
    /// and the next one tries again.
    pub(crate) async fn get(&self) -> Result<Arc<ServerState>, ClawsError> {
        self.state.get_or_try_init(|| self.make()).await.cloned()
    }

    fn made(&self) -> Option<&Arc<ServerState>> {
        self.state.get()
    }

    /// Make the state: its disk work (scripts, id counter, reading the event log for the
    /// last sequence number, the lifecycle file) on a blocking thread, never a runtime
    /// thread; then start its timers.
    async fn make(&self) -> Result<Arc<ServerState>, ClawsError> {
        let (root, claws_dir, cfg) = (self.root.clone(), self.claws_dir.clone(), self.cfg.clone());
        let (registry, started) = (self.registry.clone(), self.started);
        let shared =
            tokio::task::spawn_blocking(move || build(root, claws_dir, cfg, registry, started))
                .await
                .map_err(|e| ClawsError::Io {
                    path: self.claws_dir.clone(),
                    source: io::Error::other(e.to_string()),
                })??;
        let shared = Arc::new(shared);
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        tasks.push(tokio::spawn(heartbeat(shared.clone(), self.stop.clone())));
        tasks.push(tokio::spawn(watch(shared.clone(), self.stop.clone())));
        tracing::debug!(root = %self.root.display(), "claws state made for its first client");
        Ok(shared)
    }
}

/// A server's state from its folder (blocking: reads and writes files).
fn build(
    root: PathBuf,
    claws_dir: PathBuf,
    cfg: ClawsConfig,
    registry: Arc<ClawsRegistry>,
    started: Instant,
) -> Result<ServerState, ClawsError> {
    let (cfg, claws_dir) = (&cfg, &claws_dir);
    let io_at = |p: &Path| {
        let p = p.to_owned();
        move |source| ClawsError::Io { path: p, source }
    };
    openfiles_os::fsutil::verify_own_dirs(claws_dir, 1).map_err(io_at(claws_dir))?;
    let shell_dir = claws_dir.join("shell");
    shell::install_scripts(&shell_dir).map_err(io_at(&shell_dir))?;
    let ids = state::IdCounter::load(claws_dir).map_err(io_at(claws_dir))?;
    let events_dir = bus::log::stream_dir(claws_dir).map_err(io_at(claws_dir))?;
    let mut log = bus::log::EventLog::open(
        &events_dir,
        bus::log::Limits {
            segment_bytes: cfg.event_segment_bytes,
            segment_age: Duration::from_secs(cfg.event_segment_seconds.max(1)),
            total_bytes: cfg.event_log_bytes,
        },
    )
    .map_err(io_at(&events_dir))?;
    if cfg.event_log.compact {
        log.0.compact();
    }
    let bus = bus::Bus::new(Some(log)).map_err(io_at(&events_dir))?;
    Ok(ServerState {
        orch: orch::Orchestra::new(&root, claws_dir, cfg),
        root,
        claws_dir: claws_dir.clone(),
        shell_dir,
        cfg: cfg.clone(),
        registry,
        started,
        terminals: Mutex::new(BTreeMap::new()),
        ids,
        history: history::History::new(cfg.history_events, cfg.history_output_bytes),
        bus,
        drift: drift::DriftWarning::default(),
    })
}

impl ClawsServer {
    /// [`ClawsServer::start_with`] with a registry of its own (introspect lists only this folder).
    pub async fn start(
        root: &Path,
        cfg: &ClawsConfig,
        shutdown: CancellationToken,
    ) -> Result<ClawsServer, ClawsError> {
        Self::start_with(root, cfg, ClawsRegistry::new(), shutdown).await
    }

    /// Bind `<root>/.claws/claws.sock` (dir 0700, socket 0600, refusing when a live server
    /// answers, removing a stale file), register in `registry`, and serve until `shutdown`
    /// is cancelled. The rest (id counter, event log, …) is made for the first client.
    ///
    /// The WebSocket listener is optional: when it cannot start (address taken, refused
    /// without auth, unreadable certificate) the error is logged and kept
    /// ([`ClawsServer::web_socket_error`]), and the Unix socket is served all the same.
    /// An unusable `[claws.auth]` secret is logged too (every `hello` is then refused).
    pub async fn start_with(
        root: &Path,
        cfg: &ClawsConfig,
        registry: Arc<ClawsRegistry>,
        shutdown: CancellationToken,
    ) -> Result<ClawsServer, ClawsError> {
        let cfg = &cfg.effective();
        let root = std::fs::canonicalize(root).map_err(|source| ClawsError::Io {
            path: root.to_owned(),
            source,
        })?;
        let claws_dir = root.join(".claws");
        let io_at = |p: &Path| {
            let p = p.to_owned();
            move |source| ClawsError::Io { path: p, source }
        };
        openfiles_os::fsutil::ensure_private_dir(&claws_dir, 0o700).map_err(io_at(&claws_dir))?;
        gitignore(&claws_dir).map_err(io_at(&claws_dir))?;
        let socket = claws_dir.join("claws.sock");
        if cfg.socket_path != ".claws/claws.sock" || cfg.log_directory != ".claws/terminals" {
            tracing::warn!("[claws] socket_path and log_directory are fixed (.claws/claws.sock, .claws/terminals); other values are ignored");
        }
        let listener = conn::bind(&socket).await?;
        registry.add(&root, &socket);
        let auth_warnings = auth_warnings(cfg, &root, &registry);
        let stop = shutdown.child_token();
        let lazy = Arc::new(Lazy {
            root,
            claws_dir,
            cfg: cfg.clone(),
            registry,
            stop: stop.clone(),
            started: Instant::now(),
            state: tokio::sync::OnceCell::new(),
            tasks: Mutex::new(Vec::new()),
        });
        let tasks = vec![tokio::spawn(conn::accept_loop(
            listener,
            lazy.clone(),
            stop.clone(),
        ))];
        let (ws_member, ws_error) = join_web_socket(cfg, &lazy);
        let ws_addr = ws_member.as_ref().map(|m| m.addr());
        tracing::info!(socket = %socket.display(), "claws socket ready");
        Ok(ClawsServer {
            lazy,
            socket,
            ws_addr,
            ws_error,
            auth_warnings,
            _ws_member: ws_member,
            stop,
            tasks,
        })
    }

    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    pub fn web_socket_addr(&self) -> Option<std::net::SocketAddr> {
        self.ws_addr
    }

    /// Why the WebSocket listener `[claws.web_socket]` asks for is not listening.
    pub fn web_socket_error(&self) -> Option<&str> {
        self.ws_error.as_deref()
    }

    /// What was wrong with the `[claws.auth]` secret at start (also logged): an unusable
    /// secret, a `.claws/auth.token` the workspace carries that is not read.
    pub fn auth_warnings(&self) -> &[String] {
        &self.auth_warnings
    }

    pub fn terminal_count(&self) -> usize {
        self.lazy.made().map_or(0, |s| s.terms().len())
    }

    /// Stop: close the socket, hang up every terminal (SIGHUP to its process group, SIGKILL
    /// after the grace period), remove the socket file.
    pub async fn stop(self) {
        self.stop.cancel();
        let timers =
            std::mem::take(&mut *self.lazy.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        for t in self.tasks.into_iter().chain(timers) {
            let _ = t.await;
        }
        let _ = std::fs::remove_file(&self.socket);
        self.lazy.registry.remove(&self.socket);
        let Some(shared) = self.lazy.made() else {
            return; // never used: no terminals
        };
        let terms: Vec<Arc<Terminal>> =
            std::mem::take(&mut *shared.terms()).into_values().collect();
        shared.registry.count_terminals(0, terms.len());
        let mut hangups = Vec::new();
        for t in terms {
            shared.announce_closed(&t, CloseOrigin::Shutdown);
            hangups.push(tokio::spawn(async move { t.hang_up(CLOSE_GRACE).await }));
        }
        for h in hangups {
            let _ = h.await;
        }
        // Every event (the terminals' last ones too) and the lifecycle state reach the disk
        // before stop returns.
        shared.orch.lifecycle.saved().await;
        let s = shared.clone();
        let _ = tokio::task::spawn_blocking(move || s.bus.flush_log()).await;
    }
}

/// With `[claws.auth]` on: make the default secret when none is named, and say (logged and
/// returned, for `status`) when it is unusable or lies inside a workspace.
fn auth_warnings(cfg: &ClawsConfig, root: &Path, registry: &ClawsRegistry) -> Vec<String> {
    let mut warnings = Vec::new();
    if !cfg.auth.enabled {
        return warnings;
    }
    let secret = secret::token_path(&cfg.auth, root);
    let made = match cfg.auth.token_path {
        None => secret::ensure_default(&secret),
        Some(_) => Ok(()),
    };
    let roots = registry.roots();
    if let Err(e) = made.and_then(|()| secret::read(&secret, &roots)) {
        let w = format!(
            "[claws.auth] is on but its secret is unusable ({e}): every hello is refused until \
             it is fixed"
        );
        tracing::error!(root = %root.display(), "{w}");
        warnings.push(w);
    }
    if let Some(w) = secret::workspace_token_warning(root, &secret) {
        tracing::warn!(root = %root.display(), "{w}");
        warnings.push(w);
    }
    warnings
}

/// The WebSocket: this workspace joins the service's listener on that address (one per
/// address, routed by path), binding it when it is the first. When it cannot, why (logged;
/// the Unix socket is served all the same).
fn join_web_socket(cfg: &ClawsConfig, lazy: &Arc<Lazy>) -> (Option<ws::Member>, Option<String>) {
    match lazy.registry.web_socket(cfg) {
        Ok(Some(shared)) => (Some(shared.join(&lazy.root, lazy)), None),
        Ok(None) => (None, None),
        Err(e) => {
            tracing::error!(
                root = %lazy.root.display(),
                "claws WebSocket listener not started (the Unix socket is served): {e}"
            );
            (None, Some(e.to_string()))
        }
    }
}

/// `.claws/.gitignore` with `*` (created only if missing): sockets, logs and events stay
/// out of version control.
fn gitignore(dir: &Path) -> io::Result<()> {
    // An explicit mode: the default 0666 would be world-writable under umask 000.
    match std::os::unix::fs::OpenOptionsExt::mode(
        std::fs::OpenOptions::new().write(true).create_new(true),
        0o600,
    )
    .open(dir.join(".gitignore"))
    {
        Ok(mut f) => std::io::Write::write_all(&mut f, b"*\n"),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

async fn heartbeat(shared: Arc<ServerState>, stop: CancellationToken) {
    let ms = shared.cfg.heartbeat_interval_ms;
    if ms == 0 {
        return;
    }
    let every = Duration::from_millis(ms.max(100));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let uptime = shared.started.elapsed().as_millis() as u64;
        let peers = shared.bus.peer_count();
        shared.bus.publish_server(
            "system.heartbeat",
            json!({"uptimeMs": uptime, "peers": peers, "terminals": shared.terms().len()}),
        );
        let (published, per_peer) = shared.bus.take_metrics();
        let secs = (ms as f64 / 1000.0).max(1.0);
        shared.bus.publish_server(
            "system.metrics",
            json!({"publishRate_per_sec": published as f64 / secs,
                   "queueDepth": shared.orch.in_flight.load(std::sync::atomic::Ordering::Relaxed),
                   "peerCount": peers, "eventLogLastSeq": shared.bus.last_sequence(),
                   "uptimeMs": uptime, "ts": iso_now()}),
        );
        for (p, dropped, hits, count) in per_peer {
            shared.bus.publish_server(
                &format!("system.peer.metrics.{}", p.peer_id),
                json!({"peerId": p.peer_id, "peerName": p.name, "droppedFrames": dropped,
                       "rateLimitHits": hits, "publishCount": count, "ts": iso_now()}),
            );
        }
        let days = shared.cfg.event_log.retention_days;
        if days > 0 {
            shared.bus.retain(Duration::from_secs(days * 86_400));
        }
    }
}

/// Once a second: wave violation checks; every 30 s the lifecycle TTL watchdog.
async fn watch(shared: Arc<ServerState>, stop: CancellationToken) {
    let mut n: u64 = 0;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        n += 1;
        shared.orch.waves.scan(&shared);
        if n % 30 == 0 {
            shared.orch.lifecycle.watchdog(&shared);
        }
    }
}
