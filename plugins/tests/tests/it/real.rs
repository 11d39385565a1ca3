//! The plugin against the real runners (cargo and cargo-nextest, pytest, go; installed by
//! `scripts/install-test-deps.sh`) on small projects written here: exactly the failing tests
//! the edit reaches, at the assertion's line, never a failing test the edit cannot reach; a
//! test that passes when run again is flaky; an untrusted workspace runs nothing; the budget
//! stops a slow suite and says so; a cancel kills the runner.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Plugin, PluginError, Severity, UNTRUSTED_CODE};
use openfiles_plugin_tests::{BUDGET_CODE, FLAKY_PREFIX};
use serde_json::json;

use crate::support::{items, plugin, request, workspace, write};

fn e(path: &str, line: u32, source: &str, code: &str) -> (String, u32, String, String, String) {
    (
        path.into(),
        line,
        source.into(),
        code.into(),
        "Error".into(),
    )
}

/// A cargo workspace: `b` depends on `a`, `c` on nothing (and has a test that always fails).
fn cargo_project(ws: &Path) -> PathBuf {
    write(
        ws,
        "Cargo.toml",
        "[workspace]\nmembers = [\"a\", \"b\", \"c\"]\nresolver = \"2\"\n",
    );
    for name in ["a", "c"] {
        write(
            ws,
            &format!("{name}/Cargo.toml"),
            &format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        );
    }
    write(
        ws,
        "b/Cargo.toml",
        "[package]\nname = \"b\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\na = { path = \"../a\" }\n",
    );
    write(
        ws,
        "b/src/lib.rs",
        "pub fn twice(x: i32) -> i32 {\n    a::add(x, x)\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn twice_two() {\n        assert_eq!(super::twice(2), 4);\n    }\n}\n",
    );
    write(
        ws,
        "b/tests/it.rs",
        "#[test]\nfn integ() {\n    assert_eq!(b::twice(1), 2);\n}\n\n#[test]\nfn returns_err() -> Result<(), String> {\n    if b::twice(1) != 2 {\n        return Err(\"wrong\".into());\n    }\n    Ok(())\n}\n",
    );
    write(
        ws,
        "c/src/lib.rs",
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn always_fails() {\n        panic!(\"c is not reached by an edit of a\");\n    }\n}\n",
    );
    write(
        ws,
        "a/src/lib.rs",
        "pub fn add(x: i32, y: i32) -> i32 {\n    x + y\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn add_works() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n}\n",
    )
}

#[test]
fn cargo_names_the_tests_an_edit_broke_in_the_crate_and_its_dependents() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    let a = cargo_project(&ws);
    for nextest in [true, false] {
        let p = plugin(state.path(), json!({ "nextest": nextest }));
        let clean = p.check(request(&ws, vec![a.clone()], true)).unwrap();
        assert_eq!(items(&clean, &ws), vec![], "nextest {nextest}");
    }
    std::fs::write(
        &a,
        "pub fn add(x: i32, y: i32) -> i32 {\n    x + y + 1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn add_works() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n}\n",
    )
    .unwrap();
    for nextest in [true, false] {
        let p = plugin(state.path(), json!({ "nextest": nextest }));
        let resp = p.check(request(&ws, vec![a.clone()], true)).unwrap();
        assert_eq!(
            items(&resp, &ws),
            vec![
                e("a/src/lib.rs", 9, "cargo-test", "tests::add_works"),
                e("b/src/lib.rs", 9, "cargo-test", "tests::twice_two"),
                e("b/tests/it.rs", 3, "cargo-test", "integ"),
                // No panic in the workspace (the test returned an error): its `fn` line.
                e("b/tests/it.rs", 7, "cargo-test", "returns_err"),
            ],
            "nextest {nextest}"
        );
        let msg = &resp
            .files
            .iter()
            .find(|f| f.path.ends_with("b/src/lib.rs"))
            .unwrap()
            .items[0]
            .message;
        assert!(msg.starts_with("assertion `left == right` failed"), "{msg}");
        assert!(!msg.contains("panicked"), "{msg}");
    }
}

fn python_project(ws: &Path) -> PathBuf {
    write(
        ws,
        "pyproject.toml",
        "[project]\nname = \"demo\"\nversion = \"0\"\n",
    );
    write(ws, "pkg/__init__.py", "");
    write(ws, "pkg/other.py", "X = 1\n");
    write(
        ws,
        "tests/test_util.py",
        "from pkg.util import add\nimport pytest\n\n\n@pytest.mark.parametrize(\"a, want\", [(1, 2), (2, 3)])\ndef test_add(a, want):\n    assert add(a, 1) == want\n\n\nclass TestUtil:\n    def test_zero(self):\n        assert add(0, 0) == 0\n",
    );
    write(
        ws,
        "tests/test_other.py",
        "from pkg.other import X\n\n\ndef test_other_fails():\n    assert X == 2\n",
    );
    write(ws, "pkg/util.py", "def add(a, b):\n    return a + b\n")
}

#[test]
fn pytest_runs_only_the_test_modules_whose_imports_reach_the_edit() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    let util = python_project(&ws);
    let p = plugin(state.path(), serde_json::Value::Null);
    let clean = p.check(request(&ws, vec![util.clone()], true)).unwrap();
    assert_eq!(items(&clean, &ws), vec![]);
    std::fs::write(&util, "def add(a, b):\n    return a + b + 1\n").unwrap();
    let resp = p.check(request(&ws, vec![util.clone()], true)).unwrap();
    assert_eq!(
        items(&resp, &ws),
        vec![
            e(
                "tests/test_util.py",
                7,
                "pytest",
                "tests/test_util.py::test_add[1-2]"
            ),
            e(
                "tests/test_util.py",
                7,
                "pytest",
                "tests/test_util.py::test_add[2-3]"
            ),
            e(
                "tests/test_util.py",
                12,
                "pytest",
                "tests/test_util.py::TestUtil::test_zero"
            ),
        ]
    );
    let first = &resp
        .files
        .iter()
        .find(|f| f.path.ends_with("tests/test_util.py"))
        .unwrap()
        .items[0];
    assert_eq!(first.message, "assert 3 == 2\n +  where 3 = add(1, 1)");
    // An edit of another module selects its tests; the tests that failed in the last run are
    // run again with them (the session's other files do not select anything themselves).
    let other = ws.join("pkg/other.py");
    let mut next = request(&ws, vec![other.clone()], true);
    next.also_report = vec![util.clone()];
    let got = items(&p.check(next).unwrap(), &ws);
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got.contains(&e(
        "tests/test_other.py",
        5,
        "pytest",
        "tests/test_other.py::test_other_fails"
    )));
    assert!(got.contains(&e(
        "tests/test_util.py",
        12,
        "pytest",
        "tests/test_util.py::TestUtil::test_zero"
    )));
    // The baseline's run (over a snapshot) runs the whole suite.
    let mut whole = request(&ws, vec![util.clone()], true);
    whole.cache_of = Some(ws.clone());
    let resp = p.check(whole).unwrap();
    assert!(items(&resp, &ws).contains(&e(
        "tests/test_other.py",
        5,
        "pytest",
        "tests/test_other.py::test_other_fails"
    )));
    // Nothing written into the project.
    assert!(!ws.join(".pytest_cache").exists());
    assert!(!ws.join("tests/__pycache__").exists());
}

#[test]
fn go_test_runs_the_edited_package_and_its_importers() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    write(&ws, "go.mod", "module example.com/m\n\ngo 1.19\n");
    write(
        &ws,
        "app/app.go",
        "package app\n\nimport \"example.com/m/lib\"\n\nfunc Double(x int) int { return lib.Sum(x, x) }\n",
    );
    write(
        &ws,
        "app/app_test.go",
        "package app\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif got := Double(2); got != 4 {\n\t\tt.Errorf(\"Double(2) = %d, want 4\", got)\n\t}\n}\n\nfunc TestTable(t *testing.T) {\n\tt.Run(\"one\", func(t *testing.T) {\n\t\tif Double(1) != 2 {\n\t\t\tt.Fatal(\"Double(1) != 2\")\n\t\t}\n\t})\n}\n",
    );
    write(&ws, "other/other.go", "package other\n\nconst X = 1\n");
    write(
        &ws,
        "other/other_test.go",
        "package other\n\nimport \"testing\"\n\nfunc TestOther(t *testing.T) { t.Fatal(\"not reached by an edit of lib\") }\n",
    );
    let lib = write(
        &ws,
        "lib/lib.go",
        "package lib\n\nfunc Sum(a, b int) int { return a + b }\n",
    );
    let p = plugin(state.path(), serde_json::Value::Null);
    assert_eq!(
        items(
            &p.check(request(&ws, vec![lib.clone()], true)).unwrap(),
            &ws
        ),
        vec![]
    );
    std::fs::write(
        &lib,
        "package lib\n\nfunc Sum(a, b int) int { return a + b + 1 }\n",
    )
    .unwrap();
    let resp = p.check(request(&ws, vec![lib.clone()], true)).unwrap();
    assert_eq!(
        items(&resp, &ws),
        vec![
            e("app/app_test.go", 7, "go-test", "TestDouble"),
            e("app/app_test.go", 14, "go-test", "TestTable/one"),
        ]
    );
    let msgs: Vec<&str> = resp
        .files
        .iter()
        .flat_map(|f| f.items.iter().map(|i| i.message.as_str()))
        .collect();
    assert!(msgs.contains(&"Double(2) = 5, want 4"), "{msgs:?}");
}

#[test]
fn an_untrusted_workspace_runs_nothing() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    let util = python_project(&ws);
    let marker = ws.join("conftest-ran");
    write(
        &ws,
        "conftest.py",
        &format!(
            "open({:?}, \"w\").write(\"ran\")\n",
            marker.display().to_string()
        ),
    );
    let p = plugin(state.path(), serde_json::Value::Null);
    let resp = p.check(request(&ws, vec![util.clone()], false)).unwrap();
    assert_eq!(resp.files.len(), 1);
    let item = &resp.files[0].items[0];
    assert_eq!(item.code.as_deref(), Some(UNTRUSTED_CODE));
    assert_eq!(item.source, "tests");
    assert!(
        !marker.exists(),
        "conftest.py ran in an untrusted workspace"
    );
    // Trusted, the same project's conftest.py does run (the marker is a real witness).
    p.check(request(&ws, vec![util], true)).unwrap();
    assert!(marker.exists());
}

#[test]
fn a_test_that_passes_when_run_again_is_flaky_not_broken() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    write(
        &ws,
        "pyproject.toml",
        "[project]\nname = \"demo\"\nversion = \"0\"\n",
    );
    let test = write(
        &ws,
        "tests/test_flaky.py",
        "import os\n\ndef test_sometimes():\n    seen = os.path.join(os.path.dirname(__file__), \"seen\")\n    if not os.path.exists(seen):\n        open(seen, \"w\").close()\n        assert False, \"first run\"\n",
    );
    let p = plugin(state.path(), serde_json::Value::Null);
    let resp = p.check(request(&ws, vec![test.clone()], true)).unwrap();
    assert_eq!(
        items(&resp, &ws),
        vec![(
            "tests/test_flaky.py".to_string(),
            7,
            "pytest".to_string(),
            "tests/test_flaky.py::test_sometimes".to_string(),
            "Warning".to_string()
        )]
    );
    let item = &resp.files[0].items[0];
    assert_eq!(item.severity, Severity::Warning);
    assert!(item.message.starts_with(FLAKY_PREFIX), "{}", item.message);
}

#[test]
fn the_budget_stops_a_slow_suite_and_says_what_did_not_finish() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    write(
        &ws,
        "pyproject.toml",
        "[project]\nname = \"demo\"\nversion = \"0\"\n",
    );
    let test = write(
        &ws,
        "tests/test_slow.py",
        "import time\n\ndef test_slow():\n    time.sleep(600)\n",
    );
    let p = plugin(state.path(), json!({ "budget_ms": 1500 }));
    let resp = p.check(request(&ws, vec![test.clone()], true)).unwrap();
    let item = &resp.files.iter().find(|f| f.path == test).unwrap().items[0];
    assert_eq!(item.code.as_deref(), Some(BUDGET_CODE));
    assert_eq!(item.severity, Severity::Warning);
    assert!(
        item.message.contains("tests/test_slow.py"),
        "{}",
        item.message
    );
    assert!(item.message.contains("did not finish"), "{}", item.message);
}

#[test]
fn a_cancel_kills_the_runner() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    write(
        &ws,
        "pyproject.toml",
        "[project]\nname = \"demo\"\nversion = \"0\"\n",
    );
    let pid_file = ws.join("pid");
    let test = write(
        &ws,
        "tests/test_slow.py",
        &format!(
            "import os, time\n\ndef test_slow():\n    open({:?}, \"w\").write(str(os.getpid()))\n    time.sleep(600)\n",
            pid_file.display().to_string()
        ),
    );
    let p = std::sync::Arc::new(plugin(state.path(), serde_json::Value::Null));
    let p2 = p.clone();
    let ws2 = ws.clone();
    let check = std::thread::spawn(move || p2.check(request(&ws2, vec![test], true)));
    while std::fs::read_to_string(&pid_file).map_or(true, |s| s.is_empty()) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    p.cancel(1);
    let r = check.join().unwrap();
    assert!(matches!(r, Err(PluginError::Cancelled)), "{r:?}");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "pytest {pid} still runs"
    );
}
