//! The plugin with the other Python type checkers a project may choose, against their real
//! command lines (`basedpyright` and `ty` on PATH, installed by
//! `scripts/install-test-deps.sh`): a caller broken in another module named with its exact
//! place, rule and message, in the words of that checker's language server (its `source`,
//! message and character column, so the service lists a problem both report once); and a
//! project nested in it that chose the other checker left to that one.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, CheckResponse, Init, Item, Plugin, Severity};
use openfiles_plugin_pyright::Pyright;

fn plugin() -> Pyright {
    let state = tempfile::tempdir().unwrap();
    let (p, caps) = Pyright::create(Init {
        config: serde_json::Value::Null,
        state_dir: state.path().to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert!(caps.project_wide);
    assert!(caps.project_markers.contains(&"ty.toml".to_string()));
    p
}

fn check(p: &Pyright, ws: &Path, file: &Path) -> CheckResponse {
    p.check(CheckRequest {
        id: 1,
        workspace: ws.to_owned(),
        files: vec![file.to_owned()],
        report_all: true,
        timeout_ms: 120_000,
        ..Default::default()
    })
    .unwrap()
}

fn items<'a>(resp: &'a CheckResponse, file: &Path) -> Vec<&'a Item> {
    resp.files
        .iter()
        .filter(|f| f.path == file)
        .flat_map(|f| f.items.iter())
        .collect()
}

/// A workspace with a project in `main` (relative to it, "" for its root): `m.py` (edited:
/// `add` takes a third argument, and an undefined name after an emoji), `b.py` calling `add`
/// with two; and in `other` a project of its own, with a mistake of its own, asking for
/// `other_config`'s checker.
fn workspace(
    main: &str,
    config: (&str, &str),
    other: &str,
    other_config: (&str, &str),
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let (app, other) = (ws.join(main), ws.join(other));
    std::fs::create_dir_all(&app).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(app.join(config.0), config.1).unwrap();
    std::fs::write(
        app.join("m.py"),
        "def add(a: int, b: int, c: int) -> int:\n    s = \"😀\"; return a + b + c + nope\n",
    )
    .unwrap();
    std::fs::write(app.join("b.py"), "from m import add\n\nthree = add(1, 2)\n").unwrap();
    std::fs::write(other.join(other_config.0), other_config.1).unwrap();
    std::fs::write(other.join("c.py"), "x: int = \"not a number\"\n").unwrap();
    (tmp, ws, app)
}

/// (source, code, line, column, message) of a file's items.
fn shape(items: &[&Item]) -> Vec<(String, String, u32, u32, String)> {
    items
        .iter()
        .map(|i| {
            assert_eq!(i.severity, Severity::Error, "{i:?}");
            (
                i.source.clone(),
                i.code.clone().unwrap_or_default(),
                i.line,
                i.column,
                i.message.clone(),
            )
        })
        .collect()
}

fn item(
    source: &str,
    code: &str,
    line: u32,
    column: u32,
    message: &str,
) -> (String, String, u32, u32, String) {
    (source.into(), code.into(), line, column, message.into())
}

#[test]
fn basedpyright_names_the_broken_caller_and_leaves_a_ty_project_alone() {
    // Side by side: a claim at the workspace's root would be the whole workspace's
    // (basedpyright comes before ty in the language servers' table).
    let (_tmp, ws, app) = workspace(
        "app",
        (
            "pyproject.toml",
            "[tool.basedpyright]\ntypeCheckingMode = \"standard\"\n",
        ),
        "other",
        ("ty.toml", "[rules]\n"),
    );
    let (m, b, c) = (app.join("m.py"), app.join("b.py"), ws.join("other/c.py"));
    let p = plugin();
    let resp = check(&p, &ws, &m);
    // As basedpyright's language server words them (source `basedpyright`), the column in
    // characters (basedpyright says UTF-16 unit 33 for `nope`: the emoji is two).
    assert_eq!(
        shape(&items(&resp, &m)),
        vec![item(
            "basedpyright",
            "reportUndefinedVariable",
            2,
            33,
            "\"nope\" is not defined"
        )],
        "{resp:#?}"
    );
    assert_eq!(
        shape(&items(&resp, &b)),
        vec![item(
            "basedpyright",
            "reportCallIssue",
            3,
            9,
            "Argument missing for parameter \"c\""
        )],
        "{resp:#?}"
    );
    assert!(items(&resp, &c).is_empty(), "{resp:#?}");

    // other/c.py is ty's, in ty's words; b.py is not ty's.
    let resp = check(&p, &ws, &c);
    assert_eq!(
        shape(&items(&resp, &c)),
        vec![item(
            "ty",
            "invalid-assignment",
            1,
            10,
            "Object of type `Literal[\"not a number\"]` is not assignable to `int`"
        )],
        "{resp:#?}"
    );
    assert!(items(&resp, &b).is_empty(), "{resp:#?}");
}

#[test]
fn ty_names_the_broken_caller_and_leaves_a_basedpyright_project_alone() {
    // Nested: ty over the workspace sees nested/c.py too, but that project chose
    // basedpyright.
    let (_tmp, ws, app) = workspace(
        "",
        ("ty.toml", "[rules]\n"),
        "nested",
        (
            "pyproject.toml",
            "[tool.basedpyright]\ntypeCheckingMode = \"standard\"\n",
        ),
    );
    let (m, b, c) = (app.join("m.py"), app.join("b.py"), ws.join("nested/c.py"));
    let p = plugin();
    let resp = check(&p, &ws, &m);
    assert_eq!(
        shape(&items(&resp, &m)),
        vec![item(
            "ty",
            "unresolved-reference",
            2,
            33,
            "Name `nope` used when not defined"
        )],
        "{resp:#?}"
    );
    assert_eq!(
        shape(&items(&resp, &b)),
        vec![item(
            "ty",
            "missing-argument",
            3,
            9,
            "No argument provided for required parameter `c` of function `add`"
        )],
        "{resp:#?}"
    );
    assert!(items(&resp, &c).is_empty(), "{resp:#?}");
    let resp = check(&p, &ws, &c);
    let got = shape(&items(&resp, &c));
    assert_eq!(got.len(), 1, "{resp:#?}");
    assert_eq!(
        (got[0].0.as_str(), got[0].2, got[0].3),
        ("basedpyright", 1, 10)
    );
    assert!(items(&resp, &b).is_empty(), "{resp:#?}");
}

/// A ty note with no place (`info: …`, `help: …`) is part of the message, as in ty's
/// language server's diagnostic.
#[test]
fn ty_notes_are_in_the_message_as_its_server_sends_them() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    std::fs::write(ws.join("ty.toml"), "").unwrap();
    let f = ws.join("s.py");
    std::fs::write(&f, "import os\nreveal_type(os.sep)\n").unwrap();
    let resp = check(&plugin(), &ws, &f);
    let got = items(&resp, &f);
    let reveal = got
        .iter()
        .find(|i| i.code.as_deref() == Some("undefined-reveal"))
        .unwrap_or_else(|| panic!("{resp:#?}"));
    assert_eq!(reveal.severity, Severity::Warning);
    assert!(
        reveal
            .message
            .starts_with("`reveal_type` used without importing it\n\ninfo: "),
        "{:?}",
        reveal.message
    );
    assert!(reveal.message.contains("\nhelp: "), "{:?}", reveal.message);
}
