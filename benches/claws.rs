//! Claws figures (issues 6 and 7), printed as `name: value` lines. Run:
//! `cargo bench --bench claws`. A server runs in-process on a temp folder; clients are
//! blocking threads on the real socket. Shells start with an empty `$HOME` so the figures
//! measure openfiles and the shell, not the machine's rc files.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use openfiles::claws::client::Client;
use openfiles::claws::ClawsServer;
use openfiles::config::ClawsConfig;
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
    // capture throughput
    let before = one(
        sock,
        json!({"id": 1, "cmd": "readLog", "id": id, "limit": 4}),
    )["totalSize"]
        .as_u64()
        .unwrap();
    let t0 = Instant::now();
    let v = c
        .call(
            &json!({"id": 1, "cmd": "exec", "id": id, "timeoutMs": 300000,
                       "command": "head -c 40000000 /dev/zero | tr '\\0' x | fold -w 100"}),
        )
        .unwrap();
    let dt = t0.elapsed().as_secs_f64();
    assert_eq!(v["event"]["exitCode"], 0, "{v}");
    let after = one(
        sock,
        json!({"id": 1, "cmd": "readLog", "id": id, "limit": 4}),
    )["totalSize"]
        .as_u64()
        .unwrap();
    println!(
        "capture_MBps: {:.1} ({} bytes in {:.2}s)",
        (after - before) as f64 / 1e6 / dt,
        after - before,
        dt
    );
    // the same amount from a writer that fills the PTY in blocks instead of lines
    let before = after;
    let t0 = Instant::now();
    let v = c
        .call(&json!({"id": 1, "cmd": "exec", "id": id, "timeoutMs": 300000,
                       "command": "yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -c 40000000"}))
        .unwrap();
    let dt = t0.elapsed().as_secs_f64();
    assert_eq!(v["event"]["exitCode"], 0, "{v}");
    let after = one(
        sock,
        json!({"id": 1, "cmd": "readLog", "id": id, "limit": 4}),
    )["totalSize"]
        .as_u64()
        .unwrap();
    println!(
        "capture_block_writer_MBps: {:.1} ({} bytes in {:.2}s, `yes | head -c 40000000`)",
        (after - before) as f64 / 1e6 / dt,
        after - before,
        dt
    );
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
    if only.as_deref() != Some("bus") {
        terminals(&sock);
    }
    if only.as_deref() != Some("terminals") {
        bus(&sock);
    }
    rt.block_on(server.stop());
}
