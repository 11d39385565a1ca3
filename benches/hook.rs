//! Figures for issue 5: the cost of one `openfiles hook` call, measured on the built binary
//! (run with `cargo bench --bench hook`, which builds it in release).
//!
//! - `--no-feedback` process wall time and peak RSS (p50/p95 over N runs, RSS from
//!   `wait4(2)`'s rusage of each child), in three situations: no service and no workspace
//!   (parse and leave), no service with a fresh heartbeat (append the queue line), and a
//!   service answering `edited`.
//! - Hook round-trip overhead with an instantly answering checker: a fake control server in
//!   this process answers `edited` and `wait` at once (entries already checked), so the
//!   figure is the hook's own cost (process start, payload parsing, two socket round
//!   trips, formatting, output), not any checker's.
//!
//! Environment: `HOOK_BENCH_RUNS` (default 300).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use openfiles_wire::control::{
    decode, ok_reply, EditedReply, Request, WaitReply, WorkspaceEntries, WorkspacePaths,
};
use openfiles_wire::spec::{FileEntry, HookSettings, Item, Severity};

const BIN: &str = env!("CARGO_BIN_EXE_openfiles");

struct Sample {
    wall: Duration,
    max_rss_kib: i64,
    stdout_len: usize,
}

// The child is reaped with wait4(2) (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run_once(socket: &Path, cwd: &Path, args: &[&str], payload: &[u8]) -> Sample {
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .arg("hook")
        .args(args)
        .env("OPENFILES_SOCKET", socket)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn hook");
    {
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(payload).expect("payload");
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(child.stdout.as_mut().expect("stdout"), &mut out).expect("read");
    let mut status = 0;
    // SAFETY: rusage is plain data; all-zero bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: plain syscall on our own child's pid with valid out-pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let wall = start.elapsed();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "hook must exit 0"
    );
    Sample {
        wall,
        max_rss_kib: usage.ru_maxrss,
        stdout_len: out.len(),
    }
}

fn pct<T: Copy + Ord>(v: &mut [T], p: f64) -> T {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn report(name: &str, samples: &[Sample]) {
    let mut walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    let mut rss: Vec<i64> = samples.iter().map(|s| s.max_rss_kib).collect();
    let (p50, p95) = (pct(&mut walls, 0.50), pct(&mut walls, 0.95));
    let (r50, rmax) = (pct(&mut rss, 0.50), pct(&mut rss, 1.0));
    println!(
        "{name:<58} wall p50 {:>6.2} ms  p95 {:>6.2} ms   peak RSS p50 {:>5.2} MiB  max {:>5.2} MiB   (n={})",
        p50.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3,
        r50 as f64 / 1024.0,
        rmax as f64 / 1024.0,
        samples.len()
    );
}

/// A control server that answers at once: `edited` accepts every path into `root`, `wait`
/// returns them checked at `since` with one error each.
fn fake_service(socket: PathBuf, root: PathBuf) {
    let listener = UnixListener::bind(&socket).expect("bind fake service");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let root = root.clone();
            std::thread::spawn(move || {
                let mut writer = conn.try_clone().expect("clone");
                let reader = BufReader::new(conn);
                for line in reader.split(b'\n') {
                    let Ok(line) = line else { return };
                    let inc = decode(&line);
                    let mut reply = match inc.request {
                        Ok(Request::Edited(e)) => ok_reply(
                            inc.id.as_ref(),
                            EditedReply {
                                ts: openfiles_wire::spec::now_ms(),
                                workspaces: vec![WorkspacePaths {
                                    root: root.clone(),
                                    paths: e.paths,
                                }],
                                rejected: vec![],
                                paused: vec![],
                            },
                        ),
                        Ok(Request::Wait(w)) => {
                            let files = w
                                .paths
                                .iter()
                                .map(|p| {
                                    let key =
                                        p.strip_prefix(&root).unwrap_or(p).display().to_string();
                                    let item = Item {
                                        introduced: None,
                                        fixes: Vec::new(),
                                        line: 2,
                                        column: 13,
                                        severity: Severity::Error,
                                        source: "rustc".into(),
                                        code: Some("E0308".into()),
                                        message: "mismatched types".into(),
                                    };
                                    (key, FileEntry::checked(p.clone(), w.since, vec![item]))
                                })
                                .collect();
                            ok_reply(
                                inc.id.as_ref(),
                                WaitReply {
                                    complete: true,
                                    workspaces: vec![WorkspaceEntries {
                                        root: root.clone(),
                                        hook: HookSettings::default(),
                                        files,
                                        baseline: None,
                                    }],
                                    ..Default::default()
                                },
                            )
                        }
                        _ => openfiles_wire::control::error_reply(inc.id.as_ref(), "unexpected"),
                    };
                    reply.push(b'\n');
                    if writer.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
}

fn main() {
    let runs: usize = std::env::var("HOOK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    let file = root.join("src/main.rs");
    std::fs::write(&file, "fn main() {}\n").expect("write");
    let payload = serde_json::json!({
        "cwd": root, "hook_event_name": "PostToolUse", "tool_name": "Edit",
        "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"}
    })
    .to_string();
    let payload = payload.as_bytes();
    let nobody = tmp.path().join("nobody.sock");
    println!("openfiles hook benchmark: {BIN}");
    println!(
        "(reference: the editor extension's Node hook.js costs ~54 ms and ~42 MiB per call here)"
    );
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "machine: {} CPUs, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );

    let s: Vec<Sample> = (0..runs)
        .map(|_| {
            run_once(
                &nobody,
                tmp.path(),
                &["--agent", "claude", "--no-feedback"],
                payload,
            )
        })
        .collect();
    report("--no-feedback, no service, no workspace", &s);

    let hb = root.join(".openfiles/vscode");
    std::fs::create_dir_all(&hb).expect("mkdir");
    std::fs::write(hb.join("bench.json"), "{}").expect("heartbeat");
    let s: Vec<Sample> = (0..runs)
        .map(|_| {
            run_once(
                &nobody,
                tmp.path(),
                &["--agent", "claude", "--no-feedback"],
                payload,
            )
        })
        .collect();
    report(
        "--no-feedback, no service, fresh heartbeat (queue append)",
        &s,
    );
    let lines = std::fs::read_to_string(root.join(".openfiles/queue.jsonl"))
        .map(|t| t.lines().count())
        .unwrap_or(0);
    assert_eq!(lines, runs, "every run appended one queue line");
    std::fs::remove_dir_all(root.join(".openfiles")).expect("cleanup");

    let socket = tmp.path().join("fake.sock");
    fake_service(socket.clone(), root.clone());
    let s: Vec<Sample> = (0..runs)
        .map(|_| {
            run_once(
                &socket,
                tmp.path(),
                &["--agent", "claude", "--no-feedback"],
                payload,
            )
        })
        .collect();
    report(
        "--no-feedback, service answering `edited` (fake, instant)",
        &s,
    );

    let s: Vec<Sample> = (0..runs)
        .map(|_| run_once(&socket, tmp.path(), &["--agent", "claude"], payload))
        .collect();
    assert!(
        s.iter().all(|x| x.stdout_len > 0),
        "feedback printed every time"
    );
    report(
        "round trip with feedback, instantly answering checker (fake)",
        &s,
    );
    println!("(the fake control server in this process answers `edited` and `wait` at once: the round-trip");
    println!(" figure is the hook's own overhead: process start, parse, two socket round trips, formatting)");
}
