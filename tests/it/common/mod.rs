//! Test support shared by the service-level integration tests: an isolated environment
//! (temp state dir, config, socket), starting `openfiles serve` as a real process, talking to
//! it with the real client, and waiting for real signals (files, datagrams, replies) with
//! generous bounds used only to fail a hung test.
//!
//! The one support module of the integration tests (and of the benchmarks that include it
//! by path); each test crate uses the parts it needs:
//! - this file: the service harness ([`Env`], [`Service`]), the shared fixtures (the Rust
//!   crate with a type error exists only here), waiting and raw socket calls;
//! - [`claws`]: an in-process Claws server and async clients of its socket;
//! - [`hook`]: running the built `openfiles hook` with a payload;
//! - [`packaging`]: commands, a throw-away Nix store, unit verification;
//! - [`plugins`]: building and finding the plugin cdylibs;
//! - [`typescript`]: a generated multi-file TypeScript project and a slow, counting `tsc`;
//! - [`tmux`]: a real terminal (a tmux server of the test's own) for terminal-UI tests.
#![allow(dead_code)]

pub mod agents;
pub mod claws;
pub mod hook;
pub mod mcp;
pub mod packaging;
pub mod plugins;
pub mod tmux;
pub mod typescript;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use openfiles::control::client::Client;
use openfiles_wire::control::{Edited, EditedReply, Status, StatusReply, Wait, WaitReply};
use openfiles_wire::spec::DiagnosticsFile;

/// Run `git` in `dir` as the tests' one identity (`t <t@t>`, branch `main`, no fsmonitor),
/// failing the test with git's message when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `git clone -q SRC DST` (a benchmark's copy of a pinned checkout; `DST` must not exist
/// or be empty).
pub fn clone_checkout(src: &Path, dst: &Path) {
    let out = Command::new("git")
        .args(["clone", "-q"])
        .arg(src)
        .arg(dst)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git clone {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Upper bound for anything we wait for; reaching it fails the test.
pub const PATIENCE: Duration = Duration::from_secs(30);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_openfiles")
}

/// An isolated home for one service: its own socket, state dir and config.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub state: PathBuf,
    pub config: PathBuf,
    /// `OPENFILES_PLUGIN_PATH` for the service (none: no plugins).
    pub plugin_path: Option<std::ffi::OsString>,
    /// More environment for every command (e.g. `HOME`, `SHELL` for terminals).
    pub extra_env: Vec<(String, std::ffi::OsString)>,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::Builder::new()
            .prefix("of-test")
            .tempdir()
            .unwrap();
        let socket = dir.path().join("run/openfiles.sock");
        let state = dir.path().join("state");
        let config = dir.path().join("config.toml");
        std::fs::write(&config, "").unwrap();
        Env {
            dir,
            socket,
            state,
            config,
            plugin_path: None,
            extra_env: Vec::new(),
        }
    }

    /// A fresh workspace folder (canonical path).
    pub fn workspace(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        p.canonicalize().unwrap()
    }

    /// A command for `openfiles ARGS` in this environment.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(Path::new(bin()), args)
    }

    /// [`Env::command`] running another build of `openfiles` (a benchmark's "before").
    pub fn command_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .env("OPENFILES_SOCKET", &self.socket)
            .env("OPENFILES_STATE_DIR", &self.state)
            .env("OPENFILES_CONFIG", &self.config)
            // A test that wants no service gets none (the autostart tests turn it on).
            .env("OPENFILES_AUTOSTART", "0")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("LISTEN_FDS")
            .env_remove("LISTEN_PID")
            .env_remove("WATCHDOG_USEC")
            .env(
                "RUST_LOG",
                std::env::var("OPENFILES_TEST_LOG").unwrap_or_else(|_| "debug".into()),
            );
        match &self.plugin_path {
            Some(p) => c.env("OPENFILES_PLUGIN_PATH", p),
            None => c.env_remove("OPENFILES_PLUGIN_PATH"),
        };
        c.envs(self.extra_env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// Start `openfiles serve` with `args` and wait until it answers.
    pub fn serve(&self, args: &[&str]) -> Service {
        let mut full = vec!["serve"];
        full.extend_from_slice(args);
        let cmd = self.command(&full);
        self.serve_command(cmd)
    }

    /// Start a prepared `openfiles serve` command (stderr to a log file) and wait until it
    /// answers a `hello`: only then are its workspaces (and their sockets) up.
    pub fn serve_command(&self, mut cmd: Command) -> Service {
        let log = self.dir.path().join(format!("serve-{}.log", unique()));
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let svc = Service { child, log };
        wait_until("the service answers", || {
            Client::connect(&self.socket, Some(Duration::from_secs(5)))
                .and_then(|mut c| {
                    c.send(&openfiles_wire::control::Request::Hello(Default::default()))
                })
                .is_ok()
        });
        svc
    }

    /// `systemd-socket-activate` holding this environment's control socket, ready to start
    /// `openfiles serve -w WS` (with the state dir, config and plugin path) on the first
    /// connection; returned once it listens.
    pub fn socket_activated(&self, ws: &Path) -> Child {
        std::fs::create_dir_all(self.socket.parent().unwrap()).unwrap();
        let mut cmd = Command::new("systemd-socket-activate");
        cmd.arg("-l")
            .arg(&self.socket)
            .arg("--fdname=control")
            .args(["-E", "OPENFILES_STATE_DIR", "-E", "OPENFILES_CONFIG"])
            .env("OPENFILES_STATE_DIR", &self.state)
            .env("OPENFILES_CONFIG", &self.config)
            // A test that wants no service gets none (the autostart tests turn it on).
            .env("OPENFILES_AUTOSTART", "0")
            .env_remove("NOTIFY_SOCKET");
        if let Some(p) = &self.plugin_path {
            cmd.args(["-E", "OPENFILES_PLUGIN_PATH"])
                .env("OPENFILES_PLUGIN_PATH", p);
        }
        let mut activator = cmd
            .arg(bin())
            .args(["serve", "-w"])
            .arg(ws)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("systemd-socket-activate (install the systemd package)");
        wait_listening(&mut activator);
        activator
    }

    pub fn client(&self) -> Client {
        Client::connect(&self.socket, Some(PATIENCE)).unwrap()
    }

    /// `edited` for these paths.
    pub fn edited(&self, paths: &[&Path]) -> EditedReply {
        self.client()
            .call(&Edited {
                paths: paths.iter().map(|p| p.to_path_buf()).collect(),
                agent: Some("test".into()),
                ..Default::default()
            })
            .unwrap()
    }

    /// `wait` for these paths since `since`, at most `timeout_ms`.
    pub fn wait(&self, paths: &[&Path], since: u64, timeout_ms: u64) -> WaitReply {
        // The client waits as long as the `wait` may (past `PATIENCE` if asked to).
        let patience = PATIENCE.max(Duration::from_millis(timeout_ms) + Duration::from_secs(5));
        Client::connect(&self.socket, Some(patience))
            .unwrap()
            .call(&Wait {
                paths: paths.iter().map(|p| p.to_path_buf()).collect(),
                since,
                timeout_ms: Some(timeout_ms),
                partial: false,
                session: None,
                fixes: false,
            })
            .unwrap()
    }

    pub fn status(&self) -> StatusReply {
        self.client().call(&Status).unwrap()
    }
}

/// Make `dir` a one-file Rust crate whose `src/main.rs` has a type error: E0308 at 2:18.
/// Returns the path of `src/main.rs`.
pub fn rust_crate_with_type_error(dir: &Path) -> PathBuf {
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let main = dir.join("src/main.rs");
    std::fs::write(
        &main,
        "fn main() {\n    let x: u32 = \"text\";\n    println!(\"{x}\");\n}\n",
    )
    .unwrap();
    main
}

/// A workspace's `diagnostics.json`, if it exists and parses.
pub fn diagnostics(ws: &Path) -> Option<DiagnosticsFile> {
    serde_json::from_slice(&std::fs::read(ws.join(".openfiles/diagnostics.json")).ok()?).ok()
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// A running service process.
pub struct Service {
    pub child: Child,
    pub log: PathBuf,
}

impl Service {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGTERM and wait for a clean exit; returns the exit status code.
    pub fn terminate(mut self) -> Option<i32> {
        signal(self.pid(), libc::SIGTERM);
        let status = wait_child(&mut self.child);
        std::mem::forget(self);
        status
    }

    /// SIGKILL (no cleanup).
    pub fn kill9(mut self) {
        signal(self.pid(), libc::SIGKILL);
        wait_child(&mut self.child);
        std::mem::forget(self);
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn signal(pid: i32, sig: i32) {
    // SAFETY: sending a signal to a child we spawned.
    unsafe {
        libc::kill(pid, sig);
    }
}

fn wait_child(child: &mut Child) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return st.code();
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("process {} did not exit", child.id());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Poll `cond` until true; panics after [`PATIENCE`]. For conditions that have no
/// event to wait on (a file appearing in another process's hands).
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        if start.elapsed() > PATIENCE {
            panic!("timed out waiting until {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `NOTIFY_SOCKET` the test owns: receives the service's sd-notify datagrams.
pub struct NotifySocket {
    pub path: PathBuf,
    sock: UnixDatagram,
}

impl NotifySocket {
    pub fn bind(dir: &Path) -> NotifySocket {
        let path = dir.join("notify.sock");
        let sock = UnixDatagram::bind(&path).unwrap();
        sock.set_read_timeout(Some(PATIENCE)).unwrap();
        NotifySocket { path, sock }
    }

    /// Wait up to `limit` for each datagram from now on (a benchmark starting 1 000
    /// workspaces on an old build may need more than [`PATIENCE`]).
    pub fn set_patience(&self, limit: Duration) {
        self.sock.set_read_timeout(Some(limit)).unwrap();
    }

    /// Read datagrams until one contains `needle`; returns every message seen.
    pub fn expect(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match self.sock.recv(&mut buf) {
                Ok(n) => {
                    let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let hit = msg.lines().any(|l| l == needle);
                    seen.push(msg);
                    if hit {
                        return seen;
                    }
                }
                Err(e) => panic!("no {needle:?} on NOTIFY_SOCKET ({e}); saw {seen:?}"),
            }
        }
    }

    /// From now on read and drop every datagram in a thread, as a service manager does:
    /// later status lines must not fill the socket's queue (10 datagrams by default on
    /// Linux) and block the service's sender.
    pub fn drain_in_background(self) {
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while self.sock.recv(&mut buf).is_ok() {}
        });
    }
}

/// Send raw bytes on a fresh connection and read one reply line.
/// Wait until `systemd-socket-activate` (spawned with piped stderr) says it listens, then
/// keep draining its stderr — the service it starts inherits that pipe for its logs, and a
/// full pipe would block it.
pub fn wait_listening(activator: &mut Child) {
    let mut err = BufReader::new(activator.stderr.take().expect("stderr piped"));
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("Listening"), "{line}");
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
}

/// Through the Claws socket `sock`: create a wrapped terminal named `name`, run `command`
/// in it with `exec` (60 s bound) and return the `exec` answer (its `event` has `exitCode`
/// and `output`).
pub fn claws_exec_in_new_terminal(sock: &Path, name: &str, command: &str) -> serde_json::Value {
    let create = serde_json::json!({"id": 1, "cmd": "create", "wrapped": true, "name": name});
    let created = json_call(sock, &create.to_string());
    assert_eq!(created["ok"], true, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let exec = serde_json::json!({"id": 2, "cmd": "exec", "id": id, "command": command, "timeoutMs": 60000});
    json_call(sock, &exec.to_string())
}

/// One JSON request line (newline added) on a fresh connection; the reply parsed.
pub fn json_call(socket: &Path, line: &str) -> serde_json::Value {
    let reply = raw_call(socket, format!("{line}\n").as_bytes());
    serde_json::from_str(&reply).unwrap_or_else(|e| panic!("bad reply {reply:?}: {e}"))
}

pub fn raw_call(socket: &Path, line: &[u8]) -> String {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(line).unwrap();
    let mut r = BufReader::new(s);
    let mut out = String::new();
    r.read_line(&mut out).unwrap();
    out
}
