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

use super::rules::Rules;

/// Added to every command we install; `openfiles hook` ignores it.
pub const MARKER: &str = "--tag openfiles-hook";
/// The extra arguments of the session-start hook.
pub const SESSION_START: &str = "--event SessionStart";

/// Agents `hooks install` knows: the ids of [`AGENTS`], in its order.
pub const SUPPORTED: &[&str] = &ids();

const fn ids() -> [&'static str; AGENTS.len()] {
    let mut out = [""; AGENTS.len()];
    let mut i = 0;
    while i < AGENTS.len() {
        out[i] = AGENTS[i].id;
        i += 1;
    }
    out
}

/// One agent `hooks install` knows: where it keeps its hooks, what we add there, and which
/// of its own rules decide whether it runs them ([`super::rules::Rules`]). The one table:
/// the installer, `hooks status` and `doctor` all read it.
#[derive(Debug)]
pub struct Agent {
    pub id: &'static str,
    /// The file `hooks install` writes in a workspace (relative to its root).
    pub workspace_file: &'static str,
    /// The file `hooks install --user` writes (relative to the home folder).
    pub user_file: &'static str,
    /// Other workspace files the agent reads hooks from (`doctor` looks at them too).
    pub also_reads: &'static [&'static str],
    /// What the file gets, for the program `bin`.
    content: fn(&str) -> Content,
    /// The agent's own rules for running a hook it found.
    pub rules: Rules,
}

impl Agent {
    /// What `hooks install` writes for this agent when agents are to run `bin`.
    pub fn content(&self, bin: &str) -> Content {
        (self.content)(bin)
    }

    /// The file `hooks install` writes in `scope`.
    pub fn path(&self, scope: &Scope) -> PathBuf {
        match scope {
            Scope::Workspace(dir) => dir.join(self.workspace_file),
            Scope::User(home) => home.join(self.user_file),
        }
    }

    /// Every file in `scope` the agent reads hooks from: the installed one first.
    pub fn files(&self, scope: &Scope) -> Vec<PathBuf> {
        let mut out = vec![self.path(scope)];
        if let Scope::Workspace(dir) = scope {
            out.extend(self.also_reads.iter().map(|f| dir.join(f)));
        }
        out
    }
}

/// The agent with this id.
pub fn agent(id: &str) -> Option<&'static Agent> {
    AGENTS.iter().find(|a| a.id == id)
}

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
    let bin = quote_bin(bin);
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(" {extra}")
    };
    format!("{bin} hook --agent {agent}{extra} {MARKER}")
}

/// `bin` as a command line starts with it: as is when it holds only plain characters,
/// else single-quoted for `sh`.
pub fn quote_bin(bin: &str) -> String {
    if !bin.is_empty()
        && bin
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+~".contains(c))
    {
        bin.to_owned()
    } else {
        format!("'{}'", bin.replace('\'', r"'\''"))
    }
}

/// The program a command line starting with `quoted` runs, when `quoted` is exactly what
/// [`quote_bin`] makes of some program (else `None`: not a command `hooks install` writes).
pub fn unquote_bin(quoted: &str) -> Option<String> {
    let bin = match quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')) {
        Some(inner) => inner.replace(r"'\''", "'"),
        None => quoted.to_owned(),
    };
    (quote_bin(&bin) == quoted).then_some(bin)
}

/// The target for `agent` in `scope`, or `None` for an agent `hooks install` does not know.
pub fn target(agent: &str, scope: &Scope, bin: &str) -> Option<Target> {
    let a = self::agent(agent)?;
    Some(Target {
        agent: a.id,
        path: a.path(scope),
        content: a.content(bin),
    })
}

/// Every agent `hooks install` knows.
pub const AGENTS: [Agent; 8] = [
    Agent {
        id: "claude",
        workspace_file: ".claude/settings.local.json",
        user_file: ".claude/settings.json",
        also_reads: &[".claude/settings.json"],
        content: claude,
        rules: Rules::Claude,
    },
    Agent {
        id: "codex",
        workspace_file: ".codex/hooks.json",
        user_file: ".codex/hooks.json",
        also_reads: &[],
        content: codex,
        rules: Rules::Codex,
    },
    Agent {
        id: "copilot",
        workspace_file: ".github/hooks/openfiles.json",
        user_file: ".copilot/hooks/openfiles.json",
        also_reads: &[],
        content: copilot,
        rules: Rules::None,
    },
    Agent {
        id: "gemini",
        workspace_file: ".gemini/settings.json",
        user_file: ".gemini/settings.json",
        also_reads: &[],
        content: gemini,
        rules: Rules::Gemini,
    },
    Agent {
        id: "qwen",
        workspace_file: ".qwen/settings.json",
        user_file: ".qwen/settings.json",
        also_reads: &[],
        content: qwen,
        rules: Rules::Qwen,
    },
    Agent {
        id: "cursor",
        workspace_file: ".cursor/hooks.json",
        user_file: ".cursor/hooks.json",
        also_reads: &[],
        content: cursor,
        rules: Rules::None,
    },
    Agent {
        id: "windsurf",
        workspace_file: ".windsurf/hooks.json",
        user_file: ".codeium/windsurf/hooks.json",
        also_reads: &[],
        content: windsurf,
        rules: Rules::None,
    },
    Agent {
        id: "opencode",
        workspace_file: ".opencode/plugins/openfiles.js",
        user_file: ".config/opencode/plugins/openfiles.js",
        also_reads: &[],
        content: opencode,
        rules: Rules::None,
    },
];

fn claude(bin: &str) -> Content {
    claude_shaped(bin, "claude", "Edit|Write|MultiEdit|NotebookEdit")
}

fn codex(bin: &str) -> Content {
    claude_shaped(bin, "codex", "apply_patch|Edit|Write")
}

/// Claude Code's hooks, whose shape Codex copies: a `PostToolUse` hook for the tools that
/// edit (`matcher`) and a `SessionStart` one.
fn claude_shaped(bin: &str, agent: &str, matcher: &str) -> Content {
    json_hooks(
        vec![
            JsonHook {
                event: "PostToolUse",
                entry: json!({
                    "matcher": matcher,
                    "hooks": [{"type": "command", "command": command(bin, agent, ""), "timeout": 15}]
                }),
            },
            JsonHook {
                event: "SessionStart",
                entry: json!({
                    "hooks": [{"type": "command", "command": command(bin, agent, SESSION_START), "timeout": 15}]
                }),
            },
        ],
        None,
    )
}

fn copilot(bin: &str) -> Content {
    json_hooks(
        vec![JsonHook {
            event: "postToolUse",
            entry: json!({"type": "command", "bash": command(bin, "copilot", ""), "timeoutSec": 15}),
        }],
        Some(1),
    )
}

fn gemini(bin: &str) -> Content {
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
    )
}

fn qwen(bin: &str) -> Content {
    json_hooks(
        vec![JsonHook {
            event: "PostToolUse",
            entry: json!({
                "matcher": "write_file|edit",
                "hooks": [{"type": "command", "command": command(bin, "qwen", ""), "name": "openfiles", "timeout": 15}]
            }),
        }],
        None,
    )
}

fn cursor(bin: &str) -> Content {
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
    )
}

fn windsurf(bin: &str) -> Content {
    json_hooks(
        vec![JsonHook {
            event: "post_write_code",
            entry: json!({"command": command(bin, "windsurf", "--no-feedback"), "show_output": false}),
        }],
        None,
    )
}

fn opencode(bin: &str) -> Content {
    Content::OwnFile(opencode_plugin(bin))
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
