//! Which files a pyright (or basedpyright) project reports on: those its configuration's
//! `include` holds (by default its root) and its `exclude` does not (by default `**/node_modules`,
//! `**/__pycache__` and `**/.*`). Its command line and its language server in workspace mode
//! say nothing about other files (a project with `include = ["src"]` is silent on `tests/`),
//! while a language server checking only the files it is given checks any of them. So the lsp
//! plugin leaves its own server out of a file's check for the pyright plugin's warm server
//! (`CheckRequest::served`) only for a file this says the project tracks.
//!
//! The configuration is the project root's `pyrightconfig.json` (which pyright prefers), else
//! its `pyproject.toml`'s `[tool.basedpyright]` (basedpyright) or `[tool.pyright]` table, read
//! as a file a repository may plant ([`crate::confine::read_regular`]). In doubt — a file that
//! cannot be read or parsed (comments in the JSON), an entry that is not a string — the answer
//! is `false`: the file keeps its own analysis.

use std::path::{Component, Path};

use crate::confine::{read_regular, Last};
use crate::markers::MAX_MARKER_BYTES;

/// Folders pyright excludes when the configuration names none (and which this always
/// excludes: more exclusion only keeps a file's own analysis).
const DEFAULT_EXCLUDE: &[&str] = &["**/node_modules", "**/__pycache__", "**/.*"];

/// Whether `checker` (`pyright`, `basedpyright`) run at `root` reports on `file`.
pub fn tracks(checker: &str, root: &Path, file: &Path) -> bool {
    let Some((include, exclude)) = settings(checker, root) else {
        return false;
    };
    let Ok(rel) = file.strip_prefix(root) else {
        return false;
    };
    let included = include.is_empty()
        || include
            .iter()
            .any(|i| matches_prefix(&clean(i), &components(rel)));
    let excluded = exclude
        .iter()
        .map(String::as_str)
        .chain(DEFAULT_EXCLUDE.iter().copied())
        .any(|e| matches_prefix(&clean(e), &components(rel)));
    included && !excluded
}

/// The configuration `checker` (`pyright`, `basedpyright`) reads at the project `root`, as a
/// JSON object: its `pyrightconfig.json`, else its `pyproject.toml`'s table (an empty object
/// when there is none); `None` when in doubt (unreadable, a symlink, not parsed, not an
/// object).
pub fn config(checker: &str, root: &Path) -> Option<serde_json::Map<String, serde_json::Value>> {
    let json = root.join("pyrightconfig.json");
    let table: serde_json::Value = match read_regular(&json, Last::NoFollow, MAX_MARKER_BYTES) {
        Ok(bytes) => serde_json::from_slice(&bytes).ok()?,
        Err(_) if json.symlink_metadata().is_ok() => return None,
        Err(_) => pyproject(checker, root)?,
    };
    match table {
        serde_json::Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The project's `include` and `exclude` (empty when not set); `None` when in doubt.
fn settings(checker: &str, root: &Path) -> Option<(Vec<String>, Vec<String>)> {
    let table = config(checker, root)?;
    let list = |key: &str| -> Option<Vec<String>> {
        match table.get(key) {
            None => Some(Vec::new()),
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>(),
            Some(_) => None,
        }
    };
    Some((list("include")?, list("exclude")?))
}

/// The `pyproject.toml` table `checker` reads, as JSON; an empty one when there is none.
fn pyproject(checker: &str, root: &Path) -> Option<serde_json::Value> {
    let path = root.join("pyproject.toml");
    let bytes = match read_regular(&path, Last::NoFollow, MAX_MARKER_BYTES) {
        Ok(b) => b,
        Err(_) if path.symlink_metadata().is_ok() => return None,
        Err(_) => return Some(serde_json::Value::Object(Default::default())),
    };
    let doc: toml::Table = std::str::from_utf8(&bytes).ok()?.parse().ok()?;
    let tool = doc.get("tool").and_then(|t| t.as_table());
    let names: &[&str] = match checker {
        "basedpyright" => &["basedpyright", "pyright"],
        _ => &["pyright"],
    };
    let table = names
        .iter()
        .find_map(|n| tool.and_then(|t| t.get(*n)))
        .cloned()
        .unwrap_or(toml::Value::Table(Default::default()));
    serde_json::to_value(table).ok()
}

/// A configuration entry as path components (`./src/` → `src`).
fn clean(entry: &str) -> Vec<String> {
    components(Path::new(entry))
}

fn components(p: &Path) -> Vec<String> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// Whether the glob `pattern` (components; `**` any number of them, `*` and `?` within one)
/// matches `path` or one of its folders.
fn matches_prefix(pattern: &[String], path: &[String]) -> bool {
    match pattern.split_first() {
        None => true,
        Some((p, rest)) if p == "**" => {
            (0..=path.len()).any(|skip| matches_prefix(rest, &path[skip..]))
        }
        Some((p, rest)) => match path.split_first() {
            Some((c, tail)) => {
                component_matches(p.as_bytes(), c.as_bytes()) && matches_prefix(rest, tail)
            }
            None => false,
        },
    }
}

/// `*` any characters, `?` one, else literally.
fn component_matches(p: &[u8], c: &[u8]) -> bool {
    match p.split_first() {
        None => c.is_empty(),
        Some((b'*', rest)) => (0..=c.len()).any(|k| component_matches(rest, &c[k..])),
        Some((b'?', rest)) => !c.is_empty() && component_matches(rest, &c[1..]),
        Some((b, rest)) => c.first() == Some(b) && component_matches(rest, &c[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_tracks_what_it_includes_less_what_it_excludes() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let f = |rel: &str| root.join(rel);
        // No configuration: everything but the default exclusions.
        assert!(tracks("pyright", root, &f("src/a.py")));
        assert!(!tracks("pyright", root, &f(".venv/lib/x.py")));
        assert!(!tracks("pyright", root, &f("web/node_modules/x.py")));
        // click's: include = ["src", "tests/typing"].
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.pyright]\ninclude = [\"src\", \"./tests/typing/\"]\n",
        )
        .unwrap();
        assert!(tracks("pyright", root, &f("src/click/core.py")));
        assert!(tracks("pyright", root, &f("tests/typing/typing_x.py")));
        assert!(!tracks("pyright", root, &f("tests/test_basic.py")));
        assert!(!tracks("pyright", root, &f("examples/repo/repo.py")));
        // Globs, and basedpyright's own table first.
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.pyright]\ninclude = [\"src\"]\n[tool.basedpyright]\nexclude = [\"**/gen_*\", \"src/old\"]\n",
        )
        .unwrap();
        assert!(!tracks("pyright", root, &f("tests/t.py")));
        assert!(tracks("basedpyright", root, &f("tests/t.py")));
        assert!(!tracks("basedpyright", root, &f("a/gen_x/m.py")));
        assert!(!tracks("basedpyright", root, &f("src/old/m.py")));
        assert!(tracks("basedpyright", root, &f("src/older/m.py")));
        // pyrightconfig.json first; in doubt (comments), not tracked.
        std::fs::write(root.join("pyrightconfig.json"), "{\"include\": [\"lib\"]}").unwrap();
        assert!(tracks("pyright", root, &f("lib/m.py")));
        assert!(!tracks("pyright", root, &f("src/m.py")));
        std::fs::write(root.join("pyrightconfig.json"), "{ // x\n}").unwrap();
        assert!(!tracks("pyright", root, &f("lib/m.py")));
        // Outside the root: never.
        assert!(!tracks("pyright", &f("lib"), &f("src/m.py")));
    }
}
