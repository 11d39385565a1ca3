//! Issue 41, code intelligence on the servers openfiles keeps warm: `openfiles nav` and the
//! MCP navigation tools against a real `openfiles serve` with the real lsp plugin and
//! pyright, over a small multi-file Python project: definition and references of a function
//! used in two files, hover text, a `Class/method` symbol path, a file's symbols; and in a
//! workspace nobody trusted, the project's own servers (`.venv/bin`) never start for a
//! question.

use crate::common;

use std::path::Path;

use super::hook_late::python_env;
use common::mcp::Mcp;
use common::Env;
use openfiles_wire::control::nav::NavReply;
use serde_json::{json, Value};

const LIB: &str = "class Greeter:\n    def greet(self, name: str) -> str:\n        \"\"\"Say hello.\"\"\"\n        return \"hé \" + name\n\n\ndef helper(x: int) -> int:\n    return x + 1\n";
const APP: &str =
    "from lib import helper, Greeter\n\nprint(helper(1))\nprint(Greeter().greet(\"a\"))\n";
const OTHER: &str = "import lib\n\n\ny = lib.helper(2) + lib.helper(3)\n";

fn project(ws: &Path) {
    std::fs::write(ws.join("pyproject.toml"), "[tool.pyright]\n").unwrap();
    std::fs::write(ws.join("lib.py"), LIB).unwrap();
    std::fs::write(ws.join("app.py"), APP).unwrap();
    std::fs::write(ws.join("other.py"), OTHER).unwrap();
}

/// `openfiles nav ARGS` in `ws`: (success, stdout, stderr).
fn nav(env: &Env, ws: &Path, args: &[&str]) -> (bool, String, String) {
    let mut full = vec!["nav"];
    full.extend_from_slice(args);
    let out = env.command(&full).current_dir(ws).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn nav_json(env: &Env, ws: &Path, args: &[&str]) -> NavReply {
    let mut full = args.to_vec();
    full.push("--json");
    let (ok, out, err) = nav(env, ws, &full);
    assert!(ok, "nav {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn at(r: &NavReply) -> Vec<(String, u32, u32)> {
    let mut v: Vec<_> = r
        .locations
        .iter()
        .map(|l| (l.at.path.display().to_string(), l.at.line, l.at.column))
        .collect();
    v.sort();
    v
}

#[test]
fn nav_answers_from_the_workspace_language_server() {
    let env = python_env(120_000);
    let ws = env.workspace("py");
    project(&ws);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);

    // `helper` used in app.py (line 3, column 7): defined in lib.py.
    let def = nav_json(&env, &ws, &["def", "app.py:3:7"]);
    assert_eq!(def.server.as_deref(), Some("pyright"), "{def:#?}");
    assert_eq!(at(&def), [("lib.py".into(), 7, 5)], "{def:#?}");
    assert_eq!(
        def.locations[0].code.as_deref(),
        Some("def helper(x: int) -> int:")
    );

    // Its references in both files, asked by name.
    let refs = nav_json(&env, &ws, &["refs", "lib.py#helper"]);
    assert_eq!(
        at(&refs),
        [
            ("app.py".into(), 1, 17),
            ("app.py".into(), 3, 7),
            ("lib.py".into(), 7, 5),
            ("other.py".into(), 4, 9),
            ("other.py".into(), 4, 25),
        ],
        "{refs:#?}"
    );
    assert_eq!(refs.resolved.as_ref().map(|s| s.line), Some(7));
    // The first question started the server and says so; later ones find it running.
    assert!(def.started_ms > 0, "{def:#?}");
    assert_eq!(refs.started_ms, 0, "{refs:#?}");
    let (ok, text, err) = nav(&env, &ws, &["refs", "lib.py#helper"]);
    assert!(ok, "{err}");
    assert!(
        text.starts_with("function helper at lib.py:7:5\n5 references (pyright):\napp.py\n  1:17  from lib import helper, Greeter\n  3:7  print(helper(1))\n"),
        "{text}"
    );

    // A method by its name path: hover, and where it is used.
    let hover = nav_json(&env, &ws, &["hover", "lib.py#Greeter/greet"]);
    let text = hover.text.clone().unwrap_or_default();
    assert!(
        text.contains("greet") && text.contains("Say hello"),
        "{hover:#?}"
    );
    let uses = nav_json(&env, &ws, &["refs", "lib.py#Greeter/greet"]);
    assert_eq!(
        at(&uses),
        [("app.py".into(), 4, 17), ("lib.py".into(), 2, 9)],
        "{uses:#?}"
    );

    // The file's outline, by name path.
    let (ok, text, err) = nav(&env, &ws, &["symbols", "lib.py"]);
    assert!(ok, "{err}");
    assert!(
        text.contains("  1:7  class Greeter\n") && text.contains("  2:9  method Greeter/greet\n"),
        "{text}"
    );

    // Who calls `helper`: each calling module with the lines of its calls.
    let (ok, text, err) = nav(&env, &ws, &["calls", "lib.py#helper"]);
    assert!(ok, "{err}");
    assert!(
        text.contains(
            "2 callers (pyright):\nmodule (module) app.py at app.py:1:1\n  3:7  print(helper(1))\n"
        ),
        "{text}"
    );

    // A name the file lacks: refused, naming what it has.
    let (ok, _, err) = nav(&env, &ws, &["def", "lib.py#Nope/nothing"]);
    assert!(!ok && err.contains("Greeter/greet"), "{err}");

    // Through `openfiles mcp`: the same answer, structured, paths relative to the workspace.
    let mut mcp = Mcp::start(&env, &ws);
    let init = mcp.ask(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}}));
    assert!(init["result"].is_object(), "{init}");
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let r = mcp.tool_result(
        "openfiles_references",
        json!({"path": "lib.py", "symbol": "helper"}),
    );
    assert_ne!(r["isError"], true, "{r}");
    let locations = r["structuredContent"]["locations"].as_array().unwrap();
    let mut got: Vec<(String, u64, u64)> = locations
        .iter()
        .map(|l| {
            (
                l["path"].as_str().unwrap().to_owned(),
                l["line"].as_u64().unwrap(),
                l["column"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got[..2],
        [("app.py".into(), 1, 17), ("app.py".into(), 3, 7)]
    );
    assert_eq!(got.len(), 5, "{r}");
    assert!(locations
        .iter()
        .all(|l| l["endColumn"].as_u64() > l["column"].as_u64()));
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("other.py\n  4:9  y = lib.helper(2) + lib.helper(3)"),
        "{text}"
    );
    let listed = mcp.ask(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for t in [
        "openfiles_definition",
        "openfiles_references",
        "openfiles_hover",
        "openfiles_symbols",
        "openfiles_implementations",
        "openfiles_calls",
        "openfiles_rename",
    ] {
        assert!(names.contains(&t), "{t} listed: {names:?}");
    }

    // A rename: the edits first (nothing written), then applied through MCP as the agent's
    // edit, and the new name is what the server knows.
    let shown = nav_json(&env, &ws, &["rename", "lib.py#helper", "--to", "twice"]);
    let files: Vec<(String, usize)> = shown
        .edits
        .iter()
        .map(|f| (f.path.display().to_string(), f.edits.len()))
        .collect();
    assert_eq!(
        files,
        [
            ("app.py".into(), 2),
            ("lib.py".into(), 1),
            ("other.py".into(), 2)
        ],
        "{shown:#?}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("lib.py")).unwrap(), LIB);
    let r = mcp.tool_result(
        "openfiles_rename",
        json!({"path": "lib.py", "symbol": "helper", "new_name": "twice", "apply": true}),
    );
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(
        std::fs::read_to_string(ws.join("other.py")).unwrap(),
        "import lib\n\n\ny = lib.twice(2) + lib.twice(3)\n"
    );
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Applied."), "{text}");
    let refs = nav_json(&env, &ws, &["refs", "lib.py#twice"]);
    assert_eq!(refs.total, 5, "{refs:#?}");
    // The same edits again: the files changed since, so nothing is written.
    let again = openfiles::nav::apply_rename(&shown, "twice");
    assert!(again.is_err(), "{again:?}");
}

#[test]
fn a_question_in_an_untrusted_workspace_starts_none_of_its_own_servers() {
    let env = python_env(120_000);
    // Served, but nobody named it: a repository an agent works in is not trusted.
    let ws = env.workspace("cloned");
    common::git(&ws, &["init", "-q"]);
    project(&ws);
    let marker = ws.join("trap-ran");
    for name in ["ruff", "pyright-langserver"] {
        let trap = ws.join(".venv/bin").join(name);
        std::fs::create_dir_all(trap.parent().unwrap()).unwrap();
        std::fs::write(
            &trap,
            format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&trap, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let _svc = env.serve(&[]);
    let def = nav_json(&env, &ws, &["def", "app.py:3:7"]);
    // Answered by the server a check would start (pyright installed for the user) …
    assert_eq!(at(&def), [("lib.py".into(), 7, 5)], "{def:#?}");
    // … and never by the workspace's own.
    assert!(
        !marker.exists(),
        "a workspace's own server ran for a question"
    );
    let st: Value = serde_json::to_value(env.status()).unwrap();
    let trusted = st["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["root"] == json!(ws))
        .map(|w| w["trusted"].clone());
    assert_eq!(trusted, Some(json!(false)), "{st}");
}

/// A plugin library built before questions existed (a minor-0 table, whose `query` slot
/// would abort the host) is still loaded and checks, and a question to it is answered as
/// unsupported without calling past its table; a plugin of today that answers no questions
/// says the same.
#[tokio::test]
async fn a_plugin_without_the_query_entry_answers_no_question_and_keeps_checking() {
    use common::plugins::{fixture, path_list};
    use openfiles::plugin_host::{ManagerOptions, PluginManager};
    use openfiles_plugin_api::query::{QueryKind, QueryRequest};
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let token = tokio_util::sync::CancellationToken::new();
    let opts = ManagerOptions {
        host_exe: std::path::PathBuf::from(env!("CARGO_BIN_EXE_openfiles")),
        env_path: Some(path_list(&[fixture("minor0"), fixture("instant")])),
        exe_dir: None,
    };
    let config = openfiles::config::Config::default();
    let m = PluginManager::start_with(&config, &ws.join("state"), token.clone(), opts).await;
    let question = |file: &str| QueryRequest {
        id: 0,
        kind: QueryKind::Definition,
        workspace: ws.clone(),
        file: ws.join(file),
        line: 1,
        column: 1,
        query: None,
        new_name: None,
        limit: 0,
        offset: 0,
        timeout_ms: 10_000,
        trusted: false,
    };
    for (name, file) in [("minor0", "a.m0"), ("instant", "a.txt")] {
        let id = m
            .ids()
            .into_iter()
            .find(|id| m.name(*id) == Some(name))
            .unwrap_or_else(|| panic!("{name} not loaded: {:#?}", m.status_rows()));
        let answer = m.query(id, question(file)).await;
        assert!(
            answer.as_ref().is_ok_and(|a| a.unsupported),
            "{name}: {answer:?}"
        );
        // Its host lives on: a check still answers.
        let check = m
            .check(
                id,
                openfiles_plugin_api::CheckRequest {
                    workspace: ws.clone(),
                    files: vec![ws.join(file)],
                    timeout_ms: 10_000,
                    ..Default::default()
                },
            )
            .await;
        assert!(check.is_ok(), "{name}: {check:?}");
    }
    let rows = m.status_rows();
    assert!(rows.iter().all(|r| r.restarts == 0), "{rows:#?}");
    token.cancel();
    m.wait_stopped().await;
}
