//! The real agents, configured only with `openfiles hooks install [--mcp] --agent ID`, run
//! headless against our scripted model stand-in (`tests/agents/model.py`): turn 1 writes
//! `src/app.py` with an undefined name, turn 2 is recorded. The checker's message (ruff
//! F821) must be in the model's next request, where that agent puts hook context. With
//! `--mcp`, the openfiles tools are offered and a diagnostics call returns the problems.
//! Codex: the trust `hooks install` records is the trust the real Codex reports.

use std::path::Path;

use crate::common;

use common::agents::{agent_bin, has_f821, World, APP, APP_TEXT};
use serde_json::Value;

/// The last request the model got that holds a tool result, as the agent sent it.
fn after_tool(world: &World, holds_result: impl Fn(&Value) -> bool, out: &str) -> Value {
    world
        .model
        .requests()
        .into_iter()
        .rev()
        .map(|r| r["body"].clone())
        .find(|b| holds_result(b))
        .unwrap_or_else(|| {
            panic!(
                "no request after a tool call; the agent said:\n{out}\nrequests: {:?}",
                world.model.requests()
            )
        })
}

/// The written file is really there: the agent ran the tool.
fn wrote(world: &World, out: &str) {
    assert_eq!(
        std::fs::read_to_string(world.ws.join(APP)).unwrap_or_default(),
        APP_TEXT,
        "the agent did not write {APP}:\n{out}"
    );
}

#[test]
fn claude_code_hands_the_hook_context_to_the_model_after_the_tool_result() {
    let world = World::writing();
    world.install("claude", false);
    let mut cmd = world.command(
        &agent_bin("claude"),
        &[
            "-p",
            "write the app",
            "--model",
            "claude-opus-4-5",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Write",
        ],
    );
    cmd.env(
        "ANTHROPIC_BASE_URL",
        format!("http://127.0.0.1:{}", world.model.port),
    )
    .env("ANTHROPIC_API_KEY", "sk-stand-in");
    let out = world.run(cmd);
    wrote(&world, &out);
    let body = after_tool(
        &world,
        |b| b["messages"].to_string().contains("\"tool_result\""),
        &out,
    );
    // The tool result's own content carries the hook's text (as a system reminder).
    let last = &body["messages"].as_array().unwrap().last().unwrap()["content"];
    let result = last
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_result")
        .unwrap()
        .to_string();
    assert!(
        result.contains("PostToolUse:Write hook additional context") && has_f821(&result),
        "{result}"
    );
}

/// `claude -p PROMPT` against the stand-in with the project's MCP servers approved and `tool`
/// (an openfiles MCP tool) allowed.
fn claude_mcp_command(world: &World, prompt: &str, tool: &str) -> std::process::Command {
    let allowed = format!("mcp__openfiles__{tool}");
    let mut cmd = world.command(
        &agent_bin("claude"),
        &[
            "-p",
            prompt,
            "--model",
            "claude-opus-4-5",
            "--allowedTools",
            &allowed,
        ],
    );
    cmd.env(
        "ANTHROPIC_BASE_URL",
        format!("http://127.0.0.1:{}", world.model.port),
    )
    .env("ANTHROPIC_API_KEY", "sk-stand-in")
    // Offer every tool in the request rather than behind Claude's tool search.
    .env("ENABLE_TOOL_SEARCH", "false");
    // Project MCP servers need the user's approval; this is the non-interactive way.
    std::fs::create_dir_all(world.ws.join(".claude")).unwrap();
    std::fs::write(
        world.ws.join(".claude/settings.local.json"),
        r#"{"enableAllProjectMcpServers": true}"#,
    )
    .unwrap();
    cmd
}

/// The openfiles tools Claude Code offered the model.
fn claude_listed(world: &World) -> Vec<String> {
    world
        .model
        .requests()
        .iter()
        .flat_map(|r| r["body"]["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .filter(|n| n.starts_with("mcp__openfiles__"))
        .collect()
}

#[test]
fn claude_code_with_mcp_lists_the_tools_and_a_diagnostics_call_returns_the_problems() {
    let world = World::calling_diagnostics();
    world.install("claude", true);
    let out = world.run(claude_mcp_command(
        &world,
        "check the app",
        "openfiles_diagnostics",
    ));
    let listed = claude_listed(&world);
    assert!(
        listed
            .iter()
            .any(|n| n == "mcp__openfiles__openfiles_diagnostics"),
        "openfiles tools offered: {listed:?}\n{out}"
    );
    let body = after_tool(
        &world,
        |b| b["messages"].to_string().contains("\"tool_result\""),
        &out,
    );
    let text = body["messages"].to_string();
    assert!(text.contains("F821"), "{text}");
}

/// Issue 41.7 with Claude Code: the navigation tools are offered, and the model's
/// `openfiles_references` call gets every use of `greet`.
#[test]
fn claude_code_with_mcp_asks_for_references_and_gets_every_use() {
    let world = World::calling_references();
    world.install("claude", true);
    let out = world.run(claude_mcp_command(
        &world,
        "who calls greet?",
        "openfiles_references",
    ));
    let listed = claude_listed(&world);
    for tool in ["definition", "references", "hover", "symbols", "rename"] {
        assert!(
            listed
                .iter()
                .any(|n| n == &format!("mcp__openfiles__openfiles_{tool}")),
            "openfiles_{tool} offered: {listed:?}\n{out}"
        );
    }
    let body = after_tool(
        &world,
        |b| b["messages"].to_string().contains("\"tool_result\""),
        &out,
    );
    // Claude Code hands the model the answer's `structuredContent` (the JSON), not its text.
    let text = body["messages"].to_string();
    assert!(
        text.contains(r#"\"kind\":\"references\",\"server\":\"pyright\""#),
        "{text}"
    );
    for (line, column) in [(1, 5), (5, 7), (6, 7)] {
        assert!(
            text.contains(&format!(
                r#"\"path\":\"src/app.py\",\"line\":{line},\"column\":{column}"#
            )),
            "the use at {line}:{column}: {text}"
        );
    }
}

/// The references answer for `greet` in [`common::agents::NAV_TEXT`], as the model got it.
fn assert_references_of_greet(text: &str) {
    assert!(text.contains("3 references (pyright)"), "{text}");
    for (at, code) in [
        ("1:5", "def greet(name: str)"),
        ("5:7", "print(greet("),
        ("6:7", "print(greet("),
    ] {
        assert!(
            text.contains(&format!("  {at}  {code}")),
            "the use at {at}: {text}"
        );
    }
}

/// `gemini -p PROMPT` against the stand-in, in a folder Gemini trusts (its own rule: project
/// settings, and their hooks, load only in a trusted folder), telemetry and updates off.
fn gemini_command(world: &World, prompt: &str) -> std::process::Command {
    let gemini = world.home.join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    std::fs::write(
        gemini.join("trustedFolders.json"),
        serde_json::json!({ world.ws.to_str().unwrap(): "TRUST_FOLDER" }).to_string(),
    )
    .unwrap();
    std::fs::write(
        gemini.join("settings.json"),
        r#"{"telemetry":{"enabled":false},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
    )
    .unwrap();
    let mut cmd = world.command(
        &agent_bin("gemini"),
        &["-p", prompt, "-m", "gemini-2.5-flash", "--yolo"],
    );
    cmd.env("GEMINI_API_KEY", "stand-in")
        .env(
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", world.model.port),
        )
        .env("GEMINI_CLI_NO_RELAUNCH", "true");
    cmd
}

#[test]
fn gemini_cli_appends_the_hook_context_to_the_tool_response() {
    let world = World::writing();
    world.install("gemini", false);
    let cmd = gemini_command(&world, "write the app");
    let out = world.run(cmd);
    wrote(&world, &out);
    let body = after_tool(
        &world,
        |b| b["contents"].to_string().contains("functionResponse"),
        &out,
    );
    let response = body["contents"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .find_map(|p| {
            p["functionResponse"]["response"]["output"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_default();
    assert!(
        response.contains("<hook_context>") && has_f821(&response),
        "{response}"
    );
}

#[test]
fn gemini_cli_with_mcp_lists_the_tools_and_a_diagnostics_call_returns_the_problems() {
    let world = World::calling_diagnostics();
    world.install("gemini", true);
    let cmd = gemini_command(&world, "check the app");
    let out = world.run(cmd);
    let listed: Vec<String> = world
        .model
        .requests()
        .iter()
        .flat_map(|r| r["body"]["tools"].as_array().cloned().unwrap_or_default())
        .flat_map(|t| {
            t["functionDeclarations"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .filter(|n| n.contains("openfiles_"))
        .collect();
    assert!(
        listed.iter().any(|n| n.ends_with("openfiles_diagnostics")),
        "openfiles tools offered: {listed:?}\n{out}"
    );
    let body = after_tool(
        &world,
        |b| b["contents"].to_string().contains("functionResponse"),
        &out,
    );
    let text = body["contents"].to_string();
    assert!(text.contains("F821"), "{text}");
}

/// Issue 41.7: a real agent CLI lists the navigation tools, and the scripted model's call to
/// `openfiles_references` gets the workspace's language server's answer: the definition and
/// both calls, with their lines of code.
#[test]
fn gemini_cli_with_mcp_asks_for_references_and_gets_every_use() {
    let world = World::calling_references();
    world.install("gemini", true);
    let cmd = gemini_command(&world, "who calls greet?");
    let out = world.run(cmd);
    let body = after_tool(
        &world,
        |b| b["contents"].to_string().contains("functionResponse"),
        &out,
    );
    let text = body["contents"].to_string();
    assert_references_of_greet(&text);
}

#[test]
fn qwen_code_appends_the_hook_context_to_the_tool_result() {
    let world = World::writing();
    let shown = world.install("qwen", false);
    assert!(shown.contains("qwen: install in"), "{shown}");
    let qwen = world.home.join(".qwen");
    std::fs::create_dir_all(&qwen).unwrap();
    std::fs::write(
        qwen.join("settings.json"),
        r#"{"telemetry":{"enabled":false},"privacy":{"usageStatisticsEnabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},"security":{"auth":{"selectedType":"openai"}}}"#,
    )
    .unwrap();
    let mut cmd = world.command(&agent_bin("qwen"), &["-p", "write the app", "--yolo"]);
    cmd.env("OPENAI_API_KEY", "stand-in")
        .env(
            "OPENAI_BASE_URL",
            format!("http://127.0.0.1:{}/v1", world.model.port),
        )
        .env("OPENAI_MODEL", "stand-in");
    let out = world.run(cmd);
    wrote(&world, &out);
    let body = after_tool(
        &world,
        |b| {
            b["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
        },
        &out,
    );
    let tool = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()
        .to_string();
    assert!(has_f821(&tool), "{tool}");
}

#[test]
fn opencode_plugin_appends_the_feedback_to_the_tool_output() {
    let world = World::writing();
    let shown = world.install("opencode", false);
    assert!(shown.contains("opencode: install in"), "{shown}");
    let config = world.home.join(".config/opencode");
    std::fs::create_dir_all(&config).unwrap();
    let port = world.model.port;
    std::fs::write(
        config.join("opencode.json"),
        serde_json::json!({
            "autoupdate": false,
            "share": "disabled",
            "model": "standin/m",
            "provider": {"standin": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Stand-in",
                "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "stand-in"},
                "models": {"m": {"name": "m", "tool_call": true}}
            }},
            "permission": {"edit": "allow", "bash": "allow"}
        })
        .to_string(),
    )
    .unwrap();
    // OpenCode installs `@opencode-ai/plugin` into its config folders at every start and
    // waits for it; its registry is the stand-in, which has nothing: the run stays offline.
    std::fs::write(
        world.home.join(".npmrc"),
        format!("registry=http://127.0.0.1:{port}/\n"),
    )
    .unwrap();
    let mut cmd = world.command(
        &agent_bin("opencode"),
        &["run", "write the app", "-m", "standin/m"],
    );
    cmd.env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1");
    let out = world.run(cmd);
    wrote(&world, &out);
    let body = after_tool(
        &world,
        |b| {
            b["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
        },
        &out,
    );
    let tool = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(
        tool.starts_with("\"Wrote file successfully.\\n\\nOpenFiles found") && has_f821(&tool),
        "{tool}"
    );
}

/// Codex's configuration for a run against the stand-in: a model the catalog describes
/// with its patch tool, no update check, no analytics, and the project trusted (the user's
/// own decision; Codex asks on first run).
fn codex_config(world: &World) -> std::path::PathBuf {
    let codex = world.home.join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    let catalog = codex.join("models.json");
    std::fs::write(
        &catalog,
        serde_json::json!({"models": [{
            "slug": "stand-in", "display_name": "Stand-in", "description": null,
            "supported_reasoning_levels": [], "shell_type": "shell_command", "visibility": "list",
            "supported_in_api": true, "priority": 1, "availability_nux": null, "upgrade": null,
            "base_instructions": "You are a coding agent.", "model_messages": null,
            "supports_reasoning_summaries": false, "default_reasoning_summary": "auto",
            "support_verbosity": false, "default_verbosity": null,
            "apply_patch_tool_type": "freeform",
            "truncation_policy": {"mode": "bytes", "limit": 10000},
            "supports_parallel_tool_calls": false, "supports_image_detail_original": false,
            "context_window": 200000, "auto_compact_token_limit": null,
            "effective_context_window_percent": 95, "experimental_supported_tools": [],
            "input_modalities": ["text"], "supports_search_tool": false
        }]})
        .to_string(),
    )
    .unwrap();
    let config = codex.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "model = \"stand-in\"\nmodel_catalog_json = {catalog:?}\nmodel_provider = \"standin\"\ncheck_for_update_on_startup = false\n\n[model_providers.standin]\nname = \"stand-in\"\nbase_url = \"http://127.0.0.1:{}/v1\"\nwire_api = \"responses\"\nenv_key = \"STANDIN_KEY\"\n\n[analytics]\nenabled = false\n\n[projects.{:?}]\ntrust_level = \"trusted\"\n",
            world.model.port,
            world.ws.display().to_string()
        ),
    )
    .unwrap();
    config
}

#[test]
fn codex_runs_the_hook_install_trusted_and_sends_the_feedback_as_a_developer_message() {
    let world = World::writing();
    codex_config(&world);
    let shown = world.install("codex", false);
    assert!(shown.contains("codex: trust the hook in"), "{shown}");
    let mut cmd = world.command(
        &agent_bin("codex"),
        &[
            "exec",
            "--dangerously-bypass-approvals-and-sandbox",
            "write the app",
        ],
    );
    cmd.env("STANDIN_KEY", "stand-in");
    let out = world.run(cmd);
    wrote(&world, &out);
    let body = after_tool(
        &world,
        |b| b["input"].to_string().contains("custom_tool_call_output"),
        &out,
    );
    let items = body["input"].as_array().unwrap();
    let call = items
        .iter()
        .position(|i| i["type"] == "custom_tool_call")
        .unwrap();
    let output = items
        .iter()
        .position(|i| i["type"] == "custom_tool_call_output")
        .unwrap();
    // Between the patch call and its output: a developer message with the checker's text.
    let developer = items[call..output]
        .iter()
        .find(|i| i["role"] == "developer")
        .map(|i| i["content"].to_string())
        .unwrap_or_default();
    assert!(has_f821(&developer), "{body}");
}

/// Ask the real `codex app-server` for its view of the workspace's hooks (`hooks/list`,
/// what its /hooks screen shows).
fn codex_hooks(world: &World) -> Vec<Value> {
    use std::io::Write;
    let mut child = world
        .command(&agent_bin("codex"), &["app-server"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("codex app-server");
    let ws = world.ws.to_str().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "openfiles-test", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [ws]}}),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    let reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut found = None;
    for line in std::io::BufRead::lines(reader) {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["id"] == 2 {
            found = Some(v);
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let reply = found.expect("hooks/list answered");
    reply["result"]["data"][0]["hooks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn codex_trusts_the_hook_install_records_and_uninstall_takes_it_back() {
    let world = World::new(|_| Vec::new());
    let config = world.home.join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    // The user's own decision (Codex asks on first run): this project is trusted.
    std::fs::write(
        &config,
        format!(
            "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            world.ws.display()
        ),
    )
    .unwrap();
    let before = std::fs::read_to_string(&config).unwrap();
    let shown = world.install("codex", false);
    assert!(shown.contains("codex: trust the hook in"), "{shown}");
    let hooks = codex_hooks(&world);
    let ours: Vec<&Value> = hooks
        .iter()
        .filter(|h| {
            h["command"]
                .as_str()
                .is_some_and(|c| c.contains("--tag openfiles-hook"))
        })
        .collect();
    // The edit hook and the session-start hook, both trusted.
    assert_eq!(ours.len(), 2, "Codex lists our hooks: {hooks:?}");
    for h in &ours {
        assert_eq!(h["trustStatus"], "trusted", "{h}");
        assert_eq!(h["enabled"], true, "{h}");
    }
    let out = world
        .command(
            Path::new(common::bin()),
            &[
                "hooks",
                "uninstall",
                "--agent",
                "codex",
                "--workspace",
                world.ws.to_str().unwrap(),
            ],
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
    // Installed again by hand without our trust record: Codex says untrusted.
    world.install("codex", false);
    std::fs::write(&config, &before).unwrap();
    let hooks = codex_hooks(&world);
    assert!(
        hooks.iter().any(|h| h["trustStatus"] == "untrusted"),
        "{hooks:?}"
    );
}
