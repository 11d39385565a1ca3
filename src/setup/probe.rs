//! What `openfiles doctor` looks at in the current workspace and on this machine, without the
//! service: which languages the workspace holds and which tools they need (with the probe
//! the service runs before using one), which agents have the openfiles hook configured and
//! the command lines they run, and the kernel's inotify limits.
//!
//! Everything here is read-only and bounded: the language scan honours `.gitignore` and stops
//! after [`SCAN_LIMIT`] files, so `doctor` stays quick in a huge tree.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Files looked at when guessing the workspace's languages.
pub const SCAN_LIMIT: usize = 5000;

/// The marker every openfiles hook command line contains.
pub const HOOK_MARKER: &str = "openfiles hook";

/// A language and the tools openfiles uses for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Language {
    Python,
    TypeScript,
    /// Files under an ESLint configuration (found by its file).
    EsLint,
    C,
    Rust,
    Go,
    Shell,
    Json,
    Yaml,
    Toml,
    Css,
    Html,
    Dockerfile,
    Php,
}

impl Language {
    pub const ALL: [Language; 14] = [
        Language::Python,
        Language::TypeScript,
        Language::EsLint,
        Language::C,
        Language::Rust,
        Language::Go,
        Language::Shell,
        Language::Json,
        Language::Yaml,
        Language::Toml,
        Language::Css,
        Language::Html,
        Language::Dockerfile,
        Language::Php,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::TypeScript => "TypeScript/JavaScript",
            Language::EsLint => "ESLint",
            Language::C => "C/C++",
            Language::Rust => "Rust",
            Language::Go => "Go",
            Language::Shell => "Shell",
            Language::Json => "JSON",
            Language::Yaml => "YAML",
            Language::Toml => "TOML",
            Language::Css => "CSS",
            Language::Html => "HTML",
            Language::Dockerfile => "Dockerfile",
            Language::Php => "PHP",
        }
    }

    /// The jobs done for this language and the tools that can do each
    /// ([`super::checkers::roles`]).
    pub fn roles(self) -> &'static [super::checkers::Role] {
        super::checkers::roles(self.name())
    }

    /// The executables that give diagnostics for this language (every role's, once each).
    pub fn tools(self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for t in self.roles().iter().flat_map(|r| r.tools.iter()) {
            if !out.contains(t) {
                out.push(t);
            }
        }
        out
    }

    fn of_extension(ext: &str) -> Option<Language> {
        Some(match ext {
            "py" | "pyi" => Language::Python,
            "ts" | "tsx" | "mts" | "cts" | "js" | "jsx" | "mjs" | "cjs" => Language::TypeScript,
            "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" | "m" | "mm" => Language::C,
            "rs" => Language::Rust,
            "go" => Language::Go,
            "sh" | "bash" => Language::Shell,
            "json" | "jsonc" => Language::Json,
            "yaml" | "yml" => Language::Yaml,
            "toml" => Language::Toml,
            "css" | "scss" | "less" => Language::Css,
            "html" | "htm" => Language::Html,
            "dockerfile" => Language::Dockerfile,
            "php" => Language::Php,
            _ => return None,
        })
    }

    fn of_marker(name: &str) -> Option<Language> {
        Some(match name {
            "pyproject.toml" | "setup.py" | "requirements.txt" => Language::Python,
            "package.json" | "tsconfig.json" | "jsconfig.json" => Language::TypeScript,
            "compile_commands.json" | "CMakeLists.txt" => Language::C,
            "Cargo.toml" => Language::Rust,
            "go.mod" => Language::Go,
            "Dockerfile" | "Containerfile" => Language::Dockerfile,
            "composer.json" => Language::Php,
            n if n.starts_with("eslint.config.") || n.starts_with(".eslintrc") => Language::EsLint,
            _ => return None,
        })
    }
}

/// The workspace root for `start`: the nearest folder up holding `.openfiles`, `.claws` or
/// `.git`, else `start` itself.
pub fn workspace_root(start: &Path) -> PathBuf {
    for dir in start.ancestors() {
        if [".openfiles", ".claws", ".git"]
            .iter()
            .any(|m| dir.join(m).exists())
        {
            return dir.to_owned();
        }
    }
    start.to_owned()
}

/// The languages present under `root` (by project markers and file extensions).
pub fn languages(root: &Path) -> BTreeSet<Language> {
    let mut found = BTreeSet::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .max_depth(Some(8))
        .filter_entry(|e| {
            let n = e.file_name();
            n != "node_modules" && n != "target" && n != ".git"
        })
        .build();
    for entry in walker.flatten().take(SCAN_LIMIT) {
        let name = entry.file_name().to_string_lossy();
        if let Some(l) = Language::of_marker(&name) {
            found.insert(l);
        }
        if let Some(l) = entry
            .path()
            .extension()
            .and_then(OsStr::to_str)
            .and_then(Language::of_extension)
        {
            found.insert(l);
        }
    }
    found
}

/// Arguments of the quick run a tool must pass before the service uses it, as the lsp
/// plugin's built-in servers declare them (`plugins/lsp/src/config.rs`): rustup installs a
/// `rust-analyzer` proxy that fails when the component is missing.
pub fn probe_args(tool: &str) -> &'static [&'static str] {
    match tool {
        "rust-analyzer" => &["--version"],
        _ => &[],
    }
}

/// One agent's hook configuration file, as `agent-hooks.md` lists them.
#[derive(Debug, Clone)]
pub struct HookFile {
    pub agent: &'static str,
    /// Workspace-relative candidates, first match wins.
    pub files: &'static [&'static str],
}

/// The agents whose hook configs live in the workspace.
pub const HOOK_FILES: &[HookFile] = &[
    HookFile {
        agent: "claude",
        files: &[".claude/settings.local.json", ".claude/settings.json"],
    },
    HookFile {
        agent: "codex",
        files: &[".codex/hooks.json"],
    },
    HookFile {
        agent: "copilot",
        files: &[".github/hooks/openfiles.json"],
    },
    HookFile {
        agent: "gemini",
        files: &[".gemini/settings.json"],
    },
    HookFile {
        agent: "cursor",
        files: &[".cursor/hooks.json"],
    },
    HookFile {
        agent: "windsurf",
        files: &[".windsurf/hooks.json"],
    },
    HookFile {
        agent: "opencode",
        files: &[".opencode/plugins/openfiles.js"],
    },
];

/// The state of one agent's hook in a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookState {
    /// A config file names `openfiles hook`.
    Installed(PathBuf),
    /// A config file exists but does not run `openfiles hook`.
    ConfigWithoutHook(PathBuf),
    /// No config file.
    Absent,
}

/// The hook state of every agent in [`HOOK_FILES`] for the workspace at `root`.
pub fn hooks(root: &Path) -> Vec<(&'static str, HookState)> {
    HOOK_FILES
        .iter()
        .map(|h| {
            let mut state = HookState::Absent;
            for f in h.files {
                let path = root.join(f);
                match std::fs::read_to_string(&path) {
                    Ok(text) if text.contains(HOOK_MARKER) => {
                        state = HookState::Installed(path);
                        break;
                    }
                    Ok(_) if state == HookState::Absent => {
                        state = HookState::ConfigWithoutHook(path)
                    }
                    _ => {}
                }
            }
            (h.agent, state)
        })
        .collect()
}

/// Agents whose user-level configuration (in `home`, at the paths `hooks install --user`
/// writes) runs `openfiles hook`: those hooks fire in every workspace.
pub fn user_hooks(home: &Path) -> Vec<(&'static str, PathBuf)> {
    use crate::hook::install::agents::{target, Scope, SUPPORTED};
    let scope = Scope::User(home.to_owned());
    SUPPORTED
        .iter()
        .filter_map(|agent| target(agent, &scope, "openfiles"))
        .filter(|t| {
            std::fs::read_to_string(&t.path)
                .map(|text| text.contains(HOOK_MARKER))
                .unwrap_or(false)
        })
        .map(|t| (t.agent, t.path))
        .collect()
}

/// The command lines of openfiles hooks in an agent's configuration text: the `command` or
/// `bash` strings of a JSON configuration that run `openfiles hook`, or the program OpenCode's
/// plugin spawns (as a shell command line, run the way the plugin runs it).
pub fn hook_commands(text: &str) -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    match v.as_str() {
                        Some(cmd) if (k == "command" || k == "bash") && runs_hook(cmd) => {
                            out.push(cmd.to_owned())
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(list) => list.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    fn runs_hook(cmd: &str) -> bool {
        cmd.contains(HOOK_MARKER) || cmd.contains(crate::hook::install::agents::MARKER)
    }
    let mut out = Vec::new();
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(text) {
        walk(&doc, &mut out);
        return out;
    }
    // OpenCode's plugin: `Bun.spawn([<program as a JSON string>, "hook", …`.
    if let Some(at) = text.find("Bun.spawn([") {
        let rest = &text[at + "Bun.spawn([".len()..];
        if let Some(Ok(bin)) = serde_json::Deserializer::from_str(rest)
            .into_iter::<String>()
            .next()
        {
            out.push(crate::hook::install::agents::command(
                &bin,
                "opencode",
                "--no-feedback",
            ));
        }
    }
    out
}

/// Read a number from a `/proc/sys` file.
pub fn read_sysctl(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_come_from_markers_and_extensions_but_not_ignored_dirs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "").unwrap();
        std::fs::write(dir.path().join("go.mod"), "").unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        std::fs::write(dir.path().join("node_modules/x.ts"), "").unwrap();
        let langs = languages(dir.path());
        assert_eq!(
            langs.into_iter().collect::<Vec<_>>(),
            vec![Language::Python, Language::Go]
        );
    }

    #[test]
    fn hook_states_follow_the_marker() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(
            dir.path().join(".claude/settings.json"),
            r#"{"hooks":{"PostToolUse":[{"hooks":[{"command":"openfiles hook --agent claude"}]}]}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join(".gemini")).unwrap();
        std::fs::write(dir.path().join(".gemini/settings.json"), "{}").unwrap();
        let states = hooks(dir.path());
        let get = |a: &str| states.iter().find(|(n, _)| *n == a).unwrap().1.clone();
        assert!(matches!(get("claude"), HookState::Installed(_)));
        assert!(matches!(get("gemini"), HookState::ConfigWithoutHook(_)));
        assert_eq!(get("codex"), HookState::Absent);
    }

    #[test]
    fn hook_commands_are_found_in_every_agent_format() {
        use crate::hook::install::agents::{target, Content, Scope, SUPPORTED};
        let scope = Scope::Workspace("/w".into());
        for agent in SUPPORTED {
            let t = target(agent, &scope, "/opt/of bin/openfiles").unwrap();
            let text = match t.content {
                Content::OwnFile(text) => text,
                Content::Json { hooks, .. } => serde_json::json!({
                    "hooks": { "x": hooks.iter().map(|h| h.entry.clone()).collect::<Vec<_>>() },
                    "other": { "command": "echo unrelated" },
                })
                .to_string(),
            };
            let cmds = hook_commands(&text);
            assert!(!cmds.is_empty(), "{agent}: {text}");
            for c in cmds {
                assert!(
                    c.starts_with("'/opt/of bin/openfiles' hook --agent"),
                    "{agent}: {c}"
                );
            }
        }
    }
}
