//! Issue 31 (4) and issue 42 (4): how long an agent's first edit waits in `openfiles hook`,
//! with and without the session-start warm-up, through the real lsp plugin.
//!
//! Each run is a fresh service and workspace, so the language servers start cold:
//! - cold: the first edit goes straight to the hook;
//! - warm: Claude's session-start hook runs first (`--event SessionStart`; its own wall
//!   time is reported), the run waits until `status` says the warm-up is done (its duration
//!   is reported), then the same first edit;
//! - early: the session-start hook, then the first edit `FIRST_EDIT_DELAY_MS` (default
//!   1000) after it returned, while the warm-up may still run (a fast model's first edit).
//!
//! The project: by default a generated one (a committed git repository: `pyproject.toml`
//! with `[tool.pyright]`, three modules; the edit plants an undefined name in `src/app.py`,
//! ruff's server and pyright answer). With `FIRST_EDIT_PROJECT=DIR` (a git checkout, cloned
//! into each run's temp folder) and `FIRST_EDIT_FILE=REL` (the file edited), a real one: the
//! edit appends a line with the file's own problem — an undefined name in a `.py` file
//! (expects `F821`), a string assigned to a number in a `.ts` file (expects `2322`);
//! `FIRST_EDIT_EXPECT` overrides what the answer must contain. The pinned real projects:
//! - click: `git clone https://github.com/pallets/click && git -C click checkout
//!   2c8cd3ac958a7eb316d67f2d316c27086c4c0369`, `FIRST_EDIT_FILE=src/click/utils.py`;
//! - ky: `git clone https://github.com/sindresorhus/ky && git -C ky checkout
//!   3419113b48e034fdcf8fa6bd3be3da7b3d0d758f`, `FIRST_EDIT_FILE=source/core/Ky.ts`
//!   (no `npm ci`: the TypeScript on PATH serves it).
//!
//! Figures: the hook's wall time for the first edit, p50 / min / max over the runs, per
//! mode; every run must print the expected code. The generated project's hook waits for a
//! complete answer (`[hooks] timeout_ms = 60000`); a real project's keeps the defaults (4 s
//! deadline, partial answers), as an agent's does. `FIRST_EDIT_LOG=1` prints each run's
//! service log.
//! Environment: `FIRST_EDIT_RUNS` (default 10), `FIRST_EDIT_MODES` (default
//! `cold,warm,early`).
//!
//! Run: `cargo bench --bench first_edit` (or `--profile dev` for an unoptimized build).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::plugins::{path_list, plugin};
use common::{git, wait_until, Env};
use serde_json::json;

/// What a run checks: the generated project, or a checkout.
struct Project {
    /// A git checkout to clone (`FIRST_EDIT_PROJECT`); `None`: the generated project.
    checkout: Option<PathBuf>,
    /// The edited file, relative to the workspace.
    file: String,
    /// What the first edit appends to it.
    append: String,
    /// What the hook's answer must contain.
    expect: String,
}

impl Project {
    fn from_env() -> Project {
        let checkout = std::env::var_os("FIRST_EDIT_PROJECT").map(PathBuf::from);
        let file = match (&checkout, std::env::var("FIRST_EDIT_FILE")) {
            (_, Ok(f)) => f,
            (None, Err(_)) => "src/app.py".into(),
            (Some(_), Err(_)) => panic!("FIRST_EDIT_PROJECT needs FIRST_EDIT_FILE"),
        };
        let (append, expect) = if file.ends_with(".ts") || file.ends_with(".tsx") {
            (
                "\nexport const openfilesBench: number = \"not a number\";\n",
                "2322",
            )
        } else {
            ("\nprint(undefined_name)\n", "F821")
        };
        Project {
            checkout,
            file,
            append: append.into(),
            expect: std::env::var("FIRST_EDIT_EXPECT").unwrap_or_else(|_| expect.into()),
        }
    }

    /// Make the workspace `ws` (a fresh folder).
    fn make(&self, ws: &Path) {
        match &self.checkout {
            Some(src) => {
                std::fs::remove_dir(ws).unwrap();
                common::clone_checkout(src, ws);
            }
            None => generated(ws),
        }
    }
}

fn generated(ws: &Path) {
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

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Cold,
    Warm,
    Early(Duration),
}

/// What one run measured.
#[derive(Default)]
struct Run {
    edit: Duration,
    /// The hook's answer named the edited file's own problem.
    found: bool,
    start_hook: Option<Duration>,
    warmup: Option<Duration>,
}

/// One fresh service.
fn run(project: &Project, mode: Mode) -> Run {
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp")]));
    // The generated project's hook waits for complete answers; a real project's keeps the
    // default deadline and partial answers, as an agent's does.
    let hooks = if project.checkout.is_none() {
        "[hooks]\ntimeout_ms = 60000\n"
    } else {
        ""
    };
    std::fs::write(
        &env.config,
        format!("{hooks}[plugin.lsp]\ndisable = [\"basedpyright\"]\n"),
    )
    .unwrap();
    let ws = env.workspace("proj");
    project.make(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let session = json!({"session_id": "bench", "cwd": ws, "hook_event_name": "SessionStart", "source": "startup"});
    let mut out = Run::default();
    if mode != Mode::Cold {
        let (took, said) = hook(
            &env,
            &["hook", "--agent", "claude", "--event", "SessionStart"],
            &session,
        );
        assert_eq!(said, "", "the session-start hook prints nothing");
        out.start_hook = Some(took);
    }
    match mode {
        Mode::Warm => {
            let mut done = None;
            wait_until("the warm-up is done", || {
                done = warm_state(&env);
                done.is_some()
            });
            let w = done.unwrap();
            out.warmup = Some(Duration::from_millis(w.done_at - w.started_at));
        }
        Mode::Early(after) => std::thread::sleep(after),
        Mode::Cold => {}
    }
    let file = ws.join(&project.file);
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&project.append);
    std::fs::write(&file, text).unwrap();
    let edit = json!({"session_id": "bench", "cwd": ws, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": file}});
    let (took, said) = hook(&env, &["hook", "--agent", "claude"], &edit);
    out.edit = took;
    out.found = said.contains(&project.expect);
    if std::env::var_os("FIRST_EDIT_LOG").is_some() {
        eprintln!("--- hook said: {said}");
    }
    // The generated project's hook waits for a complete answer: it must have the problem.
    assert!(
        out.found || project.checkout.is_some(),
        "a complete answer with {}: {said}",
        project.expect
    );
    if let Mode::Early(_) = mode {
        wait_until("the warm-up is done", || warm_state(&env).is_some());
        let w = warm_state(&env).unwrap();
        out.warmup = Some(Duration::from_millis(w.done_at - w.started_at));
    }
    if std::env::var_os("FIRST_EDIT_LOG").is_some() {
        eprintln!("--- service log\n{}", svc.log_text());
    }
    svc.terminate();
    out
}

/// The workspace's last warm-up, once done.
fn warm_state(env: &Env) -> Option<openfiles_wire::control::WarmState> {
    env.status()
        .workspaces
        .into_iter()
        .find_map(|w| w.warm)
        .filter(|w| w.done_at != 0)
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
        "{name:<48} p50 {:>7.0} ms   min {:>7.0} ms   max {:>7.0} ms   (n={})",
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
    let delay = Duration::from_millis(
        std::env::var("FIRST_EDIT_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000),
    );
    let early = format!(
        "early (edit {} ms after the session start)",
        delay.as_millis()
    );
    let modes: Vec<(&str, Mode)> = std::env::var("FIRST_EDIT_MODES")
        .unwrap_or_else(|_| "cold,warm,early".into())
        .split(',')
        .map(|m| match m.trim() {
            "cold" => ("cold (no session-start hook)", Mode::Cold),
            "warm" => ("warm (after the session-start warm-up)", Mode::Warm),
            "early" => (early.as_str(), Mode::Early(delay)),
            other => panic!("FIRST_EDIT_MODES: unknown mode {other}"),
        })
        .collect();
    let project = Project::from_env();
    let mut edits: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    let mut missed = vec![0; modes.len()];
    let (mut starts, mut warmups) = (vec![], vec![]);
    // Alternate the modes so a change in the machine's load hits all alike.
    for i in 0..runs {
        for (k, (name, mode)) in modes.iter().enumerate() {
            let r = run(&project, *mode);
            eprintln!(
                "run {i} {name}: first edit {:.0} ms{}",
                ms(r.edit),
                if r.found {
                    ""
                } else {
                    " (without the problem)"
                }
            );
            edits[k].push(r.edit);
            missed[k] += usize::from(!r.found);
            starts.extend(r.start_hook);
            warmups.extend(r.warmup);
        }
    }
    match &project.checkout {
        Some(p) => println!(
            "first-edit hook, {} ({}), fresh service per run:",
            p.display(),
            project.file
        ),
        None => println!("first-edit hook, Python (ruff + pyright), fresh service per run:"),
    }
    for (((name, _), v), missed) in modes.iter().zip(edits).zip(missed) {
        summary(name, v);
        if missed > 0 {
            println!("  … {missed} of them answered without the edited file's problem");
        }
    }
    summary("session-start hook itself", starts);
    summary("warm-up (request to servers ready)", warmups);
}
