//! Start on first use (`src/autostart.rs`, `src/service/idle.rs`): in a fresh environment
//! with no service manager, no `XDG_RUNTIME_DIR` and no running service — a new HOME, the
//! runtime folder then `$TMPDIR/openfiles-<uid>` — the first agent hook starts the service
//! and gets the real ruff/pyright problem; twenty hooks at once start one service; an
//! autostarted service exits when idle and the next client finds the session again; and
//! `OPENFILES_AUTOSTART=0` / `[service] autostart = false` start nothing; `openfiles mcp`
//! and `openfiles claws` start it as the hook does. (That a socket unit
//! stops it is tested under a real user manager in `packaging_systemd`.)

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::hook::{run_hook, spawn_hook, wait_output, BIN};

/// A user with nothing set up: a new HOME (config in `~/.config/openfiles`, state in
/// `~/.local/state/openfiles`), a private TMPDIR and none of the service manager's
/// variables. Stops the services it started when dropped.
struct Fresh {
    dir: tempfile::TempDir,
    home: PathBuf,
    tmp: PathBuf,
    plugins: Option<PathBuf>,
}

impl Fresh {
    fn new(config: &str, plugins: Option<PathBuf>) -> Fresh {
        let dir = tempfile::Builder::new()
            .prefix("of-auto")
            .tempdir()
            .unwrap();
        let home = dir.path().join("home");
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(home.join(".config/openfiles")).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(home.join(".config/openfiles/config.toml"), config).unwrap();
        Fresh {
            dir,
            home,
            tmp,
            plugins,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmp)
            .current_dir(self.dir.path());
        for var in [
            "XDG_RUNTIME_DIR",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "OPENFILES_SOCKET",
            "OPENFILES_CONFIG",
            "OPENFILES_STATE_DIR",
            "OPENFILES_AUTOSTART",
            "NOTIFY_SOCKET",
            "LISTEN_FDS",
            "LISTEN_PID",
            "DBUS_SESSION_BUS_ADDRESS",
            "CLAUDE_PROJECT_DIR",
            "RUST_LOG",
        ] {
            c.env_remove(var);
        }
        match &self.plugins {
            Some(p) => c.env("OPENFILES_PLUGIN_PATH", p),
            None => c.env("OPENFILES_PLUGIN_PATH", self.dir.path().join("no-plugins")),
        };
        c
    }

    /// Where the runtime rules put the socket for this user.
    fn socket(&self) -> PathBuf {
        self.tmp
            .join(format!("openfiles-{}", nix::unistd::getuid()))
            .join("openfiles.sock")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.join(".local/state/openfiles/serve.log"))
            .unwrap_or_default()
    }

    /// How many services started (each says "listening" once).
    fn starts(&self) -> usize {
        self.log()
            .lines()
            .filter(|l| l.contains(" listening"))
            .count()
    }

    fn status(&self) -> Option<serde_json::Value> {
        let out = self.cmd(&["status", "--json"]).output().unwrap();
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).unwrap())
    }

    fn project(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(p.join(".git")).unwrap();
        p.canonicalize().unwrap()
    }

    fn hook(&self, file: &Path, extra: &[&str]) -> Output {
        let mut args = vec!["hook", "--agent", "claude", "--verbose"];
        args.extend_from_slice(extra);
        run_hook(&mut self.cmd(&args), &common::hook::write_payload(file))
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        // Whatever service this environment started is stopped, never left behind.
        if let Some(st) = self.status() {
            if let Some(pid) = st["pid"].as_i64() {
                common::signal(pid as i32, libc::SIGTERM);
                let start = std::time::Instant::now();
                while alive(pid as i32) && start.elapsed() < common::PATIENCE {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

#[test]
fn the_first_hook_without_any_service_starts_one_and_gets_the_python_problem() {
    let f = Fresh::new(
        // Room for a cold ruff and pyright on a loaded machine (the cold-start figure is
        // benches/cold_start.sh's, with the default deadline).
        "[hooks]\ntimeout_ms = 60000\n",
        Some(common::plugins::plugin("lsp")),
    );
    assert!(f.status().is_none(), "no service before the hook");
    let ws = f.project("py");
    let file = ws.join("m.py");
    std::fs::write(&file, "def f():\n    return undefined_name\n").unwrap();

    let out = f.hook(&file, &[]);
    assert!(out.status.success());
    let text = common::hook::additional_context(&out);
    assert!(
        text.contains("undefined_name") && (text.contains("F821") || text.contains("not defined")),
        "{text}"
    );

    // The service runs in the user's private runtime folder, says how it was started, and
    // logged to the file `openfiles logs` reads.
    let st = f.status().expect("the autostarted service answers");
    assert_eq!(st["activation"], "autostarted", "{st}");
    assert_eq!(Path::new(st["socket"].as_str().unwrap()), f.socket());
    use std::os::unix::fs::MetadataExt;
    let dir = std::fs::metadata(f.socket().parent().unwrap()).unwrap();
    assert_eq!(dir.mode() & 0o777, 0o700);
    let logs = f.cmd(&["logs", "-n", "200"]).output().unwrap();
    let logs = String::from_utf8_lossy(&logs.stdout);
    assert!(logs.contains("listening"), "{logs}");
    assert_eq!(f.starts(), 1, "{logs}");
    let doctor = f.cmd(&["doctor", "--json"]).output().unwrap();
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.contains("autostarted by a client"), "{doctor}");
    // No user manager here: doctor says who starts the service instead.
    if !Path::new("/run/systemd/system").exists() {
        assert!(doctor.contains("no systemd here"), "{doctor}");
    }
}

#[test]
fn twenty_hooks_at_once_start_one_service() {
    let f = Fresh::new("", None);
    let ws = f.project("p");
    let children: Vec<_> = (0..20)
        .map(|i| {
            let file = ws.join(format!("f{i}.txt"));
            std::fs::write(&file, "x").unwrap();
            spawn_hook(
                &mut f.cmd(&["hook", "--agent", "claude", "--no-feedback", "--verbose"]),
                &common::hook::write_payload(&file),
            )
        })
        .collect();
    for child in children {
        let out = wait_output(child, common::PATIENCE);
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("queue"),
            "every hook reached the service: {err}"
        );
    }
    assert_eq!(f.starts(), 1, "{}", f.log());
    assert!(!f.log().contains("already answering"), "{}", f.log());
    let st = f.status().unwrap();
    assert_eq!(st["activation"], "autostarted");
}

#[test]
fn an_idle_autostarted_service_exits_and_the_next_client_finds_the_session() {
    let f = Fresh::new(
        "[service]\nidle_exit_seconds = 1\n[plugin.instant]\nextensions = [\"txt\"]\n",
        Some(common::plugins::fixture("instant")),
    );
    let ws = f.project("idle");
    let file = ws.join("a.txt");
    std::fs::write(&file, "x").unwrap();
    let out = f.hook(&file, &[]);
    assert!(out.status.success());
    let first = f.status().unwrap();
    let pid = first["pid"].as_i64().unwrap() as i32;

    // Nothing happens for a second: the service ends itself, socket and all.
    common::wait_until("the idle service exits", || !alive(pid));
    assert!(!f.socket().exists());
    assert!(f.log().contains("autostarted and idle"), "{}", f.log());

    // The next client (review, as at the end of a CI job) starts it again; the session is
    // there: the file the agent edited, with what was found.
    let out = f
        .cmd(&["review", "--json", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let review = String::from_utf8_lossy(&out.stdout);
    assert!(review.contains("a.txt"), "{review}");
    let second = f.status().unwrap();
    assert_ne!(second["pid"], first["pid"]);
    assert_eq!(f.starts(), 2);
}

#[test]
fn autostart_turned_off_starts_nothing_and_says_why() {
    let f = Fresh::new("", None);
    let ws = f.project("off");
    let file = ws.join("a.txt");
    std::fs::write(&file, "x").unwrap();
    let mut cmd = f.cmd(&["hook", "--agent", "claude", "--verbose"]);
    cmd.env("OPENFILES_AUTOSTART", "0");
    let out = run_hook(&mut cmd, &common::hook::write_payload(&file));
    assert!(out.status.success() && out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("OPENFILES_AUTOSTART is off"), "{err}");
    assert!(!f.socket().exists());

    let g = Fresh::new("[service]\nautostart = false\n", None);
    let out = g.hook(&file, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("autostart = false"), "{err}");
    assert!(!g.socket().exists());
    assert_eq!(g.starts(), 0);
    // `status` reports; it never starts a service.
    assert!(g.status().is_none());
    let h = Fresh::new("", None);
    assert!(h.status().is_none());
    assert!(!h.socket().exists());
}

#[test]
fn mcp_and_claws_clients_start_the_service_too() {
    let f = Fresh::new("", None);
    let ws = f.project("clients");
    let file = ws.join("a.txt");
    std::fs::write(&file, "x").unwrap();
    // An agent's MCP server: its first message wakes (here: starts) the service.
    let mut mcp = f
        .cmd(&["mcp", "--workspace", ws.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = mcp.stdin.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(mcp.stdout.take().unwrap()));
    use std::io::Write;
    let call = |stdin: &mut std::process::ChildStdin, line: serde_json::Value| {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    };
    call(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
    );
    let init = lines.next().unwrap().unwrap();
    assert!(init.contains("\"id\":1"), "{init}");
    call(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "openfiles_status", "arguments": {}}}),
    );
    let status = lines.next().unwrap().unwrap();
    assert!(status.contains("autostarted"), "{status}");
    drop(stdin);
    let _ = mcp.wait();
    let st = f.status().expect("the service the MCP server started");
    assert_eq!(st["activation"], "autostarted");
    assert_eq!(f.starts(), 1, "{}", f.log());

    // A hook makes the workspace known; with the service stopped, `openfiles claws` starts
    // it again and waits for that workspace's Claws socket.
    let out = f.hook(&file, &["--no-feedback"]);
    assert!(out.status.success());
    let pid = st["pid"].as_i64().unwrap() as i32;
    common::signal(pid, libc::SIGTERM);
    common::wait_until("the service stops", || !alive(pid));
    let out = f
        .cmd(&["claws", "-w", ws.to_str().unwrap(), "list"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no terminals");
    assert_eq!(f.starts(), 2, "{}", f.log());
}

#[test]
fn a_session_start_hook_starts_the_service_before_the_first_edit() {
    let f = Fresh::new("", None);
    let ws = f.project("warm");
    let payload = serde_json::json!({
        "session_id": "s", "cwd": ws, "hook_event_name": "SessionStart", "source": "startup",
    })
    .to_string();
    let mut cmd = f.cmd(&[
        "hook",
        "--agent",
        "claude",
        "--event",
        "SessionStart",
        "--verbose",
    ]);
    let out = run_hook(&mut cmd, &payload);
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    let st = f.status().expect("the session start started the service");
    assert_eq!(st["activation"], "autostarted");
    let roots: Vec<&str> = st["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["root"].as_str())
        .collect();
    assert!(roots.contains(&ws.to_str().unwrap()), "{st}");
}

#[test]
fn a_socket_in_a_shared_folder_is_not_autostarted_and_the_folder_is_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fresh::new("", None);
    let shared = f.dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let ws = f.project("p");
    let file = ws.join("a.txt");
    std::fs::write(&file, "x").unwrap();
    let mut cmd = f.cmd(&["hook", "--agent", "claude", "--verbose"]);
    cmd.env("OPENFILES_SOCKET", shared.join("x.sock"));
    let out = run_hook(&mut cmd, &common::hook::write_payload(&file));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a private (0700) folder of yours"),
        "{err}"
    );
    let mode = std::fs::metadata(&shared).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o1777, "never re-moded");
    assert!(!shared.join("x.sock").exists());
    assert_eq!(f.starts(), 0);
}

#[test]
fn a_service_that_cannot_start_is_reported_and_not_retried_by_every_hook() {
    // A config the service refuses: the started `serve` exits at once, saying why in the
    // log file (its stderr).
    let f = Fresh::new("[service]\nno_such_key = 1\n", None);
    let ws = f.project("broken");
    let file = ws.join("a.txt");
    std::fs::write(&file, "x").unwrap();
    let out = f.hook(&file, &["--no-feedback"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(err.contains("starting one failed"), "{err}");
    assert!(f.log().contains("no_such_key"), "{}", f.log());
    let out = f.hook(&file, &["--no-feedback"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not trying again yet"), "{err}");
    assert!(f.status().is_none());
}

/// `openfiles --config X add DIR` started a service that ignored X: X's `[service]
/// autostart = false` did not stop the start, and the service read the default config. Now
/// the decision reads X, and the service started is given X (a relative path too).
#[test]
fn a_config_named_on_the_command_line_decides_the_start_and_is_the_services() {
    let f = Fresh::new("", None);
    let ws = f.project("app");
    let named = f.project("named");
    std::fs::write(
        f.dir.path().join("off.toml"),
        "[service]\nautostart = false\n",
    )
    .unwrap();
    let out = f
        .cmd(&["--config", "off.toml", "add", ws.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("autostart = false") && err.contains("openfiles serve"),
        "says why and how to start one: {err}"
    );
    assert!(!f.socket().exists());
    assert_eq!(f.starts(), 0);

    std::fs::write(
        f.dir.path().join("named.toml"),
        format!("[service]\nworkspaces = [{:?}]\n", named.to_str().unwrap()),
    )
    .unwrap();
    let out = f
        .cmd(&["--config", "named.toml", "add", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st = f.status().unwrap();
    let roots: Vec<(&str, &str)> = st["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["root"].as_str().unwrap(), w["source"].as_str().unwrap()))
        .collect();
    assert!(
        roots.contains(&(named.to_str().unwrap(), "config")),
        "the started service reads the config it was given: {roots:?}"
    );
    assert!(
        roots.contains(&(ws.to_str().unwrap(), "added")),
        "{roots:?}"
    );
}
