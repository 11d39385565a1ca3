//! Security under hostile surroundings, against the real binary: tight modes whatever the
//! umask, symlinks planted on `.openfiles/` and `.openfiles/vscode` refused and never written
//! through, workspaces of another user refused, queue lines naming files outside the workspace
//! never handed to a checker, and the service's own service-manager variables never reaching
//! plugin hosts. (Other-uid peers on the control socket: tests/it/service_core.rs.)

use crate::common;

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use openfiles_wire::control::{Add, PathArg, Request};

/// Start `openfiles serve ARGS` with umask 000 and wait until it answers.
fn serve_umask_000(env: &Env, args: &[&str]) -> Service {
    let mut full = vec!["serve"];
    full.extend_from_slice(args);
    let mut cmd = env.command(&full);
    // SAFETY: umask is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0);
            Ok(())
        });
    }
    env.serve_command(cmd)
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// Every path under `dir` with its mode and whether it is a folder, read in one look. A file
/// replaced atomically while we walk (its temporary name gone by the time we look) is
/// skipped: the service keeps writing in the background.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, u32, bool)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        match std::fs::symlink_metadata(&p) {
            Ok(m) => {
                out.push((p.clone(), m.mode() & 0o7777, m.is_dir()));
                if m.is_dir() {
                    walk(&p, out);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("{}: {e}", p.display()),
        }
    }
}

/// `add DIR` through the control socket: the error text, if refused.
fn add(env: &Env, dir: &Path) -> Result<(), String> {
    env.client()
        .call(&Add(PathArg {
            force: false,
            path: dir.to_owned(),
        }))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn modes_are_tight_under_umask_000() {
    let mut env = Env::new();
    let ws = env.workspace("ws");
    let home = env.workspace("home");
    env.extra_env.push(("HOME".into(), home.into_os_string()));
    env.extra_env.push(("SHELL".into(), "/bin/bash".into()));
    std::fs::write(ws.join("a.txt"), "x").unwrap();
    let _svc = serve_umask_000(&env, &[]);
    // An explicit add is persisted in the state dir; an edit writes session and diagnostics.
    add(&env, &ws).unwrap();
    let r = env.edited(&[&ws.join("a.txt")]);
    let w = env.wait(&[&ws.join("a.txt")], r.ts, 60_000);
    assert!(w.complete);
    wait_until("diagnostics.json is written", || diagnostics(&ws).is_some());

    assert_eq!(mode(&env.socket), 0o600, "control socket");
    assert_eq!(mode(env.socket.parent().unwrap()), 0o700, "socket dir");
    assert_eq!(mode(&env.state), 0o700, "state dir");
    let mut state_files = Vec::new();
    walk(&env.state, &mut state_files);
    assert!(
        !state_files.is_empty(),
        "the state dir holds the persisted workspace list"
    );
    for (p, m, dir) in &state_files {
        if *dir {
            assert_eq!(m & 0o077, 0, "{} is {m:o}", p.display());
        } else {
            assert_eq!(*m, 0o600, "{} is {m:o}", p.display());
        }
    }
    // The Claws socket of the workspace: 0600 in a 0700 `.claws/`.
    let st = env.status();
    let claws = st.workspaces[0]
        .claws_socket
        .clone()
        .expect("the workspace serves Claws");
    assert_eq!(mode(&claws), 0o600, "claws socket");
    // A terminal with output: its state, logs and events are written too.
    let exec = common::claws_exec_in_new_terminal(&claws, "m", "echo hi");
    assert_eq!(exec["event"]["exitCode"], 0, "{exec}");
    assert_eq!(mode(claws.parent().unwrap()), 0o700, "claws dir");
    let mut claws_files = Vec::new();
    walk(claws.parent().unwrap(), &mut claws_files);
    for (p, m, _) in &claws_files {
        // Shell history is written by the user's shell, with the user's umask (the
        // service's, here 000); it lies in the 0700 `.claws/` all the same.
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(".hist"))
        {
            continue;
        }
        assert_eq!(m & 0o077, 0, "{} is {m:o}", p.display());
    }
    // Workspace files are shared with editors (readable) but never writable by others.
    let dot = ws.join(".openfiles");
    let mut ws_files = vec![(dot.clone(), mode(&dot), true)];
    walk(&dot, &mut ws_files);
    for (p, m, _) in &ws_files {
        assert_eq!(
            m & 0o022,
            0,
            "{} is {m:o} (group/other-writable)",
            p.display()
        );
    }
}

/// A directory outside every workspace that must stay untouched.
fn untouched(env: &Env, name: &str) -> PathBuf {
    let d = env.workspace(name);
    std::fs::write(d.join("keep"), "keep").unwrap();
    d
}

fn assert_untouched(d: &Path) {
    let names: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        vec!["keep".to_owned()],
        "{} was written",
        d.display()
    );
    assert_eq!(std::fs::read_to_string(d.join("keep")).unwrap(), "keep");
}

#[test]
fn symlinked_openfiles_dir_is_refused_and_never_written_through() {
    let env = Env::new();
    let ws = env.workspace("ws");
    std::fs::write(ws.join("a.txt"), "x").unwrap();
    let elsewhere = untouched(&env, "elsewhere");
    std::os::unix::fs::symlink(&elsewhere, ws.join(".openfiles")).unwrap();
    let _svc = env.serve(&[]);

    let err = add(&env, &ws).expect_err("a symlinked .openfiles must be refused");
    assert!(err.contains("symlink"), "{err}");
    // An edit in it is refused too, and leaves nothing behind.
    let _ = env
        .client()
        .send(&Request::Edited(openfiles_wire::control::Edited {
            paths: vec![ws.join("a.txt")],
            ..Default::default()
        }));
    assert!(env.status().workspaces.is_empty());
    assert_untouched(&elsewhere);
    assert!(std::fs::symlink_metadata(ws.join(".openfiles"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn symlinked_heartbeat_dir_is_refused_and_never_written_through() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let elsewhere = untouched(&env, "elsewhere");
    std::fs::create_dir(ws.join(".openfiles")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, ws.join(".openfiles/vscode")).unwrap();
    let _svc = env.serve(&[]);

    let err = add(&env, &ws).expect_err("a symlinked .openfiles/vscode must be refused");
    assert!(err.contains("symlink"), "{err}");
    assert!(env.status().workspaces.is_empty());
    assert_untouched(&elsewhere);
    // Nothing was left behind to be picked up later (no queue, no diagnostics).
    assert!(!ws.join(".openfiles/diagnostics.json").exists());
}

#[test]
fn symlinked_claws_dir_is_refused_and_never_written_through() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let elsewhere = untouched(&env, "elsewhere");
    std::os::unix::fs::symlink(&elsewhere, ws.join(".claws")).unwrap();
    let svc = env.serve(&[]);
    // Diagnostics may still be served; Claws is not, and nothing lands in the target.
    let _ = add(&env, &ws);
    for w in env.status().workspaces {
        assert_eq!(w.claws_socket, None, "{w:?}");
    }
    wait_until("the refusal is logged", || {
        svc.log_text().contains(".claws")
    });
    assert_untouched(&elsewhere);
}

#[test]
fn a_workspace_owned_by_another_user_is_refused() {
    let env = Env::new();
    let me = nix::unistd::getuid().as_raw();
    let foreign = if me == 0 {
        // As root: a folder handed to nobody.
        let d = env.workspace("foreign");
        std::os::unix::fs::chown(&d, Some(65534), Some(65534)).unwrap();
        d
    } else {
        // As a user: `/` belongs to root.
        PathBuf::from("/")
    };
    let _svc = env.serve(&[]);
    let err = add(&env, &foreign).expect_err("a foreign workspace must be refused");
    assert!(err.contains("owned by uid"), "{err}");
    assert!(env.status().workspaces.is_empty());
    assert!(!foreign.join(".openfiles").exists());
}

#[test]
fn queue_lines_naming_outside_files_are_never_checked() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    let outside = env.workspace("outside");
    std::fs::write(outside.join("secret.txt"), "s").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("sub")).unwrap();
    std::fs::write(ws.join("ok.txt"), "fine").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);

    let q = ws.join(".openfiles/queue.jsonl");
    let lines = [
        "/etc/passwd".to_owned(),
        ws.join("link.txt").display().to_string(),
        ws.join("sub/secret.txt").display().to_string(),
        ws.join("../outside/secret.txt").display().to_string(),
        outside.join("secret.txt").display().to_string(),
        // The marker: once it is checked, every line before it has been taken.
        ws.join("ok.txt").display().to_string(),
    ];
    let mut text = String::new();
    for p in &lines {
        text.push_str(&serde_json::json!({"v": 1, "paths": [p]}).to_string());
        text.push('\n');
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&q)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    wait_until("the marker is checked", || {
        diagnostics(&ws).is_some_and(|d| {
            d.files
                .get("ok.txt")
                .is_some_and(|f| f.items.iter().any(|i| i.source == "instant"))
        })
    });
    let d = diagnostics(&ws).unwrap();
    let keys: Vec<&String> = d.files.keys().collect();
    assert_eq!(keys, vec!["ok.txt"], "only the marker may be listed");
    let raw = std::fs::read_to_string(ws.join(".openfiles/diagnostics.json")).unwrap();
    assert!(!raw.contains("passwd"), "{raw}");
    assert!(!raw.contains("secret"), "{raw}");
    assert_untouched_secret(&outside);
}

fn assert_untouched_secret(outside: &Path) {
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "s"
    );
    assert_eq!(std::fs::read_dir(outside).unwrap().count(), 1);
}

#[test]
fn service_manager_variables_do_not_reach_plugin_hosts() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    std::fs::create_dir_all(env.socket.parent().unwrap()).unwrap();
    let notify = NotifySocket::bind(env.dir.path());
    let mut activator = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&env.socket)
        .arg("--fdname=control")
        .args(["-E", "OPENFILES_STATE_DIR", "-E", "OPENFILES_CONFIG"])
        .args(["-E", "OPENFILES_PLUGIN_PATH", "-E", "NOTIFY_SOCKET"])
        .args(["-E", "WATCHDOG_USEC", "-E", "SECRET_MARKER"])
        .args(["-E", "HOME", "-E", "SHELL"])
        .arg(bin())
        .args(["serve", "-w"])
        .arg(&ws)
        .env("OPENFILES_STATE_DIR", &env.state)
        .env("OPENFILES_CONFIG", &env.config)
        .env("OPENFILES_PLUGIN_PATH", env.plugin_path.as_ref().unwrap())
        .env("NOTIFY_SOCKET", &notify.path)
        .env("WATCHDOG_USEC", "600000000")
        .env("SECRET_MARKER", "ordinary")
        .env("HOME", env.workspace("home"))
        .env("SHELL", "/bin/bash")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("systemd-socket-activate (install the systemd package)");
    wait_listening(&mut activator);

    // The first connection starts the service; its plugin host reports a pid.
    let mut host = None;
    wait_until("a plugin host runs", || {
        host = env
            .status()
            .plugins
            .iter()
            .find_map(|p| p.pid.map(u64::from).filter(|&pid| pid > 0));
        host.is_some()
    });
    notify.expect("READY=1");
    let host = host.unwrap();
    let service = activator.id();
    let read_env = |pid: u64| -> Vec<String> {
        std::fs::read(format!("/proc/{pid}/environ"))
            .unwrap()
            .split(|b| *b == 0)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect()
    };
    // The service was started with them (the test is not vacuous)...
    let svc_env = read_env(service as u64);
    for var in ["NOTIFY_SOCKET=", "LISTEN_FDS=", "WATCHDOG_USEC="] {
        assert!(
            svc_env.iter().any(|v| v.starts_with(var)),
            "service lacks {var}"
        );
    }
    // ...and the plugin host, its child, has none of them but keeps ordinary variables.
    let stat = std::fs::read_to_string(format!("/proc/{host}/stat")).unwrap();
    let ppid: u32 = stat
        .rsplit(')')
        .next()
        .and_then(|s| s.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert_eq!(ppid, service, "the plugin host is the service's child");
    let host_env = read_env(host);
    for var in openfiles_gate::child_env::PRIVATE_ENV {
        let prefix = format!("{var}=");
        assert!(
            !host_env.iter().any(|v| v.starts_with(&prefix)),
            "{var} leaked to the plugin host: {host_env:?}"
        );
    }
    assert!(host_env.iter().any(|v| v == "SECRET_MARKER=ordinary"));

    // A Claws terminal's shell: the same.
    let sock = ws.join(".claws/claws.sock");
    let exec = common::claws_exec_in_new_terminal(&sock, "env", "env; echo END-OF-ENV");
    let out = exec["event"]["output"].as_str().unwrap_or_default();
    assert!(out.contains("END-OF-ENV"), "{exec}");
    assert!(out.contains("SECRET_MARKER=ordinary"), "{out}");
    for var in openfiles_gate::child_env::PRIVATE_ENV {
        assert!(
            !out.lines().any(|l| l.starts_with(&format!("{var}="))),
            "{var} leaked to a terminal: {out}"
        );
    }

    signal(activator.id() as i32, libc::SIGTERM);
    let status = activator.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
