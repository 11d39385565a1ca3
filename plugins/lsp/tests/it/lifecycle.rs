//! Server lifecycle: one warm server per (project root, server) when not shared, idle shutdown, shutdown
//! on destroy, and several servers merged on one file.

use crate::support;
use serde_json::json;
use std::time::{Duration, Instant};
use support::{all, Env};

/// Wait (bounded) until process `pid` no longer exists.
fn wait_gone(pid: u32) -> bool {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.contains(") Z "))
        .unwrap_or(true)
}

#[test]
fn one_server_per_project_root_and_all_stop_on_destroy() {
    // Per-root mode (`share_servers = false`); shared servers are tested in monorepo.rs.
    let env =
        Env::new(json!({"disable": ["pyright", "basedpyright", "ty"], "share_servers": false}));
    env.write("a/pyproject.toml", "[project]\nname = \"a\"\n");
    let a1 = env.write("a/one.py", "import os\n");
    let a2 = env.write("a/two.py", "import sys\n");
    let b = env.write("b/three.py", "import re\n");
    let items = env.check(&a1, 30_000);
    assert_eq!(all(&items), vec![(1, "F401".to_string())], "{items:#?}");
    assert_eq!(all(&env.check(&a2, 30_000)), vec![(1, "F401".to_string())]);
    assert_eq!(env.plugin.server_pids().len(), 1, "a/ shares one ruff");
    assert_eq!(all(&env.check(&b, 30_000)), vec![(1, "F401".to_string())]);
    let pids = env.plugin.server_pids();
    assert_eq!(
        pids.len(),
        2,
        "b/ has no marker: the workspace root gets its own ruff"
    );
    drop(env);
    for (_, pid) in pids {
        assert!(wait_gone(pid), "destroy stopped server {pid}");
    }
}

#[test]
fn an_idle_server_stops_and_the_next_check_starts_it_again() {
    let env =
        Env::new(json!({"disable": ["pyright", "basedpyright", "ty"], "idle_timeout_ms": 300}));
    let file = env.write("one.py", "import os\n");
    assert_eq!(
        all(&env.check(&file, 30_000)),
        vec![(1, "F401".to_string())]
    );
    let pid = env.pid("ruff");
    assert!(wait_gone(pid), "idle server {pid} stopped");
    env.write("one.py", "import os\nimport re\n");
    assert_eq!(
        all(&env.check(&file, 30_000)),
        vec![(1, "F401".to_string()), (2, "F401".to_string())]
    );
}

#[test]
fn two_servers_on_one_file_merge() {
    let env = Env::new(json!({}));
    let file = env.write("m.py", "import os\n\nprint(undefined_x)\n");
    let items = env.check(&file, 60_000);
    let sources: std::collections::BTreeSet<_> = items.iter().map(|i| i.source.as_str()).collect();
    assert!(
        sources.contains("Ruff") && sources.contains("Pyright"),
        "{items:#?}"
    );
    let line3: Vec<_> = items
        .iter()
        .filter(|i| i.line == 3)
        .map(|i| i.source.clone())
        .collect();
    assert_eq!(
        line3.len(),
        2,
        "ruff F821 and pyright reportUndefinedVariable differ: {items:#?}"
    );
    assert!(
        items
            .windows(2)
            .all(|w| (w[0].line, w[0].column) <= (w[1].line, w[1].column)),
        "sorted"
    );
}
