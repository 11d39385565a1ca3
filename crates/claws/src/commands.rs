//! claws/1 command handlers (`list`, `create`, `show`, `send`, `exec`, `readLog`, `poll`,
//! `close`, `introspect`, `ping`, `resize`) and the dispatch that also routes the claws/2
//! bus commands. One exhaustive `match` over the typed [`Command`] (decoded in
//! `request/`); each handler returns the answer body or the error string the notes fix
//! verbatim. A connection that must still authenticate (a WebSocket one with `[claws.auth]`
//! on, see `conn.rs`) gets `auth:required` for everything but `hello`, `ping` included.

use openfiles_wire::claws::RefusalKind;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::bus::Replay;
use super::orch;
use super::terminal::{CreateOpts, ExecOutcome, Terminal};
use super::Connection;
use super::{iso_now, now_ms, ServerState};
use openfiles_wire::claws::request::{self, CloseOrigin, Command, Target};
use openfiles_wire::claws::request::{
    Closed, Created, ExecReply, LogPage, PollReply, Pong, Sent, TerminalEntry, TerminalList,
};
use openfiles_wire::claws::{
    body, ErrorCode, Failure, Request, COMPATIBLE_EXTENSION_VERSION, PROTOCOL, PROTOCOL_2,
};

/// `readLog`'s cap on one page.
pub const READ_LIMIT: u64 = 512 << 10;
const DEGRADED_NOTE: &str =
    "no shell integration active; output not captured via exec — use readLog on wrapped terminals";

/// An answer body from its typed reply (plain structs: serializing cannot fail).
fn reply<T: serde::Serialize>(t: &T) -> Map<String, Value> {
    body(serde_json::to_value(t).unwrap_or_default())
}

fn pong() -> Map<String, Value> {
    reply(&Pong {
        server_time: now_ms(),
    })
}

/// What the connection writes for one request.
pub struct Answer {
    pub protocol: &'static str,
    pub body: Body,
    /// Stored events to stream after the answer (`subscribe` with `fromCursor`).
    pub replay: Option<Replay>,
}

impl From<Body> for Answer {
    fn from(body: Body) -> Answer {
        Answer {
            protocol: PROTOCOL,
            body,
            replay: None,
        }
    }
}

/// An answer body, or the error the client is told (with its code when clients act on it).
pub type Body = Result<Map<String, Value>, Failure>;

pub async fn dispatch(shared: &Arc<ServerState>, conn: &Connection, req: &Request) -> Answer {
    // Before anything else reads the request: an unauthenticated WebSocket connection
    // learns nothing but that it must say hello (conn.rs).
    if conn.needs_hello() && req.str("cmd") != Some(request::cmd::HELLO) {
        return Err("auth:required".into()).into();
    }
    if let Some(e) = req.protocol_error() {
        return Err(e.into()).into();
    }
    if let Some(v) = req.str("clientVersion") {
        shared.drift.check(req.str("clientName"), v);
    }
    let cmd = match Command::parse(req) {
        Ok(c) => c,
        Err(e) => return Err(Failure::from(e)).into(),
    };
    match cmd {
        Command::Ping => Ok(pong()).into(),
        Command::List => Ok(list(shared)).into(),
        Command::Create(c) => create(shared, conn, c).into(),
        Command::Show(t) => find(shared, &t).map(|_| Map::new()).into(),
        Command::Send(c) => send(shared, c).into(),
        Command::Exec(c) => exec(shared, c).await.into(),
        Command::ReadLog(c) => read_log(shared, c).into(),
        Command::Poll(c) => poll(shared, c).into(),
        Command::Close(c) => close(shared, &c).into(),
        Command::Resize(c) => resize(shared, c).into(),
        Command::Introspect => Ok(introspect(shared)).into(),
        Command::Hello(c) => Answer {
            protocol: PROTOCOL_2,
            body: orch::hello(shared, conn, c),
            replay: None,
        },
        Command::Peers => Ok(peers(shared)).into(),
        Command::Subscribe(c) => match shared.bus.subscribe(conn, c) {
            Ok((b, replay)) => Answer {
                protocol: PROTOCOL,
                body: Ok(b),
                replay,
            },
            Err(e) => Err(e).into(),
        },
        Command::Unsubscribe(c) => shared.bus.unsubscribe(conn, c).into(),
        Command::Publish(c) => orch::publish(shared, conn, c).into(),
        Command::Broadcast(c) => orch::cmdchan::broadcast(shared, conn, c).into(),
        Command::DeliverCmd(c) => orch::cmdchan::deliver(shared, conn, c).into(),
        Command::CmdAck(c) => orch::cmdchan::ack(shared, conn, c).into(),
        Command::TaskAssign(c) => orch::tasks::assign(shared, conn, c).into(),
        Command::TaskUpdate(c) => orch::tasks::update(shared, conn, c).into(),
        Command::TaskComplete(c) => orch::tasks::complete(shared, conn, c).into(),
        Command::TaskCancel(c) => orch::tasks::cancel(shared, conn, c).into(),
        Command::TaskList(c) => orch::tasks::list(shared, c).into(),
        // A lifecycle change is answered once its state is on disk (written by the
        // lifecycle's own thread; this task waits without holding a lock or a thread).
        Command::LifecyclePlan(c) => saved(shared, orch::lifecycle::plan(shared, c)).await,
        Command::LifecycleAdvance(c) => saved(shared, orch::lifecycle::advance(shared, c)).await,
        Command::LifecycleSnapshot => orch::lifecycle::snapshot(shared).into(),
        Command::LifecycleReflect(c) => saved(shared, orch::lifecycle::reflect(shared, c)).await,
        Command::LifecycleRegisterSpawn(c) => {
            saved(shared, orch::lifecycle::register_spawn(shared, c)).await
        }
        Command::LifecycleRegisterMonitor(c) => {
            saved(shared, orch::lifecycle::register_monitor(shared, c)).await
        }
        Command::LifecycleMarkWorkerStatus(c) => {
            saved(shared, orch::lifecycle::mark_worker_status(shared, c)).await
        }
        Command::MonitorsRegisterIntent(c) => orch::monitors::register_intent(shared, c).into(),
        Command::MonitorsIsCorrArmed(c) => orch::monitors::is_armed(shared, c).into(),
        Command::WaveCreate(c) => orch::waves::create(shared, conn, c).into(),
        Command::WaveStatus(c) => orch::waves::status(shared, c).into(),
        Command::WaveComplete(c) => orch::waves::complete(shared, conn, c).into(),
        Command::PipelineCreate(c) => orch::pipelines::create(shared, conn, c).into(),
        Command::PipelineList => orch::pipelines::list(shared).into(),
        Command::PipelineClose(c) => orch::pipelines::close(shared, conn, c).into(),
        Command::RpcCall(c) => orch::rpc::call(shared, conn, c).await.into(),
        Command::SchemaList => orch::schemas::list().into(),
        Command::SchemaGet(c) => orch::schemas::get(c).into(),
    }
}

/// `body` once the lifecycle state it changed is written.
async fn saved(shared: &ServerState, body: Body) -> Answer {
    shared.orch.lifecycle.saved().await;
    body.into()
}

fn find(shared: &ServerState, target: &Target) -> Result<Arc<Terminal>, Failure> {
    let raw = target.0.as_deref().unwrap_or("undefined");
    raw.trim()
        .parse::<u64>()
        .ok()
        .and_then(|id| shared.terminal(id))
        .ok_or_else(|| Failure::from(format!("unknown terminal id {raw}")))
}

fn entry(t: &Terminal) -> TerminalEntry {
    let exit = t.exit_code();
    TerminalEntry {
        id: t.id.to_string(),
        name: t.name.clone(),
        pid: Some(t.pid),
        pty_pid: Some(t.pid),
        has_shell_integration: t.has_integration(),
        active: false,
        log_path: t.log_path.clone(),
        wrapped: t.wrapped,
        pty_mode: "pty".into(),
        status: if exit.is_some() { "exited" } else { "running" }.into(),
        exit_code: exit,
        shell_state: t.phase().name().into(),
        vehicle_state: t.vehicle().name().into(),
    }
}

fn list(shared: &ServerState) -> Map<String, Value> {
    let terminals = shared.terminals_sorted().iter().map(|t| entry(t)).collect();
    reply(&TerminalList { terminals })
}

fn create(shared: &Arc<ServerState>, conn: &Connection, req: request::Create) -> Body {
    if shared.cfg.lifecycle.require_plan && !shared.orch.lifecycle.has_plan() {
        return orch::refuse(
            RefusalKind::PlanRequired,
            "[LIFECYCLE GATE] No PLAN logged. Call mcp__claws__claws_lifecycle_plan first.",
        );
    }
    let live = shared.live_count();
    if live >= shared.cfg.max_terminals {
        return Err(format!(
            "terminal limit reached ({} live terminals; close one first)",
            shared.cfg.max_terminals
        )
        .into());
    }
    let cwd = match req.cwd.filter(|s| !s.is_empty()) {
        Some(c) => shared.root.join(c),
        None => shared.root.clone(),
    };
    if !cwd.is_dir() {
        return Err(format!("cwd is not a directory: {}", cwd.display()).into());
    }
    let mut env = BTreeMap::new();
    match &req.env {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(_) | Value::Bool(_) => v.to_string(),
                    _ => return Err(format!("env.{k} must be a string").into()),
                };
                env.insert(k.clone(), v);
            }
        }
        Some(_) => return Err("env must be an object of strings".into()),
    }
    let shell = req.shell_path.filter(|s| !s.is_empty()).map(PathBuf::from);
    let id = shared
        .ids
        .allocate()
        .map_err(|e| format!("cannot persist the terminal id counter: {e}"))?;
    let opts = CreateOpts {
        name: req.name.unwrap_or_else(|| "claws".to_owned()),
        cwd,
        wrapped: req.wrapped.unwrap_or(shared.cfg.default_wrapped),
        shell,
        env,
        cols: dimension(req.cols, 80),
        rows: dimension(req.rows, 24),
        correlation_id: req.correlation_id,
        opost: req.opost.unwrap_or(shared.cfg.opost),
    };
    let wrapped = opts.wrapped;
    let term =
        Terminal::spawn(shared, id, opts).map_err(|e| format!("cannot start the shell: {e}"))?;
    let (log_path, pid) = (term.log_path.clone(), term.pid);
    shared.insert_terminal(term);
    if let Some(p) = shared.bus.peer(conn) {
        if let Some(w) = &p.wave_id {
            shared
                .orch
                .waves
                .track(w, &id.to_string(), p.sub_worker_role.as_deref());
        }
    }
    shared.bus.publish_server(
        &format!("system.terminal.{id}.alive"),
        json!({"terminalId": id.to_string(), "pid": pid, "alive": true, "ts": iso_now()}),
    );
    Ok(reply(&Created {
        id: id.to_string(),
        wrapped,
        log_path,
        pid: Some(pid),
    }))
}

fn send(shared: &ServerState, req: request::Send) -> Body {
    let t = find(shared, &req.target)?;
    let text = req.text.unwrap_or_default();
    let newline = req.newline.unwrap_or(true);
    let paste = req.paste.unwrap_or(text.contains('\n'));
    if !t.is_live() {
        return Err(format!("terminal {} has exited", t.id).into());
    }
    t.send(&text, newline, paste).map_err(|e| e.to_string())?;
    Ok(reply(&Sent {
        mode: if t.wrapped { "wrapped" } else { "unwrapped" }.into(),
    }))
}

async fn exec(shared: &ServerState, req: request::Exec) -> Body {
    let t = find(shared, &req.target)?;
    let Some(command) = req.command.filter(|c| !c.trim().is_empty()) else {
        return Err("exec needs a command".into());
    };
    let ms = req.timeout_ms.unwrap_or(shared.cfg.exec_timeout_ms);
    let outcome = t.exec(&command, Duration::from_millis(ms)).await;
    match outcome {
        ExecOutcome::Finished(ev) => Ok(reply(&ExecReply {
            event: Some(ev),
            ..Default::default()
        })),
        ExecOutcome::Degraded => Ok(reply(&ExecReply {
            degraded: true,
            note: Some(DEGRADED_NOTE.into()),
            ..Default::default()
        })),
        ExecOutcome::NotRun(said) => {
            Err(format!("the shell did not run the command: {}", said.trim()).into())
        }
        ExecOutcome::Timeout => Err(Failure::coded(
            ErrorCode::ExecTimeout,
            format!("exec timeout after {ms}ms"),
        )),
        ExecOutcome::Exited => {
            Err(format!("terminal {} exited before the command finished", t.id).into())
        }
    }
}

fn read_log(shared: &ServerState, req: request::ReadLog) -> Body {
    let t = find(shared, &req.target)?;
    if !t.wrapped {
        return Err(format!("terminal {} is not wrapped (no log available)", t.id).into());
    }
    let limit = req.limit.unwrap_or(READ_LIMIT).clamp(4, READ_LIMIT);
    let strip = req.strip.unwrap_or(true);
    let (from, to, raw, total) = t.read(req.offset, limit);
    let text = if strip {
        super::strip::strip(&raw)
    } else {
        String::from_utf8_lossy(&raw).into_owned()
    };
    Ok(reply(&LogPage {
        bytes: text,
        offset: from,
        next_offset: to,
        total_size: total,
        buffer_start: t.extent().0,
        truncated: to < total,
        log_path: None,
    }))
}

fn poll(shared: &ServerState, req: request::Poll) -> Body {
    let cap = shared.cfg.poll_limit.max(1);
    let limit = req.limit.map_or(cap, |l| (l as usize).clamp(1, cap));
    let (events, cursor, truncated) = shared.history.since(req.since.unwrap_or(0), limit);
    Ok(reply(&PollReply {
        events,
        cursor,
        limit,
        truncated,
    }))
}

fn close(shared: &Arc<ServerState>, req: &request::Close) -> Body {
    let id = req
        .target
        .0
        .as_deref()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let origin = req.close_origin.unwrap_or(CloseOrigin::Client);
    let closed = id.is_some_and(|id| shared.close_terminal(id, origin));
    Ok(reply(&Closed {
        already_closed: !closed,
    }))
}

fn resize(shared: &ServerState, req: request::Resize) -> Body {
    let t = find(shared, &req.target)?;
    t.resize(dimension(req.cols, 80), dimension(req.rows, 24))
        .map_err(|e| format!("resize failed: {e}"))?;
    Ok(Map::new())
}

/// A terminal dimension: the default when absent, clamped to 1..=1000.
fn dimension(v: Option<u64>, default: u16) -> u16 {
    v.map_or(default, |v| v.clamp(1, 1000) as u16)
}

/// `peers`: who said `hello` on this server (claws/2).
fn peers(shared: &ServerState) -> Map<String, Value> {
    let peers: Vec<Value> = shared
        .bus
        .peers()
        .into_iter()
        .map(|p| {
            json!({"peerId": p.peer_id, "role": p.role, "peerName": p.name,
                   "terminalId": p.terminal_id, "capabilities": p.capabilities,
                   "waveId": p.wave_id, "subWorkerRole": p.sub_worker_role})
        })
        .collect();
    body(json!({ "peers": peers }))
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
        "protocol": PROTOCOL,
        // No Node.js runs here: the string names what does.
        "nodeVersion": format!("none (openfiles {} native Rust server)", env!("CARGO_PKG_VERSION")),
        // The extension reports Node's module ABI (a number clients check the type of); no
        // Node runs here, so 0 (docs/claws-orchestration.md).
        "electronAbi": 0,
        "platform": format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        "nodePty": {"loaded": true, "loadedFrom": "openfiles (native openpty)", "error": Value::Null},
        "servers": servers,
        "terminals": shared.terminals_sorted().len(),
        "uptime_ms": shared.started.elapsed().as_millis() as u64,
    }))
}
