//! Where each agent keeps its hook configuration and what openfiles adds there (the table
//! in `agent-hooks.md`, plus the user-level locations the agents document).
//!
//! Every command we add carries [`MARKER`], which is how `uninstall` and `status` recognise
//! our entries and nothing else.
//!
//! Agents that announce a session (Claude Code, Codex, Gemini CLI: `SessionStart`) also get
//! [`SESSION_START`]: the hook asks the service to start the workspace's checkers then, so
//! the first edit is answered as fast as later ones. It is installed by default: it runs
//! once per session (never in a folder no agent works in), answers in milliseconds, prints
//! nothing, and the servers it starts stop under the plugins' usual idle rules.

use std::path::PathBuf;

use serde_json::{json, Value};

/// Added to every command we install; `openfiles hook` ignores it.
pub const MARKER: &str = "--tag openfiles-hook";
/// The extra arguments of the session-start hook.
pub const SESSION_START: &str = "--event SessionStart";

/// Agents `hooks install` knows.
pub const SUPPORTED: &[&str] = &[
    "claude", "codex", "copilot", "gemini", "qwen", "cursor", "windsurf", "opencode",
];

/// Which configuration to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// A workspace folder's own configuration.
    Workspace(PathBuf),
    /// The user's configuration in `home`.
    User(PathBuf),
}

/// One entry to keep in `hooks.<event>` of a JSON configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonHook {
    pub event: &'static str,
    pub entry: Value,
}

/// What an agent's configuration gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Entries merged into a JSON file; `version` is set when the file has none.
    Json {
        hooks: Vec<JsonHook>,
        version: Option<u64>,
    },
    /// A whole file of ours (OpenCode's plugin).
    OwnFile(String),
}

/// An agent's configuration file and what goes into it.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub agent: &'static str,
    pub path: PathBuf,
    pub content: Content,
}

/// The command an agent runs: `<bin> hook --agent ID [extra…] --tag openfiles-hook`.
pub fn command(bin: &str, agent: &str, extra: &str) -> String {
    let bin = if bin
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+~".contains(c))
    {
        bin.to_owned()
    } else {
        format!("'{}'", bin.replace('\'', r"'\''"))
    };
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(" {extra}")
    };
    format!("{bin} hook --agent {agent}{extra} {MARKER}")
}

/// The target for `agent` in `scope`, or `None` for an agent `hooks install` does not know.
pub fn target(agent: &str, scope: &Scope, bin: &str) -> Option<Target> {
    let (base, user) = match scope {
        Scope::Workspace(dir) => (dir.as_path(), false),
        Scope::User(home) => (home.as_path(), true),
    };
    let at = |ws: &str, usr: &str| -> PathBuf { base.join(if user { usr } else { ws }) };
    let (agent, path, content) = match agent {
        "claude" => (
            "claude",
            at(".claude/settings.local.json", ".claude/settings.json"),
            json_hooks(
                vec![
                    JsonHook {
                        event: "PostToolUse",
                        entry: json!({
                            "matcher": "Edit|Write|MultiEdit|NotebookEdit",
                            "hooks": [{"type": "command", "command": command(bin, "claude", ""), "timeout": 15}]
                        }),
                    },
                    JsonHook {
                        event: "SessionStart",
                        entry: json!({
                            "hooks": [{"type": "command", "command": command(bin, "claude", SESSION_START), "timeout": 15}]
                        }),
                    },
                ],
                None,
            ),
        ),
        "codex" => (
            "codex",
            at(".codex/hooks.json", ".codex/hooks.json"),
            json_hooks(
                vec![
                    JsonHook {
                        event: "PostToolUse",
                        entry: json!({
                            "matcher": "apply_patch|Edit|Write",
                            "hooks": [{"type": "command", "command": command(bin, "codex", ""), "timeout": 15}]
                        }),
                    },
                    JsonHook {
                        event: "SessionStart",
                        entry: json!({
                            "hooks": [{"type": "command", "command": command(bin, "codex", SESSION_START), "timeout": 15}]
                        }),
                    },
                ],
                None,
            ),
        ),
        "copilot" => (
            "copilot",
            at(
                ".github/hooks/openfiles.json",
                ".copilot/hooks/openfiles.json",
            ),
            json_hooks(
                vec![JsonHook {
                    event: "postToolUse",
                    entry: json!({"type": "command", "bash": command(bin, "copilot", ""), "timeoutSec": 15}),
                }],
                Some(1),
            ),
        ),
        "gemini" => (
            "gemini",
            at(".gemini/settings.json", ".gemini/settings.json"),
            json_hooks(
                vec![
                    JsonHook {
                        event: "AfterTool",
                        entry: json!({
                            "matcher": "write_file|replace",
                            "hooks": [{"name": "openfiles", "type": "command", "command": command(bin, "gemini", ""), "timeout": 15000}]
                        }),
                    },
                    JsonHook {
                        event: "SessionStart",
                        entry: json!({
                            "hooks": [{"name": "openfiles-warm", "type": "command", "command": command(bin, "gemini", SESSION_START), "timeout": 15000}]
                        }),
                    },
                ],
                None,
            ),
        ),
        "qwen" => (
            "qwen",
            at(".qwen/settings.json", ".qwen/settings.json"),
            json_hooks(
                vec![JsonHook {
                    event: "PostToolUse",
                    entry: json!({
                        "matcher": "write_file|edit",
                        "hooks": [{"type": "command", "command": command(bin, "qwen", ""), "name": "openfiles", "timeout": 15}]
                    }),
                }],
                None,
            ),
        ),
        "cursor" => (
            "cursor",
            at(".cursor/hooks.json", ".cursor/hooks.json"),
            json_hooks(
                vec![
                    JsonHook {
                        event: "afterFileEdit",
                        entry: json!({"command": command(bin, "cursor", "--event afterFileEdit --no-feedback")}),
                    },
                    JsonHook {
                        event: "postToolUse",
                        entry: json!({"command": command(bin, "cursor", "--event postToolUse")}),
                    },
                ],
                Some(1),
            ),
        ),
        "windsurf" => (
            "windsurf",
            at(".windsurf/hooks.json", ".codeium/windsurf/hooks.json"),
            json_hooks(
                vec![JsonHook {
                    event: "post_write_code",
                    entry: json!({"command": command(bin, "windsurf", "--no-feedback"), "show_output": false}),
                }],
                None,
            ),
        ),
        "opencode" => (
            "opencode",
            at(
                ".opencode/plugins/openfiles.js",
                ".config/opencode/plugins/openfiles.js",
            ),
            Content::OwnFile(opencode_plugin(bin)),
        ),
        _ => return None,
    };
    Some(Target {
        agent,
        path,
        content,
    })
}

fn json_hooks(hooks: Vec<JsonHook>, version: Option<u64>) -> Content {
    Content::Json { hooks, version }
}

/// The most characters of feedback the OpenCode plugin appends to a tool's output (the
/// hook's own text stays under `feedback::MAX_CHARS` already; this guards the agent).
pub const OPENCODE_BUDGET: usize = 9000;

/// OpenCode's plugin: after an edit tool ran (`tool.execute.after`), hand the call to the
/// hook as a PostToolUse payload and append the feedback it prints to the tool's output,
/// which is what the model reads next.
pub fn opencode_plugin(bin: &str) -> String {
    let bin_js = serde_json::to_string(bin).unwrap_or_else(|_| "\"openfiles\"".into());
    format!(
        r#"// openfiles: check the files OpenCode edits and show the model what `openfiles hook` found ({MARKER}).
// Installed by `openfiles hooks install --agent opencode`; removed by `openfiles hooks uninstall`.
const EDIT_TOOLS = new Set(["edit", "write", "multiedit", "patch", "apply_patch"]);
const BUDGET = {OPENCODE_BUDGET};
export const OpenFiles = async ({{ directory }}) => ({{
  "tool.execute.after": async (input, output) => {{
    if (!EDIT_TOOLS.has(input?.tool)) return;
    const payload = JSON.stringify({{
      hook_event_name: "PostToolUse",
      tool_name: input.tool,
      tool_input: input.args ?? {{}},
      cwd: directory,
    }});
    try {{
      const proc = Bun.spawn([{bin_js}, "hook", "--agent", "opencode", "--tag", "openfiles-hook"], {{
        stdin: new Blob([payload]),
        stdout: "pipe",
        stderr: "ignore",
      }});
      const text = await new Response(proc.stdout).text();
      await proc.exited;
      const line = text.trim();
      if (!line) return;
      const context = JSON.parse(line)?.hookSpecificOutput?.additionalContext;
      if (typeof context !== "string" || !context) return;
      const before = typeof output.output === "string" ? output.output : "";
      output.output = `${{before}}\n\n${{context.slice(0, BUDGET)}}`;
    }} catch {{
      // openfiles is not installed or not on PATH, or printed nothing: never break the agent.
    }}
  }},
}});
"#
    )
}

/// The home directory for `--user`.
pub fn home() -> Option<PathBuf> {
    directories::BaseDirs::new().map(|d| d.home_dir().to_owned())
}
