//! Turning an agent's hook payload (stdin JSON) into the list of edited paths.
//!
//! The rules are `agent-hooks.md`'s, the same for every agent, so this module never asks
//! which agent sent the payload:
//! - working directory: `cwd`, else `workspace_root`, else the first of `workspace_roots`;
//! - tool name: `tool_name`, `toolName`, `tool_info.tool_name`, `tool`; when present and not
//!   write-like (`edit|write|create|replace|patch|insert|notebook|rename|move`, any case),
//!   there are no paths;
//! - paths come from the payload itself and its `tool_input`, `toolArgs` (a JSON string in
//!   Copilot's payloads), `tool_info`, `input` and `args` objects: single-path keys, list keys
//!   and patch text (`command`, `patch`, `patchText` (OpenCode), `input`: `*** Begin Patch` blocks or unified-diff `+++ ` lines); a nested value
//!   that is a JSON object encoded as a string is decoded first;
//! - values with a newline or of 4096+ characters are dropped, relative paths resolve against
//!   the working directory when there is one, duplicates are removed (first order kept).
//!
//! Pure: no I/O, no environment. Anything that is not a JSON object yields nothing.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Keys that hold one path.
const SINGLE_KEYS: &[&str] = &[
    "file_path",
    "filePath",
    "path",
    "absolute_path",
    "absolutePath",
    "target_file",
    "targetFile",
    "notebook_path",
    "new_path",
    "newPath",
    "destination",
];
/// Keys that hold a list of paths (strings, or objects with `path` / `file_path`).
const LIST_KEYS: &[&str] = &["file_paths", "filePaths", "paths", "files"];
/// Keys that may hold patch text.
const PATCH_KEYS: &[&str] = &["command", "patch", "patchText", "input"];
/// Nested objects searched after the payload itself, in this order.
const NESTED_KEYS: &[&str] = &["tool_input", "toolArgs", "tool_info", "input", "args"];
/// Tool names that look like writes (matched as lowercase substrings).
const WRITE_WORDS: &[&str] = &[
    "edit", "write", "create", "replace", "patch", "insert", "notebook", "rename", "move",
];
/// Session ids longer than this (in characters) are dropped.
pub const MAX_SESSION_CHARS: usize = 200;
/// Path values this long (in characters) or longer are dropped.
const MAX_PATH_CHARS: usize = 4096;

/// What the hook needs from a payload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Edited paths, absolute when the payload gave a working directory or an absolute path.
    pub paths: Vec<PathBuf>,
    /// The payload's working directory, if any.
    pub cwd: Option<PathBuf>,
    /// The tool name, if any.
    pub tool: Option<String>,
    /// `hook_event_name`, if any.
    pub event: Option<String>,
    /// The agent's session id (`session_id`, `sessionId`), if any: at most
    /// [`MAX_SESSION_CHARS`] characters, no control characters.
    pub session: Option<String>,
    /// Why the input was not a payload at all (not JSON, not an object), for `--verbose`.
    pub invalid: Option<String>,
}

/// Parse raw stdin bytes. Empty input means `{}`; anything that is not a JSON object
/// parses to an empty result.
pub fn parse_bytes(input: &[u8]) -> Parsed {
    let trimmed = input.trim_ascii();
    if trimmed.is_empty() {
        return Parsed::default();
    }
    match serde_json::from_slice::<Value>(trimmed) {
        Ok(Value::Object(map)) => parse(&map),
        Ok(other) => Parsed {
            invalid: Some(format!(
                "the payload is JSON but not an object (it starts with {})",
                other.to_string().chars().take(20).collect::<String>()
            )),
            ..Parsed::default()
        },
        Err(e) => Parsed {
            invalid: Some(format!("the payload on stdin is not JSON ({e})")),
            ..Parsed::default()
        },
    }
}

/// Parse a payload object.
pub fn parse(payload: &Map<String, Value>) -> Parsed {
    let cwd = working_dir(payload);
    let tool = tool_name(payload);
    let event = payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let session = ["session_id", "sessionId"]
        .iter()
        .find_map(|k| payload.get(*k).and_then(Value::as_str))
        .filter(|s| {
            !s.is_empty()
                && s.chars().count() <= MAX_SESSION_CHARS
                && !s.chars().any(char::is_control)
        })
        .map(str::to_owned);
    let mut parsed = Parsed {
        paths: Vec::new(),
        cwd,
        tool,
        event,
        session,
        invalid: None,
    };
    if let Some(tool) = &parsed.tool {
        if !looks_like_write(tool) {
            return parsed;
        }
    }
    let mut raw: Vec<String> = Vec::new();
    collect(payload, &mut raw);
    for key in NESTED_KEYS {
        match payload.get(*key) {
            Some(Value::Object(obj)) => collect(obj, &mut raw),
            // Copilot sends `toolArgs` as a JSON string; any nested key may come that way.
            Some(Value::String(s)) if s.trim_start().starts_with('{') => {
                if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(s) {
                    collect(&obj, &mut raw);
                }
            }
            _ => {}
        }
    }
    // First occurrence wins, in payload order; a set keeps this linear (a patch naming
    // 80 000 files used to take minutes here).
    let mut seen = std::collections::HashSet::new();
    for value in raw {
        if value.is_empty() || value.contains('\n') || value.chars().count() >= MAX_PATH_CHARS {
            continue;
        }
        let path = resolve(Path::new(&value), parsed.cwd.as_deref());
        if seen.insert(path.clone()) {
            parsed.paths.push(path);
        }
    }
    parsed
}

/// True when `tool` looks like a tool that writes files.
pub fn looks_like_write(tool: &str) -> bool {
    let lower = tool.to_ascii_lowercase();
    WRITE_WORDS.iter().any(|w| lower.contains(w))
}

fn working_dir(payload: &Map<String, Value>) -> Option<PathBuf> {
    let pick = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|s| !s.is_empty() && !s.contains('\n'))
            .map(PathBuf::from)
    };
    pick(payload.get("cwd"))
        .or_else(|| pick(payload.get("workspace_root")))
        .or_else(|| pick(payload.get("workspace_roots").and_then(|v| v.get(0))))
}

fn tool_name(payload: &Map<String, Value>) -> Option<String> {
    // An empty name counts as absent, as it does for the editor's hook.js.
    let s = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    };
    s(payload.get("tool_name"))
        .or_else(|| s(payload.get("toolName")))
        .or_else(|| s(payload.get("tool_info").and_then(|t| t.get("tool_name"))))
        .or_else(|| s(payload.get("tool")))
}

/// Gather candidate path strings from one object, in key order.
fn collect(obj: &Map<String, Value>, out: &mut Vec<String>) {
    for key in SINGLE_KEYS {
        if let Some(Value::String(s)) = obj.get(*key) {
            out.push(s.clone());
        }
    }
    for key in LIST_KEYS {
        if let Some(Value::Array(items)) = obj.get(*key) {
            for item in items {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    Value::Object(o) => {
                        if let Some(s) = o
                            .get("path")
                            .or_else(|| o.get("file_path"))
                            .and_then(Value::as_str)
                        {
                            out.push(s.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    for key in PATCH_KEYS {
        match obj.get(*key) {
            Some(Value::String(text)) => patch_targets(text, out),
            // Codex's shell tool sends `command` as argv: `["apply_patch", "*** Begin Patch…"]`.
            Some(Value::Array(parts)) => {
                for part in parts.iter().filter_map(Value::as_str) {
                    patch_targets(part, out);
                }
            }
            _ => {}
        }
    }
}

/// Targets of an apply_patch block (`*** Add File:`, `*** Update File:`, `*** Move to:`) or
/// of a unified diff (`+++ b/X`, `+++ X`, not `/dev/null`). Deleted files are not edits.
/// Text that is neither is ignored.
pub fn patch_targets(text: &str, out: &mut Vec<String>) {
    if text.contains("*** Begin Patch") {
        // In this format an added line starting with `++` reads `+++ …`: not a header.
        for line in text.lines() {
            let line = line.trim_end_matches('\r');
            for marker in ["*** Add File:", "*** Update File:", "*** Move to:"] {
                if let Some(rest) = line.strip_prefix(marker) {
                    let target = rest.trim();
                    if !target.is_empty() {
                        out.push(target.to_owned());
                    }
                }
            }
        }
        return;
    }
    for line in text.lines() {
        let Some(rest) = line.trim_end_matches('\r').strip_prefix("+++ ") else {
            continue;
        };
        // `+++ b/file<TAB>timestamp` in diff -u output.
        let target = rest.split('\t').next().unwrap_or("").trim();
        if target.is_empty() || target == "/dev/null" {
            continue;
        }
        let target = target.strip_prefix("b/").unwrap_or(target);
        out.push(target.to_owned());
    }
}

fn resolve(path: &Path, cwd: Option<&Path>) -> PathBuf {
    match cwd {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_that_is_no_payload_says_why() {
        assert!(parse_bytes(b"{oops").invalid.unwrap().contains("not JSON"));
        assert!(parse_bytes(b"[1]")
            .invalid
            .unwrap()
            .contains("not an object"));
        assert!(parse_bytes(b"").invalid.is_none());
        assert!(parse_bytes(br#"{"tool_name":"Edit"}"#).invalid.is_none());
    }

    #[test]
    fn patch_text_with_neither_marker_is_ignored() {
        let mut out = Vec::new();
        patch_targets("ls -la\n", &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn unified_diff_timestamps_and_dev_null() {
        let mut out = Vec::new();
        patch_targets(
            "--- a/x.rs\n+++ b/x.rs\t2024-01-01\n--- a/gone.rs\n+++ /dev/null\n+++ plain.rs\n",
            &mut out,
        );
        assert_eq!(out, vec!["x.rs".to_string(), "plain.rs".to_string()]);
    }
}
