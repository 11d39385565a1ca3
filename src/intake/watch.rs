//! Noticing edits made without a hook (agents such as Aider or Goose have none).
//!
//! One non-recursive inotify watch per directory of the workspace that is neither ignored by
//! the path policy nor `.gitignore`d, so `node_modules/` or `target/` cost nothing. New
//! directories get a watch as they appear. Writes are batched until 1 s of quiet (3 s at
//! most) and then reported to the pipeline, which drops echoes of edits a hook already
//! reported. Git operations are not edits: nothing is reported while `.git/index.lock`
//! exists or a rebase/merge is in progress, nor within 5 s of a `HEAD` move.
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
    let policy = policy.clone();
    let root_owned = root.to_owned();
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(move |e| {
            let rel = e.path().strip_prefix(&root_owned).unwrap_or(e.path());
            rel.as_os_str().is_empty() || !policy.is_ignored(rel)
        })
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_dir()))
        .map(|e| e.into_path())
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
    let (fs, id) = (fs.0.clone(), fs.1);
    let mut watched = BTreeSet::new();
    for dir in directories(root, &policy) {
        add_watch(&fs, id, &tx, &dir, &mut watched, root);
    }
    // HEAD moves and lock files are noticed through the same stream.
    let git = root.join(".git");
    if git.is_dir() && fs.watch(&git, id, tx.clone()).is_ok() {
        watched.insert(git);
    }
    count.watches.store(watched.len(), Ordering::Relaxed);
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
                                for d in directories(&p, &policy) {
                                    add_watch(&fs, id, &tx, &d, &mut watched, &root);
                                }
                                count.watches.store(watched.len(), Ordering::Relaxed);
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

fn add_watch(
    fs: &FsWatch,
    id: SubscriberId,
    sink: &mpsc::UnboundedSender<notify::Event>,
    dir: &Path,
    watched: &mut BTreeSet<PathBuf>,
    root: &Path,
) {
    if watched.contains(dir) {
        return;
    }
    match fs.watch(dir, id, sink.clone()) {
        Ok(()) => {
            watched.insert(dir.to_owned());
        }
        Err(e) => {
            let limit = matches!(&e.kind, notify::ErrorKind::MaxFilesWatch)
                || matches!(&e.kind, notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::ENOSPC));
            if limit {
                tracing::error!(
                    root = %root.display(),
                    "inotify watch limit reached at {} watches: edits under {} will not be noticed without a hook; raise fs.inotify.max_user_watches",
                    watched.len(),
                    dir.display()
                );
            } else {
                tracing::warn!(root = %root.display(), "cannot watch {}: {e}", dir.display());
            }
        }
    }
}
