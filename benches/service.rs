//! Figures for the service core and the diagnostics pipeline (issues 2 and 3), measured on
//! the real release binary with real sockets:
//!
//! - start → `READY=1` (ms, p50 of 20 starts, 1 workspace);
//! - idle RSS with 10 workspaces;
//! - control-socket round trip (`hello`), p50/p95 over one connection;
//! - queue ingestion, lines/s (200 000 lines appended, time until all are taken);
//! - edit → `diagnostics.json` updated, with the `instant` fixture plugin, p50/p95;
//! - RSS with 10 000 session files.
//!
//! Run: `cargo bench --bench service`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Env, NotifySocket};
use notify::Watcher;
use openfiles_wire::control::{Edited, EditedReply, Hello, Status, StatusReply, Wait, WaitReply};

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn ready_ms() -> f64 {
    let mut times = Vec::new();
    for _ in 0..20 {
        let env = Env::new();
        let ws = env.workspace("ws");
        let notify = NotifySocket::bind(env.dir.path());
        let start = Instant::now();
        let mut child = env
            .command(&["serve", "-w", ws.to_str().unwrap()])
            .env("NOTIFY_SOCKET", &notify.path)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        notify.expect("READY=1");
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        let _ = child.kill();
        let _ = child.wait();
    }
    pct(&mut times, 0.5)
}

fn idle_rss_10_workspaces() -> u64 {
    let env = Env::new();
    let dirs: Vec<PathBuf> = (0..10).map(|i| env.workspace(&format!("ws{i}"))).collect();
    let mut args = vec!["serve".to_string()];
    for d in &dirs {
        args.push("-w".into());
        args.push(d.to_string_lossy().into_owned());
    }
    let notify = NotifySocket::bind(env.dir.path());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = env
        .command(&refs)
        .env("NOTIFY_SOCKET", &notify.path)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    notify.expect("READY=1");
    std::thread::sleep(Duration::from_secs(2)); // idle: let start-up allocations settle
    let rss = rss_kib(child.id());
    let _ = child.kill();
    let _ = child.wait();
    rss
}

fn round_trip(env: &Env) -> (f64, f64) {
    let mut c = env.client();
    let hello = Hello::default();
    for _ in 0..1000 {
        c.call(&hello).unwrap();
    }
    let mut t = Vec::new();
    for _ in 0..20_000 {
        let s = Instant::now();
        c.call(&hello).unwrap();
        t.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    (pct(&mut t, 0.5), pct(&mut t, 0.95))
}

fn queue_rate(env: &Env, ws: &Path) -> f64 {
    let target = ws.join("q.txt");
    std::fs::write(&target, "x").unwrap();
    let line = format!(
        "{{\"v\":1,\"ts\":1,\"agent\":\"bench\",\"tool\":\"Edit\",\"paths\":[{:?}]}}\n",
        target.to_str().unwrap()
    );
    let n = 200_000u64;
    let before = status(env).workspaces[0].queue_lines;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(ws.join(".openfiles/queue.jsonl"))
        .unwrap();
    let start = Instant::now();
    let mut buf = Vec::with_capacity(line.len() * 1000);
    for _ in 0..n / 1000 {
        buf.clear();
        for _ in 0..1000 {
            buf.extend_from_slice(line.as_bytes());
        }
        f.write_all(&buf).unwrap();
    }
    while status(env).workspaces[0].queue_lines < before + n {
        std::thread::sleep(Duration::from_millis(2));
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn status(env: &Env) -> StatusReply {
    env.client().call(&Status).unwrap()
}

fn edit_to_file(env: &Env, ws: &Path) -> (f64, f64, f64, f64) {
    let file = ws.join("edit.txt");
    std::fs::write(&file, "x").unwrap();
    let diag = ws.join(".openfiles/diagnostics.json");
    let (tx, rx) = std::sync::mpsc::channel();
    let mut w = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        if e.is_ok() {
            let _ = tx.send(());
        }
    })
    .unwrap();
    w.watch(&ws.join(".openfiles"), notify::RecursiveMode::NonRecursive)
        .unwrap();
    let mut c = env.client();
    let mut to_file = Vec::new();
    let mut to_wait = Vec::new();
    for i in 0..300 {
        while rx.try_recv().is_ok() {}
        let start = Instant::now();
        let r: EditedReply = c
            .call(&Edited {
                paths: vec![file.clone()],
                ..Default::default()
            })
            .unwrap();
        let w: WaitReply = c
            .call(&Wait {
                paths: vec![file.clone()],
                since: r.ts,
                timeout_ms: Some(10_000),
                partial: false,
                session: None,
                fixes: false,
            })
            .unwrap();
        assert!(w.complete);
        let waited = start.elapsed();
        // Then the file on disk: the first rewrite that shows this edit checked.
        loop {
            let _ = rx.recv_timeout(Duration::from_millis(50));
            let Ok(bytes) = std::fs::read(&diag) else {
                continue;
            };
            let Ok(doc) = serde_json::from_slice::<openfiles_wire::spec::DiagnosticsFile>(&bytes)
            else {
                continue;
            };
            if doc
                .files
                .get("edit.txt")
                .is_some_and(|f| f.checked_at >= r.ts)
            {
                break;
            }
        }
        if i >= 20 {
            to_wait.push(waited.as_secs_f64() * 1000.0);
            to_file.push(start.elapsed().as_secs_f64() * 1000.0);
        }
    }
    (
        pct(&mut to_wait, 0.5),
        pct(&mut to_wait, 0.95),
        pct(&mut to_file, 0.5),
        pct(&mut to_file, 0.95),
    )
}

fn rss_10k_session(env: &Env, ws: &Path, pid: u32) -> u64 {
    let dir = ws.join("many");
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<PathBuf> = (0..10_000).map(|i| dir.join(format!("f{i}.txt"))).collect();
    for f in &files {
        std::fs::write(f, "x").unwrap();
    }
    let mut c = env.client();
    let r: EditedReply = c
        .call(&Edited {
            paths: files.clone(),
            ..Default::default()
        })
        .unwrap();
    let w: WaitReply = c
        .call(&Wait {
            paths: files,
            since: r.ts,
            timeout_ms: Some(120_000),
            partial: false,
            session: None,
            fixes: false,
        })
        .unwrap();
    assert!(w.complete);
    std::thread::sleep(Duration::from_secs(1));
    rss_kib(pid)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --all-targets` probes benches with --list
    }
    std::env::set_var("OPENFILES_TEST_LOG", "warn");
    let profile = if cfg!(debug_assertions) {
        "DEBUG build: figures not meaningful"
    } else {
        "release build"
    };
    println!("openfiles service benchmark ({profile}, this machine)");
    println!(
        "start -> READY=1, p50 of 20: {:.1} ms (goal <= 50)",
        ready_ms()
    );
    println!(
        "idle RSS with 10 workspaces: {:.1} MiB (goal <= 15)",
        idle_rss_10_workspaces() as f64 / 1024.0
    );

    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let (p50, p95) = round_trip(&env);
    println!(
        "control round trip (hello): p50 {:.3} ms, p95 {:.3} ms (goal p50 <= 0.1)",
        p50, p95
    );
    println!(
        "queue ingestion: {:.0} lines/s (goal >= 50000)",
        queue_rate(&env, &ws)
    );
    let (w50, w95, f50, f95) = edit_to_file(&env, &ws);
    println!(
        "edit -> checked (edited+wait answered), instant plugin: p50 {w50:.2} ms, p95 {w95:.2} ms"
    );
    println!("edit -> diagnostics.json updated, instant plugin: p50 {f50:.2} ms, p95 {f95:.2} ms (goal p50 <= 5)");
    let rss = rss_10k_session(&env, &ws, svc.pid() as u32);
    println!(
        "RSS with 10000 session files: {:.1} MiB (goal <= 40)",
        rss as f64 / 1024.0
    );
    svc.terminate();
}
