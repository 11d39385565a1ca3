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
        .filter_map(|d| {
            let file = PathBuf::from(d["file"].as_str()?);
            let at = |k: &str| d["range"]["start"][k].as_u64().unwrap() as u32 + 1;
            file.starts_with(under).then(|| {
                (
                    file.clone(),
                    at("line"),
                    at("character"),
                    d["rule"].as_str().unwrap_or_default().to_owned(),
                    d["message"].as_str().unwrap_or_default().to_owned(),
                )
            })
        })
        .collect()
}

#[test]
fn configured_packages_are_projects_served_together_and_equal_the_cli_per_package() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let edited = monorepo(&ws);
    let state = tempfile::tempdir().unwrap();
    let p = Pyright::create(Init {
        config: serde_json::Value::Null,
        state_dir: state.path().to_owned(),
        host_version: "test".into(),
    })
    .unwrap()
    .0;
    let resp = p
        .check(CheckRequest {
            id: 1,
            workspace: ws.clone(),
            files: edited,
            report_all: true,
            trusted: true,
            timeout_ms: 120_000,
            ..Default::default()
        })
        .unwrap();
    let got: BTreeSet<Shape> = resp
        .files
        .iter()
        .flat_map(|f| {
            f.items.iter().map(|i| {
                let code = i.code.clone().unwrap_or_default();
                (f.path.clone(), i.line, i.column, code, i.message.clone())
            })
        })
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
