//! Trust is for a folder, not a path, and one answer for everyone (issue: "trust survives a
//! re-clone"): a trusted folder removed and re-cloned at the same path — even when the
//! filesystem hands the new folder the freed inode, as ext4 does — runs none of its own
//! executables, through the service (started afresh, or already serving the old folder) and
//! through the in-process `check` alike; a repository cloned inside a trusted workspace is
//! its own workspace, untrusted, for the service and for `check` alike.

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::Env;

/// A Python project with `node_modules/.bin/ruff` and `pyright-langserver` that leave their
/// name in `marker` when anything runs them, and a file with a problem.
fn plant_tools(repo: &Path, marker: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = repo.join("node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["ruff", "pyright-langserver"] {
        let exe = bin.join(tool);
        std::fs::write(
            &exe,
            format!("#!/bin/sh\necho {tool} >> {}\nexit 1\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(repo.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
    let app = repo.join("app.py");
    std::fs::write(&app, "print(undefined_name)\n").unwrap();
    app
}

/// Remove `dir` and try to make a new folder at the same path with the same inode (the
/// freed one, which ext4 hands out again at once unless another process took it first;
/// placeholders keep any other inode handed out meanwhile). Whether it did.
fn reclone_with_the_same_inode(dir: &Path) -> bool {
    let ino = std::fs::metadata(dir).unwrap().ino();
    std::fs::remove_dir_all(dir).unwrap();
    for i in 0..16 {
        std::fs::create_dir(dir).unwrap();
        if std::fs::metadata(dir).unwrap().ino() == ino {
            return true;
        }
        let hold = dir.with_file_name(format!(".hold-{}-{i}", unique()));
        std::fs::rename(dir, hold).unwrap();
    }
    std::fs::create_dir(dir).unwrap();
    false
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// `openfiles trust DIR` (no service: recorded), then another folder at the same path with
/// the same inode — trusting the folder there again when another process took the freed
/// inode (this machine is shared). Panics when the inode never came back: the test would
/// prove nothing.
fn trust_then_reclone_with_the_same_inode(env: &Env, dir: &Path) {
    for _ in 0..20 {
        let said = run_ok(env, &["trust", dir.to_str().unwrap()]);
        assert!(!said.contains("inode only"), "{said}");
        if reclone_with_the_same_inode(dir) {
            return;
        }
    }
    panic!("the filesystem never handed the freed inode out again: the test proves nothing");
}

fn run_ok(env: &Env, args: &[&str]) -> String {
    let out = env.command(args).output().unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "openfiles {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ran(marker: &Path) -> String {
    std::fs::read_to_string(marker).unwrap_or_default()
}

#[test]
fn a_trusted_folder_recloned_with_the_same_inode_runs_none_of_its_own_tools() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("lsp").into_os_string());
    let repo = env.workspace("repo");
    let marker = env.dir.path().join("repository-code-ran");
    let app = plant_tools(&repo, &marker);
    let app_s = app.to_str().unwrap().to_owned();

    // Control: trusted (no service: recorded), the folder's own tools are what `check` runs.
    let said = run_ok(&env, &["trust", repo.to_str().unwrap()]);
    assert!(!said.contains("inode only"), "{said}");
    run_ok(&env, &["check", &app_s]);
    assert!(
        !ran(&marker).is_empty(),
        "the trusted folder's own tools ran"
    );

    // Another repository cloned at the same path, with the freed inode: in-process `check`.
    trust_then_reclone_with_the_same_inode(&env, &repo);
    std::fs::remove_file(&marker).unwrap();
    let app = plant_tools(&repo, &marker);
    run_ok(&env, &["check", &app_s]);
    assert_eq!(
        ran(&marker),
        "",
        "the re-cloned folder's tools ran in `check`"
    );

    // A service started now: not trusted, its tools do not run.
    let _svc = env.serve(&[]);
    let r = env.edited(&[&app]);
    assert!(env.wait(&[&app], r.ts, 60_000).complete);
    let st = env.status();
    let w = st.workspaces.iter().find(|w| w.root == repo).unwrap();
    assert!(!w.trusted, "the re-cloned folder is not trusted");
    assert_eq!(
        ran(&marker),
        "",
        "the re-cloned folder's tools ran in the service"
    );

    // A service already serving the trusted folder when it is re-cloned: the decision it
    // holds was for the old folder. (Registered and trusted through a file no checker
    // handles, so no tool's answer is cached before the re-clone. The service's Claws socket
    // inside keeps the old folder's inode alive, so the new folder gets another one.)
    run_ok(&env, &["trust", repo.to_str().unwrap()]);
    let notes = repo.join("notes.txt");
    std::fs::write(&notes, "x\n").unwrap();
    env.edited(&[&notes]);
    assert!(env
        .status()
        .workspaces
        .iter()
        .any(|w| w.root == repo && w.trusted));
    // (The service writes in `.openfiles/` meanwhile: removed until it is gone.)
    common::wait_until("the old folder is removed", || {
        std::fs::remove_dir_all(&repo).is_ok()
    });
    std::fs::create_dir(&repo).unwrap();
    let _ = std::fs::remove_file(&marker);
    let app = plant_tools(&repo, &marker);
    let r = env.edited(&[&app]);
    env.wait(&[&app], r.ts, 60_000);
    assert_eq!(
        ran(&marker),
        "",
        "the folder re-cloned under a running service ran its tools"
    );
    assert!(!env
        .status()
        .workspaces
        .iter()
        .any(|w| w.root == repo && w.trusted));
}

/// A repository cloned inside a workspace the user named (`openfiles add`) is its own
/// workspace: the service checks its files as untrusted (its tools do not run), and so does
/// the in-process `check` — one answer. The outer workspace's own tools do run (control).
#[test]
fn a_repository_cloned_inside_a_trusted_workspace_is_untrusted_for_service_and_check() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("lsp").into_os_string());
    let outer = env.workspace("outer");
    let nested = outer.join("vendor/cloned");
    std::fs::create_dir_all(&nested).unwrap();
    common::git(&nested, &["init", "-q"]);
    let nested_ran = env.dir.path().join("nested-code-ran");
    let outer_ran = env.dir.path().join("outer-code-ran");
    let nested_app = plant_tools(&nested, &nested_ran);
    let outer_app = plant_tools(&outer, &outer_ran);

    // The service: the outer workspace named by the user, the nested repository edited.
    let svc = env.serve(&[]);
    run_ok(&env, &["add", outer.to_str().unwrap()]);
    let r = env.edited(&[&nested_app]);
    assert!(env.wait(&[&nested_app], r.ts, 60_000).complete);
    let st = env.status();
    let service_says = st
        .workspaces
        .iter()
        .find(|w| w.root == nested)
        .map(|w| w.trusted);
    assert_eq!(
        service_says,
        Some(false),
        "the nested repository is its own, untrusted workspace: {:?}",
        st.workspaces
            .iter()
            .map(|w| (&w.root, w.trusted))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        ran(&nested_ran),
        "",
        "the service ran the nested repository's tools"
    );
    // What the service process started, and why it was allowed: the plugin host, for no
    // workspace (`status --json`).
    assert!(
        st.ran
            .iter()
            .any(|r| r.why == "plugin host" && r.trust == "user" && r.args[0] == "plugin-host"),
        "{:?}",
        st.ran
    );
    let human = run_ok(&env, &["status"]);
    assert!(human.contains("programs the service started"), "{human}");
    drop(svc);

    // In-process `check` (no service): the same answer.
    run_ok(&env, &["check", nested_app.to_str().unwrap()]);
    assert_eq!(
        ran(&nested_ran),
        "",
        "`check` ran the nested repository's tools"
    );

    // Control: the outer workspace, named by the user, runs its own tools in `check` too.
    run_ok(&env, &["check", outer_app.to_str().unwrap()]);
    assert!(
        !ran(&outer_ran).is_empty(),
        "the named workspace's tools ran"
    );
}
