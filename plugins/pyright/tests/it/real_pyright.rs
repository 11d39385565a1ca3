//! The pyright plugin against the real pyright command line (`pyright` on PATH, installed by
//! `scripts/install-test-deps.sh`): the edited file's items in the language server's shape
//! (rule as code, character columns), a caller in another file only with `report_all`, the
//! project's own config honoured, and a pyright that fails explained on every file.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, CheckResponse, Init, Item, Plugin, Severity};
use openfiles_plugin_pyright::Pyright;

fn plugin(config: serde_json::Value) -> Pyright {
    let state = tempfile::tempdir().unwrap();
    let (p, caps) = Pyright::create(Init {
        config,
        state_dir: state.path().to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert!(caps.project_wide);
    assert_eq!(caps.extensions, vec!["py".to_string(), "pyi".to_string()]);
    p
}

fn request(ws: &Path, files: Vec<PathBuf>, report_all: bool) -> CheckRequest {
    CheckRequest {
        id: 1,
        workspace: ws.to_owned(),
        files,
        report_all,
        timeout_ms: 120_000,
        ..Default::default()
    }
}

fn items<'a>(resp: &'a CheckResponse, file: &Path) -> Vec<&'a Item> {
    resp.files
        .iter()
        .filter(|f| f.path == file)
        .flat_map(|f| f.items.iter())
        .collect()
}

/// `m.py` (edited) has an error after a non-ASCII string; `b.py` calls `add` wrongly; `c.py`
/// has an error the project's config turns off.
fn project() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    std::fs::write(
        ws.join("pyproject.toml"),
        "[tool.pyright]\nreportAttributeAccessIssue = false\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("m.py"),
        "def add(a: int, b: int, c: int) -> int:\n    s = \"😀\"; return a + b + c + nope\n",
    )
    .unwrap();
    std::fs::write(ws.join("b.py"), "from m import add\n\nthree = add(1, 2)\n").unwrap();
    std::fs::write(ws.join("c.py"), "import os\n\nx = os.no_such_attribute\n").unwrap();
    (tmp, ws)
}

#[test]
fn the_edited_file_then_its_callers_with_report_all_and_the_projects_config() {
    let (_tmp, ws) = project();
    let (m, b, c) = (ws.join("m.py"), ws.join("b.py"), ws.join("c.py"));
    let p = plugin(serde_json::Value::Null);

    let resp = p.check(request(&ws, vec![m.clone()], false)).unwrap();
    let got = items(&resp, &m);
    assert_eq!(got.len(), 1, "{got:?}");
    let undefined = got[0];
    assert_eq!(undefined.severity, Severity::Error);
    assert_eq!(undefined.source, "Pyright");
    assert_eq!(undefined.code.as_deref(), Some("reportUndefinedVariable"));
    assert_eq!(undefined.message, "\"nope\" is not defined");
    // `nope` is the 33rd character of line 2 (pyright says UTF-16 unit 33: the emoji is two).
    assert_eq!((undefined.line, undefined.column), (2, 33));
    assert!(items(&resp, &b).is_empty(), "not asked for: {resp:?}");

    let resp = p.check(request(&ws, vec![m.clone()], true)).unwrap();
    let caller = items(&resp, &b);
    assert_eq!(caller.len(), 1, "{resp:?}");
    assert_eq!(caller[0].code.as_deref(), Some("reportCallIssue"));
    assert_eq!((caller[0].line, caller[0].column), (3, 9));
    assert!(caller[0].message.contains("\"c\""), "{}", caller[0].message);
    // reportAttributeAccessIssue is off in the project's [tool.pyright].
    assert!(items(&resp, &c).is_empty(), "{resp:?}");
}

#[test]
fn a_pyright_that_fails_is_explained_on_every_file() {
    let (_tmp, ws) = project();
    let m = ws.join("m.py");
    let p = plugin(serde_json::json!({"pyright": "/bin/false"}));
    let resp = p.check(request(&ws, vec![m.clone()], true)).unwrap();
    let got = items(&resp, &m);
    assert_eq!(got.len(), 1, "{resp:?}");
    assert_eq!(got[0].severity, Severity::Error);
    assert!(
        got[0].message.starts_with("pyright failed"),
        "{}",
        got[0].message
    );
}
