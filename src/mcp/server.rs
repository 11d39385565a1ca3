//! The MCP server loop: JSON-RPC 2.0 over stdio, one message per line (the MCP stdio
//! transport), the lifecycle (`initialize` with version negotiation, `notifications/
//! initialized`), `ping`, `tools/list`, `tools/call`, `notifications/cancelled`, and
//! `notifications/progress` for long calls whose request carries a `progressToken`.
//!
//! Threads, not a runtime: the main thread reads stdin and answers the cheap requests
//! inline (so `initialize` is answered within a few milliseconds of the process start);
//! each `tools/call` runs on its own thread (reused, `pool.rs`) with a cancellation flag, so a long call
//! (`claws_exec`, a blocking worker, a diagnostics wait) never holds up the others and a
//! `notifications/cancelled` for it is seen at once by the reader and, within 100 ms, by
//! the call (every blocking read and sleep of a handler polls the flag). A cancelled call
//! sends no response, as the MCP specification asks. The sockets' clients are blocking,
//! like the CLI's; a runtime would add start-up time and memory and buy nothing here.
//! Output lines are written whole under one mutex. A handler that panics answers with a
//! tool error instead of taking the server down.

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::call::{Call, Fail, Out};
use super::catalog::{self, catalog};
use super::link::{self, Bus, Place};
use super::pool::Pool;
use openfiles_wire::control::{Add, PathArg, Status, StatusReply};

/// Protocol versions we speak, oldest first; the last is what we offer by default.
pub const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What the tool handlers share.
pub struct Ctx {
    pub place: Place,
    service_ok: Mutex<bool>,
    claws_enabled: Mutex<Option<bool>>,
    claws_seen: AtomicBool,
    bus: Mutex<Option<Arc<Bus>>>,
    identity: Mutex<Value>,
    /// Stop flags of detached worker watchers, by terminal id.
    pub watchers: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// Results of finished workers, by terminal id (for `claws_workers_wait`).
    finished: Mutex<HashMap<String, Value>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ctx {
    pub fn new(place: Place) -> Ctx {
        Ctx {
            place,
            service_ok: Mutex::new(false),
            claws_enabled: Mutex::new(None),
            claws_seen: AtomicBool::new(false),
            bus: Mutex::new(None),
            identity: Mutex::new(json!({"role": "orchestrator", "peerName": "openfiles-mcp"})),
            watchers: Mutex::default(),
            finished: Mutex::default(),
        }
    }

    pub fn record_finished(&self, id: &str, result: &Value) {
        lock(&self.finished).insert(id.to_owned(), result.clone());
    }

    pub fn finished(&self, id: &str) -> Option<Value> {
        lock(&self.finished).get(id).cloned()
    }

    /// A new terminal reusing an id must not inherit an old result.
    pub fn forget_finished(&self, id: &str) {
        lock(&self.finished).remove(id);
        if let Some(b) = lock(&self.bus).as_ref() {
            let mut ev = lock(&b.events.0);
            ev.completed.remove(id);
            ev.terminated.remove(id);
        }
    }

    /// Make sure the service runs and serves the workspace (connecting wakes a
    /// socket-activated service; `add` registers the folder). Retried until it works.
    pub fn service(&self, call: Option<&Call>) -> Result<(), Fail> {
        let mut ok = lock(&self.service_ok);
        if *ok {
            return Ok(());
        }
        link::control_as(
            &self.place.control,
            &Add(PathArg {
                path: self.place.root.clone(),
                force: false,
            }),
            Duration::from_secs(15),
            call,
        )?;
        *ok = true;
        Ok(())
    }

    /// The Claws socket of the workspace, once the service serves it.
    pub fn claws(&self, call: Option<&Call>) -> Result<&std::path::Path, Fail> {
        let sock = self.place.claws.as_path();
        // Once seen, trust it: a vanished socket shows as a connection error anyway.
        if self.claws_seen.load(Ordering::Relaxed) || sock.exists() {
            self.claws_seen.store(true, Ordering::Relaxed);
            return Ok(sock);
        }
        self.service(call)?;
        let enabled = *lock(&self.claws_enabled);
        if enabled.is_none() {
            let st: StatusReply =
                link::control_as(&self.place.control, &Status, Duration::from_secs(10), call)?;
            let served = st
                .workspaces
                .iter()
                .find(|w| w.root == self.place.root)
                .and_then(|w| w.claws_socket.as_ref())
                .is_some();
            *lock(&self.claws_enabled) = Some(served);
        }
        // A workspace just added may bind its socket a moment after `add` answered.
        if *lock(&self.claws_enabled) == Some(true) {
            let until = std::time::Instant::now() + Duration::from_secs(3);
            while !sock.exists() && std::time::Instant::now() < until {
                if let Some(c) = call {
                    c.sleep(Duration::from_millis(20))?;
                } else {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        if sock.exists() {
            return Ok(sock);
        }
        Err(Fail::Tool(format!(
            "ERROR: no Claws socket at {} (is `[claws] enabled = false` in the configuration?)",
            sock.display()
        )))
    }

    /// The bus connection, (re)connected with the current identity when needed.
    pub fn bus(&self, call: Option<&Call>) -> Result<Arc<Bus>, Fail> {
        let sock = self.claws(call)?.to_owned();
        let mut slot = lock(&self.bus);
        if let Some(b) = slot.as_ref().filter(|b| b.alive()) {
            return Ok(b.clone());
        }
        let events = slot.as_ref().map(|b| b.events.clone());
        let identity = lock(&self.identity).clone();
        let bus = Arc::new(Bus::connect(&sock, &identity, events)?);
        if let Some(old) = slot.as_ref() {
            bus.inherit(old);
        }
        *slot = Some(bus.clone());
        Ok(bus)
    }

    /// Replace the bus identity (`claws_hello`) and reconnect with it.
    pub fn rehello(&self, identity: Value, call: Option<&Call>) -> Result<Arc<Bus>, Fail> {
        *lock(&self.identity) = identity;
        let old = lock(&self.bus).take();
        if let Some(old) = old {
            // Keep the received messages; a new connection starts clean otherwise.
            let sock = self.claws(call)?.to_owned();
            let identity = lock(&self.identity).clone();
            let bus = Arc::new(Bus::connect(&sock, &identity, Some(old.events.clone()))?);
            bus.inherit(&old);
            *lock(&self.bus) = Some(bus.clone());
            return Ok(bus);
        }
        self.bus(call)
    }

    /// The bus if it is (or can be) connected; `None` when Claws is unavailable.
    pub fn bus_if_any(&self, call: Option<&Call>) -> Option<Arc<Bus>> {
        self.bus(call).ok()
    }
}

/// Serve MCP on `input`/`out` until `input` ends.
/// `warmup` runs once the first message is answered (so it never delays `initialize`).
pub fn serve(ctx: Arc<Ctx>, input: impl BufRead, out: Out, warmup: impl FnOnce()) {
    let mut warmup = Some(warmup);
    let inflight: Arc<Mutex<HashMap<String, Arc<AtomicBool>>>> = Arc::default();
    let pool = Pool::default();
    let mut input = input;
    loop {
        let line = match next_message(&mut input, MAX_MESSAGE) {
            Message::End => break,
            Message::TooLong => {
                out.send(&error(
                    &Value::Null,
                    -32600,
                    &format!("message longer than {MAX_MESSAGE} bytes: skipped"),
                ));
                continue;
            }
            Message::Line(l) => l,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(&line) {
            Ok(Value::Array(batch)) if batch.is_empty() => {
                out.send(&error(&Value::Null, -32600, "invalid request: empty batch"));
            }
            Ok(Value::Array(batch)) => {
                for msg in batch {
                    one_message(&ctx, &out, &inflight, &pool, msg);
                }
            }
            Ok(msg) => one_message(&ctx, &out, &inflight, &pool, msg),
            Err(e) => out.send(&error(&Value::Null, -32700, &format!("parse error: {e}"))),
        }
        if let Some(w) = warmup.take() {
            w();
        }
    }
}

/// Largest message read from the client; a longer line is skipped (answered with an error)
/// without being held in memory.
pub const MAX_MESSAGE: usize = 16 << 20;

enum Message {
    Line(Vec<u8>),
    TooLong,
    End,
}

/// The next line of `input` (without its newline), at most `cap` bytes: a longer one is
/// read past and dropped. Bytes that are not UTF-8 are the parser's to refuse, not an end.
fn next_message(input: &mut impl BufRead, cap: usize) -> Message {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let (done, used) = match input.fill_buf() {
            Ok([]) => {
                return match (too_long, line.is_empty()) {
                    (true, _) => Message::TooLong,
                    (false, true) => Message::End,
                    (false, false) => Message::Line(line),
                };
            }
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    if !too_long && line.len() + i <= cap {
                        line.extend_from_slice(&buf[..i]);
                    } else {
                        too_long = true;
                    }
                    (true, i + 1)
                }
                None => {
                    if !too_long && line.len() + buf.len() <= cap {
                        line.extend_from_slice(buf);
                    } else {
                        too_long = true;
                        line = Vec::new();
                    }
                    (false, buf.len())
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Message::End,
        };
        input.consume(used);
        if done {
            return if too_long {
                Message::TooLong
            } else {
                Message::Line(line)
            };
        }
    }
}

/// One message of the client: a JSON-RPC object, else an invalid request.
fn one_message(
    ctx: &Arc<Ctx>,
    out: &Out,
    inflight: &Arc<Mutex<HashMap<String, Arc<AtomicBool>>>>,
    pool: &Pool,
    msg: Value,
) {
    if !msg.is_object() {
        return out.send(&error(
            &Value::Null,
            -32600,
            "invalid request: not a JSON-RPC object",
        ));
    }
    handle(ctx, out, inflight, pool, msg);
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn handle(
    ctx: &Arc<Ctx>,
    out: &Out,
    inflight: &Arc<Mutex<HashMap<String, Arc<AtomicBool>>>>,
    pool: &Pool,
    msg: Value,
) {
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        return; // a response to nothing we asked, or garbage without an id
    };
    let params = msg.get("params").cloned().unwrap_or(Value::Null);
    let Some(id) = msg.get("id").cloned() else {
        if method == "notifications/cancelled" {
            if let Some(rid) = params.get("requestId") {
                if let Some(flag) = lock(inflight).get(&rid.to_string()) {
                    flag.store(true, Ordering::Release);
                }
            }
        }
        return; // other notifications (initialized, roots changed…) need nothing
    };
    match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let version = asked
                .filter(|v| VERSIONS.contains(v))
                .unwrap_or(VERSIONS[VERSIONS.len() - 1]);
            out.send(&result(
                &id,
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "openfiles", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": "openfiles: diagnostics of the files you edit (openfiles_diagnostics, openfiles_check; openfiles_fix applies the checkers' own fixes), code navigation on the same language servers (openfiles_definition, openfiles_references, openfiles_hover, openfiles_symbols) and Claws terminals, workers and bus (claws_*) for the workspace.",
                }),
            ));
        }
        "ping" => out.send(&result(&id, json!({}))),
        "tools/list" => out.send(&result(&id, catalog().list_json.clone())),
        "tools/call" => {
            let key = id.to_string();
            let cancel = Arc::new(AtomicBool::new(false));
            lock(inflight).insert(key.clone(), cancel.clone());
            let token = params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .cloned();
            let call = Call::new(cancel, token, out.clone());
            let (ctx2, out2, inflight2) = (ctx.clone(), out.clone(), inflight.clone());
            let spawned = pool.run(Box::new(move || {
                run_call(&ctx2, &call, &id, &params, &|answer| {
                    lock(&inflight2).remove(&key);
                    if !call.cancelled() {
                        out2.send(answer);
                    }
                });
            }));
            if spawned.is_err() {
                lock(inflight).remove(&msg["id"].to_string());
                out.send(&error(
                    &msg["id"],
                    -32603,
                    "cannot start a thread for the call",
                ));
            }
        }
        other => out.send(&error(&id, -32601, &format!("method not found: {other}"))),
    }
}

/// Run one `tools/call` and hand its answer to `answer` (not called when cancelled); the
/// `tool.<name>.completed|failed` event goes out after the answer, off the caller's path.
fn run_call(ctx: &Arc<Ctx>, call: &Call, id: &Value, params: &Value, answer: &dyn Fn(&Value)) {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let Some(tool) = catalog().get(name) else {
        return answer(&error(id, -32602, &format!("unknown tool: {name}")));
    };
    let args = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(a) => a.clone(),
    };
    if let Err(e) = catalog::validate(&tool.input_schema, &args) {
        return answer(&error(id, -32602, &format!("{name}: {e}")));
    }
    let bus = name
        .starts_with("claws_")
        .then(|| ctx.bus_if_any(Some(call)))
        .flatten();
    // Long calls announce themselves first; short ones after their answer (off the
    // caller's path), the two events in order.
    let announce = || {
        if let Some(b) = &bus {
            let keys: Vec<&String> = args
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            b.publish(
                &format!("tool.{name}.invoked"),
                json!({"peerId": b.peer_id, "toolName": name, "args_keys": keys}),
            );
        }
    };
    let long = LONG_TOOLS.contains(&name);
    if long {
        announce();
    }
    let started = std::time::Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        super::dispatch_structured(ctx, call, tool, &args)
    }))
    .unwrap_or_else(|_| Err(Fail::Tool("ERROR: internal error in the tool".into())));
    let ms = started.elapsed().as_millis() as u64;
    let topic = match outcome {
        Err(Fail::Cancelled) => return,
        Err(Fail::Invalid(e)) => {
            answer(&error(id, -32602, &format!("{name}: {e}")));
            "failed"
        }
        Err(Fail::Tool(text)) => {
            answer(&result(
                id,
                json!({"content": [{"type": "text", "text": text}], "isError": true}),
            ));
            "failed"
        }
        Ok((text, structured)) => {
            let mut body = json!({"content": [{"type": "text", "text": text}]});
            if let Some(s) = structured {
                body["structuredContent"] = s;
            }
            answer(&result(id, body));
            "completed"
        }
    };
    if !long {
        announce();
    }
    if let Some(b) = &bus {
        b.publish(&format!("tool.{name}.{topic}"), json!({"duration_ms": ms}));
    }
}

/// Tools that may run for seconds or more: their `invoked` event goes out before they run.
const LONG_TOOLS: &[&str] = &[
    "claws_exec",
    "claws_worker",
    "claws_fleet",
    "claws_workers_wait",
    "claws_dispatch_subworker",
    "claws_drain_events",
    "claws_rpc_call",
];
