//! `openfiles mcp` figures (issue 18), on the real binary against a real service:
//!
//! - process start → `initialize` answered (ms, p50 of 20 starts);
//! - RSS of the MCP process after 100 tool calls (MiB);
//! - a tool call's overhead: `claws_ping` through MCP minus the same `ping` sent straight to
//!   the Claws socket on a fresh connection (what the tool does), p50 of 500 each (ms).
//!
//! Run: `cargo bench --bench mcp`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, ChildStdout, Stdio};
use std::time::Instant;

use common::Env;
use serde_json::{json, Value};

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

struct Mcp {
    child: Child,
    out: BufReader<ChildStdout>,
    next: u64,
}

impl Mcp {
    fn start(env: &Env, ws: &Path) -> Mcp {
        let mut child = env
            .command(&["mcp", "--workspace", ws.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Mcp {
            child,
            out,
            next: 1,
        }
    }

    fn ask(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(self.out.read_line(&mut line).unwrap() > 0, "mcp exited");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn initialize(&mut self) -> Value {
        self.ask(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        )
    }

    fn tool(&mut self, name: &str, args: Value) -> Value {
        let v = self.ask("tools/call", json!({"name": name, "arguments": args}));
        assert!(v["result"]["isError"] != json!(true), "{v}");
        v
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn direct_ping(sock: &Path) {
    let mut s = UnixStream::connect(sock).unwrap();
    s.write_all(b"{\"id\":1,\"cmd\":\"ping\"}\n").unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    assert!(line.contains("\"ok\":true"), "{line}");
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
    println!("openfiles mcp benchmark ({profile}, this machine)");
    let mut env = Env::new();
    let home = env.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    env.extra_env.push(("HOME".into(), home.into_os_string()));
    let ws = env.workspace("ws");
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let sock = ws.join(".claws/claws.sock");
    common::wait_until("the Claws socket", || sock.exists());

    let mut starts = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        let mut m = Mcp::start(&env, &ws);
        let init = m.initialize();
        starts.push(t0.elapsed().as_secs_f64() * 1e3);
        assert_eq!(init["result"]["serverInfo"]["name"], "openfiles");
    }
    println!(
        "process start -> initialize answered, p50 of 20: {:.2} ms (goal <= 10)",
        pct(&mut starts, 0.5)
    );

    let mut m = Mcp::start(&env, &ws);
    m.initialize();
    let term = m.tool("claws_create", json!({"name": "bench"}));
    let text = term["result"]["content"][0]["text"].as_str().unwrap();
    let id = serde_json::from_str::<Value>(text).unwrap()["terminal_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 0..98 {
        match i % 3 {
            0 => m.tool("claws_list", json!({})),
            1 => m.tool("claws_read_log", json!({"id": id, "lines": 20})),
            _ => m.tool("claws_ping", json!({})),
        };
    }
    m.tool("claws_close", json!({"id": id}));
    println!(
        "RSS after 100 tool calls: {:.1} MiB (goal <= 10)",
        rss_kib(m.child.id()) as f64 / 1024.0
    );

    let n = 500;
    let (mut via, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let t0 = Instant::now();
        direct_ping(&sock);
        direct.push(t0.elapsed().as_secs_f64() * 1e3);
        let t0 = Instant::now();
        m.tool("claws_ping", json!({}));
        via.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let (v50, d50) = (pct(&mut via, 0.5), pct(&mut direct, 0.5));
    println!(
        "tool call overhead (claws_ping via MCP p50 {v50:.3} ms - ping on the socket p50 {d50:.3} ms): {:.3} ms (goal <= 0.2)",
        v50 - d50
    );
    drop(m);
    svc.terminate();
}
