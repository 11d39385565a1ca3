//! Session behaviour through a running service: persistence across restarts, deletions,
//! `session clear`, edits noticed by the watcher (and git operations that are not edits),
//! standing back for a live editor, burst coalescing, and `openfiles check`.

use crate::common;

use std::path::Path;
use std::time::SystemTime;

use common::*;
use openfiles_wire::control::{Wait, WaitReply};

fn instant_env() -> Env {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    env
}

#[test]
fn session_survives_restart_and_deleted_files_leave_it() {
    let env = instant_env();
    let ws = env.workspace("ws");
    let (a, b) = (ws.join("a.txt"), ws.join("b.txt"));
    std::fs::write(&a, "a").unwrap();
    std::fs::write(&b, "b").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let r = env.edited(&[&a, &b]);
    assert!(env.wait(&[&a, &b], r.ts, 60_000).complete);
    svc.terminate();

    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    assert_eq!(env.status().workspaces[0].session_files, 2);
    let doc = diagnostics(&ws).unwrap();
    assert!(doc.files["a.txt"].checked_at > 0);
    std::fs::remove_file(&b).unwrap();
    let r = env.edited(&[&b]);
    assert_eq!(r.rejected[0].reason, "deleted");
    wait_until("b.txt leaves diagnostics.json", || {
        diagnostics(&ws)
            .is_some_and(|d| !d.files.contains_key("b.txt") && d.files.contains_key("a.txt"))
    });

    let out = env
        .command(&["session", "clear", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("cleared 1"),
        "{out:?}"
    );
    wait_until("diagnostics.json is empty", || {
        diagnostics(&ws).is_some_and(|d| d.files.is_empty())
    });
    svc.terminate();
}

#[test]
fn queued_but_unchecked_files_have_checked_at_zero() {
    let mut env = instant_env();
    std::fs::write(&env.config, "[plugin.instant]\nextensions = [\"slow\"]\n").unwrap();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    let slow = ws.join("x.slow");
    std::fs::write(&slow, "x").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    env.edited(&[&slow]);
    wait_until("the pending entry is written", || {
        diagnostics(&ws).is_some_and(|d| d.files.contains_key("x.slow"))
    });
    let doc = diagnostics(&ws).unwrap();
    assert_eq!(doc.files["x.slow"].checked_at, 0);
    assert_eq!(doc.hook.timeout_ms, 4000);
}

#[test]
fn watcher_notices_edits_without_a_hook_but_not_git_checkouts() {
    let env = instant_env();
    let ws = env.workspace("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("node_modules/dep")).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(ws.join(".gitignore"), "generated/\n").unwrap();
    std::fs::create_dir_all(ws.join("generated")).unwrap();
    // An old HEAD: not a checkout in progress.
    let old = SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(ws.join(".git/HEAD"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let watches = env.status().workspaces[0].watches;
    assert!(watches >= 2, "root and src watched: {watches}");

    std::fs::write(ws.join("node_modules/dep/x.txt"), "ignored").unwrap();
    std::fs::write(ws.join("generated/g.txt"), "gitignored").unwrap();
    std::fs::write(ws.join("src/agent.txt"), "written by an agent with no hook").unwrap();
    wait_until("the watcher reports src/agent.txt", || {
        diagnostics(&ws).is_some_and(|d| {
            d.files
                .get("src/agent.txt")
                .is_some_and(|f| f.checked_at > 0)
        })
    });
    let doc = diagnostics(&ws).unwrap();
    assert_eq!(
        doc.files.len(),
        1,
        "{:?}",
        doc.files.keys().collect::<Vec<_>>()
    );

    // A checkout: HEAD moves, files change — not edits.
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/other\n").unwrap();
    std::fs::write(ws.join("src/checkout.txt"), "from git").unwrap();
    wait_until("the watcher drops the batch", || {
        env.status().workspaces[0].git_batches_ignored >= 1
    });
    let doc = diagnostics(&ws).unwrap();
    assert!(
        !doc.files.contains_key("src/checkout.txt"),
        "a git checkout is not an edit"
    );
}

/// Files written into folders made in the same moment (`mkdir -p a/b/c && printf … >
/// a/b/c/x.py`, and what Codex does) are edits too: the folders' watches come after the
/// writes, so only a look inside each folder the watcher starts watching finds them. Every
/// round is one tight burst of fresh folders and files at several depths; ignored and
/// `.gitignore`d folders inside them stay unwatched.
#[test]
fn watcher_notices_files_inside_folders_made_in_the_same_burst() {
    const ROUNDS: usize = 20;
    let env = instant_env();
    let ws = env.workspace("ws");
    std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let before = env.status().workspaces[0].watches;

    let mut expected: Vec<String> = Vec::new();
    let mut folders = 0;
    for round in 0..ROUNDS {
        let r = format!("r{round}");
        let mut mine: Vec<String> = Vec::new();
        let mut write = |rel: String| {
            std::fs::write(ws.join(&rel), "print(1)\n").unwrap();
            mine.push(rel);
        };
        // `mkdir -p a/b/c` then `a/b/c/x.py`.
        std::fs::create_dir_all(ws.join(format!("{r}/a/b/c"))).unwrap();
        write(format!("{r}/a/b/c/x.py"));
        // A deeper tree, files at every depth, one more branch made after the first files.
        std::fs::create_dir_all(ws.join(format!("{r}/d/e/f/g/h"))).unwrap();
        write(format!("{r}/d/e/f/g/h/one.py"));
        write(format!("{r}/d/two.py"));
        write(format!("{r}/d/e/f/three.py"));
        std::fs::create_dir_all(ws.join(format!("{r}/d/e/i/j"))).unwrap();
        write(format!("{r}/d/e/i/j/four.py"));
        write(format!("{r}/d/e/i/five.py"));
        // Folders the watcher never watches.
        std::fs::create_dir_all(ws.join(format!("{r}/d/node_modules/pkg"))).unwrap();
        std::fs::write(ws.join(format!("{r}/d/node_modules/pkg/index.js")), "x").unwrap();
        std::fs::create_dir_all(ws.join(format!("{r}/d/e/build/out"))).unwrap();
        std::fs::write(ws.join(format!("{r}/d/e/build/out/gen.py")), "x").unwrap();
        // r, a, b, c, d, e, f, g, h, i, j
        folders += 11;

        // The next burst starts once this one is in, so each round races the watcher afresh.
        let deadline = std::time::Instant::now() + PATIENCE;
        let missing = loop {
            let files = diagnostics(&ws).map(|d| d.files).unwrap_or_default();
            let missing: Vec<&String> = mine
                .iter()
                .filter(|f| !files.contains_key(f.as_str()))
                .collect();
            if missing.is_empty() || std::time::Instant::now() > deadline {
                break missing;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(
            missing.is_empty(),
            "round {round}: {} of {} files never reached the session: {missing:?}",
            missing.len(),
            mine.len()
        );
        expected.extend(mine);
    }
    wait_until("every new folder is watched", || {
        env.status().workspaces[0].watches >= before + folders
    });
    assert_eq!(
        env.status().workspaces[0].watches,
        before + folders,
        "node_modules/ and build/ are not watched"
    );
    let doc = diagnostics(&ws).unwrap();
    let extra: Vec<&String> = doc.files.keys().filter(|k| !expected.contains(k)).collect();
    assert!(extra.is_empty(), "{extra:?}");
}

#[test]
fn stands_back_while_the_editor_extension_is_live() {
    let env = instant_env();
    std::fs::write(&env.config, "[service]\nheartbeat_seconds = 2\n").unwrap();
    let ws = env.workspace("ws");
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let editor_beat = ws.join(".openfiles/vscode/editor-window.json");
    std::fs::write(
        &editor_beat,
        r#"{"version":1,"workspaceRoot":"/x","sessionId":"s","appName":"Visual Studio Code","updatedAt":1,"files":[]}"#,
    )
    .unwrap();
    wait_until("status says standing back", || {
        env.status().workspaces[0].standing_back
    });
    let a = ws.join("a.txt");
    std::fs::write(&a, "a").unwrap();
    let queue = ws.join(".openfiles/queue.jsonl");
    std::fs::write(
        &queue,
        format!("{{\"v\":1,\"paths\":[{:?}]}}\n", a.to_str().unwrap()),
    )
    .unwrap();
    let before = diagnostics(&ws);
    // A full heartbeat period passes (our heartbeat is rewritten after the line was queued):
    // the queue is the editor's, untouched.
    let st0 = env.status().workspaces[0].queue_lines;
    let ours = std::fs::read_dir(ws.join(".openfiles/vscode"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("openfiles-"))
        .unwrap()
        .path();
    let queued_at = std::fs::metadata(&queue).unwrap().modified().unwrap();
    wait_until(
        "our heartbeat is rewritten after the line was queued",
        || {
            std::fs::metadata(&ours)
                .and_then(|m| m.modified())
                .is_ok_and(|m| m > queued_at)
        },
    );
    assert!(queue.exists());
    assert_eq!(env.status().workspaces[0].queue_lines, st0);
    assert_eq!(diagnostics(&ws), before);

    std::fs::remove_file(&editor_beat).unwrap();
    wait_until("the service takes over again", || {
        !env.status().workspaces[0].standing_back
    });
    wait_until("the queue line is taken", || {
        env.status().workspaces[0].queue_lines == st0 + 1
    });
}

#[test]
fn a_burst_of_500_files_is_checked_in_batches() {
    let env = instant_env();
    let ws = env.workspace("ws");
    let files: Vec<_> = (0..500).map(|i| ws.join(format!("f{i}.txt"))).collect();
    for f in &files {
        std::fs::write(f, "x").unwrap();
    }
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let r = env.edited(&refs);
    assert_eq!(r.workspaces[0].paths.len(), 500);
    assert!(env.wait(&refs, r.ts, 60_000).complete);
    let st = env.status();
    let checks = st.plugins[0].checks;
    assert!(checks <= 5, "500 files took {checks} plugin runs");
}

#[test]
fn check_command_through_the_service_and_in_process() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("cargo_check").into_os_string());
    let ws = env.workspace("crate");
    let main = rust_crate_with_type_error(&ws);

    // Untrusted, cargo check (which runs build scripts) is not run; it says so and how.
    let out = env
        .command(&["check", main.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not trusted") && !text.contains("E0308"),
        "{text}"
    );
    // Trusted without a service: recorded for when it starts.
    let out = env
        .command(&["trust", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // No service: in-process.
    let out = env
        .command(&["check", main.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("E0308") && text.contains("^"), "{text}");
    assert!(
        text.contains("let x: u32 = \"text\";"),
        "source line shown: {text}"
    );

    // With the service: JSON.
    let _svc = env.serve(&[]);
    let out = env
        .command(&["check", "--json", main.to_str().unwrap()])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entry = v["files"].as_object().unwrap().values().next().unwrap();
    assert_eq!(entry["errors"], 1);
    assert_eq!(entry["items"][0]["code"], "E0308");
    assert_eq!(
        env.status().workspaces.len(),
        1,
        "the check registered the crate's workspace"
    );

    std::fs::write(
        &main,
        "fn main() {\n    let x: u32 = 1;\n    println!(\"{x}\");\n}\n",
    )
    .unwrap();
    let out = env
        .command(&["check", "--fail-on", "warning", main.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn wait_without_timeout_ends_at_the_edit_time_plus_the_workspace_timeout() {
    let env = instant_env();
    std::fs::write(
        &env.config,
        "[plugin.instant]\nextensions = [\"slow\"]\n[hooks]\ntimeout_ms = 1000\n",
    )
    .unwrap();
    let ws = env.workspace("ws");
    let slow = ws.join("x.slow");
    std::fs::write(&slow, "x").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    env.edited(&[&slow]);
    // An edit made long ago: its deadline (ts + 1 s) has passed, so the answer is immediate.
    // (Counting 4 s from the request instead would exceed the client's 3 s read limit.)
    let long_ago = openfiles_wire::spec::now_ms() - 60_000;
    let mut c = openfiles::control::client::Client::connect(
        &env.socket,
        Some(std::time::Duration::from_secs(3)),
    )
    .unwrap();
    let w: WaitReply = c
        .call(&Wait {
            paths: vec![slow.clone()],
            since: long_ago,
            timeout_ms: None,
            partial: false,
            session: None,
            fixes: false,
        })
        .unwrap();
    assert!(!w.complete);
    assert_eq!(w.workspaces[0].hook.timeout_ms, 1000);
}
