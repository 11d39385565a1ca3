//! Shared helpers for the lsp plugin's integration tests: a plugin instance over a temp
//! workspace, checks through the `Plugin` trait, and the tools' own CLIs for comparison.
#![allow(dead_code)]

use openfiles_plugin_api::{CheckRequest, Init, Item, Plugin, Severity};
use openfiles_plugin_lsp::LspPlugin;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Env {
    pub plugin: LspPlugin,
    pub ws: PathBuf,
    _dir: tempfile::TempDir,
}

static IDS: AtomicU64 = AtomicU64::new(1);

impl Env {
    /// A plugin with `config` over a fresh workspace.
    pub fn new(config: Value) -> Env {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canonical").join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).expect("mkdir");
        let (plugin, _caps) = LspPlugin::create(Init {
            config,
            state_dir: state,
            host_version: "test".into(),
        })
        .expect("create");
        Env {
            plugin,
            ws,
            _dir: dir,
        }
    }

    /// Write `text` to `rel` in the workspace.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.ws.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        // Atomically (temp + rename), as editors do: a check reading concurrently sees the old
        // or the new text, never a torn one.
        let tmp = p.with_extension("openfiles-tmp");
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, &p).expect("rename");
        p
    }

    /// Check one file and return its items.
    pub fn check(&self, file: &Path, timeout_ms: u64) -> Vec<Item> {
        self.check_with(file, &[], timeout_ms)
    }

    /// Check one file in a workspace the user does not trust.
    pub fn check_untrusted(&self, file: &Path, timeout_ms: u64) -> Vec<Item> {
        self.check_as(file, &[], timeout_ms, false)
    }

    /// Check one file, naming other session files in `also_report`.
    pub fn check_with(&self, file: &Path, also: &[PathBuf], timeout_ms: u64) -> Vec<Item> {
        self.check_as(file, also, timeout_ms, true)
    }

    fn check_as(&self, file: &Path, also: &[PathBuf], timeout_ms: u64, trusted: bool) -> Vec<Item> {
        self.check_in(&self.ws, file, also, timeout_ms, trusted)
    }

    /// Check `file` of the workspace `ws` (another worktree beside [`Env::ws`]).
    pub fn check_in(
        &self,
        ws: &Path,
        file: &Path,
        also: &[PathBuf],
        timeout_ms: u64,
        trusted: bool,
    ) -> Vec<Item> {
        let req = CheckRequest {
            trusted,
            id: IDS.fetch_add(1, Ordering::Relaxed),
            workspace: ws.to_path_buf(),
            files: vec![file.to_path_buf()],
            also_report: also.to_vec(),
            timeout_ms,
            ..Default::default()
        };
        let resp = self.plugin.check(req).expect("check");
        resp.files
            .into_iter()
            .filter(|f| f.path == file)
            .flat_map(|f| f.items)
            .collect()
    }

    /// Check `text` as `file`'s content (`CheckRequest::texts`: the service's baseline
    /// check of a committed text) and return its items.
    pub fn check_text(&self, file: &Path, text: &str, timeout_ms: u64) -> Vec<Item> {
        let req = CheckRequest {
            trusted: true,
            id: IDS.fetch_add(1, Ordering::Relaxed),
            workspace: self.ws.clone(),
            files: vec![file.to_path_buf()],
            texts: [(file.to_path_buf(), text.to_owned())].into(),
            timeout_ms,
            ..Default::default()
        };
        let resp = self.plugin.check(req).expect("check");
        resp.files
            .into_iter()
            .filter(|f| f.path == file)
            .flat_map(|f| f.items)
            .collect()
    }

    /// The fixes for what the last check of `file` reported (`CheckRequest::fixes_only`):
    /// the items that got one.
    pub fn fixes(&self, file: &Path, timeout_ms: u64) -> Vec<Item> {
        let req = CheckRequest {
            trusted: true,
            id: IDS.fetch_add(1, Ordering::Relaxed),
            workspace: self.ws.clone(),
            files: vec![file.to_path_buf()],
            timeout_ms,
            fixes_only: true,
            ..Default::default()
        };
        let resp = self.plugin.check(req).expect("fixes");
        resp.files.into_iter().flat_map(|f| f.items).collect()
    }

    pub fn pid(&self, server: &str) -> u32 {
        self.plugin
            .server_pids()
            .into_iter()
            .find(|(n, _)| n == server)
            .map(|(_, p)| p)
            .unwrap_or_else(|| panic!("{server} is not running"))
    }
}

/// (line, code) of the items of severity error, sorted.
pub fn errors(items: &[Item]) -> Vec<(u32, String)> {
    let mut v: Vec<_> = items
        .iter()
        .filter(|i| i.severity == Severity::Error)
        .map(|i| (i.line, i.code.clone().unwrap_or_default()))
        .collect();
    v.sort();
    v
}

/// (line, code) of every item, sorted.
pub fn all(items: &[Item]) -> Vec<(u32, String)> {
    let mut v: Vec<_> = items
        .iter()
        .map(|i| (i.line, i.code.clone().unwrap_or_default()))
        .collect();
    v.sort();
    v
}

/// Run a command in `dir`, returning stdout (any exit status).
pub fn run(dir: &Path, cmd: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run tool");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// (line, rule) of the errors `pyright --outputjson FILE` reports, run in `dir`, sorted.
pub fn pyright_cli(dir: &Path, file: &str) -> Vec<(u32, String)> {
    let cli: Value =
        serde_json::from_str(&run(dir, "pyright", &["--outputjson", file])).expect("pyright json");
    let mut v: Vec<(u32, String)> = cli["generalDiagnostics"]
        .as_array()
        .expect("array")
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap() as u32 + 1,
                d["rule"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Send a signal to a process with the `kill` command.
pub fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill");
    assert!(ok.success(), "kill {sig} {pid}");
}

/// Live child processes of this test process whose command line contains `needle` and
/// that run in `under` or below it (server processes the plugin spawned for one test's
/// workspace: `ruff server`, `node …/pyright-langserver`).
pub fn children_running(needle: &str, under: &Path) -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let (state, ppid) = (fields.next(), fields.next());
        if ppid != Some(me.as_str()) || state == Some("Z") {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) && cwd.starts_with(under) {
            out.push(pid);
        }
    }
    out.sort();
    out
}

/// Wait (bounded, 30 s) until `done` holds; whether it did.
pub fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < end {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

/// Whether process `pid` is gone (or a zombie).
pub fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.contains(") Z "))
        .unwrap_or(true)
}

/// Expected `(line, code)` pairs, written briefly: `e(&[(5, "F821")])`.
pub fn e(v: &[(u32, &str)]) -> Vec<(u32, String)> {
    v.iter().map(|(l, c)| (*l, c.to_string())).collect()
}

/// (line, kind) of the schema errors among `items` (the servers' JSON-schema messages as the
/// failing keyword), sorted: what `tests/fixtures/schema_check.py` prints for the same file.
pub fn schema_kinds(items: &[Item]) -> Vec<(u32, String)> {
    let kind = |m: &str| {
        let k = if m.starts_with("Incorrect type") {
            "type"
        } else if m.starts_with("Missing property") {
            "required"
        } else if m.starts_with("Property ") && m.ends_with("is not allowed.") {
            "additionalProperties"
        } else if m.starts_with("Value is below the minimum") {
            "minimum"
        } else if m.starts_with("Value is not accepted") {
            "enum"
        } else {
            return None;
        };
        Some(k.to_owned())
    };
    let mut v: Vec<_> = items
        .iter()
        .filter_map(|i| kind(&i.message).map(|k| (i.line, k)))
        .collect();
    v.sort();
    v
}

/// What python-jsonschema says of `doc` against `schema` (paths relative to `dir`):
/// (line, failing keyword), sorted.
pub fn schema_cli(dir: &Path, schema: &str, doc: &str) -> Vec<(u32, String)> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/schema_check.py"
    );
    let out = run(dir, "python3", &[script, schema, doc]);
    let v: Vec<(u32, String)> =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("schema_check: {e}: {out:?}"));
    v
}

/// A local listener that counts the connections made to it: a schema URL pointing here
/// shows whether a server tried to download it.
pub struct Trap {
    pub listener: std::net::TcpListener,
    pub url: String,
}

impl Trap {
    pub fn new(path: &str) -> Trap {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}/{path}", listener.local_addr().expect("addr"));
        Trap { listener, url }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        let mut n = 0;
        while self.listener.accept().is_ok() {
            n += 1;
        }
        n
    }
}
