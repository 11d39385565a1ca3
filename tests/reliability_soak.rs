//! A bounded soak of the real service: several workspaces, a steady stream of control
//! clients (`edited`, `wait`, `status`), Claws clients (`list`, `exec` on one terminal per
//! workspace) and queue lines, with the `instant` plugin checking.
//! The load is a fixed amount of work (not a duration), run once to warm up and then again
//! several times; after each phase the service settles (every line taken, nothing pending)
//! and RSS and open fds are measured. Asserts: every request answered, every line taken
//! once, RSS growth under a generous bound, no fd leak.

mod common;
#[path = "plugins_support/mod.rs"]
mod plugins_support;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use openfiles::control::client::Client;
use openfiles::control::protocol::{Edited, Request, Wait};

const WORKSPACES: usize = 6;
const FILES: usize = 10;
const CLIENTS: usize = 6;
/// Requests per client per round (each round: `edited`, `wait`, `status` cycles).
const REQUESTS: usize = 90;
/// Queue lines per workspace per round.
const LINES: usize = 800;
const ROUNDS: usize = 6;
/// RSS may grow by at most this much between the warmed-up start and the end.
const RSS_SLACK_KB: u64 = 64 * 1024;

fn rss_kb(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

struct Load {
    socket: PathBuf,
    workspaces: Vec<PathBuf>,
    files: Vec<Vec<PathBuf>>,
    /// One Claws terminal per workspace: (socket, terminal id).
    terminals: Vec<(PathBuf, String)>,
}

/// One Claws request on its own connection (how claws/1 clients call); `None` on any failure.
fn claws_call(sock: &std::path::Path, line: &str) -> Option<serde_json::Value> {
    use std::io::BufRead;
    let mut s = std::os::unix::net::UnixStream::connect(sock).ok()?;
    s.set_read_timeout(Some(PATIENCE)).ok()?;
    s.write_all(line.as_bytes()).ok()?;
    s.write_all(b"\n").ok()?;
    let mut out = String::new();
    std::io::BufReader::new(s).read_line(&mut out).ok()?;
    serde_json::from_str(&out).ok()
}

/// One round: clients and queue writers in parallel. Returns (requests sent, answered ok).
fn round(load: &Load, round: usize) -> (usize, usize) {
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let socket = load.socket.clone();
        let files = load.files.clone();
        let (claws, term) = load.terminals[c % load.terminals.len()].clone();
        clients.push(std::thread::spawn(move || {
            let mut sent = 0;
            let mut ok = 0;
            // A fresh connection per cycle: connection churn is part of the load.
            for i in 0..REQUESTS / 3 {
                let mut client = Client::connect(&socket, Some(PATIENCE)).unwrap();
                let ws = (c + i + round) % files.len();
                let f = files[ws][(i * 7 + c) % FILES].clone();
                sent += 1;
                let ts = match client.call(&Request::Edited(Edited {
                    paths: vec![f.clone()],
                    agent: Some(format!("soak{c}")),
                    ..Default::default()
                })) {
                    Ok(r) if r.ok => {
                        ok += 1;
                        r.into_body::<openfiles::control::protocol::EditedReply>()
                            .map(|b| b.ts)
                            .unwrap_or(0)
                    }
                    _ => 0,
                };
                sent += 1;
                if client
                    .call(&Request::Wait(Wait {
                        paths: vec![f],
                        since: ts,
                        timeout_ms: Some(20_000),
                    }))
                    .is_ok_and(|r| r.ok)
                {
                    ok += 1;
                }
                sent += 1;
                if client.call(&Request::Status).is_ok_and(|r| r.ok) {
                    ok += 1;
                }
                // Claws: a listing every cycle, a command with output every fifth.
                sent += 1;
                if claws_call(&claws, r#"{"id":1,"cmd":"list"}"#).is_some_and(|v| v["ok"] == true)
                {
                    ok += 1;
                }
                if i % 5 == 0 {
                    sent += 1;
                    let line = format!(
                        r#"{{"id":2,"cmd":"exec","id":"{term}","command":"echo soak-{round}-{i}","timeoutMs":60000}}"#
                    );
                    if claws_call(&claws, &line).is_some_and(|v| {
                        v["ok"] == true
                            && v["event"]["output"]
                                .as_str()
                                .is_some_and(|o| o.contains(&format!("soak-{round}-{i}")))
                    }) {
                        ok += 1;
                    }
                }
            }
            (sent, ok)
        }));
    }
    let mut writers = Vec::new();
    for (w, ws) in load.workspaces.iter().enumerate() {
        let queue = ws.join(".openfiles/queue.jsonl");
        let files = load.files[w].clone();
        writers.push(std::thread::spawn(move || {
            for n in 0..LINES {
                let line = format!(
                    "{}\n",
                    serde_json::json!({"v": 1, "paths": [&files[n % FILES]], "agent": "soak"})
                );
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&queue)
                    .unwrap()
                    .write_all(line.as_bytes())
                    .unwrap();
            }
        }));
    }
    for w in writers {
        w.join().unwrap();
    }
    clients
        .into_iter()
        .map(|c| c.join().unwrap())
        .fold((0, 0), |(s, o), (s2, o2)| (s + s2, o + o2))
}

/// Wait until every queued line is taken and nothing is pending.
fn settle(env: &Env, load: &Load, lines: u64) {
    wait_until("the service settles", || {
        let st = env.status();
        st.workspaces.len() == WORKSPACES
            && st
                .workspaces
                .iter()
                .all(|w| w.queue_lines == lines && w.pending == 0)
            && load
                .workspaces
                .iter()
                .all(|ws| !ws.join(".openfiles/queue.jsonl").exists())
    });
}

/// The fd count once it stops falling (closing connections is asynchronous), bounded.
fn settled_fds(pid: i32, at_most: usize) -> usize {
    let start = Instant::now();
    loop {
        let n = fds(pid);
        if n <= at_most || start.elapsed() > Duration::from_secs(10) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn soak_many_workspaces_clients_and_queue_lines() {
    let mut env = Env::new();
    env.plugin_path = Some(plugins_support::fixture("instant").into_os_string());
    let home = env.workspace("home");
    env.extra_env.push(("HOME".into(), home.into_os_string()));
    env.extra_env.push(("SHELL".into(), "/bin/bash".into()));
    let mut workspaces = Vec::new();
    let mut files = Vec::new();
    for w in 0..WORKSPACES {
        let ws = env.workspace(&format!("ws{w}"));
        let fs: Vec<PathBuf> = (0..FILES).map(|i| ws.join(format!("f{i}.txt"))).collect();
        for f in &fs {
            std::fs::write(f, "x").unwrap();
        }
        workspaces.push(ws);
        files.push(fs);
    }
    let mut args = Vec::new();
    for ws in &workspaces {
        args.push("-w");
        args.push(ws.to_str().unwrap());
    }
    let svc = env.serve(&args);
    let pid = svc.pid();
    let mut terminals = Vec::new();
    for ws in &workspaces {
        let sock = ws.join(".claws/claws.sock");
        let created = claws_call(
            &sock,
            r#"{"id":1,"cmd":"create","wrapped":true,"name":"soak"}"#,
        )
        .unwrap();
        assert_eq!(created["ok"], true, "{created}");
        terminals.push((sock, created["id"].as_str().unwrap().to_owned()));
    }
    let load = Load {
        socket: env.socket.clone(),
        workspaces,
        files,
        terminals,
    };

    // Warm-up round: allocator arenas, plugin host, watches, session maps reach their size.
    let (mut sent, mut ok) = round(&load, 0);
    settle(&env, &load, LINES as u64);
    let rss_start = rss_kb(pid);
    let fds_start = fds(pid);
    for r in 1..=ROUNDS {
        let (s, o) = round(&load, r);
        sent += s;
        ok += o;
    }
    settle(&env, &load, (LINES * (ROUNDS + 1)) as u64);
    let rss_end = rss_kb(pid);
    let fds_end = settled_fds(pid, fds_start);
    println!(
        "soak: {WORKSPACES} workspaces, {CLIENTS} clients, {} rounds: requests answered {ok}/{sent}; \
         queue lines taken {}/{}; RSS {rss_start} kB -> {rss_end} kB; fds {fds_start} -> {fds_end}",
        ROUNDS + 1,
        LINES * (ROUNDS + 1) * WORKSPACES,
        LINES * (ROUNDS + 1) * WORKSPACES,
    );
    assert_eq!(ok, sent, "every request is answered");
    assert!(
        rss_end <= rss_start + RSS_SLACK_KB,
        "RSS grew from {rss_start} kB to {rss_end} kB"
    );
    assert!(
        fds_end <= fds_start,
        "fd leak: {fds_start} open after warm-up, {fds_end} at the end"
    );
    // Still whole after the load: a clean stop.
    assert_eq!(svc.terminate(), Some(0));
}
