//! The Claws terminal and bus tools, and the generic forwarding of orchestration tools.
//!
//! Terminal tools open one connection per request (`list`, `create`, `send`, `exec`,
//! `readLog`, `poll`, `close`, `ping`); bus tools use the long-lived connection that said
//! `hello`. Results have the text or JSON shape of Claws's own MCP server (`sent`,
//! `exit N` + output, the `[term …]` header of `claws_read_log`, …); failures are tool
//! errors starting with `ERROR:`. Orchestration tools (lifecycle, waves, tasks,
//! pipelines, schemas, RPC, commands) are rows of `tools.json` with a `forward` rule:
//! the request is built from the arguments, and a server that does not know the command
//! yet gets a tool error saying so.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use openfiles_wire::claws::request::{self as rq, Command, Target};
use openfiles_wire::claws::{error_code, ErrorCode, Request};

use super::agent::{agent_bin, DONE_MARKER};
use super::call::{Call, Fail};
use super::catalog::{Forward, ResultRule};
use super::link;
use super::server::Ctx;
use super::{error_text, ok, pretty};

/// Bound on a one-shot request that should answer at once.
const QUICK: Duration = Duration::from_secs(30);

/// One claws/1 request on a fresh connection.
pub fn one(ctx: &Ctx, call: &Call, req: Command, timeout: Duration) -> Result<Value, Fail> {
    let sock = ctx.claws(Some(call))?;
    link::claws_call(sock, &req, timeout, Some(call))
}

/// `send` of `text` to terminal `id`.
pub fn send(id: &str, text: &str, newline: bool, paste: bool) -> Command {
    Command::Send(rq::Send {
        target: Target::id(id),
        text: Some(text.to_owned()),
        newline: Some(newline),
        paste: Some(paste),
    })
}

/// `readLog` of terminal `id`, stripped of escapes.
pub fn read_log_req(id: &str, offset: Option<u64>, limit: Option<u64>) -> Command {
    Command::ReadLog(rq::ReadLog {
        target: Target::id(id),
        offset,
        limit,
        strip: Some(true),
    })
}

/// `lifecycle.register-spawn` of a new worker terminal.
pub fn register_spawn(id: &str, correlation_id: &str, name: &str) -> Command {
    Command::LifecycleRegisterSpawn(rq::RegisterSpawn {
        terminal_id: Some(id.to_owned()),
        correlation_id: Some(correlation_id.to_owned()),
        name: Some(name.to_owned()),
    })
}

/// `lifecycle.mark-worker-status` of a worker terminal.
pub fn mark_worker_status(id: &str, status: &str) -> Command {
    Command::LifecycleMarkWorkerStatus(rq::MarkWorkerStatus {
        terminal_id: Some(id.to_owned()),
        status: Some(status.to_owned()),
    })
}

/// claws/2 `publish` of `payload` on `topic`.
pub fn publish(topic: &str, payload: Value, echo: bool) -> Command {
    Command::Publish(rq::Publish {
        topic: Some(topic.to_owned()),
        payload: Some(payload),
        echo: Some(echo),
    })
}

/// claws/2 `subscribe` to `topic`.
pub fn subscribe(topic: &str) -> Command {
    Command::Subscribe(rq::Subscribe {
        topic: Some(topic.to_owned()),
        from_cursor: None,
    })
}

fn s<'a>(args: &'a Value, k: &str) -> Option<&'a str> {
    args.get(k).and_then(Value::as_str)
}

/// The command that follows a terminal's bus events, for `monitor_arm_command`.
pub fn monitor_command(root: &Path, correlation_id: &str) -> String {
    format!(
        "openfiles claws --workspace '{}' subscribe 'system.**' | grep --line-buffered '\"correlation_id\":\"{correlation_id}\"'",
        root.display()
    )
}

pub fn call(ctx: &Ctx, call: &Call, name: &str, args: &Value) -> Result<String, Fail> {
    match name {
        "claws_list" => list(ctx, call),
        "claws_create" => create(ctx, call, args),
        "claws_send" => send_text(ctx, call, args),
        "claws_exec" => exec(ctx, call, args),
        "claws_read_log" => read_log(ctx, call, args),
        "claws_poll" => poll(ctx, call, args),
        "claws_close" => close(ctx, call, args),
        "claws_ping" => {
            let r = ok(one(ctx, call, Command::Ping, QUICK)?)?;
            Ok(pretty(&json!({"serverTime": r["serverTime"]})))
        }
        "claws_hello" => hello(ctx, call, args),
        "claws_subscribe" => {
            let bus = ctx.bus(Some(call))?;
            let r =
                ok(bus.request(subscribe(s(args, "topic").unwrap_or("")), QUICK, Some(call))?)?;
            Ok(pretty(&json!({"subscriptionId": r["subscriptionId"],
                              "resumeCursor": r.get("resumeCursor").cloned().unwrap_or(Value::Null)})))
        }
        "claws_publish" => bus_delivered(
            ctx,
            call,
            publish(
                s(args, "topic").unwrap_or(""),
                args.get("payload").cloned().unwrap_or(json!({})),
                args.get("echo") == Some(&Value::Bool(true)),
            ),
        ),
        "claws_broadcast" => bus_delivered(
            ctx,
            call,
            Command::Broadcast(rq::Broadcast {
                text: s(args, "text").map(str::to_owned),
                target_role: Some(s(args, "targetRole").unwrap_or("worker").to_owned()),
                inject: Some(args.get("inject") == Some(&Value::Bool(true))),
            }),
        ),
        "claws_peers" => {
            let bus = ctx.bus(Some(call))?;
            let r = ok(bus.request(Command::Peers, QUICK, Some(call))?)?;
            let peers = r.get("peers").cloned().unwrap_or(json!([]));
            Ok(pretty(&json!({ "peers": peers })))
        }
        "claws_drain_events" => drain(ctx, call, args),
        "claws_done" => done(ctx, call),
        "claws_get_bin" => {
            let (bin, source) = agent_bin(&ctx.place.root);
            Ok(pretty(&json!({"bin": bin, "source": source})))
        }
        "claws_set_bin" => set_bin(ctx, args),
        other => Err(Fail::Tool(format!("ERROR: unknown tool: {other}"))),
    }
}

/// `claws_send`: text with a line break goes as a paste.
fn send_text(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let text = s(args, "text").unwrap_or("");
    let paste = text.contains('\n') || text.contains('\r');
    ok(one(
        ctx,
        call,
        send(
            s(args, "id").unwrap_or(""),
            text,
            args.get("newline") != Some(&Value::Bool(false)),
            paste,
        ),
        QUICK,
    )?)?;
    Ok("sent".into())
}

/// `claws_close`: and stop watching the worker in it, if one was.
fn close(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let id = s(args, "id").unwrap_or("");
    ok(one(
        ctx,
        call,
        Command::Close(rq::Close {
            target: Target::id(id),
            close_origin: None,
        }),
        QUICK,
    )?)?;
    if let Some(stop) = ctx.watchers.lock().ok().and_then(|mut w| w.remove(id)) {
        stop.store(true, Ordering::Release);
    }
    Ok(format!("closed terminal {id}"))
}

/// `claws_hello`: say `hello` again on the bus connection with the role and name given.
fn hello(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let bus = ctx.rehello(
        json!({"role": args["role"], "peerName": args["peerName"],
               "terminalId": args.get("terminalId"), "capabilities": args.get("capabilities")}),
        Some(call),
    )?;
    let h = &bus.hello;
    Ok(pretty(&json!({
        "peerId": bus.peer_id,
        "serverCapabilities": h.get("serverCapabilities").cloned().unwrap_or(json!([])),
        "orchestratorPresent": h.get("orchestratorPresent").and_then(Value::as_bool).unwrap_or(false),
    })))
}

/// A bus request answered with how many peers it reached (`publish`, `broadcast`).
fn bus_delivered(ctx: &Ctx, call: &Call, req: Command) -> Result<String, Fail> {
    let bus = ctx.bus(Some(call))?;
    let r = ok(bus.request(req, QUICK, Some(call))?)?;
    Ok(pretty(
        &json!({"deliveredTo": r.get("deliveredTo").cloned().unwrap_or(json!(0))}),
    ))
}

fn list(ctx: &Ctx, call: &Call) -> Result<String, Fail> {
    let r = ok(one(ctx, call, Command::List, QUICK)?)?;
    let terms = r["terminals"].as_array().cloned().unwrap_or_default();
    if terms.is_empty() {
        return Ok("[no terminals open]".into());
    }
    let lines: Vec<String> = terms
        .iter()
        .map(|t| {
            let wrap = if t["wrapped"] == Value::Bool(true) {
                "WRAPPED"
            } else {
                "unwrapped"
            };
            let marker = if t["active"] == Value::Bool(true) {
                '*'
            } else {
                ' '
            };
            let id = t["id"].as_str().unwrap_or("?");
            let name = t["name"].as_str().unwrap_or("");
            format!("{marker} {id}  {name:<25} pid={}  [{wrap}]", t["pid"])
        })
        .collect();
    Ok(lines.join("\n"))
}

fn create(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let corr = s(args, "correlation_id")
        .filter(|c| !c.is_empty())
        .map_or_else(super::uuid, str::to_owned);
    let name = s(args, "name").unwrap_or("claws");
    let cwd = s(args, "cwd")
        .filter(|c| !c.is_empty())
        .map_or_else(|| ctx.place.root.display().to_string(), str::to_owned);
    let r = ok(one(
        ctx,
        call,
        Command::Create(rq::Create {
            name: Some(name.to_owned()),
            cwd: Some(cwd),
            wrapped: Some(args.get("wrapped") != Some(&Value::Bool(false))),
            ..Default::default()
        }),
        QUICK,
    )?)?;
    let id = r["id"].as_str().unwrap_or_default().to_owned();
    best_effort(ctx, call, register_spawn(&id, &corr, name));
    let mut out = json!({
        "ok": true,
        "terminal_id": id,
        "correlation_id": corr,
        "monitor_arm_required": true,
        "monitor_arm_command": monitor_command(&ctx.place.root, &corr),
        "events_log_path": ctx.place.root.join(".claws").join("events"),
    });
    if let Some(p) = r.get("logPath").filter(|p| !p.is_null()) {
        out["log_path"] = p.clone();
    }
    Ok(pretty(&out))
}

/// Send a request whose failure does not matter (e.g. lifecycle bookkeeping the server
/// may not serve yet).
pub fn best_effort(ctx: &Ctx, call: &Call, req: Command) {
    let _ = one(ctx, call, req, Duration::from_secs(5));
}

fn exec(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let id = s(args, "id").unwrap_or("");
    let command = s(args, "command").unwrap_or("");
    let timeout_ms = args["timeout_ms"]
        .as_u64()
        .filter(|&t| t > 0)
        .unwrap_or(180_000);
    let req = Command::Exec(rq::Exec {
        target: Target::id(id),
        command: Some(command.to_owned()),
        timeout_ms: Some(timeout_ms),
    });
    let r = match one(ctx, call, req, Duration::from_millis(timeout_ms) + QUICK) {
        Err(Fail::Cancelled) => {
            // Interrupt what the cancelled call started, so the terminal is free again.
            let sock = ctx.claws(None)?;
            let _ = link::claws_call(
                sock,
                &send(id, "\u{3}", false, false),
                Duration::from_secs(5),
                None,
            );
            return Err(Fail::Cancelled);
        }
        other => ok(other?)?,
    };
    if r.get("degraded") == Some(&Value::Bool(true)) {
        return file_exec(ctx, call, id, command, timeout_ms);
    }
    let ev = &r["event"];
    let code = match &ev["exitCode"] {
        Value::Null => "null".to_owned(),
        v => v.to_string(),
    };
    Ok(format!(
        "exit {code}\n{}",
        ev["output"].as_str().unwrap_or("")
    ))
}

/// `exec` in a terminal without shell integration: redirect to files and wait for them.
fn file_exec(
    ctx: &Ctx,
    call: &Call,
    id: &str,
    command: &str,
    timeout_ms: u64,
) -> Result<String, Fail> {
    let dir = std::env::temp_dir().join("claws-exec");
    std::fs::create_dir_all(&dir).map_err(|e| Fail::Tool(format!("ERROR: {e}")))?;
    let tag = &super::uuid()[..10];
    let (out, done) = (
        dir.join(format!("{tag}.out")),
        dir.join(format!("{tag}.done")),
    );
    let wrapper = format!(
        "{{ {command}; }} > {} 2>&1; echo $? > {}",
        out.display(),
        done.display()
    );
    ok(one(ctx, call, send(id, &wrapper, true, false), QUICK)?)?;
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    while !done.exists() {
        if Instant::now() >= deadline {
            let partial = std::fs::read_to_string(&out).unwrap_or_default();
            return Err(Fail::Tool(format!(
                "ERROR: timeout after {timeout_ms}ms\n[partial output]\n{partial}"
            )));
        }
        call.sleep(Duration::from_millis(150))?;
    }
    let code = std::fs::read_to_string(&done).unwrap_or_default();
    let output = std::fs::read_to_string(&out).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&done);
    let code = code.trim();
    let code = if code.chars().all(|c| c.is_ascii_digit()) && !code.is_empty() {
        code
    } else {
        "null"
    };
    Ok(format!("exit {code}\n{output}"))
}

fn read_log(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let id = s(args, "id").unwrap_or("");
    let r = ok(one(ctx, call, read_log_req(id, None, None), QUICK)?)?;
    let text = r["bytes"].as_str().unwrap_or("");
    let all: Vec<&str> = text.split('\n').collect();
    let n = args["lines"].as_u64().filter(|&n| n > 0).unwrap_or(50) as usize;
    let tail = &all[all.len().saturating_sub(n)..];
    Ok(format!(
        "[term {id} · {} bytes · showing last {} of {} lines]\n{}",
        r["totalSize"].as_u64().unwrap_or(0),
        tail.len(),
        all.len(),
        tail.join("\n")
    ))
}

fn poll(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let since = args["since"].as_u64().unwrap_or(0);
    let r = ok(one(
        ctx,
        call,
        Command::Poll(rq::Poll {
            since: Some(since),
            limit: None,
        }),
        QUICK,
    )?)?;
    let cursor = r["cursor"].as_u64().unwrap_or(0);
    let events = r["events"].as_array().cloned().unwrap_or_default();
    if events.is_empty() {
        return Ok(format!("[no events · cursor {cursor}]"));
    }
    let mut lines = Vec::new();
    for e in &events {
        let mut line = format!(
            "[seq {} · {} · exit {}] $ {}",
            e["seq"],
            e["terminalName"].as_str().unwrap_or(""),
            e["exitCode"],
            e["commandLine"].as_str().unwrap_or("")
        );
        if let Some(out) = e["output"].as_str().filter(|o| !o.is_empty()) {
            line.push('\n');
            if out.chars().count() > 500 {
                line.extend(out.chars().take(500));
                line.push_str("...");
            } else {
                line.push_str(out);
            }
        }
        lines.push(line);
    }
    Ok(format!("{}\n[cursor {cursor}]", lines.join("\n")))
}

fn drain(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let since = args["since_index"].as_u64().unwrap_or(0);
    let wait = Duration::from_millis(args["wait_ms"].as_u64().unwrap_or(0));
    let max = args["max"].as_u64().unwrap_or(100) as usize;
    let bus = ctx.bus(Some(call))?;
    let cursor = {
        let mut sub = bus.subscribed_all.lock().unwrap_or_else(|e| e.into_inner());
        if sub.is_none() {
            let r = bus.request(subscribe("**"), QUICK, Some(call))?;
            if r.get("ok") == Some(&Value::Bool(true)) {
                *sub = Some(r.get("resumeCursor").cloned().unwrap_or(Value::Null));
            }
        }
        sub.clone().unwrap_or(Value::Null)
    };
    let (lock, cond) = &*bus.events;
    let end = Instant::now() + wait;
    let mut ev = lock.lock().unwrap_or_else(|e| e.into_inner());
    while ev.total <= since && Instant::now() < end && bus.alive() {
        if call.cancelled() {
            return Err(Fail::Cancelled);
        }
        let slice = (end - Instant::now()).min(Duration::from_millis(100));
        ev = cond
            .wait_timeout(ev, slice)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0);
    }
    let events: Vec<Value> = ev
        .ring
        .iter()
        .filter(|e| e["absoluteIndex"].as_u64().unwrap_or(0) > since)
        .take(max)
        .cloned()
        .collect();
    let first = ev.ring.front().and_then(|e| e["absoluteIndex"].as_u64());
    let dropped = first.map_or(0, |f| f.saturating_sub(since + 1));
    Ok(pretty(&json!({
        "events": events,
        "total_received": ev.total,
        "dropped": dropped,
        "subscribe_cursor": cursor,
    })))
}

fn done(ctx: &Ctx, call: &Call) -> Result<String, Fail> {
    let Some(id) = std::env::var("CLAWS_TERMINAL_ID")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        return Err(Fail::Tool(
            "ERROR: claws_done is for workers: CLAWS_TERMINAL_ID is not set (this agent does not run in a Claws terminal)".into(),
        ));
    };
    let bus = ctx.bus(Some(call))?;
    let r = bus.request(
        publish(
            &format!("worker.{id}.complete"),
            json!({"status": "completed", "terminal_id": id, "marker": DONE_MARKER}),
            false,
        ),
        QUICK,
        Some(call),
    )?;
    ok(r)?;
    Ok(pretty(
        &json!({"ok": true, "terminal_id": id, "marker": DONE_MARKER}),
    ))
}

fn set_bin(ctx: &Ctx, args: &Value) -> Result<String, Fail> {
    let file = ctx.place.root.join(".claws").join("claude-bin");
    match s(args, "name").map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => {
            let fine = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-/+".contains(c));
            if !fine {
                return Err(Fail::Invalid(format!(
                    "`name` may hold letters, digits and . _ - / + only, not {name:?}"
                )));
            }
            let write = std::fs::create_dir_all(file.parent().unwrap_or(&ctx.place.root))
                .and_then(|()| std::fs::write(&file, format!("{name}\n")));
            write
                .map_err(|e| Fail::Tool(format!("ERROR: cannot write {}: {e}", file.display())))?;
            Ok(pretty(&json!({"ok": true, "bin": name, "source": "file",
                              "message": format!("workers now start {name}")})))
        }
        None => {
            let _ = std::fs::remove_file(&file);
            let (bin, source) = agent_bin(&ctx.place.root);
            Ok(pretty(&json!({"ok": true, "bin": bin, "source": source,
                              "message": format!("workers start {bin} ({source})")})))
        }
    }
}

/// A tool that forwards one request (see `Forward` in `catalog.rs`).
pub fn forward(ctx: &Ctx, call: &Call, rule: &Forward, args: &Value) -> Result<String, Fail> {
    let mut req = Map::new();
    req.insert("cmd".into(), json!(rule.cmd));
    if let Some(p) = &rule.protocol {
        req.insert("protocol".into(), json!(p));
    }
    for (k, v) in args.as_object().into_iter().flatten() {
        if v.is_null() {
            continue;
        }
        let key = rule.rename.get(k).cloned().unwrap_or_else(|| k.clone());
        req.insert(key, v.clone());
    }
    for (k, v) in &rule.defaults {
        req.entry(k.clone()).or_insert_with(|| v.clone());
    }
    // Decoded as the server would: an unknown command is refused here, and only the fields
    // the server reads are sent.
    let req = Request::from_value(Value::Object(req))
        .and_then(|r| Command::parse(&r).ok())
        .ok_or_else(|| Fail::Tool(format!("ERROR: unknown Claws command `{}`", rule.cmd)))?;
    let resp = if rule.stateful {
        ctx.bus(Some(call))?.request(req, QUICK, Some(call))?
    } else {
        one(ctx, call, req, QUICK)?
    };
    let duplicate = resp.get("duplicate") == Some(&Value::Bool(true));
    if resp.get("ok") != Some(&Value::Bool(true)) && !duplicate {
        let mut text = error_text(&resp);
        if let Some(m) = resp.get("message").and_then(Value::as_str) {
            text.push('\n');
            text.push_str(m);
        }
        // Our server says `code`; the editor extension's says only the words.
        let err = resp.get("error").and_then(Value::as_str).unwrap_or("");
        if error_code(&resp) == Some(ErrorCode::UnknownCmd) || err.starts_with("unknown cmd") {
            text.push_str(&format!(
                "\nThis openfiles service does not serve `{}` yet: the Claws orchestration commands (lifecycle, waves, tasks, pipelines, RPC) are still to come. Terminal, bus and worker tools work.",
                rule.cmd
            ));
        }
        return Err(Fail::Tool(text));
    }
    let out = match &rule.result {
        ResultRule::Pick(keys) => Value::Object(
            keys.iter()
                .map(|k| (k.clone(), resp.get(k).cloned().unwrap_or(Value::Null)))
                .collect(),
        ),
        ResultRule::Field(f) => match resp.get(f) {
            Some(v) if !v.is_null() => v.clone(),
            _ if rule.cmd == "lifecycle.snapshot" => {
                return Ok("[no lifecycle state — call claws_lifecycle_plan first]".into())
            }
            _ => Value::Null,
        },
        ResultRule::Fixed(obj) => Value::Object(obj.clone()),
    };
    Ok(pretty(&out))
}
