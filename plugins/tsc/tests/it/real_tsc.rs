//! The tsc plugin against the real TypeScript compiler (`tsc` on PATH): a type error is
//! reported with code "2322" on the right line, fixing it clears the file, and every
//! `also_report` file of the project gets a result.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, Init, Plugin, Severity};
use openfiles_plugin_tsc::Tsc;

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
        trusted: true,
        id,
        workspace: ws.to_owned(),
        files,
        also_report: also,
        timeout_ms: 120_000,
        ..Default::default()
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

#[test]
fn a_file_the_tsconfig_leaves_out_is_flagged_not_silently_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("scripts")).unwrap();
    std::fs::write(
        ws.join("tsconfig.json"),
        r#"{ "compilerOptions": { "strict": true }, "include": ["src"] }"#,
    )
    .unwrap();
    let inside = ws.join("src/in.ts");
    let outside = ws.join("scripts/out.ts");
    std::fs::write(&inside, "export const a = 1;\n").unwrap();
    std::fs::write(&outside, "export const b: number = \"x\";\n").unwrap();
    let p = plugin(&ws.join(".state"));
    let resp = p
        .check(request(
            1,
            &ws,
            vec![inside.clone(), outside.clone()],
            vec![],
        ))
        .unwrap();
    assert!(resp
        .files
        .iter()
        .find(|f| f.path == inside)
        .unwrap()
        .items
        .is_empty());
    let items = &resp.files.iter().find(|f| f.path == outside).unwrap().items;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0].severity, Severity::Info);
    assert!(
        items[0]
            .message
            .contains("not part of the TypeScript project"),
        "{items:?}"
    );
}

#[test]
fn same_errors_and_lines_as_the_tsc_cli() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    std::fs::write(
        ws.join("tsconfig.json"),
        r#"{ "compilerOptions": { "strict": true, "noUnusedLocals": true } }"#,
    )
    .unwrap();
    let a = ws.join("a.ts");
    std::fs::write(
        &a,
        "interface P { x: number }\n\
         const p: P = { x: 1, y: 2 };\n\
         function f(s: string): number {\n  return s;\n}\n\
         const unused = 3;\n\
         let q: P = { x: \"1\" };\n\
         export { p, f, q };\n",
    )
    .unwrap();
    let cli = std::process::Command::new("tsc")
        .args(["--noEmit", "--pretty", "false", "-p", "tsconfig.json"])
        .current_dir(&ws)
        .output()
        .unwrap();
    let cli_out = String::from_utf8(cli.stdout).unwrap();
    let mut expected: Vec<(u32, String)> = openfiles_plugin_tsc::parse::parse(&cli_out)
        .into_iter()
        .map(|d| (d.line, d.code))
        .collect();
    expected.sort();
    assert!(
        expected.len() >= 4,
        "fixture should have several errors: {cli_out}"
    );
    // Cross-check the parser against the raw text: one entry per "a.ts(" line.
    assert_eq!(
        expected.len(),
        cli_out.lines().filter(|l| l.starts_with("a.ts(")).count()
    );

    let p = plugin(&ws.join(".state"));
    let resp = p.check(request(1, &ws, vec![a.clone()], vec![])).unwrap();
    let mut got: Vec<(u32, String)> = resp.files[0]
        .items
        .iter()
        .map(|i| (i.line, i.code.clone().unwrap()))
        .collect();
    got.sort();
    assert_eq!(got, expected);
}
