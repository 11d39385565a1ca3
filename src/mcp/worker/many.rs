//! Several workers at once: `claws_fleet` (parallel starts, shared defaults),
//! `claws_workers_wait` (finished results first, then markers in new output),
//! `claws_dispatch_subworker` (a wave role's agent, booted in the background).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::signals::{detect, error_markers};
use super::{
    boot_and_send, create, finish, log_tail, opts, start, watch_in_background, Opts, QUICK,
};
use crate::mcp::call::{Call, Fail};
use crate::mcp::claws_tools::{monitor_command, one, read_log_req};
use crate::mcp::server::Ctx;
use crate::mcp::{pretty, Refusal};
use openfiles_wire::claws::request::{Command, WaveRef};

pub fn fleet(ctx: &Arc<Ctx>, call: &Call, args: &Value) -> Result<String, Fail> {
    let root = ctx.place.root.clone();
    let specs = args["workers"].as_array().cloned().unwrap_or_default();
    if specs.is_empty() {
        return Err(Fail::Tool(
            "ERROR: workers must be a non-empty array of worker configs".into(),
        ));
    }
    let detach = args.get("detach").and_then(Value::as_bool).unwrap_or(true);
    let mut shared = args.clone();
    if let Some(o) = shared.as_object_mut() {
        o.remove("workers");
        o.insert("detach".into(), json!(detach));
        o.remove("wait");
    }
    let all: Vec<Opts> = specs
        .iter()
        .map(|w| {
            let mut w = w.clone();
            if let Some(o) = w.as_object_mut() {
                o.remove("detach");
                o.remove("wait");
            }
            opts(&w, &shared, &root, detach)
        })
        .collect::<Result<_, _>>()?;
    let began = Instant::now();
    let results: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = all
            .iter()
            .map(|o| {
                s.spawn(move || -> Result<Value, Fail> {
                    let w = start(ctx, call, o)?;
                    if o.detach {
                        let spawned = json!({"status": "spawned", "terminal_id": w.id, "booted": w.booted,
                            "duration_ms": w.started.elapsed().as_millis() as u64, "correlation_id": w.corr});
                        watch_in_background(ctx, o, w);
                        return Ok(spawned);
                    }
                    finish(ctx, call, o, &w)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(Ok(v)) => v,
                Ok(Err(Fail::Cancelled)) => json!({"status": "error", "error": "cancelled"}),
                Ok(Err(e)) => json!({"status": "error", "error": e.to_string()}),
                Err(_) => json!({"status": "error", "error": "internal error"}),
            })
            .collect()
    });
    if call.cancelled() {
        return Err(Fail::Cancelled);
    }
    let ms = |r: &Value| r["duration_ms"].as_u64().unwrap_or(0);
    let workers: Vec<Value> = results
        .iter()
        .zip(&all)
        .map(|(r, o)| {
            let corr = r["correlation_id"].as_str();
            json!({"name": o.name, "status": r["status"], "terminal_id": r["terminal_id"],
                   "correlation_id": r["correlation_id"], "duration_ms": r["duration_ms"],
                   "marker_line": r["marker_line"],
                   "monitor_arm_command": corr.map(|c| monitor_command(&root, c))})
        })
        .collect();
    Ok(pretty(&json!({
        "fleet_size": results.len(),
        "detach": detach,
        "wall_clock_ms": began.elapsed().as_millis() as u64,
        "max_individual_ms": results.iter().map(ms).max().unwrap_or(0),
        "sum_individual_ms": results.iter().map(ms).sum::<u64>(),
        "workers": workers,
        "monitor_arm_required": true,
        "monitor_arm_command": "arm one monitor_arm_command per worker entry above",
        "events_log_path": root.join(".claws").join("events"),
    })))
}

/// What `claws_workers_wait` was asked for.
struct WaitAsk {
    ids: Vec<String>,
    complete: String,
    errors: Vec<String>,
    timeout: Duration,
    poll: Duration,
    /// How many workers must be done.
    target: usize,
}

impl WaitAsk {
    fn parse(args: &Value) -> Result<WaitAsk, Fail> {
        let ids: Vec<String> = args["terminal_ids"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        if ids.is_empty() {
            return Err(Fail::Tool(
                "ERROR: terminal_ids must be a non-empty array".into(),
            ));
        }
        let complete = args["complete_marker"]
            .as_str()
            .filter(|m| !m.is_empty())
            .unwrap_or("MISSION_COMPLETE")
            .to_owned();
        let errors = error_markers(args.get("error_markers"));
        let millis = |key: &str, default: u64| {
            Duration::from_millis(args[key].as_u64().filter(|&t| t > 0).unwrap_or(default))
        };
        let target = args["min_complete"]
            .as_u64()
            .filter(|&n| n > 0)
            .map_or(ids.len(), |n| (n as usize).min(ids.len()));
        Ok(WaitAsk {
            complete,
            errors,
            timeout: millis("timeout_ms", 300_000),
            poll: millis("poll_interval_ms", 1500),
            target,
            ids,
        })
    }
}

/// One worker being waited for: its outcome once known, and its log read so far.
struct Watched {
    /// `pending` until known.
    status: String,
    signal: Value,
    marker_line: Value,
    duration_ms: Value,
    /// Where its log is read from next.
    offset: u64,
    /// Its log text read since the wait began.
    text: String,
    /// Its terminal's end was seen once (read once more before calling it terminated).
    ended: bool,
}

impl Watched {
    fn new(offset: u64) -> Watched {
        Watched {
            status: "pending".into(),
            signal: Value::Null,
            marker_line: Value::Null,
            duration_ms: Value::Null,
            offset,
            text: String::new(),
            ended: false,
        }
    }

    fn pending(&self) -> bool {
        self.status == "pending"
    }

    fn settle(&mut self, status: String, signal: Value, marker_line: Value, began: Instant) {
        self.status = status;
        self.signal = signal;
        self.marker_line = marker_line;
        self.duration_ms = json!(began.elapsed().as_millis() as u64);
        self.text.clear();
    }

    /// Look once at a pending worker: its completion signal, else its log's new text.
    fn look(
        &mut self,
        ctx: &Ctx,
        call: &Call,
        id: &str,
        ask: &WaitAsk,
        began: Instant,
    ) -> Result<(), Fail> {
        if let Some(r) = ctx.finished(id) {
            let status = r["status"].as_str().unwrap_or("completed").to_owned();
            self.settle(
                status,
                r["completion_signal"].clone(),
                r["marker_line"].clone(),
                began,
            );
            return Ok(());
        }
        let r = one(
            ctx,
            call,
            read_log_req(id, Some(self.offset), Some(524_288)),
            QUICK,
        )?;
        if r["ok"] == Value::Bool(true) {
            self.offset = r["nextOffset"].as_u64().unwrap_or(self.offset);
            self.text.push_str(r["bytes"].as_str().unwrap_or(""));
        }
        if let Some((s, m, g)) = detect(ctx, &self.text, id, &ask.complete, &ask.errors, "") {
            // A terminal's end can be announced before its last output reached the log:
            // read once more before calling it terminated (its marker may follow).
            if g == "terminated" && !self.ended {
                self.ended = true;
                return Ok(());
            }
            self.settle(s, json!(g), json!(m), began);
        }
        Ok(())
    }
}

pub fn workers_wait(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let ask = WaitAsk::parse(args)?;
    let began = Instant::now();
    let mut state: Vec<Watched> = ask
        .ids
        .iter()
        .map(|id| Watched::new(log_tail(ctx, call, id, 4).map(|t| t.1).unwrap_or(0)))
        .collect();
    loop {
        for (id, st) in ask.ids.iter().zip(state.iter_mut()) {
            if st.pending() {
                st.look(ctx, call, id, &ask, began)?;
            }
        }
        let done = state.iter().filter(|s| !s.pending()).count();
        if done >= ask.target || began.elapsed() >= ask.timeout {
            break;
        }
        call.progress(&format!("{done} of {} workers done", ask.ids.len()));
        call.sleep(ask.poll.min(ask.timeout.saturating_sub(began.elapsed())))?;
    }
    let mut pending = Vec::new();
    let results: Vec<Value> = ask
        .ids
        .iter()
        .zip(state.iter_mut())
        .map(|(id, st)| {
            if st.pending() {
                st.status = "timeout".into();
                st.duration_ms = json!(began.elapsed().as_millis() as u64);
                pending.push(id.clone());
            }
            json!({"terminal_id": id, "status": st.status, "signal": st.signal, "marker_line": st.marker_line, "duration_ms": st.duration_ms})
        })
        .collect();
    Ok(pretty(&json!({
        "ok": true,
        "complete": ask.ids.len() - pending.len(),
        "target": ask.target,
        "total": ask.ids.len(),
        "wall_clock_ms": began.elapsed().as_millis() as u64,
        "pending": pending,
        "results": results,
    })))
}

pub fn subworker(ctx: &Arc<Ctx>, call: &Call, args: &Value) -> Result<String, Fail> {
    let root = ctx.place.root.clone();
    let wave = args["waveId"].as_str().unwrap_or("");
    let role = args["role"].as_str().unwrap_or("");
    let check = one(
        ctx,
        call,
        Command::WaveStatus(WaveRef {
            wave_id: Some(wave.to_owned()),
        }),
        QUICK,
    )?;
    if Refusal::of(&check) == Some(Refusal::NotFound) {
        return Err(Fail::Tool(format!(
            "SPAWN REFUSED: wave.not-registered — call claws_wave_create({{waveId:'{wave}', manifest:[...]}}) first"
        )));
    }
    let mut spec = args.clone();
    spec["name"] = json!(format!("wave-{wave}-{role}"));
    spec["launch_claude"] = json!(true);
    let mut o = opts(&spec, &json!({}), &root, true)?;
    o.extra = json!({"waveId": wave, "role": role});
    let (id, corr, started) = create(ctx, call, &o)?;
    let (bg, o2, id2, corr2) = (ctx.clone(), o.clone(), id.clone(), corr.clone());
    let _ = std::thread::Builder::new()
        .name("mcp-subworker".into())
        .spawn(move || {
            let quiet = Call::detached(Arc::new(AtomicBool::new(false)));
            if let Ok(w) = boot_and_send(&bg, &quiet, &o2, id2, corr2, started) {
                watch_in_background(&bg, &o2, w);
            }
        });
    Ok(pretty(&json!({
        "terminal_id": id, "waveId": wave, "role": role, "name": o.name, "correlation_id": corr,
        "monitor_arm_required": true,
        "monitor_arm_command": monitor_command(&root, &corr),
        "events_log_path": root.join(".claws").join("events"),
    })))
}
