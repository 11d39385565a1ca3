//! JSON-RPC transport over a language server's stdio.
//!
//! Owns the child process — a [`gate::Program`](openfiles_plugin_api::gate::Program) of its
//! workspace's scope, so it gets the environment of the workspace's trust — and three tasks: a reader (stdout → responses to the pending map,
//! server requests and notifications to the client's inbox), a writer (one queue, so
//! messages reach the server in the order they were sent) and a stderr logger (each line
//! goes to `tracing` and into a short ring buffer quoted when the server breaks).
//!
//! Framing: `Content-Length: N\r\n` (other headers ignored) then an empty line then N bytes
//! of UTF-8 JSON. A frame larger than [`MAX_FRAME`] or a header without a length closes the
//! connection: a server that breaks framing cannot be resynchronised.
//!
//! Every request has a timeout; on timeout, or when its caller stops waiting (the request's
//! future dropped: a cancelled question), the pending entry is dropped and
//! `$/cancelRequest` is sent. When the server's stdout closes, every pending request fails
//! with [`Error::StreamClosed`] and [`Transport::closed`] fires.

use openfiles_plugin_api::gate::Program;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader,
};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Largest frame accepted from a server (64 MiB).
pub const MAX_FRAME: usize = 64 << 20;
/// Lines of stderr kept for error messages.
const STDERR_KEEP: usize = 20;

/// Transport and RPC failures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("the server's output stream closed")]
    StreamClosed,
    #[error("no answer to `{method}` within {ms} ms")]
    Timeout { method: String, ms: u128 },
    #[error("server error {code} on `{method}`: {message}")]
    Rpc {
        method: String,
        code: i64,
        message: String,
    },
    #[error("{cause} (stderr: {stderr})")]
    Startup { cause: Box<Error>, stderr: String },
    #[error("bad answer to `{method}`: {source}")]
    Decode {
        method: String,
        source: serde_json::Error,
    },
}

/// A message the server sent that is not a response.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, (i64, String)>>>>>;

/// One running server process and its JSON-RPC connection.
pub struct Transport {
    name: String,
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next_id: AtomicI64,
    closed: CancellationToken,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_done: CancellationToken,
    child: Mutex<Option<Child>>,
    pid: Option<u32>,
}

impl Transport {
    /// Spawn `program args…` in `cwd`; return the transport and the inbox of server messages.
    pub fn spawn(
        name: &str,
        program: &Program,
        args: &[String],
        cwd: &std::path::Path,
    ) -> Result<(Arc<Transport>, mpsc::UnboundedReceiver<Incoming>), Error> {
        let mut child = Command::from(program.command(args))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| Error::Spawn {
                command: program.path().display().to_string(),
                source,
            })?;
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    return Err(Error::Spawn {
                        command: program.path().display().to_string(),
                        source: std::io::Error::other("stdio not captured"),
                    })
                }
            };
        let pid = child.id();
        let (transport, inbox) = Self::connect(name, BufReader::new(stdout), stdin);
        let transport = Arc::new(Transport {
            child: Mutex::new(Some(child)),
            pid,
            ..transport
        });
        let tail = transport.stderr_tail.clone();
        let done = transport.stderr_done.clone();
        let name = name.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(server = %name, "stderr: {line}");
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                if t.len() == STDERR_KEEP {
                    t.pop_front();
                }
                t.push_back(line);
            }
            done.cancel();
        });
        Ok((transport, inbox))
    }

    /// Wire a transport over any byte streams (used by `spawn` and by tests).
    pub fn connect<R, W>(
        name: &str,
        reader: R,
        writer: W,
    ) -> (Transport, mpsc::UnboundedReceiver<Incoming>)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out_tx, out_rx) = mpsc::unbounded_channel();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let pending: Pending = Arc::default();
        let closed = CancellationToken::new();
        tokio::spawn(write_loop(writer, out_rx, closed.clone()));
        tokio::spawn(read_loop(
            name.to_owned(),
            reader,
            pending.clone(),
            in_tx,
            closed.clone(),
        ));
        let t = Transport {
            name: name.to_owned(),
            out: out_tx,
            pending,
            next_id: AtomicI64::new(1),
            closed,
            stderr_tail: Arc::default(),
            stderr_done: CancellationToken::new(),
            child: Mutex::new(None),
            pid: None,
        };
        (t, in_rx)
    }

    /// Process id of the server, when it is a child process.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Fires when the server's output closed (it exited or broke framing).
    pub fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// Wait (at most `bound`) until the server's stderr is closed, so its last words are kept.
    pub async fn stderr_closed(&self, bound: Duration) {
        let _ = tokio::time::timeout(bound, self.stderr_done.cancelled()).await;
    }

    /// The last lines the server wrote to stderr, joined.
    pub fn stderr_tail(&self) -> String {
        let t = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        t.iter()
            .rev()
            .take(3)
            .rev()
            .cloned()
            .collect::<Vec<_>>()
            .join(" | ")
    }

    fn send(&self, msg: &Value) {
        // A closed writer means the server is gone; the caller learns it from `closed`.
        let _ = self.out.send(msg.to_string().into_bytes());
    }

    /// Send a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Answer a server request.
    pub fn respond(&self, id: Value, result: Result<Value, (i64, String)>) {
        let msg = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
            }
        };
        self.send(&msg);
    }

    /// Send a request and wait for its answer at most `timeout`.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Error> {
        if self.closed.is_cancelled() {
            return Err(Error::StreamClosed);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        // Dropped before the answer (its asker gave up: a cancelled question or check) or
        // timed out: the server is told to stop working on it.
        let mut outstanding = Outstanding {
            transport: self,
            id,
            answered: false,
        };
        let answer = tokio::select! {
            r = rx => r,
            _ = tokio::time::sleep(timeout) => {
                drop(outstanding);
                tracing::debug!(server = %self.name, method, "request timed out; cancelled");
                return Err(Error::Timeout { method: method.to_owned(), ms: timeout.as_millis() });
            }
        };
        outstanding.answered = true;
        match answer {
            Ok(Ok(v)) => Ok(v),
            Ok(Err((code, message))) => Err(Error::Rpc {
                method: method.to_owned(),
                code,
                message,
            }),
            Err(_) => Err(Error::StreamClosed),
        }
    }

    /// How many requests await their answer.
    pub fn pending(&self) -> usize {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Kill the process (if still running) and wait for it.
    pub async fn kill(&self) {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut child) = child {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    /// Wait up to `grace` for the process to exit by itself, then kill it.
    pub async fn reap(&self, grace: Duration) {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut child) = child {
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    closed: CancellationToken,
) {
    loop {
        let body = tokio::select! {
            b = rx.recv() => match b { Some(b) => b, None => break },
            _ = closed.cancelled() => break,
        };
        tracing::trace!("-> {}", String::from_utf8_lossy(&body));
        let header = format!("Content-Length: {}\r\n\r\n", body.len());
        let ok = w.write_all(header.as_bytes()).await.is_ok()
            && w.write_all(&body).await.is_ok()
            && w.flush().await.is_ok();
        if !ok {
            break;
        }
    }
    let _ = w.shutdown().await;
}

/// Read one frame; `Ok(None)` at a clean end of stream.
pub async fn read_frame<R: AsyncBufRead + Unpin>(r: &mut R) -> std::io::Result<Option<Vec<u8>>> {
    let mut len: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let l = line.trim_end();
        if l.is_empty() {
            if len.is_some() {
                break;
            }
            continue; // stray blank line between frames
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok();
            }
        }
    }
    let n = len.unwrap_or(0);
    if n > MAX_FRAME {
        return Err(std::io::Error::other(format!(
            "frame of {n} bytes exceeds the cap"
        )));
    }
    let mut body = vec![0; n];
    r.read_exact(&mut body).await?;
    Ok(Some(body))
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    name: String,
    mut r: R,
    pending: Pending,
    inbox: mpsc::UnboundedSender<Incoming>,
    closed: CancellationToken,
) {
    loop {
        let body = match read_frame(&mut r).await {
            Ok(Some(b)) => b,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(server = %name, "reading from server: {e}");
                break;
            }
        };
        tracing::trace!(server = %name, "<- {}", String::from_utf8_lossy(&body));
        let mut msg: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(server = %name, "unparseable message from server: {e}");
                continue;
            }
        };
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let params = msg
            .get_mut("params")
            .map(Value::take)
            .unwrap_or(Value::Null);
        match (method, msg.get_mut("id").map(Value::take)) {
            (Some(method), Some(id)) => {
                let _ = inbox.send(Incoming::Request { id, method, params });
            }
            (Some(method), None) => {
                let _ = inbox.send(Incoming::Notification { method, params });
            }
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let tx = pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                let Some(tx) = tx else { continue }; // timed out and cancelled already
                let result = match msg.get_mut("error") {
                    Some(err) => Err((
                        err.get("code").and_then(Value::as_i64).unwrap_or(0),
                        err.get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                    )),
                    None => Ok(msg
                        .get_mut("result")
                        .map(Value::take)
                        .unwrap_or(Value::Null)),
                };
                let _ = tx.send(result);
            }
            (None, None) => tracing::debug!(server = %name, "message with neither id nor method"),
        }
    }
    closed.cancel();
    pending.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// A request sent and not yet answered: dropped unanswered, its pending entry goes and the
/// server gets `$/cancelRequest`.
struct Outstanding<'a> {
    transport: &'a Transport,
    id: i64,
    answered: bool,
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let t = self.transport;
        t.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        t.notify("$/cancelRequest", json!({"id": self.id}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_requests_match_answers() {
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let (cr, cw) = tokio::io::split(client_io);
        let (t, mut inbox) = Transport::connect("t", BufReader::new(cr), cw);
        let (sr, mut sw) = tokio::io::split(server_io);
        let mut sr = BufReader::new(sr);
        let server = tokio::spawn(async move {
            let req: Value =
                serde_json::from_slice(&read_frame(&mut sr).await.unwrap().unwrap()).unwrap();
            assert_eq!(req["method"], "ping");
            // A server request, a notification, then the answer.
            for m in [
                json!({"jsonrpc":"2.0","id":"s1","method":"weird/request","params":{}}),
                json!({"jsonrpc":"2.0","method":"note","params":[1]}),
                json!({"jsonrpc":"2.0","id":req["id"],"result":{"pong":true}}),
            ] {
                let b = m.to_string();
                sw.write_all(
                    format!("Content-Length: {}\r\nContent-Type: x\r\n\r\n{b}", b.len()).as_bytes(),
                )
                .await
                .unwrap();
            }
            // The second request never gets an answer: expect a cancel for it.
            let req2: Value =
                serde_json::from_slice(&read_frame(&mut sr).await.unwrap().unwrap()).unwrap();
            let cancel: Value =
                serde_json::from_slice(&read_frame(&mut sr).await.unwrap().unwrap()).unwrap();
            assert_eq!(cancel["method"], "$/cancelRequest");
            assert_eq!(cancel["params"]["id"], req2["id"]);
        });
        let r = t
            .request("ping", json!({}), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(r, json!({"pong": true}));
        assert!(
            matches!(inbox.recv().await, Some(Incoming::Request { method, .. }) if method == "weird/request")
        );
        assert!(
            matches!(inbox.recv().await, Some(Incoming::Notification { method, .. }) if method == "note")
        );
        let e = t
            .request("slow", json!({}), Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(matches!(e, Error::Timeout { .. }), "{e}");
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_request_its_caller_drops_is_cancelled_at_the_server() {
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let (cr, cw) = tokio::io::split(client_io);
        let (t, _inbox) = Transport::connect("t", BufReader::new(cr), cw);
        let (sr, _sw) = tokio::io::split(server_io);
        let mut sr = BufReader::new(sr);
        let asked = t.request(
            "textDocument/references",
            json!({}),
            Duration::from_secs(60),
        );
        // The caller gives up (a cancelled question drops its future) long before the timeout.
        let gave_up = tokio::time::timeout(Duration::from_millis(100), asked).await;
        assert!(gave_up.is_err());
        let req: Value =
            serde_json::from_slice(&read_frame(&mut sr).await.unwrap().unwrap()).unwrap();
        let cancel: Value =
            serde_json::from_slice(&read_frame(&mut sr).await.unwrap().unwrap()).unwrap();
        assert_eq!(cancel["method"], "$/cancelRequest");
        assert_eq!(cancel["params"]["id"], req["id"]);
        assert_eq!(t.pending(), 0);
    }
}
