//! `openfiles hook` end to end through a real `openfiles serve` with the real cargo-check
//! plugin: a crate with a type error gives the agent `E0308` with file:line:col. The
//! service is started by hand, and by socket activation (only `systemd-socket-activate`
//! holds the socket when the hook connects, so the hook's connection starts the service).
//! With `--verbose` the hook says on stderr when it falls back to the editor's queue; these
//! tests require that it did not.

use crate::common;

use std::path::Path;

use common::{signal, Env};
use serde_json::{json, Value};

fn hook(env: &Env, ws: &Path, main: &Path) -> std::process::Output {
    let payload =
        json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": main}}).to_string();
    let mut cmd = env.command(&["hook", "--agent", "claude", "--verbose"]);
    // Autostart allowed: where a service answers (or a socket-activator holds the socket)
    // the hook must not start another one.
    cmd.env_remove("OPENFILES_AUTOSTART");
    common::hook::run_hook(&mut cmd, &payload)
}

/// A service environment with the real cargo-check plugin and a hook deadline long enough
/// for a cold `cargo check` on a loaded machine (the wait still ends as soon as it is done).
fn cargo_env() -> Env {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("cargo_check").into_os_string());
    std::fs::write(&env.config, "[hooks]\ntimeout_ms = 240000\n").unwrap();
    env
}

/// The hook used the service (no fallback) and printed the real E0308 in Claude's format.
fn assert_feedback(out: &std::process::Output) {
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("trying the editor's queue"),
        "hook fell back: {err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().count(),
        1,
        "one JSON line: {stdout:?} (stderr: {err})"
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let text = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        text.starts_with("OpenFiles found 1 error in files you edited:\n"),
        "{text}"
    );
    assert!(
        text.contains("\n- src/main.rs:2:18 error E0308 (rustc): mismatched types"),
        "{text}"
    );
    assert!(text.ends_with("\nFix these before you report the task as done."));
}

#[test]
fn hook_reports_through_a_running_service() {
    let env = cargo_env();
    let ws = env.workspace("ws");
    let main = common::rust_crate_with_type_error(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    assert_feedback(&hook(&env, &ws, &main));
    assert_eq!(
        env.status().activation.as_str(),
        "bound",
        "the service started by hand answered"
    );
    // The service wrote the same result for agents that read the file.
    common::hook::wait_for_file(&ws.join(".openfiles/diagnostics.json"), |t| {
        t.contains("E0308")
    });
    svc.terminate();
}

#[test]
fn first_hook_call_starts_a_socket_activated_service() {
    let env = cargo_env();
    let ws = env.workspace("ws");
    let main = common::rust_crate_with_type_error(&ws);
    let mut activator = env.socket_activated(&ws);
    // Nothing runs the service yet: no heartbeat in the workspace.
    assert!(!ws.join(".openfiles/vscode").exists());

    assert_feedback(&hook(&env, &ws, &main));
    // The socket-activated service answered, not an autostarted one.
    assert_eq!(env.status().activation.as_str(), "systemd");

    signal(activator.id() as i32, libc::SIGTERM);
    let status = activator.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// An edit an ignore rule leaves unchecked is not silent (issue 43.6): in a real git
/// repository the hook names git's rule and how to change it, once per file; a tracked file
/// in a folder named `build/` and a new `src/build/` module are checked.
#[test]
fn the_hook_says_once_why_an_edit_was_not_checked() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    common::git(&ws, &["init", "-q"]);
    std::fs::write(ws.join(".gitignore"), "gen/\n").unwrap();
    for f in ["internal/build/b.txt", "gen/g.txt", "src/build/new.txt"] {
        std::fs::create_dir_all(ws.join(f).parent().unwrap()).unwrap();
        std::fs::write(ws.join(f), "error: broken\n").unwrap();
    }
    common::git(&ws, &["add", ".gitignore", "internal"]);
    common::git(&ws, &["commit", "-q", "-m", "init"]);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let context = |file: &str| -> String {
        let out = hook(&env, &ws, &ws.join(file));
        assert!(out.status.success());
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.trim().is_empty() {
            return String::new();
        }
        let v: Value = serde_json::from_str(stdout.trim()).unwrap();
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let first = context("gen/g.txt");
    assert!(
        first.contains("gen/g.txt is ignored by git (`gen/` in .gitignore)")
            && first.contains("[diagnostics]"),
        "{first}"
    );
    let again = context("gen/g.txt");
    assert!(!again.contains("ignored"), "told twice: {again}");
    for checked in ["internal/build/b.txt", "src/build/new.txt"] {
        let text = context(checked);
        assert!(
            text.contains(&format!("{checked}:1:1 error")),
            "{checked}: {text}"
        );
    }
}
