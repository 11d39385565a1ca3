//! What the baseline reads from git: the commit `HEAD` names, a file's committed text, and a
//! snapshot of a commit's tree in the state dir (one per repository and commit, shared by
//! sessions and worktrees: [`super::shared`]).
//!
//! Every command is built by [`crate::gitcmd`] (nothing the repository's config or
//! attributes say runs a program) and reads only: the user's index, working tree and refs
//! are never changed. Blobs are read as stored (`cat-file`), never converted: no filter,
//! no `export-subst`, no end-of-line conversion. Blocking: call from `spawn_blocking`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, Weak};

use crate::gitcmd;

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

fn run(root: &Path, args: &[&str]) -> Result<std::process::Output, GitError> {
    gitcmd::command(root, args)
        .and_then(|mut c| c.output())
        .map_err(|e| match e.kind() {
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

/// Whether the working tree of the repository holding `root` is clean: no change to a
/// tracked file, staged or not, and no untracked file that is not ignored (`git status`,
/// without refreshing the index: the user's index is never written).
pub fn is_clean(root: &Path) -> Result<bool, GitError> {
    let mut cmd = gitcmd::command(
        root,
        ["status", "--porcelain", "-z", "--untracked-files=normal"],
    )
    .map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => GitError::Missing,
        _ => GitError::Io(e),
    })?;
    let out = cmd.env("GIT_OPTIONAL_LOCKS", "0").output()?;
    if !out.status.success() {
        return Err(GitError::Failed {
            what: "status".into(),
            why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(out.stdout.is_empty())
}

/// Most files other than the edited ones a tree may differ from `HEAD` in for
/// [`committed_of_changed`].
pub const MAX_OTHERS: usize = 16;
/// Most bytes of committed text [`committed_of_changed`] reads.
const MAX_COMMITTED_BYTES: u64 = 8 << 20;

/// The committed text at `HEAD` of each of `files` and of the other tracked files under
/// `root` the working tree of its repository changed (`git status` as [`is_clean`] asks it;
/// at most [`MAX_OTHERS`] of them): what a check of the tree at `HEAD` needs beside
/// what is on disk. Files `HEAD` lacks (untracked, added) other than `files` are left out.
/// `None` when one of `files` is not in `HEAD`, or the tree deleted, renamed, copied or
/// re-typed a file, has a conflict, or changed too many, or their committed texts hold more
/// than 8 MiB.
pub fn committed_of_changed(
    root: &Path,
    files: &[PathBuf],
) -> Result<Option<BTreeMap<PathBuf, String>>, GitError> {
    let commit = head_commit(root)?;
    let top = toplevel(root)?;
    let mut cmd = gitcmd::command(
        root,
        ["status", "--porcelain", "-z", "--untracked-files=normal"],
    )?;
    let out = cmd.env("GIT_OPTIONAL_LOCKS", "0").output()?;
    if !out.status.success() {
        return Ok(None);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut wanted: Vec<PathBuf> = files.to_vec();
    for entry in text.split('\0').filter(|f| !f.is_empty()) {
        let (status, rel) = entry.split_at(entry.len().min(3));
        let path = top.join(rel);
        if files.contains(&path) || status.starts_with("??") || status.starts_with('A') {
            continue; // the edited files, or not in `HEAD`
        }
        if !path.starts_with(root) {
            continue; // outside the workspace: not read, not sent
        }
        // Only a tracked file's content changed (staged or not): no deletion, rename, copy,
        // type change or conflict.
        if !status.chars().take(2).all(|c| c == ' ' || c == 'M') {
            return Ok(None);
        }
        if wanted.len() >= files.len() + MAX_OTHERS {
            return Ok(None);
        }
        wanted.push(path);
    }
    // Read only what is small enough to send: the blobs' sizes first (one `ls-tree`).
    let rels: Vec<String> = wanted
        .iter()
        .filter_map(|f| f.strip_prefix(&top).ok())
        .map(|r| r.to_string_lossy().into_owned())
        .collect();
    let mut args = vec!["ls-tree", "-l", "-z", "--full-tree", commit.as_str(), "--"];
    args.extend(rels.iter().map(String::as_str));
    let out = run(root, &args)?;
    let size: u64 = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter_map(|line| line.split_whitespace().nth(3)?.parse::<u64>().ok())
        .sum();
    if !out.status.success() || size > MAX_COMMITTED_BYTES {
        return Ok(None);
    }
    let mut texts = BTreeMap::new();
    for f in wanted {
        let Some(text) = committed_text(root, &commit, &f)? else {
            return Ok(None);
        };
        texts.insert(f, text);
    }
    Ok(Some(texts))
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

/// The repository's common git folder (`rev-parse --git-common-dir`, canonical): the same
/// for every worktree of one repository, so what is taken of a commit is shared by them.
pub fn common_dir(root: &Path) -> Result<PathBuf, GitError> {
    let out = run(root, &["rev-parse", "--git-common-dir"])?;
    if !out.status.success() {
        return Err(GitError::NotARepo);
    }
    let dir = root.join(String::from_utf8_lossy(&out.stdout).trim());
    Ok(dir.canonicalize()?)
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
///
/// The files are the commit's blobs as stored (no filter, attribute or conversion applies),
/// and at most [`MAX_SNAPSHOT_BYTES`] are written, whatever the repository says.
pub fn snapshot(root: &Path, commit: &str, dir: &Path) -> Result<PathBuf, GitError> {
    // Two jobs (sources, or worktrees of one repository) may ask for the same commit's tree
    // at once: one extracts, the other waits and reuses it. Other repositories and commits
    // do not wait.
    let lock = lock_for(dir);
    let _one_at_a_time = lock.lock().unwrap_or_else(|e| e.into_inner());
    let top = toplevel(root)?;
    let rel = root.strip_prefix(&top).unwrap_or(Path::new("")).to_owned();
    let tree = dir.join("tree");
    if !dir.join("complete").exists() {
        let entries = tree_entries(root, commit)?;
        let size: u64 = entries.iter().map(|e| e.size).sum();
        if size > MAX_SNAPSHOT_BYTES {
            return Err(GitError::TooLarge(size >> 20));
        }
        if tree.exists() {
            std::fs::remove_dir_all(&tree)?;
        }
        // Private like every state file (RELIABILITY.md): folders 0700 whatever the umask,
        // files 0600 (0700 executable).
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&tree)?;
        if let Err(e) = extract(&top, &entries, &tree, MAX_SNAPSHOT_BYTES) {
            let _ = std::fs::remove_dir_all(&tree);
            return Err(e);
        }
        openfiles_os::fsutil::write_atomic(&dir.join("complete"), commit.as_bytes(), 0o600)?;
    }
    let snap_root = tree.join(&rel);
    link_dependencies(root, &snap_root);
    Ok(snap_root.canonicalize().unwrap_or(snap_root))
}

/// The lock of one snapshot folder (one per repository, trust level and commit).
fn lock_for(dir: &Path) -> Arc<Mutex<()>> {
    static LOCKS: Mutex<BTreeMap<PathBuf, Weak<Mutex<()>>>> = Mutex::new(BTreeMap::new());
    let mut locks = LOCKS.lock().unwrap_or_else(|e| e.into_inner());
    locks.retain(|_, l| l.strong_count() > 0);
    if let Some(l) = locks.get(dir).and_then(Weak::upgrade) {
        return l;
    }
    let l = Arc::new(Mutex::new(()));
    locks.insert(dir.to_owned(), Arc::downgrade(&l));
    l
}

/// One entry of a commit's tree.
#[derive(Debug)]
struct Entry {
    mode: String,
    oid: String,
    /// The blob's size (0 for a submodule).
    size: u64,
    path: PathBuf,
}

impl Entry {
    fn is_blob(&self) -> bool {
        matches!(self.mode.as_str(), "100644" | "100755" | "120000")
    }
}

/// Every entry of `commit`'s tree (`ls-tree -r -l -z`), paths relative to the top.
fn tree_entries(root: &Path, commit: &str) -> Result<Vec<Entry>, GitError> {
    let out = run(root, &["ls-tree", "-r", "-l", "-z", "--full-tree", commit])?;
    if !out.status.success() {
        return Err(GitError::Failed {
            what: "ls-tree".into(),
            why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter_map(|line| {
            // `<mode> SP <type> SP <oid> SP <size> TAB <path>`
            let tab = line.iter().position(|b| *b == b'\t')?;
            let meta = String::from_utf8_lossy(&line[..tab]);
            let mut f = meta.split_whitespace();
            let (mode, _kind, oid, size) = (f.next()?, f.next()?, f.next()?, f.next()?);
            Some(Entry {
                mode: mode.to_owned(),
                oid: oid.to_owned(),
                size: size.parse().unwrap_or(0),
                path: PathBuf::from(std::ffi::OsStr::from_bytes(&line[tab + 1..])),
            })
        })
        .collect())
}

/// A tree path that is safe to create below the snapshot: relative, no `.`/`..`/empty
/// component, nothing inside a `.git` folder.
fn safe_path(p: &Path) -> bool {
    let mut any = false;
    for c in p.components() {
        match c {
            Component::Normal(n) if !n.eq_ignore_ascii_case(".git") => any = true,
            _ => return false,
        }
    }
    any
}

/// Create `dir` and its parents below `tree`, never through a symlink.
fn make_dirs(tree: &Path, dir: &Path, made: &mut BTreeSet<PathBuf>) -> Result<(), GitError> {
    let mut at = PathBuf::new();
    for c in dir.components() {
        at.push(c);
        if made.contains(&at) {
            continue;
        }
        let full = tree.join(&at);
        match std::fs::symlink_metadata(&full) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(GitError::Failed {
                    what: "snapshot".into(),
                    why: format!("{} is not a folder in the tree", at.display()),
                })
            }
            Err(_) => {
                std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                    .create(&full)?
            }
        }
        made.insert(at.clone());
    }
    Ok(())
}

/// Write `entries` under `tree` from the object store (`git cat-file --batch`: the blobs as
/// stored), stopping with [`GitError::TooLarge`] once more than `cap` bytes were written.
fn extract(top: &Path, entries: &[Entry], tree: &Path, cap: u64) -> Result<(), GitError> {
    let entries: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            let ok = safe_path(&e.path);
            if !ok {
                tracing::debug!("baseline snapshot: skipped {}", e.path.display());
            }
            ok
        })
        .collect();
    let mut made = BTreeSet::new();
    for e in entries.iter().filter(|e| e.mode == "160000") {
        make_dirs(tree, &e.path, &mut made)?;
    }
    let blobs: Vec<&Entry> = entries.into_iter().filter(|e| e.is_blob()).collect();
    let mut cat = gitcmd::command(top, ["cat-file", "--batch"])
        .and_then(|mut c| {
            c.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
        })
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => GitError::Missing,
            _ => GitError::Io(e),
        })?;
    let (Some(mut stdin), Some(stdout)) = (cat.stdin.take(), cat.stdout.take()) else {
        return Err(GitError::Failed {
            what: "cat-file".into(),
            why: "no pipes".into(),
        });
    };
    let oids: String = blobs.iter().map(|e| format!("{}\n", e.oid)).collect();
    // Fed from a thread: git answers while it reads, and both pipes are bounded.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(oids.as_bytes());
    });
    let result = write_blobs(&blobs, BufReader::new(stdout), tree, cap, &mut made);
    let _ = cat.kill();
    let _ = cat.wait();
    let _ = feeder.join();
    result
}

/// Read each blob's answer from `cat-file --batch` and write it where the tree has it.
fn write_blobs(
    blobs: &[&Entry],
    mut answers: impl BufRead,
    tree: &Path,
    cap: u64,
    made: &mut BTreeSet<PathBuf>,
) -> Result<(), GitError> {
    let mut written = 0u64;
    let mut header = Vec::new();
    for e in blobs {
        header.clear();
        answers.read_until(b'\n', &mut header)?;
        let line = String::from_utf8_lossy(&header);
        let size = match line.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "blob", size] => size.parse::<u64>().unwrap_or(u64::MAX),
            _ => {
                return Err(GitError::Failed {
                    what: "cat-file".into(),
                    why: format!("{}: {}", e.path.display(), line.trim()),
                })
            }
        };
        written = written.saturating_add(size);
        if written > cap {
            return Err(GitError::TooLarge(written >> 20));
        }
        if let Some(parent) = e.path.parent() {
            make_dirs(tree, parent, made)?;
        }
        let dest = tree.join(&e.path);
        let mut body = (&mut answers).take(size);
        if e.mode == "120000" {
            let mut target = Vec::new();
            body.read_to_end(&mut target)?;
            std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), &dest)?;
        } else {
            let mode = if e.mode == "100755" { 0o700 } else { 0o600 };
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(&dest)?;
            let copied = std::io::copy(&mut body, &mut file)?;
            if copied != size {
                return Err(GitError::Failed {
                    what: "cat-file".into(),
                    why: format!("{}: short read", e.path.display()),
                });
            }
        }
        // The blob is followed by a newline.
        let mut nl = [0u8; 1];
        answers.read_exact(&mut nl)?;
    }
    Ok(())
}

/// Link each dependency folder of the real tree (at `root` and in its direct
/// subfolders, where projects of a small monorepo keep theirs) into the snapshot. The
/// worktrees of a repository at one commit share it: the first one's folders are linked.
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
            // Worktrees share the snapshot: a link into one that is gone is replaced.
            let dangling =
                std::fs::symlink_metadata(&link).is_ok_and(|m| m.is_symlink()) && !link.exists();
            if dangling {
                let _ = std::fs::remove_file(&link);
            }
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

    use std::process::Command;

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
    fn a_tree_is_clean_until_a_tracked_file_changes_or_an_untracked_one_appears() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        sh(&root, &["init", "-q"]);
        std::fs::write(root.join(".gitignore"), "out/\n").unwrap();
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        sh(&root, &["add", "."]);
        sh(&root, &["commit", "-q", "-m", "one"]);
        assert!(is_clean(&root).unwrap());
        std::fs::create_dir(root.join("out")).unwrap();
        std::fs::write(root.join("out/x.txt"), "ignored\n").unwrap();
        assert!(is_clean(&root).unwrap(), "an ignored file leaves it clean");
        std::fs::write(root.join("b.txt"), "new\n").unwrap();
        assert!(!is_clean(&root).unwrap(), "an untracked file");
        std::fs::remove_file(root.join("b.txt")).unwrap();
        std::fs::write(root.join("a.txt"), "edited\n").unwrap();
        assert!(!is_clean(&root).unwrap(), "an edited file");
    }

    #[test]
    fn the_committed_texts_of_a_changed_tree_are_the_edited_files_and_its_other_changes() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        sh(&root, &["init", "-q"]);
        for n in 0..20 {
            std::fs::write(root.join(format!("m{n}.py")), format!("x = {n}\n")).unwrap();
        }
        sh(&root, &["add", "."]);
        sh(&root, &["commit", "-q", "-m", "one"]);
        let edited = vec![root.join("m0.py")];
        std::fs::write(&edited[0], "x = 'edited'\n").unwrap();
        let texts = committed_of_changed(&root, &edited).unwrap().unwrap();
        assert_eq!(texts.keys().collect::<Vec<_>>(), [&edited[0]]);
        assert_eq!(texts[&edited[0]], "x = 0\n");

        // An earlier change, staged or not, and a new file: the other's committed text too.
        std::fs::write(root.join("m1.py"), "x = 'earlier'\n").unwrap();
        std::fs::write(root.join("m2.py"), "x = 'staged'\n").unwrap();
        sh(&root, &["add", "m2.py"]);
        std::fs::write(root.join("new.py"), "y = 1\n").unwrap();
        let texts = committed_of_changed(&root, &edited).unwrap().unwrap();
        let names: Vec<_> = texts.keys().map(|p| p.file_name().unwrap()).collect();
        assert_eq!(names, ["m0.py", "m1.py", "m2.py"]);
        assert_eq!(texts[&root.join("m1.py")], "x = 1\n");
        let untracked = vec![root.join("new.py")];
        assert!(
            committed_of_changed(&root, &untracked).unwrap().is_none(),
            "not in HEAD"
        );
        // Committed texts past 8 MiB are not read.
        std::fs::write(root.join("big.py"), "#".repeat(9 << 20)).unwrap();
        sh(&root, &["add", "big.py"]);
        sh(&root, &["commit", "-q", "-m", "big"]);
        std::fs::write(root.join("big.py"), "x = 1\n").unwrap();
        assert!(
            committed_of_changed(&root, &edited).unwrap().is_none(),
            "past 8 MiB"
        );
        sh(&root, &["checkout", "-q", "--", "big.py"]);
        assert!(committed_of_changed(&root, &edited).unwrap().is_some());

        // Too many other changes, a deletion, a rename: none.
        for n in 3..20 {
            std::fs::write(root.join(format!("m{n}.py")), "x = 'many'\n").unwrap();
        }
        assert!(
            committed_of_changed(&root, &edited).unwrap().is_none(),
            "past MAX_OTHERS"
        );
        sh(&root, &["checkout", "-q", "--", "."]);
        std::fs::write(&edited[0], "x = 'edited'\n").unwrap();
        std::fs::remove_file(root.join("m5.py")).unwrap();
        assert!(
            committed_of_changed(&root, &edited).unwrap().is_none(),
            "a deletion"
        );
        sh(&root, &["checkout", "-q", "--", "m5.py"]);
        sh(&root, &["mv", "m6.py", "m6b.py"]);
        assert!(
            committed_of_changed(&root, &edited).unwrap().is_none(),
            "a rename"
        );
    }

    #[test]
    fn a_workspace_below_the_top_gets_only_its_own_changes_committed_texts() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().canonicalize().unwrap();
        sh(&top, &["init", "-q"]);
        std::fs::create_dir(top.join("ws")).unwrap();
        for f in ["a.py", "ws/b.py", "ws/c.py"] {
            std::fs::write(top.join(f), "x = 1\n").unwrap();
        }
        sh(&top, &["add", "."]);
        sh(&top, &["commit", "-q", "-m", "one"]);
        for f in ["a.py", "ws/b.py", "ws/c.py"] {
            std::fs::write(top.join(f), "x = 2\n").unwrap();
        }
        let ws = top.join("ws");
        let texts = committed_of_changed(&ws, &[ws.join("b.py")])
            .unwrap()
            .unwrap();
        assert_eq!(
            texts.keys().cloned().collect::<Vec<_>>(),
            [ws.join("b.py"), ws.join("c.py")]
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

    #[test]
    fn the_snapshot_cap_counts_the_bytes_written_and_odd_paths_are_skipped() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        sh(&root, &["init", "-q"]);
        for n in ["a", "b", "c"] {
            std::fs::write(root.join(n), "x".repeat(1000)).unwrap();
        }
        sh(&root, &["add", "."]);
        sh(&root, &["commit", "-q", "-m", "one"]);
        let commit = head_commit(&root).unwrap();
        let mut entries = tree_entries(&root, &commit).unwrap();
        assert_eq!(entries.iter().map(|e| e.size).sum::<u64>(), 3000);
        let tree = t.path().join("tree-small");
        std::fs::create_dir(&tree).unwrap();
        assert!(matches!(
            extract(&root, &entries, &tree, 2500),
            Err(GitError::TooLarge(_))
        ));
        // An entry claiming a path outside the tree (a crafted tree object) is not written.
        entries[0].path = PathBuf::from("../escaped");
        entries[1].path = PathBuf::from(".git/config");
        let tree = t.path().join("tree-all");
        std::fs::create_dir(&tree).unwrap();
        extract(&root, &entries, &tree, 3000).unwrap();
        assert!(!t.path().join("escaped").exists());
        assert!(!tree.join(".git").exists());
        assert_eq!(std::fs::read(tree.join("c")).unwrap().len(), 1000);
    }

    #[test]
    fn each_snapshot_folder_has_its_own_lock() {
        let a = lock_for(Path::new("/ws-a/baseline/c1"));
        let b = lock_for(Path::new("/ws-b/baseline/c1"));
        let _held = a.lock().unwrap();
        assert!(b.try_lock().is_ok(), "another workspace waits");
        let a2 = lock_for(Path::new("/ws-a/baseline/c1"));
        assert!(a2.try_lock().is_err(), "one folder is locked once");
    }
}
