//! SIGHUP against a running service: the reloaded configuration reaches what is already
//! running — the log level, the heartbeat period, watch mode, the Claws switch, newly listed
//! workspaces and new discovery roots — and a broken file keeps the running settings.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;

fn hup(svc: &Service) {
    signal(svc.pid(), libc::SIGHUP);
}

fn heartbeat_stamp(ws: &Path) -> Option<String> {
    let dir = ws.join(".openfiles/vscode");
    let file = std::fs::read_dir(dir).ok()?.flatten().next()?.path();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    Some(v.get("updatedAt")?.to_string())
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

    // The new heartbeat period: three distinct writes in well under the old 30 s period.
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
