//! Codex's hook trust: Codex runs a hook from a `hooks.json` only when the user trusted that
//! exact hook. Its `/hooks` screen records the trust in Codex's own configuration
//! (`$CODEX_HOME/config.toml`, default `~/.codex/config.toml`) as
//!
//! ```toml
//! [hooks.state."/abs/path/.codex/hooks.json:post_tool_use:0:0"]
//! trusted_hash = "sha256:…"
//! ```
//!
//! The key is the hooks file's absolute path, the event's snake-case label, the matcher
//! group's index and the handler's index in it; the hash is SHA-256 over the compact JSON,
//! keys sorted, of the hook's normalized identity: `event_name`, `matcher` (left out when
//! absent) and `hooks` holding only this handler as `{async, command, statusMessage?,
//! timeout, type: "command"}` with the timeout defaulted to 600 s. A hook whose hash no
//! longer matches is "modified" and skipped, like an untrusted one. (Codex 0.171; the test
//! `codex_trust_matches_the_real_codex` asks the real `codex app-server` for its view.)
//!
//! `hooks install --agent codex` records this for our entries only (the user asked for the
//! hook by running install); `hooks uninstall` removes exactly those records, and only while
//! they still hold our hash. A project's `.codex/` is loaded at all only once the project is
//! trusted (`[projects."DIR"] trust_level = "trusted"`): that is the user's call, we only
//! report it. Pure functions over texts; `mod.rs` does the writing.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use toml_edit::{DocumentMut, Item, Table};

use super::MARKER;

/// One hook of ours in a Codex hooks file: the state key and the hash Codex computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub hash: String,
}

/// Codex's view of one hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    Trusted,
    /// Trusted once, changed since: Codex skips it.
    Modified,
    Untrusted,
}

/// `$CODEX_HOME`, else `home/.codex`.
pub fn codex_home(home: &Path) -> PathBuf {
    match std::env::var_os("CODEX_HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => home.join(".codex"),
    }
}

/// Codex's configuration file, where trust is recorded.
pub fn config_path(home: &Path) -> PathBuf {
    codex_home(home).join("config.toml")
}

// Field order is the sorted key order: the hash is over sorted keys.
#[derive(Serialize)]
struct Identity<'a> {
    event_name: &'a str,
    hooks: [Handler<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    matcher: Option<&'a str>,
}

#[derive(Serialize)]
struct Handler<'a> {
    r#async: bool,
    command: &'a str,
    #[serde(rename = "statusMessage", skip_serializing_if = "Option::is_none")]
    status_message: Option<&'a str>,
    timeout: u64,
    r#type: &'static str,
}

/// `PostToolUse` → `post_tool_use`.
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The hash Codex computes for one command handler.
pub fn hash(event: &str, matcher: Option<&str>, handler: &Value) -> Option<String> {
    let command = handler.get("command")?.as_str()?;
    let timeout = handler
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(600)
        .max(1);
    let identity = Identity {
        event_name: &snake(event),
        hooks: [Handler {
            r#async: handler
                .get("async")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            command,
            status_message: handler.get("statusMessage").and_then(Value::as_str),
            timeout,
            r#type: "command",
        }],
        matcher,
    };
    let json = serde_json::to_vec(&identity).ok()?;
    let digest = Sha256::digest(&json);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("sha256:{hex}"))
}

/// Our hooks (command carrying [`MARKER`]) in the Codex hooks file at `path` with `text`.
pub fn our_entries(path: &Path, text: &str) -> Vec<Entry> {
    let Ok(doc) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(Value::Object(events)) = doc.get("hooks") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (event, groups) in events {
        let Some(groups) = groups.as_array() else {
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let Some(handlers) = group.get("hooks").and_then(Value::as_array) else {
                continue;
            };
            for (h, handler) in handlers.iter().enumerate() {
                let ours = handler.get("type").and_then(Value::as_str) == Some("command")
                    && handler
                        .get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| c.contains(MARKER));
                if !ours {
                    continue;
                }
                if let Some(hash) = hash(event, matcher, handler) {
                    out.push(Entry {
                        key: format!("{}:{}:{g}:{h}", path.display(), snake(event)),
                        hash,
                    });
                }
            }
        }
    }
    out
}

fn parse(config: Option<&str>, path: &Path) -> anyhow::Result<DocumentMut> {
    config.unwrap_or("").parse().with_context(|| {
        format!(
            "{} is not valid TOML; fix or move it, then run this again (nothing was changed)",
            path.display()
        )
    })
}

fn state_table(doc: &DocumentMut) -> Option<&Table> {
    doc.get("hooks")?.as_table()?.get("state")?.as_table()
}

/// Codex's trust in each entry, from its configuration text.
pub fn trust(config: Option<&str>, entries: &[Entry]) -> Vec<Trust> {
    let doc: Option<DocumentMut> = config.and_then(|c| c.parse().ok());
    entries
        .iter()
        .map(|e| {
            let recorded = doc
                .as_ref()
                .and_then(state_table)
                .and_then(|s| s.get(&e.key))
                .and_then(|t| t.get("trusted_hash"))
                .and_then(Item::as_str);
            match recorded {
                Some(h) if h == e.hash => Trust::Trusted,
                Some(_) => Trust::Modified,
                None => Trust::Untrusted,
            }
        })
        .collect()
}

/// The configuration's new text with `entries` trusted (`None`: unchanged).
pub fn trusted(
    config: Option<&str>,
    path: &Path,
    entries: &[Entry],
) -> anyhow::Result<Option<String>> {
    let mut doc = parse(config, path)?;
    let mut changed = false;
    for e in entries {
        let hooks = doc
            .entry("hooks")
            .or_insert_with(implicit)
            .as_table_mut()
            .with_context(|| format!("{}: `hooks` is not a table", path.display()))?;
        let state = hooks
            .entry("state")
            .or_insert_with(implicit)
            .as_table_mut()
            .with_context(|| format!("{}: `hooks.state` is not a table", path.display()))?;
        let slot = state
            .entry(&e.key)
            .or_insert_with(|| Item::Table(Table::new()))
            .as_table_mut()
            .with_context(|| {
                format!(
                    "{}: `hooks.state.\"{}\"` is not a table",
                    path.display(),
                    e.key
                )
            })?;
        if slot.get("trusted_hash").and_then(Item::as_str) != Some(e.hash.as_str()) {
            slot.insert("trusted_hash", toml_edit::value(e.hash.clone()));
            changed = true;
        }
    }
    Ok(changed.then(|| doc.to_string()))
}

/// The configuration's new text without our trust records (`None`: unchanged). A record
/// is ours when its key is one of `entries` and it holds that entry's hash; other fields
/// the user set there (`enabled`) stay.
pub fn untrusted(
    config: Option<&str>,
    path: &Path,
    entries: &[Entry],
) -> anyhow::Result<Option<String>> {
    let Some(text) = config else {
        return Ok(None);
    };
    let mut doc = parse(Some(text), path)?;
    let mut changed = false;
    if let Some(state) = doc
        .get_mut("hooks")
        .and_then(Item::as_table_mut)
        .and_then(|h| h.get_mut("state"))
        .and_then(Item::as_table_mut)
    {
        for e in entries {
            let Some(slot) = state.get_mut(&e.key).and_then(Item::as_table_mut) else {
                continue;
            };
            if slot.get("trusted_hash").and_then(Item::as_str) != Some(e.hash.as_str()) {
                continue;
            }
            slot.remove("trusted_hash");
            changed = true;
            if slot.is_empty() {
                state.remove(&e.key);
            }
        }
        let state_empty = state.is_empty();
        if changed && state_empty {
            if let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_mut) {
                hooks.remove("state");
                if hooks.is_empty() {
                    doc.remove("hooks");
                }
            }
        }
    }
    Ok(changed.then(|| doc.to_string()))
}

fn implicit() -> Item {
    let mut t = Table::new();
    t.set_implicit(true);
    Item::Table(t)
}

/// Whether Codex trusts the project at `dir` (it or a folder above it marked
/// `trust_level = "trusted"` under `[projects]`); `Some(false)` when marked untrusted.
pub fn project_trusted(config: Option<&str>, dir: &Path) -> Option<bool> {
    let doc: DocumentMut = config?.parse().ok()?;
    let projects = doc.get("projects")?.as_table()?;
    for d in dir.ancestors() {
        let level = projects
            .get(&d.to_string_lossy())
            .and_then(|p| p.get("trust_level"))
            .and_then(Item::as_str);
        match level {
            Some("trusted") => return Some(true),
            Some("untrusted") => return Some(false),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The hash the real Codex 0.171 reports (`hooks/list`'s `currentHash`) for our entry.
    #[test]
    fn hash_matches_codex_for_our_entry() {
        let handler = json!({"type": "command", "command": "openfiles hook --agent codex --tag openfiles-hook", "timeout": 15});
        assert_eq!(
            hash("PostToolUse", Some("apply_patch|Edit|Write"), &handler).unwrap(),
            "sha256:8c562570ebb5eba49b2d94f5a1bcec7206a6af57264bbf737d54bc63f02a43d8"
        );
    }

    #[test]
    fn trust_then_untrust_gives_back_the_file() {
        let text = r#"{"hooks":{"PostToolUse":[{"matcher":"x","hooks":[{"type":"command","command":"mine"}]},{"matcher":"apply_patch|Edit|Write","hooks":[{"type":"command","command":"openfiles hook --agent codex --tag openfiles-hook","timeout":15}]}]}}"#;
        let path = Path::new("/w/.codex/hooks.json");
        let entries = our_entries(path, text);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].key, "/w/.codex/hooks.json:post_tool_use:1:0");
        let config = "model = \"m\"\n\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n";
        let cfg = Path::new("/h/.codex/config.toml");
        let after = trusted(Some(config), cfg, &entries).unwrap().unwrap();
        assert!(
            after.contains("[hooks.state.\"/w/.codex/hooks.json:post_tool_use:1:0\"]"),
            "{after}"
        );
        assert_eq!(trust(Some(&after), &entries), vec![Trust::Trusted]);
        assert_eq!(trusted(Some(&after), cfg, &entries).unwrap(), None);
        assert_eq!(
            project_trusted(Some(&after), Path::new("/w/sub")),
            Some(true)
        );
        let back = untrusted(Some(&after), cfg, &entries).unwrap().unwrap();
        assert_eq!(back, config);
        assert_eq!(trust(Some(config), &entries), vec![Trust::Untrusted]);
        // A record holding another hash is the user's: never removed.
        let other = after.replace(&entries[0].hash, "sha256:00");
        assert_eq!(trust(Some(&other), &entries), vec![Trust::Modified]);
        assert_eq!(untrusted(Some(&other), cfg, &entries).unwrap(), None);
    }
}
