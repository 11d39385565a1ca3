//! The service core against real parts: socket activation through `systemd-socket-activate`,
//! a real `NOTIFY_SOCKET`, real signals, heartbeats on disk, the control socket's limits,
//! another uid through `setpriv`, config errors and restart persistence.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::*;
use openfiles_wire::control::{
    Add, Forget, PathArg, Request, Status, StatusReply, Workspaces, WorkspacesReply,
};

fn heartbeat_files(ws: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(ws.join(".openfiles/vscode"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn socket_activation_notifies_ready_watchdog_and_stopping() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let notify = NotifySocket::bind(env.dir.path());
    std::fs::create_dir_all(env.socket.parent().unwrap()).unwrap();
    // systemd-socket-activate holds the socket and starts the service on the first connection.
    let mut activator = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&env.socket)
        .arg("--fdname=control")
        .args([
            "-E",
            "NOTIFY_SOCKET",
            "-E",
            "WATCHDOG_USEC",
            "-E",
            "OPENFILES_STATE_DIR",
            "-E",
            "OPENFILES_CONFIG",
        ])
        .arg(bin())
        .args(["serve", "-w"])
        .arg(&ws)
        .env("NOTIFY_SOCKET", &notify.path)
        .env("WATCHDOG_USEC", "300000")
        .env("OPENFILES_STATE_DIR", &env.state)
        .env("OPENFILES_CONFIG", &env.config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("systemd-socket-activate (install the systemd package)");
    wait_listening(&mut activator);

    // The first connection wakes the service; the request is answered over the inherited fd.
    let st: StatusReply = env.client().call(&Status).unwrap();
    assert_eq!(st.activation.as_str(), "systemd");
    assert_eq!(st.workspaces.len(), 1);
    let seen = notify.expect("READY=1");
    assert!(
        seen.iter()
            .any(|m| m.contains("STATUS=serving 1 workspace")),
        "{seen:?}"
    );
    notify.expect("WATCHDOG=1");

    signal(activator.id() as i32, libc::SIGTERM);
    notify.expect("STOPPING=1");
    let status = activator.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        heartbeat_files(&ws).is_empty(),
        "heartbeat removed on SIGTERM"
    );
    // The inherited socket belongs to the activator: we never unlink it.
    assert!(env.socket.exists());
}

#[test]
fn heartbeat_stays_fresh_and_is_removed_on_sigterm() {
    let env = Env::new();
    std::fs::write(&env.config, "[service]\nheartbeat_seconds = 2\n").unwrap();
    let ws = env.workspace("ws");
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let beats = heartbeat_files(&ws);
    assert_eq!(beats.len(), 1, "{beats:?}");
    let beat: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&beats[0]).unwrap()).unwrap();
    assert_eq!(beat["appName"], "openfiles");
    assert_eq!(beat["workspaceRoot"], ws.to_str().unwrap());
    assert!(
        beat["updatedAt"].as_f64().unwrap() > 1.0e9,
        "seconds, not ms"
    );
    assert!(
        beat["updatedAt"].as_f64().unwrap() < 1.0e11,
        "seconds, not ms"
    );
    let content = std::fs::read(&beats[0]).unwrap();
    let written = std::fs::metadata(&beats[0]).unwrap();
    let first = written.modified().unwrap();
    wait_until("the heartbeat is refreshed", || {
        std::fs::metadata(&beats[0])
            .and_then(|m| m.modified())
            .is_ok_and(|m| m > first)
    });
    let refreshed = std::fs::metadata(&beats[0]).unwrap();
    let age = SystemTime::now()
        .duration_since(refreshed.modified().unwrap())
        .unwrap_or_default();
    assert!(age < Duration::from_secs(60));
    // A timestamp update, not a rewrite: same file, same content.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(refreshed.ino(), written.ino(), "the heartbeat was replaced");
    assert_eq!(std::fs::read(&beats[0]).unwrap(), content);
    assert_eq!(
        std::fs::read_to_string(ws.join(".openfiles/.gitignore")).unwrap(),
        "*\n"
    );
    assert_eq!(svc.terminate(), Some(0));
    assert!(heartbeat_files(&ws).is_empty());
    assert!(
        !env.socket.exists(),
        "a socket we bound is removed at shutdown"
    );
}

#[test]
fn gitignore_is_created_once_and_never_overwritten() {
    let env = Env::new();
    let ws = env.workspace("ws");
    std::fs::create_dir_all(ws.join(".openfiles")).unwrap();
    std::fs::write(ws.join(".openfiles/.gitignore"), "mine\n").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(ws.join(".openfiles/.gitignore")).unwrap(),
        "mine\n"
    );
    svc.terminate();
}

#[test]
fn stale_socket_is_replaced_and_a_second_instance_refused() {
    let env = Env::new();
    // A stale socket file: bound, then its owner went away.
    std::fs::create_dir_all(env.socket.parent().unwrap()).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&env.socket).unwrap());
    assert!(env.socket.exists());
    let svc = env.serve(&[]);
    let mode = std::fs::metadata(&env.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(env.socket.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);

    let out = env.command(&["serve"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already answering"), "{err}");
    // The first instance is unharmed.
    env.client().call(&Status).unwrap();
    svc.terminate();
}

#[test]
fn malformed_unknown_and_oversized_requests() {
    let env = Env::new();
    let svc = env.serve(&[]);
    let mut conn = UnixStream::connect(&env.socket).unwrap();
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut ask = |line: &str| {
        conn.write_all(line.as_bytes()).unwrap();
        let mut out = String::new();
        reader.read_line(&mut out).unwrap();
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let r = ask("{not json\n");
    assert_eq!(r["ok"], false);
    assert_eq!(r["error"], "bad json");
    // Same connection still works, ids are echoed.
    let r = ask("{\"id\":\"a\",\"cmd\":\"nope\"}\n");
    assert_eq!(
        (r["id"].as_str(), r["error"].as_str()),
        (Some("a"), Some("unknown cmd: nope"))
    );
    let r = ask("{\"id\":5,\"cmd\":\"status\",\"protocol\":\"openfiles/2\"}\n");
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .starts_with("incompatible protocol version"),
        "{r}"
    );
    let r = ask("{\"id\":6,\"cmd\":\"hello\"}\n");
    assert_eq!((r["ok"].as_bool(), r["id"].as_i64()), (Some(true), Some(6)));

    // Over 1 MiB: an error, then that connection is closed; others are unaffected.
    let mut big = UnixStream::connect(&env.socket).unwrap();
    big.set_read_timeout(Some(PATIENCE)).unwrap();
    let payload = vec![b'x'; (1 << 20) + 10];
    let _ = big.write_all(&payload);
    let mut reply = String::new();
    let mut br = BufReader::new(big.try_clone().unwrap());
    br.read_line(&mut reply).unwrap();
    assert!(reply.contains("request too large"), "{reply}");
    let mut rest = Vec::new();
    assert_eq!(
        br.read_to_end(&mut rest).unwrap_or(0),
        0,
        "connection closed"
    );
    let r = ask("{\"cmd\":\"status\"}\n");
    assert_eq!(r["ok"], true);
    svc.terminate();
}

#[test]
fn a_client_of_another_uid_is_refused() {
    if Command::new("setpriv").arg("--version").output().is_err() {
        panic!("setpriv is required (util-linux)");
    }
    let env = Env::new();
    let svc = env.serve(&[]);
    // Open the way to the socket for everybody, so only the service's own check stands.
    let mut p = env.socket.clone();
    while let Some(parent) = p.parent() {
        if parent == Path::new("/") {
            break;
        }
        let mode = std::fs::metadata(parent).unwrap().permissions().mode();
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(mode | 0o711)).unwrap();
        p = parent.to_owned();
    }
    std::fs::set_permissions(&env.socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let script = format!(
        "import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect({:?})\ntry:\n  s.sendall(b'{{\"cmd\":\"status\"}}\\n')\nexcept OSError:\n  pass\nprint(s.makefile().readline())",
        env.socket.to_str().unwrap()
    );
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("permission denied"), "{text}");
    assert!(!text.contains("\"workspaces\""), "no status leaked: {text}");
    assert!(svc.log_text().contains("another user"));
    svc.terminate();
}

#[test]
fn config_errors_name_key_and_line() {
    let env = Env::new();
    std::fs::write(
        &env.config,
        "[service]\nlog_level = \"info\"\nheartbeat_seconds = 99\n",
    )
    .unwrap();
    let out = env.command(&["serve", "--check-config"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("heartbeat_seconds") && err.contains("line 3"),
        "{err}"
    );

    std::fs::write(&env.config, "[hooks]\nfeedbak = \"errors\"\n").unwrap();
    let out = env.command(&["serve", "--check-config"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("feedbak") && err.contains("line 2"), "{err}");

    // A workspace override with a bad key is reported with its own file and line.
    std::fs::write(&env.config, "").unwrap();
    let ws = env.workspace("ws");
    std::fs::create_dir_all(ws.join(".openfiles")).unwrap();
    std::fs::write(
        ws.join(".openfiles/config.toml"),
        "\n[watch]\nenable = false\n",
    )
    .unwrap();
    let out = env
        .command(&["serve", "--check-config", "-w", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("enable") && text.contains("line 3") && text.contains("config.toml"),
        "{text}"
    );
}

#[test]
fn restart_restores_registered_workspaces() {
    let env = Env::new();
    let ws = env.workspace("added");
    let svc = env.serve(&[]);
    let r: WorkspacesReply = env
        .client()
        .call(&Add(PathArg {
            path: ws.clone(),
            force: false,
        }))
        .unwrap();
    assert_eq!(r.workspaces[0].root, ws);
    svc.terminate();

    let svc = env.serve(&[]);
    let r: WorkspacesReply = env.client().call(&Workspaces).unwrap();
    assert_eq!(r.workspaces.len(), 1);
    assert_eq!(r.workspaces[0].root, ws);
    assert_eq!(heartbeat_files(&ws).len(), 1);
    // forget: gone now and after the next restart.
    env.client()
        .call(&Forget(PathArg {
            path: ws.clone(),
            force: false,
        }))
        .unwrap();
    assert!(heartbeat_files(&ws).is_empty());
    svc.terminate();
    let svc = env.serve(&[]);
    let r: WorkspacesReply = env.client().call(&Workspaces).unwrap();
    assert!(r.workspaces.is_empty(), "{:?}", r.workspaces);
    svc.terminate();
}

#[test]
fn a_folder_of_another_user_is_refused() {
    let env = Env::new();
    let ws = env.workspace("theirs");
    std::os::unix::fs::chown(&ws, Some(65534), Some(65534)).unwrap();
    let svc = env.serve(&[]);
    let reply = env
        .client()
        .send(&Request::Add(PathArg {
            path: ws.clone(),
            force: false,
        }))
        .unwrap();
    assert!(!reply.ok);
    assert!(reply.error.unwrap().contains("owned by uid 65534"));
    assert!(!ws.join(".openfiles").exists(), "nothing written into it");
    svc.terminate();
}

#[test]
fn cli_add_status_forget_and_completions() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let svc = env.serve(&[]);
    let out = env
        .command(&["add", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = env.command(&["status", "--json"]).output().unwrap();
    let st: StatusReply = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st.workspaces[0].root, ws);
    let out = env.command(&["status"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(ws.to_str().unwrap()));
    let out = env
        .command(&["forget", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("forgot"));
    svc.terminate();
    // No service: a clear error and a non-zero exit.
    let out = env.command(&["status"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is the service running"));
    let out = env.command(&["completions", "bash"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("openfiles"));
}

#[test]
fn workspaces_are_discovered_under_roots_at_start_and_later() {
    let env = Env::new();
    let root = env.workspace("src");
    std::fs::create_dir_all(root.join("old/.openfiles")).unwrap();
    std::fs::create_dir_all(root.join("plain")).unwrap();
    std::fs::write(
        &env.config,
        format!("[service]\nroots = [{:?}]\n", root.to_str().unwrap()),
    )
    .unwrap();
    let svc = env.serve(&[]);
    let list = |env: &Env| -> Vec<std::path::PathBuf> {
        env.client()
            .call(&Workspaces)
            .unwrap()
            .workspaces
            .into_iter()
            .map(|w| w.root)
            .collect()
    };
    assert_eq!(list(&env), vec![root.join("old")]);
    std::fs::create_dir_all(root.join("fresh/.claws")).unwrap();
    wait_until("the new workspace is discovered", || {
        list(&env).contains(&root.join("fresh"))
    });
    assert!(!list(&env).contains(&root.join("plain")));
    svc.terminate();
}

/// A thousand discovered workspaces made READY wait ~0.8 s: only the first ones start before
/// it now, the rest in batches after. Right after READY a request for the last one is
/// answered by it (started first, keeping its `discovered` source), and listings are
/// complete; after a restart the same holds for workspaces restored past the budget.
#[test]
fn workspaces_past_the_start_budget_are_served_when_asked_right_after_ready() {
    const N: usize = 150; // over the pre-READY budget (64)
    let env = Env::new();
    let root = env.workspace("src");
    let dirs: Vec<_> = (0..N).map(|i| root.join(format!("p{i:03}"))).collect();
    for d in &dirs {
        std::fs::create_dir_all(d.join(".openfiles")).unwrap();
    }
    std::fs::write(
        &env.config,
        format!("[service]\nroots = [{:?}]\n", root.to_str().unwrap()),
    )
    .unwrap();
    for round in ["discovered", "restored"] {
        let svc = env.serve(&[]);
        // A request that registers nothing: without the pending one started first it would
        // find no workspace.
        let before_last = &dirs[N - 2];
        let reply = env
            .client()
            .send(&Request::Review(PathArg {
                path: before_last.join("a.txt"),
                force: false,
            }))
            .unwrap();
        assert!(reply.ok, "{round}: review in {before_last:?}: {reply:?}");
        // An edit in the last one: served by that workspace, whose heartbeat now exists.
        let last = &dirs[N - 1];
        let file = last.join("notes.txt");
        std::fs::write(&file, "x\n").unwrap();
        let edited = env.edited(&[&file]);
        assert!(edited.rejected.is_empty(), "{round}: {edited:?}");
        assert_eq!(edited.workspaces.len(), 1, "{round}: {edited:?}");
        assert_eq!(&edited.workspaces[0].root, last, "{round}");
        assert_eq!(
            heartbeat_files(last).len(),
            1,
            "{round}: heartbeat of {last:?}"
        );

        // Listings wait for every pending start.
        let list = env.client().call(&Workspaces).unwrap().workspaces;
        assert_eq!(list.len(), N, "{round}");
        assert!(
            list.iter()
                .all(|w| w.source.as_str() == "discovered" && w.persisted),
            "{round}: {list:?}"
        );
        let st = env.status();
        assert_eq!(st.workspaces.len(), N, "{round}");
        // Everything settled: each has its heartbeat and its Claws socket (the socket is
        // bound at start; only Claws state waits for a client, see docs/costs.md).
        for (d, w) in dirs.iter().zip(&st.workspaces) {
            assert_eq!(&w.root, d, "{round}: status is sorted by root");
            assert!(w.heartbeat.exists(), "{round}: heartbeat of {d:?}");
            assert_eq!(heartbeat_files(d), vec![w.heartbeat.clone()], "{round}");
            let sock = d.join(".claws/claws.sock");
            assert_eq!(w.claws_socket.as_ref(), Some(&sock), "{round}: {w:?}");
            assert!(sock.exists(), "{round}: {sock:?}");
            assert!(
                !d.join(".claws/events").exists(),
                "{round}: no Claws state before a client"
            );
        }
        wait_until("every workspace is saved for the next start", || {
            std::fs::read_to_string(env.state.join("workspaces.json"))
                .is_ok_and(|t| dirs.iter().all(|d| t.contains(d.to_str().unwrap())))
        });
        assert!(
            svc.log_text()
                .contains(&format!("all {N} workspaces served in")),
            "{round}: {}",
            svc.log_text()
        );
        assert_eq!(svc.terminate(), Some(0), "{round}");
        assert!(
            dirs.iter().all(|d| heartbeat_files(d).is_empty()),
            "{round}: heartbeats removed at stop"
        );
    }
}

/// Stopping while workspaces still wait to be started drops them: the service ends cleanly,
/// leaves no heartbeat behind, and keeps them registered for the next start.
#[test]
fn a_stop_right_after_ready_drops_the_pending_starts_and_keeps_them_registered() {
    const N: usize = 150;
    let env = Env::new();
    let dirs: Vec<_> = (0..N)
        .map(|i| env.workspace(&format!("ws{i:03}")))
        .collect();
    std::fs::create_dir_all(&env.state).unwrap();
    let stored: Vec<_> = dirs
        .iter()
        .map(|d| serde_json::json!({"root": d, "source": "added"}))
        .collect();
    std::fs::write(
        env.state.join("workspaces.json"),
        serde_json::json!({"version": 1, "workspaces": stored}).to_string(),
    )
    .unwrap();
    let svc = env.serve(&[]);
    assert_eq!(svc.terminate(), Some(0));
    assert!(dirs.iter().all(|d| heartbeat_files(d).is_empty()));
    let saved = std::fs::read_to_string(env.state.join("workspaces.json")).unwrap();
    assert!(
        dirs.iter().all(|d| saved.contains(d.to_str().unwrap())),
        "{saved}"
    );
}

/// After an upgrade a running (socket-activated) old service kept answering new clients and
/// nothing said so. `status` now says the service is older than its binary, and `openfiles
/// service restart` stops it (no service manager here: over the control socket) so the next
/// start runs the new binary.
#[test]
fn an_upgraded_binary_is_noticed_and_service_restart_stops_the_old_service() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let copy = env.dir.path().join("bin/openfiles");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(bin(), &copy).unwrap();
    // The service runs from the copy: the environment of `env.command`, another program.
    let template = env.command(&[]);
    let mut cmd = std::process::Command::new(&copy);
    cmd.args(["serve", "-w", ws.to_str().unwrap()]);
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut svc = env.serve_command(cmd);
    let out = env.command(&["status"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("older than its binary"),
        "{out:?}"
    );
    // The upgrade: a new file at the same path (a running executable is replaced, not
    // rewritten).
    std::thread::sleep(std::time::Duration::from_millis(20));
    let fresh = env.dir.path().join("bin/openfiles.new");
    std::fs::copy(bin(), &fresh).unwrap();
    std::fs::rename(&fresh, &copy).unwrap();
    let out = env.command(&["status"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("older than its binary"), "{text}");

    let out = env.command(&["service", "restart"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let start = std::time::Instant::now();
    while svc.child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < PATIENCE, "the old service did not stop");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The service's own writes (heartbeat refreshes, `diagnostics.json` and its temp files, the
/// session state, `.claws/`) never come back to it through its file watcher: the watcher's
/// trace log shows no delivered event about them, while a line appended to `queue.jsonl`
/// (a real change in the same folder) is delivered.
#[test]
fn the_services_own_writes_do_not_reach_its_watcher() {
    let env = Env::new();
    std::fs::write(&env.config, "[service]\nheartbeat_seconds = 2\n").unwrap();
    let ws = env.workspace("ws");
    let f = ws.join("a.txt");
    std::fs::write(&f, "x\n").unwrap();
    let mut cmd = env.command(&["serve", "-w", ws.to_str().unwrap()]);
    cmd.env("RUST_LOG", "debug,openfiles::fswatch=trace");
    let svc = env.serve_command(cmd);
    let beat = heartbeat_files(&ws)[0].clone();
    let mtime = || std::fs::metadata(&beat).and_then(|m| m.modified()).ok();

    // An edit: the pipeline rewrites diagnostics.json and the session state.
    let r = env.edited(&[&f]);
    wait_until("diagnostics.json shows the edit checked", || {
        diagnostics(&ws).is_some_and(|d| d.files.get("a.txt").is_some_and(|e| e.checked_at >= r.ts))
    });
    // Two heartbeat refreshes.
    for _ in 0..2 {
        let before = mtime();
        wait_until("the heartbeat is refreshed", || mtime() > before);
    }
    // A real change in the same folder is delivered (the trace log works).
    std::fs::write(
        ws.join(".openfiles/queue.jsonl"),
        format!("{{\"v\":1,\"paths\":[{:?}]}}\n", f.to_str().unwrap()),
    )
    .unwrap();
    let delivered = |log: &str| -> Vec<String> {
        log.lines()
            .filter(|l| l.contains("fswatch event delivered"))
            .map(str::to_owned)
            .collect()
    };
    wait_until("the queue line is delivered", || {
        delivered(&svc.log_text())
            .iter()
            .any(|l| l.contains("queue.jsonl"))
    });
    let own: Vec<String> = delivered(&svc.log_text())
        .into_iter()
        .filter(|l| {
            // The queue files are the intake's: its rotation after taking the line is
            // the consequence of a real append, not an idle echo.
            let queue = l.contains("queue.jsonl") || l.contains(".queue-draining.jsonl");
            (l.contains("/.openfiles") && !queue) || l.contains("/.claws")
        })
        .collect();
    assert!(own.is_empty(), "own writes reached the watcher: {own:#?}");
}

#[test]
fn a_service_manager_that_stops_reading_does_not_stall_the_service() {
    let env = Env::new();
    let ws = env.workspace("ws");
    // Bound, never read: after a few datagrams (the kernel queues ~10) a send would wait
    // forever; watchdog pings every 25 ms fill it at once.
    let notify = NotifySocket::bind(env.dir.path());
    let mut cmd = env.command(&["serve", "-w", ws.to_str().unwrap()]);
    cmd.env("NOTIFY_SOCKET", &notify.path)
        .env("WATCHDOG_USEC", "50000");
    let svc = env.serve_command(cmd);
    wait_until("a notification given up on", || {
        svc.log_text().contains("sd_notify failed")
    });
    // Still answering, and the stop (which sends STOPPING=1) ends the process.
    assert_eq!(env.status().workspaces.len(), 1);
    assert_eq!(svc.terminate(), Some(0));
}
