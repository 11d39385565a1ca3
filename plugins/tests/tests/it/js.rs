//! The plugin against the real vitest and jest (pinned, installed by
//! `scripts/install-test-deps.sh` into `/opt/openfiles-js-tests` or
//! `$OPENFILES_JS_TESTS_PREFIX`; a generated project links its `node_modules` there): the
//! runner's own selection names exactly the failing tests the edit reaches, by their full
//! name path with the file, at the assertion's line; a test that fails at first and passes
//! when run again is flaky; an untrusted workspace starts neither runner nor its config; a
//! cancel kills the runner and its workers.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Plugin, Severity, UNTRUSTED_CODE};
use openfiles_plugin_tests::FLAKY_PREFIX;

use crate::support::{items, plugin, request, workspace, write};

fn node_modules() -> PathBuf {
    let prefix = std::env::var_os("OPENFILES_JS_TESTS_PREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/openfiles-js-tests"));
    let nm = prefix.join("node_modules");
    assert!(
        nm.join(".bin/vitest").is_file() && nm.join(".bin/jest").is_file(),
        "vitest and jest are not installed in {}: run scripts/install-test-deps.sh",
        prefix.display()
    );
    nm
}

fn e(path: &str, line: u32, source: &str, code: &str) -> (String, u32, String, String, String) {
    (
        path.into(),
        line,
        source.into(),
        code.into(),
        "Error".into(),
    )
}

/// A vitest project: `test/add.test.js` imports `src/add.js`; `test/other.test.js` always
/// fails and no edit of `src/add.js` reaches it. Its config leaves a mark when loaded.
fn vitest_project(ws: &Path) -> PathBuf {
    std::os::unix::fs::symlink(node_modules(), ws.join("node_modules")).unwrap();
    write(
        ws,
        "package.json",
        r#"{"type": "module", "devDependencies": {"vitest": "4.1.12"}}"#,
    );
    write(
        ws,
        "vitest.config.js",
        "import { writeFileSync } from 'node:fs';\nwriteFileSync(new URL('./config-ran', import.meta.url), '');\nexport default {};\n",
    );
    write(ws, "src/other.js", "export const X = 1;\n");
    write(
        ws,
        "test/add.test.js",
        "import { describe, it, expect } from 'vitest';\nimport { add } from '../src/add.js';\n\ndescribe('add', () => {\n  it('adds two', () => {\n    expect(add(1, 2)).toBe(3);\n  });\n  it('adds zero', () => {\n    expect(add(0, 0)).toBe(0);\n  });\n});\n",
    );
    write(
        ws,
        "test/other.test.js",
        "import { it, expect } from 'vitest';\nimport { X } from '../src/other.js';\n\nit('other fails', () => {\n  expect(X).toBe(2);\n});\n",
    );
    write(
        ws,
        "src/add.js",
        "export function add(a, b) {\n  return a + b;\n}\n",
    )
}

#[test]
fn vitest_related_names_the_tests_an_edit_broke() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    let add = vitest_project(&ws);
    let p = plugin(state.path(), serde_json::Value::Null);
    let clean = p.check(request(&ws, vec![add.clone()], true)).unwrap();
    assert_eq!(items(&clean, &ws), vec![]);
    std::fs::write(
        &add,
        "export function add(a, b) {\n  return a + b + 1;\n}\n",
    )
    .unwrap();
    let resp = p.check(request(&ws, vec![add.clone()], true)).unwrap();
    assert_eq!(
        items(&resp, &ws),
        vec![
            e(
                "test/add.test.js",
                6,
                "vitest",
                "test/add.test.js > add > adds two"
            ),
            e(
                "test/add.test.js",
                9,
                "vitest",
                "test/add.test.js > add > adds zero"
            ),
        ]
    );
    let msg = &resp
        .files
        .iter()
        .find(|f| f.path.ends_with("test/add.test.js"))
        .unwrap()
        .items[0]
        .message;
    assert!(
        msg.starts_with("AssertionError: expected 4 to be 3"),
        "{msg}"
    );
    assert!(!msg.contains(" at "), "{msg}");
}

#[test]
fn an_untrusted_workspace_starts_no_javascript_runner() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    let add = vitest_project(&ws);
    let p = plugin(state.path(), serde_json::Value::Null);
    let resp = p.check(request(&ws, vec![add.clone()], false)).unwrap();
    let item = &resp.files[0].items[0];
    assert_eq!(item.code.as_deref(), Some(UNTRUSTED_CODE));
    assert!(
        !ws.join("config-ran").exists(),
        "vitest.config.js ran in an untrusted workspace"
    );
    // Trusted, the same project runs (the mark shows the check above could have seen it).
    p.check(request(&ws, vec![add], true)).unwrap();
    assert!(ws.join("config-ran").exists());
}

/// A jest project (CommonJS): `test/add.test.js` reaches `src/add.js`, `test/flaky.test.js`
/// fails on its first run only, `test/other.test.js` always fails and is not reached.
fn jest_project(ws: &Path) -> PathBuf {
    std::os::unix::fs::symlink(node_modules(), ws.join("node_modules")).unwrap();
    write(
        ws,
        "package.json",
        r#"{"name": "demo", "scripts": {"test": "jest"}}"#,
    );
    write(ws, "src/other.js", "exports.X = 1;\n");
    write(
        ws,
        "test/add.test.js",
        "const { add } = require('../src/add');\n\ndescribe('add', () => {\n  describe('small', () => {\n    test('one and two', () => {\n      expect(add(1, 2)).toBe(3);\n    });\n  });\n});\n",
    );
    write(
        ws,
        "test/other.test.js",
        "const { X } = require('../src/other');\n\ntest('other fails', () => {\n  expect(X).toBe(2);\n});\n",
    );
    write(ws, "src/add.js", "exports.add = (a, b) => a + b;\n")
}

#[test]
fn jest_find_related_tests_names_the_broken_and_the_flaky() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    let add = jest_project(&ws);
    let p = plugin(state.path(), serde_json::Value::Null);
    let clean = p.check(request(&ws, vec![add.clone()], true)).unwrap();
    assert_eq!(items(&clean, &ws), vec![]);
    std::fs::write(&add, "exports.add = (a, b) => a + b + 1;\n").unwrap();
    // Fails on its first run (it leaves a mark), passes when run again.
    write(
        &ws,
        "test/flaky.test.js",
        "const fs = require('fs');\nconst path = require('path');\nrequire('../src/add');\n\ntest('sometimes', () => {\n  const mark = path.join(__dirname, 'ran-once');\n  const first = !fs.existsSync(mark);\n  fs.writeFileSync(mark, '');\n  expect(first).toBe(false);\n});\n",
    );
    let resp = p.check(request(&ws, vec![add.clone()], true)).unwrap();
    let mut want = vec![
        e(
            "test/add.test.js",
            6,
            "jest",
            "test/add.test.js > add > small > one and two",
        ),
        (
            "test/flaky.test.js".into(),
            9,
            "jest".into(),
            "test/flaky.test.js > sometimes".into(),
            "Warning".into(),
        ),
    ];
    want.sort();
    assert_eq!(items(&resp, &ws), want);
    let flaky = resp
        .files
        .iter()
        .find(|f| f.path.ends_with("test/flaky.test.js"))
        .unwrap();
    assert_eq!(flaky.items[0].severity, Severity::Warning);
    assert!(flaky.items[0].message.starts_with(FLAKY_PREFIX));
    let broken = &resp
        .files
        .iter()
        .find(|f| f.path.ends_with("test/add.test.js"))
        .unwrap()
        .items[0]
        .message;
    assert!(broken.contains("Expected: 3"), "{broken}");
}

/// A cancel stops vitest and the worker process it forked for the test (the runner's
/// process group).
#[test]
fn a_cancel_kills_vitest_and_its_workers() {
    let (_t, ws) = workspace();
    let state = tempfile::tempdir().unwrap();
    let add = vitest_project(&ws);
    let pid_file = ws.join("pid");
    write(
        &ws,
        "test/slow.test.js",
        &format!(
            "import {{ it }} from 'vitest';\nimport {{ writeFileSync }} from 'node:fs';\nimport {{ add }} from '../src/add.js';\n\nit('slow', async () => {{\n  writeFileSync({:?}, String(process.pid));\n  await new Promise((r) => setTimeout(r, 600000));\n  add(1, 1);\n}}, 600000);\n",
            pid_file.display().to_string()
        ),
    );
    let p = std::sync::Arc::new(plugin(state.path(), serde_json::Value::Null));
    let p2 = p.clone();
    let ws2 = ws.clone();
    let check = std::thread::spawn(move || p2.check(request(&ws2, vec![add], true)));
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&pid_file).map_or(true, |s| s.is_empty()) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(240),
            "the slow test never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    p.cancel(1);
    let r = check.join().unwrap();
    assert!(
        matches!(r, Err(openfiles_plugin_api::PluginError::Cancelled)),
        "{r:?}"
    );
    // Gone, or a zombie nobody has reaped yet: not running.
    let running = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
    };
    let start = std::time::Instant::now();
    while running() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "vitest's worker {pid} still runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
