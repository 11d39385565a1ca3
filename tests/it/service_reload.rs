//! SIGHUP against a running service: the reloaded configuration reaches what is already
//! running — the log level, the heartbeat period, watch mode, the Claws switch, newly listed
//! workspaces and new discovery roots — and a broken file keeps the running settings.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;

fn hup(svc: &Service) {
    signal(svc.pid(), libc::SIGHUP);
}

/// When the heartbeat was last refreshed: its mtime, what readers judge it by (the sweep
/// updates the timestamp, not the content).
fn heartbeat_stamp(ws: &Path) -> Option<std::time::SystemTime> {
    let dir = ws.join(".openfiles/vscode");
    let file = std::fs::read_dir(dir).ok()?.flatten().next()?.path();
    std::fs::metadata(file).ok()?.modified().ok()
}

#[test]
fn sighup_applies_the_new_configuration_to_running_workspaces() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let listed = env.workspace("listed");
    let roots = env.workspace("roots");
    let found = roots.join("found");
    std::fs::create_dir_all(found.join(".openfiles")).unwrap();
    std::fs::write(
        &env.config,
        "[service]\nlog_level = \"error\"\nheartbeat_seconds = 30\n\
         [watch]\nenabled = false\n[claws]\nenabled = false\n",
    )
    .unwrap();
    // RUST_LOG would override `log_level`; this test is about the config's own level.
    let mut cmd = env.command(&["serve", "-w", ws.to_str().unwrap()]);
    cmd.env_remove("RUST_LOG");
    let svc = env.serve_command(cmd);
    let before = env.status();
    assert_eq!(before.workspaces.len(), 1, "{before:?}");
    assert!(before.workspaces[0].claws_socket.is_none());
    assert_eq!(before.workspaces[0].watches, 0);
    assert!(!ws.join(".claws/claws.sock").exists());

    std::fs::write(
        &env.config,
        format!(
            "[service]\nlog_level = \"info\"\nheartbeat_seconds = 2\nworkspaces = [{:?}]\n\
             roots = [{:?}]\n[watch]\nenabled = true\n[claws]\nenabled = true\n",
            listed.to_str().unwrap(),
            roots.to_str().unwrap()
        ),
    )
    .unwrap();
    hup(&svc);
    wait_until(
        "the reload registers the listed and discovered workspaces",
        || env.status().workspaces.len() == 3,
    );
    let after = env.status();
    let served: BTreeSet<_> = after.workspaces.iter().map(|w| w.root.clone()).collect();
    assert!(served.contains(&listed) && served.contains(&found.canonicalize().unwrap()));
    let main = after.workspaces.iter().find(|w| w.root == ws).unwrap();
    assert_eq!(
        main.claws_socket.as_deref(),
        Some(ws.join(".claws/claws.sock").as_path()),
        "claws switched on by the reload"
    );
    assert!(ws.join(".claws/claws.sock").exists());
    assert!(main.watches > 0, "watch mode switched on: {main:?}");

    // The new log level: `info` lines of the reload itself now reach the log.
    wait_until("info lines appear in the log", || {
        svc.log_text().contains("serving workspace")
    });

    // The new heartbeat period: three distinct refreshes in well under the old 30 s period.
    let mut stamps = BTreeSet::new();
    wait_until("the heartbeat follows the 2 s period", || {
        if let Some(s) = heartbeat_stamp(&ws) {
            stamps.insert(s);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        stamps.len() >= 3
    });

    // A new folder under the new root is discovered by the restarted discovery watcher.
    let later = roots.join("later");
    std::fs::create_dir_all(later.join(".openfiles")).unwrap();
    wait_until(
        "a workspace created under the new root is discovered",
        || {
            env.status()
                .workspaces
                .iter()
                .any(|w| w.root == later.canonicalize().unwrap())
        },
    );

    // A broken file keeps everything running as it is.
    std::fs::write(&env.config, "[claws]\nenabled = maybe\n").unwrap();
    hup(&svc);
    wait_until("the broken config is reported", || {
        svc.log_text().contains("keeping the running configuration")
    });
    assert!(ws.join(".claws/claws.sock").exists());

    // Switching Claws and watch mode off closes the socket and drops the watches.
    std::fs::write(
        &env.config,
        "[watch]\nenabled = false\n[claws]\nenabled = false\n",
    )
    .unwrap();
    hup(&svc);
    wait_until("claws switched off by the reload", || {
        !ws.join(".claws/claws.sock").exists()
    });
    let off = env.status();
    let main = off.workspaces.iter().find(|w| w.root == ws).unwrap();
    assert!(main.claws_socket.is_none());
    assert_eq!(main.watches, 0, "watch mode switched off");
    assert_eq!(svc.terminate(), Some(0));
}

/// Every process below `pid` (children, grandchildren, …).
fn descendants(pid: i32) -> Vec<i32> {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        if let Some(ppid) = rest.split(' ').nth(1).and_then(|x| x.parse::<i32>().ok()) {
            parent_of.push((p, ppid));
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(q) = todo.pop() {
        for (c, _) in parent_of.iter().filter(|(_, pp)| *pp == q) {
            out.push(*c);
            todo.push(*c);
        }
    }
    out
}

/// `systemctl --user kill -s HUP openfiles.service`, as the docs once said, signals every
/// process of the unit: both Claws terminals died (`exited, 129`) and every plugin host
/// restarted. Reload is `ExecReload` now (the service alone), and a stray HUP to the whole
/// process tree leaves the terminals and plugin hosts running: the same terminal still
/// runs commands and the plugin host keeps its pid.
#[test]
fn a_hup_to_the_whole_process_tree_reloads_and_kills_no_child() {
    let mut env = Env::new();
    let ws = env.workspace("ws");
    let home = env.workspace("home");
    env.extra_env.push(("HOME".into(), home.into_os_string()));
    env.plugin_path = Some(common::plugins::path_list(&[common::plugins::fixture(
        "instant",
    )]));
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let sock = ws.join(".claws/claws.sock");
    let mut ids = Vec::new();
    for shell in ["/bin/bash", "/usr/bin/zsh", "/usr/bin/fish"] {
        let v = json_call(
            &sock,
            &format!(r#"{{"id":1,"cmd":"create","name":"t","shellPath":"{shell}"}}"#),
        );
        assert_eq!(v["ok"], true, "{v}");
        ids.push(v["id"].as_str().unwrap().to_owned());
    }
    // Each shell is ready once an exec answers.
    for id in &ids {
        let v = json_call(
            &sock,
            &format!(r#"{{"id":2,"cmd":"exec","id":"{id}","command":"true","timeoutMs":60000}}"#),
        );
        assert_eq!(v["event"]["exitCode"], 0, "{v}");
    }
    let host_pid = || {
        env.status()
            .plugins
            .iter()
            .find(|p| p.name.as_deref() == Some("instant"))
            .and_then(|p| p.pid.map(u64::from))
    };
    wait_until("the plugin host runs", || host_pid().is_some());
    let host = host_pid();

    let tree = descendants(svc.pid());
    assert!(tree.len() >= 4, "{tree:?}");
    for p in tree.iter().chain(std::iter::once(&svc.pid())) {
        signal(*p, libc::SIGHUP);
    }
    wait_until("the service reloaded", || {
        svc.log_text().contains("SIGHUP: configuration reloaded")
    });
    for id in &ids {
        let v = json_call(
            &sock,
            &format!(
                r#"{{"id":3,"cmd":"exec","id":"{id}","command":"echo alive","timeoutMs":60000}}"#
            ),
        );
        assert_eq!(v["event"]["output"], "alive\n", "terminal {id}: {v}");
    }
    assert_eq!(host_pid(), host, "the plugin host was restarted");
}

/// Without journald (this test's service logs to stderr), a config typo applied by a
/// reload was visible nowhere. The service keeps `serve.log` in its state dir, `openfiles
/// logs` prints it, and `status` shows the last reload error until a good reload.
#[test]
fn without_journald_the_log_file_and_status_show_a_failed_reload() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    std::fs::write(&env.config, "[service]\nheartbeat_secondz = 3\n").unwrap();
    hup(&svc);
    wait_until("status shows the reload error", || {
        env.status()
            .last_reload_error
            .is_some_and(|e| e.contains("heartbeat_secondz"))
    });
    let out = env.command(&["logs", "-n", "200"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("heartbeat_secondz"), "{text}");
    let human = env.command(&["status"]).output().unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("last config reload failed"));
    std::fs::write(&env.config, "").unwrap();
    hup(&svc);
    wait_until("a good reload clears it", || {
        env.status().last_reload_error.is_none()
    });
}
