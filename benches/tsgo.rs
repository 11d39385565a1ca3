//! Figures for issue 19 (TypeScript 7's `tsgo` beside `tsc`), on one generated 32-file
//! project with planted mistakes (`plugins/tsc/tests/support/ts_project.rs`), same run,
//! same machine:
//!
//! - the compilers alone: `tsc --noEmit -p .` and `tsgo --noEmit -p .` (npm's node wrapper,
//!   and the platform binary the plugin runs), wall time p50 and peak RSS;
//! - through the service with `[plugin.tsc] compiler = "tsc"` and `= "tsgo"`: warm edit →
//!   project-wide result (an edit of `util2.ts` that breaks or fixes `service2.ts`;
//!   `edited` until `wait` answers for both files), p50/p95; goal with tsgo ≤ 500 ms;
//! - the agent's view: `openfiles hook --agent claude` wall time for the same edit, p50/p95.
//!
//! Run: `cargo bench --bench tsgo` (needs `tsc` and `tsgo` on PATH:
//! `scripts/install-test-deps.sh`). `TSGO_BENCH_RUNS` (default 10) sets the samples.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;
#[path = "../plugins/tsc/tests/support/ts_project.rs"]
mod ts_project;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use common::Env;
use ts_project::{generate, toggle_util2, TsProject};

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Wall time (ms) and peak RSS (KiB) of one run of `exe args` in `cwd`.
// The child is reaped with wait4(2) (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn timed(exe: &Path, args: &[&str], cwd: &Path) -> (f64, i64) {
    let start = Instant::now();
    let child = Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()));
    let mut status = 0;
    // SAFETY: rusage is plain data; all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: plain syscall on our own child's pid with valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    (start.elapsed().as_secs_f64() * 1000.0, usage.ru_maxrss)
}

fn cli(name: &str, exe: &Path, project: &TsProject, runs: usize) {
    let mut wall = Vec::new();
    let mut rss = 0;
    for _ in 0..runs {
        let (ms, kib) = timed(exe, &["--noEmit", "-p", "."], &project.root);
        wall.push(ms);
        rss = rss.max(kib);
    }
    println!(
        "{name:<44} p50 {:>7.0} ms  p95 {:>7.0} ms  peak RSS {:>4} MiB",
        pct(&mut wall, 0.5),
        pct(&mut wall, 0.95),
        rss / 1024
    );
}

/// The service with the tsc plugin set to `compiler`, on a fresh copy of the project.
fn service_figures(compiler: &str, runs: usize) {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("tsc").into_os_string());
    std::fs::write(
        &env.config,
        format!("[plugin.tsc]\ncompiler = \"{compiler}\"\n"),
    )
    .expect("config");
    let ws = env.workspace("lib");
    let project = generate(&ws, 10);
    let svc = env.serve(&["-w", ws.to_str().expect("utf-8 path")]);
    let all: Vec<&Path> = project.files.iter().map(PathBuf::as_path).collect();
    // Warm: every file in the session, one full run (and the incremental build info).
    let r = env.edited(&all);
    assert!(env.wait(&all, r.ts, 120_000).complete, "warm-up run");

    let util2 = project.file("src/util/util2.ts");
    let service2 = project.file("src/services/service2.ts");
    let mut edit = Vec::new();
    for i in 0..runs {
        let broken = i % 2 == 1;
        toggle_util2(&project, broken);
        let start = Instant::now();
        let r = env.edited(&[&util2]);
        let w = env.wait(&[&util2, &service2], r.ts, 60_000);
        edit.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(w.complete, "{compiler}: no result within 60 s");
        let errors = w.workspaces[0]
            .files
            .get("src/services/service2.ts")
            .map(|e| e.errors)
            .unwrap_or(99);
        assert_eq!(
            errors,
            u32::from(broken),
            "{compiler}: service2 follows util2"
        );
    }
    println!(
        "service, compiler = {compiler:<5}: edit -> project-wide result  p50 {:>7.0} ms  p95 {:>7.0} ms{}",
        pct(&mut edit, 0.5),
        pct(&mut edit, 0.95),
        if compiler == "tsgo" { "  (goal <= 500)" } else { "" }
    );

    let mut hook = Vec::new();
    for i in 0..runs {
        toggle_util2(&project, i % 2 == 1);
        let payload = serde_json::json!({
            "cwd": ws, "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": util2, "old_string": "a", "new_string": "b"}
        })
        .to_string();
        let start = Instant::now();
        let mut child = env
            .command(&["hook", "--agent", "claude"])
            .current_dir(&ws)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn hook");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(payload.as_bytes())
            .expect("payload");
        let out = child.wait_with_output().expect("hook");
        hook.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(out.status.success(), "hook failed");
    }
    println!(
        "service, compiler = {compiler:<5}: hook (edit util2.ts) wall  p50 {:>7.0} ms  p95 {:>7.0} ms",
        pct(&mut hook, 0.5),
        pct(&mut hook, 0.95)
    );
    svc.terminate();
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --all-targets` probes benches with --list
    }
    std::env::set_var("OPENFILES_TEST_LOG", "warn");
    let runs: usize = std::env::var("TSGO_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
        .max(2);
    let profile = if cfg!(debug_assertions) {
        "DEBUG build: figures not meaningful"
    } else {
        "release build"
    };
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "tsgo benchmark ({profile}; {} CPUs, load {}), 32-file project, {runs} runs each",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let project = generate(&tmp.path().join("lib"), 10);
    let pkg = ts_project::global_native_preview()
        .expect("tsgo on PATH (npm i -g @typescript/native-preview)");
    let native = native_tsgo(&pkg);
    for (name, exe) in [
        ("tsc --noEmit -p . (tsc 5, node)", PathBuf::from("tsc")),
        (
            "tsgo --noEmit -p . (npm's node wrapper)",
            PathBuf::from("tsgo"),
        ),
        ("tsgo --noEmit -p . (platform binary)", native),
    ] {
        cli(name, &exe, &project, runs);
    }
    service_figures("tsc", runs);
    service_figures("tsgo", runs);
}

/// The platform binary inside the package (as the plugin resolves it).
fn native_tsgo(pkg: &Path) -> PathBuf {
    let platform = format!(
        "native-preview-{}-{}",
        match std::env::consts::OS {
            "macos" => "darwin",
            o => o,
        },
        match std::env::consts::ARCH {
            "x86_64" => "x64",
            "aarch64" => "arm64",
            a => a,
        }
    );
    [
        pkg.join("node_modules/@typescript").join(&platform),
        pkg.parent().map(|s| s.join(&platform)).unwrap_or_default(),
    ]
    .into_iter()
    .map(|d| d.join("lib/tsgo"))
    .find(|p| p.is_file())
    .unwrap_or_else(|| pkg.join("bin/tsgo"))
}
