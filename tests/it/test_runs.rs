//! Issue 40, the project's tests as a diagnostic source (`plugins/tests`), through a real
//! `openfiles serve`, the real hook and real pytest over a committed project: the edit's
//! hook names the test it broke in a test module nobody edited (`affectedBy` the edited
//! module), never a test that already failed at the commit nor one in a test module the edit
//! cannot reach, and a revert clears it. `check` runs the tests only with `--tests`.

use crate::common;
use crate::common::git;

use std::path::Path;

use common::plugins::plugin;
use common::{diagnostics, wait_until, Env};
use serde_json::{json, Value};

/// The hook's feedback for an edit of `file`, `None` when it printed nothing.
fn hook(env: &Env, ws: &Path, file: &Path) -> Option<String> {
    let payload =
        json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": file}}).to_string();
    let mut cmd = env.command(&["hook", "--agent", "claude", "--verbose"]);
    // The hook waits for the test runs (the config's long knock-on wait): a loaded machine
    // runs niced pytest slowly, so the bound is wider than `run_hook`'s.
    let child = common::hook::spawn_hook(&mut cmd, &payload);
    let out = common::hook::wait_output(child, std::time::Duration::from_secs(240));
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout.trim().is_empty() {
        return None;
    }
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    Some(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
}

fn entry_keys(ws: &Path) -> Vec<String> {
    diagnostics(ws)
        .map(|d| d.files.keys().cloned().collect())
        .unwrap_or_default()
}

/// `pkg/util.py`, imported by `tests/test_util.py` (which has a test already failing at the
/// commit); `tests/test_other.py` imports `pkg/other.py` and always fails.
fn project(ws: &Path) {
    let w = |rel: &str, text: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        "pyproject.toml",
        "[project]\nname = \"demo\"\nversion = \"0\"\n",
    );
    w("pkg/__init__.py", "");
    w("pkg/util.py", "def add(a, b):\n    return a + b\n");
    w("pkg/other.py", "X = 1\n");
    w(
        "tests/test_util.py",
        "from pkg.util import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_already_broken():\n    assert 1 == 0, \"broken at the commit\"\n",
    );
    w(
        "tests/test_other.py",
        "from pkg.other import X\n\n\ndef test_other_fails():\n    assert X == 2\n",
    );
    w(".gitignore", "__pycache__/\n");
    git(ws, &["init", "-q"]);
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "base"]);
}

#[test]
fn the_hook_names_the_test_an_edit_broke_with_affected_by_and_a_revert_clears_it() {
    let mut env = Env::new();
    env.plugin_path = Some(plugin("tests").into_os_string());
    // The hook waits for the tests (a loaded machine must not make them "slow"); the runner
    // at the test's own priority, so the hook's first `wait` (30 s) is not starved on a
    // loaded machine.
    std::fs::write(
        &env.config,
        "[hooks]\ntimeout_ms = 240000\nknock_on_wait_ms = 240000\n[plugin.tests]\nnice = 0\n",
    )
    .unwrap();
    let ws = env.workspace("py");
    project(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let util = ws.join("pkg/util.py");
    let committed = std::fs::read_to_string(&util).unwrap();
    std::fs::write(&util, "def add(a, b):\n    return a - b\n").unwrap();
    let text = hook(&env, &ws, &util).unwrap_or_else(|| {
        panic!(
            "no feedback naming the test; {:?}\nlog:\n{}",
            diagnostics(&ws),
            svc.log_text()
        )
    });
    assert!(
        text.contains(
            "- tests/test_util.py:5:1 error tests/test_util.py::test_add (pytest): assert -1 == 3"
        ),
        "{text}"
    );
    assert!(!text.contains("test_already_broken"), "{text}");
    assert!(!text.contains("test_other"), "{text}");
    wait_until("the test module is written as affected", || {
        entry_keys(&ws).contains(&"tests/test_util.py".to_string())
    });
    let d = diagnostics(&ws).unwrap();
    let entry = &d.files["tests/test_util.py"];
    assert_eq!(entry.affected_by, vec!["pkg/util.py".to_string()]);
    let codes: Vec<(Option<&str>, Option<bool>)> = entry
        .items
        .iter()
        .map(|i| (i.code.as_deref(), i.introduced))
        .collect();
    assert_eq!(
        codes,
        vec![
            (Some("tests/test_util.py::test_add"), Some(true)),
            (Some("tests/test_util.py::test_already_broken"), Some(false)),
        ]
    );
    assert!(!entry_keys(&ws).contains(&"tests/test_other.py".to_string()));

    // The revert: the test passes again and the entry leaves.
    std::fs::write(&util, committed).unwrap();
    hook(&env, &ws, &util);
    wait_until("the test module leaves diagnostics.json", || {
        !entry_keys(&ws).contains(&"tests/test_util.py".to_string())
    });
    svc.terminate();
}

/// `check` (in-process, no service) runs no test; `check --tests` runs them in a trusted
/// workspace and, in an untrusted one, says plainly that none ran and why. A `conftest.py`
/// that leaves a mark shows whether pytest started.
#[test]
fn check_runs_the_tests_only_with_tests_and_only_when_trusted() {
    let mut env = Env::new();
    env.plugin_path = Some(plugin("tests").into_os_string());
    std::fs::write(&env.config, "[plugin.tests]\nnice = 0\n").unwrap();
    let ws = env.workspace("py");
    project(&ws);
    std::fs::write(
        ws.join("tests/conftest.py"),
        "import pathlib\npathlib.Path(__file__).with_name(\"ran\").write_text(\"\")\n",
    )
    .unwrap();
    std::fs::write(ws.join("pkg/util.py"), "def add(a, b):\n    return a - b\n").unwrap();
    let ran = ws.join("tests/ran");
    let check = |args: &[&str]| {
        let mut all = vec!["check", "--json"];
        all.extend_from_slice(args);
        let util = ws.join("pkg/util.py");
        let test = ws.join("tests/test_util.py");
        all.extend([util.to_str().unwrap(), test.to_str().unwrap()]);
        let out = env.command(&all).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let codes: Vec<String> = v["files"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|e| e["items"].as_array().unwrap().clone())
            .filter(|i| i["source"] == "pytest")
            .map(|i| i["code"].as_str().unwrap_or_default().to_owned())
            .collect();
        (codes, String::from_utf8_lossy(&out.stderr).into_owned())
    };

    let (codes, stderr) = check(&["--tests"]);
    assert_eq!(codes, Vec::<String>::new());
    assert!(
        stderr.contains("the project's tests did not run")
            && stderr.contains("workspace is not trusted"),
        "{stderr}"
    );
    assert!(!ran.exists(), "conftest.py ran in an untrusted workspace");

    let trust = env
        .command(&["trust", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(trust.status.success(), "{trust:?}");
    let (codes, _) = check(&[]);
    assert_eq!(codes, Vec::<String>::new());
    assert!(!ran.exists(), "plain check ran the project's tests");

    let (codes, stderr) = check(&["--tests"]);
    assert!(
        codes.contains(&"tests/test_util.py::test_add".to_string()),
        "{codes:?} {stderr}"
    );
    assert!(ran.exists());
}
