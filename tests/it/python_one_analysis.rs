//! Issue 42.3: one Python type analysis per project. In a trusted workspace whose project the
//! pyright plugin's warm language server serves, the lsp plugin leaves pyright out of a
//! file's check (ruff still runs there) and starts no `pyright-langserver` for it; the
//! file's type items — hints included — come from the pyright plugin, reported once and
//! classified against the commit. A `nav` question still starts the lsp plugin's own
//! server. Untrusted workspaces, the pyright plugin without its server (its command line
//! only) and a file the project's `include` leaves out (the pyright plugin says nothing about
//! it) keep the lsp plugin's analysis.

use crate::common;
use crate::common::git;

use std::collections::BTreeMap;
use std::path::Path;

use common::plugins::{path_list, plugin};
use common::typescript::install_test_deps;
use common::Env;
use openfiles_wire::spec::{Item, Severity};

/// `app.py` at the commit: an unused import (ruff F401, pyright's "not accessed" hint) and
/// an old type error (reportAssignmentType).
const COMMITTED: &str =
    "import os\n\n\ndef f(x: int) -> str:\n    legacy: int = \"x\"\n    return str(x + legacy)\n";
/// The edit adds a type error: reportReturnType.
const EDITED: &str =
    "import os\n\n\ndef f(x: int) -> str:\n    legacy: int = \"x\"\n    return x + legacy\n";

fn project(ws: &Path) {
    project_with(ws, "[tool.pyright]\n");
}

fn project_with(ws: &Path, pyproject: &str) {
    std::fs::write(ws.join("pyproject.toml"), pyproject).unwrap();
    std::fs::write(ws.join("app.py"), COMMITTED).unwrap();
    git(ws, &["init", "-q"]);
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "base"]);
}

/// ruff and pyright in the lsp plugin, the pyright plugin with `pyright_table`.
fn env(pyright_table: &str) -> Env {
    install_test_deps();
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp"), plugin("pyright")]));
    std::fs::write(
        &env.config,
        format!("[plugin.lsp]\ndisable = [\"basedpyright\", \"ty\"]\n{pyright_table}"),
    )
    .unwrap();
    env
}

/// Edit `app.py` and wait until every source answered; its items.
fn edit(env: &Env, ws: &Path) -> Vec<Item> {
    let app = ws.join("app.py");
    std::fs::write(&app, EDITED).unwrap();
    let since = env.edited(&[&app]).ts;
    let reply = env.wait(&[&app], since, 240_000);
    assert!(reply.complete, "{reply:#?}");
    reply
        .workspaces
        .iter()
        .flat_map(|w| w.files.values())
        .flat_map(|e| e.items.clone())
        .collect()
}

/// Per plugin (`lsp`, `pyright`), how many `pyright-langserver`s run under its plugin host
/// in the service's process tree.
fn langservers(service: i32) -> BTreeMap<String, usize> {
    let mut parent = BTreeMap::new();
    let mut cmdline = BTreeMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let (Ok(stat), Ok(cmd)) = (
            std::fs::read_to_string(format!("/proc/{pid}/stat")),
            std::fs::read(format!("/proc/{pid}/cmdline")),
        ) else {
            continue;
        };
        let after = stat.rsplit_once(')').map(|(_, s)| s).unwrap_or("");
        let ppid: i32 = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        parent.insert(pid, ppid);
        cmdline.insert(pid, String::from_utf8_lossy(&cmd).replace('\0', " "));
    }
    let mut out = BTreeMap::new();
    for (pid, cmd) in &cmdline {
        if !cmd.contains("pyright-langserver") {
            continue;
        }
        let mut p = parent.get(pid).copied().unwrap_or(0);
        let mut host = None;
        while p > 1 && p != service {
            let c = cmdline.get(&p).map(String::as_str).unwrap_or("");
            if c.contains("plugin-host") {
                host = ["lsp", "pyright"]
                    .into_iter()
                    .find(|n| c.contains(&format!("openfiles_plugin_{n}.")));
            }
            p = parent.get(&p).copied().unwrap_or(0);
        }
        if p == service {
            *out.entry(host.unwrap_or("?").to_owned()).or_default() += 1;
        }
    }
    out
}

fn count(items: &[Item], code: &str) -> Vec<Option<bool>> {
    items
        .iter()
        .filter(|i| i.code.as_deref() == Some(code))
        .map(|i| i.introduced)
        .collect()
}

/// The edited file's items that do not depend on who analysed it: the new type error once,
/// new; the old one once, old; ruff's unused import, old.
fn assert_classified(items: &[Item]) {
    assert_eq!(count(items, "reportReturnType"), [Some(true)], "{items:#?}");
    assert_eq!(
        count(items, "reportAssignmentType"),
        [Some(false)],
        "{items:#?}"
    );
    assert_eq!(count(items, "F401"), [Some(false)], "{items:#?}");
}

/// pyright's hint on the unused import, whoever gives it.
fn hints(items: &[Item]) -> usize {
    items
        .iter()
        .filter(|i| {
            i.severity == Severity::Hint
                && i.source == "Pyright"
                && i.message.contains("\"os\" is not accessed")
        })
        .count()
}

#[test]
fn a_warm_pyright_plugin_is_the_one_analysis_and_nav_still_starts_the_lsp_server() {
    let env = env("");
    let ws = env.workspace("app");
    project(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let items = edit(&env, &ws);
    assert_classified(&items);
    assert_eq!(hints(&items), 1, "the hint kept, once: {items:#?}");
    let servers = langservers(svc.pid());
    assert_eq!(
        servers.get("lsp"),
        None,
        "the lsp plugin started no pyright-langserver for the check: {servers:?}"
    );
    assert_eq!(servers.get("pyright"), Some(&1), "{servers:?}");

    // Code navigation still works: the lsp plugin starts its server for the question.
    let out = env
        .command(&["nav", "hover", "app.py:4:5", "--json"])
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let hover: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = hover["text"].as_str().unwrap_or_default();
    assert!(text.contains("def f(x: int) -> str"), "{hover:#}");
    let servers = langservers(svc.pid());
    assert_eq!(servers.get("lsp"), Some(&1), "{servers:?}");
    svc.terminate();
}

#[test]
fn an_untrusted_workspace_keeps_both_analyses() {
    let env = env("");
    let ws = env.workspace("cloned");
    project(&ws);
    // Served, but nobody named it: not trusted.
    let svc = env.serve(&[]);
    let items = edit(&env, &ws);
    assert_classified(&items);
    assert_eq!(hints(&items), 1, "{items:#?}");
    let servers = langservers(svc.pid());
    assert_eq!(servers.get("lsp"), Some(&1), "{servers:?}");
    svc.terminate();
}

#[test]
fn the_pyright_plugins_command_line_alone_keeps_the_lsp_server() {
    let env = env("[plugin.pyright]\nlanguage_server = false\n");
    let ws = env.workspace("app");
    project(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let items = edit(&env, &ws);
    assert_classified(&items);
    assert_eq!(hints(&items), 1, "the lsp server's hint: {items:#?}");
    let servers = langservers(svc.pid());
    assert_eq!(servers.get("lsp"), Some(&1), "{servers:?}");
    assert_eq!(servers.get("pyright"), None, "{servers:?}");
    svc.terminate();
}

#[test]
fn a_file_the_project_does_not_include_keeps_the_lsp_server() {
    let env = env("");
    let ws = env.workspace("app");
    // click's way: the project's type checking covers `src` only.
    project_with(&ws, "[tool.pyright]\ninclude = [\"src\"]\n");
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let items = edit(&env, &ws);
    assert_classified(&items);
    assert_eq!(hints(&items), 1, "{items:#?}");
    let servers = langservers(svc.pid());
    assert_eq!(servers.get("lsp"), Some(&1), "{servers:?}");
    svc.terminate();
}
