//! Figures for issue 14 (feedback an agent can trust): on a generated TypeScript project of
//! 33 files with the real typescript-language-server and the real `tsc` both enabled, the
//! time from a warm edit (a new type error written to a module) to the hook's feedback
//! containing that error — the `openfiles hook` process's wall time, as an agent waits for
//! it — p50/p90/max over 20 edits, and how many of the 20 calls printed nothing although
//! the error existed. `tsc --noEmit`'s own time on the same project is printed beside.
//!
//! Run: `cargo bench --bench trust` (`TRUST_BENCH_EDITS`, default 20).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::plugins::{path_list, plugin};
use common::typescript::{install_test_deps, module_text, ts_project, which};
use common::Env;
use serde_json::json;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// `tsc --noEmit -p ROOT`, wall time in ms.
fn tsc_ms(root: &Path) -> f64 {
    let start = Instant::now();
    let _ = std::process::Command::new(which("tsc").expect("tsc"))
        .args(["--noEmit", "-p"])
        .arg(root)
        .output()
        .expect("run tsc");
    start.elapsed().as_secs_f64() * 1000.0
}

fn main() {
    install_test_deps();
    let edits: usize = std::env::var("TRUST_BENCH_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp"), plugin("tsc")]));
    let ws = env.workspace("web");
    let p = ts_project(&ws, 31);
    let files = p.modules.len() + 2;
    let mut tsc_times: Vec<f64> = (0..3).map(|_| tsc_ms(&ws)).collect();
    let tsc_p50 = pct(&mut tsc_times, 0.5);

    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut all: Vec<&Path> = p.modules.iter().map(|m| m.as_path()).collect();
    all.push(&p.util);
    all.push(&p.legacy);
    let warm_start = Instant::now();
    let r = env.edited(&all);
    assert!(env.wait(&all, r.ts, 600_000).complete, "warm-up");
    let warm_ms = warm_start.elapsed().as_secs_f64() * 1000.0;

    let mut times = Vec::new();
    let mut empty = 0;
    let mut partial = 0;
    for n in 0..edits {
        let i = 3 + (n * 7) % (p.modules.len() - 3);
        let file = &p.modules[i];
        let mistake = format!("export const oops{n}: number = \"text {n}\";\n");
        std::fs::write(file, module_text(i, &mistake)).unwrap();
        let payload =
            json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": file}}).to_string();
        let start = Instant::now();
        let out =
            common::hook::run_hook(&mut env.command(&["hook", "--agent", "claude"]), &payload);
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let text = String::from_utf8_lossy(&out.stdout);
        let found = text.contains(&format!("src/m{i}.ts:8:14 error 2322"));
        if !found {
            empty += 1;
            eprintln!("edit {n}: no feedback with the error: {text:?}");
        }
        if text.contains("Still checking") {
            partial += 1;
        }
        times.push(ms);
        // Undo, and let both sources settle before the next edit.
        std::fs::write(file, module_text(i, "")).unwrap();
        let r = env.edited(&[file.as_path()]);
        env.wait(&[file.as_path()], r.ts, 600_000);
        std::thread::sleep(Duration::from_millis(50));
    }
    let (p50, p90, max) = (
        pct(&mut times, 0.5),
        pct(&mut times, 0.9),
        pct(&mut times, 1.0),
    );
    println!("issue 14: warm edit → hook feedback, TypeScript project of {files} files, typescript-language-server + tsc");
    println!("  tsc --noEmit on the project:      p50 {tsc_p50:.0} ms (3 runs)");
    println!("  warm-up (both sources, all files): {warm_ms:.0} ms");
    println!("  hook feedback with the new error:  p50 {p50:.0} ms, p90 {p90:.0} ms, max {max:.0} ms ({edits} edits)");
    println!("  hook calls with no feedback although the error existed: {empty} of {edits}");
    println!(
        "  of which answered before tsc finished (\"Still checking: tsc\"): {partial} of {edits}"
    );
}
