//! pytest: the test modules whose imports reach the edited modules, run with a JUnit XML
//! report to a private file (pytest's own `--junitxml`; nothing is installed into the
//! project, no `.pytest_cache` or bytecode is written into it).
//!
//! Selection, without running anything of the project: the import graph from `ruff analyze
//! graph --direction dependents` when ruff is installed, else a bounded scan of the
//! project's `import` lines ([`import_graph`]); every module that reaches an edited one
//! through imports, of them the test modules (`test_*.py`, `*_test.py`). An edited test
//! module is selected itself, an edited `conftest.py` selects every test module below its
//! folder. When neither graph can be had, the whole suite runs (within the budget).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

use openfiles_plugin_api::gate::Program;
use openfiles_plugin_api::PluginError;

use crate::{junit, mark_flaky, run, Failure, Job, Outcome};

/// The most Python files the plugin's own import scan reads.
const MAX_SCAN_FILES: usize = 20_000;
/// The largest Python file it reads.
const MAX_SCAN_BYTES: u64 = 1 << 20;

/// Run the tests of `job`'s project that its edited files reach.
pub fn run(job: &Job) -> Result<Outcome, PluginError> {
    let selected = if job.whole {
        None
    } else {
        match select(job) {
            Some(s) if s.is_empty() => return Ok(Outcome::default()),
            other => other,
        }
    };
    let pytest = program(job)?;
    let report = job.scratch("junit.xml")?;
    let mut args: Vec<String> = pytest.1.iter().map(|s| (*s).to_owned()).collect();
    args.extend(
        [
            "-p",
            "no:cacheprovider",
            "-o",
            "junit_family=xunit1",
            "-q",
            "--no-header",
        ]
        .map(str::to_owned),
    );
    args.push(format!("--junitxml={}", report.display()));
    if let Some(sel) = &selected {
        args.push("--".to_owned());
        args.extend(sel.iter().cloned());
    }
    let ran = job.run(&mut command(job, &pytest.0, &args))?;
    let xml = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    if ran.timed_out() {
        let what = match &selected {
            Some(s) => format!("the test modules {}", list(s)),
            None => "the project's test suite".to_owned(),
        };
        return Ok(Outcome {
            unfinished: Some(format!(
                "pytest did not finish within the budget: {what} (at {}) not run to the end",
                job.root.display()
            )),
            ..Outcome::default()
        });
    }
    let code = ran.status.and_then(|s| s.code());
    let reported = xml.contains("<failure") || xml.contains("<error");
    if xml.is_empty() || !matches!(code, Some(0 | 1 | 5)) && !reported {
        if code == Some(5) {
            return Ok(Outcome::default()); // no tests collected
        }
        return Err(PluginError::Tool(format!(
            "pytest failed ({}) in {}:\n{}",
            ran.status.map(|s| s.to_string()).unwrap_or_default(),
            job.root.display(),
            run::tail(&format!("{}\n{}", ran.stdout, ran.stderr), 12)
        )));
    }
    let mut failures = failures(&xml, job.root);
    mark_flaky(job, &mut failures, |f| {
        let mut args: Vec<String> = pytest.1.iter().map(|s| (*s).to_owned()).collect();
        args.extend(["-p", "no:cacheprovider", "-q", "--no-header"].map(str::to_owned));
        args.push(f.id.clone());
        Ok(job.run(&mut command(job, &pytest.0, &args))?.success())
    })?;
    Ok(Outcome {
        failures,
        ..Outcome::default()
    })
}

/// pytest's command at the project root: no bytecode written into the project, and the
/// root (and its `src/`, a src layout's package folder) first on `sys.path`, as `python -m
/// pytest` puts the root: a project's tests import its package from the tree being tested —
/// over the baseline's snapshot, the snapshot's, never the workspace an editable install
/// (or the user's `PYTHONPATH`) points at.
fn command(job: &Job, pytest: &Program, args: &[String]) -> std::process::Command {
    let mut cmd = pytest.command(args);
    let mut path = std::ffi::OsString::from(job.root);
    let src = job.root.join("src");
    if src.is_dir() {
        path.push(":");
        path.push(&src);
    }
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    cmd.current_dir(job.root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONPATH", path);
    cmd
}

fn list(names: &[String]) -> String {
    let mut s = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 5 {
        s.push_str(&format!(" and {} more", names.len() - 5));
    }
    s
}

/// pytest for the project: its own virtual environment's (the workspace is trusted), else
/// `pytest` on `PATH`, else `python3 -m pytest`. The program and the arguments before
/// pytest's own.
fn program(job: &Job) -> Result<(Program, &'static [&'static str]), PluginError> {
    for venv in [".venv", "venv"] {
        let p = job.root.join(venv).join("bin/pytest");
        if let Ok(p) = Program::at(&p, &job.scope, "pytest (tests plugin)") {
            return Ok((p, &[]));
        }
    }
    if let Ok(p) = job.program("pytest", "pytest (tests plugin)") {
        return Ok((p, &[]));
    }
    Ok((
        job.program("python3", "python3 -m pytest (tests plugin)")?,
        &["-m", "pytest"],
    ))
}

/// The failing tests of a JUnit report written by pytest run at `root`.
pub fn failures(xml: &str, root: &Path) -> Vec<Failure> {
    junit::cases(xml)
        .into_iter()
        .filter_map(|case| {
            let (message, text) = case.failure.clone()?;
            // A collection error names the module (`tests.test_x`), no file.
            let file = case.file.clone().unwrap_or_else(|| {
                let module = if case.classname.is_empty() {
                    &case.name
                } else {
                    &case.classname
                };
                format!("{}.py", module.replace('.', "/"))
            });
            let module = file.trim_end_matches(".py").replace('/', ".");
            let mut id = file.clone();
            if let Some(class) = case
                .classname
                .strip_prefix(&module)
                .and_then(|c| c.strip_prefix('.'))
            {
                for part in class.split('.') {
                    id.push_str("::");
                    id.push_str(part);
                }
            }
            if case.file.is_some() {
                id.push_str("::");
                id.push_str(&case.name);
            }
            let line = assertion_line(&text, &file)
                .or(case.line.map(|l| l + 1))
                .unwrap_or(1);
            let message = if message.trim().is_empty() {
                text.lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .to_owned()
            } else {
                message
            };
            Some(Failure {
                id,
                path: root.join(&file),
                line,
                message,
                flaky: false,
            })
        })
        .collect()
}

/// The line of the last traceback entry in `file` (`tests/test_x.py:12: AssertionError`, or
/// `tests/test_x.py:12: in helper`).
fn assertion_line(text: &str, file: &str) -> Option<u32> {
    text.lines().rev().find_map(|l| {
        let rest = l.strip_prefix(file)?.strip_prefix(':')?;
        let (n, _) = rest.split_once(':')?;
        n.parse().ok()
    })
}

/// The test modules (paths relative to the project root) the edited files reach; `None`
/// when no import graph could be had (run everything).
fn select(job: &Job) -> Option<Vec<String>> {
    let edited: Vec<String> = job
        .files
        .iter()
        .filter_map(|f| f.strip_prefix(job.root).ok())
        .map(|r| r.to_string_lossy().into_owned())
        .collect();
    let graph = ruff_graph(job).or_else(|| import_graph(job.workspace, job.root))?;
    let selected = select_in(&graph, &edited, |rel| job.root.join(rel).is_file());
    let total = graph.keys().filter(|m| is_test_module(m)).count();
    eprintln!(
        "tests: pytest at {}: {} of {total} test modules selected",
        job.root.display(),
        selected.len()
    );
    Some(selected)
}

/// Dependents per module: the files whose imports name each file.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The selection over `graph` for the `edited` files (paths relative to the root).
pub fn select_in(graph: &Graph, edited: &[String], exists: impl Fn(&str) -> bool) -> Vec<String> {
    let mut reach: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = edited.iter().cloned().collect();
    while let Some(m) = queue.pop_front() {
        if !reach.insert(m.clone()) {
            continue;
        }
        for d in graph.get(&m).into_iter().flatten() {
            queue.push_back(d.clone());
        }
    }
    let mut out: BTreeSet<String> = reach.into_iter().filter(|m| is_test_module(m)).collect();
    for e in edited.iter().filter(|e| e.ends_with("conftest.py")) {
        let dir = Path::new(e).parent().unwrap_or(Path::new(""));
        out.extend(
            graph
                .keys()
                .filter(|m| is_test_module(m) && Path::new(m).starts_with(dir))
                .cloned(),
        );
    }
    out.into_iter().filter(|m| exists(m)).collect()
}

/// pytest's default test file names.
pub fn is_test_module(rel: &str) -> bool {
    let name = Path::new(rel)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
}

/// `ruff analyze graph --direction dependents` at the root.
fn ruff_graph(job: &Job) -> Option<Graph> {
    let ruff = job
        .program("ruff", "ruff analyze graph (tests plugin)")
        .ok()?;
    let mut cmd = ruff.command(["analyze", "graph", "--direction", "dependents", "."]);
    cmd.current_dir(job.root);
    let ran = job.run(&mut cmd).ok()?;
    if !ran.success() {
        return None;
    }
    serde_json::from_str(&ran.stdout).ok()
}

/// The plugin's own import graph of the Python files under `root` (read the confined way,
/// at most `MAX_SCAN_FILES` files; `None` past that): dependents per file.
pub fn import_graph(workspace: &Path, root: &Path) -> Option<Graph> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                let skip = name.starts_with('.')
                    || matches!(
                        name.as_str(),
                        "__pycache__"
                            | "node_modules"
                            | "venv"
                            | "build"
                            | "dist"
                            | "site-packages"
                    );
                if !skip {
                    dirs.push(e.path());
                }
            } else if ft.is_file() && name.ends_with(".py") {
                files.push(e.path());
                if files.len() > MAX_SCAN_FILES {
                    return None;
                }
            }
        }
    }
    // Module names per file: from the root, and from a `src/` layout's folder.
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .ok()
            .map(|r| r.to_string_lossy().into_owned())
    };
    let mut modules: BTreeMap<String, String> = BTreeMap::new();
    for f in &files {
        let Some(r) = rel(f) else { continue };
        for base in [r.as_str(), r.strip_prefix("src/").unwrap_or("")] {
            if base.is_empty() {
                continue;
            }
            let m = base
                .trim_end_matches(".py")
                .trim_end_matches("/__init__")
                .replace('/', ".");
            modules.entry(m).or_insert_with(|| r.clone());
        }
    }
    let mut graph: Graph = BTreeMap::new();
    for f in &files {
        let Some(r) = rel(f) else { continue };
        let Ok(bytes) =
            openfiles_plugin_api::confine::read_workspace_file(workspace, f, MAX_SCAN_BYTES)
        else {
            continue;
        };
        let package = package_of(&r);
        for name in imported(&String::from_utf8_lossy(&bytes), &package) {
            if let Some(target) = modules.get(&name) {
                if *target != r {
                    graph.entry(target.clone()).or_default().insert(r.clone());
                }
            }
        }
        graph.entry(r).or_default();
    }
    Some(graph)
}

/// The dotted package a module file is in (`pkg/sub/m.py` → `pkg.sub`), for relative imports.
fn package_of(rel: &str) -> String {
    let rel = rel.strip_prefix("src/").unwrap_or(rel);
    Path::new(rel)
        .parent()
        .map(|p| p.to_string_lossy().replace('/', "."))
        .unwrap_or_default()
}

/// The module names a Python text's import lines may name (each dotted prefix too, and
/// `from m import x` also as `m.x`, which may be a submodule), relative ones resolved in
/// `package`.
pub fn imported(text: &str, package: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |name: &str| {
        let mut acc = String::new();
        for part in name.split('.').filter(|p| !p.is_empty()) {
            if !acc.is_empty() {
                acc.push('.');
            }
            acc.push_str(part);
            out.insert(acc.clone());
        }
    };
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("import ") {
            for m in rest.split(',') {
                add(m.split_whitespace().next().unwrap_or(""));
            }
        } else if let Some(rest) = line.strip_prefix("from ") {
            let Some((module, names)) = rest.split_once(" import ") else {
                continue;
            };
            let module = module.trim();
            let dots = module.chars().take_while(|c| *c == '.').count();
            let base = if dots > 0 {
                let mut parts: Vec<&str> = package.split('.').filter(|p| !p.is_empty()).collect();
                for _ in 1..dots {
                    parts.pop();
                }
                let tail = &module[dots..];
                let mut b = parts.join(".");
                if !tail.is_empty() {
                    if !b.is_empty() {
                        b.push('.');
                    }
                    b.push_str(tail);
                }
                b
            } else {
                module.to_owned()
            };
            add(&base);
            for n in names.trim_matches(|c| c == '(' || c == ')').split(',') {
                let n = n.split_whitespace().next().unwrap_or("");
                if !n.is_empty() && n != "*" && n != "(" {
                    add(&if base.is_empty() {
                        n.to_owned()
                    } else {
                        format!("{base}.{n}")
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_from_a_report() {
        let xml = r#"<testsuites><testsuite><testcase classname="tests.test_util" name="test_add[1]" file="tests/test_util.py" line="3"><failure message="assert 2 == 3">x

tests/test_util.py:6: AssertionError</failure></testcase><testcase classname="tests.test_util.TestC" name="test_m" file="tests/test_util.py" line="8"><failure message="">boom
tests/helper.py:2: in check
tests/test_util.py:10: in test_m
E  ValueError</failure></testcase><testcase classname="" name="tests.test_broken"><error message="collection failure">ImportError</error></testcase></testsuite></testsuites>"#;
        let root = Path::new("/p");
        let f = failures(xml, root);
        let got: Vec<(&str, &Path, u32, &str)> = f
            .iter()
            .map(|f| (f.id.as_str(), f.path.as_path(), f.line, f.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "tests/test_util.py::test_add[1]",
                    Path::new("/p/tests/test_util.py"),
                    6,
                    "assert 2 == 3"
                ),
                (
                    "tests/test_util.py::TestC::test_m",
                    Path::new("/p/tests/test_util.py"),
                    10,
                    "E  ValueError"
                ),
                (
                    "tests/test_broken.py",
                    Path::new("/p/tests/test_broken.py"),
                    1,
                    "collection failure"
                ),
            ]
        );
    }

    #[test]
    fn imports_named_by_a_module() {
        let text = "import os, pkg.util as u\nfrom .sibling import a, b\nfrom ..up import (c)\nfrom pkg import helpers\n";
        let got = imported(text, "pkg.sub");
        for want in [
            "os",
            "pkg",
            "pkg.util",
            "pkg.sub.sibling",
            "pkg.sub.sibling.a",
            "pkg.up",
            "pkg.up.c",
            "pkg.helpers",
        ] {
            assert!(got.contains(want), "{want} missing from {got:?}");
        }
    }

    #[test]
    fn the_own_scan_selects_the_test_modules_that_reach_an_edit() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let w = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w("pkg/__init__.py", "");
        w("pkg/util.py", "def add(a, b):\n    return a + b\n");
        w("pkg/api.py", "from pkg.util import add\n");
        w("pkg/other.py", "X = 1\n");
        w("tests/test_api.py", "from pkg import api\n");
        w("tests/test_other.py", "import pkg.other\n");
        w(".venv/lib/test_skip.py", "import pkg.util\n");
        let graph = import_graph(&root, &root).unwrap();
        let sel = select_in(&graph, &["pkg/util.py".to_string()], |r| {
            root.join(r).is_file()
        });
        assert_eq!(sel, vec!["tests/test_api.py".to_string()]);
        let sel = select_in(&graph, &["tests/conftest.py".to_string()], |r| {
            root.join(r).is_file()
        });
        assert_eq!(
            sel,
            vec![
                "tests/test_api.py".to_string(),
                "tests/test_other.py".to_string()
            ]
        );
    }
}
