//! What the cc plugin leaves on disk and what it runs: its state files are private whatever
//! the umask, and a compiler is never taken from a relative `PATH` entry (`.`, `bin`), which
//! a check would resolve inside the repository it runs in.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, Init, Plugin};
use openfiles_plugin_cc::Cc;

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A project whose one unit has an error, so the check remembers it in `last-errors.json`.
fn broken_project(ws: &Path) {
    write(&ws.join("src/a.c"), "int f(void) { return undeclared; }\n");
    let entries = serde_json::json!([{
        "directory": ws.join("src").display().to_string(),
        "arguments": ["cc", "-c", "a.c"],
        "file": "a.c",
    }]);
    write(&ws.join("compile_commands.json"), &entries.to_string());
}

fn check(cc: &Cc, ws: &Path, snapshot_of: Option<PathBuf>) {
    cc.check(CheckRequest {
        id: 1,
        workspace: ws.to_owned(),
        files: vec![ws.join("src/a.c")],
        report_all: true,
        timeout_ms: 120_000,
        cache_of: snapshot_of,
        ..Default::default()
    })
    .unwrap();
}

#[test]
fn state_files_are_private_whatever_the_umask() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    broken_project(&ws);
    // SAFETY: umask(2) cannot fail; the old mask is put back below.
    let old = unsafe { libc::umask(0o002) };
    let (cc, _) = Cc::create(Init {
        config: serde_json::Value::Null,
        state_dir: state.clone(),
        host_version: "test".into(),
    })
    .unwrap();
    check(&cc, &ws, None);
    // A snapshot without a database: the project is remembered as blind.
    let snap = tmp.path().canonicalize().unwrap().join("snap");
    write(&snap.join("src/a.c"), "int f(void) { return 0; }\n");
    std::fs::remove_file(ws.join("compile_commands.json")).unwrap();
    check(&cc, &snap, Some(ws.clone()));
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    assert_eq!(mode(&state), 0o700);
    let files: Vec<PathBuf> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    for name in ["last-errors.json", "baselines-without-database.json"] {
        assert!(
            files.contains(&state.join(name)),
            "{name} not written: {files:?}"
        );
    }
    for f in files {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
}

/// Run in a child process of this test binary (`PATH` is the process's): the child's
/// working folder holds `clang`, `gcc` and `bin/clang` scripts, and its `PATH` starts with
/// `.` and `bin`.
#[test]
fn a_relative_path_entry_never_supplies_the_compiler() {
    if std::env::var_os("OPENFILES_CC_RELATIVE_PATH_CHILD").is_some() {
        return relative_path_child();
    }
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let ran = ws.join("RAN");
    let script = format!("#!/bin/sh\necho \"$0\" >> {}\nexit 0\n", ran.display());
    for exe in [
        "clang",
        "gcc",
        "clang-14",
        "bin/clang",
        "bin/gcc",
        "bin/clang-14",
    ] {
        write(&ws.join(exe), &script);
        std::fs::set_permissions(ws.join(exe), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    broken_project(&ws);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut entries = vec![PathBuf::from("."), PathBuf::from("bin"), PathBuf::new()];
    entries.extend(std::env::split_paths(&path));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "private::a_relative_path_entry_never_supplies_the_compiler",
            "--nocapture",
        ])
        .env("OPENFILES_CC_RELATIVE_PATH_CHILD", "1")
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
        "a compiler from a relative PATH entry ran: {}",
        std::fs::read_to_string(&ran).unwrap_or_default()
    );
}

fn relative_path_child() {
    let ws = std::env::current_dir().unwrap().canonicalize().unwrap();
    let state = tempfile::tempdir().unwrap();
    let (cc, caps) = Cc::create(Init {
        config: serde_json::Value::Null,
        state_dir: state.path().to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert!(
        caps.extensions.contains(&"c".to_string()),
        "no compiler found"
    );
    check(&cc, &ws, None);
}
