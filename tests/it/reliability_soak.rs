//! A bounded soak of the real service at the scale issue 9 names: 10 workspaces, 20 Claws
//! terminals producing output, 50 Claws clients, control clients with a steady stream of
//! `edited`, `wait`, `check` and `status`, and a steady queue of edits, with the `instant`
//! plugin checking.
//! The load is a fixed amount of work (not a duration), run once to warm up and then again
//! several times; after each phase the service settles (every line taken, nothing pending)
//! and RSS and open fds are measured. Asserts: every request answered, every line taken
//! once, RSS growth under a generous bound, no fd leak. Prints the figures.

use crate::common;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use openfiles::control::client::Client;
use openfiles_wire::control::{Check, Edited, Request, Wait};

const WORKSPACES: usize = 10;
const FILES: usize = 10;
/// Claws terminals: two per workspace.
const TERMINALS: usize = 20;
/// Claws clients: the first `TERMINALS` each own a terminal and run commands in it; the
/// others read (list, readLog, poll).
const CLAWS_CLIENTS: usize = 50;
/// Control clients: one per workspace.
const CONTROL_CLIENTS: usize = WORKSPACES;
/// Cycles per Claws client per round.
const CLAWS_CYCLES: usize = 6;
/// Cycles per control client per round (each: `edited`, `wait`, `status`, and a `check`
/// every third).
const CONTROL_CYCLES: usize = 15;
/// Lines of output of each command a terminal runs.
const OUTPUT_LINES: usize = 500;
/// Queue lines per workspace per round.
const LINES: usize = 400;
const ROUNDS: usize = 6;
/// Capture ring per terminal (a round writes about 6 x 8 KiB into each).
const RING_BYTES: usize = 32 * 1024;
/// History events kept for `poll` (a round adds 120).
const HISTORY_EVENTS: usize = 50;
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
    /// The Claws terminals: (socket, terminal id).
    terminals: Vec<(PathBuf, String)>,
}

/// One Claws request on its own connection (how claws/1 clients call); `None` on any failure.
fn claws_call(sock: &std::path::Path, line: &str) -> Option<serde_json::Value> {
    use std::io::BufRead;
    let mut s = std::os::unix::net::UnixStream::connect(sock).ok()?;
    s.set_read_timeout(Some(PATIENCE * 2)).ok()?;
    s.write_all(line.as_bytes()).ok()?;
    s.write_all(b"\n").ok()?;
    let mut out = String::new();
    std::io::BufReader::new(s).read_line(&mut out).ok()?;
    serde_json::from_str(&out).ok()
}

/// Requests sent and answered (ok) by one client.
#[derive(Default, Clone, Copy)]
struct Tally {
    sent: usize,
    ok: usize,
}

impl Tally {
    fn add(&mut self, answered: bool) {
        self.sent += 1;
        self.ok += usize::from(answered);
    }
}

/// One control client's round: `edited`, `wait`, `status` cycles, a `check` every third,
/// on a fresh connection per cycle (connection churn is part of the load).
fn control_client(socket: PathBuf, files: Vec<Vec<PathBuf>>, c: usize, round: usize) -> Tally {
    let mut t = Tally::default();
    for i in 0..CONTROL_CYCLES {
        let Ok(mut client) = Client::connect(&socket, Some(PATIENCE * 2)) else {
            t.add(false);
            continue;
        };
        let ws = (c + i + round) % files.len();
        let f = files[ws][(i * 7 + c) % FILES].clone();
        let edited = client.send(&Request::Edited(Edited {
            paths: vec![f.clone()],
            agent: Some(format!("soak{c}")),
            ..Default::default()
        }));
        let ts = match edited {
            Ok(r) if r.ok => {
                t.add(true);
                r.into_body::<openfiles_wire::control::EditedReply>()
                    .map(|b| b.ts)
                    .unwrap_or(0)
            }
            _ => {
                t.add(false);
                0
            }
        };
        t.add(
            client
                .send(&Request::Wait(Wait {
                    paths: vec![f.clone()],
                    since: ts,
                    timeout_ms: Some(60_000),
                    partial: false,
                    session: None,
                    fixes: false,
                }))
                .is_ok_and(|r| r.ok),
        );
        t.add(client.send(&Request::Status).is_ok_and(|r| r.ok));
        if i % 3 == 0 {
            t.add(
                client
                    .send(&Request::Check(Check {
                        paths: vec![f],
                        timeout_ms: Some(60_000),
                        agent: None,
                    }))
                    .is_ok_and(|r| r.ok),
            );
        }
    }
    t
}

/// One Claws client's round. An owner (`c < TERMINALS`) runs a command with
/// `OUTPUT_LINES` lines of output in its terminal each cycle and checks the output; every
/// client lists the terminals, reads a terminal's log tail and polls the history.
fn claws_client(terminals: Vec<(PathBuf, String)>, c: usize, round: usize) -> Tally {
    let mut t = Tally::default();
    let (sock, term) = &terminals[c % terminals.len()];
    for i in 0..CLAWS_CYCLES {
        t.add(claws_call(sock, r#"{"id":1,"cmd":"list"}"#).is_some_and(|v| v["ok"] == true));
        if c < TERMINALS {
            let tag = format!("soak-{round}-{c}-{i}");
            let line = format!(
                r#"{{"id":2,"cmd":"exec","id":"{term}","command":"seq -f '{tag} %g' {OUTPUT_LINES}","timeoutMs":120000}}"#
            );
            let last = format!("{tag} {OUTPUT_LINES}");
            t.add(claws_call(sock, &line).is_some_and(|v| {
                v["ok"] == true
                    && v["event"]["output"]
                        .as_str()
                        .is_some_and(|o| o.contains(&last))
            }));
        }
        let read = format!(r#"{{"id":3,"cmd":"readLog","id":"{term}","limit":4096}}"#);
        t.add(claws_call(sock, &read).is_some_and(|v| v["ok"] == true));
        t.add(
            claws_call(sock, r#"{"id":4,"cmd":"poll","since":0,"limit":20}"#)
                .is_some_and(|v| v["ok"] == true),
        );
    }
    t
}

/// One round: control clients, Claws clients and queue writers in parallel.
fn round(load: &Load, round: usize) -> Tally {
    let mut clients = Vec::new();
    for c in 0..CONTROL_CLIENTS {
        let (socket, files) = (load.socket.clone(), load.files.clone());
        clients.push(std::thread::spawn(move || {
            control_client(socket, files, c, round)
        }));
    }
    for c in 0..CLAWS_CLIENTS {
        let terminals = load.terminals.clone();
        clients.push(std::thread::spawn(move || {
            claws_client(terminals, c, round)
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
        .fold(Tally::default(), |a, b| Tally {
            sent: a.sent + b.sent,
            ok: a.ok + b.ok,
        })
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
    let began = Instant::now();
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    // Small capture rings and a short history, so the warm-up round fills them: growth
    // measured after it is not the rings filling up to their (8 MiB default) size.
    std::fs::write(
        &env.config,
        format!("[claws]\nring_bytes = {RING_BYTES}\nhistory_events = {HISTORY_EVENTS}\n"),
    )
    .unwrap();
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
    for t in 0..TERMINALS {
        let sock = workspaces[t % WORKSPACES].join(".claws/claws.sock");
        let created = claws_call(
            &sock,
            &format!(r#"{{"id":1,"cmd":"create","wrapped":true,"name":"soak{t}"}}"#),
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

    // Warm-up round: allocator arenas, plugin host, watches, session maps, terminal capture
    // rings and histories reach their working size.
    let mut total = round(&load, 0);
    settle(&env, &load, LINES as u64);
    let rss_start = rss_kb(pid);
    let fds_start = fds(pid);
    let mut per_round = vec![rss_start];
    for r in 1..=ROUNDS {
        let t = round(&load, r);
        total.sent += t.sent;
        total.ok += t.ok;
        settle(&env, &load, (LINES * (r + 1)) as u64);
        per_round.push(rss_kb(pid));
    }
    println!("soak: RSS after each round (kB): {per_round:?}");
    let rss_end = rss_kb(pid);
    let fds_end = settled_fds(pid, fds_start);
    let lines = LINES * (ROUNDS + 1) * WORKSPACES;
    let taken: u64 = env.status().workspaces.iter().map(|w| w.queue_lines).sum();
    println!(
        "soak: {WORKSPACES} workspaces, {TERMINALS} terminals, {CLAWS_CLIENTS} Claws clients, \
         {CONTROL_CLIENTS} control clients, {} rounds (1 warm-up): requests answered {}/{}; \
         queue lines in {lines}, out {taken}; RSS {rss_start} kB -> {rss_end} kB; \
         fds {fds_start} -> {fds_end}; wall {:.0} s",
        ROUNDS + 1,
        total.ok,
        total.sent,
        began.elapsed().as_secs_f64()
    );
    assert_eq!(total.ok, total.sent, "every request is answered");
    assert_eq!(taken, lines as u64, "queue lines lost or repeated");
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
