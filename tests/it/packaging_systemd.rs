//! End to end under a real `systemd --user`: in a private mount namespace (a tmpfs over
//! /run/systemd with /run/systemd/system created, so systemctl believes systemd runs),
//! start a user manager, install the units with `openfiles service install`, enable the
//! socket, and run `openfiles hook` on an edit: its connection starts the Type=notify
//! service, which reaches `running` (READY=1) with the socket it inherited, checks the file
//! with the real `cargo check` and hands the error back through the hook; stopping the units
//! removes the workspace heartbeats and the socket; `service uninstall --now` cleans up.
//!
//! Needs root (for `unshare -m`), `unshare`, `nsenter` and systemd; where they are missing
//! the test says so and stops.

use crate::common;

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::packaging::*;

const SYSTEMD: &str = "/lib/systemd/systemd";

/// A user manager in its own mount namespace; killed (with the namespace) on drop.
struct UserManager {
    child: Child,
    home: PathBuf,
    runtime: PathBuf,
    _dir: tempfile::TempDir,
}

impl UserManager {
    fn start() -> UserManager {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let runtime = dir.path().join("run");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&runtime).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        // systemd --user says READY=1 on $NOTIFY_SOCKET once it finished starting up.
        let notify_path = dir.path().join("notify.sock");
        let notify = UnixDatagram::bind(&notify_path).unwrap();
        notify
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let script = format!(
            "mount -t tmpfs tmpfs /run/systemd && mkdir -p /run/systemd/system && exec {SYSTEMD} --user"
        );
        let child = Command::new("unshare")
            .args(["-m", "--propagation", "private", "--", "sh", "-c", &script])
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("NOTIFY_SOCKET", &notify_path)
            // The user manager hands its environment to services: keep rustup's proxies
            // working although HOME is a temp dir.
            .env("RUSTUP_HOME", rustup_home())
            .env("CARGO_HOME", cargo_home())
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start systemd --user");
        let mut buf = [0u8; 4096];
        loop {
            let n = notify
                .recv(&mut buf)
                .expect("systemd --user did not report READY=1 within 60 s");
            if String::from_utf8_lossy(&buf[..n])
                .lines()
                .any(|l| l == "READY=1")
            {
                break;
            }
        }
        UserManager {
            child,
            home,
            runtime,
            _dir: dir,
        }
    }

    /// A command run inside the manager's mount namespace, with the user's environment.
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new("nsenter");
        c.arg("-t")
            .arg(self.child.id().to_string())
            .args(["-m", "--"])
            .arg(prog)
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env_remove("OPENFILES_SOCKET")
            .env_remove("DBUS_SESSION_BUS_ADDRESS");
        c
    }

    fn systemctl(&self, args: &[&str]) -> String {
        ok(self.cmd("systemctl").arg("--user").args(args))
    }

    fn property(&self, unit: &str, prop: &str) -> String {
        self.systemctl(&["show", "-p", prop, "--value", unit])
            .trim()
            .to_owned()
    }

    fn openfiles(&self) -> Command {
        self.cmd(BIN)
    }

    fn socket(&self) -> PathBuf {
        self.runtime.join("openfiles/openfiles.sock")
    }
}

impl Drop for UserManager {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

fn real_home() -> PathBuf {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.dir)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

fn rustup_home() -> PathBuf {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home().join(".rustup"))
}

fn cargo_home() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home().join(".cargo"))
}

fn can_run() -> Result<(), String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root: `unshare -m` needs CAP_SYS_ADMIN".into());
    }
    for p in ["unshare", "nsenter", "systemctl"] {
        if !have(p) {
            return Err(format!("{p} is not installed"));
        }
    }
    if !Path::new(SYSTEMD).exists() {
        return Err(format!("{SYSTEMD} is missing"));
    }
    Ok(())
}

fn heartbeats(ws: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(ws.join(".openfiles/vscode"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn socket_activation_under_a_real_systemd_user_manager() {
    if let Err(why) = can_run() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let m = UserManager::start();
    // The user's config: the cargo-check plugin, and room for a cold `cargo check`.
    let cfg_dir = m.home.join(".config/openfiles");
    std::fs::create_dir_all(&cfg_dir).unwrap();
    let plugin = common::plugins::plugin("cargo_check");
    std::fs::write(
        cfg_dir.join("config.toml"),
        format!(
            "[plugins]\npaths = [{:?}]\n[hooks]\ntimeout_ms = 240000\n",
            plugin.to_str().unwrap()
        ),
    )
    .unwrap();

    // Install and enable the socket only.
    let out = ok(m.openfiles().args(["service", "install"]));
    assert!(
        out.contains("systemctl --user enable --now openfiles.socket"),
        "{out}"
    );
    m.systemctl(&["enable", "--now", "openfiles.socket"]);
    assert_eq!(m.property("openfiles.socket", "ActiveState"), "active");
    assert_eq!(m.property("openfiles.service", "ActiveState"), "inactive");
    assert_eq!(m.property("openfiles.socket", "UnitFileState"), "enabled");

    // systemd made the socket 0600 in a 0700 folder.
    let sock = m.socket();
    let meta = std::fs::symlink_metadata(&sock).expect("socket file");
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(sock.parent().unwrap()).unwrap().mode() & 0o777,
        0o700
    );

    // The first connection starts the service.
    let ws = m.home.join("proj");
    std::fs::create_dir_all(&ws).unwrap();
    let main = common::rust_crate_with_type_error(&ws);
    std::fs::create_dir_all(ws.join(".git")).unwrap();

    // The agent's hook reports the edit: its connection starts the service, which runs the
    // real `cargo check` (found on the PATH `service install` recorded) through its plugin
    // host, and the hook prints the problem back in Claude's format.
    let payload = serde_json::json!({
        "cwd": ws,
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": main, "old_string": "a", "new_string": "b"},
    });
    // The project is the user's: trusted through the socket-activated service (cargo check
    // runs its build scripts, so an untrusted one would say so instead of checking).
    let trusted = m
        .openfiles()
        .args(["trust", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        trusted.status.success(),
        "{}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let mut hook = m
        .openfiles()
        .args(["hook", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = hook.wait_with_output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let feedback: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "hook printed no JSON ({e}): {stdout:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(
        feedback["hookSpecificOutput"]["hookEventName"],
        "PostToolUse"
    );
    let text = feedback["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(text.contains("- src/main.rs:2:18 error E0308"), "{text}");

    // Joins the start job systemd queued on the first connection (a no-op once READY=1
    // arrived); the service is running, and it is the one that answered the hook.
    m.systemctl(&["start", "openfiles.service"]);
    assert_eq!(m.property("openfiles.service", "ActiveState"), "active");
    assert_eq!(m.property("openfiles.service", "SubState"), "running");
    let status: serde_json::Value =
        serde_json::from_str(&ok(m.openfiles().args(["status", "--json"]))).unwrap();
    assert_eq!(status["activation"], "systemd", "{status}");
    assert_eq!(
        status["pid"].to_string(),
        m.property("openfiles.service", "MainPID"),
        "the service systemd started is the one answering"
    );
    assert_eq!(m.property("openfiles.service", "NRestarts"), "0");
    assert_eq!(heartbeats(&ws).len(), 1, "a heartbeat for the workspace");

    // doctor sees all of it.
    let doc = output(m.openfiles().current_dir(&ws).args(["doctor", "--json"]));
    let report: serde_json::Value = serde_json::from_slice(&doc.stdout).unwrap();
    let find = |section: &str| -> Vec<serde_json::Value> {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["section"] == section)
            .cloned()
            .collect()
    };
    let service = &find("service")[0];
    assert_eq!(service["level"], "ok", "{service}");
    assert!(service["message"]
        .as_str()
        .unwrap()
        .contains("socket-activated by systemd"));
    assert_eq!(find("units")[0]["level"], "ok", "{report}");
    let plugins = find("plugins");
    assert!(
        plugins.iter().any(|c| c["level"] == "ok"
            && c["message"].as_str().unwrap().contains("cargo-check")
            && c["message"].as_str().unwrap().contains("loaded by service")),
        "{report}"
    );
    assert_eq!(find("socket")[0]["level"], "ok", "{report}");

    // Stopping removes the heartbeat (clean shutdown) and the socket (RemoveOnStop).
    m.systemctl(&["stop", "openfiles.socket", "openfiles.service"]);
    assert_eq!(m.property("openfiles.service", "ActiveState"), "inactive");
    assert_eq!(m.property("openfiles.service", "Result"), "success");
    assert!(
        heartbeats(&ws).is_empty(),
        "heartbeats left: {:?}",
        heartbeats(&ws)
    );
    assert!(!sock.exists());

    // The socket unit is stopped but still there: a hook finds no service and starts none
    // (a second service would fight systemd for the socket), and says why.
    let mut hook = m
        .openfiles()
        .args(["hook", "--agent", "claude", "--verbose"])
        .env_remove("OPENFILES_AUTOSTART")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = hook.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.stdout.is_empty(), "{err}");
    assert!(
        err.contains("the systemd user unit openfiles.socket is set to listen there"),
        "{err}"
    );
    assert!(!sock.exists(), "no autostarted service took the socket");
    assert_eq!(m.property("openfiles.service", "ActiveState"), "inactive");

    // Uninstall with --now disables and removes everything install wrote.
    ok(m.openfiles().args(["service", "uninstall", "--now"]));
    let units = m.home.join(".config/systemd/user");
    assert!(!units.join("openfiles.socket").exists());
    assert!(!units.join("openfiles.service").exists());
    assert!(
        std::fs::symlink_metadata(units.join("sockets.target.wants/openfiles.socket")).is_err()
    );
    assert_eq!(m.property("openfiles.socket", "LoadState"), "not-found");

    // `install --now` runs the one command it would print: the socket listens again.
    let out = ok(m.openfiles().args(["service", "install", "--now"]));
    assert!(
        out.contains("running systemctl --user enable --now openfiles.socket"),
        "{out}"
    );
    assert_eq!(m.property("openfiles.socket", "ActiveState"), "active");
    assert_eq!(m.property("openfiles.service", "ActiveState"), "inactive");
    assert!(sock.exists());

    // Uninstall without --now while the socket is enabled and listening used to remove the
    // unit files first, then advise a `disable --now` that could no longer work. It stops
    // and disables first, removes, then reloads the manager.
    let out = ok(m.openfiles().args(["service", "uninstall"]));
    assert!(
        out.contains("running systemctl --user disable --now openfiles.socket"),
        "{out}"
    );
    assert!(
        out.contains("running systemctl --user daemon-reload"),
        "{out}"
    );
    assert_eq!(m.property("openfiles.socket", "LoadState"), "not-found");
    assert_ne!(m.property("openfiles.socket", "ActiveState"), "active");
    assert!(!sock.exists());
}
