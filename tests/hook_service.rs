//! `openfiles hook` through a real `openfiles serve`: started by hand, and started by
//! socket activation (only `systemd-socket-activate` holds the socket when the hook
//! connects). With `--verbose` the hook says on stderr when it falls back to the editor's
//! queue; these tests require that it did not, and that the service checked the file.

mod common;
mod hook_support;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{bin, signal, Env};
use serde_json::{json, Value};

fn crate_with_type_error(ws: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"broken\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    let main = ws.join("src/main.rs");
    std::fs::write(
        &main,
        "fn main() {\n    let x: i32 = \"text\";\n    println!(\"{x}\");\n}\n",
    )
    .unwrap();
    main
}

fn entry_for(ws: &Path, rel: &str) -> Option<Value> {
    let text = std::fs::read_to_string(ws.join(".openfiles/diagnostics.json")).ok()?;
    let doc: Value = serde_json::from_str(&text).ok()?;
    doc["files"].get(rel).cloned()
}

fn hook(env: &Env, ws: &Path, main: &Path) -> std::process::Output {
    let payload =
        json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": main}}).to_string();
    let mut cmd = env.command(&["hook", "--agent", "claude", "--verbose"]);
    hook_support::run_hook(&mut cmd, &payload)
}

/// The hook used the service (no fallback) and the service checked the file after the edit.
fn assert_served(out: &std::process::Output, ws: &Path, before: u64) {
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("trying the editor's queue"),
        "hook fell back: {err}"
    );
    // The service answers waiters from its state and rewrites diagnostics.json right after.
    hook_support::wait_for_file(&ws.join(".openfiles/diagnostics.json"), |_| {
        entry_for(ws, "src/main.rs")
            .and_then(|e| e["checkedAt"].as_u64())
            .is_some_and(|t| t >= before)
    });
    let entry = entry_for(ws, "src/main.rs").expect("the service lists the edited file");
    // Whatever the service found is what the hook printed: feedback lists errors and
    // warnings only, so stdout is empty exactly when the entry has none.
    let listed = entry["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["severity"] == "error" || i["severity"] == "warning");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(listed, !stdout.is_empty(), "entry {entry}, stdout {stdout}");
    if listed {
        let v: Value = serde_json::from_str(stdout.trim()).unwrap();
        let text = v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap();
        assert!(text.contains("- src/main.rs:"), "{text}");
    }
}

#[test]
fn hook_reports_through_a_running_service() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let main = crate_with_type_error(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let before = openfiles::spec::now_ms();
    let out = hook(&env, &ws, &main);
    assert_served(&out, &ws, before);
    svc.terminate();
}

#[test]
fn first_hook_call_starts_a_socket_activated_service() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let main = crate_with_type_error(&ws);
    std::fs::create_dir_all(env.socket.parent().unwrap()).unwrap();
    let mut activator = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&env.socket)
        .arg("--fdname=control")
        .args(["-E", "OPENFILES_STATE_DIR", "-E", "OPENFILES_CONFIG"])
        .arg(bin())
        .args(["serve", "-w"])
        .arg(&ws)
        .env("OPENFILES_STATE_DIR", &env.state)
        .env("OPENFILES_CONFIG", &env.config)
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("systemd-socket-activate (install the systemd package)");
    let mut err = std::io::BufReader::new(activator.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("Listening"), "{line}");
    // Nothing runs the service yet: no heartbeat in the workspace.
    assert!(!ws.join(".openfiles/vscode").exists());

    let before = openfiles::spec::now_ms();
    let out = hook(&env, &ws, &main);
    assert_served(&out, &ws, before);

    signal(activator.id() as i32, libc::SIGTERM);
    let status = activator.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
