//! The hand-written-config snippets in contrib/hooks/ are exactly what
//! `openfiles hooks install` writes into an empty workspace, so they never drift apart.

mod hook_support;

use std::fs;

use hook_support::*;

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
