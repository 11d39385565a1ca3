//! The diagnostics pipeline through a running service: real `cargo check` through the real
//! plugin host, the queue under concurrent writers and `kill -9`, torn-read freedom of
//! `diagnostics.json`, malformed lines, and the path policy.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use openfiles_wire::control::{Edited, Request};
use openfiles_wire::spec::{DiagnosticsFile, Severity};

#[test]
fn real_cargo_check_reports_e0308_and_clears_after_the_fix() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("cargo_check").into_os_string());
    let ws = env.workspace("crate");
    let main = rust_crate_with_type_error(&ws);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);

    let r = env.edited(&[&main]);
    assert_eq!(r.workspaces[0].root, ws);
    let w = env.wait(&[&main], r.ts, 240_000);
    assert!(w.complete, "{w:?}");
    let entry = &w.workspaces[0].files["src/main.rs"];
    let e = entry
        .items
        .iter()
        .find(|i| i.code.as_deref() == Some("E0308"))
        .unwrap_or_else(|| panic!("no E0308 in {entry:?}"));
    assert_eq!((e.line, e.column, e.severity), (2, 18, Severity::Error));
    assert_eq!(e.source, "rustc");
    assert!(entry.checked_at >= r.ts);
    // diagnostics.json says the same (it is written right after the waiters are answered).
    wait_until("diagnostics.json has the result", || {
        diagnostics(&ws)
            .unwrap()
            .files
            .get("src/main.rs")
            .is_some_and(|f| f.errors >= 1)
    });
    let doc = diagnostics(&ws).unwrap();
    assert_eq!(doc.files["src/main.rs"].path, main);

    std::fs::write(
        &main,
        "fn main() {\n    let x: u32 = 7;\n    println!(\"{x}\");\n}\n",
    )
    .unwrap();
    let r = env.edited(&[&main]);
    let w = env.wait(&[&main], r.ts, 240_000);
    assert!(w.complete);
    let entry = &w.workspaces[0].files["src/main.rs"];
    assert_eq!((entry.errors, entry.warnings), (0, 0), "{entry:?}");
}

/// Append `count` queue lines from a separate process, one `write(2)` per line on a fresh
/// `O_APPEND` fd, as the editor hook does.
fn writer(queue: &Path, tag: &str, count: usize, target: &Path) -> std::process::Child {
    let script = r#"
import os, json, sys
q, tag, n, target = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
for i in range(n):
    line = json.dumps({"v": 1, "ts": i, "agent": tag, "tool": str(i), "paths": [target]}) + "\n"
    fd = os.open(q, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, line.encode())
    os.close(fd)
"#;
    Command::new("python3")
        .args(["-c", script])
        .arg(queue)
        .arg(tag)
        .arg(count.to_string())
        .arg(target)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn concurrent_writers_every_line_exactly_once() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let target = ws.join("notes.txt");
    std::fs::write(&target, "hello").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let queue = ws.join(".openfiles/queue.jsonl");
    let writers: Vec<_> = (0..8)
        .map(|i| writer(&queue, &format!("w{i}"), 10_000, &target))
        .collect();
    for mut w in writers {
        assert!(w.wait().unwrap().success());
    }
    wait_until("all 80 000 lines are taken", || {
        let st = env.status();
        st.workspaces[0].queue_lines + st.workspaces[0].malformed_queue_lines >= 80_000
    });
    // Give a double-count the chance to show: the drain must go idle at exactly 80 000.
    wait_until("the queue file is drained", || {
        !queue.exists()
            || std::fs::metadata(&queue)
                .map(|m| m.len() == 0)
                .unwrap_or(true)
    });
    let st = env.status();
    assert_eq!(st.workspaces[0].queue_lines, 80_000);
    assert_eq!(st.workspaces[0].malformed_queue_lines, 0);
}

#[test]
fn kill_9_during_intake_loses_and_repeats_nothing() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let target = ws.join("a.txt");
    std::fs::write(&target, "x").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let queue = ws.join(".openfiles/queue.jsonl");
    let mut w = writer(&queue, "w", 20_000, &target);
    wait_until("intake is under way", || {
        env.status().workspaces[0].queue_lines > 0
    });
    svc.kill9();
    assert!(w.wait().unwrap().success());
    // One more edit appended while nothing runs.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&queue)
        .unwrap();
    writeln!(f, "{{\"v\":1,\"paths\":[{:?}]}}", target.to_str().unwrap()).unwrap();
    drop(f);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    wait_until("every line is taken after the restart", || {
        env.status().workspaces[0].queue_lines >= 20_001
    });
    wait_until("the queue is drained", || !queue.exists());
    assert_eq!(env.status().workspaces[0].queue_lines, 20_001);
}

#[test]
fn diagnostics_json_is_never_torn() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let files: Vec<PathBuf> = (0..50).map(|i| ws.join(format!("f{i}.txt"))).collect();
    for f in &files {
        std::fs::write(f, "x").unwrap();
    }
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    env.edited(&[&files[0]]);
    wait_until("diagnostics.json exists", || {
        ws.join(".openfiles/diagnostics.json").exists()
    });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let editor = {
        let stop = stop.clone();
        let socket = env.socket.clone();
        let files = files.clone();
        std::thread::spawn(move || {
            let mut c =
                openfiles::control::client::Client::connect(&socket, Some(PATIENCE)).unwrap();
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let f = files[n % files.len()].clone();
                c.send(&Request::Edited(Edited {
                    paths: vec![f],
                    ..Default::default()
                }))
                .unwrap();
                n += 1;
            }
            n
        })
    };
    let path = ws.join(".openfiles/diagnostics.json");
    for i in 0..10_000 {
        let bytes = std::fs::read(&path).unwrap();
        if let Err(e) = serde_json::from_slice::<DiagnosticsFile>(&bytes) {
            panic!(
                "read {i}: torn or invalid diagnostics.json ({e}): {} bytes",
                bytes.len()
            );
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let edits = editor.join().unwrap();
    assert!(
        edits > 10,
        "the file was being rewritten while we read ({edits} edits)"
    );
}

#[test]
fn malformed_lines_are_counted_and_skipped() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let good = ws.join("good.txt");
    std::fs::write(&good, "x").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let queue = ws.join(".openfiles/queue.jsonl");
    let text = format!(
        "not json\n{{\"v\":1}}\n{{\"v\":9,\"paths\":[]}}\n{{\"v\":1,\"paths\":\"x\"}}\n{{\"v\":1,\"paths\":[{:?}]}}\n",
        good.to_str().unwrap()
    );
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&queue)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    wait_until("lines are taken", || {
        let st = env.status();
        st.workspaces[0].queue_lines == 1 && st.workspaces[0].malformed_queue_lines == 4
    });
    wait_until("the good file is in diagnostics.json", || {
        ws.join(".openfiles/diagnostics.json").exists()
            && diagnostics(&ws).unwrap().files.contains_key("good.txt")
    });
}

#[test]
fn outside_paths_symlink_escapes_and_sensitive_files() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    let outside = env.workspace("elsewhere").join("secret.txt");
    std::fs::write(&outside, "s").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("link.txt")).unwrap();
    std::fs::write(ws.join(".env"), "TOKEN=x").unwrap();
    std::fs::write(ws.join("ok.txt"), "fine").unwrap();
    std::fs::create_dir_all(ws.join("node_modules/x")).unwrap();
    std::fs::write(ws.join("node_modules/x/i.txt"), "dep").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);

    let r = env.edited(&[
        &ws.join("link.txt"),
        &ws.join("../elsewhere/secret.txt"),
        Path::new("/etc/passwd"),
        &ws.join(".env"),
        &ws.join("ok.txt"),
        &ws.join("node_modules/x/i.txt"),
    ]);
    let reasons: Vec<String> = r
        .rejected
        .iter()
        .map(|x| format!("{}: {}", x.path.display(), x.reason))
        .collect();
    assert!(
        reasons
            .iter()
            .any(|x| x.contains("link.txt") && x.contains("symlink")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|x| x.contains("node_modules") && x.contains("ignored")),
        "{reasons:?}"
    );
    // /etc/passwd and ../elsewhere belong to no workspace, or lie outside this one.
    assert!(
        reasons.iter().any(|x| x.contains("/etc/passwd")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|x| x.contains("secret.txt")),
        "{reasons:?}"
    );
    let accepted: Vec<&PathBuf> = r.workspaces.iter().flat_map(|w| &w.paths).collect();
    assert_eq!(accepted.len(), 2, "{accepted:?}");

    let w = env.wait(&[&ws.join(".env"), &ws.join("ok.txt")], r.ts, 60_000);
    assert!(w.complete);
    let files = &w.workspaces[0].files;
    let env_entry = &files[".env"];
    assert_eq!(env_entry.items.len(), 1);
    assert_eq!(env_entry.items[0].severity, Severity::Info);
    assert!(env_entry.items[0].message.contains("secrets"));
    // The instant plugin saw ok.txt (its item says so) and never .env.
    assert_eq!(files["ok.txt"].items[0].source, "instant");
    assert!(!files.contains_key("link.txt"));
}

#[test]
fn wait_answers_at_the_deadline_when_a_check_hangs() {
    let mut env = Env::new();
    std::fs::write(
        &env.config,
        "[plugin.instant]\nextensions = [\"txt\", \"slow\"]\n",
    )
    .unwrap();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    let slow = ws.join("x.slow");
    std::fs::write(&slow, "x").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let r = env.edited(&[&slow]);
    let w = env.wait(&[&slow], r.ts, 300);
    assert!(!w.complete);
    assert_eq!(w.workspaces[0].files["x.slow"].checked_at, 0);
}

#[test]
fn real_language_server_through_the_service_ruff() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("lsp").into_os_string());
    let ws = env.workspace("py");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let file = ws.join("m.py");
    std::fs::write(&file, "import os\n\n\ndef f():\n    return 1\n").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let r = env.edited(&[&file]);
    let w = env.wait(&[&file], r.ts, 120_000);
    assert!(w.complete, "{w:?}");
    let entry = &w.workspaces[0].files["m.py"];
    let f401 = entry
        .items
        .iter()
        .find(|i| i.code.as_deref() == Some("F401"))
        .unwrap_or_else(|| panic!("no F401 (unused import) in {entry:?}"));
    assert_eq!((f401.line, f401.column), (1, 8));
    // Fixed: fresh results, not the stale F401.
    std::fs::write(&file, "def f():\n    return 1\n").unwrap();
    let r = env.edited(&[&file]);
    let w = env.wait(&[&file], r.ts, 120_000);
    let entry = &w.workspaces[0].files["m.py"];
    assert!(
        entry
            .items
            .iter()
            .all(|i| i.code.as_deref() != Some("F401")),
        "{entry:?}"
    );
}
