//! Issue 31 (4): how long an agent's first edit waits in `openfiles hook`, with and without
//! the session-start warm-up, on a Python project checked by ruff's server and pyright
//! through the real lsp plugin.
//!
//! Each run is a fresh service and workspace (a committed git repository: `pyproject.toml`
//! with `[tool.pyright]`, three modules), so the language servers start cold:
//! - cold: the first edit (an undefined name in `src/app.py`) goes straight to the hook;
//! - warm: Claude's session-start hook runs first (`--event SessionStart`; its own wall
//!   time is reported), the run waits until `status` says the warm-up is done (an agent's
//!   first edit comes after its model's first turn; the warm-up's duration is reported so
//!   it can be compared with that), then the same first edit.
//!
//! Figures: the hook's wall time for the first edit, p50 / min / max over the runs, per
//! mode; every run must print the real F821 (a complete answer, not the deadline line).
//! Environment: `FIRST_EDIT_RUNS` (default 10).
//!
//! Run: `cargo bench --bench first_edit` (or `--profile dev` for an unoptimized build).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::plugins::{path_list, plugin};
use common::{git, wait_until, Env};
use serde_json::json;

fn project(ws: &Path) {
    std::fs::write(
        ws.join("pyproject.toml"),
        "[project]\nname = \"demo\"\nversion = \"0.1.0\"\n\n[tool.pyright]\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("src/util.py"),
        "import json\n\n\ndef load(text: str) -> dict:\n    return json.loads(text)\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/models.py"),
        "from dataclasses import dataclass\n\n\n@dataclass\nclass User:\n    name: str\n    age: int\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("src/app.py"),
        "from util import load\n\n\ndef main() -> None:\n    print(load('{}'))\n",
    )
    .unwrap();
    git(ws, &["init", "-q"]);
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "base"]);
}

fn hook(env: &Env, args: &[&str], payload: &serde_json::Value) -> (Duration, String) {
    let mut cmd = env.command(args);
    let start = Instant::now();
    let out = common::hook::run_hook(&mut cmd, &payload.to_string());
    let took = start.elapsed();
    assert!(out.status.success());
    (took, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One fresh service; returns (first-edit hook time, session-start hook time, warm-up time).
fn run(warm: bool) -> (Duration, Option<Duration>, Option<Duration>) {
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp")]));
    std::fs::write(
        &env.config,
        "[hooks]\ntimeout_ms = 60000\n[plugin.lsp]\ndisable = [\"basedpyright\"]\n",
    )
    .unwrap();
    let ws = env.workspace("py");
    project(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let session = json!({"session_id": "bench", "cwd": ws, "hook_event_name": "SessionStart", "source": "startup"});
    let (mut start_hook, mut warmup) = (None, None);
    if warm {
        let (took, out) = hook(
            &env,
            &["hook", "--agent", "claude", "--event", "SessionStart"],
            &session,
        );
        assert_eq!(out, "", "the session-start hook prints nothing");
        start_hook = Some(took);
        let mut done = None;
        wait_until("the warm-up is done", || {
            done = env
                .status()
                .workspaces
                .into_iter()
                .find_map(|w| w.warm)
                .filter(|w| w.done_at != 0);
            done.is_some()
        });
        let w = done.unwrap();
        warmup = Some(Duration::from_millis(w.done_at - w.started_at));
    }
    let app = ws.join("src/app.py");
    std::fs::write(
        &app,
        "from util import load\n\n\ndef main() -> None:\n    print(load(undefined_name))\n",
    )
    .unwrap();
    let edit = json!({"session_id": "bench", "cwd": ws, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": app}});
    let (took, out) = hook(&env, &["hook", "--agent", "claude"], &edit);
    assert!(out.contains("F821"), "a complete answer: {out}");
    svc.terminate();
    (took, start_hook, warmup)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn summary(name: &str, mut v: Vec<Duration>) {
    if v.is_empty() {
        return;
    }
    v.sort();
    println!(
        "{name:<44} p50 {:>7.0} ms   min {:>7.0} ms   max {:>7.0} ms   (n={})",
        ms(v[(v.len() - 1) / 2]),
        ms(v[0]),
        ms(v[v.len() - 1]),
        v.len()
    );
}

fn main() {
    let runs: usize = std::env::var("FIRST_EDIT_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let (mut cold, mut warm, mut starts, mut warmups) = (vec![], vec![], vec![], vec![]);
    // Alternate the modes so a change in the machine's load hits both alike.
    for i in 0..runs {
        for w in [false, true] {
            let (edit, start, warmup) = run(w);
            eprintln!(
                "run {i} {}: first edit {:.0} ms",
                if w { "warm" } else { "cold" },
                ms(edit)
            );
            if w {
                warm.push(edit);
                starts.extend(start);
                warmups.extend(warmup);
            } else {
                cold.push(edit);
            }
        }
    }
    println!("first-edit hook, Python (ruff + pyright), fresh service per run:");
    summary("cold (no session-start hook)", cold);
    summary("warm (after the session-start warm-up)", warm);
    summary("session-start hook itself", starts);
    summary("warm-up (request to servers ready)", warmups);
}
