//! Claws figures (issues 6 and 7), printed as `name: value` lines. Run:
//! `cargo bench --bench claws [terminals|capture|bus]`. The capture part prints, per workload,
//! our MB/s next to a bare PTY reader's on the same command in the same run (the ceiling the
//! kernel's tty layer leaves on this machine), with output processing on and off. A server runs in-process on a temp folder; clients are
//! blocking threads on the real socket. Shells start with an empty `$HOME` so the figures
//! measure openfiles and the shell, not the machine's rc files.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use openfiles::claws_client::Client;
use openfiles::config::ClawsConfig;
use openfiles_claws::ClawsServer;
use serde_json::{json, Value};

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn one(sock: &Path, req: Value) -> Value {
    Client::connect(sock).unwrap().call(&req).unwrap()
}

fn tail_has(sock: &Path, id: &str, from: Option<u64>, needle: &str) -> Option<u64> {
    let v = one(
        sock,
        json!({"id": 1, "cmd": "readLog", "id": id, "offset": from, "limit": 65536}),
    );
    v["bytes"]
        .as_str()
        .unwrap_or("")
        .contains(needle)
        .then(|| v["nextOffset"].as_u64().unwrap())
}

fn wait_for(
    sock: &Path,
    id: &str,
    from: Option<u64>,
    needle: &str,
    bound: Duration,
) -> Option<u64> {
    let end = Instant::now() + bound;
    while Instant::now() < end {
        if let Some(off) = tail_has(sock, id, from, needle) {
            return Some(off);
        }
    }
    None
}

fn terminals(sock: &Path) {
    // create -> first echoed output, counting sends that were lost
    let mut firsts = Vec::new();
    let mut dropped = 0;
    for _ in 0..10 {
        let t0 = Instant::now();
        let v = one(
            sock,
            json!({"id": 1, "cmd": "create", "wrapped": true, "shellPath": "/bin/bash"}),
        );
        let id = v["id"].as_str().unwrap().to_owned();
        let mut k = 0;
        loop {
            one(
                sock,
                json!({"id": 2, "cmd": "send", "id": id, "text": format!("echo READY_$((40+{}))", 2 + k)}),
            );
            if wait_for(
                sock,
                &id,
                None,
                &format!("READY_{}", 42 + k),
                Duration::from_secs(3),
            )
            .is_some()
            {
                break;
            }
            k += 1;
            dropped += 1;
        }
        firsts.push(ms(t0.elapsed()));
        one(sock, json!({"id": 3, "cmd": "close", "id": id}));
    }
    println!("create_to_first_echo_ms_p50: {:.1}", pct(firsts, 0.5));
    println!("early_sends_dropped: {dropped} of 10");

    let v = one(
        sock,
        json!({"id": 1, "cmd": "create", "wrapped": true, "shellPath": "/bin/bash"}),
    );
    let id = v["id"].as_str().unwrap().to_owned();
    let mut c = Client::connect(sock).unwrap();
    let ev = c
        .call(&json!({"id": 1, "cmd": "exec", "id": id, "command": "true", "timeoutMs": 30000}))
        .unwrap();
    assert_eq!(ev["event"]["exitCode"], 0, "{ev}");
    // send -> echo visible in readLog
    let mut off = one(
        sock,
        json!({"id": 1, "cmd": "readLog", "id": id, "limit": 1}),
    )["totalSize"]
        .as_u64();
    let mut t = Vec::new();
    for i in 0..200 {
        let t0 = Instant::now();
        c.call(
            &json!({"id": 1, "cmd": "send", "id": id, "text": format!("echo MK{i}_$(({i}+1))")}),
        )
        .unwrap();
        off = Some(
            wait_for(
                sock,
                &id,
                off,
                &format!("MK{i}_{}", i + 1),
                Duration::from_secs(10),
            )
            .expect("echo"),
        );
        t.push(ms(t0.elapsed()));
    }
    println!("send_to_echo_in_readlog_ms_p50: {:.3}", pct(t, 0.5));
    // keystroke echo (the tty echoes the typed text before the shell runs it)
    let mut t = Vec::new();
    for i in 0..200 {
        let t0 = Instant::now();
        c.call(
            &json!({"id": 1, "cmd": "send", "id": id, "text": format!("#K{i}Z"), "newline": true}),
        )
        .unwrap();
        off = Some(
            wait_for(sock, &id, off, &format!("#K{i}Z"), Duration::from_secs(10)).expect("echo"),
        );
        t.push(ms(t0.elapsed()));
    }
    println!("send_to_keystroke_echo_ms_p50: {:.3}", pct(t, 0.5));
    // exec true
    let mut t = Vec::new();
    for _ in 0..200 {
        let t0 = Instant::now();
        let v = c
            .call(&json!({"id": 1, "cmd": "exec", "id": id, "command": "true"}))
            .unwrap();
        t.push(ms(t0.elapsed()));
        assert_eq!(v["event"]["exitCode"], 0, "{v}");
    }
    println!("exec_true_ms_p50: {:.3} (exitCode 0)", pct(t, 0.5));
    // request round trip
    let mut t = Vec::new();
    for i in 0..20000 {
        let t0 = Instant::now();
        let v = c.call(&json!({"id": i, "cmd": "ping"})).unwrap();
        t.push(ms(t0.elapsed()));
        assert_eq!(v["ok"], true);
    }
    println!(
        "request_round_trip_ms_p50: {:.4} (ping, one connection)",
        pct(t.clone(), 0.5)
    );
    let mut t = Vec::new();
    for i in 0..2000 {
        let t0 = Instant::now();
        one(sock, json!({"id": i, "cmd": "list"}));
        t.push(ms(t0.elapsed()));
    }
    println!("oneshot_connect_list_ms_p50: {:.4}", pct(t, 0.5));
    one(sock, json!({"id": 3, "cmd": "close", "id": id}));
}

/// The capture workloads, 40 MB each: (label, shell command). `{big}` is a 40 MB file of
/// 100-character lines the bench writes first.
const WORKLOADS: &[(&str, &str)] = &[
    (
        "lines",
        "head -c 40000000 /dev/zero | tr '\\0' x | fold -w 100",
    ),
    (
        "yes",
        "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -c 40000000",
    ),
    ("cat", "cat {big}"),
    ("zeros", "head -c 40000000 /dev/zero"),
];
const RUNS: usize = 3;

/// CPU seconds this process (server threads included, child processes not) has used.
fn cpu_s() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The ceiling: a bare reader (one thread, blocking `read` of `buf` bytes) on a fresh PTY
/// running `sh -c cmd`, timed from spawn to EIO. Returns (MB/s, mean bytes per read, reader
/// CPU ms per MB).
fn bare(cmd: &str, buf: usize, opost: bool) -> (f64, f64, f64) {
    use nix::sys::termios::{tcgetattr, tcsetattr, OutputFlags, SetArg};
    use std::os::unix::process::CommandExt;
    let pty = nix::pty::openpty(None, None).unwrap();
    if !opost {
        let mut t = tcgetattr(&pty.slave).unwrap();
        t.output_flags.remove(OutputFlags::OPOST);
        tcsetattr(&pty.slave, SetArg::TCSANOW, &t).unwrap();
    }
    let mut c = std::process::Command::new("/bin/sh");
    c.arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(std::process::Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(std::process::Stdio::from(pty.slave.try_clone().unwrap()));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY as _, 0);
            Ok(())
        });
    }
    let (t0, c0) = (Instant::now(), cpu_s());
    let mut child = c.spawn().unwrap();
    drop(c); // it holds copies of the slave; EIO comes once the child's are the only ones
    drop(pty.slave);
    let mut b = vec![0u8; buf];
    let (mut total, mut reads) = (0u64, 0u64);
    loop {
        match nix::unistd::read(&pty.master, &mut b) {
            Ok(0) | Err(nix::errno::Errno::EIO) => break,
            Ok(n) => {
                total += n as u64;
                reads += 1;
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => panic!("{e}"),
        }
    }
    let (dt, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
    child.wait().unwrap();
    assert!(total >= 40_000_000, "{cmd}: {total}");
    let mb = total as f64 / 1e6;
    (mb / dt, total as f64 / reads as f64, cpu * 1e3 / mb)
}

/// Our figure: `exec` of `cmd` in a wrapped bash terminal of the server, bytes captured (ring
/// end before and after) over the time `exec` took; and the server's CPU ms per MB.
fn ours(sock: &Path, c: &mut Client, id: &str, cmd: &str) -> (f64, f64) {
    let size = |sock: &Path| {
        one(
            sock,
            json!({"id": 1, "cmd": "readLog", "id": id, "limit": 4}),
        )["totalSize"]
            .as_u64()
            .unwrap()
    };
    let before = size(sock);
    let (t0, c0) = (Instant::now(), cpu_s());
    let v = c
        .call(&json!({"id": 1, "cmd": "exec", "id": id, "timeoutMs": 300000, "command": cmd}))
        .unwrap();
    let (dt, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
    assert_eq!(v["event"]["exitCode"], 0, "{v}");
    let mb = (size(sock) - before) as f64 / 1e6;
    assert!(mb >= 40.0, "{cmd}: {mb}");
    (mb / dt, cpu * 1e3 / mb)
}

/// Capture throughput, ours next to the bare-reader ceiling on the same commands and machine,
/// with the tty's output processing (OPOST, `\n` → `\r\n`) on (the default) and off
/// (`create` with `"opost": false`). Medians of RUNS runs.
fn capture(sock: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.txt");
    let mut text = String::with_capacity(40_400_000);
    for _ in 0..400_000 {
        text.push_str(&"x".repeat(100));
        text.push('\n');
    }
    std::fs::write(&big, text).unwrap();
    let mut c = Client::connect(sock).unwrap();
    for opost in [true, false] {
        let v = one(
            sock,
            json!({"id": 1, "cmd": "create", "wrapped": true, "shellPath": "/bin/bash", "opost": opost}),
        );
        let id = v["id"].as_str().unwrap().to_owned();
        let ev = c
            .call(&json!({"id": 1, "cmd": "exec", "id": id, "command": "true", "timeoutMs": 30000}))
            .unwrap();
        assert_eq!(ev["event"]["exitCode"], 0, "{ev}");
        // For profiling one side: CLAWS_BENCH_WORKLOAD=<label>, CLAWS_BENCH_BARE=0.
        let pick = std::env::var("CLAWS_BENCH_WORKLOAD").ok();
        let with_bare = std::env::var("CLAWS_BENCH_BARE").map_or(true, |v| v != "0");
        for (label, cmd) in WORKLOADS {
            if pick.as_deref().is_some_and(|p| p != *label) {
                continue;
            }
            let cmd = cmd.replace("{big}", big.to_str().unwrap());
            // Ours and the bare reader alternate, so load from elsewhere hits both alike.
            let sizes: &[usize] = if with_bare {
                &[4 << 10, 64 << 10, 1 << 20]
            } else {
                &[]
            };
            let mut o = Vec::new();
            let mut b: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); sizes.len()];
            for _ in 0..RUNS {
                o.push(ours(sock, &mut c, &id, &cmd));
                for (i, &buf) in sizes.iter().enumerate() {
                    b[i].push(bare(&cmd, buf, opost));
                }
            }
            let o_cpu = median(o.iter().map(|r| r.1).collect());
            let o = median(o.iter().map(|r| r.0).collect());
            let mut bare_line = String::new();
            let mut best: f64 = 0.0;
            for (runs, &buf) in b.iter().zip(sizes) {
                let mbps = median(runs.iter().map(|r| r.0).collect());
                let per_read = median(runs.iter().map(|r| r.1).collect());
                let cpu = median(runs.iter().map(|r| r.2).collect());
                best = best.max(mbps);
                bare_line.push_str(&format!(
                    " {}K:{mbps:.1}({per_read:.0}B/read,{cpu:.2}cpu-ms/MB)",
                    buf >> 10
                ));
            }
            let name = if opost { "" } else { "_opost_off" };
            println!(
                "capture{name}_{label}_MBps: {o:.1} ({o_cpu:.2} cpu-ms/MB; bare ceiling {best:.1} = {:.0}%; bare by read size{bare_line}; `{cmd}`)",
                100.0 * o / best
            );
        }
        one(sock, json!({"id": 3, "cmd": "close", "id": id}));
    }
}

struct Peer {
    w: UnixStream,
    r: BufReader<UnixStream>,
}

impl Peer {
    fn new(sock: &Path, role: &str) -> Peer {
        let s = UnixStream::connect(sock).unwrap();
        let mut p = Peer {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        };
        let v = p.call(json!({"id": 0, "cmd": "hello", "protocol": "claws/2", "role": role}));
        assert_eq!(v["ok"], true);
        p
    }
    fn send(&mut self, v: &Value) {
        let mut s = v.to_string();
        s.push('\n');
        self.w.write_all(s.as_bytes()).unwrap();
    }
    fn line(&mut self) -> String {
        let mut s = String::new();
        self.r.read_line(&mut s).unwrap();
        s
    }
    fn call(&mut self, v: Value) -> Value {
        self.send(&v);
        loop {
            let l = self.line();
            if !l.starts_with("{\"push\"") {
                return serde_json::from_str(&l).unwrap();
            }
        }
    }
}

fn bus(sock: &Path) {
    // publish -> push latency
    let mut sub = Peer::new(sock, "observer");
    sub.call(json!({"id": 1, "cmd": "subscribe", "topic": "bench.lat"}));
    let mut publ = Peer::new(sock, "worker");
    let mut t = Vec::new();
    for i in 0..10000 {
        let t0 = Instant::now();
        publ.send(&json!({"id": i, "cmd": "publish", "topic": "bench.lat", "payload": {"i": i}}));
        let l = sub.line();
        t.push(ms(t0.elapsed()));
        assert!(l.contains("bench.lat"));
        publ.line();
    }
    println!("publish_to_push_ms_p50: {:.4}", pct(t.clone(), 0.5));
    println!("publish_to_push_ms_p99: {:.4}", pct(t, 0.99));
    // fan-out to 100 subscribers
    let (n_sub, n_msg) = (100, 1000);
    let mut handles = Vec::new();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    for _ in 0..n_sub {
        let sock = sock.to_owned();
        let ready_tx = ready_tx.clone();
        handles.push(std::thread::spawn(move || {
            let mut p = Peer::new(&sock, "observer");
            p.call(json!({"id": 1, "cmd": "subscribe", "topic": "fan.*"}));
            ready_tx.send(()).unwrap();
            let mut got = 0;
            while got < n_msg {
                if p.line().contains("\"fan.out\"") {
                    got += 1;
                }
            }
            Instant::now()
        }));
    }
    for _ in 0..n_sub {
        ready_rx.recv().unwrap();
    }
    let t0 = Instant::now();
    let mut pubs = 0;
    for i in 0..n_msg {
        publ.send(&json!({"id": i, "cmd": "publish", "topic": "fan.out", "payload": {"i": i}}));
        pubs += 1;
        if pubs % 64 == 0 {
            for _ in 0..64 {
                publ.line();
            }
        }
    }
    let end = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .max()
        .unwrap();
    let dt = (end - t0).as_secs_f64();
    println!(
        "fanout_deliveries_per_s: {:.0} ({} subscribers x {} messages in {:.3}s)",
        (n_sub * n_msg) as f64 / dt,
        n_sub,
        n_msg,
        dt
    );
    // replay of a 100 000-event log
    let mut w = Peer::new(sock, "worker");
    w.send(&json!({"id": "x", "cmd": "publish", "topic": "replay.first", "payload": {}}));
    w.line();
    for batch in 0..400 {
        for i in 0..250 {
            w.send(&json!({"id": i, "cmd": "publish", "topic": "replay.ev", "payload": {"i": batch * 250 + i}}));
        }
        for _ in 0..250 {
            w.line();
        }
    }
    let mut r = Peer::new(sock, "observer");
    let t0 = Instant::now();
    r.send(&json!({"id": 1, "cmd": "subscribe", "topic": "replay.ev", "fromCursor": "0000:0"}));
    let mut n = 0u64;
    loop {
        let l = r.line();
        if l.contains("\"caught-up\"") {
            let v: Value = serde_json::from_str(&l).unwrap();
            assert_eq!(v["replayedCount"].as_u64().unwrap(), n);
            break;
        }
        if l.contains("\"replayed\":true") {
            n += 1;
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    println!(
        "replay_events_per_s: {:.0} ({n} events in {:.3}s)",
        n as f64 / dt,
        dt
    );
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    // Single-threaded here: nothing else reads the environment yet.
    std::env::set_var("HOME", home.path());
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let cfg = ClawsConfig::default();
    let server = rt
        .block_on(ClawsServer::start(dir.path(), &cfg, token.clone()))
        .unwrap();
    let sock: PathBuf = server.socket_path().to_owned();
    let only = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let run = |part: &str| only.is_none() || only.as_deref() == Some(part);
    if run("terminals") {
        terminals(&sock);
    }
    if run("capture") {
        capture(&sock);
    }
    if run("bus") {
        bus(&sock);
    }
    rt.block_on(server.stop());
}
