//! The agents' own rules for running a hook they found, as data over texts: Claude Code's
//! `disableAllHooks` and managed-only hooks, Codex's project and per-hook trust
//! ([`super::codex_trust`]), Gemini CLI's and Qwen Code's folder trust
//! (`contrib/hooks/README.md`). Each rule names the files it reads ([`Rules::files`]); the
//! caller reads them (bounded, no symlink followed where a repository supplies them) and
//! hands their texts to [`Rules::skips`], which reads nothing itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Which agent's rules apply (a field of the agent table, [`super::agents::AGENTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rules {
    /// The agent runs every hook it finds.
    None,
    Claude,
    Codex,
    Gemini,
    Qwen,
}

/// Why the agent will not run a hook, and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub why: String,
    pub hint: String,
}

/// What a rule looks at: the hooks file and the texts of the files [`Rules::files`] named
/// (absent when missing or unreadable).
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The workspace folder.
    pub root: &'a Path,
    pub home: &'a Path,
    /// The hooks file and its text.
    pub file: &'a Path,
    pub text: &'a str,
    pub docs: &'a BTreeMap<PathBuf, String>,
}

impl Seen<'_> {
    fn doc(&self, p: &Path) -> Option<&str> {
        self.docs.get(p).map(String::as_str)
    }

    fn json(&self, p: &Path) -> Option<Value> {
        serde_json::from_str(self.doc(p)?).ok()
    }
}

/// Claude Code's managed settings (highest precedence).
pub const CLAUDE_MANAGED: &str = "/etc/claude-code/managed-settings.json";

impl Rules {
    /// The files this rule reads for the workspace `root`, the user's `home` (the workspace's
    /// own ones are inside `root`).
    pub fn files(self, root: &Path, home: &Path) -> Vec<PathBuf> {
        match self {
            Rules::None => vec![],
            // Highest precedence first: managed, local, project, user.
            Rules::Claude => vec![
                PathBuf::from(CLAUDE_MANAGED),
                root.join(".claude/settings.local.json"),
                root.join(".claude/settings.json"),
                home.join(".claude/settings.json"),
            ],
            Rules::Codex => vec![super::codex_trust::config_path(home)],
            Rules::Gemini => vec![home.join(".gemini/trustedFolders.json")],
            Rules::Qwen => vec![
                home.join(".qwen/settings.json"),
                root.join(".qwen/settings.json"),
                home.join(".qwen/trustedFolders.json"),
            ],
        }
    }

    /// Why the agent will not run the hooks in `seen.file`; `None` when nothing stops it.
    pub fn skips(self, seen: &Seen<'_>) -> Option<Skip> {
        let in_project = seen.file.starts_with(seen.root);
        match self {
            Rules::None => None,
            Rules::Codex => codex(seen, in_project),
            Rules::Gemini if in_project => {
                let trusted = seen
                    .json(&seen.home.join(".gemini/trustedFolders.json"))
                    .as_ref()
                    .and_then(Value::as_object)
                    .is_some_and(|r| folder_trusted(r, seen.root));
                (!trusted).then(|| Skip {
                    why: "Gemini loads a project's settings only in a trusted folder".into(),
                    hint: format!(
                        "trust {} when Gemini asks (it records it in ~/.gemini/trustedFolders.json)",
                        seen.root.display()
                    ),
                })
            }
            Rules::Gemini => None,
            Rules::Qwen => qwen(seen, in_project),
            Rules::Claude => claude(seen),
        }
    }
}

fn codex(seen: &Seen<'_>, in_project: bool) -> Option<Skip> {
    use super::codex_trust::{self, Trust};
    let config_path = codex_trust::config_path(seen.home);
    let config = seen.doc(&config_path);
    let root = seen.root;
    if in_project && codex_trust::project_trusted(config, root) != Some(true) {
        return Some(Skip {
            why: format!("Codex loads {}/.codex only in a trusted project", root.display()),
            hint: format!(
                "trust the project when Codex asks, or add [projects.\"{}\"] trust_level = \"trusted\" to {}",
                root.display(),
                config_path.display()
            ),
        });
    }
    let entries = codex_trust::our_entries(seen.file, seen.text);
    let trust = codex_trust::trust(config, &entries);
    let why = match trust.iter().find(|t| **t != Trust::Trusted) {
        None => return None,
        Some(Trust::Modified) => "the hook changed since it was trusted",
        Some(_) => "the hook is not trusted",
    };
    Some(Skip {
        why: format!("{why} ({})", config_path.display()),
        hint: "openfiles hooks install --agent codex (records the trust), or trust it in Codex's /hooks screen".into(),
    })
}

fn qwen(seen: &Seen<'_>, in_project: bool) -> Option<Skip> {
    let user = seen.json(&seen.home.join(".qwen/settings.json"));
    let folder_trust = user
        .as_ref()
        .and_then(|u| u.pointer("/security/folderTrust/enabled"))
        .and_then(Value::as_bool)
        == Some(true);
    let disabled = [user, seen.json(&seen.root.join(".qwen/settings.json"))]
        .iter()
        .flatten()
        .any(|d| d["disableAllHooks"] == true);
    if disabled {
        return Some(Skip {
            why: "\"disableAllHooks\": true in its settings".into(),
            hint: "remove disableAllHooks from ~/.qwen/settings.json or .qwen/settings.json".into(),
        });
    }
    let trusted = seen
        .json(&seen.home.join(".qwen/trustedFolders.json"))
        .as_ref()
        .and_then(Value::as_object)
        .is_some_and(|r| folder_trusted(r, seen.root));
    (in_project && folder_trust && !trusted).then(|| Skip {
        why: "Qwen Code's folder trust is on and this folder is not trusted".into(),
        hint: format!("trust {} in Qwen Code (/permissions)", seen.root.display()),
    })
}

fn claude(seen: &Seen<'_>) -> Option<Skip> {
    let docs: Vec<(PathBuf, Value)> = Rules::Claude
        .files(seen.root, seen.home)
        .into_iter()
        .filter_map(|f| seen.json(&f).map(|d| (f, d)))
        .collect();
    if let Some((f, _)) = docs.iter().find(|(_, d)| d["disableAllHooks"] == true) {
        return Some(Skip {
            why: format!("\"disableAllHooks\": true in {}", f.display()),
            hint: format!("remove disableAllHooks from {}", f.display()),
        });
    }
    docs.first()
        .filter(|(f, d)| f == Path::new(CLAUDE_MANAGED) && d["allowManagedHooksOnly"] == true)
        .map(|(f, _)| Skip {
            why: format!(
                "only managed hooks run (allowManagedHooksOnly in {})",
                f.display()
            ),
            hint: "ask your administrator to add the hook to the managed settings".into(),
        })
}

/// Gemini's and Qwen Code's `trustedFolders.json` rules: `"DIR": "TRUST_FOLDER"` trusts DIR
/// and below, `"DIR": "TRUST_PARENT"` DIR's parent and below; the nearest rule wins.
pub fn folder_trusted(rules: &serde_json::Map<String, Value>, dir: &Path) -> bool {
    let mut best: Option<(usize, bool)> = None;
    for (path, rule) in rules {
        let p = Path::new(path);
        let (base, trust) = match rule.as_str() {
            Some("TRUST_FOLDER") => (p, true),
            Some("TRUST_PARENT") => (p.parent().unwrap_or(p), true),
            Some("DO_NOT_TRUST") => (p, false),
            _ => continue,
        };
        if dir.starts_with(base) {
            let depth = base.components().count();
            if best.is_none_or(|(d, _)| depth >= d) {
                best = Some((depth, trust));
            }
        }
    }
    best.is_some_and(|(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen<'a>(file: &'a Path, docs: &'a BTreeMap<PathBuf, String>) -> Seen<'a> {
        Seen {
            root: Path::new("/w/proj"),
            home: Path::new("/home/u"),
            file,
            text: "{}",
            docs,
        }
    }

    #[test]
    fn each_agent_s_rule_reads_only_the_texts_it_is_given() {
        let mut docs = BTreeMap::new();
        let gemini = Path::new("/w/proj/.gemini/settings.json");
        assert!(Rules::Gemini.skips(&seen(gemini, &docs)).is_some());
        docs.insert(
            PathBuf::from("/home/u/.gemini/trustedFolders.json"),
            r#"{"/w": "TRUST_FOLDER"}"#.into(),
        );
        assert_eq!(Rules::Gemini.skips(&seen(gemini, &docs)), None);
        // A user-level Gemini hook is not subject to folder trust.
        let user = Path::new("/home/u/.gemini/settings.json");
        assert_eq!(Rules::Gemini.skips(&seen(user, &BTreeMap::new())), None);

        let claude = Path::new("/w/proj/.claude/settings.local.json");
        assert_eq!(Rules::Claude.skips(&seen(claude, &docs)), None);
        docs.insert(
            PathBuf::from("/w/proj/.claude/settings.json"),
            r#"{"disableAllHooks": true}"#.into(),
        );
        let s = Rules::Claude.skips(&seen(claude, &docs)).unwrap();
        assert!(s.why.contains("/w/proj/.claude/settings.json"), "{s:?}");

        let codex = Path::new("/w/proj/.codex/hooks.json");
        let s = Rules::Codex.skips(&seen(codex, &docs)).unwrap();
        assert!(s.why.contains("only in a trusted project"), "{s:?}");
        assert_eq!(Rules::None.skips(&seen(codex, &docs)), None);
    }

    #[test]
    fn the_nearest_folder_rule_wins() {
        let rules: serde_json::Map<String, Value> = serde_json::from_str(
            r#"{"/a": "TRUST_FOLDER", "/a/b": "DO_NOT_TRUST", "/c/d": "TRUST_PARENT"}"#,
        )
        .unwrap();
        assert!(folder_trusted(&rules, Path::new("/a/x")));
        assert!(!folder_trusted(&rules, Path::new("/a/b/x")));
        assert!(folder_trusted(&rules, Path::new("/c/e")));
        assert!(!folder_trusted(&rules, Path::new("/z")));
    }
}
