//! Which test runner runs the tests an edited file reaches, and at which project root: one
//! rule, for the `tests` plugin (which runs it) and `openfiles doctor` (which says it).
//!
//! By the file's language: Rust (`.rs`) → `cargo test` (cargo-nextest when installed) at the
//! nearest `Cargo.toml`; Python (`.py`) → pytest at the nearest folder with a pytest or
//! packaging configuration ([`PYTHON_MARKERS`]), else the workspace root; Go (`.go`) →
//! `go test` at the nearest `go.mod`; JavaScript and TypeScript → vitest or jest at the
//! nearest folder (inside the workspace) that chose one: its `vitest.config.*`/`jest.config.*`,
//! or a `package.json` whose `scripts`, `devDependencies` or `dependencies` name `vitest` or
//! `jest` (vitest first when both are named). Their runner is the project's own
//! `node_modules/.bin/vitest`/`jest`, which only a trusted workspace's check may start (the
//! plugin passes it through the gate's `Program::at`). Nothing here runs anything: markers
//! are files (`package.json` read through `confine`), tools are looked up by the caller's
//! `find`.

use std::path::{Path, PathBuf};

/// A test runner the `tests` plugin drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Runner {
    Cargo,
    Pytest,
    Go,
    Vitest,
    Jest,
}

/// The extensions of the files vitest and jest test.
pub const JS_EXTENSIONS: &[&str] = &["js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts"];

/// The configuration files that make a folder a vitest project.
pub const VITEST_CONFIGS: &[&str] = &[
    "vitest.config.ts",
    "vitest.config.mts",
    "vitest.config.cts",
    "vitest.config.js",
    "vitest.config.mjs",
    "vitest.config.cjs",
];

/// The configuration files that make a folder a jest project.
pub const JEST_CONFIGS: &[&str] = &[
    "jest.config.ts",
    "jest.config.mts",
    "jest.config.cts",
    "jest.config.js",
    "jest.config.mjs",
    "jest.config.cjs",
    "jest.config.json",
];

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
    pub const ALL: [Runner; 5] = [
        Runner::Cargo,
        Runner::Pytest,
        Runner::Go,
        Runner::Vitest,
        Runner::Jest,
    ];

    /// The runner of a file by its extension alone (Rust, Python, Go); `None` for JavaScript
    /// and TypeScript, whose runner is the project's choice ([`Runner::of`]).
    pub fn for_file(file: &Path) -> Option<Runner> {
        match file.extension()?.to_str()? {
            "rs" => Some(Runner::Cargo),
            "py" => Some(Runner::Pytest),
            "go" => Some(Runner::Go),
            _ => None,
        }
    }

    /// Whether some runner may test `file` (its extension is one of theirs).
    pub fn may_test(file: &Path) -> bool {
        Runner::for_file(file).is_some()
            || file
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| JS_EXTENSIONS.contains(&e))
    }

    /// The runner of `file` and the project root it runs at (see [`Runner::root`]; for
    /// JavaScript and TypeScript the nearest folder that chose vitest or jest).
    pub fn of(file: &Path, workspace: &Path) -> Option<(Runner, PathBuf)> {
        if let Some(r) = Runner::for_file(file) {
            return Some((r, r.root(file, workspace)?));
        }
        if !Runner::may_test(file) {
            return None;
        }
        file.ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(workspace))
            .find_map(|d| Some((js_runner_at(d, workspace)?, d.to_owned())))
    }

    /// The `source` of the items it reports.
    pub fn source(self) -> &'static str {
        match self {
            Runner::Cargo => "cargo-test",
            Runner::Pytest => "pytest",
            Runner::Go => "go-test",
            Runner::Vitest => "vitest",
            Runner::Jest => "jest",
        }
    }

    /// The file extensions of the language it tests.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Runner::Cargo => &["rs"],
            Runner::Pytest => &["py"],
            Runner::Go => &["go"],
            Runner::Vitest | Runner::Jest => JS_EXTENSIONS,
        }
    }

    /// The files that mark its project root.
    pub fn markers(self) -> &'static [&'static str] {
        match self {
            Runner::Cargo => &["Cargo.toml"],
            Runner::Pytest => PYTHON_MARKERS,
            Runner::Go => &["go.mod"],
            Runner::Vitest => VITEST_CONFIGS,
            Runner::Jest => JEST_CONFIGS,
        }
    }

    /// The project's own executable of a JavaScript runner, `node_modules/.bin/NAME` at
    /// `root` (`None` for the others, found on `PATH`). Start it only through the gate, in a
    /// trusted workspace.
    pub fn own_executable(self, root: &Path) -> Option<PathBuf> {
        let name = match self {
            Runner::Vitest => "vitest",
            Runner::Jest => "jest",
            _ => return None,
        };
        Some(root.join("node_modules/.bin").join(name))
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

    /// How it is run at `root`, given `find` (a tool's path when installed where the plugin
    /// looks): the command and why that one.
    pub fn command_line(
        self,
        root: &Path,
        find: impl Fn(&str) -> Option<PathBuf>,
    ) -> Option<(String, &'static str)> {
        match self {
            Runner::Vitest | Runner::Jest => {
                let exe = self.own_executable(root).filter(|p| p.is_file())?;
                let (args, why) = if self == Runner::Vitest {
                    ("related FILES --run", "the project chose vitest")
                } else {
                    ("--findRelatedTests FILES", "the project chose jest")
                };
                Some((format!("{} {args}", exe.display()), why))
            }
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

/// The JavaScript runner the folder `dir` chose, if any: a vitest configuration file, a jest
/// one, else its `package.json` naming `vitest` (first) or `jest` in `scripts`,
/// `devDependencies` or `dependencies`. The `package.json` is read through `confine` (a
/// file of `workspace`).
pub fn js_runner_at(dir: &Path, workspace: &Path) -> Option<Runner> {
    let has = |names: &[&str]| names.iter().any(|n| dir.join(n).is_file());
    if has(VITEST_CONFIGS) {
        return Some(Runner::Vitest);
    }
    if has(JEST_CONFIGS) {
        return Some(Runner::Jest);
    }
    let bytes =
        crate::confine::read_workspace_file(workspace, &dir.join("package.json"), 1 << 20).ok()?;
    let pkg: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let names = |runner: &str| {
        ["devDependencies", "dependencies"]
            .iter()
            .any(|k| pkg.get(k).and_then(|d| d.get(runner)).is_some())
            || pkg
                .get("scripts")
                .and_then(|s| s.as_object())
                .is_some_and(|s| {
                    s.values()
                        .filter_map(|v| v.as_str())
                        .any(|v| v.split_whitespace().any(|w| w == runner))
                })
    };
    if names("vitest") {
        Some(Runner::Vitest)
    } else if names("jest") {
        Some(Runner::Jest)
    } else {
        None
    }
}

/// What `doctor` says for a project folder: per runner whose marker is in `dir` (or, for
/// pytest, a `tests`/`test` folder or a `conftest.py`; for vitest and jest, the folder's
/// choice by [`js_runner_at`]), the command and why, or what is missing. Empty when no
/// runner applies.
pub fn describe(dir: &Path, find: impl Fn(&str) -> Option<PathBuf>) -> Vec<String> {
    let mut out = Vec::new();
    let js = js_runner_at(dir, dir);
    for runner in Runner::ALL {
        let marked = match runner {
            Runner::Vitest | Runner::Jest => js == Some(runner),
            _ => {
                runner.markers().iter().any(|m| dir.join(m).is_file())
                    || (runner == Runner::Pytest
                        && ["conftest.py", "tests", "test"]
                            .iter()
                            .any(|m| dir.join(m).exists()))
            }
        };
        if !marked {
            continue;
        }
        let what = match runner.command_line(dir, &find) {
            Some((cmd, why)) => format!("{} runs `{cmd}` ({why})", runner.source()),
            None if js == Some(runner) => format!(
                "{}: not installed in the project's node_modules/.bin (`npm install`)",
                runner.source()
            ),
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
        assert_eq!(Runner::of(&rs, ws), Some((Runner::Cargo, ws.join("a"))));
    }

    #[test]
    fn a_javascript_project_chooses_vitest_or_jest() {
        let t = tempfile::tempdir().unwrap();
        let ws = t.path();
        let write = |rel: &str, text: &str| {
            let p = ws.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("v/package.json", r#"{"devDependencies": {"vitest": "4"}}"#);
        write("j/package.json", r#"{"scripts": {"test": "jest --ci"}}"#);
        write("c/package.json", r#"{"name": "c"}"#);
        write("c/jest.config.js", "module.exports = {};");
        write("none/package.json", r#"{"devDependencies": {"ava": "6"}}"#);
        write(
            "both/package.json",
            r#"{"devDependencies": {"jest": "1", "vitest": "4"}}"#,
        );
        let of = |rel: &str| Runner::of(&ws.join(rel), ws);
        assert_eq!(of("v/src/a.ts"), Some((Runner::Vitest, ws.join("v"))));
        assert_eq!(of("j/test/a.test.js"), Some((Runner::Jest, ws.join("j"))));
        assert_eq!(of("c/x.mjs"), Some((Runner::Jest, ws.join("c"))));
        assert_eq!(of("both/x.tsx"), Some((Runner::Vitest, ws.join("both"))));
        assert_eq!(of("none/x.ts"), None);
        assert_eq!(of("v/README.md"), None);
        assert!(describe(&ws.join("v"), |_| None)[0]
            .starts_with("vitest: not installed in the project's node_modules/.bin"));
        write("j/node_modules/.bin/jest", "");
        assert_eq!(
            describe(&ws.join("j"), |_| None),
            vec![format!(
                "jest runs `{}/j/node_modules/.bin/jest --findRelatedTests FILES` (the project chose jest)",
                ws.display()
            )]
        );
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
