//! The hand-written-config snippets in contrib/hooks/ are exactly what
//! `openfiles hooks install` writes into an empty workspace, so they never drift apart; and
//! the OpenCode plugin, run by a JavaScript runtime, really reports an edit tool's call and
//! appends the hook's feedback to the tool's output.

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
        ("qwen", ".qwen/settings.json", "qwen.settings.json"),
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
/// stand-in for the one Bun call it makes (`Bun.spawn` with a Blob on stdin and a piped
/// stdout, awaited via `exited`). Everything else is real: the installed plugin file, the
/// `openfiles` binary found on PATH, a workspace with a fresh heartbeat and the extension's
/// `diagnostics.json`, the queue line the hook appends, and the feedback it prints, which the
/// plugin appends to the tool's output. (The real OpenCode: `agents_real::opencode_…`.)
#[test]
fn opencode_plugin_reports_the_edit_and_appends_the_feedback() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(ws.join(".openfiles")).unwrap();
    heartbeat(&ws);
    let edited = ws.join("src/index.ts");
    let doc = serde_json::json!({
        "version": 1, "updatedAt": 1,
        "hook": {"feedback": "errorsAndWarnings", "timeoutMs": 20_000},
        "files": {"src/index.ts": {"path": edited, "checkedAt": 99_999_999_999_999u64, "errors": 1, "warnings": 0,
            "items": [{"line": 1, "column": 7, "severity": "error", "source": "ts", "code": "2322", "message": "Type 'string' is not assignable to type 'number'."}]}}
    });
    fs::write(
        ws.join(".openfiles/diagnostics.json"),
        serde_json::to_vec(&doc).unwrap(),
    )
    .unwrap();
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
  spawn: (argv, opts) => {
    const run = opts.stdin.text().then((input) => spawnSync(argv[0], argv.slice(1), { input }));
    return {
      stdout: new ReadableStream({ async start(c) { c.enqueue((await run).stdout); c.close(); } }),
      exited: run.then((r) => r.status),
    };
  },
};
const { OpenFiles } = await import(process.argv[2]);
const hooks = await OpenFiles({ directory: process.argv[3] });
const read = { title: "", output: "file contents", metadata: {} };
await hooks["tool.execute.after"]({ tool: "read", sessionID: "s", callID: "c1", args: { filePath: process.argv[4] } }, read);
const write = { title: "", output: "Wrote file successfully.", metadata: {} };
await hooks["tool.execute.after"]({ tool: "write", sessionID: "s", callID: "c2", args: { filePath: process.argv[4], content: "x" } }, write);
process.stdout.write(JSON.stringify({ read: read.output, write: write.output }));
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
    let out = std::process::Command::new("node")
        .arg(&driver)
        .arg(&module)
        .arg(&ws)
        .arg(&edited)
        .env("PATH", path)
        .env("OPENFILES_SOCKET", tmp.path().join("nobody.sock"))
        .env("OPENFILES_AUTOSTART", "0")
        .current_dir(tmp.path())
        .output()
        .expect("node (installed with the TypeScript test tools)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outputs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        outputs["read"], "file contents",
        "not an edit tool: untouched"
    );
    assert_eq!(
        outputs["write"],
        "Wrote file successfully.\n\nThe editor \"test\" (session t) found 1 error in files you edited (relayed by OpenFiles, which did not check them itself):\n- src/index.ts:1:7 error 2322 (ts): Type 'string' is not assignable to type 'number'.\nFix these before you report the task as done."
    );
    let queue = fs::read_to_string(ws.join(".openfiles/queue.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = queue
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "only the edit tool reports: {queue}");
    assert_eq!(lines[0]["agent"], "opencode");
    assert_eq!(lines[0]["tool"], "write");
    assert_eq!(lines[0]["paths"], serde_json::json!([edited]));
}
