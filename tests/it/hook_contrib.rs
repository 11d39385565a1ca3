//! The hand-written-config snippets in contrib/hooks/ are exactly what
//! `openfiles hooks install` writes into an empty workspace, so they never drift apart; and
//! the OpenCode plugin, run by a JavaScript runtime, really reports `file.edited`.

use crate::common;

use std::fs;

use common::hook::*;

#[test]
fn contrib_snippets_match_the_installer() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(&ws).unwrap();
    let contrib = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/hooks");
    let pairs = [
        (
            "claude",
            ".claude/settings.local.json",
            "claude.settings.json",
        ),
        ("codex", ".codex/hooks.json", "codex.hooks.json"),
        (
            "copilot",
            ".github/hooks/openfiles.json",
            "copilot.openfiles.json",
        ),
        ("gemini", ".gemini/settings.json", "gemini.settings.json"),
        ("cursor", ".cursor/hooks.json", "cursor.hooks.json"),
        ("windsurf", ".windsurf/hooks.json", "windsurf.hooks.json"),
        (
            "opencode",
            ".opencode/plugins/openfiles.js",
            "opencode.openfiles.js",
        ),
    ];
    for (agent, installed, snippet) in pairs {
        let out = openfiles(
            tmp.path(),
            &[
                "hooks",
                "install",
                "--agent",
                agent,
                "--workspace",
                ws.to_str().unwrap(),
            ],
        )
        .output()
        .unwrap();
        assert!(
            out.status.success(),
            "{agent}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            fs::read_to_string(ws.join(installed)).unwrap(),
            fs::read_to_string(contrib.join(snippet)).unwrap(),
            "contrib/hooks/{snippet} differs from what `hooks install --agent {agent}` writes"
        );
    }
}

/// OpenCode runs plugins on Bun; Bun is not installed here, so node runs the plugin with a
/// stand-in for the one Bun call it makes (`Bun.spawn` with a Blob on stdin, awaited via
/// `exited`). Everything else is real: the installed plugin file, the `openfiles` binary
/// found on PATH, a workspace with a fresh heartbeat, and the queue line it appends.
#[test]
fn opencode_plugin_reports_file_edited_through_the_hook() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(&ws).unwrap();
    heartbeat(&ws);
    let out = openfiles(
        tmp.path(),
        &[
            "hooks",
            "install",
            "--agent",
            "opencode",
            "--workspace",
            ws.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success());
    let plugin = ws.join(".opencode/plugins/openfiles.js");
    // node treats .mjs as an ES module, as Bun does the plugin.
    let module = tmp.path().join("openfiles.mjs");
    fs::copy(&plugin, &module).unwrap();
    let driver = tmp.path().join("driver.mjs");
    fs::write(
        &driver,
        r#"import { spawnSync } from "node:child_process";
globalThis.Bun = {
  spawn: (argv, opts) => ({
    exited: opts.stdin.text().then((input) => spawnSync(argv[0], argv.slice(1), { input }).status),
  }),
};
const { OpenFiles } = await import(process.argv[2]);
const hooks = await OpenFiles({ directory: process.argv[3] });
await hooks.event({ event: { type: "session.idle", properties: {} } });
await hooks.event({ event: { type: "file.edited", properties: { file: process.argv[4] } } });
"#,
    )
    .unwrap();
    let bin_dir = tmp.path().join("bin");
    fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(BIN, bin_dir.join("openfiles")).unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let edited = ws.join("src/index.ts");
    let out = std::process::Command::new("node")
        .arg(&driver)
        .arg(&module)
        .arg(&ws)
        .arg(&edited)
        .env("PATH", path)
        .env("OPENFILES_SOCKET", tmp.path().join("nobody.sock"))
        .current_dir(tmp.path())
        .output()
        .expect("node (installed with the TypeScript test tools)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let queue = fs::read_to_string(ws.join(".openfiles/queue.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = queue
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "only file.edited reports: {queue}");
    assert_eq!(lines[0]["agent"], "opencode");
    assert_eq!(lines[0]["tool"], "edit");
    assert_eq!(lines[0]["paths"], serde_json::json!([edited]));
}
