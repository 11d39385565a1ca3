//! A monorepo through the warm language server (issue 42.3): packages that configure pyright
//! (`pyproject.toml [tool.pyright]`, `pyrightconfig.json`) are projects of their own, a
//! package without pyright configuration is part of the workspace's project (not a whole
//! program of its own), all of them served by one server in one check; every package's items
//! equal those of `pyright --outputjson` run at its project's root.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, Init, Plugin};
use openfiles_plugin_pyright::Pyright;

/// (file, line, column, rule, message), lines and columns 1-based.
type Shape = (PathBuf, u32, u32, String, String);

fn write(ws: &Path, rel: &str, text: &str) -> PathBuf {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// Packages `p0` (`[tool.pyright]`), `p1` (`[tool.pyright]` turning undefined names off),
/// `p2` (`pyrightconfig.json`) and `q` (a `pyproject.toml` with no pyright table), each a
/// `src/` layout with a module holding an undefined name and a caller passing too few
/// arguments. The edited files: each package's module.
fn monorepo(ws: &Path) -> Vec<PathBuf> {
    write(
        ws,
        "p0/pyproject.toml",
        "[project]\nname = \"p0\"\n[tool.pyright]\n",
    );
    write(
        ws,
        "p1/pyproject.toml",
        "[project]\nname = \"p1\"\n[tool.pyright]\nreportUndefinedVariable = \"none\"\n",
    );
    write(
        ws,
        "p2/pyrightconfig.json",
        "{\"typeCheckingMode\": \"standard\"}\n",
    );
    write(ws, "q/pyproject.toml", "[project]\nname = \"q\"\n");
    ["p0", "p1", "p2", "q"]
        .iter()
        .map(|p| {
            write(
                ws,
                &format!("{p}/src/{p}/use.py"),
                &format!("from {p}.mod import add\n\nthree = add(1)\n"),
            );
            write(
                ws,
                &format!("{p}/src/{p}/mod.py"),
                "def add(a: int, b: int) -> int:\n    return a + b + undefined_q\n",
            )
        })
        .collect()
}

/// What `pyright --outputjson` run at `root` reports on the files under `under`.
fn cli(root: &Path, under: &Path) -> BTreeSet<Shape> {
    cli_graded(root)
        .into_iter()
        .filter(|g| g.0.starts_with(under))
        .map(|(file, line, column, rule, message, _)| (file, line, column, rule, message))
        .collect()
}

#[test]
fn configured_packages_are_projects_served_together_and_equal_the_cli_per_package() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let edited = monorepo(&ws);
    let (p, _state, graded) = check_all(serde_json::Value::Null, &ws, edited);
    let got: BTreeSet<Shape> = graded
        .into_iter()
        .map(|(file, line, column, rule, message, _)| (file, line, column, rule, message))
        .collect();
    assert_eq!(p.fallbacks(), Vec::<String>::new(), "served, not the CLI");
    assert_eq!(p.server_pids().len(), 1, "one server for every package");
    for (pkg, root) in [("p0", "p0"), ("p1", "p1"), ("p2", "p2"), ("q", "")] {
        let under = ws.join(pkg);
        let want = cli(&ws.join(root), &under);
        let mine: BTreeSet<Shape> = got
            .iter()
            .filter(|s| s.0.starts_with(&under))
            .cloned()
            .collect();
        assert_eq!(mine, want, "{pkg}, as pyright run at {root:?}");
        let undefined = mine.iter().any(|s| s.3 == "reportUndefinedVariable");
        assert_eq!(
            undefined,
            pkg != "p1",
            "{pkg}'s own configuration: {mine:#?}"
        );
    }
    assert!(
        got.iter()
            .any(|s| s.0.starts_with(ws.join("p0")) && s.3 == "reportCallIssue"),
        "{got:#?}"
    );
}

/// (file, line, column, rule, message, severity).
type Graded = (PathBuf, u32, u32, String, String, String);

/// What `pyright --outputjson` run at `root` reports, with each item's severity.
fn cli_graded(root: &Path) -> BTreeSet<Graded> {
    let out = std::process::Command::new("pyright")
        .arg("--outputjson")
        .current_dir(root)
        .output()
        .expect("pyright (scripts/install-test-deps.sh)");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("pyright json");
    report["generalDiagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["severity"] != "information")
        .map(|d| {
            let at = |k: &str| d["range"]["start"][k].as_u64().unwrap() as u32 + 1;
            (
                PathBuf::from(d["file"].as_str().unwrap()),
                at("line"),
                at("character"),
                d["rule"].as_str().unwrap_or_default().to_owned(),
                d["message"].as_str().unwrap_or_default().to_owned(),
                d["severity"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// A plugin made with `config` (its state folder, kept while it is), and the items (hints and
/// information left out) of its check of `files` in `ws`, with `report_all`.
fn check_all(
    config: serde_json::Value,
    ws: &Path,
    files: Vec<PathBuf>,
) -> (Pyright, tempfile::TempDir, BTreeSet<Graded>) {
    let state = tempfile::tempdir().unwrap();
    let p = Pyright::create(Init {
        config,
        state_dir: state.path().to_owned(),
        host_version: "test".into(),
    })
    .unwrap()
    .0;
    let resp = p
        .check(CheckRequest {
            id: 1,
            workspace: ws.to_owned(),
            files,
            report_all: true,
            trusted: true,
            timeout_ms: 120_000,
            ..Default::default()
        })
        .unwrap();
    let grade = |s: openfiles_plugin_api::Severity| format!("{s:?}").to_lowercase();
    let graded = resp
        .files
        .iter()
        .flat_map(|f| {
            f.items.iter().map(|i| {
                let code = i.code.clone().unwrap_or_default();
                let g = grade(i.severity);
                (f.path.clone(), i.line, i.column, code, i.message.clone(), g)
            })
        })
        .filter(|g| g.5 != "info" && g.5 != "hint")
        .collect();
    (p, state, graded)
}

/// Issue 42.3: packages that each configure pyright with what one of its execution
/// environments can say (different rules, a `pyrightconfig.json` with its own `include`,
/// `exclude` and `pythonVersion`) are checked as one program — by the warm server and by the
/// command line — and every package's items, severities included, equal those of pyright
/// run at that package's root: its rules, its exclusions, its `src` imports.
#[test]
fn packages_an_environment_can_describe_are_one_program_with_each_packages_own_items() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    write(
        &ws,
        "p0/pyproject.toml",
        "[project]\nname = \"p0\"\n[tool.pyright]\nreportUnusedImport = \"warning\"\n",
    );
    write(
        &ws,
        "p1/pyproject.toml",
        "[project]\nname = \"p1\"\n[tool.pyright]\nreportUndefinedVariable = \"none\"\nreportCallIssue = \"warning\"\n",
    );
    write(
        &ws,
        "p2/pyrightconfig.json",
        "{\"include\": [\"src\"], \"exclude\": [\"src/p2/gen\"], \"pythonVersion\": \"3.9\"}\n",
    );
    write(&ws, "p2/tools/loose.py", "x: int = \"not included\"\n");
    write(&ws, "p2/src/p2/gen/made.py", "y: int = \"excluded\"\n");
    write(
        &ws,
        "p2/src/p2/new.py",
        "def f(x: int | None) -> None:\n    match x:\n        case _:\n            pass\n",
    );
    let edited: Vec<PathBuf> = ["p0", "p1", "p2"]
        .iter()
        .map(|p| {
            write(
                &ws,
                &format!("{p}/src/{p}/use.py"),
                &format!("import os\nfrom {p}.mod import add\n\nthree = add(1)\n"),
            );
            write(
                &ws,
                &format!("{p}/src/{p}/mod.py"),
                "def add(a: int, b: int) -> int:\n    return a + b + undefined_q\n",
            )
        })
        .collect();
    let mut want = BTreeSet::new();
    for pkg in ["p0", "p1", "p2"] {
        want.extend(cli_graded(&ws.join(pkg)));
    }
    for language_server in [true, false] {
        let config = serde_json::json!({"language_server": language_server});
        let (p, state, got) = check_all(config, &ws, edited.clone());
        assert_eq!(got, want, "language server: {language_server}");
        assert_eq!(p.fallbacks(), Vec::<String>::new());
        let combined: Vec<PathBuf> = std::fs::read_dir(state.path().join("combined"))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert_eq!(combined.len(), 1, "one program: {combined:?}");
        assert!(combined[0].join("pyrightconfig.json").is_file());
        if language_server {
            assert_eq!(p.server_pids().len(), 1);
        }
    }
    // Each package's own rules and files.
    let has = |pkg: &str, rule: &str, sev: &str| {
        want.iter()
            .any(|g| g.0.starts_with(ws.join(pkg)) && g.3 == rule && g.5 == sev)
    };
    assert!(has("p0", "reportUnusedImport", "warning"), "{want:#?}");
    assert!(has("p0", "reportCallIssue", "error"));
    assert!(has("p1", "reportCallIssue", "warning"));
    assert!(!has("p1", "reportUndefinedVariable", "error"));
    assert!(has("p2", "reportUndefinedVariable", "error"));
    assert!(
        want.iter().any(|g| g.0.ends_with("p2/src/p2/new.py")),
        "3.9: no match"
    );
    assert!(!want
        .iter()
        .any(|g| g.0.ends_with("loose.py") || g.0.ends_with("made.py")));
}
