//! Issue 31 (4), a warm first edit: the session-start hook `hooks install` adds (Claude
//! Code's, Codex's and Gemini CLI's `SessionStart`) asks a real `openfiles serve` to start
//! the workspace's checkers — ruff's server and pyright, through the real lsp plugin — and
//! prints nothing (each agent reads no output as "no context"); the servers are then
//! running for that workspace, `status --json` says so, and the warm-up left nothing in
//! the session. A session start without the agent's working folder (a payload of `{}`)
//! warms nothing.

use crate::common;

use std::path::Path;

use super::hook_late::{python_env, python_project};
use common::{wait_until, Env};
use serde_json::json;

/// Run the session-start hook of `agent` with `payload`; what it printed on stdout.
fn session_start(env: &Env, agent: &str, payload: &str) -> String {
    let mut cmd = env.command(&[
        "hook",
        "--agent",
        agent,
        "--event",
        "SessionStart",
        "--verbose",
    ]);
    let out = common::hook::run_hook(&mut cmd, payload);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Command lines of the processes descending from `pid`.
fn descendants(pid: i32) -> Vec<String> {
    let mut parent_of = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the comm may hold spaces and parentheses.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        parent_of.push((p, ppid));
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let up = tree[i];
        tree.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == up)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree[1..]
        .iter()
        .filter_map(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .collect()
}

fn warm_state(env: &Env, ws: &Path) -> Option<openfiles_wire::control::WarmState> {
    env.status()
        .workspaces
        .into_iter()
        .find(|w| w.root == ws)
        .and_then(|w| w.warm)
}

#[test]
fn a_session_start_warms_the_workspace_checkers_and_prints_nothing() {
    let env = python_env(120_000);
    let ws = env.workspace("py");
    python_project(&ws);
    std::fs::write(ws.join("src/app.py"), "def f() -> int:\n    return 1\n").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);

    // A session start without a payload (no working folder): nothing warmed.
    assert_eq!(session_start(&env, "claude", "{}"), "");
    assert_eq!(warm_state(&env, &ws), None);
    assert!(
        !descendants(svc.pid()).iter().any(|c| c.contains("pyright")),
        "nothing started yet"
    );

    // Each agent's session-start payload: the hook prints nothing, which all three take.
    for agent in ["claude", "codex", "gemini"] {
        let payload = json!({
            "session_id": format!("{agent}-session"),
            "transcript_path": ws.join("t.jsonl"),
            "cwd": ws.join("src"),
            "hook_event_name": "SessionStart",
            "source": "startup",
        })
        .to_string();
        assert_eq!(session_start(&env, agent, &payload), "", "{agent}");
    }

    let mut warm = None;
    wait_until("the warm-up is done", || {
        warm = warm_state(&env, &ws).filter(|w| w.done_at != 0);
        warm.is_some()
    });
    let warm = warm.unwrap();
    assert_eq!(warm.sources, ["lsp"], "{warm:?}");
    assert_eq!(warm.files, [ws.join("src/app.py")], "{warm:?}");
    assert!(warm.failed.is_empty(), "{warm:?}");
    let running = descendants(svc.pid());
    assert!(
        running.iter().any(|c| c.contains("pyright-langserver")),
        "pyright runs: {running:#?}"
    );
    assert!(
        running
            .iter()
            .any(|c| c.contains("ruff") && c.contains("server")),
        "ruff's server runs: {running:#?}"
    );
    // The warm-up is no edit: no session file, nothing for review or agents to read.
    let st = env.status();
    assert_eq!(st.workspaces[0].session_files, 0);
    assert!(common::diagnostics(&ws).is_none_or(|d| d.files.is_empty()));
    svc.terminate();
}
