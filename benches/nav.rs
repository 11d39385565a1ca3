//! Code navigation (issue 41): what a question costs an agent through `openfiles mcp`, on the
//! language server openfiles keeps warm, against a server started cold for the question (what
//! per-session tools — Claude Code's LSP plugins, mcp-language-server — pay), in one run:
//!
//! - the first `openfiles_references` of a fresh service (the server starts for it);
//! - per symbol: openfiles's references (every page) against the same server asked by a bare
//!   client (started cold, asked after its diagnostics of the file and again until its answer
//!   stops growing): equal, or which extras and which missing;
//! - warm: p50 and p99 of `OPENFILES_NAV_ASKS` (30) more through the same MCP session;
//! - the first question of a new agent session (a new `openfiles mcp`, the servers warm)
//!   beside a bare server started cold for it, `OPENFILES_NAV_COLD` (3) times: the median to
//!   its answer asked right after opening the file, and asked after its first diagnostics;
//! - with `OPENFILES_NAV_RENAME=NEW`: the first symbol renamed through `openfiles_rename`
//!   with `apply: true`, and the project's own checker (`OPENFILES_NAV_CHECK`, a shell
//!   command run in the copy) before and after: the lines it printed that are new.
//!
//! The project: `OPENFILES_NAV_PROJECT` (a checkout; the bench works on a `git clone` of it
//! in a temp folder, never on it) with `OPENFILES_NAV_FILE` (workspace-relative) and
//! `OPENFILES_NAV_SYMBOL` (name paths in that file, comma-separated; `path#name` for another
//! file). A C project with no compile database gets a `compile_commands.json` listing its
//! tracked `.c` files (`cc -c -I. FILE`). The bare server is picked by the file's extension
//! (`pyright-langserver`, `typescript-language-server`, `clangd`, `rust-analyzer`;
//! `OPENFILES_NAV_SERVER` to override). By default a generated project: 40 modules that each
//! call `util.helper`. Run `cargo bench --bench nav`; the pinned projects of the README:
//!
//! ```text
//! git clone https://github.com/pallets/click && git -C click checkout 2c8cd3ac958a7eb316d67f2d316c27086c4c0369
//! git clone https://github.com/sindresorhus/ky && git -C ky checkout 3419113b48e034fdcf8fa6bd3be3da7b3d0d758f
//! git clone https://github.com/DaveGamble/cJSON && git -C cJSON checkout a29814f285cc531c00223743ad3c55cd38c0dc56
//! OPENFILES_NAV_PROJECT=click OPENFILES_NAV_FILE=src/click/utils.py \
//!   OPENFILES_NAV_SYMBOL=echo,src/click/core.py#Context/invoke,src/click/core.py#Command \
//!   OPENFILES_NAV_RENAME=echo_out OPENFILES_NAV_CHECK='pyright src' cargo bench --bench nav
//! OPENFILES_NAV_PROJECT=ky OPENFILES_NAV_FILE=source/utils/merge.ts \
//!   OPENFILES_NAV_SYMBOL=mergeHeaders,deepMerge,source/errors/HTTPError.ts#HTTPError \
//!   OPENFILES_NAV_RENAME=mergeAllHeaders \
//!   OPENFILES_NAV_CHECK='tsc --noEmit -p .' cargo bench --bench nav
//! OPENFILES_NAV_PROJECT=cJSON OPENFILES_NAV_FILE=cJSON.h \
//!   OPENFILES_NAV_SYMBOL=cJSON_GetObjectItem,cJSON_Delete,cJSON_Parse OPENFILES_NAV_RENAME=cJSON_ObjectItem \
//!   OPENFILES_NAV_CHECK='cc -fsyntax-only -I. cJSON.c cJSON_Utils.c test.c' cargo bench --bench nav
//! git clone https://github.com/BurntSushi/walkdir && git -C walkdir checkout 6fd031c82ba5a4204b4ce6eae73dacb00dc072ec
//! OPENFILES_NAV_PROJECT=walkdir OPENFILES_NAV_FILE=src/dent.rs OPENFILES_NAV_TRUST=1 \
//!   OPENFILES_NAV_SYMBOL=DirEntry/depth,DirEntry/path,src/lib.rs#WalkDir/min_depth \
//!   OPENFILES_NAV_RENAME=level OPENFILES_NAV_CHECK='cargo check --all-targets -q --message-format short' \
//!   cargo bench --bench nav
//! ```
//!
//! `OPENFILES_NAV_TRUST=1` trusts the copy first (`openfiles trust`): rust-analyzer builds the
//! project, so it serves only a trusted workspace (`rustup component add rust-analyzer`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
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

/// The project (a copy), and the (file, name path) pairs asked about.
fn project(env: &Env) -> (PathBuf, Vec<(String, String)>) {
    if let Some(dir) = std::env::var_os("OPENFILES_NAV_PROJECT") {
        let file = std::env::var("OPENFILES_NAV_FILE").expect("OPENFILES_NAV_FILE");
        let symbols = std::env::var("OPENFILES_NAV_SYMBOL").expect("OPENFILES_NAV_SYMBOL");
        let ws = env.workspace("project");
        std::fs::remove_dir(&ws).unwrap();
        common::clone_checkout(&PathBuf::from(dir).canonicalize().unwrap(), &ws);
        compile_db(&ws);
        let asked = symbols
            .split(',')
            .map(|s| match s.split_once('#') {
                Some((f, name)) => (f.to_owned(), name.to_owned()),
                None => (file.clone(), s.to_owned()),
            })
            .collect();
        return (ws, asked);
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
    (ws, vec![("pkg/util.py".into(), "helper".into())])
}

/// A C project without a compile database gets one listing its tracked `.c` files.
fn compile_db(ws: &Path) {
    let names = ["compile_commands.json", "compile_flags.txt"];
    let listed = Command::new("git")
        .args(["ls-files", "*.c"])
        .current_dir(ws)
        .output()
        .unwrap();
    let files = String::from_utf8(listed.stdout).unwrap();
    if files.trim().is_empty() || names.iter().any(|n| ws.join(n).exists()) {
        return;
    }
    let units: Vec<Value> = files
        .lines()
        .map(|f| json!({"directory": ws, "file": f, "arguments": ["cc", "-c", "-I.", f]}))
        .collect();
    std::fs::write(ws.join(names[0]), Value::from(units).to_string()).unwrap();
}

/// One `openfiles_references` through MCP (page 1): seconds, the answer's
/// `structuredContent`.
fn ask(mcp: &mut Mcp, ws: &Path, file: &str, symbol: &str) -> (f64, Value) {
    ask_page(mcp, ws, file, symbol, 1)
}

fn ask_page(mcp: &mut Mcp, ws: &Path, file: &str, symbol: &str, page: u64) -> (f64, Value) {
    let t = Instant::now();
    let r = mcp.tool_result(
        "openfiles_references",
        json!({"path": ws.join(file), "symbol": symbol, "page": page}),
    );
    let s = t.elapsed().as_secs_f64();
    assert!(r["isError"] != true, "{r}");
    (s, r["structuredContent"].clone())
}

/// A place: workspace-relative path, 1-based line and column.
type Place = (String, u64, u64);

/// Every reference openfiles gives (all pages), and the first page's answer.
fn all_ours(mcp: &mut Mcp, ws: &Path, file: &str, symbol: &str) -> (BTreeSet<Place>, Value) {
    let mut places = BTreeSet::new();
    let mut first = Value::Null;
    let mut page = 1;
    loop {
        let (_, a) = ask_page(mcp, ws, file, symbol, page);
        for l in a["locations"].as_array().into_iter().flatten() {
            let p = l["path"].as_str().unwrap_or_default().to_owned();
            places.insert((
                p,
                l["line"].as_u64().unwrap(),
                l["column"].as_u64().unwrap(),
            ));
        }
        let next = a["nextPage"].as_u64();
        if first.is_null() {
            first = a;
        }
        match next {
            Some(n) => page = n,
            None => return (places, first),
        }
    }
}

/// A bare language server over stdio: Content-Length framing, requests answered in order.
struct Bare {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Bare {
    fn start(command: &[String], root: &Path) -> Bare {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", command[0]));
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

/// The bare server for `file`: `OPENFILES_NAV_SERVER`, else by extension.
fn bare_command(file: &str) -> Vec<String> {
    if let Ok(c) = std::env::var("OPENFILES_NAV_SERVER") {
        return c.split_whitespace().map(str::to_owned).collect();
    }
    let ext = Path::new(file).extension().and_then(|e| e.to_str());
    let c: &[&str] = match ext.unwrap_or_default() {
        "ts" | "tsx" | "js" | "mts" => &["typescript-language-server", "--stdio"],
        "c" | "h" | "cc" | "cpp" | "hpp" => &["clangd", "--log=error"],
        "rs" => &["rust-analyzer"],
        _ => &["pyright-langserver", "--stdio"],
    };
    c.iter().map(|s| (*s).to_owned()).collect()
}

fn language_id(file: &str) -> &'static str {
    match Path::new(file).extension().and_then(|e| e.to_str()) {
        Some("ts" | "mts") => "typescript",
        Some("tsx") => "typescriptreact",
        Some("c" | "h") => "c",
        Some("cc" | "cpp" | "hpp") => "cpp",
        Some("rs") => "rust",
        _ => "python",
    }
}

/// A bare server, initialized, with `file` open.
fn opened(root: &Path, file: &str) -> (Bare, String) {
    let mut s = Bare::start(&bare_command(file), root);
    let root_uri = format!("file://{}", root.display());
    s.request(
        "initialize",
        json!({"processId": std::process::id(), "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": "ws"}],
            "capabilities": {"workspace": {"workspaceFolders": true, "configuration": true},
                "window": {"workDoneProgress": true}}}),
    );
    s.notify("initialized", json!({}));
    s.notify("workspace/didChangeConfiguration", json!({"settings": {}}));
    let path = root.join(file);
    let uri = format!("file://{}", path.display());
    let text = std::fs::read_to_string(&path).unwrap();
    s.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": language_id(file), "version": 1, "text": text}}),
    );
    (s, uri)
}

impl Bare {
    /// References at (1-based) `line`/`column` of `uri`, as places relative to `root`.
    fn references(&mut self, root: &Path, uri: &str, line: u64, column: u64) -> BTreeSet<Place> {
        let refs = self.request(
            "textDocument/references",
            json!({"textDocument": {"uri": uri},
                "position": {"line": line - 1, "character": column - 1},
                "context": {"includeDeclaration": true}}),
        );
        let prefix = format!("file://{}/", root.display());
        refs.as_array()
            .into_iter()
            .flatten()
            .map(|l| {
                let uri = l["uri"].as_str().unwrap_or_default();
                let p = uri.strip_prefix(&prefix).unwrap_or(uri).to_owned();
                let start = &l["range"]["start"];
                let (line, ch) = (
                    start["line"].as_u64().unwrap(),
                    start["character"].as_u64().unwrap(),
                );
                (p, line + 1, ch + 1)
            })
            .collect()
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let _ = self.child.wait();
    }
}

/// A cold server for one question: seconds to the references answer, how many it gave.
fn cold(root: &Path, file: &str, line: u64, column: u64, settle: bool) -> (f64, usize) {
    let t = Instant::now();
    let (mut s, uri) = opened(root, file);
    if settle {
        s.diagnosed(&uri);
    }
    let n = s.references(root, &uri, line, column).len();
    let secs = t.elapsed().as_secs_f64();
    s.stop();
    (secs, n)
}

/// Whether the bench waits for the bare server's diagnostics of the opened file (pyright and
/// clangd push them; typescript-language-server's did not come to this client).
fn waits_for_diagnostics(file: &str) -> bool {
    matches!(
        bare_command(file)[0].as_str(),
        "pyright-langserver" | "clangd"
    )
}

/// The bare server's best answer: asked after its diagnostics of the file (where it sends
/// them), then again each second until the answer stops growing (twice the same; at most
/// 90 s).
fn bare_best(root: &Path, file: &str, line: u64, column: u64) -> BTreeSet<Place> {
    let (mut s, uri) = opened(root, file);
    if waits_for_diagnostics(file) {
        s.diagnosed(&uri);
    }
    let end = Instant::now() + Duration::from_secs(90);
    let mut best = s.references(root, &uri, line, column);
    let mut same = 0;
    while same < 2 && Instant::now() < end {
        std::thread::sleep(Duration::from_secs(1));
        let again = s.references(root, &uri, line, column);
        same = if again.len() > best.len() {
            0
        } else {
            same + 1
        };
        if again.len() > best.len() {
            best = again;
        }
    }
    s.stop();
    best
}

/// A new agent session's first question (a new `openfiles mcp`): seconds to the answer.
fn new_session(env: &Env, ws: &Path, file: &str, symbol: &str) -> f64 {
    let t = Instant::now();
    let mut mcp = started(env, ws);
    ask(&mut mcp, ws, file, symbol);
    t.elapsed().as_secs_f64()
}

fn started(env: &Env, ws: &Path) -> Mcp {
    let mut mcp = Mcp::start(env, ws);
    mcp.ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}}));
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    mcp
}

/// The project's checker's output lines (`OPENFILES_NAV_CHECK`, through `sh -c` in `ws`).
fn checker(ws: &Path, command: &str) -> Vec<String> {
    let out = Command::new("sh")
        .args(["-c", command])
        .current_dir(ws)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines().map(str::to_owned).collect()
}

/// The first symbol renamed through `openfiles_rename` with `apply: true`; the checker's new
/// lines (its lines after, the new name read as the old, that it did not print before).
fn rename(mcp: &mut Mcp, ws: &Path, (file, symbol): &(String, String), new: &str) {
    let Ok(command) = std::env::var("OPENFILES_NAV_CHECK") else {
        return;
    };
    let before = checker(ws, &command);
    let r = mcp.tool_result(
        "openfiles_rename",
        json!({"path": ws.join(file), "symbol": symbol, "new_name": new, "apply": true}),
    );
    assert!(r["isError"] != true, "{r}");
    let edits = r["structuredContent"]["edits"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let n: usize = edits
        .iter()
        .map(|f| f["edits"].as_array().map_or(0, Vec::len))
        .sum();
    let old = symbol.rsplit('/').next().unwrap_or(symbol);
    let after = checker(ws, &command);
    let seen: BTreeSet<&String> = before.iter().collect();
    let new_lines: Vec<String> = after
        .iter()
        .map(|l| l.replace(new, old))
        .filter(|l| !seen.contains(l))
        .collect();
    println!(
        "rename {symbol} -> {new} (openfiles_rename apply: true): {n} edits in {} files; `{command}`: {} lines before, {} after, {} new",
        edits.len(),
        before.len(),
        after.len(),
        new_lines.len()
    );
    for l in new_lines.iter().take(10) {
        println!("  new: {l}");
    }
}

/// openfiles's references of `symbol` against the bare server's best: one line.
fn compare(mcp: &mut Mcp, ws: &Path, file: &str, symbol: &str) {
    let (ours, first) = all_ours(mcp, ws, file, symbol);
    let r = &first["resolved"];
    let (line, column) = (r["line"].as_u64().unwrap(), r["column"].as_u64().unwrap());
    let rpath = r["path"].as_str().unwrap_or(file).to_owned();
    let bare = bare_best(ws, &rpath, line, column);
    let extras: Vec<&Place> = ours.difference(&bare).collect();
    let missing: Vec<&Place> = bare.difference(&ours).collect();
    let verdict = match (extras.as_slice(), missing.is_empty()) {
        ([], true) => "equal".to_owned(),
        ([only], true) if (only.0.as_str(), only.1) == (rpath.as_str(), line) => {
            "a superset: the extra is the declaration".to_owned()
        }
        _ => format!(
            "{} extra {extras:?}, {} missing {missing:?}",
            extras.len(),
            missing.len()
        ),
    };
    let partial = first["partial"]
        .as_str()
        .map(|p| format!("; partial: {p}"))
        .unwrap_or_default();
    println!(
        "{file}#{symbol}: openfiles {} ({} pages), bare {}: {verdict}{partial}",
        ours.len(),
        first["nextPage"]
            .as_u64()
            .map_or(1, |_| ours.len().div_ceil(200)),
        bare.len()
    );
}

fn main() {
    let asks: usize = env_or("OPENFILES_NAV_ASKS", 30);
    let colds: usize = env_or("OPENFILES_NAV_COLD", 3);
    let mut env = Env::new();
    env.plugin_path = Some(plugins::plugin("lsp").into_os_string());
    let (ws, asked) = project(&env);
    if std::env::var_os("OPENFILES_NAV_TRUST").is_some() {
        // rust-analyzer builds the project (build scripts, proc macros): trusted only.
        let out = env
            .command(&["trust", ws.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "openfiles trust failed");
    }
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut mcp = started(&env, &ws);
    let (file, symbol) = &asked[0];
    let (first, answer) = ask(&mut mcp, &ws, file, symbol);
    let line = answer["resolved"]["line"].as_u64().expect("resolved line");
    let column = answer["resolved"]["column"]
        .as_u64()
        .expect("resolved column");
    let server = answer["server"].as_str().unwrap_or("?").to_owned();
    println!(
        "project: {} ({file}#{symbol} at {line}:{column}; {server})",
        ws.display()
    );
    println!("first question on a fresh service (server started for it): {first:.2} s");
    for (f, s) in &asked {
        compare(&mut mcp, &ws, f, s);
    }
    let mut warm: Vec<f64> = (0..asks)
        .map(|_| ask(&mut mcp, &ws, file, symbol).0 * 1000.0)
        .collect();
    println!(
        "warm, {asks} questions through MCP: p50 {:.0} ms, p99 {:.0} ms",
        pct(&mut warm, 0.5),
        pct(&mut warm, 0.99)
    );
    let mut ours: Vec<f64> = (0..colds)
        .map(|_| new_session(&env, &ws, file, symbol))
        .collect();
    println!(
        "a new agent session's first question (a new `openfiles mcp`, its initialize and the answer), openfiles with the servers warm, {colds} runs: median {:.0} ms",
        pct(&mut ours, 0.5) * 1000.0
    );
    let settles: &[bool] = match waits_for_diagnostics(file) {
        true => &[false, true],
        false => &[false],
    };
    for &settle in settles {
        let mut times: Vec<f64> = Vec::new();
        let mut found = 0;
        for _ in 0..colds {
            let (s, n) = cold(&ws, file, line, column, settle);
            times.push(s);
            found = n;
            std::thread::sleep(Duration::from_millis(200));
        }
        println!(
            "  beside it, a cold {} per session ({}), {colds} runs: median {:.2} s, {found} locations",
            bare_command(file)[0],
            if settle { "asked after its diagnostics of the file" } else { "asked right after opening the file" },
            pct(&mut times, 0.5)
        );
    }
    if let Ok(new) = std::env::var("OPENFILES_NAV_RENAME") {
        rename(&mut mcp, &ws, &asked[0], &new);
    }
}
