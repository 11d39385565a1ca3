//! `openfiles hooks install|uninstall|status` on real files: merging into existing
//! configurations without disturbing them, idempotence, exact removal, diffs, dry runs.

use crate::common;

use std::fs;
use std::path::Path;

use common::hook::*;
use serde_json::{json, Value};

fn hooks(tmp: &Path, args: &[&str]) -> (bool, String, String) {
    let mut full = vec!["hooks"];
    full.extend_from_slice(args);
    let out = openfiles(tmp, &full).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(&ws).unwrap();
    fs::create_dir_all(tmp.path().join("home")).unwrap();
    (tmp, ws)
}

const CLAUDE_EXISTING: &str = r#"{
  "permissions": {"allow": ["Bash(ls)"]},
  "hooks": {
    "PostToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo user-hook"}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "zzz": 1,
  "aaa": 2
}
"#;

#[test]
fn claude_merge_keeps_user_settings_and_order_is_idempotent_and_uninstalls_exactly() {
    let (tmp, ws) = setup();
    let file = ws.join(".claude/settings.local.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, CLAUDE_EXISTING).unwrap();
    let original = read_json(&file);
    let w = ws.to_str().unwrap();

    let (ok, out, err) = hooks(
        tmp.path(),
        &["install", "--agent", "claude", "--workspace", w],
    );
    assert!(ok, "{err}");
    assert!(out.contains("claude: install in"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("+++ ") && l.ends_with("settings.local.json")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with('+')
            && l.contains("\"command\": \"openfiles hook --agent claude --tag openfiles-hook\"")),
        "diff shown: {out}"
    );
    let doc = read_json(&file);
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["permissions", "hooks", "zzz", "aaa"],
        "key order kept"
    );
    assert_eq!(doc["permissions"], original["permissions"]);
    assert_eq!(doc["hooks"]["Stop"], original["hooks"]["Stop"]);
    let post = doc["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post.len(), 2);
    assert_eq!(
        post[0], original["hooks"]["PostToolUse"][0],
        "the user's hook stays first"
    );
    assert_eq!(
        post[1],
        json!({"matcher": "Edit|Write|MultiEdit|NotebookEdit", "hooks": [{"type": "command", "command": "openfiles hook --agent claude --tag openfiles-hook", "timeout": 15}]})
    );
    assert_eq!(
        doc["hooks"]["SessionStart"],
        json!([{"hooks": [{"type": "command", "command": "openfiles hook --agent claude --event SessionStart --tag openfiles-hook", "timeout": 15}]}]),
        "the session-start hook that warms the checkers"
    );

    let after_first = fs::read_to_string(&file).unwrap();
    let (ok, out, _) = hooks(
        tmp.path(),
        &["install", "--agent", "claude", "--workspace", w],
    );
    assert!(ok);
    assert!(out.contains("already installed"), "{out}");
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        after_first,
        "second install changes nothing"
    );

    let (ok, out, _) = hooks(tmp.path(), &["status", "--workspace", w]);
    assert!(ok);
    assert!(
        out.lines()
            .any(|l| l.contains("claude") && l.contains("installed (PostToolUse, SessionStart)")),
        "{out}"
    );

    let (ok, out, _) = hooks(
        tmp.path(),
        &["uninstall", "--agent", "claude", "--workspace", w],
    );
    assert!(ok);
    assert!(
        out.lines()
            .any(|l| l.starts_with('-')
                && l.contains("\"command\": \"openfiles hook --agent claude")),
        "{out}"
    );
    assert_eq!(
        read_json(&file),
        original,
        "uninstall removes exactly what install added"
    );
    let (_, out, _) = hooks(
        tmp.path(),
        &["uninstall", "--agent", "claude", "--workspace", w],
    );
    assert!(out.contains("nothing to remove"), "{out}");
}

#[test]
fn dry_run_shows_the_diff_and_writes_nothing() {
    let (tmp, ws) = setup();
    let w = ws.to_str().unwrap();
    let (ok, out, _) = hooks(
        tmp.path(),
        &[
            "install",
            "--agent",
            "codex,gemini",
            "--workspace",
            w,
            "--dry-run",
        ],
    );
    assert!(ok);
    assert!(
        out.contains("codex: install in") && out.contains("gemini: install in"),
        "{out}"
    );
    assert!(out.contains("\"matcher\": \"apply_patch|Edit|Write\""));
    assert!(out.contains("\"matcher\": \"write_file|replace\""));
    assert!(out.contains("(dry run: nothing written)"));
    assert!(!ws.join(".codex").exists() && !ws.join(".gemini").exists());
}

#[test]
fn every_agent_installs_its_own_format_and_uninstall_removes_the_files_it_created() {
    let (tmp, ws) = setup();
    let w = ws.to_str().unwrap();
    let all = [
        "claude", "codex", "copilot", "gemini", "qwen", "cursor", "windsurf", "opencode",
    ];
    let mut args = vec!["install", "--workspace", w];
    for a in all {
        args.extend(["--agent", a]);
    }
    let (ok, _, err) = hooks(tmp.path(), &args);
    assert!(ok, "{err}");
    assert_eq!(
        read_json(&ws.join(".codex/hooks.json")),
        json!({"hooks": {
            "PostToolUse": [{"matcher": "apply_patch|Edit|Write", "hooks": [{"type": "command", "command": "openfiles hook --agent codex --tag openfiles-hook", "timeout": 15}]}],
            "SessionStart": [{"hooks": [{"type": "command", "command": "openfiles hook --agent codex --event SessionStart --tag openfiles-hook", "timeout": 15}]}]}})
    );
    assert_eq!(
        read_json(&ws.join(".github/hooks/openfiles.json")),
        json!({"version": 1, "hooks": {"postToolUse": [{"type": "command", "bash": "openfiles hook --agent copilot --tag openfiles-hook", "timeoutSec": 15}]}})
    );
    assert_eq!(
        read_json(&ws.join(".gemini/settings.json")),
        json!({"hooks": {
            "AfterTool": [{"matcher": "write_file|replace", "hooks": [{"name": "openfiles", "type": "command", "command": "openfiles hook --agent gemini --tag openfiles-hook", "timeout": 15000}]}],
            "SessionStart": [{"hooks": [{"name": "openfiles-warm", "type": "command", "command": "openfiles hook --agent gemini --event SessionStart --tag openfiles-hook", "timeout": 15000}]}]}})
    );
    assert_eq!(
        read_json(&ws.join(".cursor/hooks.json")),
        json!({"version": 1, "hooks": {
            "afterFileEdit": [{"command": "openfiles hook --agent cursor --event afterFileEdit --no-feedback --tag openfiles-hook"}],
            "postToolUse": [{"command": "openfiles hook --agent cursor --event postToolUse --tag openfiles-hook"}]}})
    );
    assert_eq!(
        read_json(&ws.join(".windsurf/hooks.json")),
        json!({"hooks": {"post_write_code": [{"command": "openfiles hook --agent windsurf --no-feedback --tag openfiles-hook", "show_output": false}]}})
    );
    assert_eq!(
        read_json(&ws.join(".qwen/settings.json")),
        json!({"hooks": {"PostToolUse": [{"matcher": "write_file|edit", "hooks": [{"type": "command", "command": "openfiles hook --agent qwen --tag openfiles-hook", "name": "openfiles", "timeout": 15}]}]}})
    );
    let plugin = fs::read_to_string(ws.join(".opencode/plugins/openfiles.js")).unwrap();
    assert!(
        plugin.contains("\"tool.execute.after\"")
            && plugin.contains("[\"openfiles\", \"hook\", \"--agent\", \"opencode\", \"--tag\", \"openfiles-hook\"]")
            && !plugin.contains("--no-feedback"),
        "{plugin}"
    );

    let (ok, out, _) = hooks(tmp.path(), &["status", "--workspace", w]);
    assert!(ok);
    for a in all {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(a) && l.contains("installed")),
            "{a}: {out}"
        );
    }

    let (ok, out, _) = hooks(tmp.path(), &["status", "--workspace", w, "--json"]);
    assert!(ok);
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    for a in all {
        let row = rows
            .iter()
            .find(|r| r["scope"] == "workspace" && r["agent"] == a)
            .unwrap_or_else(|| panic!("{a}: {out}"));
        assert_eq!(row["installed"], true, "{row}");
        assert!(row["path"].as_str().unwrap().starts_with(w), "{row}");
    }
    assert!(rows.iter().any(|r| r["scope"] == "user"), "{out}");

    let (ok, _, err) = hooks(tmp.path(), &["uninstall", "--workspace", w]);
    assert!(ok, "{err}");
    for f in [
        ".claude/settings.local.json",
        ".codex/hooks.json",
        ".github/hooks/openfiles.json",
        ".gemini/settings.json",
        ".qwen/settings.json",
        ".cursor/hooks.json",
        ".windsurf/hooks.json",
        ".opencode/plugins/openfiles.js",
    ] {
        assert!(
            !ws.join(f).exists(),
            "{f} should be gone: only our entries were in it"
        );
    }
}

#[test]
fn existing_cursor_config_keeps_its_hooks_and_version() {
    let (tmp, ws) = setup();
    let file = ws.join(".cursor/hooks.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    let existing = json!({"version": 1, "hooks": {"afterFileEdit": [{"command": "./fmt.sh"}], "beforeShellExecution": [{"command": "./guard.sh"}]}});
    fs::write(&file, serde_json::to_string_pretty(&existing).unwrap()).unwrap();
    let w = ws.to_str().unwrap();
    assert!(
        hooks(
            tmp.path(),
            &["install", "--agent", "cursor", "--workspace", w]
        )
        .0
    );
    let doc = read_json(&file);
    assert_eq!(
        doc["hooks"]["afterFileEdit"][0],
        json!({"command": "./fmt.sh"})
    );
    assert_eq!(doc["hooks"]["afterFileEdit"].as_array().unwrap().len(), 2);
    assert!(
        hooks(
            tmp.path(),
            &["uninstall", "--agent", "cursor", "--workspace", w]
        )
        .0
    );
    assert_eq!(read_json(&file), existing);
}

#[test]
fn a_changed_entry_of_ours_is_replaced_not_duplicated() {
    let (tmp, ws) = setup();
    let w = ws.to_str().unwrap();
    assert!(
        hooks(
            tmp.path(),
            &["install", "--agent", "windsurf", "--workspace", w]
        )
        .0
    );
    // A program path with a space (it must be quoted) that really exists.
    let spaced = tmp.path().join("of bin");
    fs::create_dir_all(&spaced).unwrap();
    std::os::unix::fs::symlink(BIN, spaced.join("openfiles")).unwrap();
    let bin = spaced.join("openfiles");
    let (ok, out, _) = hooks(
        tmp.path(),
        &[
            "install",
            "--agent",
            "windsurf",
            "--workspace",
            w,
            "--bin",
            bin.to_str().unwrap(),
        ],
    );
    assert!(ok);
    assert!(out.contains("install in"), "{out}");
    let doc = read_json(&ws.join(".windsurf/hooks.json"));
    let list = doc["hooks"]["post_write_code"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(
        list[0]["command"],
        format!(
            "'{}' hook --agent windsurf --no-feedback --tag openfiles-hook",
            bin.display()
        )
    );
}

#[test]
fn invalid_json_is_never_touched_and_unknown_agents_are_named() {
    let (tmp, ws) = setup();
    let file = ws.join(".gemini/settings.json");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "{ // a comment\n \"theme\": 1 }").unwrap();
    let w = ws.to_str().unwrap();
    let (ok, _, err) = hooks(
        tmp.path(),
        &["install", "--agent", "gemini", "--workspace", w],
    );
    assert!(!ok);
    assert!(err.contains("settings.json is not valid JSON"), "{err}");
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "{ // a comment\n \"theme\": 1 }"
    );
    let (ok, _, err) = hooks(
        tmp.path(),
        &["install", "--agent", "emacs", "--workspace", w],
    );
    assert!(!ok);
    assert!(err.contains("does not know the agent `emacs`"), "{err}");
    // It points at something that exists.
    assert!(err.contains("contrib/hooks/README.md"), "{err}");
    assert!(std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("contrib/hooks/README.md")
        .is_file());
    let (ok, _, err) = hooks(tmp.path(), &["install", "--workspace", w]);
    assert!(!ok);
    assert!(err.contains("name at least one agent"), "{err}");
}

#[test]
fn user_scope_writes_under_home() {
    let (tmp, _ws) = setup();
    let (ok, _, err) = hooks(
        tmp.path(),
        &[
            "install", "--agent", "claude", "--agent", "windsurf", "--user",
        ],
    );
    assert!(ok, "{err}");
    let home = tmp.path().join("home");
    assert!(read_json(&home.join(".claude/settings.json"))["hooks"]["PostToolUse"].is_array());
    assert!(
        read_json(&home.join(".codeium/windsurf/hooks.json"))["hooks"]["post_write_code"]
            .is_array()
    );
}

/// `hooks install` wrote a bare `openfiles hook …` even when `openfiles` was not on PATH
/// (the agent then got `sh: openfiles: not found`, exit 127, on every edit). Now it writes
/// this program's absolute path, and a `--bin` that does not resolve is refused.
#[test]
fn the_installed_command_resolves_even_when_openfiles_is_not_on_path() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(&ws).unwrap();
    let out = openfiles(
        tmp.path(),
        &[
            "hooks",
            "install",
            "--agent",
            "claude",
            "--workspace",
            ws.to_str().unwrap(),
        ],
    )
    .env("PATH", "/usr/bin:/bin")
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = fs::read_to_string(ws.join(".claude/settings.local.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cmd = v["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_owned();
    let program = cmd.split_whitespace().next().unwrap();
    assert!(program.starts_with('/'), "{cmd}");
    // The written command really runs: the program answers --version.
    let v = std::process::Command::new(program)
        .arg("--version")
        .output()
        .unwrap();
    assert!(v.status.success(), "{cmd}");

    let out = openfiles(
        tmp.path(),
        &[
            "hooks",
            "install",
            "--agent",
            "claude",
            "--workspace",
            ws.to_str().unwrap(),
            "--bin",
            "no-such-openfiles",
        ],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not found on PATH"),
        "{out:?}"
    );
}

/// Install then uninstall gives back the file byte for byte (compact JSON stays compact, an
/// indented one keeps its indent), the diff of an existing file is not labelled "(new)",
/// a folder created for an agent (`.codex/`) goes with its file, and a reader that stops
/// early (`| head -1`) does not cancel the write.
#[test]
fn install_then_uninstall_restores_bytes_and_output_errors_never_cancel_a_write() {
    let (tmp, ws) = setup();
    let w = ws.to_str().unwrap();
    for original in [
        r#"{"permissions":{"allow":["Bash(ls)"]}}"#.to_owned(),
        "{\n    \"permissions\": {\n        \"allow\": [\n            \"Bash(ls)\"\n        ]\n    }\n}\n"
            .to_owned(),
    ] {
        let file = ws.join(".claude/settings.local.json");
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, &original).unwrap();
        let (ok, out, err) = hooks(tmp.path(), &["install", "--agent", "claude", "--workspace", w]);
        assert!(ok, "{err}");
        assert!(!out.contains("(new)"), "{out}");
        assert_ne!(fs::read_to_string(&file).unwrap(), original);
        let (ok, _, err) = hooks(tmp.path(), &["uninstall", "--agent", "claude", "--workspace", w]);
        assert!(ok, "{err}");
        assert_eq!(fs::read_to_string(&file).unwrap(), original);
    }

    // Output into a pipe closed after one byte: the file is written all the same.
    let bin = common::hook::BIN;
    let script =
        format!("'{bin}' hooks install --agent codex --workspace '{w}' | head -c 1 >/dev/null");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("PATH", common::hook::path_with_bin())
        .env("HOME", tmp.path().join("home"))
        .status()
        .unwrap();
    assert!(status.success());
    let codex = ws.join(".codex");
    assert!(codex.is_dir() && fs::read_dir(&codex).unwrap().count() > 0);
    let (ok, _, err) = hooks(
        tmp.path(),
        &["uninstall", "--agent", "codex", "--workspace", w],
    );
    assert!(ok, "{err}");
    assert!(!codex.exists(), "an empty .codex/ was left behind");
}

/// Codex runs a project hook only once the user trusted it: install records the trust for
/// our entry in Codex's own configuration (as its /hooks screen does) and says so;
/// uninstall gives that file back byte for byte. (The real Codex's view of the record:
/// `agents_real::codex_…`.)
#[test]
fn codex_install_records_the_hooks_trust_and_uninstall_removes_exactly_that() {
    let (tmp, ws) = setup();
    let ws = ws.canonicalize().unwrap();
    let w = ws.to_str().unwrap();
    let config = tmp.path().join("home/.codex/config.toml");
    fs::create_dir_all(config.parent().unwrap()).unwrap();
    let before = "# mine\nmodel = \"o3\"\n\n[hooks.state.\"/elsewhere/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:1\"\n";
    fs::write(&config, before).unwrap();
    let (ok, out, err) = hooks(
        tmp.path(),
        &["install", "--agent", "codex", "--workspace", w],
    );
    assert!(ok, "{err}");
    assert!(
        out.contains("codex: trust the hook in") && out.contains("/hooks screen"),
        "{out}"
    );
    assert!(
        out.contains("only in a trusted project"),
        "the project is not trusted: {out}"
    );
    let after = fs::read_to_string(&config).unwrap();
    assert!(after.starts_with(before), "{after}");
    let doc: toml::Table = after.parse().unwrap();
    let key = format!("{w}/.codex/hooks.json:post_tool_use:0:0");
    assert_eq!(
        doc["hooks"]["state"][&key]["trusted_hash"].as_str(),
        Some("sha256:8c562570ebb5eba49b2d94f5a1bcec7206a6af57264bbf737d54bc63f02a43d8"),
        "{after}"
    );
    let (ok, out, _) = hooks(
        tmp.path(),
        &["install", "--agent", "codex", "--workspace", w],
    );
    assert!(ok && out.contains("already trusted"), "{out}");
    assert_eq!(fs::read_to_string(&config).unwrap(), after);
    let (ok, out, err) = hooks(
        tmp.path(),
        &["uninstall", "--agent", "codex", "--workspace", w],
    );
    assert!(ok, "{err}");
    assert!(out.contains("remove the hook's trust"), "{out}");
    assert_eq!(fs::read_to_string(&config).unwrap(), before);
}

/// The hooks and the MCP server entry name the same program: `openfiles` when that name on
/// `PATH` is this program (as after an install).
#[test]
fn hooks_and_mcp_write_the_same_command() {
    let (tmp, ws) = setup();
    let w = ws.to_str().unwrap();
    for extra in [&[][..], &["--mcp"][..]] {
        let mut args = vec!["install", "--agent", "qwen", "--workspace", w];
        args.extend_from_slice(extra);
        let (ok, _, err) = hooks(tmp.path(), &args);
        assert!(ok, "{err}");
    }
    let doc = read_json(&ws.join(".qwen/settings.json"));
    assert_eq!(
        doc["mcpServers"]["openfiles"]["command"], "openfiles",
        "{doc}"
    );
    assert_eq!(
        doc["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
        "openfiles hook --agent qwen --tag openfiles-hook"
    );
}
