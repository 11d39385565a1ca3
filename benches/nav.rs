//! Code navigation (issue 41): what a question costs an agent through `openfiles mcp`, on the
//! language server openfiles keeps warm, against a server started cold for the question (what
//! per-session tools — Claude Code's LSP plugins, mcp-language-server — pay), in one run:
//!
//! - the first `openfiles_references` of a fresh service (the server starts for it);
//! - warm: p50 and p99 of `OPENFILES_NAV_ASKS` (30) more through the same MCP session;
//! - a bare `pyright-langserver --stdio` started per question (initialize, didOpen,
//!   references, shutdown), `OPENFILES_NAV_COLD` (3) times: the median to its answer, asked
//!   right after opening the file and asked after the server's first diagnostics of it;
//! - the locations each side found.
//!
//! The project: `OPENFILES_NAV_PROJECT` (a checkout, e.g. pallets/click) with
//! `OPENFILES_NAV_FILE` (workspace-relative) and `OPENFILES_NAV_SYMBOL` (a name path in it);
//! by default a generated one: 40 modules that each call `util.helper`. Run:
//! `cargo bench --bench nav` (pyright on `PATH`, as `scripts/install-test-deps.sh` installs it).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mcp::Mcp;
use common::{plugins, Env};
use serde_json::{json, Value};

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

/// The project, the file and the symbol asked about.
fn project(env: &Env) -> (PathBuf, String, String) {
    if let Some(dir) = std::env::var_os("OPENFILES_NAV_PROJECT") {
        let file = std::env::var("OPENFILES_NAV_FILE").expect("OPENFILES_NAV_FILE");
        let symbol = std::env::var("OPENFILES_NAV_SYMBOL").expect("OPENFILES_NAV_SYMBOL");
        return (PathBuf::from(dir).canonicalize().unwrap(), file, symbol);
    }
    let ws = env.workspace("gen");
    std::fs::create_dir_all(ws.join("pkg")).unwrap();
    std::fs::write(ws.join("pkg/__init__.py"), "").unwrap();
    std::fs::write(
        ws.join("pkg/util.py"),
        "def helper(n: int) -> int:\n    return n + 1\n",
    )
    .unwrap();
    for i in 0..40 {
        std::fs::write(
            ws.join(format!("pkg/m{i}.py")),
            format!(
                "from pkg.util import helper\n\n\ndef f{i}(x: int) -> int:\n    return helper(x) + helper({i})\n"
            ),
        )
        .unwrap();
    }
    (ws, "pkg/util.py".into(), "helper".into())
}

/// One `openfiles_references` through MCP: seconds, the answer's `structuredContent`.
fn ask(mcp: &mut Mcp, ws: &Path, file: &str, symbol: &str) -> (f64, Value) {
    let t = Instant::now();
    let r = mcp.tool_result(
        "openfiles_references",
        json!({"path": ws.join(file), "symbol": symbol}),
    );
    let s = t.elapsed().as_secs_f64();
    assert!(r["isError"] != true, "{r}");
    (s, r["structuredContent"].clone())
}

/// A bare language server over stdio: Content-Length framing, requests answered in order.
struct Bare {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Bare {
    fn start(root: &Path) -> Bare {
        let mut child = Command::new("pyright-langserver")
            .arg("--stdio")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("pyright-langserver on PATH");
        let out = BufReader::new(child.stdout.take().unwrap());
        Bare { child, out, id: 0 }
    }

    fn send(&mut self, msg: &Value) {
        let body = msg.to_string();
        let stdin = self.child.stdin.as_mut().unwrap();
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        stdin.flush().unwrap();
    }

    fn recv(&mut self) -> Value {
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            assert!(
                self.out.read_line(&mut line).unwrap() > 0,
                "the server exited"
            );
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        self.out.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// Answer `m` if it is a request of the server's (`workspace/configuration`: one empty
    /// settings object per item asked; anything else `null`); whether it was one.
    fn answered(&mut self, m: &Value) -> bool {
        if m.get("method").is_none() || m.get("id").is_none() {
            return false;
        }
        let result = match m["params"]["items"].as_array() {
            Some(items) if m["method"] == "workspace/configuration" => {
                json!(vec![json!({}); items.len()])
            }
            _ => Value::Null,
        };
        self.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
        true
    }

    /// Send a request; answer the server's own requests (with `null`, or empty settings) until
    /// ours is answered.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self.recv();
            if !self.answered(&m) && m["id"] == id {
                return m["result"].clone();
            }
        }
    }

    /// Wait for the server's first `publishDiagnostics` for `uri` (its analysis of the file
    /// is done), answering its requests meanwhile.
    fn diagnosed(&mut self, uri: &str) {
        loop {
            let m = self.recv();
            if !self.answered(&m)
                && m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
            {
                return;
            }
        }
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
}

/// A cold server for one question: seconds to the references answer, how many it gave.
fn cold(root: &Path, file: &Path, line: u64, column: u64, settle: bool) -> (f64, usize) {
    let t = Instant::now();
    let mut s = Bare::start(root);
    let root_uri = format!("file://{}", root.display());
    s.request(
        "initialize",
        json!({"processId": std::process::id(), "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "ws"}],
            "capabilities": {"workspace": {"workspaceFolders": true, "configuration": true}}}),
    );
    s.notify("initialized", json!({}));
    s.notify("workspace/didChangeConfiguration", json!({"settings": {}}));
    let uri = format!("file://{}", file.display());
    let text = std::fs::read_to_string(file).unwrap();
    s.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
    if settle {
        s.diagnosed(&uri);
    }
    let refs = s.request(
        "textDocument/references",
        json!({"textDocument": {"uri": uri},
            "position": {"line": line - 1, "character": column - 1},
            "context": {"includeDeclaration": true}}),
    );
    let secs = t.elapsed().as_secs_f64();
    let n = refs.as_array().map_or(0, Vec::len);
    s.request("shutdown", Value::Null);
    s.notify("exit", Value::Null);
    let _ = s.child.wait();
    (secs, n)
}

fn main() {
    let asks: usize = env_or("OPENFILES_NAV_ASKS", 30);
    let colds: usize = env_or("OPENFILES_NAV_COLD", 3);
    let mut env = Env::new();
    env.plugin_path = Some(plugins::plugin("lsp").into_os_string());
    let (ws, file, symbol) = project(&env);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut mcp = Mcp::start(&env, &ws);
    mcp.ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}}));
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());

    let (first, answer) = ask(&mut mcp, &ws, &file, &symbol);
    let ours = answer["locations"].as_array().map_or(0, Vec::len);
    let line = answer["resolved"]["line"].as_u64().expect("resolved line");
    let column = answer["resolved"]["column"]
        .as_u64()
        .expect("resolved column");
    let mut warm: Vec<f64> = (0..asks)
        .map(|_| ask(&mut mcp, &ws, &file, &symbol).0 * 1000.0)
        .collect();

    // A per-session client asking at once after opening the file, and one that first waits
    // for the server's diagnostics of it.
    let mut runs = Vec::new();
    for settle in [false, true] {
        let mut times: Vec<f64> = Vec::new();
        let mut found = 0;
        for _ in 0..colds {
            let (s, n) = cold(&ws, &ws.join(&file), line, column, settle);
            times.push(s);
            found = n;
            std::thread::sleep(Duration::from_millis(200));
        }
        runs.push((settle, pct(&mut times, 0.5), found));
    }
    println!(
        "project: {} ({file}#{symbol} at {line}:{column})",
        ws.display()
    );
    println!("locations: openfiles {ours}");
    println!("first question on a fresh service (server started for it): {first:.2} s");
    println!(
        "warm, {asks} questions through MCP: p50 {:.0} ms, p99 {:.0} ms",
        pct(&mut warm, 0.5),
        pct(&mut warm, 0.99)
    );
    for (settle, median, found) in runs {
        println!(
            "a cold pyright-langserver per question ({}), {colds} runs: median {median:.2} s, {found} locations",
            if settle {
                "asked after its diagnostics of the file"
            } else {
                "asked right after opening the file"
            }
        );
    }
}
