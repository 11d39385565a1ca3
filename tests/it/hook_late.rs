//! Issue 31 (3), no feedback is lost: through a real `openfiles serve` with the real lsp
//! plugin (ruff's server and pyright), an edit whose check outlasts a short hook deadline (a
//! cold pyright takes well over 100 ms to start and analyse) gets the one line naming the
//! file still being checked; its result comes, once, with the next hook output of the same
//! agent session — after a service restart, and with two hooks of the session running at
//! once — and never again; `status` counts both. Issue 42 (1): a caller an edit broke in a
//! file nobody edited, found by the project-wide Python checker after the edit's hook
//! answered partially, is owed the same way (and `review` holds it meanwhile).

use crate::common;

use std::path::Path;

use common::plugins::{path_list, plugin};
use common::typescript::install_test_deps;
use common::{wait_until, Env};
use serde_json::{json, Value};

const SESSION: &str = "0f5e-late-test";

/// A Python project for ruff and pyright (a `[tool.pyright]` table makes it pyright's).
pub fn python_project(ws: &Path) {
    std::fs::write(ws.join("pyproject.toml"), "[tool.pyright]\n").unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
}

/// The lsp plugin with ruff and pyright, the given hook deadline, every problem listed.
pub fn python_env(timeout_ms: u64) -> Env {
    install_test_deps();
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp")]));
    std::fs::write(
        &env.config,
        format!(
            "[hooks]\ntimeout_ms = {timeout_ms}\nfeedback_scope = \"all\"\n[plugin.lsp]\ndisable = [\"basedpyright\"]\n"
        ),
    )
    .unwrap();
    env
}

/// Start Claude's hook for an edit of `file` in this agent session (not waited for).
fn spawn_edit(env: &Env, ws: &Path, file: &Path) -> std::process::Child {
    spawn_edit_as(env, ws, file, SESSION)
}

/// [`spawn_edit`] in the agent session `session`.
fn spawn_edit_as(env: &Env, ws: &Path, file: &Path, session: &str) -> std::process::Child {
    let payload = json!({
        "session_id": session,
        "cwd": ws,
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": file},
    })
    .to_string();
    let mut cmd = env.command(&["hook", "--agent", "claude", "--verbose"]);
    common::hook::spawn_hook(&mut cmd, &payload)
}

/// What the hook handed the agent (Claude's `additionalContext`), "" for nothing.
fn context(out: std::process::Output) -> String {
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("trying the editor's queue"),
        "fell back: {err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout.trim().is_empty() {
        return String::new();
    }
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn edit(env: &Env, ws: &Path, file: &Path) -> String {
    context(common::hook::wait_output(
        spawn_edit(env, ws, file),
        std::time::Duration::from_secs(30),
    ))
}

/// Wait until the service has checked `key` (its entry settled in `diagnostics.json`).
fn checked(ws: &Path, key: &str) -> openfiles_wire::spec::FileEntry {
    let mut found = None;
    wait_until(&format!("{key} is checked"), || {
        found = common::diagnostics(ws)
            .and_then(|d| d.files.get(key).cloned())
            .filter(|e| e.checked_at != 0);
        found.is_some()
    });
    found.unwrap()
}

fn workspace_status(env: &Env) -> openfiles_wire::control::WorkspaceStatus {
    env.status().workspaces.into_iter().next().unwrap()
}

const EARLIER_APP: &str = "Earlier edit src/app.py: 2 errors (found after its hook had answered):";

#[test]
fn a_result_after_the_deadline_comes_once_with_the_next_hook_of_the_session() {
    let env = python_env(100);
    let ws = env.workspace("py");
    python_project(&ws);
    let app = ws.join("src/app.py");
    std::fs::write(&app, "print(undefined_name)\n").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);

    // The servers are cold: the 100 ms deadline passes first, and the hook says so.
    let first = edit(&env, &ws, &app);
    assert!(
        first.starts_with(
            "OpenFiles is still checking src/app.py (the hook's 0.1 s deadline passed)"
        ),
        "{first}"
    );
    assert_eq!(first.lines().count(), 1, "one line: {first}");
    let entry = checked(&ws, "src/app.py");
    assert_eq!(entry.errors, 2, "{entry:?}");
    let st = workspace_status(&env);
    assert_eq!((st.deadline_notes, st.owed, st.late_deliveries), (1, 1, 0));

    // What is owed survives a restart of the service.
    svc.terminate();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    assert_eq!(workspace_status(&env).owed, 1);

    // Two hooks of the session at once: exactly one of them carries the earlier result.
    let (b, c) = (ws.join("src/b.py"), ws.join("src/c.py"));
    std::fs::write(&b, "B = 1\n").unwrap();
    std::fs::write(&c, "C = 2\n").unwrap();
    let (hb, hc) = (spawn_edit(&env, &ws, &b), spawn_edit(&env, &ws, &c));
    let bound = std::time::Duration::from_secs(30);
    let both = [
        context(common::hook::wait_output(hb, bound)),
        context(common::hook::wait_output(hc, bound)),
    ];
    let carrying: Vec<&String> = both.iter().filter(|t| t.contains(EARLIER_APP)).collect();
    assert_eq!(carrying.len(), 1, "exactly one carries it: {both:#?}");
    let text = carrying[0];
    assert!(
        text.contains("- src/app.py:1:7 error F821 (Ruff): Undefined name `undefined_name`"),
        "{text}"
    );
    assert!(
        text.contains("(Pyright): \"undefined_name\" is not defined"),
        "{text}"
    );
    assert!(
        text.ends_with("Fix these before you report the task as done."),
        "{text}"
    );
    assert_eq!(text.matches("Earlier edit src/app.py").count(), 1, "{text}");

    // The hook after that does not repeat it.
    let d = ws.join("src/d.py");
    std::fs::write(&d, "D = 3\n").unwrap();
    let later = edit(&env, &ws, &d);
    assert!(!later.contains("src/app.py"), "told twice: {later}");

    let st = workspace_status(&env);
    assert!(st.late_deliveries >= 1, "{st:?}");
    assert!(st.deadline_notes >= 1, "{st:?}");
    assert_eq!(
        common::json_call(&env.socket, r#"{"cmd":"status"}"#)["workspaces"][0]["lateDeliveries"],
        json!(st.late_deliveries),
        "typed in status --json"
    );
    svc.terminate();
}

/// A committed project whose type checker is pyright's command line (the project-wide
/// source): `m.py` defines `add`, `b.py` calls it, `d.py` is left alone.
fn python_callers(ws: &Path) {
    std::fs::write(ws.join("pyproject.toml"), "[tool.pyright]\n").unwrap();
    std::fs::write(
        ws.join("m.py"),
        "def add(a: int, b: int) -> int:\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(ws.join("b.py"), "from m import add\n\nthree = add(1, 2)\n").unwrap();
    std::fs::write(ws.join("d.py"), "D = 4\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &["commit", "-q", "-m", "base"],
    ] {
        common::git(ws, args);
    }
}

#[test]
fn a_caller_broken_after_a_partial_answer_comes_once_with_the_next_hook_of_the_session() {
    install_test_deps();
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp"), plugin("pyright")]));
    // Ruff's server is the only per-file source: the hook answers as soon as it has (no
    // grace, no waiting for the project-wide checker), long before pyright's command line.
    std::fs::write(
        &env.config,
        "[hooks]\ntimeout_ms = 240000\npartial_after_ms = 0\nknock_on_wait_ms = 0\n\
         [plugin.lsp]\ndisable = [\"basedpyright\", \"ty\", \"pyright\"]\n",
    )
    .unwrap();
    let ws = env.workspace("py");
    python_callers(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let bound = std::time::Duration::from_secs(240);
    let edit_as = |file: &Path, session: &str| {
        context(common::hook::wait_output(
            spawn_edit_as(&env, &ws, file, session),
            bound,
        ))
    };

    // Another session's edit takes the baseline and starts the servers.
    std::fs::write(ws.join("d.py"), "D = 5\n").unwrap();
    edit_as(&ws.join("d.py"), "warm-up");
    checked(&ws, "d.py");

    let m = ws.join("m.py");
    std::fs::write(
        &m,
        "def add(a: int, b: int, c: int) -> int:\n    return a + b + c + undefined_name\n",
    )
    .unwrap();
    let first = edit_as(&m, SESSION);
    assert!(first.contains("F821 (Ruff)"), "{first}");
    assert!(!first.contains("b.py"), "answered partially: {first}");

    // The warm server may answer early (b.py named) and bring the rest in a follow-up:
    // m.py settles, and its debt is counted, once that is in too.
    wait_until("b.py is written as affected and m.py settled", || {
        common::diagnostics(&ws).is_some_and(|d| {
            d.files
                .get("b.py")
                .is_some_and(|e| !e.affected_by.is_empty())
                && d.files.get("m.py").is_some_and(|e| e.checked_at > 0)
        })
    });
    let st = workspace_status(&env);
    assert_eq!((st.owed, st.deadline_notes), (1, 0), "{st:?}");
    // A session that never hooks again leaves it in the review.
    let review = common::json_call(
        &env.socket,
        &json!({"cmd": "review", "path": ws}).to_string(),
    );
    let b_entry = review["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "b.py")
        .unwrap_or_else(|| panic!("b.py is not in the review: {review}"));
    assert_eq!(b_entry["entry"]["items"][0]["code"], "reportCallIssue");

    // The session's next hook tells it first, once.
    let e = ws.join("e.py");
    std::fs::write(&e, "E = 1\n").unwrap();
    let next = edit_as(&e, SESSION);
    assert!(
        next.starts_with(
            "Broken by an earlier edit of m.py: b.py: 1 error (found after its hook had answered):"
        ),
        "{next}"
    );
    assert_eq!(
        next.matches(
            "b.py:3:9 error reportCallIssue (Pyright): Argument missing for parameter \"c\""
        )
        .count(),
        1,
        "{next}"
    );
    assert!(
        !next.contains("Earlier edit m.py"),
        "what the hook showed is not owed: {next}"
    );
    let st = workspace_status(&env);
    assert_eq!((st.owed, st.late_deliveries), (0, 1), "{st:?}");
    std::fs::write(&e, "E = 2\n").unwrap();
    let after = edit_as(&e, SESSION);
    assert!(!after.contains("Earlier edit"), "told twice: {after}");
    svc.terminate();
}

/// Issue 42 (4): an edit made while the session start's warm-up runs (the TypeScript server
/// still loading the project) gets the edited file's own problems in its hook without
/// waiting for `tsc`'s first run, however long the knock-on wait; the caller it broke, which
/// that run finds after the hook answered, is owed: counted, then told once in the
/// session's next hook. The edited file's own error is new although the warm-up had opened
/// the file with its new text while the baseline's check sent the committed one (the
/// lsp plugin's check of a given text takes only an answer for exactly that text).
#[test]
fn an_edit_during_the_warm_up_owes_the_caller_a_first_project_wide_run_finds() {
    install_test_deps();
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp"), plugin("tsc")]));
    std::fs::write(
        &env.config,
        "[hooks]\ntimeout_ms = 240000\npartial_after_ms = 0\nknock_on_wait_ms = 240000\n",
    )
    .unwrap();
    let ws = env.workspace("ts");
    super::baseline::ts_callers(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let bound = std::time::Duration::from_secs(240);
    let edit_as = |file: &Path| {
        context(common::hook::wait_output(
            spawn_edit_as(&env, &ws, file, SESSION),
            bound,
        ))
    };

    let start = json!({"session_id": SESSION, "cwd": ws, "hook_event_name": "SessionStart",
                       "source": "startup"});
    let mut cmd = env.command(&["hook", "--agent", "claude", "--event", "SessionStart"]);
    let out = common::hook::run_hook(&mut cmd, &start.to_string());
    assert!(out.status.success(), "{out:?}");

    let a = ws.join("src/a.ts");
    std::fs::write(
        &a,
        "export function add(a: number, b: number, c: number): number {\n  \
         const own: string = a;\n  return a + b + c;\n}\n",
    )
    .unwrap();
    let edited_at = openfiles_wire::spec::now_ms();
    let first = edit_as(&a);
    let warm = workspace_status(&env).warm.expect("a warm-up ran");
    assert!(
        warm.done_at == 0 || warm.done_at > edited_at,
        "the edit came during the warm-up: {warm:?}"
    );
    assert!(first.contains("src/a.ts:2:9 error 2322"), "{first}");
    assert!(
        !first.contains("b.ts"),
        "tsc's first run not waited for: {first}"
    );

    wait_until("b.ts is written as affected and a.ts settled", || {
        common::diagnostics(&ws).is_some_and(|d| {
            d.files
                .get("src/b.ts")
                .is_some_and(|e| !e.affected_by.is_empty())
                && d.files.get("src/a.ts").is_some_and(|e| e.checked_at > 0)
        })
    });
    assert_eq!(workspace_status(&env).owed, 1);

    let e = ws.join("src/e.ts");
    std::fs::write(&e, "export const E = 1;\n").unwrap();
    // The next hook waits for tsc (it ran now): the caller is named once, with what this
    // edit's run found, and no longer owed.
    let next = edit_as(&e);
    assert_eq!(
        next.matches("src/b.ts:3:22 error 2554").count(),
        1,
        "told once: {next}"
    );
    assert!(
        !next.contains("legacy"),
        "an old error is never blamed: {next}"
    );
    assert_eq!(workspace_status(&env).owed, 0);
    svc.terminate();
}
