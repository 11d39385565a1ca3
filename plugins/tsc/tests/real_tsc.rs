//! The tsc plugin against the real TypeScript compiler (`tsc` on PATH): a type error is
//! reported with code "2322" on the right line, fixing it clears the file, and every
//! `also_report` file of the project gets a result.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, Init, Plugin, Severity};
use openfiles_tsc::Tsc;

fn plugin(state: &Path) -> Tsc {
    std::fs::create_dir_all(state).unwrap();
    let (p, caps) = Tsc::create(Init {
        config: serde_json::Value::Null,
        state_dir: state.to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert!(caps.extensions.contains(&"ts".to_owned()));
    assert!(caps.project_wide);
    p
}

fn request(id: u64, ws: &Path, files: Vec<PathBuf>, also: Vec<PathBuf>) -> CheckRequest {
    CheckRequest {
        id,
        workspace: ws.to_owned(),
        files,
        also_report: also,
        timeout_ms: 120_000,
    }
}

#[test]
fn type_error_reported_then_cleared_by_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("app");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(
        ws.join("tsconfig.json"),
        r#"{ "compilerOptions": { "strict": true, "target": "es2020" }, "include": ["src"] }"#,
    )
    .unwrap();
    let auth = ws.join("src/auth.ts");
    let other = ws.join("src/other.ts");
    std::fs::write(
        &auth,
        "// header\nexport function f(): number {\n  const n: number = \"seven\";\n  return n;\n}\n",
    )
    .unwrap();
    std::fs::write(&other, "export const ok: string = \"fine\";\n").unwrap();
    let p = plugin(&tmp.path().join("state"));

    let resp = p
        .check(request(1, &ws, vec![auth.clone()], vec![other.clone()]))
        .unwrap();
    let items = &resp.files.iter().find(|f| f.path == auth).unwrap().items;
    let err = items
        .iter()
        .find(|i| i.code.as_deref() == Some("2322"))
        .unwrap_or_else(|| panic!("no TS2322 in {items:?}"));
    assert_eq!((err.line, err.column), (3, 9), "{err:?}");
    assert_eq!(err.severity, Severity::Error);
    assert_eq!(err.source, "ts");
    assert!(err.message.contains("not assignable"), "{}", err.message);
    let other_result = resp.files.iter().find(|f| f.path == other).unwrap();
    assert!(other_result.items.is_empty(), "{:?}", other_result.items);
    // Build info went to the state dir, nothing was written into the project.
    assert!(std::fs::read_dir(tmp.path().join("state"))
        .unwrap()
        .any(|e| e
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "tsbuildinfo")));
    assert!(!ws.join("src/auth.js").exists());

    std::fs::write(
        &auth,
        "// header\nexport function f(): number {\n  const n: number = 7;\n  return n;\n}\n",
    )
    .unwrap();
    let resp = p
        .check(request(2, &ws, vec![auth.clone()], vec![]))
        .unwrap();
    let result = resp.files.iter().find(|f| f.path == auth).unwrap();
    assert!(result.items.is_empty(), "{:?}", result.items);
}

#[test]
fn an_error_moved_to_another_session_file_is_reported_there() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    std::fs::write(
        ws.join("tsconfig.json"),
        r#"{ "compilerOptions": { "strict": true } }"#,
    )
    .unwrap();
    let lib = ws.join("lib.ts");
    let user = ws.join("user.ts");
    // Changing lib's export type breaks user.ts, which was not edited.
    std::fs::write(&lib, "export const limit: string = \"10\";\n").unwrap();
    std::fs::write(
        &user,
        "import { limit } from \"./lib\";\nexport const n: number = limit;\n",
    )
    .unwrap();
    let p = plugin(&ws.join(".state"));
    let resp = p
        .check(request(1, &ws, vec![lib.clone()], vec![user.clone()]))
        .unwrap();
    assert!(resp
        .files
        .iter()
        .find(|f| f.path == lib)
        .unwrap()
        .items
        .is_empty());
    let user_items = &resp.files.iter().find(|f| f.path == user).unwrap().items;
    assert_eq!(user_items.len(), 1, "{user_items:?}");
    assert_eq!(user_items[0].line, 2);
    assert_eq!(user_items[0].code.as_deref(), Some("2322"));
}

#[test]
fn a_broken_tsconfig_is_reported_on_every_file_of_the_project() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    std::fs::write(
        ws.join("tsconfig.json"),
        r#"{ "compilerOptions": { "notAnOption": true } }"#,
    )
    .unwrap();
    let a = ws.join("a.ts");
    std::fs::write(&a, "export const a = 1;\n").unwrap();
    let p = plugin(&ws.join(".state"));
    let resp = p.check(request(1, &ws, vec![a.clone()], vec![])).unwrap();
    let items = &resp.files.iter().find(|f| f.path == a).unwrap().items;
    assert!(
        items
            .iter()
            .any(|i| i.code.as_deref() == Some("5023") && i.message.contains("notAnOption")),
        "{items:?}"
    );
}
