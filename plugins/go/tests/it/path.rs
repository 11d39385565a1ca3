//! What the go plugin runs: never a `go` from a relative `PATH` entry (`.`, `bin`, an empty
//! one), which a check resolves inside the repository it runs in, and never one inside an
//! untrusted workspace.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, Init, Plugin};
use openfiles_plugin_go::Go;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Run in a child process of this test binary (`PATH` is the process's): the child's
/// working folder, a Go module, holds `go` and `bin/go` scripts, and its `PATH` starts with
/// `.`, `bin` and an empty entry.
#[test]
fn a_relative_path_entry_never_supplies_go() {
    if std::env::var_os("OPENFILES_GO_RELATIVE_PATH_CHILD").is_some() {
        return child();
    }
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let ran = ws.join("RAN");
    let script = format!("#!/bin/sh\necho \"$0 $*\" >> {}\nexit 1\n", ran.display());
    for exe in ["go", "bin/go"] {
        write(&ws.join(exe), &script);
        std::fs::set_permissions(ws.join(exe), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    write(&ws.join("go.mod"), "module example.com/rel\n\ngo 1.19\n");
    write(&ws.join("a.go"), "package rel\n\nvar X int = \"x\"\n");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut entries = vec![PathBuf::from("."), PathBuf::from("bin"), PathBuf::new()];
    entries.extend(std::env::split_paths(&path));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "path::a_relative_path_entry_never_supplies_go",
            "--nocapture",
        ])
        .env("OPENFILES_GO_RELATIVE_PATH_CHILD", "1")
        .env("PATH", std::env::join_paths(entries).unwrap())
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the child ran no test"
    );
    assert!(
        !ran.exists(),
        "a go from a relative PATH entry ran: {}",
        std::fs::read_to_string(&ran).unwrap_or_default()
    );
}

fn child() {
    let ws = std::env::current_dir().unwrap().canonicalize().unwrap();
    let state = tempfile::tempdir().unwrap();
    let (go, caps) = Go::create(Init {
        config: serde_json::Value::Null,
        state_dir: state.path().to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert_eq!(caps.extensions, ["go"], "no go found");
    let a = ws.join("a.go");
    let resp = go
        .check(CheckRequest {
            id: 1,
            workspace: ws.clone(),
            files: vec![a.clone()],
            timeout_ms: 120_000,
            ..Default::default()
        })
        .unwrap();
    // The real go checked it.
    let items: Vec<&str> = resp
        .files
        .iter()
        .filter(|f| f.path == a)
        .flat_map(|f| f.items.iter().map(|i| i.message.as_str()))
        .collect();
    assert!(items.iter().any(|m| m.contains("cannot use")), "{items:?}");
}
