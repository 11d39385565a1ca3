//! Which test runner runs the tests an edited file reaches, and at which project root: one
//! rule, for the `tests` plugin (which runs it) and `openfiles doctor` (which says it).
//!
//! By the file's language: Rust (`.rs`) → `cargo test` (cargo-nextest when installed) at the
//! nearest `Cargo.toml`; Python (`.py`) → pytest at the nearest folder with a pytest or
//! packaging configuration ([`PYTHON_MARKERS`]), else the workspace root; Go (`.go`) →
//! `go test` at the nearest `go.mod`. Nothing here runs anything: markers are files, tools
//! are looked up by the caller's `find`.

use std::path::{Path, PathBuf};

/// A test runner the `tests` plugin drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Runner {
    Cargo,
    Pytest,
    Go,
}

/// Files that make a folder a Python project's root for pytest (where it finds its
/// configuration and its `rootdir`).
pub const PYTHON_MARKERS: &[&str] = &[
    "pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
    "setup.py",
];

impl Runner {
    /// Every runner, in the order `doctor` lists them.
    pub const ALL: [Runner; 3] = [Runner::Cargo, Runner::Pytest, Runner::Go];

    /// The runner of a file, by its extension.
    pub fn for_file(file: &Path) -> Option<Runner> {
        match file.extension()?.to_str()? {
            "rs" => Some(Runner::Cargo),
            "py" => Some(Runner::Pytest),
            "go" => Some(Runner::Go),
            _ => None,
        }
    }

    /// The `source` of the items it reports.
    pub fn source(self) -> &'static str {
        match self {
            Runner::Cargo => "cargo-test",
            Runner::Pytest => "pytest",
            Runner::Go => "go-test",
        }
    }

    /// The file extension of the language it tests.
    pub fn extension(self) -> &'static str {
        match self {
            Runner::Cargo => "rs",
            Runner::Pytest => "py",
            Runner::Go => "go",
        }
    }

    /// The files that mark its project root.
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            Runner::Cargo => &["Cargo.toml"],
            Runner::Pytest => PYTHON_MARKERS,
            Runner::Go => &["go.mod"],
        }
    }

    /// The project root `file` is tested at: the nearest folder above it (inside
    /// `workspace`) holding one of [`Runner::markers`]; for pytest the workspace root when
    /// none does; `None` for cargo and go without their manifest (nothing to run).
    pub fn root(self, file: &Path, workspace: &Path) -> Option<PathBuf> {
        let found = file
            .ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(workspace))
            .find(|d| self.markers().iter().any(|m| d.join(m).is_file()));
        match (found, self) {
            (Some(d), _) => Some(d.to_owned()),
            (None, Runner::Pytest) => Some(workspace.to_owned()),
            (None, _) => None,
        }
    }

    /// How it is run, given `find` (a tool's path when installed where the plugin looks):
    /// the command and why that one.
    pub fn command_line(
        self,
        find: impl Fn(&str) -> Option<PathBuf>,
    ) -> Option<(String, &'static str)> {
        match self {
            Runner::Cargo => {
                let cargo = find("cargo")?;
                Some(if find("cargo-nextest").is_some() {
                    (
                        format!("{} nextest run", cargo.display()),
                        "cargo-nextest is installed",
                    )
                } else {
                    (
                        format!("{} test", cargo.display()),
                        "cargo-nextest is not installed",
                    )
                })
            }
            Runner::Pytest => {
                if let Some(p) = find("pytest") {
                    return Some((p.display().to_string(), "pytest is installed"));
                }
                let python = find("python3")?;
                Some((
                    format!("{} -m pytest", python.display()),
                    "no pytest executable: python3's module, if it has one",
                ))
            }
            Runner::Go => Some((
                format!("{} test -json", find("go")?.display()),
                "go is installed",
            )),
        }
    }
}

/// What `doctor` says for a project folder: per runner whose marker is in `dir` (or, for
/// pytest, a `tests`/`test` folder or a `conftest.py`), the command and why, or what is
/// missing. Empty when no runner applies.
pub fn describe(dir: &Path, find: impl Fn(&str) -> Option<PathBuf>) -> Vec<String> {
    let mut out = Vec::new();
    for runner in Runner::ALL {
        let marked = runner.markers().iter().any(|m| dir.join(m).is_file())
            || (runner == Runner::Pytest
                && ["conftest.py", "tests", "test"]
                    .iter()
                    .any(|m| dir.join(m).exists()));
        if !marked {
            continue;
        }
        let what = match runner.command_line(&find) {
            Some((cmd, why)) => format!("{} runs `{cmd}` ({why})", runner.source()),
            None => format!("{}: not installed", runner.source()),
        };
        out.push(what);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runner_and_root_of_a_file() {
        let t = tempfile::tempdir().unwrap();
        let ws = t.path();
        std::fs::create_dir_all(ws.join("a/src")).unwrap();
        std::fs::write(ws.join("a/Cargo.toml"), "").unwrap();
        std::fs::create_dir_all(ws.join("py/pkg")).unwrap();
        std::fs::write(ws.join("py/pyproject.toml"), "").unwrap();
        let rs = ws.join("a/src/lib.rs");
        assert_eq!(Runner::for_file(&rs), Some(Runner::Cargo));
        assert_eq!(Runner::Cargo.root(&rs, ws), Some(ws.join("a")));
        assert_eq!(Runner::Go.root(&ws.join("x/y.go"), ws), None);
        let py = ws.join("py/pkg/m.py");
        assert_eq!(Runner::Pytest.root(&py, ws), Some(ws.join("py")));
        assert_eq!(
            Runner::Pytest.root(&ws.join("loose.py"), ws),
            Some(ws.to_owned())
        );
        assert_eq!(Runner::for_file(&ws.join("x.md")), None);
    }

    #[test]
    fn what_doctor_says() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("Cargo.toml"), "").unwrap();
        std::fs::write(t.path().join("go.mod"), "").unwrap();
        let find = |n: &str| (n == "cargo").then(|| PathBuf::from("/bin/cargo"));
        assert_eq!(
            describe(t.path(), find),
            vec![
                "cargo-test runs `/bin/cargo test` (cargo-nextest is not installed)".to_string(),
                "go-test: not installed".to_string(),
            ]
        );
    }
}
