//! What `openfiles doctor` looks at in the current workspace and on this machine, without the
//! service: which languages the workspace holds and which tools they need (with the probe
//! the service runs before using one), and the kernel's inotify limits. (Agents' hooks are
//! the installer's table's: `hook::install::agents`.)
//!
//! Everything here is read-only and bounded: the language scan honours `.gitignore` and stops
//! after [`SCAN_LIMIT`] files, so `doctor` stays quick in a huge tree.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Files looked at when guessing the workspace's languages.
pub const SCAN_LIMIT: usize = 5000;

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
}
