//! Workers: `claws_worker`, `claws_fleet`, `claws_workers_wait`, `claws_dispatch_subworker`.
//!
//! A worker is a captured terminal (`CLAWS_WORKER=1`) that runs either a shell command or
//! an agent CLI (`<bin> --dangerously-skip-permissions --model M`, the binary from
//! `.claws/claude-bin`, `CLAWS_CLAUDE_BIN` or `claude`) given a mission as a bracketed
//! paste once it booted (its boot marker, or its prompt and cost line, seen on three polls
//! in a row; not booted in time → `system.worker.boot_failed`, and the mission is sent
//! anyway). The watcher reads the terminal's output incrementally by raw offset and
//! decides completion in Claws's order: a `worker.<id>.complete` bus message, the
//! complete marker (or `__CLAWS_DONE__`), an error marker, a `[CLAWS_PUB]
//! topic=worker.<id>.complete` line, the terminal going away; markers count only alone
//! on a line (optionally after `⏺`/`⎿`), so a mission that mentions one does not end
//! itself. `[CLAWS_PUB] topic=T k=v …` lines are published for the worker. At the end:
//! `system.worker.completed`, the harvest (last lines), close (unless told not to).
//!
//! By default a worker returns once started and a background watcher (a thread with a
//! stop flag, ended by `claws_close`) finishes the job; `detach=false`/`wait=true` blocks,
//! with progress notifications, until completion. Finished results are kept for
//! `claws_workers_wait`.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod many;
mod signals;

use signals::iso_now;
use signals::{detect, publish_pub_lines};

use super::agent::agent_bin;
use super::call::{Call, Fail};
use super::claws_tools::{
    best_effort, mark_worker_status, monitor_command, one, read_log_req, register_spawn, send,
};
use super::server::Ctx;
use super::{error_text, ok, pretty, Refusal};
use openfiles_wire::claws::request::{self as rq, CloseOrigin, Command, Target};

const QUICK: Duration = Duration::from_secs(30);
/// How often a running worker's liveness goes on the bus (`worker.<id>.heartbeat`).
const HEARTBEAT: Duration = Duration::from_secs(30);
/// Output kept in memory for detection.
const KEEP: usize = 1 << 20;

/// One worker's settings, after defaults.
#[derive(Debug, Clone)]
struct Opts {
    name: String,
    mission: Option<String>,
    command: Option<String>,
    launch: bool,
    detach: bool,
    cwd: String,
    model: String,
    timeout_ms: u64,
    boot_wait_ms: u64,
    boot_marker: Option<String>,
    complete_marker: String,
    error_markers: Vec<String>,
    poll_ms: u64,
    harvest_lines: usize,
    close: bool,
    /// Extra fields of `system.worker.*` payloads (wave, role).
    extra: Value,
}

fn opts(args: &Value, shared: &Value, root: &Path, detach_default: bool) -> Result<Opts, Fail> {
    let get = |k: &str| {
        args.get(k)
            .filter(|v| !v.is_null())
            .or_else(|| shared.get(k).filter(|v| !v.is_null()))
    };
    let st = |k: &str| {
        get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let num = |k: &str, d: u64| {
        get(k)
            .and_then(Value::as_u64)
            .filter(|&n| n > 0)
            .unwrap_or(d)
    };
    let flag = |k: &str| get(k).and_then(Value::as_bool);
    let mission = st("mission");
    let command = st("command");
    if mission.is_none() && command.is_none() {
        return Err(Fail::Invalid("give a `mission` or a `command`".into()));
    }
    let model = st("model").unwrap_or_else(|| "claude-sonnet-4-6".into());
    if !model
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(Fail::Invalid(format!("invalid model name {model:?}")));
    }
    let launch = flag("launch_claude").unwrap_or(mission.is_some());
    let detach = if flag("wait") == Some(true) {
        false
    } else {
        flag("detach").unwrap_or(detach_default)
    };
    Ok(Opts {
        name: st("name").unwrap_or_else(|| "claws-worker".into()),
        mission,
        command,
        launch,
        detach,
        cwd: st("cwd").unwrap_or_else(|| root.display().to_string()),
        model,
        timeout_ms: num("timeout_ms", 300_000),
        boot_wait_ms: num("boot_wait_ms", if detach { 25_000 } else { 8_000 }),
        boot_marker: st("boot_marker"),
        complete_marker: st("complete_marker").unwrap_or_else(|| "MISSION_COMPLETE".into()),
        error_markers: signals::error_markers(get("error_markers")),
        poll_ms: num("poll_interval_ms", 1500).max(50),
        harvest_lines: num("harvest_lines", 200) as usize,
        close: flag("close_on_complete").unwrap_or(true),
        extra: json!({}),
    })
}

/// A started worker.
struct Started {
    id: String,
    corr: String,
    started: Instant,
    booted: bool,
    /// Raw log offset from which markers count.
    scan_from: u64,
    /// The mission as typed (its echo does not count as a marker).
    echo: String,
}

pub fn call(ctx: &Arc<Ctx>, call: &Call, name: &str, args: &Value) -> Result<String, Fail> {
    let root = ctx.place.root.clone();
    match name {
        "claws_worker" => {
            let o = opts(args, &json!({}), &root, true)?;
            let w = start(ctx, call, &o)?;
            if o.detach {
                let (id, corr) = (w.id.clone(), w.corr.clone());
                watch_in_background(ctx, &o, w);
                return Ok(pretty(&json!({
                    "ok": true, "terminal_id": id, "name": o.name, "correlation_id": corr,
                    "run_token": &super::uuid()[..12],
                    "hint": "use claws_workers_wait to poll completion",
                    "monitor_arm_required": true,
                    "monitor_arm_command": monitor_command(&root, &corr),
                    "events_log_path": root.join(".claws").join("events"),
                })));
            }
            let r = finish(ctx, call, &o, &w)?;
            Ok(blocking_text(&o.name, &r))
        }
        "claws_fleet" => many::fleet(ctx, call, args),
        "claws_workers_wait" => many::workers_wait(ctx, call, args),
        "claws_dispatch_subworker" => many::subworker(ctx, call, args),
        other => Err(Fail::Tool(format!("ERROR: unknown tool: {other}"))),
    }
}

fn blocking_text(name: &str, r: &Value) -> String {
    let mut lines = vec![
        format!(
            "worker '{name}' {}",
            r["status"].as_str().unwrap_or("").to_uppercase()
        ),
        format!("  terminal:   {}", r["terminal_id"].as_str().unwrap_or("")),
        format!(
            "  duration:   {:.1}s",
            r["duration_ms"].as_u64().unwrap_or(0) as f64 / 1000.0
        ),
        format!("  booted:     {}", r["booted"]),
        format!("  cleaned_up: {}", r["cleaned_up"]),
    ];
    if let Some(m) = r["marker_line"].as_str() {
        lines.push(format!("  marker:     {m}"));
    }
    format!(
        "{}\n\n── harvest (last lines) ──\n{}",
        lines.join("\n"),
        r["harvest"].as_str().unwrap_or("")
    )
}

/// Open the worker's terminal and announce it.
fn create(ctx: &Ctx, call: &Call, o: &Opts) -> Result<(String, String, Instant), Fail> {
    let r = one(
        ctx,
        call,
        Command::Create(rq::Create {
            name: Some(o.name.to_string()),
            wrapped: Some(true),
            cwd: Some(o.cwd.to_string()),
            env: Some(json!({"CLAWS_WORKER": "1"})),
            ..Default::default()
        }),
        QUICK,
    )?;
    if r.get("ok") != Some(&Value::Bool(true)) {
        return Err(Fail::Tool(format!(
            "ERROR: create failed: {}",
            error_text(&r).trim_start_matches("ERROR: ")
        )));
    }
    let id = r["id"].as_str().unwrap_or_default().to_owned();
    let corr = super::uuid();
    ctx.forget_finished(&id);
    let mut payload = json!({"terminal_id": id, "name": o.name, "wrapped": true,
                             "started_at": iso_now(), "correlation_id": corr});
    merge(&mut payload, &o.extra);
    if let Some(bus) = ctx.bus_if_any(Some(call)) {
        bus.publish("system.worker.spawned", payload);
    }
    best_effort(ctx, call, register_spawn(&id, &corr, &o.name));
    Ok((id, corr, Instant::now()))
}

fn merge(into: &mut Value, extra: &Value) {
    if let (Some(a), Some(b)) = (into.as_object_mut(), extra.as_object()) {
        for (k, v) in b {
            a.insert(k.clone(), v.clone());
        }
    }
}

/// Create the terminal, boot the agent if asked, send the mission or command.
fn start(ctx: &Ctx, call: &Call, o: &Opts) -> Result<Started, Fail> {
    let (id, corr, started) = create(ctx, call, o)?;
    boot_and_send(ctx, call, o, id, corr, started)
}

fn log_tail(ctx: &Ctx, call: &Call, id: &str, limit: u64) -> Result<(String, u64), Fail> {
    let r = one(ctx, call, read_log_req(id, None, Some(limit)), QUICK)?;
    Ok((
        r["bytes"].as_str().unwrap_or("").to_owned(),
        r["totalSize"].as_u64().unwrap_or(0),
    ))
}

fn boot_and_send(
    ctx: &Ctx,
    call: &Call,
    o: &Opts,
    id: String,
    corr: String,
    started: Instant,
) -> Result<Started, Fail> {
    let mut booted = !o.launch;
    if o.launch {
        let (bin, _) = agent_bin(&ctx.place.root);
        ok(one(
            ctx,
            call,
            send(
                &id,
                &format!("{bin} --dangerously-skip-permissions --model {}", o.model),
                true,
                false,
            ),
            QUICK,
        )?)?;
        let deadline = Instant::now() + Duration::from_millis(o.boot_wait_ms);
        let mut stable = 0;
        let mut tail = String::new();
        while Instant::now() < deadline {
            tail = log_tail(ctx, call, &id, 32 * 1024)?.0;
            let ready = match &o.boot_marker {
                Some(m) => tail.contains(m.as_str()),
                None => tail.contains('❯') && (tail.contains("cost:$") || tail.contains("cost: $")),
            };
            stable = if ready { stable + 1 } else { 0 };
            if stable >= 3 {
                booted = true;
                break;
            }
            call.progress("waiting for the agent to boot");
            call.sleep(Duration::from_millis(300))?;
        }
        if booted {
            call.sleep(Duration::from_secs(5))?; // the agent's input settles after its prompt shows
        } else if let Some(bus) = ctx.bus_if_any(Some(call)) {
            let cut = tail.char_indices().rev().nth(1999).map_or(0, |(i, _)| i);
            bus.publish(
                "system.worker.boot_failed",
                json!({"correlation_id": corr, "terminal_id": id,
                       "cause": "boot marker not seen in time", "pty_tail": &tail[cut..],
                       "timeout_ms": o.boot_wait_ms}),
            );
        }
    }
    // Markers count from here; the echo of a typed mission is discounted by `detect`.
    let scan_from = log_tail(ctx, call, &id, 4)?.1;
    let mut echo = String::new();
    if let Some(mission) = &o.mission {
        let text = format!(
            "Your terminal_id is {id}. When the mission is complete, call claws_done (or print {} alone on a line).\n\n{mission}",
            o.complete_marker
        )
        .replace("\u{1b}[200~", "")
        .replace("\u{1b}[201~", "");
        let payload = if o.launch { text } else { mission.clone() };
        echo.clone_from(&payload);
        ok(one(ctx, call, send(&id, &payload, false, true), QUICK)?)?;
        call.sleep(Duration::from_millis(300))?;
        ok(one(ctx, call, send(&id, "\r", false, false), QUICK)?)?;
    } else if let Some(cmd) = &o.command {
        ok(one(ctx, call, send(&id, cmd, true, false), QUICK)?)?;
    }
    Ok(Started {
        id,
        corr,
        started,
        booted,
        scan_from,
        echo,
    })
}

/// How a worker ended, as `detect` says: status, marker line, completion signal.
type Ending = (String, Option<String>, String);

/// Watch until completion or timeout, then announce, harvest and close.
fn finish(ctx: &Ctx, call: &Call, o: &Opts, w: &Started) -> Result<Value, Fail> {
    let outcome = watch(ctx, call, o, w)?;
    let (status, marker_line, signal) = outcome
        .map_or(("timeout".to_owned(), None, Value::Null), |(s, m, g)| {
            (s, m, json!(g))
        });
    let duration_ms = w.started.elapsed().as_millis() as u64;
    // Known before the terminal closes (closing announces `system.terminal.closed`, which a
    // waiter would otherwise read as "terminated").
    ctx.record_finished(
        &w.id,
        &json!({"status": status, "marker_line": marker_line, "completion_signal": signal}),
    );
    let mut payload = json!({"terminal_id": w.id, "status": status, "duration_ms": duration_ms,
        "marker_line": marker_line, "booted": w.booted, "correlation_id": w.corr,
        "completion_signal": signal});
    if o.detach {
        payload["detach"] = json!(true);
    }
    merge(&mut payload, &o.extra);
    if let Some(bus) = ctx.bus_if_any(Some(call)) {
        bus.publish("system.worker.completed", payload);
    }
    best_effort(ctx, call, mark_worker_status(&w.id, &status));
    let (tail, _) = log_tail(ctx, call, &w.id, 256 * 1024).unwrap_or_default();
    let lines: Vec<&str> = tail.split('\n').collect();
    let harvest = lines[lines.len().saturating_sub(o.harvest_lines)..].join("\n");
    let cleaned_up = o.close && close_worker(ctx, call, &w.id, &status)?;
    let result = json!({"status": status, "terminal_id": w.id, "booted": w.booted,
        "duration_ms": duration_ms, "marker_line": marker_line, "cleaned_up": cleaned_up,
        "harvest": harvest, "correlation_id": w.corr, "completion_signal": signal});
    ctx.record_finished(&w.id, &result);
    Ok(result)
}

/// Read the worker's log until a completion signal or the deadline (`None`), publishing its
/// `pub` lines and a heartbeat now and then.
fn watch(ctx: &Ctx, call: &Call, o: &Opts, w: &Started) -> Result<Option<Ending>, Fail> {
    let deadline = w.started + Duration::from_millis(o.timeout_ms);
    let mut pos = w.scan_from;
    let mut text = String::new();
    let mut beat = Instant::now();
    let mut end_seen = false;
    while Instant::now() < deadline {
        let r = one(
            ctx,
            call,
            read_log_req(&w.id, Some(pos), Some(524_288)),
            QUICK,
        )?;
        if r.get("ok") != Some(&Value::Bool(true)) {
            if Refusal::of(&r) == Some(Refusal::UnknownTerminal) {
                return Ok(Some((
                    "terminated".to_owned(),
                    None,
                    "terminated".to_owned(),
                )));
            }
        } else {
            let new = r["bytes"].as_str().unwrap_or("");
            pos = r["nextOffset"].as_u64().unwrap_or(pos);
            publish_pub_lines(ctx, &text, new);
            keep_tail(&mut text, new);
        }
        let outcome = detect(
            ctx,
            &text,
            &w.id,
            &o.complete_marker,
            &o.error_markers,
            &w.echo,
        );
        match outcome {
            // A terminal's end can be announced before its last output reached the log: read
            // once more before calling it terminated (its marker may follow).
            Some(o) if o.2 == "terminated" && !end_seen => end_seen = true,
            Some(o) => return Ok(Some(o)),
            None => {}
        }
        if beat.elapsed() >= HEARTBEAT {
            beat = Instant::now();
            heartbeat(ctx, w);
        }
        call.progress(&format!("worker {} running", w.id));
        call.sleep(Duration::from_millis(o.poll_ms))?;
    }
    Ok(None)
}

/// Append `new` to the text being scanned, keeping at most [`KEEP`] bytes of it.
fn keep_tail(text: &mut String, new: &str) {
    text.push_str(new);
    if text.len() > KEEP {
        let cut = text.len() - KEEP / 2;
        let cut = (cut..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.drain(..cut);
    }
}

/// `worker.<id>.heartbeat` on the bus: still active, for how long.
fn heartbeat(ctx: &Ctx, w: &Started) {
    if let Some(bus) = ctx.bus_if_any(None) {
        let secs = w.started.elapsed().as_secs();
        bus.publish(
            &format!("worker.{}.heartbeat", w.id),
            json!({"kind": "heartbeat", "summary": format!("still active · {secs}s elapsed"),
                   "duration_ms": w.started.elapsed().as_millis() as u64,
                   "captured_at": iso_now(), "correlation_id": w.corr}),
        );
    }
}

/// Close the worker's terminal with the origin its status names; whether it closed.
fn close_worker(ctx: &Ctx, call: &Call, id: &str, status: &str) -> Result<bool, Fail> {
    let origin = match status {
        "completed" => CloseOrigin::Marker,
        "failed" => CloseOrigin::Error,
        "timeout" => CloseOrigin::Timeout,
        _ => CloseOrigin::Orchestrator,
    };
    let r = one(
        ctx,
        call,
        Command::Close(rq::Close {
            target: Target::id(id),
            close_origin: Some(origin),
        }),
        QUICK,
    )?;
    best_effort(ctx, call, mark_worker_status(id, "closed"));
    Ok(r["ok"] == Value::Bool(true))
}

fn watch_in_background(ctx: &Arc<Ctx>, o: &Opts, w: Started) {
    let stop = Arc::new(AtomicBool::new(false));
    if let Ok(mut ws) = ctx.watchers.lock() {
        ws.insert(w.id.clone(), stop.clone());
    }
    let (ctx, o) = (ctx.clone(), o.clone());
    let _ = std::thread::Builder::new()
        .name("mcp-worker".into())
        .spawn(move || {
            let call = Call::detached(stop);
            let _ = finish(&ctx, &call, &o, &w);
            if let Ok(mut ws) = ctx.watchers.lock() {
                ws.remove(&w.id);
            }
        });
}
