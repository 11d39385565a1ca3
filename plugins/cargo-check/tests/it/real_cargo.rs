//! The cargo-check plugin against a real `cargo check` on a temporary crate: a type error is
//! reported at the right place with its code, and fixing it clears the file.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, Init, Plugin, Severity};
use openfiles_plugin_cargo_check::CargoCheck;

fn write_crate(dir: &Path, main: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    std::fs::write(dir.join("src/util.rs"), "pub fn one() -> i32 {\n    1\n}\n").unwrap();
}

fn plugin(state: &Path, config: serde_json::Value) -> CargoCheck {
    let (p, caps) = CargoCheck::create(Init {
        config,
        state_dir: state.to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert_eq!(caps.extensions, vec!["rs".to_owned()]);
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
        timeout_ms: 300_000,
        ..Default::default()
    }
}

#[test]
fn type_error_is_reported_with_code_line_and_column_then_cleared_by_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    write_crate(
        &ws,
        "mod util;\n\nfn main() {\n    let x: i32 = \"five\";\n    println!(\"{x} {}\", util::one());\n}\n",
    );
    let main = ws.join("src/main.rs");
    let util = ws.join("src/util.rs");
    let p = plugin(&tmp.path().join("state"), serde_json::Value::Null);

    let resp = p
        .check(request(1, &ws, vec![main.clone()], vec![util.clone()]))
        .unwrap();
    let main_items = &resp.files.iter().find(|f| f.path == main).unwrap().items;
    let err = main_items
        .iter()
        .find(|i| i.code.as_deref() == Some("E0308"))
        .unwrap_or_else(|| panic!("no E0308 in {main_items:?}"));
    assert_eq!((err.line, err.column), (4, 18), "{err:?}");
    assert_eq!(err.severity, Severity::Error);
    assert_eq!(err.source, "rustc");
    assert!(err.message.contains("mismatched types"), "{}", err.message);
    // also_report files get a result too (clean here).
    let util_result = resp.files.iter().find(|f| f.path == util).unwrap();
    assert!(util_result.items.is_empty(), "{:?}", util_result.items);
    // The plugin used its own target dir, not the crate's.
    assert!(!ws.join("target").exists());

    std::fs::write(
        &main,
        "mod util;\n\nfn main() {\n    let x: i32 = 5;\n    println!(\"{x} {}\", util::one());\n}\n",
    )
    .unwrap();
    let resp = p
        .check(request(2, &ws, vec![main.clone()], vec![]))
        .unwrap();
    let main_result = resp.files.iter().find(|f| f.path == main).unwrap();
    assert!(main_result.items.is_empty(), "{:?}", main_result.items);
}

#[test]
fn a_file_outside_any_cargo_project_gets_an_explanation_not_silence() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let loose = ws.join("loose.rs");
    std::fs::write(&loose, "fn main() {}\n").unwrap();
    let p = plugin(&ws.join("state"), serde_json::Value::Null);
    let resp = p
        .check(request(1, &ws, vec![loose.clone()], vec![]))
        .unwrap();
    assert_eq!(resp.files.len(), 1);
    assert_eq!(resp.files[0].path, loose);
    assert!(resp.files[0].items[0].message.contains("no Cargo.toml"));
}

#[test]
fn bad_config_is_refused_with_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let err = CargoCheck::create(Init {
        config: serde_json::json!({"comand": "clippy"}),
        state_dir: tmp.path().to_owned(),
        host_version: String::new(),
    })
    .err()
    .map(|e| e.to_string())
    .unwrap();
    assert!(err.contains("comand"), "{err}");
    let err = CargoCheck::create(Init {
        config: serde_json::json!({"command": "build"}),
        state_dir: tmp.path().to_owned(),
        host_version: String::new(),
    })
    .err()
    .map(|e| e.to_string())
    .unwrap();
    assert!(err.contains("check"), "{err}");
}

#[test]
fn clippy_mode_reports_lints_with_clippy_source() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    write_crate(
        &ws,
        "mod util;\n\nfn double(x: i32) -> i32 {\n    return x * 2;\n}\n\nfn main() {\n    println!(\"{} {}\", double(2), util::one());\n}\n",
    );
    let main = ws.join("src/main.rs");
    let p = plugin(
        &tmp.path().join("state"),
        serde_json::json!({"command": "clippy", "extra_args": ["--quiet"]}),
    );
    let resp = p
        .check(request(1, &ws, vec![main.clone()], vec![]))
        .unwrap();
    let items = &resp.files[0].items;
    let lint = items
        .iter()
        .find(|i| i.code.as_deref() == Some("clippy::needless_return"))
        .unwrap_or_else(|| panic!("no needless_return in {items:?}"));
    assert_eq!(lint.source, "clippy");
    assert_eq!(lint.severity, Severity::Warning);
    assert_eq!((lint.line, lint.column), (4, 5));
}

#[test]
fn a_cancelled_check_returns_an_error_instead_of_results() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    write_crate(&ws, "mod util;\n\nfn main() {\n    util::one();\n}\n");
    let main = ws.join("src/main.rs");
    let p = plugin(&tmp.path().join("state"), serde_json::Value::Null);
    // The host may deliver the cancel before the check's thread got going: it must still
    // count (the check must not report results as if it had completed).
    p.cancel(9);
    let run = std::thread::scope(|s| {
        s.spawn(|| p.check(request(9, &ws, vec![main], vec![])))
            .join()
    });
    let err = run.unwrap().unwrap_err();
    assert!(err.is_cancelled(), "{err}");
}

/// A repository's build script is its code: in a workspace the user does not trust, cargo is
/// never run (the build script's marker stays absent) and each file says why, once.
#[test]
fn an_untrusted_workspace_runs_no_build_script() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    write_crate(&ws, "fn main() {\n    let x: i32 = \"five\";\n}\n");
    let marker = tmp.path().join("build-script-ran");
    std::fs::write(
        ws.join("build.rs"),
        format!(
            "fn main() {{ std::fs::write({:?}, \"ran\").unwrap(); }}\n",
            marker
        ),
    )
    .unwrap();
    let main = ws.join("src/main.rs");
    let p = plugin(&tmp.path().join("state"), serde_json::Value::Null);
    let untrusted = CheckRequest {
        trusted: false,
        ..request(1, &ws, vec![main.clone()], vec![])
    };
    let resp = p.check(untrusted).unwrap();
    let items = &resp.files.iter().find(|f| f.path == main).unwrap().items;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        items[0].code.as_deref(),
        Some(openfiles_plugin_api::UNTRUSTED_CODE)
    );
    assert!(
        items[0].message.contains("openfiles trust"),
        "{}",
        items[0].message
    );
    assert!(
        !marker.exists(),
        "the build script ran in an untrusted workspace"
    );
    // Control: trusted, the same request runs cargo (and so the build script).
    let resp = p
        .check(request(2, &ws, vec![main.clone()], vec![]))
        .unwrap();
    let items = &resp.files.iter().find(|f| f.path == main).unwrap().items;
    assert!(
        items.iter().any(|i| i.severity == Severity::Error),
        "{items:?}"
    );
    assert!(
        marker.exists(),
        "trusted: cargo check runs the build script"
    );
}
