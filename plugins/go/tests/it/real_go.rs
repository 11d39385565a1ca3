//! The go plugin against the real Go toolchain (`go` on PATH, installed by
//! `scripts/install-test-deps.sh`): a caller broken in another package named only with
//! `report_all`, at go/types' position in characters with gopls's message and code; the
//! importers of a package that does not compile still checked (as gopls checks them); a
//! broken `go.mod` explained on every file; a cancelled check stops.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, CheckResponse, Init, Item, Plugin, Severity};
use openfiles_plugin_go::Go;

fn plugin(state: &Path) -> Go {
    let (p, caps) = Go::create(Init {
        config: serde_json::Value::Null,
        state_dir: state.to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert!(caps.project_wide);
    assert_eq!(caps.extensions, vec!["go".to_string()]);
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

fn write(ws: &Path, rel: &str, text: &str) -> PathBuf {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// `lib` (edited: `Add` takes three ints) and `app`, whose caller passes two after a
/// non-ASCII string, plus a test file of `app` with an error of its own.
fn module() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    write(&ws, "go.mod", "module example.com/demo\n\ngo 1.19\n");
    write(
        &ws,
        "lib/lib.go",
        "package lib\n\n// Add adds.\nfunc Add(a, b, c int) int { return a + b + c }\n",
    );
    write(
        &ws,
        "app/app.go",
        "package app\n\nimport \"example.com/demo/lib\"\n\n// Use calls Add.\nfunc Use() int {\n\tx := \"日本\"; _ = x; return lib.Add(1, 2)\n}\n",
    );
    write(
        &ws,
        "app/app_test.go",
        "package app\n\nimport \"testing\"\n\nfunc TestUse(t *testing.T) { var n int = \"x\"; _ = n }\n",
    );
    (tmp, ws)
}

#[test]
fn a_caller_in_another_package_is_named_only_with_report_all_in_goplss_shape() {
    let (_tmp, ws) = module();
    let state = tempfile::tempdir().unwrap();
    let (lib, app, app_test) = (
        ws.join("lib/lib.go"),
        ws.join("app/app.go"),
        ws.join("app/app_test.go"),
    );
    let p = plugin(state.path());

    let resp = p.check(request(&ws, vec![lib.clone()], false)).unwrap();
    assert!(items(&resp, &lib).is_empty(), "{resp:?}");
    assert!(items(&resp, &app).is_empty(), "not asked for: {resp:?}");
    assert_eq!(resp.files.len(), 1, "{resp:?}");

    let resp = p.check(request(&ws, vec![lib.clone()], true)).unwrap();
    let caller = items(&resp, &app);
    assert_eq!(caller.len(), 1, "{resp:?}");
    let c = caller[0];
    assert_eq!(c.severity, Severity::Error);
    assert_eq!(c.source, "compiler");
    assert_eq!(c.code.as_deref(), Some("WrongArgCount"));
    assert_eq!(
        c.message,
        "not enough arguments in call to lib.Add\n\thave (number, number)\n\twant (int, int, int)"
    );
    // The closing parenthesis: byte 43 of the line, character 39 (日 and 本 are 3 bytes each).
    assert_eq!((c.line, c.column), (7, 39));
    // Test files are type-checked too.
    let t = items(&resp, &app_test);
    assert_eq!(t.len(), 1, "{resp:?}");
    assert_eq!(t[0].code.as_deref(), Some("IncompatibleAssign"));
    assert_eq!((t[0].line, t[0].column), (5, 42));
    assert_eq!(
        t[0].message,
        "cannot use \"x\" (untyped string constant) as int value in variable declaration"
    );
    // Nothing written into the module.
    let mut names: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["app", "go.mod", "lib"]);
}

#[test]
fn a_package_that_does_not_compile_keeps_goplss_shape_and_its_importers_are_checked() {
    let (_tmp, ws) = module();
    let state = tempfile::tempdir().unwrap();
    let lib = write(
        &ws,
        "lib/lib.go",
        "package lib\n\n// Add adds.\nfunc Add(a, b, c int) int { return a + b + c + missing }\n",
    );
    let p = plugin(state.path());
    let resp = p.check(request(&ws, vec![lib.clone()], true)).unwrap();
    let got = items(&resp, &lib);
    assert_eq!(got.len(), 1, "{resp:?}");
    // go/types' message (the compiler says "undefined: missing"), gopls's code.
    assert_eq!(got[0].message, "undeclared name: missing");
    assert_eq!(got[0].code.as_deref(), Some("UndeclaredName"));
    assert_eq!((got[0].line, got[0].column), (4, 48));
    // app imports a package that does not compile, and is checked all the same.
    let caller = items(&resp, &ws.join("app/app.go"));
    assert_eq!(caller.len(), 1, "{resp:?}");
    assert_eq!(caller[0].code.as_deref(), Some("WrongArgCount"));
    assert_eq!((caller[0].line, caller[0].column), (7, 39));
}

#[test]
fn a_broken_go_mod_is_explained_on_every_file() {
    let (_tmp, ws) = module();
    let state = tempfile::tempdir().unwrap();
    write(
        &ws,
        "go.mod",
        "module example.com/demo\n\ngo 1.19\n\nbogus directive\n",
    );
    let (lib, app) = (ws.join("lib/lib.go"), ws.join("app/app.go"));
    let p = plugin(state.path());
    let resp = p
        .check(request(&ws, vec![lib.clone(), app.clone()], true))
        .unwrap();
    for f in [&lib, &app] {
        let got = items(&resp, f);
        assert_eq!(got.len(), 1, "{resp:?}");
        assert_eq!(got[0].severity, Severity::Error);
        assert!(got[0].message.contains("go.mod"), "{}", got[0].message);
        assert!(
            got[0].message.contains("unknown directive: bogus"),
            "{}",
            got[0].message
        );
    }
}

#[test]
fn a_file_outside_any_module_gets_an_empty_result_and_a_cancel_stops_the_check() {
    let (_tmp, ws) = module();
    let state = tempfile::tempdir().unwrap();
    let p = plugin(state.path());
    let loose_dir = tempfile::tempdir().unwrap();
    let loose_ws = loose_dir.path().canonicalize().unwrap();
    let loose = write(
        &loose_ws,
        "main.go",
        "package main\n\nfunc main() { undefined() }\n",
    );
    let resp = p
        .check(request(&loose_ws, vec![loose.clone()], true))
        .unwrap();
    assert_eq!(resp.files.len(), 1);
    assert!(items(&resp, &loose).is_empty(), "{resp:?}");

    p.cancel(7);
    let mut req = request(&ws, vec![ws.join("lib/lib.go")], true);
    req.id = 7;
    assert!(p.check(req).unwrap_err().is_cancelled());
}
