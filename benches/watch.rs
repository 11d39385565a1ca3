//! Watch mode (issue 42.5): how soon a write made without a hook is noticed, whether bursts
//! stay one batch, and what watching a big tree costs, on the real binary:
//!
//! - edit → noticed: a lone write of a `.txt` file (the `instant` fixture checks those) to
//!   the first `diagnostics.json` that holds its entry (the pipeline took the edit and the
//!   writer wrote it), p50 and p99 of `OPENFILES_WATCH_EDITS` (30) edits 1.5 s apart
//!   (goal ≤ 200 ms);
//! - batches for a burst of 1 000 files: a real `git checkout` between two commits that
//!   differ in 1 000 files (the batches git's rewrite makes, `status`'s
//!   `gitBatchesIgnored`), and 1 000 files written by a script (the service's `watch batch`
//!   debug lines; not counted for a build without them); goal: 1 each;
//! - a tree of `OPENFILES_WATCH_FILES` files (100 000; the figure is 1 000 000)
//!   in folders of 100: the service's RSS once watched (goal ≤ 50 MiB for 1 000 000) and its
//!   CPU over 10 s of idling (goal 0).
//!
//! `OPENFILES_WATCH_BIN` measures another build of `openfiles` (e.g. `main`'s) for before /
//! after figures. Run: `cargo bench --bench watch` (or, for a quick debug-build figure,
//! `cargo test --bench watch`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Env, Service};
use notify::Watcher;
use openfiles_wire::control::{Status, StatusReply};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn binary() -> PathBuf {
    std::env::var_os("OPENFILES_WATCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(common::bin()))
}

fn serve(env: &Env, ws: &Path) -> Service {
    let cmd = env.command_of(&binary(), &["serve", "-w", ws.to_str().unwrap()]);
    env.serve_command(cmd)
}

fn status(env: &Env) -> StatusReply {
    env.client().call(&Status).unwrap()
}

fn has_entry(ws: &Path, key: &str) -> bool {
    std::fs::read(ws.join(".openfiles/diagnostics.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<openfiles_wire::spec::DiagnosticsFile>(&b).ok())
        .is_some_and(|d| d.files.contains_key(key))
}

/// Write a file, then wait (woken by `diagnostics.json`'s own events) for its entry.
fn edit_to_noticed(ws: &Path, edits: usize) -> Vec<f64> {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut w = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        if e.is_ok() {
            let _ = tx.send(());
        }
    })
    .unwrap();
    w.watch(&ws.join(".openfiles"), notify::RecursiveMode::NonRecursive)
        .unwrap();
    let mut times = Vec::new();
    for i in 0..edits {
        std::thread::sleep(Duration::from_millis(1500));
        while rx.try_recv().is_ok() {}
        let key = format!("src/e{i}.txt");
        let start = Instant::now();
        std::fs::write(ws.join(&key), format!("edit {i}\n")).unwrap();
        let deadline = start + Duration::from_secs(20);
        while !has_entry(ws, &key) {
            assert!(Instant::now() < deadline, "{key} never noticed");
            let _ = rx.recv_timeout(Duration::from_millis(20));
        }
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    times
}

/// Batches `status` counts as git rewrites for one `git checkout` of 1 000 files.
fn checkout_batches(env: &Env, ws: &Path) -> usize {
    let before = status(env).workspaces[0].git_batches_ignored;
    common::git(ws, &["checkout", "-q", "wide"]);
    // The settle time (5 s after a HEAD move) and more.
    std::thread::sleep(Duration::from_secs(8));
    status(env).workspaces[0].git_batches_ignored - before
}

/// `watch batch` lines the service logged for 1 000 files written at once.
fn burst_batches(ws: &Path, svc: &Service) -> Option<usize> {
    let count = || {
        std::fs::read_to_string(&svc.log)
            .unwrap_or_default()
            .matches("watch batch")
            .count()
    };
    let before = count();
    std::fs::create_dir_all(ws.join("burst")).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    for i in 0..1000 {
        std::fs::write(ws.join(format!("burst/b{i}.txt")), "x\n").unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !has_entry(ws, "burst/b999.txt") {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    let n = count() - before;
    (n > 0).then_some(n)
}

fn rss_mib(pid: i32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// utime + stime of `pid`, in clock ticks.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // Fields 14 and 15 of the whole line; 12 and 13 after the command's `)`.
    n(11) + n(12)
}

fn big_tree(files: usize) {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("big");
    let made = Instant::now();
    for d in 0..files.div_ceil(100) {
        let dir = ws.join(format!("d{}/s{d}", d / 100));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100.min(files - d * 100) {
            std::fs::File::create(dir.join(format!("f{f}.txt"))).unwrap();
        }
    }
    println!(
        "  ({files} files made in {:.0} s)",
        made.elapsed().as_secs_f64()
    );
    let start = Instant::now();
    let svc = serve(&env, &ws);
    let watches = status(&env).workspaces[0].watches;
    println!(
        "  watching {watches} folders: served in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    std::thread::sleep(Duration::from_secs(3));
    let pid = svc.pid();
    let ticks = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(10));
    let idle = cpu_ticks(pid) - ticks;
    println!(
        "tree of {files} files: RSS {:.1} MiB (goal <= 50 for 1 000 000), CPU over 10 s idle: {idle} ticks (goal 0)",
        rss_mib(pid)
    );
    drop(svc);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --all-targets` probes benches with --list
    }
    std::env::set_var("OPENFILES_TEST_LOG", "warn,openfiles::intake::watch=debug");
    let profile = if cfg!(debug_assertions) {
        "DEBUG build"
    } else {
        "release build"
    };
    println!(
        "openfiles watch-mode benchmark ({profile}, {}, this machine)",
        binary().display()
    );

    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("wide")).unwrap();
    std::fs::write(ws.join(".gitignore"), ".openfiles/\n").unwrap();
    common::git(&ws, &["init", "-q"]);
    common::git(&ws, &["add", "."]);
    common::git(&ws, &["commit", "-q", "-m", "narrow", "--allow-empty"]);
    common::git(&ws, &["checkout", "-q", "-b", "wide"]);
    for i in 0..1000 {
        std::fs::write(ws.join(format!("wide/w{i}.txt")), format!("{i}\n")).unwrap();
    }
    common::git(&ws, &["add", "wide"]);
    common::git(&ws, &["commit", "-q", "-m", "wide"]);
    common::git(&ws, &["checkout", "-q", "main"]);
    // An old HEAD: the edits below are edits, not a checkout.
    std::thread::sleep(Duration::from_secs(6));

    let svc = serve(&env, &ws);
    let mut times = edit_to_noticed(&ws, env_or("OPENFILES_WATCH_EDITS", 30));
    println!(
        "edit -> noticed (diagnostics.json holds it), {} lone edits: p50 {:.0} ms, p99 {:.0} ms (goal <= 200)",
        times.len(),
        pct(&mut times, 0.5),
        pct(&mut times, 0.99)
    );
    println!(
        "git checkout of 1 000 files: {} batch(es) (goal 1)",
        checkout_batches(&env, &ws)
    );
    std::thread::sleep(Duration::from_secs(2));
    match burst_batches(&ws, &svc) {
        Some(n) => println!("1 000 files written at once: {n} batch(es) (goal 1)"),
        None => println!("1 000 files written at once: not counted (no `watch batch` log lines)"),
    }
    drop(svc);

    big_tree(env_or("OPENFILES_WATCH_FILES", 100_000));
}
