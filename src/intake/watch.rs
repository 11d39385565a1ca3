//! Noticing edits made without a hook (agents such as Aider or Goose have none).
//!
//! One non-recursive inotify watch per directory of the workspace that is neither ignored by
//! the path policy nor `.gitignore`d, so `node_modules/` or `target/` cost nothing. New
//! directories get a watch as they appear, and what they already hold is reported: `mkdir -p
//! a/b/c && printf … > a/b/c/x.py` writes the file before any watch on `c` can exist, so each
//! new folder (and every folder under it) is watched first and listed after, and a file is
//! either listed or reported by its own event (both land in one set, once). Writes are
//! batched until 1 s of quiet (3 s at most) and then reported to the pipeline, which drops
//! echoes of edits a hook already reported. Git operations are not edits: nothing is
//! reported while `.git/index.lock` exists or a rebase/merge is in progress, nor within 5 s
//! of a `HEAD` move.
//! Hitting the inotify watch limit is logged as an error naming the sysctl to raise.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use notify::EventKind;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::diagnostics::pipeline::{EditOrigin, PipelineHandle};
use crate::fswatch::{FsWatch, SubscriberId};
use crate::policy::Policy;

const QUIET: Duration = Duration::from_secs(1);
const MAX_BATCH: Duration = Duration::from_secs(3);
const GIT_SETTLE: Duration = Duration::from_secs(5);

/// What the watcher reports in `status`.
#[derive(Debug, Default)]
pub struct WatchStats {
    /// Active inotify watches.
    pub watches: AtomicUsize,
    /// Batches of changes dropped because git was rewriting the tree.
    pub git_batches: AtomicUsize,
}

/// Shared with the workspace instance.
pub type WatchCount = Arc<WatchStats>;

/// Directories to watch under `root`: not ignored by the policy, not `.gitignore`d.
fn directories(root: &Path, policy: &Policy) -> Vec<PathBuf> {
    walker(root, root, policy)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_dir()))
        .map(|e| e.into_path())
        .collect()
}

/// A walk from `dir` (under `root`) that skips what the policy ignores (workspace-relative)
/// and what `.gitignore` says, the `.gitignore` files of the folders above `dir` included.
fn walker(root: &Path, dir: &Path, policy: &Policy) -> ignore::WalkBuilder {
    let policy = policy.clone();
    let root = root.to_owned();
    let mut walk = ignore::WalkBuilder::new(dir);
    walk.hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(move |e| {
            let rel = e.path().strip_prefix(&root).unwrap_or(e.path());
            rel.as_os_str().is_empty() || !policy.is_ignored(rel)
        });
    walk
}

/// The entries of `dir` worth watching or reporting, each with whether it is a folder:
/// folders and regular files (a symlink is neither), as [`walker`] filters them.
fn entries(root: &Path, dir: &Path, policy: &Policy) -> Vec<(PathBuf, bool)> {
    walker(root, dir, policy)
        .max_depth(Some(1))
        .build()
        .flatten()
        .filter(|e| e.depth() == 1)
        .filter_map(|e| {
            let t = e.file_type()?;
            (t.is_dir() || t.is_file()).then(|| (e.path().to_owned(), t.is_dir()))
        })
        .collect()
}

/// True while git is rewriting the work tree (or just did).
fn git_busy(root: &Path) -> bool {
    let git = root.join(".git");
    if !git.is_dir() {
        return false;
    }
    if [
        "index.lock",
        "rebase-merge",
        "rebase-apply",
        "MERGE_HEAD",
        "CHERRY_PICK_HEAD",
    ]
    .iter()
    .any(|n| git.join(n).exists())
    {
        return true;
    }
    std::fs::metadata(git.join("HEAD"))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < GIT_SETTLE)
}

/// Start watching `root`; edits go to `pipeline` until `shutdown`.
pub fn spawn(
    root: &Path,
    policy: Policy,
    pipeline: PipelineHandle,
    count: WatchCount,
    fs: (&FsWatch, SubscriberId),
    shutdown: CancellationToken,
) -> Result<(), notify::Error> {
    let (tx, mut rx) = mpsc::unbounded_channel::<notify::Event>();
    let mut watched = Watched {
        fs: fs.0.clone(),
        id: fs.1,
        sink: tx,
        dirs: BTreeSet::new(),
        root: root.to_owned(),
    };
    for dir in directories(root, &policy) {
        watched.add(&dir);
    }
    // HEAD moves and lock files are noticed through the same stream.
    let git = root.join(".git");
    if git.is_dir()
        && watched
            .fs
            .watch(&git, watched.id, watched.sink.clone())
            .is_ok()
    {
        watched.dirs.insert(git);
    }
    count.watches.store(watched.dirs.len(), Ordering::Relaxed);
    let root = root.to_owned();
    tokio::spawn(async move {
        let mut pending: BTreeSet<PathBuf> = BTreeSet::new();
        let mut first: Option<Instant> = None;
        let mut last = Instant::now();
        loop {
            let flush_at = first.map(|f| (last + QUIET).min(f + MAX_BATCH));
            let timer = async {
                match flush_at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                ev = rx.recv() => {
                    let Some(ev) = ev else { return };
                    if !matches!(ev.kind, EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)) {
                        continue;
                    }
                    for p in ev.paths {
                        let Ok(rel) = p.strip_prefix(&root) else { continue };
                        if rel.starts_with(".git") || policy.is_ignored(rel) {
                            continue;
                        }
                        if p.is_dir() {
                            if matches!(ev.kind, EventKind::Create(_)) {
                                let held = watched.take_in(&p, &policy);
                                count.watches.store(watched.dirs.len(), Ordering::Relaxed);
                                if !held.is_empty() {
                                    pending.extend(held);
                                    last = Instant::now();
                                    first.get_or_insert(last);
                                }
                            }
                            continue;
                        }
                        pending.insert(p);
                        last = Instant::now();
                        first.get_or_insert(last);
                    }
                }
                _ = timer => {
                    first = None;
                    let batch: Vec<PathBuf> = std::mem::take(&mut pending).into_iter().collect();
                    if !batch.is_empty() && git_busy(&root) {
                        count.git_batches.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(root = %root.display(), files = batch.len(), "git is rewriting the tree; not treating changes as edits");
                        continue;
                    }
                    if !batch.is_empty() {
                        pipeline.edited_nowait(batch, EditOrigin::Watch).await;
                    }
                }
            }
        }
    });
    Ok(())
}

/// The folders this watcher watches, and what it needs to watch more.
struct Watched {
    fs: FsWatch,
    id: SubscriberId,
    sink: mpsc::UnboundedSender<notify::Event>,
    dirs: BTreeSet<PathBuf>,
    root: PathBuf,
}

impl Watched {
    /// Watch `dir`; true when it was not watched before and now is.
    fn add(&mut self, dir: &Path) -> bool {
        if self.dirs.contains(dir) {
            return false;
        }
        match self.fs.watch(dir, self.id, self.sink.clone()) {
            Ok(()) => {
                self.dirs.insert(dir.to_owned());
                true
            }
            Err(e) => {
                let limit = matches!(&e.kind, notify::ErrorKind::MaxFilesWatch)
                    || matches!(&e.kind, notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::ENOSPC));
                if limit {
                    tracing::error!(
                        root = %self.root.display(),
                        "inotify watch limit reached at {} watches: edits under {} will not be noticed without a hook; raise fs.inotify.max_user_watches",
                        self.dirs.len(),
                        dir.display()
                    );
                } else {
                    tracing::warn!(root = %self.root.display(), "cannot watch {}: {e}", dir.display());
                }
                false
            }
        }
    }

    /// A folder appeared at `dir`: watch it and every folder under it (unless ignored or
    /// `.gitignore`d), each before it is listed, so an entry made meanwhile is either listed
    /// here or reported by its own event. Returns the files found: written before their
    /// folder's watch, they have no event of their own. A folder watched already (by an
    /// earlier event's look) was listed then; one that cannot be watched is not listed.
    fn take_in(&mut self, dir: &Path, policy: &Policy) -> Vec<PathBuf> {
        // The folder itself passes the rules its parent's listing applies.
        let Some(parent) = dir.parent() else {
            return Vec::new();
        };
        if !entries(&self.root, parent, policy)
            .iter()
            .any(|(p, is_dir)| *is_dir && p == dir)
        {
            return Vec::new();
        }
        let mut files = Vec::new();
        let mut todo = vec![dir.to_owned()];
        while let Some(d) = todo.pop() {
            if !self.add(&d) {
                continue;
            }
            for (p, is_dir) in entries(&self.root, &d, policy) {
                if is_dir {
                    todo.push(p);
                } else {
                    files.push(p);
                }
            }
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watched(root: &Path) -> (Watched, mpsc::UnboundedReceiver<notify::Event>) {
        let fs = FsWatch::new().unwrap();
        let (sink, rx) = mpsc::unbounded_channel();
        let w = Watched {
            id: fs.subscriber(),
            fs,
            sink,
            dirs: BTreeSet::new(),
            root: root.to_owned(),
        };
        (w, rx)
    }

    #[test]
    fn a_new_folder_is_watched_all_the_way_down_and_its_files_reported() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let cfg = crate::config::DiagnosticsConfig {
            ignore: vec!["web/generated/**".into()],
            ..Default::default()
        };
        let policy = Policy::new(&root, &cfg).unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n*.log\n").unwrap();
        let (mut w, _rx) = watched(&root);
        assert!(w.add(&root));

        for d in [
            "web/a/b/c",
            "web/node_modules/x",
            "web/generated/y",
            "web/a/build/z",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "web/top.py",
            "web/a/b/c/x.py",
            "web/a/mid.py",
            "web/a/skip.log",
            "web/node_modules/x/i.js",
            "web/generated/y/g.py",
            "web/a/build/z/b.py",
        ] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink(root.join("web/a"), root.join("web/link")).unwrap();

        let mut files = w.take_in(&root.join("web"), &policy);
        files.sort();
        let rel = |v: &[PathBuf]| -> Vec<String> {
            v.iter()
                .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
                .collect()
        };
        assert_eq!(
            rel(&files),
            ["web/a/b/c/x.py", "web/a/mid.py", "web/top.py"]
        );
        let dirs: Vec<PathBuf> = w.dirs.iter().filter(|d| **d != root).cloned().collect();
        assert_eq!(rel(&dirs), ["web", "web/a", "web/a/b", "web/a/b/c"]);

        // Its folders' own events come too: they were looked into already.
        assert!(w.take_in(&root.join("web/a/b"), &policy).is_empty());
        // An ignored or `.gitignore`d folder's event brings nothing, nor does a symlink's.
        for d in ["web/node_modules", "web/a/build", "web/link"] {
            assert!(w.take_in(&root.join(d), &policy).is_empty(), "{d}");
        }
        assert_eq!(w.dirs.len(), 5);
    }
}
