//! Figures for the review commands (issue 21), on the real release binary against a real
//! service:
//!
//! - `openfiles review` start to first frame on a session of 1 000 files (goal ≤ 50 ms): the
//!   process started on a pseudo-terminal (120×40) with the hidden `--first-frame` (connect,
//!   fetch the session, group it, set up the terminal, draw, restore), wall time to its exit,
//!   p50/p95 of 20 runs;
//! - `openfiles status --short` wall time (goal ≤ 5 ms; it runs on every prompt), p50/p95 of
//!   50 runs.
//!
//! Run: `cargo bench --bench review`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use common::{wait_until, Env};
use openfiles_wire::control::{Edited, EditedReply};

const FILES: usize = 1000;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// A session of `FILES` files edited by three agents.
fn session(env: &Env, ws: &Path) {
    let agents = ["claude", "codex", "gemini"];
    for (n, agent) in agents.iter().enumerate() {
        let paths: Vec<_> = (0..FILES)
            .filter(|i| i % agents.len() == n)
            .map(|i| {
                let dir = ws.join(format!("src/m{}", i / 50));
                std::fs::create_dir_all(&dir).unwrap();
                let p = dir.join(format!("f{i}.txt"));
                std::fs::write(&p, format!("file {i}\n")).unwrap();
                p
            })
            .collect();
        let _: EditedReply = env
            .client()
            .call(&Edited {
                paths,
                agent: Some((*agent).into()),
                ..Default::default()
            })
            .unwrap();
    }
    wait_until("the session is checked", || {
        common::diagnostics(ws)
            .is_some_and(|d| d.files.len() == FILES && d.files.values().all(|e| e.checked_at != 0))
    });
}

/// One `review --first-frame` on a fresh pseudo-terminal; its wall time in ms.
fn first_frame(env: &Env, ws: &Path) -> f64 {
    let size = nix::pty::Winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    let slave: OwnedFd = pty.slave;
    let mut master = std::fs::File::from(pty.master);
    // Drain the terminal's output so the program never blocks on a full buffer.
    let drain = std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        let mut total = 0;
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
        }
        total
    });
    let mut cmd = env.command(&["review", "--first-frame", ws.to_str().unwrap()]);
    cmd.env("RUST_LOG", "warn")
        .env("TERM", "xterm-256color")
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let start = Instant::now();
    let status = cmd.status().unwrap();
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    assert!(status.success(), "review --first-frame failed");
    // The command holds the terminal's other end: closing it ends the drain.
    drop(cmd);
    let _ = drain.join();
    ms
}

fn status_short(env: &Env, ws: &Path) -> (f64, String) {
    let start = Instant::now();
    let out = env
        .command(&["status", "--short"])
        .current_dir(ws)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    assert!(out.status.success());
    (ms, String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    session(&env, &ws);

    first_frame(&env, &ws); // warm the page cache
    let mut frames: Vec<f64> = (0..20).map(|_| first_frame(&env, &ws)).collect();
    println!(
        "review start → first frame, {FILES} session files: p50 {:.1} ms, p95 {:.1} ms (goal ≤ 50 ms)",
        pct(&mut frames, 0.5),
        pct(&mut frames, 0.95)
    );

    let (_, line) = status_short(&env, &ws);
    assert!(
        line.contains("unreviewed"),
        "status --short printed {line:?}"
    );
    let mut shorts: Vec<f64> = (0..50).map(|_| status_short(&env, &ws).0).collect();
    println!(
        "status --short wall time ({line:?}): p50 {:.2} ms, p95 {:.2} ms (goal ≤ 5 ms)",
        pct(&mut shorts, 0.5),
        pct(&mut shorts, 0.95)
    );
    drop(svc);
}
