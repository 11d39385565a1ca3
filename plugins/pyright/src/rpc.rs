//! A small blocking JSON-RPC client over a language server's stdio, for [`crate::server`]:
//! `Content-Length` framing, one reader thread that keeps what the server pushed (its
//! diagnostics per document, its work-done progress, when it last said anything) in a
//! [`Pushed`] behind a condition variable, and answers to the few requests a server makes
//! of its client (`workspace/configuration` from the given settings, anything else `null`),
//! and the answers to the client's own requests ([`Conn::request`]: the ride's pulls).
//!
//! Why not the lsp plugin's transport: that one is async (tokio) and made for many servers
//! with requests and timeouts; the pyright plugin only notifies and listens, and plugins
//! cannot depend on each other (see ARCHITECTURE.md).

use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// Largest frame accepted from a server (64 MiB).
const MAX_FRAME: usize = 64 << 20;

/// What the server pushed, as the reader thread keeps it.
#[derive(Debug)]
pub struct Pushed {
    /// The last diagnostics published per document URI.
    pub diagnostics: HashMap<String, Vec<Value>>,
    /// How many times each document's diagnostics were published.
    pub published: HashMap<String, u64>,
    /// Work-done progress tokens created or begun and not yet ended.
    pub active: HashSet<String>,
    /// Counts every progress `end`.
    pub ended: u64,
    /// Counts the diagnostics pushed and the progress reported (not log lines or requests).
    pub events: u64,
    /// When the last of those came.
    pub last_event: Instant,
    /// The answer to `initialize` came.
    pub initialized: bool,
    /// The server's output closed (it exited or broke framing).
    pub closed: bool,
    /// The answers to [`Conn::request`]s awaited (`None`: not yet), by id: the answer's
    /// `result`, or its `error`.
    pub answers: HashMap<u64, Option<Result<Value, Value>>>,
}

impl Pushed {
    /// Take the answer to request `id`, once it came.
    pub fn take_answer(&mut self, id: u64) -> Option<Result<Value, Value>> {
        let done = self.answers.get(&id).is_some_and(Option::is_some);
        done.then(|| self.answers.remove(&id)).flatten().flatten()
    }
}

/// The first id of the client's own requests (below: `initialize`'s and `shutdown`'s).
const FIRST_REQUEST: u64 = 1_000;

/// The connection: what was pushed, and the server's stdin.
pub struct Conn {
    state: Arc<(Mutex<Pushed>, Condvar)>,
    stdin: Arc<Mutex<ChildStdin>>,
    next_id: AtomicU64,
}

impl Conn {
    /// Start reading `stdout`; `settings(section)` answers `workspace/configuration`.
    pub fn start(
        stdin: ChildStdin,
        stdout: ChildStdout,
        settings: fn(&str) -> Value,
    ) -> std::io::Result<Conn> {
        let state = Arc::new((
            Mutex::new(Pushed {
                diagnostics: HashMap::new(),
                published: HashMap::new(),
                active: HashSet::new(),
                ended: 0,
                events: 0,
                last_event: Instant::now(),
                initialized: false,
                closed: false,
                answers: HashMap::new(),
            }),
            Condvar::new(),
        ));
        let stdin = Arc::new(Mutex::new(stdin));
        let (st, input) = (state.clone(), stdin.clone());
        std::thread::Builder::new()
            .name("pyright-ls-reader".into())
            .spawn(move || {
                let mut reader = BufReader::new(stdout);
                while let Some(msg) = read_frame(&mut reader) {
                    if let Some(answer) = handle(&st, msg, settings) {
                        let mut w = input.lock().unwrap_or_else(|e| e.into_inner());
                        let _ = write_frame(&mut *w, &answer);
                    }
                }
                let (m, cv) = &*st;
                m.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
                cv.notify_all();
            })?;
        Ok(Conn {
            state,
            stdin,
            next_id: AtomicU64::new(FIRST_REQUEST),
        })
    }

    /// Send a message (a request or a notification).
    pub fn send(&self, msg: &Value) -> std::io::Result<()> {
        let mut w = self.stdin.lock().unwrap_or_else(|e| e.into_inner());
        write_frame(&mut *w, msg)
    }

    pub fn notify(&self, method: &str, params: Value) -> std::io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Send request `method`; its answer comes to [`Pushed::take_answer`] under the id
    /// returned (forget it with [`Conn::forget`] when it is no longer awaited).
    pub fn request(&self, method: &str, params: Value) -> std::io::Result<u64> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.pushed().answers.insert(id, None);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(e) = self.send(&msg) {
            self.pushed().answers.remove(&id);
            return Err(e);
        }
        Ok(id)
    }

    /// Stop awaiting request `id` (the server is asked to cancel it; its answer is dropped).
    pub fn forget(&self, id: u64) {
        if self.pushed().answers.remove(&id).is_some() {
            let _ = self.notify("$/cancelRequest", json!({ "id": id }));
        }
    }

    /// What was pushed so far.
    pub fn pushed(&self) -> MutexGuard<'_, Pushed> {
        self.state.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for the next push (or `ms`), then look at what was pushed.
    pub fn wait(&self, ms: u64) -> MutexGuard<'_, Pushed> {
        let (m, cv) = &*self.state;
        let guard = m.lock().unwrap_or_else(|e| e.into_inner());
        cv.wait_timeout(guard, std::time::Duration::from_millis(ms))
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0)
    }
}

/// Record `msg` in the state; the answer to send if it is a request.
fn handle(
    state: &(Mutex<Pushed>, Condvar),
    msg: Value,
    settings: fn(&str) -> Value,
) -> Option<Value> {
    let (m, cv) = state;
    let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let answer = match (method, msg.get("id")) {
        ("", Some(id)) => {
            if *id == json!(1) {
                s.initialized = true;
            }
            if let Some(slot) = id.as_u64().and_then(|id| s.answers.get_mut(&id)) {
                *slot = Some(match msg.get("error") {
                    Some(e) => Err(e.clone()),
                    None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                });
            }
            None
        }
        ("workspace/configuration", Some(id)) => {
            let items = params.get("items").and_then(Value::as_array);
            let result: Vec<Value> = items
                .into_iter()
                .flatten()
                .map(|i| settings(i.get("section").and_then(Value::as_str).unwrap_or("")))
                .collect();
            Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
        }
        ("window/workDoneProgress/create", Some(id)) => {
            // Progress is on its way: pyright asks for the token as it starts analysing (its
            // `begin` comes with the first chunk's results, which can take a second).
            if let Some(token) = params.get("token") {
                s.active.insert(token.to_string());
            }
            s.events += 1;
            s.last_event = Instant::now();
            Some(json!({"jsonrpc": "2.0", "id": id, "result": null}))
        }
        (_, Some(id)) => Some(json!({"jsonrpc": "2.0", "id": id, "result": null})),
        ("textDocument/publishDiagnostics", None) => {
            if let Some(uri) = params.get("uri").and_then(Value::as_str) {
                let d = params.get("diagnostics").and_then(Value::as_array);
                s.diagnostics
                    .insert(uri.to_owned(), d.cloned().unwrap_or_default());
                *s.published.entry(uri.to_owned()).or_default() += 1;
            }
            s.events += 1;
            s.last_event = Instant::now();
            None
        }
        ("$/progress", None) => {
            let token = params
                .get("token")
                .map(Value::to_string)
                .unwrap_or_default();
            match params.pointer("/value/kind").and_then(Value::as_str) {
                Some("begin") => {
                    s.active.insert(token);
                }
                Some("end") => {
                    s.active.remove(&token);
                    s.ended += 1;
                }
                _ => {}
            }
            s.events += 1;
            s.last_event = Instant::now();
            None
        }
        _ => None,
    };
    drop(s);
    cv.notify_all();
    answer
}

/// One frame's JSON; `None` at the end of the stream or on broken framing.
fn read_frame(r: &mut impl BufRead) -> Option<Value> {
    loop {
        let mut len = None;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse::<usize>().ok();
                }
            }
        }
        let len = len.filter(|n| *n <= MAX_FRAME)?;
        let mut body = vec![0; len];
        r.read_exact(&mut body).ok()?;
        if let Ok(v) = serde_json::from_slice(&body) {
            return Some(v);
        }
        // A frame that is not JSON: skip it, the framing is intact.
    }
}

fn write_frame(w: &mut impl Write, msg: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(msg)?;
    write!(w, "Content-Length: {}\r\n\r\n", body.len())?;
    w.write_all(&body)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_bad_framing_ends_the_stream() {
        let mut out = Vec::new();
        write_frame(&mut out, &json!({"a": 1})).unwrap();
        write_frame(&mut out, &json!({"b": "é"})).unwrap();
        let mut r = std::io::Cursor::new(out);
        assert_eq!(read_frame(&mut r), Some(json!({"a": 1})));
        assert_eq!(read_frame(&mut r), Some(json!({"b": "é"})));
        assert_eq!(read_frame(&mut r), None);
        let mut bad = std::io::Cursor::new(b"Content-Type: x\r\n\r\n{}".to_vec());
        assert_eq!(
            read_frame(&mut bad),
            None,
            "no length: cannot resynchronise"
        );
        let huge = format!("Content-Length: {}\r\n\r\n", MAX_FRAME + 1);
        assert_eq!(
            read_frame(&mut std::io::Cursor::new(huge.into_bytes())),
            None
        );
    }
}
