//! The MCP server's connections to the service: the workspace it serves, one-shot requests
//! to the control socket (`openfiles/1`) and the Claws socket (`claws/1`, one connection
//! per request as Claws's own clients do, because terminal commands reuse `id`), and the
//! one long-lived claws/2 bus connection.
//!
//! The bus connection says `hello` once (orchestrator `openfiles-mcp` unless the agent
//! calls `claws_hello` with its own identity, which replaces the connection), carries the
//! stateful requests (publish, subscribe, tasks, …) matched to their answers by `id`, and
//! keeps every push frame in a ring (1000 messages) for `claws_drain_events`, remembering
//! which workers announced completion (`worker.<id>.complete`) or whose terminal went away
//! (`system.worker.terminated`). A reader thread owns the read half; writers share the
//! write half under a mutex, one whole line per write.
//!
//! Every blocking read here polls a [`Call`]'s cancellation flag every 100 ms, so a
//! cancelled tool call gives its thread back promptly, and reports progress each second it
//! waits: the wire crate's `Conn` and control `Client` take that check (`Keep`). Requests are
//! the wire crate's typed commands, the same structs the service decodes.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use openfiles_wire::claws::request::{Command, Hello, HelloReply, Publish, Subscribe};
use openfiles_wire::claws::PROTOCOL_2;
use serde::Deserialize;

use super::call::{Call, Fail};
use openfiles_wire::control::{Call as ControlCall, ClientError};
use openfiles_wire::line::{Conn, LineError, MAX_ANSWER};

/// How long one wait for a bus answer lasts before the cancellation flag is checked.
const SLICE: Duration = Duration::from_millis(100);
/// Push frames kept for `claws_drain_events`.
const RING: usize = 1000;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The wait check of a call: stop when it is cancelled, report progress each second.
fn keep_for(call: &Call) -> impl FnMut(Duration) -> bool + '_ {
    let mut told = Duration::ZERO;
    move |waited| {
        if call.cancelled() {
            return false;
        }
        if waited >= told + Duration::from_secs(1) {
            told = waited;
            call.progress("waiting for the service's answer");
        }
        true
    }
}

/// The next line of `conn` within `timeout`, polling `call`'s cancellation.
fn recv(conn: &mut Conn, timeout: Duration, call: Option<&Call>) -> Result<Vec<u8>, LineError> {
    let deadline = Some(Instant::now() + timeout);
    match call {
        Some(c) => {
            let mut keep = keep_for(c);
            conn.recv(deadline, Some(&mut keep))
        }
        None => conn.recv(deadline, None),
    }
}

/// One claws/1 request on its own connection. Transport failures come back as an
/// `ok:false` answer (the handlers treat them like the server's own errors); only
/// cancellation is an `Err`.
pub fn claws_call(
    sock: &Path,
    req: &Command,
    timeout: Duration,
    call: Option<&Call>,
) -> Result<Value, Fail> {
    let failed = |e: String| Ok(json!({ "ok": false, "error": e }));
    let mut conn = match Conn::connect(sock) {
        Ok(c) => c,
        Err(e) => return failed(format!("socket error: {e}")),
    };
    // A refusing server answers and hangs up at once: read its answer even if the write failed.
    let wrote = conn.send(req.to_value().to_string().as_bytes(), Some(timeout));
    loop {
        match recv(&mut conn, timeout, call) {
            Err(LineError::Interrupted) => return Err(Fail::Cancelled),
            Err(LineError::Closed) => {
                return failed(match wrote {
                    Err(e) => format!("socket error: {e}"),
                    Ok(()) => "the Claws socket closed the connection".into(),
                })
            }
            Err(LineError::Timeout) => return failed("socket timeout".into()),
            Err(LineError::TooLong(_)) => return failed("answer too large".into()),
            Err(LineError::Io(e)) => return failed(format!("socket error: {e}")),
            Ok(l) => match serde_json::from_slice::<Value>(&l) {
                Ok(v) if v.get("push").is_some() => continue,
                Ok(v) => return Ok(v),
                Err(_) => return failed("bad json from the Claws socket".into()),
            },
        }
    }
}

/// One control request on its own connection (connecting wakes a socket-activated service),
/// its reply read as the command's; `ok:false` becomes a tool error.
pub fn control_as<R: ControlCall>(
    sock: &Path,
    req: &R,
    timeout: Duration,
    call: Option<&Call>,
) -> Result<R::Reply, Fail> {
    let mut client = crate::autostart::connect(sock, Some(timeout)).map_err(|e| {
        Fail::Tool(format!(
            "{e} (start it with `openfiles serve` or `systemctl --user enable --now openfiles.socket`)"
        ))
    })?;
    let answer = match call {
        Some(c) => {
            let mut keep = keep_for(c);
            client.call_with(req, Some(&mut keep))
        }
        None => client.call(req),
    };
    match answer {
        Ok(reply) => Ok(reply),
        Err(ClientError::Interrupted) => Err(Fail::Cancelled),
        Err(ClientError::Timeout) => Err(Fail::Tool("socket timeout".into())),
        Err(e) => Err(Fail::Tool(e.to_string())),
    }
}

/// The bus messages received so far.
#[derive(Default)]
pub struct Events {
    pub ring: std::collections::VecDeque<Value>,
    pub total: u64,
    seen: HashSet<u64>,
    /// Terminal id → payload of its `worker.<id>.complete`.
    pub completed: HashMap<String, Value>,
    /// Terminal ids named by `system.worker.terminated` / `system.terminal.closed`.
    pub terminated: HashSet<String>,
}

impl Events {
    fn push(&mut self, frame: &Value) {
        if let Some(seq) = frame.get("sequence").and_then(Value::as_u64) {
            if !self.seen.insert(seq) {
                return; // two matching subscriptions deliver one message twice
            }
            if self.seen.len() > 4 * RING {
                let keep: HashSet<u64> = self
                    .seen
                    .iter()
                    .filter(|&&s| s + 2000 > seq)
                    .copied()
                    .collect();
                self.seen = keep;
            }
        }
        let topic = frame.get("topic").and_then(Value::as_str).unwrap_or("");
        let payload = frame.get("payload").cloned().unwrap_or(Value::Null);
        let parts: Vec<&str> = topic.split('.').collect();
        if let ["worker", id, "complete"] = parts.as_slice() {
            self.completed.insert((*id).to_owned(), payload.clone());
        }
        if topic == "system.worker.terminated" || topic == "system.terminal.closed" {
            let id = payload.get("terminal_id").map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            if let Some(id) = id {
                self.terminated.insert(id);
            }
        }
        self.total += 1;
        self.ring.push_back(json!({
            "absoluteIndex": self.total,
            "topic": topic,
            "from": frame.get("from").cloned().unwrap_or(Value::Null),
            "payload": payload,
            "sentAt": frame.get("sentAt").cloned().unwrap_or(Value::Null),
            "sequence": frame.get("sequence").cloned().unwrap_or(Value::Null),
        }));
        while self.ring.len() > RING {
            self.ring.pop_front();
        }
    }
}

/// The long-lived claws/2 connection.
pub struct Bus {
    writer: Mutex<UnixStream>,
    pending: Arc<Mutex<HashMap<u64, mpsc::Sender<Value>>>>,
    next_id: AtomicU64,
    pub peer_id: String,
    pub hello: Value,
    pub events: Arc<(Mutex<Events>, Condvar)>,
    alive: Arc<AtomicBool>,
    /// Set once subscribed to `**` for `claws_drain_events`: the resume cursor it got.
    pub subscribed_all: Mutex<Option<Value>>,
}

impl Bus {
    /// Connect, say `hello` with `identity` (role, peerName, …), and subscribe to the
    /// worker completion topics. `events` carries over what an earlier connection received.
    pub fn connect(
        sock: &Path,
        identity: &Value,
        events: Option<Arc<(Mutex<Events>, Condvar)>>,
    ) -> Result<Bus, Fail> {
        let stream =
            openfiles_wire::line::connect_ours(sock).map_err(|e| Fail::Tool(e.to_string()))?;
        let reader = stream
            .try_clone()
            .map_err(|e| Fail::Tool(format!("socket error: {e}")))?;
        reader
            .set_read_timeout(None)
            .map_err(|e| Fail::Tool(format!("socket error: {e}")))?;
        let pending: Arc<Mutex<HashMap<u64, mpsc::Sender<Value>>>> = Arc::default();
        let events = events.unwrap_or_default();
        let alive = Arc::new(AtomicBool::new(true));
        {
            let (pending, events, alive) = (pending.clone(), events.clone(), alive.clone());
            std::thread::Builder::new()
                .name("mcp-bus".into())
                .spawn(move || read_loop(reader, &pending, &events, &alive))
                .map_err(|e| Fail::Tool(format!("cannot start the bus reader: {e}")))?;
        }
        let mut bus = Bus {
            writer: Mutex::new(stream),
            pending,
            next_id: AtomicU64::new(1),
            peer_id: String::new(),
            hello: Value::Null,
            events,
            alive,
            subscribed_all: Mutex::new(None),
        };
        // The identity the agent gave, read as the server reads a `hello`.
        let mut hello = Hello::deserialize(identity).unwrap_or_default();
        hello.protocol = Some(PROTOCOL_2.to_owned());
        // Signed with the workspace's `[claws.auth]` secret (the user's state folder, or the
        // user's `token_path`) when there is one we may read; with auth off none is needed.
        let auth = crate::config::Config::load(None)
            .map(|(c, _)| c.claws.auth)
            .unwrap_or_default();
        if let Some(root) = openfiles_claws::secret::root_of_socket(sock) {
            if let Err(e) = openfiles_claws::secret::sign_hello(&mut hello, &root, &auth) {
                if auth.enabled {
                    return Err(Fail::Tool(format!("ERROR: hello not signed: {e}")));
                }
            }
        }
        let answer = bus.request(Command::Hello(hello), Duration::from_secs(10), None)?;
        if answer.get("ok") != Some(&Value::Bool(true)) {
            return Err(Fail::Tool(format!(
                "ERROR: {}",
                answer["error"].as_str().unwrap_or("hello failed")
            )));
        }
        bus.peer_id = serde_json::from_value::<HelloReply>(answer.clone())
            .map(|h| h.peer_id)
            .unwrap_or_default();
        bus.hello = answer;
        for topic in [
            "worker.*.complete",
            "system.worker.terminated",
            "system.terminal.closed",
        ] {
            bus.send(subscribe(topic));
        }
        Ok(bus)
    }

    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Send a request and wait for its answer (an `ok:false` answer on transport failure).
    pub fn request(
        &self,
        req: Command,
        timeout: Duration,
        call: Option<&Call>,
    ) -> Result<Value, Fail> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut req = req.to_value();
        if let Some(o) = req.as_object_mut() {
            o.insert("id".into(), json!(id));
        }
        let (tx, rx) = mpsc::channel();
        lock(&self.pending).insert(id, tx);
        if let Err(e) = self.write(&req) {
            lock(&self.pending).remove(&id);
            return Ok(json!({"ok": false, "error": format!("bus connection: {e}")}));
        }
        let deadline = Instant::now() + timeout;
        loop {
            match rx.recv_timeout(SLICE) {
                Ok(v) => return Ok(v),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(json!({"ok": false, "error": "the bus connection closed"}))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if call.is_some_and(Call::cancelled) {
                        lock(&self.pending).remove(&id);
                        return Err(Fail::Cancelled);
                    }
                    if Instant::now() >= deadline {
                        lock(&self.pending).remove(&id);
                        return Ok(json!({"ok": false, "error": "bus request timed out"}));
                    }
                }
            }
        }
    }

    /// Send without waiting for the answer (best-effort events such as `tool.*.invoked`).
    pub fn send(&self, req: Command) {
        let _ = self.write(&req.to_value());
    }

    /// Take over `old`'s subscription to everything (a reconnect or a new identity).
    pub fn inherit(&self, old: &Bus) {
        if let Some(cursor) = lock(&old.subscribed_all).clone() {
            self.send(subscribe("**"));
            *lock(&self.subscribed_all) = Some(cursor);
        }
    }

    /// Publish `payload` on `topic`, best effort.
    pub fn publish(&self, topic: &str, payload: Value) {
        self.send(Command::Publish(Publish {
            topic: Some(topic.to_owned()),
            payload: Some(payload),
            echo: None,
        }));
    }

    fn write(&self, req: &Value) -> std::io::Result<()> {
        let mut line = req.to_string();
        line.push('\n');
        lock(&self.writer).write_all(line.as_bytes())
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = lock(&self.writer).shutdown(std::net::Shutdown::Both);
    }
}

fn read_loop(
    s: UnixStream,
    pending: &Mutex<HashMap<u64, mpsc::Sender<Value>>>,
    events: &(Mutex<Events>, Condvar),
    alive: &AtomicBool,
) {
    let mut conn = Conn::new(s, MAX_ANSWER);
    while let Ok(line) = conn.recv(None, None) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if v.get("push").and_then(Value::as_str) == Some("message") {
            lock(&events.0).push(&v);
            events.1.notify_all();
            continue;
        }
        let rid = v.get("rid").or_else(|| v.get("id")).and_then(Value::as_u64);
        if let Some(tx) = rid.and_then(|r| lock(pending).remove(&r)) {
            let _ = tx.send(v);
        }
    }
    alive.store(false, Ordering::Release);
    lock(pending).clear();
    events.1.notify_all();
}

/// Where the workspace is and how to reach its sockets.
#[derive(Debug, Clone)]
pub struct Place {
    pub root: PathBuf,
    pub control: PathBuf,
    pub claws: PathBuf,
}

impl Place {
    /// The workspace holding `dir`: the nearer of the service's own rule (the nearest
    /// `.openfiles/` or VCS root, else a project root) and the nearest served Claws socket
    /// (`.claws/claws.sock`, where Claws's clients look); else `dir` itself.
    pub fn find(dir: &Path, control: PathBuf) -> Place {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
        let by_rule = openfiles_gate::resolve::root_for(&dir).ok();
        let by_socket = dir
            .ancestors()
            .find(|d| d.join(".claws").join("claws.sock").exists())
            .map(Path::to_owned);
        let root = [by_rule, by_socket]
            .into_iter()
            .flatten()
            .max_by_key(|r| r.components().count())
            .unwrap_or(dir);
        Place {
            claws: root.join(".claws").join("claws.sock"),
            root,
            control,
        }
    }

    /// Resolve `p` against the workspace root.
    pub fn abs(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_owned()
        } else {
            self.root.join(p)
        }
    }
}

fn subscribe(topic: &str) -> Command {
    Command::Subscribe(Subscribe {
        topic: Some(topic.to_owned()),
        from_cursor: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_kept_once_and_worker_signals_remembered() {
        let mut ev = Events::default();
        let frame = |seq: u64, topic: &str, payload: Value| json!({"push": "message", "topic": topic, "from": "server", "payload": payload, "sentAt": 1, "sequence": seq});
        ev.push(&frame(
            1,
            "worker.7.complete",
            json!({"status": "completed"}),
        ));
        ev.push(&frame(
            1,
            "worker.7.complete",
            json!({"status": "completed"}),
        )); // second subscription
        ev.push(&frame(
            2,
            "system.terminal.closed",
            json!({"terminal_id": "8"}),
        ));
        ev.push(&frame(
            3,
            "system.worker.terminated",
            json!({"terminal_id": 9}),
        ));
        assert_eq!(ev.total, 3);
        assert_eq!(ev.ring.len(), 3);
        assert_eq!(ev.ring[0]["absoluteIndex"], 1);
        assert_eq!(ev.completed["7"]["status"], "completed");
        assert!(ev.terminated.contains("8") && ev.terminated.contains("9"));
        for seq in 10..(10 + RING as u64 + 5) {
            ev.push(&frame(seq, "x.y", Value::Null));
        }
        assert_eq!(ev.ring.len(), RING, "the ring is bounded");
    }
}
