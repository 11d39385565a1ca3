//! Agent ids and the one JSON line each agent wants on stdout (`agent-hooks.md`, "Output").
//!
//! | agent                            | output                                                        |
//! |----------------------------------|---------------------------------------------------------------|
//! | gemini                           | `{"hookSpecificOutput":{"hookEventName":"AfterTool","additionalContext":T}}` |
//! | cursor                           | `{"additional_context":T}`                                    |
//! | copilot, vscode                  | `{"additionalContext":T,"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":T}}` |
//! | claude, codex, qwen, kimi, droid, opencode (read by its plugin) | `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":T}}` |
//! | everyone else                    | nothing                                                       |
//!
//! Key order is part of the shape; the structs below fix it whatever serde_json's map does.

use serde::Serialize;

/// Every agent id the hook knows; anything else is [`Agent::Unknown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Claude,
    Codex,
    Copilot,
    Vscode,
    Gemini,
    Qwen,
    Kimi,
    Cursor,
    Windsurf,
    Kiro,
    Cline,
    Droid,
    Goose,
    Opencode,
    Unknown,
}

/// All ids, in the order `agent-hooks.md` lists them.
pub const AGENT_IDS: &[&str] = &[
    "claude", "codex", "copilot", "vscode", "gemini", "qwen", "kimi", "cursor", "windsurf", "kiro",
    "cline", "droid", "goose", "opencode", "unknown",
];

impl Agent {
    /// Parse an id; a missing or unknown id is `Unknown`.
    pub fn from_id(id: Option<&str>) -> Agent {
        match id.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
            Some("claude") => Agent::Claude,
            Some("codex") => Agent::Codex,
            Some("copilot") => Agent::Copilot,
            Some("vscode") => Agent::Vscode,
            Some("gemini") => Agent::Gemini,
            Some("qwen") => Agent::Qwen,
            Some("kimi") => Agent::Kimi,
            Some("cursor") => Agent::Cursor,
            Some("windsurf") => Agent::Windsurf,
            Some("kiro") => Agent::Kiro,
            Some("cline") => Agent::Cline,
            Some("droid") => Agent::Droid,
            Some("goose") => Agent::Goose,
            Some("opencode") => Agent::Opencode,
            _ => Agent::Unknown,
        }
    }

    /// The id as written in queue lines and `edited` requests.
    pub fn id(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
            Agent::Vscode => "vscode",
            Agent::Gemini => "gemini",
            Agent::Qwen => "qwen",
            Agent::Kimi => "kimi",
            Agent::Cursor => "cursor",
            Agent::Windsurf => "windsurf",
            Agent::Kiro => "kiro",
            Agent::Cline => "cline",
            Agent::Droid => "droid",
            Agent::Goose => "goose",
            Agent::Opencode => "opencode",
            Agent::Unknown => "unknown",
        }
    }

    /// Whether the hook should wait for diagnostics and print feedback for this call.
    /// Agents with no output format never wait, nor does Cursor's `afterFileEdit`.
    pub fn wants_feedback(self, event: Option<&str>) -> bool {
        if self == Agent::Cursor && event.is_some_and(|e| e.eq_ignore_ascii_case("afterFileEdit")) {
            return false;
        }
        render(self, "x").is_some()
    }
}

#[derive(Serialize)]
struct Specific<'a> {
    #[serde(rename = "hookEventName")]
    hook_event_name: &'a str,
    #[serde(rename = "additionalContext")]
    additional_context: &'a str,
}

#[derive(Serialize)]
struct SpecificOnly<'a> {
    #[serde(rename = "hookSpecificOutput")]
    hook_specific_output: Specific<'a>,
}

#[derive(Serialize)]
struct CursorOut<'a> {
    additional_context: &'a str,
}

#[derive(Serialize)]
struct CopilotOut<'a> {
    #[serde(rename = "additionalContext")]
    additional_context: &'a str,
    #[serde(rename = "hookSpecificOutput")]
    hook_specific_output: Specific<'a>,
}

/// The JSON line (without newline) that hands `text` to `agent`, or `None` for agents
/// that take no feedback.
pub fn render(agent: Agent, text: &str) -> Option<String> {
    let specific = |event| Specific {
        hook_event_name: event,
        additional_context: text,
    };
    let json = match agent {
        Agent::Gemini => serde_json::to_string(&SpecificOnly {
            hook_specific_output: specific("AfterTool"),
        }),
        Agent::Cursor => serde_json::to_string(&CursorOut {
            additional_context: text,
        }),
        Agent::Copilot | Agent::Vscode => serde_json::to_string(&CopilotOut {
            additional_context: text,
            hook_specific_output: specific("PostToolUse"),
        }),
        // OpenCode: its plugin reads this line and appends the text to the tool's output.
        Agent::Claude
        | Agent::Codex
        | Agent::Qwen
        | Agent::Kimi
        | Agent::Droid
        | Agent::Opencode => serde_json::to_string(&SpecificOnly {
            hook_specific_output: specific("PostToolUse"),
        }),
        Agent::Windsurf | Agent::Kiro | Agent::Cline | Agent::Goose | Agent::Unknown => {
            return None
        }
    };
    json.ok()
}
