//! Helpers for the hook tests: run the built `openfiles hook` with a payload, in an
//! environment that points at a control socket nobody serves (so the fallback runs) unless
//! the test says otherwise, and make `.openfiles/` workspaces.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_openfiles");

/// A command for `openfiles <args>` with a private runtime dir and no service; the built
/// binary is first on `PATH`, as after an install (so `hooks install` writes `openfiles`).
pub fn openfiles(tmp: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("PATH", path_with_bin())
        .env("XDG_RUNTIME_DIR", tmp.join("run"))
        .env("OPENFILES_SOCKET", tmp.join("run/nobody.sock"))
        .env("OPENFILES_AUTOSTART", "0")
        .env("HOME", tmp.join("home"))
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("GEMINI_PROJECT_DIR")
        .current_dir(tmp);
    cmd
}

/// Start `openfiles hook <args>` with `payload` on stdin (stdin then closed).
pub fn spawn_hook(cmd: &mut Command, payload: &str) -> Child {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn openfiles hook");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(payload.as_bytes()).expect("write payload");
    drop(stdin);
    child
}

/// Wait for a child with a failure bound.
pub fn wait_output(mut child: Child, bound: Duration) -> Output {
    let start = Instant::now();
    loop {
        if let Some(_status) = child.try_wait().expect("try_wait") {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "hook did not finish within {bound:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Run the hook to completion (30 s failure bound).
pub fn run_hook(cmd: &mut Command, payload: &str) -> Output {
    let child = spawn_hook(cmd, payload);
    wait_output(child, Duration::from_secs(30))
}

/// `root/.openfiles/vscode/test.json`, fresh now.
pub fn heartbeat(root: &Path) -> PathBuf {
    let dir = root.join(".openfiles/vscode");
    std::fs::create_dir_all(&dir).unwrap();
    let hb = dir.join("test.json");
    std::fs::write(
        &hb,
        format!(
            r#"{{"version":1,"workspaceRoot":{:?},"sessionId":"t","appName":"test","updatedAt":1,"files":[]}}"#,
            root.display().to_string()
        ),
    )
    .unwrap();
    hb
}

/// Poll `path` until `pred` holds on its contents (failure bound 20 s).
pub fn wait_for_file(path: &Path, pred: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if pred(&text) {
                return text;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never reached the expected state",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A Claude Code `PostToolUse` payload for a `Write` of `file`.
pub fn write_payload(file: &Path) -> String {
    serde_json::json!({
        "cwd": file.parent().unwrap(),
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": file, "content": "x"},
    })
    .to_string()
}

/// The `additionalContext` of the hook's JSON output ("" when it has none); panics with the
/// hook's output when it printed no JSON.
pub fn additional_context(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the hook printed no JSON ({e}): {stdout:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `PATH` with the built binary's folder first.
pub fn path_with_bin() -> std::ffi::OsString {
    let dir = Path::new(BIN)
        .parent()
        .map(Path::to_owned)
        .unwrap_or_default();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&rest))).unwrap_or(rest)
}
