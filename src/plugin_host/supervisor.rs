//! One actor per loaded plugin: it owns the `openfiles plugin-host` child, the map of
//! checks in flight on it, and its restarts.
//!
//! The manager talks to it through an `mpsc` of `Cmd`s; answers go back on a `oneshot`
//! per check. When the child dies, every check in flight on it is answered with
//! [`PluginError::HostDied`] at once, and the child is restarted after a backoff (250 ms
//! doubling to 30 s, back to the start once a host has lived a minute). Checks that arrive
//! while it is down wait for the new child (their caller's deadline still applies). A
//! library that is refused or whose `create` fails on restart leaves the plugin broken:
//! later checks fail at once with [`PluginError::Broken`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use openfiles_plugin_api::{Capabilities, CheckRequest, CheckResponse, Init};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::codec::{FramedRead, LinesCodec};

/// Longest line accepted from a plugin host (a check result for many files can be large).
const MAX_HOST_LINE: usize = 256 << 20;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::protocol::{FromHost, ToHost};
use super::PluginError;
use openfiles_wire::control::{PluginState, PluginStatus};

/// How long a child may take to load its library and say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `create` may take.
const INIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a child gets to exit after `shutdown` before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
const BACKOFF_FIRST: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A host that lived this long resets the backoff.
const STABLE: Duration = Duration::from_secs(60);

pub(crate) type Reply = oneshot::Sender<Result<CheckResponse, PluginError>>;
/// Where a question's answer goes back to its asker (`super::nav`).
pub(crate) type QueryReply =
    oneshot::Sender<Result<openfiles_plugin_api::query::QueryAnswer, PluginError>>;

/// What the manager asks of a plugin's actor.
pub(crate) enum Cmd {
    Check {
        request: CheckRequest,
        reply: Reply,
    },
    Cancel(u64),
    /// A code-navigation question (`super::nav`).
    Query {
        request: openfiles_plugin_api::query::QueryRequest,
        reply: QueryReply,
    },
    /// The asker of question `id` gave up (its deadline, or it went away): drop its reply
    /// and tell the host to cancel it, which frees its slot.
    Forget(u64),
}

/// Why a child could not be started.
#[derive(Debug)]
pub(crate) enum StartError {
    /// The library was refused by the loader (`kind` as in the protocol).
    Refused { kind: String, message: String },
    /// `create` failed.
    Failed(String),
    /// The child could not be spawned, died early, timed out or spoke nonsense.
    Host(String),
}

impl StartError {
    pub(crate) fn kind(&self) -> &str {
        match self {
            StartError::Refused { kind, .. } => kind,
            StartError::Failed(_) => "create-failed",
            StartError::Host(_) => "host-failed",
        }
    }

    pub(crate) fn message(&self) -> String {
        match self {
            StartError::Refused { message, .. } => message.clone(),
            StartError::Failed(m) => format!("plugin failed to start: {m}"),
            StartError::Host(m) => m.clone(),
        }
    }
}

/// A running child.
pub(crate) struct Host {
    child: Child,
    stdin: ChildStdin,
    lines: FramedRead<ChildStdout, LinesCodec>,
    pub(crate) pid: u32,
}

impl Host {
    /// Spawn `host_exe plugin-host <library>` and wait for its hello: `(host, name, version)`.
    pub(crate) async fn spawn(
        host_exe: &Path,
        library: &Path,
    ) -> Result<(Host, String, String), StartError> {
        // Through the gate, for no workspace: the host serves every workspace, and each
        // program it starts goes through the gate again with that workspace's trust.
        let program =
            openfiles_gate::Program::at(host_exe, &openfiles_gate::Scope::user(), "plugin host")
                .map_err(|e| StartError::Host(e.to_string()))?;
        let mut command = Command::from(
            program.command([std::ffi::OsStr::new("plugin-host"), library.as_os_str()]),
        );
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .map_err(|e| StartError::Host(format!("cannot run {}: {e}", host_exe.display())))?;
        let pid = child.id().unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(StartError::Host("child has no stdio pipes".into()));
        };
        forward_stderr(stderr, library.to_owned());
        let mut host = Host {
            child,
            stdin,
            lines: FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_HOST_LINE)),
            pid,
        };
        match host.next(HELLO_TIMEOUT).await? {
            FromHost::Hello { name, version, .. } => Ok((host, name, version)),
            FromHost::Refused { kind, message } => {
                host.reap().await;
                Err(StartError::Refused { kind, message })
            }
            other => Err(StartError::Host(format!(
                "expected hello from plugin host, got {other:?}"
            ))),
        }
    }

    /// Send `init` and wait for the capabilities.
    pub(crate) async fn init(&mut self, init: &Init) -> Result<Capabilities, StartError> {
        self.send(&ToHost::Init { init: init.clone() })
            .await
            .map_err(|e| StartError::Host(format!("plugin host closed its input: {e}")))?;
        match self.next(INIT_TIMEOUT).await? {
            FromHost::Ready { capabilities } => Ok(*capabilities),
            FromHost::Failed { message } => {
                self.reap().await;
                Err(StartError::Failed(message))
            }
            other => Err(StartError::Host(format!(
                "expected ready from plugin host, got {other:?}"
            ))),
        }
    }

    async fn next(&mut self, limit: Duration) -> Result<FromHost, StartError> {
        match tokio::time::timeout(limit, self.lines.next()).await {
            Err(_) => Err(StartError::Host(format!(
                "plugin host did not answer within {} s",
                limit.as_secs()
            ))),
            Ok(Some(Ok(line))) => serde_json::from_str(&line).map_err(|e| {
                StartError::Host(format!("plugin host said something unreadable: {e}"))
            }),
            Ok(Some(Err(e))) => Err(StartError::Host(format!("plugin host: {e}"))),
            Ok(None) => Err(StartError::Host(format!(
                "plugin host {}",
                self.exit_reason().await
            ))),
        }
    }

    pub(crate) async fn send(&mut self, msg: &ToHost) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await
    }

    /// The child's output ended: wait briefly for its exit status and describe it.
    async fn exit_reason(&mut self) -> String {
        match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(status)) => describe(status),
            Ok(Err(e)) => format!("vanished ({e})"),
            Err(_) => {
                self.kill();
                let _ = self.child.wait().await;
                "closed its output and was killed".into()
            }
        }
    }

    async fn reap(&mut self) {
        let _ = self.exit_reason().await;
    }

    fn kill(&mut self) {
        if self.pid > 0 {
            // The host leads its own process group: take its helpers (cargo, tsc) along.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.start_kill();
    }

    /// Ask the child to stop; kill it (and its process group) after the grace period.
    pub(crate) async fn stop(mut self) {
        let _ = self.send(&ToHost::Shutdown).await;
        drop(self.stdin);
        if tokio::time::timeout(STOP_GRACE, self.child.wait())
            .await
            .is_err()
        {
            if self.pid > 0 {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(self.pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (_, Some(sig)) => {
            let name = nix::sys::signal::Signal::try_from(sig)
                .map(|s| s.as_str().to_owned())
                .unwrap_or_else(|_| format!("signal {sig}"));
            format!("was killed by {name}")
        }
        (Some(code), None) => format!("exited with status {code}"),
        (None, None) => "exited".into(),
    }
}

fn forward_stderr(stderr: tokio::process::ChildStderr, library: PathBuf) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(library = %library.display(), "plugin: {line}");
        }
    });
}

/// Everything needed to (re)start a plugin's host.
pub(crate) struct Spec {
    pub host_exe: PathBuf,
    pub library: PathBuf,
    pub name: String,
    pub init: Init,
}

impl Spec {
    async fn start(&self) -> Result<Host, StartError> {
        let (mut host, name, _version) = Host::spawn(&self.host_exe, &self.library).await?;
        if name != self.name {
            host.stop().await;
            return Err(StartError::Refused {
                kind: "bad-table".into(),
                message: format!("library now calls itself {name:?}, was {:?}", self.name),
            });
        }
        host.init(&self.init).await?;
        Ok(host)
    }
}

/// The shared status row this actor keeps current.
pub(crate) struct StatusSlot {
    pub rows: Arc<Mutex<Vec<PluginStatus>>>,
    pub index: usize,
}

impl StatusSlot {
    fn update(&self, f: impl FnOnce(&mut PluginStatus)) {
        if let Ok(mut rows) = self.rows.lock() {
            if let Some(row) = rows.get_mut(self.index) {
                f(row);
            }
        }
    }
}

enum End {
    Shutdown,
    Died(String),
}

/// The actor.
pub(crate) struct Supervisor {
    pub spec: Spec,
    pub rx: mpsc::Receiver<Cmd>,
    pub status: StatusSlot,
    pub shutdown: CancellationToken,
    pending: HashMap<u64, Reply>,
    /// Questions in flight on the host.
    queries: HashMap<u64, QueryReply>,
    queued: Vec<(CheckRequest, Reply)>,
    /// Checks cancelled at their caller's deadline that the host has not finished: by when
    /// it must have, or it is replaced (a check stuck in a blocking read or a hung server
    /// would otherwise keep the plugin busy for every later check).
    overdue: HashMap<u64, Instant>,
}

/// How long a host may go on with a check after its deadline and cancellation.
const OVERDUE_GRACE: Duration = Duration::from_secs(10);

impl Supervisor {
    pub(crate) fn new(
        spec: Spec,
        rx: mpsc::Receiver<Cmd>,
        status: StatusSlot,
        shutdown: CancellationToken,
    ) -> Self {
        Supervisor {
            spec,
            rx,
            status,
            shutdown,
            pending: HashMap::new(),
            queries: HashMap::new(),
            queued: Vec::new(),
            overdue: HashMap::new(),
        }
    }

    /// Serve with `host` until shutdown, restarting it as needed.
    pub(crate) async fn run(mut self, mut host: Host) {
        let mut delay = BACKOFF_FIRST;
        loop {
            let born = Instant::now();
            match self.serve(&mut host).await {
                End::Shutdown => {
                    host.stop().await;
                    self.fail_all(|p| PluginError::Stopped { plugin: p });
                    self.status.update(|s| {
                        s.state = PluginState::Stopped;
                        s.pid = None;
                    });
                    return;
                }
                End::Died(reason) => {
                    tracing::warn!(plugin = %self.spec.name, "plugin host {reason}; restarting");
                    // Status first, so whoever gets the error below already sees the restart.
                    self.status.update(|s| {
                        s.state = PluginState::Restarting;
                        s.pid = None;
                        s.restarts += 1;
                        s.reason = Some(format!("host {reason}"));
                    });
                    let plugin = self.spec.name.clone();
                    for (_, reply) in self.pending.drain() {
                        let _ = reply.send(Err(PluginError::HostDied {
                            plugin: plugin.clone(),
                            reason: reason.clone(),
                        }));
                    }
                    for (_, reply) in self.queries.drain() {
                        let _ = reply.send(Err(PluginError::HostDied {
                            plugin: plugin.clone(),
                            reason: reason.clone(),
                        }));
                    }
                    if born.elapsed() >= STABLE {
                        delay = BACKOFF_FIRST;
                    }
                }
            }
            // Restart, retrying transient failures with growing delays.
            host = loop {
                if !self.wait(delay).await {
                    self.fail_all(|p| PluginError::Stopped { plugin: p });
                    self.status.update(|s| s.state = PluginState::Stopped);
                    return;
                }
                delay = (delay * 2).min(BACKOFF_MAX);
                match self.spec.start().await {
                    Ok(h) => break h,
                    Err(e @ StartError::Host(_)) => {
                        tracing::warn!(plugin = %self.spec.name, "restart failed: {}", e.message());
                        self.status.update(|s| s.reason = Some(e.message()));
                    }
                    Err(e) => {
                        let reason = e.message();
                        tracing::error!(plugin = %self.spec.name, "plugin broken: {reason}");
                        self.status.update(|s| {
                            s.state = PluginState::Broken;
                            s.kind = Some(e.kind().to_owned());
                            s.reason = Some(reason.clone());
                        });
                        self.broken(reason).await;
                        return;
                    }
                }
            };
            let pid = host.pid;
            self.status.update(|s| {
                s.state = PluginState::Loaded;
                s.pid = Some(pid);
            });
        }
    }

    fn fail_all(&mut self, err: impl Fn(String) -> PluginError) {
        for (_, reply) in self.pending.drain() {
            let _ = reply.send(Err(err(self.spec.name.clone())));
        }
        for (_, reply) in self.queued.drain(..) {
            let _ = reply.send(Err(err(self.spec.name.clone())));
        }
        for (_, reply) in self.queries.drain() {
            let _ = reply.send(Err(err(self.spec.name.clone())));
        }
    }

    async fn serve(&mut self, host: &mut Host) -> End {
        for (request, reply) in std::mem::take(&mut self.queued) {
            let id = request.id;
            self.pending.insert(id, reply);
            if host.send(&ToHost::Check { request }).await.is_err() {
                return End::Died(host.exit_reason().await);
            }
        }
        self.overdue.clear();
        loop {
            let overdue_at = self.overdue.values().min().copied();
            let overdue = async {
                match overdue_at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = self.shutdown.cancelled() => return End::Shutdown,
                _ = overdue => {
                    host.kill();
                    host.reap().await;
                    return End::Died(format!(
                        "was still busy with a check {} s after its deadline (killed and replaced)",
                        OVERDUE_GRACE.as_secs()
                    ));
                }
                cmd = self.rx.recv() => match cmd {
                    None => return End::Shutdown,
                    Some(Cmd::Check { request, reply }) => {
                        self.pending.insert(request.id, reply);
                        if host.send(&ToHost::Check { request }).await.is_err() {
                            return End::Died(host.exit_reason().await);
                        }
                    }
                    Some(Cmd::Query { request, reply }) => {
                        self.queries.insert(request.id, reply);
                        if host.send(&ToHost::Query { request }).await.is_err() {
                            return End::Died(host.exit_reason().await);
                        }
                    }
                    Some(Cmd::Forget(id)) => {
                        if self.queries.remove(&id).is_some() {
                            let _ = host.send(&ToHost::Cancel { id }).await;
                        }
                    }
                    Some(Cmd::Cancel(id)) => {
                        if self.pending.remove(&id).is_some() {
                            self.overdue.insert(id, Instant::now() + OVERDUE_GRACE);
                            let _ = host.send(&ToHost::Cancel { id }).await;
                        }
                    }
                },
                line = host.lines.next() => match line {
                    Some(Ok(line)) => self.on_line(&line),
                    Some(Err(e)) => {
                        // A line over the cap (or unreadable bytes): the host is not trusted
                        // any more; it is killed and restarted like a crash.
                        tracing::error!(plugin = %self.spec.name, "plugin host sent bad output: {e}");
                        return End::Died(format!("bad output ({e})"));
                    }
                    None => return End::Died(host.exit_reason().await),
                },
            }
        }
    }

    fn on_line(&mut self, line: &str) {
        match serde_json::from_str::<FromHost>(line) {
            Ok(FromHost::Result {
                id,
                response,
                error,
                ran,
            }) => {
                // Whether or not the check is still awaited, what ran is shown.
                ran.into_iter().for_each(openfiles_gate::spawn::note);
                self.overdue.remove(&id);
                let Some(reply) = self.pending.remove(&id) else {
                    return; // cancelled or timed out meanwhile
                };
                let result = match (response, error) {
                    (_, Some(message)) => Err(PluginError::Failed {
                        plugin: self.spec.name.clone(),
                        message,
                    }),
                    (Some(response), None) => Ok(response),
                    (None, None) => Ok(CheckResponse::default()),
                };
                let _ = reply.send(result);
            }
            Ok(FromHost::Answer { id, answer, error }) => {
                let Some(reply) = self.queries.remove(&id) else {
                    return; // the asker gave up
                };
                let result = match (answer, error) {
                    (_, Some(message)) => Err(PluginError::Failed {
                        plugin: self.spec.name.clone(),
                        message,
                    }),
                    (Some(answer), None) => Ok(*answer),
                    (None, None) => Ok(openfiles_plugin_api::query::QueryAnswer::unsupported()),
                };
                let _ = reply.send(result);
            }
            Ok(other) => {
                tracing::warn!(plugin = %self.spec.name, "unexpected message from plugin host: {other:?}")
            }
            Err(e) => {
                let excerpt: String = line.chars().take(120).collect();
                tracing::warn!(plugin = %self.spec.name, "unreadable line from plugin host ({e}): {excerpt}")
            }
        }
    }

    /// Wait `delay` while the host is down, queueing checks. False on shutdown.
    async fn wait(&mut self, delay: Duration) -> bool {
        let sleep = tokio::time::sleep(delay);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                _ = self.shutdown.cancelled() => return false,
                _ = &mut sleep => return true,
                cmd = self.rx.recv() => match cmd {
                    None => return false,
                    Some(Cmd::Check { request, reply }) => self.queued.push((request, reply)),
                    Some(Cmd::Cancel(id)) => self.queued.retain(|(r, _)| r.id != id),
                    // A question is not worth a wait for the restart: answered at once.
                    Some(Cmd::Query { reply, .. }) => {
                        let _ = reply.send(Err(PluginError::HostDied {
                            plugin: self.spec.name.clone(),
                            reason: "restarting".into(),
                        }));
                    }
                    Some(Cmd::Forget(_)) => {}
                },
            }
        }
    }

    /// Out of service: answer every check with the reason until shutdown.
    async fn broken(&mut self, reason: String) {
        let plugin = self.spec.name.clone();
        let err = || PluginError::Broken {
            plugin: plugin.clone(),
            reason: reason.clone(),
        };
        for (_, reply) in self.queued.drain(..) {
            let _ = reply.send(Err(err()));
        }
        loop {
            tokio::select! {
                _ = self.shutdown.cancelled() => return,
                cmd = self.rx.recv() => match cmd {
                    None => return,
                    Some(Cmd::Check { reply, .. }) => { let _ = reply.send(Err(err())); }
                    Some(Cmd::Query { reply, .. }) => { let _ = reply.send(Err(err())); }
                    Some(Cmd::Cancel(_) | Cmd::Forget(_)) => {}
                },
            }
        }
    }
}
