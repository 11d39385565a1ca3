//! What the baseline reads from git: the commit `HEAD` names, a file's committed text, and a
//! snapshot of a commit's tree in the state dir (one per commit, shared by sessions).
//!
//! Every command runs with the repository's hooks and `core.fsmonitor` disabled (a
//! repository's config must not run programs through us) and reads only: the user's index,
//! working tree and refs are never changed. Blocking: call from `spawn_blocking`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Largest committed tree copied into a snapshot (the sum of its blobs).
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

/// Folders of untracked dependencies a checker needs beside the sources (linked into a
/// snapshot from the real tree, never copied).
const DEPENDENCY_DIRS: &[&str] = &["node_modules", ".venv", "venv"];

/// Why git could not answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git is not installed (or not on the service's PATH)")]
    Missing,
    #[error("not a git repository")]
    NotARepo,
    #[error("the repository has no commit yet")]
    NoCommit,
    #[error("the commit's tree is {0} MiB, over the snapshot limit of {max} MiB", max = MAX_SNAPSHOT_BYTES >> 20)]
    TooLarge(u64),
    #[error("git {what} failed: {why}")]
    Failed { what: String, why: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

fn git(root: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(root)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null());
    cmd
}

fn run(root: &Path, args: &[&str]) -> Result<std::process::Output, GitError> {
    git(root).args(args).output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => GitError::Missing,
        _ => GitError::Io(e),
    })
}

/// The commit `HEAD` names in the repository holding `root`.
pub fn head_commit(root: &Path) -> Result<String, GitError> {
    let out = run(root, &["rev-parse", "--verify", "-q", "HEAD^{commit}"])?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    let inside = run(root, &["rev-parse", "--is-inside-work-tree"])?;
    if inside.status.success() {
        Err(GitError::NoCommit)
    } else {
        Err(GitError::NotARepo)
    }
}

/// The top of the repository's working tree.
pub fn toplevel(root: &Path) -> Result<PathBuf, GitError> {
    let out = run(root, &["rev-parse", "--show-toplevel"])?;
    if !out.status.success() {
        return Err(GitError::NotARepo);
    }
    let top = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    Ok(top.canonicalize().unwrap_or(top))
}

/// `file`'s text at `commit`, `None` when the commit does not have it (or it is not text).
pub fn committed_text(root: &Path, commit: &str, file: &Path) -> Result<Option<String>, GitError> {
    let top = toplevel(root)?;
    let Ok(rel) = file.strip_prefix(&top) else {
        return Ok(None);
    };
    let spec = format!("{commit}:{}", rel.to_string_lossy());
    let out = run(root, &["cat-file", "blob", &spec])?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(String::from_utf8(out.stdout).ok())
}

/// A snapshot of `commit`'s tree under `dir` (created once, reused after): the path that
/// corresponds to `root` in it. Untracked dependency folders (`node_modules`, virtual
/// environments) of the real projects are linked in, so the checkers resolve imports as
/// they do in the real tree.
pub fn snapshot(root: &Path, commit: &str, dir: &Path) -> Result<PathBuf, GitError> {
    // Two sources of one workspace may ask for the same commit's tree at once: one extracts,
    // the other waits and reuses it.
    static TAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = TAKING.lock().unwrap_or_else(|e| e.into_inner());
    let top = toplevel(root)?;
    let rel = root.strip_prefix(&top).unwrap_or(Path::new("")).to_owned();
    let tree = dir.join("tree");
    if !dir.join("complete").exists() {
        let size = tree_size(root, commit)?;
        if size > MAX_SNAPSHOT_BYTES {
            return Err(GitError::TooLarge(size >> 20));
        }
        if tree.exists() {
            std::fs::remove_dir_all(&tree)?;
        }
        // Private like every state file (RELIABILITY.md): folders 0700 whatever the umask
        // (narrowed further by it, never widened), files 0600 (0700 executable) from the
        // archive's own modes.
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&tree)?;
        extract(&top, commit, &tree)?;
        openfiles_os::fsutil::write_atomic(&dir.join("complete"), commit.as_bytes(), 0o600)?;
    }
    let snap_root = tree.join(&rel);
    link_dependencies(root, &snap_root);
    Ok(snap_root.canonicalize().unwrap_or(snap_root))
}

/// The sum of the blob sizes of `commit`'s tree.
fn tree_size(root: &Path, commit: &str) -> Result<u64, GitError> {
    let out = run(root, &["ls-tree", "-r", "-l", "--full-tree", commit])?;
    if !out.status.success() {
        return Err(GitError::Failed {
            what: "ls-tree".into(),
            why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok())
        .sum())
}

/// `git archive COMMIT | tar -x -C TREE`.
fn extract(top: &Path, commit: &str, tree: &Path) -> Result<(), GitError> {
    // `tar.umask`: the modes written into the archive (git's default 002 gives 0664 files,
    // which `tar` run as root keeps); 077 gives 0600 files and 0700 folders.
    let mut archive = git(top)
        .args(["-c", "tar.umask=0077", "archive", "--format=tar", commit])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => GitError::Missing,
            _ => GitError::Io(e),
        })?;
    let Some(stdout) = archive.stdout.take() else {
        return Err(GitError::Failed {
            what: "archive".into(),
            why: "no output".into(),
        });
    };
    let tar = Command::new("tar")
        // `-m`: files get the time of extraction, newer than any build of an older snapshot
        // (their commit times would let a build tool take an older build for current).
        .args(["-x", "-m", "--no-same-owner", "-f", "-", "-C"])
        .arg(tree)
        .stdin(stdout)
        .stderr(Stdio::piped())
        .output()?;
    let archived = archive.wait_with_output()?;
    if !archived.status.success() {
        return Err(GitError::Failed {
            what: "archive".into(),
            why: String::from_utf8_lossy(&archived.stderr).trim().to_owned(),
        });
    }
    if !tar.status.success() {
        return Err(GitError::Failed {
            what: "archive | tar".into(),
            why: String::from_utf8_lossy(&tar.stderr).trim().to_owned(),
        });
    }
    Ok(())
}

/// Link each dependency folder of the real tree (at `root` and in its direct
/// subfolders, where projects of a small monorepo keep theirs) into the snapshot.
fn link_dependencies(root: &Path, snap_root: &Path) {
    let mut places = vec![PathBuf::new()];
    if let Ok(rd) = std::fs::read_dir(root) {
        places.extend(
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| PathBuf::from(e.file_name())),
        );
    }
    for place in places {
        for dep in DEPENDENCY_DIRS {
            let real = root.join(&place).join(dep);
            let link = snap_root.join(&place).join(dep);
            let in_snapshot = snap_root.join(&place).is_dir();
            if in_snapshot && real.is_dir() && std::fs::symlink_metadata(&link).is_err() {
                if let Err(e) = std::os::unix::fs::symlink(&real, &link) {
                    tracing::debug!(
                        "cannot link {} into the baseline snapshot: {e}",
                        real.display()
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }

    #[test]
    fn committed_text_and_snapshot_see_the_commit_not_the_working_tree() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        assert!(matches!(head_commit(&root), Err(GitError::NotARepo)));
        sh(&root, &["init", "-q"]);
        assert!(matches!(head_commit(&root), Err(GitError::NoCommit)));
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.txt"), "old\n").unwrap();
        sh(&root, &["add", "."]);
        sh(&root, &["commit", "-q", "-m", "one"]);
        let commit = head_commit(&root).unwrap();
        std::fs::write(root.join("src/a.txt"), "new\n").unwrap();
        std::fs::write(root.join("src/b.txt"), "untracked\n").unwrap();
        let a = root.join("src/a.txt");
        assert_eq!(
            committed_text(&root, &commit, &a).unwrap().as_deref(),
            Some("old\n")
        );
        assert_eq!(
            committed_text(&root, &commit, &root.join("src/b.txt")).unwrap(),
            None
        );
        let snaps = tempfile::tempdir().unwrap();
        let snap = snapshot(&root, &commit, &snaps.path().join(&commit)).unwrap();
        assert_eq!(
            std::fs::read_to_string(snap.join("src/a.txt")).unwrap(),
            "old\n"
        );
        assert!(!snap.join("src/b.txt").exists());
        // Taken once: a second call reuses it.
        std::fs::write(snap.join("marker"), "").unwrap();
        let again = snapshot(&root, &commit, &snaps.path().join(&commit)).unwrap();
        assert!(again.join("marker").exists());
    }

    /// Snapshot files were written 0664 (git archive's default modes, kept by `tar` run as
    /// root; the umask's otherwise) although every state file is private.
    #[test]
    fn snapshots_are_private() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        sh(&root, &["init", "-q"]);
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.txt"), "a\n").unwrap();
        std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            root.join("run.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        sh(&root, &["add", "."]);
        sh(&root, &["commit", "-q", "-m", "one"]);
        let commit = head_commit(&root).unwrap();
        let snaps = tempfile::tempdir().unwrap();
        let dir = snaps.path().join(&commit);
        snapshot(&root, &commit, &dir).unwrap();
        let mut stack = vec![dir.clone()];
        let mut seen = 0;
        while let Some(p) = stack.pop() {
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777;
            assert_eq!(mode & 0o077, 0, "{} is {mode:o}", p.display());
            if meta.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else {
                seen += 1;
            }
        }
        assert!(seen >= 3, "complete, src/a.txt, run.sh");
        let exe = dir.join("tree/run.sh");
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(exe).unwrap().permissions());
        assert_eq!(mode & 0o700, 0o700, "still executable");
    }
}
