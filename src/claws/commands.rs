//! claws/1 command handlers (`list`, `create`, `show`, `send`, `exec`, `readLog`, `poll`,
//! `close`, `introspect`, `ping`, `resize`) and the dispatch that also routes the claws/2
//! bus commands. One exhaustive `match` on the command name; each handler returns the
//! answer body or the error string the notes fix verbatim.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::bus::Replay;
use super::conn::Connection;
use super::proto::{body, Request, COMPATIBLE_EXTENSION_VERSION, PROTOCOL, PROTOCOL_2};
use super::terminal::{CreateOpts, ExecOutcome, Terminal, CLOSE_GRACE};
use super::{now_ms, ServerState};

/// `readLog`'s cap on one page.
pub const READ_LIMIT: u64 = 512 << 10;
const DEGRADED_NOTE: &str =
    "no shell integration active; output not captured via exec — use readLog on wrapped terminals";

/// What the connection writes for one request.
pub struct Answer {
    pub protocol: &'static str,
    pub body: Result<Map<String, Value>, String>,
    /// Stored events to stream after the answer (`subscribe` with `fromCursor`).
    pub replay: Option<Replay>,
}

impl From<Result<Map<String, Value>, String>> for Answer {
    fn from(body: Result<Map<String, Value>, String>) -> Answer {
        Answer {
            protocol: PROTOCOL,
            body,
            replay: None,
        }
    }
}

type Body = Result<Map<String, Value>, String>;

pub async fn dispatch(shared: &Arc<ServerState>, conn: &Connection, req: &Request) -> Answer {
    if let Some(e) = req.protocol_error() {
        return Err(e).into();
    }
    if let Some(v) = req.str("clientVersion") {
        shared.drift.check(req.str("clientName"), v);
    }
    let cmd = match req.map.get("cmd") {
        Some(Value::String(s)) => s.as_str(),
        Some(v) => return Err(format!("unknown cmd: {v}")).into(),
        None => return Err("unknown cmd: undefined".to_owned()).into(),
    };
    match cmd {
        "ping" => Ok(body(json!({"serverTime": now_ms()}))).into(),
        "list" => Ok(list(shared)).into(),
        "create" => create(shared, req).into(),
        "show" => with_terminal(shared, req, |_| Ok(Map::new())).into(),
        "send" => send(shared, req).into(),
        "exec" => exec(shared, req).await.into(),
        "readLog" => read_log(shared, req).into(),
        "poll" => poll(shared, req).into(),
        "close" => close(shared, req).into(),
        "resize" => with_terminal(shared, req, |t| {
            let cols = req.u64("cols").unwrap_or(80).clamp(1, 1000) as u16;
            let rows = req.u64("rows").unwrap_or(24).clamp(1, 1000) as u16;
            t.resize(cols, rows)
                .map_err(|e| format!("resize failed: {e}"))?;
            Ok(Map::new())
        })
        .into(),
        "introspect" => Ok(introspect(shared)).into(),
        "hello" => Answer {
            protocol: PROTOCOL_2,
            body: shared.bus.hello(conn, req),
            replay: None,
        },
        "subscribe" => match shared.bus.subscribe(conn, req) {
            Ok((b, replay)) => Answer {
                protocol: PROTOCOL,
                body: Ok(b),
                replay,
            },
            Err(e) => Err(e).into(),
        },
        "unsubscribe" => shared.bus.unsubscribe(conn, req).into(),
        "publish" => shared.bus.publish(conn, req).into(),
        "broadcast" => shared.bus.broadcast(conn, req).into(),
        other => Err(format!("unknown cmd: {other}")).into(),
    }
}

/// The terminal id a request names (`terminalId`, else `id`), as the client spelled it.
fn term_arg(req: &Request) -> Option<String> {
    let v = req.map.get("terminalId").or_else(|| req.map.get("id"))?;
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn find(shared: &ServerState, req: &Request) -> Result<Arc<Terminal>, String> {
    let raw = term_arg(req).unwrap_or_else(|| "undefined".into());
    raw.trim()
        .parse::<u64>()
        .ok()
        .and_then(|id| shared.terminal(id))
        .ok_or_else(|| format!("unknown terminal id {raw}"))
}

fn with_terminal(shared: &ServerState, req: &Request, f: impl FnOnce(&Terminal) -> Body) -> Body {
    let t = find(shared, req)?;
    f(&t)
}

fn entry(t: &Terminal) -> Value {
    let exit = t.exit_code();
    json!({
        "id": t.id.to_string(),
        "name": t.name,
        "pid": t.pid,
        "ptyPid": t.pid,
        "hasShellIntegration": t.has_integration(),
        "active": false,
        "logPath": t.log_path,
        "wrapped": t.wrapped,
        "ptyMode": "pty",
        "status": if exit.is_some() { "exited" } else { "running" },
        "exitCode": exit,
        "shellState": t.phase().name(),
    })
}

fn list(shared: &ServerState) -> Map<String, Value> {
    let terms: Vec<Value> = shared.terminals_sorted().iter().map(|t| entry(t)).collect();
    body(json!({ "terminals": terms }))
}

fn create(shared: &Arc<ServerState>, req: &Request) -> Body {
    let live = shared.live_count();
    if live >= shared.cfg.max_terminals {
        return Err(format!(
            "terminal limit reached ({} live terminals; close one first)",
            shared.cfg.max_terminals
        ));
    }
    let cwd = match req.str("cwd").filter(|s| !s.is_empty()) {
        Some(c) => shared.root.join(c),
        None => shared.root.clone(),
    };
    if !cwd.is_dir() {
        return Err(format!("cwd is not a directory: {}", cwd.display()));
    }
    let mut env = BTreeMap::new();
    match req.map.get("env") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(_) | Value::Bool(_) => v.to_string(),
                    _ => return Err(format!("env.{k} must be a string")),
                };
                env.insert(k.clone(), v);
            }
        }
        Some(_) => return Err("env must be an object of strings".into()),
    }
    let shell = req
        .str("shellPath")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    let id = shared
        .ids
        .allocate()
        .map_err(|e| format!("cannot persist the terminal id counter: {e}"))?;
    let opts = CreateOpts {
        name: req.str("name").unwrap_or("claws").to_owned(),
        cwd,
        wrapped: req.bool("wrapped").unwrap_or(false),
        shell,
        env,
        cols: req.u64("cols").unwrap_or(80).clamp(1, 1000) as u16,
        rows: req.u64("rows").unwrap_or(24).clamp(1, 1000) as u16,
        correlation_id: req.str("correlationId").map(str::to_owned),
        opost: req.bool("opost").unwrap_or(shared.cfg.opost),
    };
    let wrapped = opts.wrapped;
    let term =
        Terminal::spawn(shared, id, opts).map_err(|e| format!("cannot start the shell: {e}"))?;
    let (log_path, pid) = (term.log_path.clone(), term.pid);
    shared.insert_terminal(term);
    Ok(body(json!({
        "id": id.to_string(),
        "wrapped": wrapped,
        "logPath": log_path,
        "pid": pid,
    })))
}

fn send(shared: &ServerState, req: &Request) -> Body {
    let t = find(shared, req)?;
    let text = req.str("text").unwrap_or("");
    let newline = req.bool("newline").unwrap_or(true);
    let paste = req.bool("paste").unwrap_or(text.contains('\n'));
    if !t.is_live() || !t.send(text, newline, paste) {
        return Err(format!("terminal {} has exited", t.id));
    }
    Ok(body(
        json!({"mode": if t.wrapped { "wrapped" } else { "unwrapped" }}),
    ))
}

async fn exec(shared: &ServerState, req: &Request) -> Body {
    let t = find(shared, req)?;
    let Some(command) = req.str("command").filter(|c| !c.trim().is_empty()) else {
        return Err("exec needs a command".into());
    };
    let ms = req.u64("timeoutMs").unwrap_or(shared.cfg.exec_timeout_ms);
    match t.exec(command, Duration::from_millis(ms)).await {
        ExecOutcome::Finished(ev) => Ok(body(json!({ "event": ev }))),
        ExecOutcome::Degraded => Ok(body(json!({"degraded": true, "note": DEGRADED_NOTE}))),
        ExecOutcome::NotRun(said) => Err(format!(
            "the shell did not run the command: {}",
            said.trim()
        )),
        ExecOutcome::Timeout => Err(format!("exec timeout after {ms}ms")),
        ExecOutcome::Exited => Err(format!(
            "terminal {} exited before the command finished",
            t.id
        )),
    }
}

fn read_log(shared: &ServerState, req: &Request) -> Body {
    let t = find(shared, req)?;
    if !t.wrapped {
        return Err(format!(
            "terminal {} is not wrapped (no log available)",
            t.id
        ));
    }
    let limit = req.u64("limit").unwrap_or(READ_LIMIT).clamp(4, READ_LIMIT);
    let strip = req.bool("strip").unwrap_or(true);
    let (from, to, raw, total) = t.read(req.u64("offset"), limit);
    let text = if strip {
        super::strip::strip(&raw)
    } else {
        String::from_utf8_lossy(&raw).into_owned()
    };
    Ok(body(json!({
        "bytes": text,
        "offset": from,
        "nextOffset": to,
        "totalSize": total,
        "bufferStart": t.extent().0,
        "truncated": to < total,
        "logPath": Value::Null,
    })))
}

fn poll(shared: &ServerState, req: &Request) -> Body {
    let cap = shared.cfg.poll_limit.max(1);
    let limit = req.u64("limit").map_or(cap, |l| (l as usize).clamp(1, cap));
    let (events, cursor, truncated) = shared.history.since(req.u64("since").unwrap_or(0), limit);
    Ok(body(json!({
        "events": events, "cursor": cursor, "limit": limit, "truncated": truncated,
    })))
}

fn close(shared: &Arc<ServerState>, req: &Request) -> Body {
    let id = term_arg(req).and_then(|s| s.trim().parse::<u64>().ok());
    let Some(t) = id.and_then(|id| shared.remove_terminal(id)) else {
        return Ok(body(json!({"alreadyClosed": true})));
    };
    shared.announce_closed(&t, "client");
    tokio::spawn(async move { t.hang_up(CLOSE_GRACE).await });
    Ok(body(json!({"alreadyClosed": false})))
}

fn introspect(shared: &ServerState) -> Map<String, Value> {
    let servers: Vec<Value> = shared
        .registry
        .servers()
        .into_iter()
        .map(|(w, s)| json!({"workspace": w, "socket": s}))
        .collect();
    body(json!({
        "extensionVersion": COMPATIBLE_EXTENSION_VERSION,
        "openfilesVersion": env!("CARGO_PKG_VERSION"),
        "nodeVersion": Value::Null,
        "electronAbi": Value::Null,
        "platform": format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        "nodePty": {"loaded": true, "loadedFrom": "openfiles (native openpty)", "error": Value::Null},
        "servers": servers,
        "terminals": shared.terminals_sorted().len(),
        "uptime_ms": shared.started.elapsed().as_millis() as u64,
    }))
}
