//! Trust boundaries, git: a repository's files are data. Its `.git/config` and attributes
//! may name programs (`core.fsmonitor`, filter drivers, `diff.external`, textconv,
//! `core.pager`) and `export-subst` may grow what `git archive` writes; nothing of it may
//! run or count against us. Real repositories, the library's own git functions (the ones the
//! baseline, `session add-git` and the review's `d` use). See `src/gitcmd.rs`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::git;
use openfiles::diagnostics::baseline::git as base;
use openfiles::review::{actions, git as add_git};
use openfiles_wire::control::ReviewFile;

/// A script that appends its name to `marker` (and passes its input through, as a filter).
fn plant(dir: &Path, name: &str, marker: &Path) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho {name} >> '{}'\ncat 2>/dev/null\nexit 0\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A committed repository whose config names a program for every hook point openfiles could
/// reach, and a working tree with an edit and an untracked file.
fn hostile_repo(t: &Path) -> (PathBuf, PathBuf) {
    let root = t.join("repo");
    let bin = t.join("bin");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let marker = t.join("ran");
    std::fs::write(root.join("src/a.txt"), "one\n").unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "one"]);
    let s = |n: &str| plant(&bin, n, &marker).display().to_string();
    let cfg = [
        ("core.fsmonitor", s("fsmonitor")),
        ("filter.evil.smudge", s("smudge")),
        ("filter.evil.clean", s("clean")),
        ("filter.evilp.process", s("process")),
        ("diff.external", s("external")),
        ("diff.evil.textconv", s("textconv")),
        ("diff.evil.command", s("diffcommand")),
        ("core.pager", s("pager")),
        ("pager.diff", s("pagerdiff")),
    ];
    for (k, v) in &cfg {
        git(&root, &["config", k, v]);
    }
    std::fs::write(
        root.join(".git/info/attributes"),
        "* filter=evil diff=evil\n/src/new.txt filter=evilp\n",
    )
    .unwrap();
    // Edits after the commit: the diff and add-git have something to compare.
    std::fs::write(root.join("src/a.txt"), "two\n").unwrap();
    std::fs::write(root.join("src/new.txt"), "new\n").unwrap();
    // The planted programs do run for git itself (the fixture is real).
    let probe = Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["diff", "HEAD"])
        .output()
        .unwrap();
    assert!(probe.status.success());
    assert!(
        marker.exists(),
        "the fixture's programs do not run for plain git"
    );
    std::fs::remove_file(&marker).unwrap();
    (root.canonicalize().unwrap(), marker)
}

fn ran(marker: &Path) -> String {
    std::fs::read_to_string(marker).unwrap_or_default()
}

#[test]
fn the_repository_s_git_config_runs_no_program_for_the_baseline() {
    let t = tempfile::tempdir().unwrap();
    let (root, marker) = hostile_repo(t.path());
    let commit = base::head_commit(&root).unwrap();
    let text = base::committed_text(&root, &commit, &root.join("src/a.txt")).unwrap();
    assert_eq!(text.as_deref(), Some("one\n"));
    let snaps = t.path().join("snaps");
    let snap = base::snapshot(&root, &commit, &snaps.join(&commit)).unwrap();
    assert_eq!(
        std::fs::read_to_string(snap.join("src/a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        ran(&marker),
        "",
        "the baseline ran the repository's programs"
    );
}

#[test]
fn the_repository_s_git_config_runs_no_program_for_add_git() {
    let t = tempfile::tempdir().unwrap();
    let (root, marker) = hostile_repo(t.path());
    // The index's stat data says the file changed, so git compares contents (the clean
    // filter's moment) and asks the monitor what changed.
    let files = add_git::changed_files(&root).unwrap();
    assert_eq!(files, [root.join("src/a.txt"), root.join("src/new.txt")]);
    assert_eq!(ran(&marker), "", "add-git ran the repository's programs");
}

#[test]
fn the_repository_s_git_config_runs_no_program_for_the_review_diff() {
    let t = tempfile::tempdir().unwrap();
    let (root, marker) = hostile_repo(t.path());
    for name in ["src/a.txt", "src/new.txt"] {
        let f = ReviewFile {
            key: name.into(),
            mark: Default::default(),
            entry: openfiles_wire::spec::FileEntry::checked(root.join(name), 1, Vec::new()),
        };
        let mut cmd = actions::diff_command(&root, &f).unwrap();
        // As the review runs it, but with the output captured (so no pager) …
        let out = cmd.output().unwrap();
        assert_eq!(ran(&marker), "", "the diff ran the repository's programs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("+two") || text.contains("+new"), "{text}");
        // … and the pager git would start is the user's, never the repository's.
        let pager = cmd
            .get_envs()
            .find(|(k, _)| *k == "GIT_PAGER")
            .and_then(|(_, v)| v)
            .map(|v| v.to_string_lossy().into_owned());
        assert!(
            std::env::var_os("GIT_PAGER").is_some()
                || pager.is_some_and(|p| !p.contains(t.path().to_str().unwrap())),
            "the repository's pager would run"
        );
    }
    assert_eq!(ran(&marker), "", "the diff ran the repository's programs");
}

#[test]
fn export_subst_cannot_grow_the_snapshot_and_blobs_are_copied_as_stored() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    // 1 KiB of placeholders, each of which `git archive` would replace by the whole commit
    // message (itself 4 KiB): a 4 MiB file out of a 1 KiB blob.
    std::fs::write(root.join("grow.txt"), "$Format:%B$\n".repeat(85)).unwrap();
    std::fs::write(root.join(".gitattributes"), "grow.txt export-subst\n").unwrap();
    std::fs::write(root.join("gone.txt"), "kept\n").unwrap();
    std::fs::write(root.join("crlf.txt"), "a\nb\n").unwrap();
    std::fs::write(
        root.join(".git-info-attributes"),
        "gone.txt export-ignore\ncrlf.txt eol=crlf\n",
    )
    .unwrap();
    git(&root, &["init", "-q"]);
    std::fs::copy(
        root.join(".git-info-attributes"),
        root.join(".git/info/attributes"),
    )
    .unwrap();
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", &"x".repeat(4096)]);
    let root = root.canonicalize().unwrap();
    let commit = base::head_commit(&root).unwrap();
    let snap = base::snapshot(&root, &commit, &t.path().join("snaps").join(&commit)).unwrap();
    let committed: u64 = ["grow.txt", ".gitattributes", "gone.txt", "crlf.txt"]
        .iter()
        .map(|f| std::fs::metadata(root.join(f)).unwrap().len())
        .sum::<u64>()
        + std::fs::metadata(root.join(".git-info-attributes"))
            .unwrap()
            .len();
    let mut written = 0;
    for e in std::fs::read_dir(&snap).unwrap() {
        written += e.unwrap().metadata().unwrap().len();
    }
    assert_eq!(written, committed, "the snapshot is not the commit's blobs");
    assert_eq!(
        std::fs::read_to_string(snap.join("grow.txt")).unwrap(),
        "$Format:%B$\n".repeat(85)
    );
    assert_eq!(
        std::fs::read_to_string(snap.join("gone.txt")).unwrap(),
        "kept\n"
    );
    assert_eq!(
        std::fs::read_to_string(snap.join("crlf.txt")).unwrap(),
        "a\nb\n"
    );
}
