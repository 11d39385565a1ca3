//! `openfiles hooks install|uninstall|status --mcp`: each agent's MCP configuration, so it
//! starts `openfiles mcp` (the same options, scopes and care as the hooks).
//!
//! | agent | workspace file | user file | where the server goes |
//! |---|---|---|---|
//! | claude | `.mcp.json` | `~/.claude.json` | `mcpServers.openfiles` |
//! | codex | `.codex/config.toml` | `~/.codex/config.toml` | `[mcp_servers.openfiles]` |
//! | gemini | `.gemini/settings.json` | `~/.gemini/settings.json` | `mcpServers.openfiles` |
//! | qwen | `.qwen/settings.json` | `~/.qwen/settings.json` | `mcpServers.openfiles` |
//! | cursor | `.cursor/mcp.json` | `~/.cursor/mcp.json` | `mcpServers.openfiles` |
//! | opencode | `opencode.json` | `~/.config/opencode/opencode.json` | `mcp.openfiles` (local) |
//! | copilot | `.vscode/mcp.json` | — | `servers.openfiles` (stdio) |
//!
//! The command is the one the hooks write (`--bin` as [`resolve_bin`] resolves it:
//! `openfiles` when that name on `PATH` is this program, else its absolute path), with
//! `mcp --tag openfiles-mcp`: the tag is how uninstall and status
//! recognise our entry. Other servers and settings keep their values and order, JSON files
//! their layout (the hooks' `JsonStyle`), TOML its comments (`toml_edit`); every change is shown as a diff before it is
//! written; installing twice changes nothing; uninstall removes only our entry (and the
//! file, when nothing else is left). A file that does not parse is never touched.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::{json, Value};

#[cfg(doc)]
use super::resolve_bin;
use super::{say_and_write, Action, JsonStyle, Scope, Verbs};

/// In the arguments of every server entry we write; `openfiles mcp` ignores it.
pub const TAG: &str = "openfiles-mcp";
/// Agents whose MCP configuration we know.
pub const SUPPORTED: &[&str] = &[
    "claude", "codex", "gemini", "qwen", "cursor", "opencode", "copilot",
];

#[derive(Debug, Clone)]
enum Format {
    /// A JSON file; our entry lives under these keys.
    Json {
        at: &'static [&'static str],
        entry: Value,
    },
    /// Codex's TOML: `[mcp_servers.openfiles]` running `bin`.
    Toml { bin: String },
}

#[derive(Debug, Clone)]
struct Target {
    agent: &'static str,
    path: PathBuf,
    format: Format,
}

fn target(agent: &str, scope: &Scope, bin: &Path) -> Option<Target> {
    let (base, user) = match scope {
        Scope::Workspace(d) => (d.as_path(), false),
        Scope::User(h) => (h.as_path(), true),
    };
    let at = |ws: &str, usr: &str| base.join(if user { usr } else { ws });
    let cmd = bin.display().to_string();
    let args = json!(["mcp", "--tag", TAG]);
    let plain = json!({"command": cmd, "args": args});
    let (agent, path, format) = match agent {
        "claude" => (
            "claude",
            at(".mcp.json", ".claude.json"),
            Format::Json {
                at: &["mcpServers"],
                entry: json!({"type": "stdio", "command": cmd, "args": args}),
            },
        ),
        "codex" => (
            "codex",
            at(".codex/config.toml", ".codex/config.toml"),
            Format::Toml { bin: cmd.clone() },
        ),
        "gemini" => (
            "gemini",
            at(".gemini/settings.json", ".gemini/settings.json"),
            Format::Json {
                at: &["mcpServers"],
                entry: plain,
            },
        ),
        "qwen" => (
            "qwen",
            at(".qwen/settings.json", ".qwen/settings.json"),
            Format::Json {
                at: &["mcpServers"],
                entry: plain.clone(),
            },
        ),
        "cursor" => (
            "cursor",
            at(".cursor/mcp.json", ".cursor/mcp.json"),
            Format::Json {
                at: &["mcpServers"],
                entry: plain,
            },
        ),
        "opencode" => (
            "opencode",
            at("opencode.json", ".config/opencode/opencode.json"),
            Format::Json {
                at: &["mcp"],
                entry: json!({"type": "local", "command": [cmd, "mcp", "--tag", TAG], "enabled": true}),
            },
        ),
        "copilot" | "vscode" if !user => (
            "copilot",
            base.join(".vscode/mcp.json"),
            Format::Json {
                at: &["servers"],
                entry: json!({"type": "stdio", "command": cmd, "args": args}),
            },
        ),
        _ => return None,
    };
    Some(Target {
        agent,
        path,
        format,
    })
}

fn targets(
    agents: &[String],
    scope: &Scope,
    bin: &Path,
    require: bool,
) -> anyhow::Result<Vec<Target>> {
    let ids: Vec<String> = if agents.is_empty() {
        if require {
            bail!(
                "name at least one agent with --agent ({})",
                SUPPORTED.join(", ")
            );
        }
        SUPPORTED.iter().map(|s| s.to_string()).collect()
    } else {
        agents
            .iter()
            .flat_map(|a| a.split(','))
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    };
    let mut out: Vec<Target> = Vec::new();
    for id in &ids {
        match target(id, scope, bin) {
            Some(t) if !out.iter().any(|o| o.agent == t.agent) => out.push(t),
            Some(_) => {}
            None if !require && matches!(scope, Scope::User(_)) && (id == "copilot" || id == "vscode") => {}
            None => bail!(
                "no MCP configuration known for `{id}` here (known: {}; copilot only per workspace)",
                SUPPORTED.join(", ")
            ),
        }
    }
    Ok(out)
}

fn ours(entry: &Value) -> bool {
    let has_tag = |v: &Value| v.as_array().is_some_and(|a| a.iter().any(|x| x == TAG));
    has_tag(&entry["args"]) || has_tag(&entry["command"])
}

/// The file's new text (`None`: delete it).
fn planned(action: Action, t: &Target, old: Option<&str>) -> anyhow::Result<Option<String>> {
    let bad = || {
        format!(
            "{} does not parse; fix or move it, then run this again (nothing was changed)",
            t.path.display()
        )
    };
    match &t.format {
        Format::Json { at, entry } => {
            let mut doc: Value = match old {
                Some(text) if !text.trim().is_empty() => {
                    serde_json::from_str(text).with_context(bad)?
                }
                _ if action == Action::Uninstall => return Ok(old.map(str::to_owned)),
                _ => json!({}),
            };
            if !doc.is_object() {
                bail!("{}", bad());
            }
            let mut node = &mut doc;
            for key in at.iter() {
                if !node[*key].is_object() {
                    if action == Action::Uninstall {
                        return Ok(old.map(str::to_owned));
                    }
                    node[*key] = json!({});
                }
                node = &mut node[*key];
            }
            let servers = node.as_object_mut().with_context(bad)?;
            match action {
                Action::Install => {
                    if servers.get("openfiles") == Some(entry) {
                        return Ok(old.map(str::to_owned));
                    }
                    if servers.get("openfiles").is_some_and(|e| !ours(e)) {
                        bail!("{}: an `openfiles` MCP server not written by us is already configured; remove it first", t.path.display());
                    }
                    servers.insert("openfiles".into(), entry.clone());
                }
                Action::Uninstall => {
                    if !servers.get("openfiles").is_some_and(ours) {
                        return Ok(old.map(str::to_owned));
                    }
                    servers.remove("openfiles");
                    let empty_parent = servers.is_empty();
                    if empty_parent {
                        if let (Some(obj), [key]) = (doc.as_object_mut(), *at) {
                            obj.remove(*key);
                        }
                    }
                    if doc.as_object().is_some_and(|o| o.is_empty()) {
                        return Ok(None);
                    }
                }
            }
            // The file keeps its layout, so uninstall gives back the bytes install found.
            Ok(Some(JsonStyle::of(old).render(&doc)?))
        }
        Format::Toml { bin } => toml_planned(action, t, bin, old),
    }
}

fn toml_planned(
    action: Action,
    t: &Target,
    bin: &str,
    old: Option<&str>,
) -> anyhow::Result<Option<String>> {
    use toml_edit::{value, Array, DocumentMut, Item, Table};
    let bad = || {
        format!(
            "{} is not valid TOML; fix or move it, then run this again (nothing was changed)",
            t.path.display()
        )
    };
    let mut doc: DocumentMut = old.unwrap_or("").parse().with_context(bad)?;
    let is_ours = |tbl: &Table| {
        tbl.get("args")
            .and_then(Item::as_array)
            .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(TAG)))
    };
    match action {
        Action::Install => {
            let servers = doc
                .entry("mcp_servers")
                .or_insert_with(|| {
                    let mut t = Table::new();
                    t.set_implicit(true);
                    Item::Table(t)
                })
                .as_table_mut()
                .with_context(bad)?;
            let mut args = Array::new();
            for a in ["mcp", "--tag", TAG] {
                args.push(a);
            }
            if let Some(existing) = servers.get("openfiles").and_then(Item::as_table) {
                if !is_ours(existing) {
                    bail!("{}: an `openfiles` MCP server not written by us is already configured; remove it first", t.path.display());
                }
                if existing.get("command").and_then(Item::as_str) == Some(bin) {
                    return Ok(old.map(str::to_owned));
                }
            }
            let mut entry = Table::new();
            entry.insert("command", value(bin));
            entry.insert("args", value(args));
            servers.insert("openfiles", Item::Table(entry));
        }
        Action::Uninstall => {
            let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_mut) else {
                return Ok(old.map(str::to_owned));
            };
            if !servers
                .get("openfiles")
                .and_then(Item::as_table)
                .is_some_and(is_ours)
            {
                return Ok(old.map(str::to_owned));
            }
            servers.remove("openfiles");
            if servers.is_empty() {
                doc.remove("mcp_servers");
            }
            if doc.as_table().is_empty() && doc.to_string().trim().is_empty() {
                return Ok(None);
            }
        }
    }
    Ok(Some(doc.to_string()))
}

/// Install or uninstall; prints each change as a diff, writes unless `dry_run`.
pub fn apply(
    action: Action,
    agents: &[String],
    scope: &Scope,
    bin: &str,
    dry_run: bool,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    let bin = PathBuf::from(bin);
    let verbs = Verbs::of(
        action,
        [
            "MCP server already configured",
            "add the openfiles MCP server",
        ],
        [
            "no MCP server of ours",
            "remove the openfiles MCP server",
            "remove the openfiles MCP server (delete file)",
        ],
    );
    for t in targets(agents, scope, &bin, action == Action::Install)? {
        let old = super::read_in(scope, &t.path)?;
        let new = planned(action, &t, old.as_deref())?;
        let (old, new) = (old.as_deref(), new.as_deref());
        say_and_write(out, t.agent, &t.path, old, new, &verbs, dry_run)?;
    }
    if dry_run {
        writeln!(out, "(dry run: nothing written)")?;
    }
    Ok(0)
}

/// Which agents have our MCP server configured, in the workspace and for the user.
pub fn status(agents: &[String], scope: &Scope, out: &mut dyn Write) -> anyhow::Result<u8> {
    let mut scopes = vec![scope.clone()];
    if let (Scope::Workspace(_), Some(home)) = (scope, super::agents::home()) {
        scopes.push(Scope::User(home));
    }
    for scope in &scopes {
        match scope {
            Scope::Workspace(d) => writeln!(out, "workspace {}:", d.display())?,
            Scope::User(_) => writeln!(out, "user:")?,
        }
        for t in targets(agents, scope, Path::new("openfiles"), false)? {
            let state = match super::read_in(scope, &t.path) {
                Ok(None) => "no file".to_owned(),
                Err(e) => format!("unreadable: {e:#}"),
                Ok(Some(text)) if text.contains(TAG) => "configured".to_owned(),
                Ok(Some(_)) => "not configured".to_owned(),
            };
            writeln!(out, "  {:<9} {:<16} {}", t.agent, state, t.path.display())?;
        }
    }
    Ok(0)
}
