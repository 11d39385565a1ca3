//! `openfiles hooks install|uninstall|status --mcp` on real files: every agent's MCP
//! configuration gets the command the hooks get, others' servers and settings survive (TOML
//! comments too), a second install changes nothing, uninstall gives the files back.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

fn openfiles(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_openfiles"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn install_merges_is_idempotent_and_uninstall_restores() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join(".codex")).unwrap();
    std::fs::create_dir_all(ws.join(".vscode")).unwrap();
    let codex_before = "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
    std::fs::write(ws.join(".codex/config.toml"), codex_before).unwrap();
    let vscode_before =
        r#"{"servers": {"gh": {"type": "http", "url": "https://x"}}, "inputs": []}"#;
    std::fs::write(ws.join(".vscode/mcp.json"), vscode_before).unwrap();
    let all = "claude,codex,gemini,qwen,cursor,opencode,copilot";

    let dry = openfiles(
        &ws,
        &["hooks", "install", "--mcp", "--agent", all, "--dry-run"],
    );
    assert!(
        dry.contains("+++ ") && dry.contains("(dry run: nothing written)"),
        "{dry}"
    );
    assert!(!ws.join(".mcp.json").exists(), "a dry run wrote a file");

    let shown = openfiles(&ws, &["hooks", "install", "--mcp", "--agent", all]);
    assert!(
        shown.contains("+    \"openfiles\": {"),
        "the diff is shown:\n{shown}"
    );
    let claude = json(&ws.join(".mcp.json"));
    let cmd = claude["mcpServers"]["openfiles"]["command"]
        .as_str()
        .unwrap();
    assert!(
        Path::new(cmd).is_absolute() && Path::new(cmd).is_file(),
        "{cmd}"
    );
    assert_eq!(claude["mcpServers"]["openfiles"]["args"][0], "mcp");
    for (file, at) in [
        (".gemini/settings.json", "/mcpServers/openfiles/command"),
        (".qwen/settings.json", "/mcpServers/openfiles/command"),
        (".cursor/mcp.json", "/mcpServers/openfiles/command"),
        ("opencode.json", "/mcp/openfiles/command/0"),
        (".vscode/mcp.json", "/servers/openfiles/command"),
    ] {
        assert_eq!(
            json(&ws.join(file)).pointer(at),
            Some(&Value::from(cmd)),
            "{file}"
        );
    }
    let vs = json(&ws.join(".vscode/mcp.json"));
    assert_eq!(
        vs["servers"]["gh"]["url"], "https://x",
        "others' servers are kept"
    );
    assert!(vs["inputs"].is_array());
    let codex = std::fs::read_to_string(ws.join(".codex/config.toml")).unwrap();
    assert!(
        codex.starts_with(codex_before),
        "comments and order kept:\n{codex}"
    );
    let parsed: toml::Table = codex.parse().unwrap();
    assert_eq!(
        parsed["mcp_servers"]["openfiles"]["command"].as_str(),
        Some(cmd)
    );
    assert_eq!(
        parsed["mcp_servers"]["other"]["command"].as_str(),
        Some("x")
    );

    let snapshot: Vec<String> = [
        ".mcp.json",
        ".codex/config.toml",
        ".vscode/mcp.json",
        "opencode.json",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(ws.join(f)).unwrap())
    .collect();
    let again = openfiles(&ws, &["hooks", "install", "--mcp", "--agent", all]);
    assert_eq!(again.matches("already configured").count(), 7, "{again}");
    let after: Vec<String> = [
        ".mcp.json",
        ".codex/config.toml",
        ".vscode/mcp.json",
        "opencode.json",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(ws.join(f)).unwrap())
    .collect();
    assert_eq!(snapshot, after, "a second install changed a file");

    let status = openfiles(&ws, &["hooks", "status", "--mcp"]);
    let in_ws = status.split("user:").next().unwrap();
    assert_eq!(in_ws.matches(" configured ").count(), 7, "{status}");

    openfiles(&ws, &["hooks", "uninstall", "--mcp"]);
    assert!(!ws.join(".mcp.json").exists());
    assert!(!ws.join("opencode.json").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join(".codex/config.toml")).unwrap(),
        codex_before
    );
    let vs = json(&ws.join(".vscode/mcp.json"));
    assert!(
        vs["servers"].get("openfiles").is_none() && vs["servers"]["gh"].is_object(),
        "{vs}"
    );
}

#[test]
fn the_installed_command_line_runs() {
    // What the agents run: `<abs> mcp --tag openfiles-mcp` (stdin at EOF: a clean exit).
    let st = Command::new(env!("CARGO_BIN_EXE_openfiles"))
        .args(["mcp", "--tag", "openfiles-mcp"])
        .env("OPENFILES_SOCKET", "/nonexistent/openfiles.sock")
        .env("OPENFILES_AUTOSTART", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
}
