//! Project root markers: the files whose presence in a folder makes it a project root for a
//! tool, as plugins announce them (`Capabilities::project_markers`, a language server's
//! `root_markers`) and as the service and the plugins test them, the same way on both sides.
//!
//! A marker is a file name (`Cargo.toml`, `tsconfig.json`) or a file name with a TOML table
//! path in brackets, `pyproject.toml[tool.pyright]`: that file *holding that table* (a header
//! `[tool.pyright]`, a sub-table `[tool.pyright.x]` or an array of tables under it, or dotted
//! keys). A `pyproject.toml` configures pyright only through its `[tool.pyright]` table, so a
//! package without one is checked as part of the enclosing project, as the tool run at that
//! project's root would check it, instead of becoming a root (a server instance, a workspace
//! folder) of its own.
//!
//! The file is read as a file a repository may plant ([`crate::confine::read_regular`]:
//! no symlink at the last component, no FIFO, at most [`MAX_MARKER_BYTES`]). A file that
//! cannot be read or parsed still counts as the marker: the tool will meet the same file
//! and say what is wrong with it, in the project it names.

use std::path::Path;

use crate::confine::{read_regular, ConfineError, Last};

/// The largest marker file whose tables are read (a `pyproject.toml` is a few KiB).
pub const MAX_MARKER_BYTES: u64 = 1 << 20;

/// A marker split into its file name and, for `file[table.path]`, the table's keys.
pub fn parse(marker: &str) -> (&str, Option<Vec<&str>>) {
    match marker.strip_suffix(']').and_then(|m| m.split_once('[')) {
        Some((file, table)) if !file.is_empty() && !table.is_empty() => {
            (file, Some(table.split('.').map(str::trim).collect()))
        }
        _ => (marker, None),
    }
}

/// The file name part of a marker (what a watcher or a listing looks for).
pub fn file_name(marker: &str) -> &str {
    parse(marker).0
}

/// Whether `dir` holds `marker`.
pub fn present(dir: &Path, marker: &str) -> bool {
    let (file, table) = parse(marker);
    let path = dir.join(file);
    let Some(table) = table else {
        return path.exists();
    };
    match read_regular(&path, Last::NoFollow, MAX_MARKER_BYTES) {
        Ok(bytes) => holds_table(&bytes, &table),
        Err(ConfineError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => false,
        // There but unreadable (a symlink, too large, a FIFO): the tool will meet it too.
        Err(_) => path.symlink_metadata().is_ok(),
    }
}

/// The nearest ancestor of `file` (inside `workspace`) holding one of `markers`, else the
/// workspace root.
pub fn project_root(file: &Path, workspace: &Path, markers: &[String]) -> std::path::PathBuf {
    file.ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(workspace))
        .find(|d| markers.iter().any(|m| present(d, m)))
        .unwrap_or(workspace)
        .to_path_buf()
}

/// Whether a folder from `file`'s up to the workspace holds one of `markers`.
pub fn near(markers: &[impl AsRef<str>], file: &Path, workspace: &Path) -> bool {
    file.ancestors()
        .skip(1)
        .take_while(|d| d.starts_with(workspace))
        .any(|d| markers.iter().any(|m| present(d, m.as_ref())))
}

/// The Python type checkers, in the order a project without a preference gets them, each
/// with the markers by which a project asks for it. One of them checks a Python file: the
/// lsp plugin starts that one's language server, the pyright plugin runs that one's command
/// line over the project (see [`pick_one`]), so both report a problem in the same words.
pub const PYTHON_TYPE_CHECKERS: &[(&str, &[&str])] = &[
    ("pyright", &[]),
    ("basedpyright", &["pyproject.toml[tool.basedpyright]"]),
    ("ty", &["ty.toml", "pyproject.toml[tool.ty]"]),
];

/// The markers by which a project asks for the Python type checker `name`.
pub fn python_type_checker_claims(name: &str) -> &'static [&'static str] {
    PYTHON_TYPE_CHECKERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, claims)| *claims)
        .unwrap_or_default()
}

/// Where each Python type checker's projects are rooted: the folders holding its
/// configuration (a `pyproject.toml` only with the checker's table), else the workspace
/// root. A package without its own configuration is checked as part of the enclosing
/// project — one program for all of them, as the checker run at the workspace's root
/// checks it — and not as a project of its own (each pyright project is a whole program:
/// a language server workspace folder, or a command line run). The lsp plugin roots its
/// language servers and the pyright plugin its runs by this one rule.
pub const PYTHON_TYPE_CHECKER_ROOTS: &[(&str, &[&str])] = &[
    (
        "pyright",
        &["pyrightconfig.json", "pyproject.toml[tool.pyright]"],
    ),
    (
        "basedpyright",
        &[
            "pyrightconfig.json",
            "pyproject.toml[tool.basedpyright]",
            "pyproject.toml[tool.pyright]",
        ],
    ),
    ("ty", &["ty.toml", "pyproject.toml[tool.ty]"]),
];

/// The markers of the Python type checker `name`'s project roots
/// ([`PYTHON_TYPE_CHECKER_ROOTS`]).
pub fn python_type_checker_roots(name: &str) -> &'static [&'static str] {
    PYTHON_TYPE_CHECKER_ROOTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, roots)| *roots)
        .unwrap_or_default()
}

/// Which one of a group of tools doing the same job checks a file: of the `members`
/// installed (in table order), the first the project asks for (`claimed`), else the first.
pub fn pick_one<T>(members: &[T], claimed: impl Fn(&T) -> bool) -> Option<usize> {
    members
        .iter()
        .position(claimed)
        .or(if members.is_empty() { None } else { Some(0) })
}

/// Whether the TOML text has the table at `keys`. Unparsable text counts as having it.
fn holds_table(bytes: &[u8], keys: &[&str]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return true;
    };
    let Ok(doc) = text.parse::<toml::Table>() else {
        return true;
    };
    let mut at = &doc;
    for k in keys {
        match at.get(*k) {
            Some(toml::Value::Table(t)) => at = t,
            Some(_) => return true,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_parse_into_a_file_and_an_optional_table() {
        assert_eq!(parse("Cargo.toml"), ("Cargo.toml", None));
        assert_eq!(
            parse("pyproject.toml[tool.pyright]"),
            ("pyproject.toml", Some(vec!["tool", "pyright"]))
        );
        assert_eq!(parse("odd[]"), ("odd[]", None));
        assert_eq!(file_name("pyproject.toml[tool.ruff]"), "pyproject.toml");
    }

    #[test]
    fn a_table_marker_needs_the_table_in_the_file() {
        let d = tempfile::tempdir().unwrap();
        let m = "pyproject.toml[tool.pyright]";
        assert!(!present(d.path(), m), "no file");
        std::fs::write(
            d.path().join("pyproject.toml"),
            "[project]\nname = \"a\"\n[tool.ruff]\nline-length = 100\n",
        )
        .unwrap();
        assert!(!present(d.path(), m), "a pyproject without [tool.pyright]");
        assert!(present(d.path(), "pyproject.toml"), "the plain file marker");
        for text in [
            "[tool.pyright]\nstrict = [\"src\"]\n",
            "[tool.pyright.defineConstant]\nDEBUG = true\n",
            "[[tool.pyright.executionEnvironments]]\nroot = \"src\"\n",
            "tool.pyright.typeCheckingMode = \"strict\"\n",
            "[tool]\npyright = { typeCheckingMode = \"strict\" }\n",
            "this is not toml [",
        ] {
            std::fs::write(d.path().join("pyproject.toml"), text).unwrap();
            assert!(present(d.path(), m), "{text:?}");
        }
    }

    #[test]
    fn one_python_type_checker_the_project_asks_for_else_the_first_installed() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join("app/src")).unwrap();
        let file = ws.join("app/src/m.py");
        let pick = |installed: &[&str]| {
            let members: Vec<&(&str, &[&str])> = PYTHON_TYPE_CHECKERS
                .iter()
                .filter(|(n, _)| installed.contains(n))
                .collect();
            pick_one(&members, |(_, claims)| near(claims, &file, ws)).map(|i| members[i].0)
        };
        assert_eq!(pick(&["pyright", "basedpyright", "ty"]), Some("pyright"));
        assert_eq!(pick(&["basedpyright", "ty"]), Some("basedpyright"));
        assert_eq!(pick(&[]), None);
        std::fs::write(ws.join("pyproject.toml"), "[tool.ty.rules]\n").unwrap();
        assert_eq!(pick(&["pyright", "basedpyright", "ty"]), Some("ty"));
        // Asked for but not installed: the first installed, as the language servers do.
        assert_eq!(pick(&["pyright", "basedpyright"]), Some("pyright"));
        std::fs::write(ws.join("app/pyproject.toml"), "[tool.basedpyright]\n").unwrap();
        assert_eq!(
            pick(&["pyright", "basedpyright", "ty"]),
            Some("basedpyright")
        );
        assert_eq!(
            python_type_checker_claims("ty"),
            ["ty.toml", "pyproject.toml[tool.ty]"]
        );
        assert!(python_type_checker_claims("pyright").is_empty());
    }

    #[test]
    fn the_project_root_is_the_nearest_folder_with_a_marker() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let markers = vec![
            "pyrightconfig.json".to_string(),
            "pyproject.toml[tool.pyright]".to_string(),
        ];
        std::fs::create_dir_all(ws.join("a/src")).unwrap();
        std::fs::create_dir_all(ws.join("b/src")).unwrap();
        std::fs::write(ws.join("a/pyproject.toml"), "[project]\nname = \"a\"\n").unwrap();
        std::fs::write(ws.join("b/pyproject.toml"), "[tool.pyright]\n").unwrap();
        let f = |p: &str| ws.join(p);
        assert_eq!(project_root(&f("a/src/m.py"), ws, &markers), ws);
        assert_eq!(project_root(&f("b/src/m.py"), ws, &markers), f("b"));
        std::fs::write(ws.join("a/src/pyrightconfig.json"), "{}").unwrap();
        assert_eq!(project_root(&f("a/src/m.py"), ws, &markers), f("a/src"));
    }
}
