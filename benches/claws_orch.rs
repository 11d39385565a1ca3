//! Claws orchestration figures (issue 17), printed as `name: value` lines. Run:
//! `cargo bench --bench claws_orch [latency|fleet]`; `ORCH_FLEET_SECS` shortens the fleet run
//! (default 60). A server runs in-process on a temp folder with `[claws.auth]` on (every
//! peer says `hello` with an HMAC token); clients are async tasks on the real socket.
//!
//! - `publish_push_p50_us`: a worker's `publish` → the observer's push frame;
//! - `deliver_cmd_ack_p50_us`: an orchestrator's `deliver-cmd` → the worker's `cmd.ack`
//!   arriving back at the orchestrator (the worker answers as soon as the command lands);
//! - `task_round_trip_p50_us`: `task.assign` → the worker's `task.complete` → `task.completed`
//!   at the orchestrator;
//! - the fleet: 100 workers × 10 events/s for N s into one observer subscribed to
//!   `worker.**`: events expected, received, dropped notices, and the process RSS at 10 s
//!   and at the end;
//! - `slowdisk` (a server of its own): publish → push p50/p99 while the event log sits on a
//!   slow, fsync-heavy disk — a neighbour thread writes and `fdatasync`s the same filesystem
//!   without pause, and small segments (64 KiB, 1 MiB in all) make the log rotate and prune
//!   every few hundred events. `ORCH_SLOW_N` publishes (default 500), 8 other workers
//!   publishing alongside (every one of their events counts as load on the log). The folder
//!   is `ORCH_SLOW_DIR` (default: the temp dir). A disk where every write waits for the
//!   device (as root): `truncate -s 512M /tmp/slow.img && mkfs.ext4 -q -F /tmp/slow.img &&
//!   mkdir -p /mnt/slow && mount -o sync $(losetup --direct-io=on -f --show /tmp/slow.img)
//!   /mnt/slow`, then `ORCH_SLOW_DIR=/mnt/slow cargo bench --bench claws_orch slowdisk`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use openfiles::claws_client::hello_token;
use openfiles::config::{ClawsAuthConfig, ClawsConfig};
use openfiles_claws::ClawsServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

const SECRET: &str = "bench-secret";

struct Peer {
    rd: BufReader<tokio::net::unix::OwnedReadHalf>,
    wr: tokio::net::unix::OwnedWriteHalf,
    id: String,
    pushes: std::collections::VecDeque<Value>,
}

impl Peer {
    async fn hello(sock: &Path, role: &str, name: &str) -> Peer {
        let (r, w) = UnixStream::connect(sock).await.unwrap().into_split();
        let mut p = Peer {
            rd: BufReader::new(r),
            wr: w,
            id: String::new(),
            pushes: Default::default(),
        };
        let nonce = format!("{name}-{}", std::process::id());
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let v = p
            .call(json!({"id": 0, "cmd": "hello", "protocol": "claws/2", "role": role, "peerName": name,
                         "nonce": nonce, "timestamp": ts, "token": hello_token(SECRET, name, role, &nonce, ts)}))
            .await;
        assert_eq!(v["ok"], true, "{v}");
        p.id = v["peerId"].as_str().unwrap().to_owned();
        p
    }

    async fn send(&mut self, v: &Value) {
        let mut s = v.to_string();
        s.push('\n');
        self.wr.write_all(s.as_bytes()).await.unwrap();
    }

    async fn line(&mut self) -> Value {
        let mut s = String::new();
        self.rd.read_line(&mut s).await.unwrap();
        serde_json::from_str(&s).unwrap()
    }

    async fn call(&mut self, v: Value) -> Value {
        self.send(&v).await;
        loop {
            let l = self.line().await;
            if l.get("push").is_none() {
                return l;
            }
            self.pushes.push_back(l);
        }
    }

    async fn push(&mut self, topic: &str) -> Value {
        if let Some(i) = self.pushes.iter().position(|p| p["topic"] == topic) {
            return self.pushes.remove(i).unwrap();
        }
        loop {
            let l = self.line().await;
            if l["topic"] == topic {
                return l;
            }
            if l.get("push").is_some() {
                self.pushes.push_back(l);
            }
        }
    }
}

fn p50(v: Vec<f64>) -> f64 {
    pct(v, 0.5)
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

async fn latency(sock: &Path) {
    let n = 2000;
    let mut w = Peer::hello(sock, "worker", "lat-w").await;
    let mut o = Peer::hello(sock, "observer", "lat-o").await;
    o.call(json!({"id": 1, "cmd": "subscribe", "topic": "bench.pub"}))
        .await;
    let mut us = Vec::new();
    for i in 0..n {
        let t0 = Instant::now();
        w.send(&json!({"id": i, "cmd": "publish", "topic": "bench.pub", "payload": {"i": i}}))
            .await;
        o.push("bench.pub").await;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
        w.line().await;
    }
    println!("publish_push_p50_us: {:.0}", p50(us));

    let mut orch = Peer::hello(sock, "orchestrator", "lat-orch").await;
    orch.call(json!({"id": 1, "cmd": "subscribe", "topic": "cmd.*.ack"}))
        .await;
    orch.call(json!({"id": 1, "cmd": "subscribe", "topic": "task.completed"}))
        .await;
    let wid = w.id.clone();
    w.call(json!({"id": 1, "cmd": "subscribe", "topic": format!("task.assigned.{wid}")}))
        .await;
    let worker = tokio::spawn(async move {
        // Answer every command and task as it lands.
        loop {
            let l = w.line().await;
            let topic = l["topic"].as_str().unwrap_or_default().to_owned();
            if topic.ends_with(".run") {
                w.send(&json!({"id": "a", "cmd": "cmd.ack", "seq": l["sequence"], "status": "executed"})).await;
            } else if topic.starts_with("task.assigned.") {
                let t = l["payload"]["taskId"].clone();
                w.send(
                    &json!({"id": "c", "cmd": "task.complete", "taskId": t, "status": "succeeded"}),
                )
                .await;
            } else if topic == "stop" {
                return;
            }
        }
    });
    let mut us = Vec::new();
    for i in 0..n {
        let t0 = Instant::now();
        orch.call(json!({"id": i, "cmd": "deliver-cmd", "targetPeerId": wid, "cmdTopic": format!("cmd.{wid}.run"),
                         "payload": {}, "idempotencyKey": format!("k{i}")}))
            .await;
        orch.push(&format!("cmd.{wid}.ack")).await;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    println!("deliver_cmd_ack_p50_us: {:.0}", p50(us));
    let mut us = Vec::new();
    for i in 0..n {
        let t0 = Instant::now();
        orch.call(
            json!({"id": i, "cmd": "task.assign", "title": "t", "assignee": wid, "prompt": "p"}),
        )
        .await;
        orch.push("task.completed").await;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    println!("task_round_trip_p50_us: {:.0}", p50(us));
    worker.abort();
}

async fn fleet(sock: &Path) {
    let secs: u64 = std::env::var("ORCH_FLEET_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let (workers, hz) = (100u64, 10u64);
    let mut o = Peer::hello(sock, "observer", "fleet-o").await;
    o.call(json!({"id": 1, "cmd": "subscribe", "topic": "worker.**"}))
        .await;
    let mut ps = Vec::new();
    for k in 0..workers {
        ps.push(Peer::hello(sock, "worker", &format!("fleet-w{k}")).await);
    }
    let start = tokio::time::Instant::now() + Duration::from_millis(200);
    let mut handles = Vec::new();
    for (k, mut p) in ps.into_iter().enumerate() {
        handles.push(tokio::spawn(async move {
            let phase = Duration::from_millis((k as u64 * 1000 / hz / 100) % (1000 / hz));
            let mut tick =
                tokio::time::interval_at(start + phase, Duration::from_millis(1000 / hz));
            let topic = format!("worker.{}.progress", p.id);
            for i in 0..secs * hz {
                tick.tick().await;
                let v = p
                    .call(json!({"id": i, "cmd": "publish", "topic": topic, "payload": {"i": i}}))
                    .await;
                assert_eq!(v["ok"], true, "{v}");
            }
            p
        }));
    }
    let expected = workers * hz * secs;
    let (mut got, mut dropped, mut rss10) = (0u64, 0u64, 0u64);
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(secs + 30);
    while got < expected && Instant::now() < deadline {
        let l = match tokio::time::timeout(Duration::from_secs(5), o.line()).await {
            Ok(l) => l,
            Err(_) => continue,
        };
        match l["push"].as_str() {
            Some("message") => got += 1,
            Some("dropped") => dropped += l["count"].as_u64().unwrap_or(0),
            _ => {}
        }
        if rss10 == 0 && t0.elapsed() >= Duration::from_secs(10.min(secs)) {
            rss10 = rss_kib();
        }
    }
    for h in handles {
        let _ = h.await;
    }
    println!("fleet_events_expected: {expected}");
    println!("fleet_events_received: {got}");
    println!("fleet_events_dropped: {dropped}");
    println!("fleet_rss_kib_at_10s: {rss10}");
    println!("fleet_rss_kib_at_end: {}", rss_kib());
}

/// A neighbour that keeps the disk busy: 256 KiB appended and `fdatasync`ed in a loop, the
/// file started over every 64 MiB, until `stop`.
fn fsync_neighbour(
    dir: &Path,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    let path = dir.join("neighbour.bin");
    std::thread::spawn(move || {
        use std::io::Write;
        let block = vec![0x5au8; 256 << 10];
        let mut syncs = 0u64;
        let mut f = std::fs::File::create(&path).unwrap();
        let mut written = 0usize;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            f.write_all(&block).unwrap();
            f.sync_data().unwrap();
            syncs += 1;
            written += block.len();
            if written >= 64 << 20 {
                f = std::fs::File::create(&path).unwrap();
                written = 0;
            }
        }
        syncs
    })
}

async fn slow_disk(sock: &Path, dir: &Path) {
    let n: usize = std::env::var("ORCH_SLOW_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let t0 = Instant::now();
    let neighbour = fsync_neighbour(dir, stop.clone());
    // Other workers publishing alongside, each as fast as its answers come back.
    let mut load = Vec::new();
    for k in 0..8 {
        let mut p = Peer::hello(sock, "worker", &format!("slow-load{k}")).await;
        let stop = stop.clone();
        load.push(tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let v = p
                    .call(json!({"id": i, "cmd": "publish", "topic": format!("load.{k}"), "payload": {"i": i, "pad": "x".repeat(200)}}))
                    .await;
                assert_eq!(v["ok"], true, "{v}");
                i += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            i
        }));
    }
    let mut w = Peer::hello(sock, "worker", "slow-w").await;
    let mut o = Peer::hello(sock, "observer", "slow-o").await;
    o.call(json!({"id": 1, "cmd": "subscribe", "topic": "bench.slow"}))
        .await;
    let mut us = Vec::new();
    for i in 0..n {
        let t0 = Instant::now();
        w.send(&json!({"id": i, "cmd": "publish", "topic": "bench.slow", "payload": {"i": i}}))
            .await;
        o.push("bench.slow").await;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
        w.line().await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut others = 0;
    for h in load {
        others += h.await.unwrap();
    }
    let syncs = neighbour.join().unwrap();
    let secs = t0.elapsed().as_secs_f64();
    println!("slowdisk_seconds: {secs:.1}");
    println!(
        "slowdisk_publishes: {n} (+{others} from 8 load workers, {:.0}/s)",
        others as f64 / secs
    );
    println!("slowdisk_neighbour_fsyncs: {syncs}");
    println!("slowdisk_publish_push_p50_us: {:.0}", pct(us.clone(), 0.5));
    println!("slowdisk_publish_push_p99_us: {:.0}", pct(us.clone(), 0.99));
    println!("slowdisk_publish_push_max_us: {:.0}", pct(us, 1.0));
}

fn main() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let secret: PathBuf = home.path().join("auth.token");
    std::fs::write(&secret, SECRET).unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cfg = ClawsConfig {
        auth: ClawsAuthConfig {
            enabled: true,
            token_path: Some(secret),
        },
        ..Default::default()
    };
    let only = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let run = |part: &str| only.is_none() || only.as_deref() == Some(part);
    if run("latency") || run("fleet") {
        let server = rt
            .block_on(ClawsServer::start(dir.path(), &cfg, Default::default()))
            .unwrap();
        let sock = server.socket_path().to_owned();
        if run("latency") {
            rt.block_on(latency(&sock));
        }
        if run("fleet") {
            rt.block_on(fleet(&sock));
        }
        rt.block_on(server.stop());
    }
    if run("slowdisk") {
        let dir = tempfile::tempdir_in(
            std::env::var_os("ORCH_SLOW_DIR").unwrap_or_else(|| std::env::temp_dir().into()),
        )
        .unwrap();
        let cfg = ClawsConfig {
            event_segment_bytes: 64 << 10,
            event_log_bytes: 1 << 20,
            ..cfg.clone()
        };
        let server = rt
            .block_on(ClawsServer::start(dir.path(), &cfg, Default::default()))
            .unwrap();
        let sock = server.socket_path().to_owned();
        rt.block_on(slow_disk(&sock, dir.path()));
        rt.block_on(server.stop());
    }
}
