//! Noticing edits made without a hook (agents such as Aider or Goose have none).
//!
//! One non-recursive inotify watch per directory of the workspace that the path policy does
//! not ignore (its rules, `.gitignore`d folders among them), so `node_modules/` or `target/`
//! cost nothing. New directories get a watch as they appear, and what they already hold is
//! reported: `mkdir -p a/b/c && printf … > a/b/c/x.py` writes the file before any watch on
//! `c` can exist, so each new folder (and every folder under it) is watched first and listed
//! after, and a file is either listed or reported by its own event (both land in one set,
//! once).
//!
//! Batching ([`Window`]): a batch is reported once its paths are quiet for a window that
//! starts at [`QUIET_MIN`] (50 ms: a lone edit reaches the pipeline well within 200 ms of
//! its write) and doubles with every further path the batch gains, up to [`QUIET_MAX`]
//! (1 s), so a burst (a `git checkout` of 1 000 files) stays one batch; a batch is cut at
//! [`MAX_BATCH`] (3 s) whatever comes. The pipeline drops echoes of edits a hook already
//! reported.
//!
//! Nothing that may block runs on the runtime's threads: the first walk, taking in a new
//! folder as soon as its event comes (so its files join the batch that is open, as a
//! checkout makes folders and fills them), each batch's look at the disk (which paths are
//! folders, rescans, whether git is busy) run in `spawn_blocking`, one at a time, while
//! events wait in the watcher's bounded
//! channel; a burst beyond it arrives as a rescan of the folder (`fswatch`), which reports
//! the entries changed since the first event lost.
//!
//! Git operations are not edits: nothing is reported while `.git/index.lock` exists or a
//! rebase/merge is in progress, nor within 5 s of a `HEAD` move.
//! Hitting the inotify watch limit is logged as an error naming the sysctl to raise.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use notify::EventKind;
use tokio_util::sync::CancellationToken;

use crate::diagnostics::pipeline::{EditOrigin, PipelineHandle};
use crate::fswatch::{Delivery, Events, FsWatch, Sink, SubscriberId};
use crate::policy::Policy;

/// The quiet window of a batch of one path.
pub const QUIET_MIN: Duration = Duration::from_millis(50);
/// The longest quiet window (a batch still gaining paths).
pub const QUIET_MAX: Duration = Duration::from_secs(1);
/// The longest a batch is held.
pub const MAX_BATCH: Duration = Duration::from_secs(3);
const GIT_SETTLE: Duration = Duration::from_secs(5);
/// A rescan reports files modified this long before the first event lost (file system
/// timestamps are coarser than the clock).
const RESCAN_SLACK: Duration = Duration::from_secs(1);

/// What the watcher reports in `status`.
#[derive(Debug, Default)]
pub struct WatchStats {
    /// Active inotify watches.
    pub watches: AtomicUsize,
    /// Batches of changes dropped because git was rewriting the tree.
    pub git_batches: AtomicUsize,
    /// Batches handed to the pipeline.
    pub batches: AtomicUsize,
}

/// Shared with the workspace instance.
pub type WatchCount = Arc<WatchStats>;

/// Directories to watch under `root`: not ignored by the policy, not `.gitignore`d.
fn directories(root: &Path, policy: &Policy) -> Vec<PathBuf> {
    walker(root, root, policy, false)
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_dir()))
        .map(|e| e.into_path())
        .collect()
}

/// A walk from `dir` (under `root`) that skips what the policy ignores (workspace-relative;
/// its git rules included, read through the gate, so the walker reads no ignore file
/// itself). Without `files`, only folders are judged (a walk for folders to watch: its
/// files are not looked at, which keeps a walk of a million files to its folders' cost).
fn walker(root: &Path, dir: &Path, policy: &Policy, files: bool) -> ignore::WalkBuilder {
    let policy = policy.clone();
    let root = root.to_owned();
    let mut walk = ignore::WalkBuilder::new(dir);
    walk.standard_filters(false).filter_entry(move |e| {
        let rel = e.path().strip_prefix(&root).unwrap_or(e.path());
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
        rel.as_os_str().is_empty() || (!is_dir && !files) || !policy.is_ignored_entry(rel, is_dir)
    });
    walk
}

/// The entries of `dir` worth watching or reporting, each with whether it is a folder:
/// folders and regular files (a symlink is neither), as [`walker`] filters them.
fn entries(root: &Path, dir: &Path, policy: &Policy) -> Vec<(PathBuf, bool)> {
    walker(root, dir, policy, true)
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

/// When a batch is due: quiet for a window that grows with the batch, or held too long.
#[derive(Debug, Default)]
pub struct Window {
    first: Option<Instant>,
    last: Option<Instant>,
    /// Distinct paths the batch gained after its first.
    grown: u32,
}

impl Window {
    /// The batch gained `gained` paths it did not hold (perhaps none: an event about one it
    /// holds) at `now`.
    pub fn touch(&mut self, now: Instant, gained: usize) {
        let gained = u32::try_from(gained).unwrap_or(u32::MAX);
        let gained = if self.first.is_none() {
            self.first = Some(now);
            gained.saturating_sub(1)
        } else {
            gained
        };
        self.grown = self.grown.saturating_add(gained);
        self.last = Some(now);
    }

    /// The quiet window now: [`QUIET_MIN`] doubled per path gained, at most [`QUIET_MAX`].
    pub fn quiet(&self) -> Duration {
        QUIET_MIN
            .saturating_mul(1u32 << self.grown.min(16))
            .min(QUIET_MAX)
    }

    /// When the batch is due, if there is one.
    pub fn due(&self) -> Option<Instant> {
        let (first, last) = (self.first?, self.last?);
        Some((last + self.quiet()).min(first + MAX_BATCH))
    }

    /// The batch was taken.
    pub fn reset(&mut self) {
        *self = Window::default();
    }
}

/// What arrived since the last batch, before anyone looked at the disk.
#[derive(Debug, Default)]
struct Raw {
    /// Each path, and whether an event said it was created (a new folder is looked into).
    paths: BTreeMap<PathBuf, bool>,
    /// Folders whose events were lost, with the time of the first one lost.
    rescans: BTreeMap<PathBuf, SystemTime>,
    /// Folders the watcher said were made (`IN_ISDIR`), to watch and list at once: their
    /// files have no events of their own until then.
    folders: Vec<PathBuf>,
}

impl Raw {
    fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.rescans.is_empty() && self.folders.is_empty()
    }

    /// Take one delivery in; how many paths the batch gained that it did not hold.
    fn take(&mut self, d: Delivery, root: &Path) -> usize {
        match d {
            Delivery::Event(ev) => {
                if !matches!(
                    ev.kind,
                    EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
                ) {
                    return 0;
                }
                let created = matches!(ev.kind, EventKind::Create(_));
                let folder = matches!(
                    ev.kind,
                    EventKind::Create(notify::event::CreateKind::Folder)
                );
                let mut gained = 0;
                for p in ev.paths {
                    let Ok(rel) = p.strip_prefix(root) else {
                        continue;
                    };
                    if rel.starts_with(".git") {
                        continue;
                    }
                    if folder {
                        self.folders.push(p);
                        continue;
                    }
                    match self.paths.get_mut(&p) {
                        Some(c) => *c |= created,
                        None => {
                            self.paths.insert(p, created);
                            gained += 1;
                        }
                    }
                }
                gained
            }
            Delivery::Rescan { dir, since } => {
                let at = self.rescans.entry(dir).or_insert(since);
                *at = (*at).min(since);
                1
            }
        }
    }

    /// Files listed in a new folder join the batch; how many it did not hold.
    fn listed(&mut self, files: Vec<PathBuf>) -> usize {
        let before = self.paths.len();
        for f in files {
            self.paths.entry(f).or_insert(false);
        }
        self.paths.len() - before
    }
}

/// What one batch's look at the disk found.
#[derive(Debug, Default)]
struct Settled {
    files: Vec<PathBuf>,
    git_busy: bool,
}

/// Start watching `root`; edits go to `pipeline` until `shutdown`. The first walk (which
/// folders to watch) runs off the runtime; this returns once every folder is watched, so an
/// edit made after it is noticed.
pub async fn spawn(
    root: &Path,
    policy: Policy,
    pipeline: PipelineHandle,
    count: WatchCount,
    fs: (&FsWatch, SubscriberId),
    shutdown: CancellationToken,
) -> Result<(), notify::Error> {
    let (sink, rx) = crate::fswatch::channel();
    let mut watched = Watched {
        fs: fs.0.clone(),
        id: fs.1,
        sink,
        dirs: BTreeSet::new(),
        root: root.to_owned(),
    };
    let start = {
        let policy = policy.clone();
        tokio::task::spawn_blocking(move || {
            watched.start(&policy);
            watched
        })
    };
    let watched = start
        .await
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
    count.watches.store(watched.dirs.len(), Ordering::Relaxed);
    let batcher = Batcher {
        root: root.to_owned(),
        policy,
        pipeline,
        count,
        watched: Some(watched),
    };
    tokio::spawn(batcher.run(rx, shutdown));
    Ok(())
}

/// The watch loop of one workspace: collects events, and hands each due batch to the pipeline
/// after a look at the disk off the runtime.
struct Batcher {
    root: PathBuf,
    policy: Policy,
    pipeline: PipelineHandle,
    count: WatchCount,
    /// Away (in `spawn_blocking`) while a batch is looked at.
    watched: Option<Watched>,
}

impl Batcher {
    async fn run(mut self, mut rx: Events, shutdown: CancellationToken) {
        let mut raw = Raw::default();
        let mut window = Window::default();
        loop {
            let due = window.due();
            let timer = async {
                match due {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                d = rx.recv() => {
                    let Some(d) = d else { return };
                    let mut gained = raw.take(d, &self.root);
                    // What else is there already joins the same look.
                    while let Some(more) = rx.try_recv() {
                        gained += raw.take(more, &self.root);
                    }
                    // New folders are watched and listed now (off the runtime), as a
                    // checkout makes them: their files join this batch.
                    if !raw.folders.is_empty() {
                        let folders = std::mem::take(&mut raw.folders);
                        let Some(files) = self.take_in(folders).await else { return };
                        gained += raw.listed(files);
                    }
                    if !raw.is_empty() {
                        window.touch(Instant::now(), gained);
                    }
                }
                _ = timer => {
                    window.reset();
                    let batch = std::mem::take(&mut raw);
                    if !self.flush(batch).await {
                        return;
                    }
                }
            }
        }
    }

    /// Watch and list new folders (off the runtime): the files they hold. `None` when the
    /// runtime is shutting down.
    async fn take_in(&mut self, folders: Vec<PathBuf>) -> Option<Vec<PathBuf>> {
        let mut watched = self.watched.take()?;
        let policy = self.policy.clone();
        let (watched, files) = tokio::task::spawn_blocking(move || {
            let mut files = Vec::new();
            for dir in folders {
                files.extend(watched.take_in(&dir, &policy));
            }
            (watched, files)
        })
        .await
        .ok()?;
        self.count
            .watches
            .store(watched.dirs.len(), Ordering::Relaxed);
        self.watched = Some(watched);
        Some(files)
    }

    /// Look at one batch on the disk (off the runtime) and hand its files to the pipeline;
    /// false when the runtime is shutting down.
    async fn flush(&mut self, raw: Raw) -> bool {
        let Some(mut watched) = self.watched.take() else {
            return false;
        };
        let policy = self.policy.clone();
        let looked = tokio::task::spawn_blocking(move || {
            let settled = watched.settle(raw, &policy);
            (watched, settled)
        })
        .await;
        let Ok((watched, settled)) = looked else {
            return false;
        };
        self.count
            .watches
            .store(watched.dirs.len(), Ordering::Relaxed);
        self.watched = Some(watched);
        if settled.files.is_empty() {
            return true;
        }
        if settled.git_busy {
            self.count.git_batches.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(root = %self.root.display(), files = settled.files.len(), "git is rewriting the tree; not treating changes as edits");
            return true;
        }
        self.count.batches.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(root = %self.root.display(), files = settled.files.len(), "watch batch");
        self.pipeline
            .edited_nowait(settled.files, EditOrigin::Watch)
            .await;
        true
    }
}

/// The folders this watcher watches, and what it needs to watch more.
struct Watched {
    fs: FsWatch,
    id: SubscriberId,
    sink: Sink,
    dirs: BTreeSet<PathBuf>,
    root: PathBuf,
}

impl Watched {
    /// The first walk: every folder the policy keeps, and `.git` (its lock files and `HEAD`
    /// wake the loop; they are never edits).
    fn start(&mut self, policy: &Policy) {
        for dir in directories(&self.root, policy) {
            self.add(&dir);
        }
        let git = self.root.join(".git");
        if git.is_dir() && self.fs.watch(&git, self.id, self.sink.clone()).is_ok() {
            self.dirs.insert(git);
        }
    }

    /// One batch's look at the disk: which paths are files (a folder that was created is
    /// watched and listed instead), what changed in folders to rescan, and whether git is
    /// rewriting the tree.
    fn settle(&mut self, raw: Raw, policy: &Policy) -> Settled {
        let mut files: BTreeSet<PathBuf> = BTreeSet::new();
        for (p, created) in raw.paths {
            let Ok(rel) = p.strip_prefix(&self.root) else {
                continue;
            };
            let is_dir = p.is_dir();
            if policy.is_ignored_entry(rel, is_dir) {
                continue;
            }
            if is_dir {
                if created {
                    files.extend(self.take_in(&p, policy));
                }
                continue;
            }
            files.insert(p);
        }
        for (dir, since) in raw.rescans {
            files.extend(self.rescan(&dir, since, policy));
        }
        let git_busy = !files.is_empty() && git_busy(&self.root);
        Settled {
            files: files.into_iter().collect(),
            git_busy,
        }
    }

    /// Events about `dir`'s entries were lost: its new folders are taken in, its files
    /// modified since `since` (less [`RESCAN_SLACK`]) reported.
    fn rescan(&mut self, dir: &Path, since: SystemTime, policy: &Policy) -> Vec<PathBuf> {
        let since = since.checked_sub(RESCAN_SLACK).unwrap_or(since);
        let mut files = Vec::new();
        for (p, is_dir) in entries(&self.root, dir, policy) {
            if is_dir {
                if !self.dirs.contains(&p) {
                    files.extend(self.take_in(&p, policy));
                }
                continue;
            }
            let changed = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since);
            if changed {
                files.push(p);
            }
        }
        files
    }

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

    fn watched(root: &Path) -> (Watched, Events) {
        let fs = FsWatch::new().unwrap();
        let (sink, rx) = crate::fswatch::channel();
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

    /// A lone path is due after the shortest window; a burst keeps its batch open as long
    /// as paths come within the grown window, and is cut at the longest hold.
    #[test]
    fn the_quiet_window_starts_short_and_grows_with_the_batch() {
        let t0 = Instant::now();
        let mut w = Window::default();
        assert_eq!(w.due(), None);
        w.touch(t0, 1);
        assert_eq!(w.due(), Some(t0 + QUIET_MIN));
        // The same path again (an editor's create, write and close) does not grow it.
        w.touch(t0, 0);
        assert_eq!(w.quiet(), QUIET_MIN);
        // A burst: one new path every 20 ms, never due in between.
        let mut now = t0;
        for _ in 0..100 {
            now += Duration::from_millis(20);
            assert!(w.due().is_some_and(|due| due > now), "cut inside the burst");
            w.touch(now, 1);
        }
        assert_eq!(w.quiet(), QUIET_MAX);
        assert_eq!(w.due(), Some((now + QUIET_MAX).min(t0 + MAX_BATCH)));
        w.reset();
        assert_eq!(w.due(), None);
    }

    /// The watch loop through a real pipeline on tokio's paused clock: 1 000 files written
    /// in a burst (as a `git checkout` writes them, events a millisecond apart, more than
    /// the channel holds) are one batch; a lone edit after it is a batch of its own.
    #[tokio::test(start_paused = true)]
    async fn a_burst_is_one_batch_and_a_lone_edit_is_its_own() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let files: Vec<PathBuf> = (0..1000)
            .map(|i| {
                let p = root.join(format!("src/f{i}.py"));
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, "x = 1\n").unwrap();
                p
            })
            .collect();
        let policy = Policy::new(&root, &Default::default()).unwrap();
        let (checker, _calls) = crate::diagnostics::testing::StandIn::start(Vec::new());
        let pipeline = crate::diagnostics::pipeline::Pipeline::start_ephemeral(
            &root,
            Arc::new(crate::config::Config::default()),
            checker,
        )
        .unwrap();
        let (sink, rx) = crate::fswatch::channel_of(64);
        let count = WatchCount::default();
        let batcher = Batcher {
            root: root.clone(),
            policy,
            pipeline,
            count: count.clone(),
            watched: Some(watched(&root).0),
        };
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(batcher.run(rx, shutdown.clone()));
        let event = |p: &Path| {
            notify::Event::new(EventKind::Create(notify::event::CreateKind::File))
                .add_path(p.to_owned())
        };
        for f in &files {
            sink.deliver(event(f), &root.join("src"));
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Whatever the window, the batch is due by now.
        tokio::time::sleep(MAX_BATCH).await;
        assert_eq!(count.batches.load(Ordering::Relaxed), 1);

        let lone = root.join("src/lone.py");
        std::fs::write(&lone, "y = 2\n").unwrap();
        sink.deliver(event(&lone), &root.join("src"));
        tokio::time::sleep(QUIET_MIN * 2).await;
        assert_eq!(count.batches.load(Ordering::Relaxed), 2);

        // A folder made with files in it (before any watch on it could exist): watched and
        // listed when its event comes, its files in the same batch as what follows.
        let made = root.join("src/made");
        std::fs::create_dir_all(&made).unwrap();
        for i in 0..3 {
            std::fs::write(made.join(format!("m{i}.py")), "z = 3\n").unwrap();
        }
        let watches = count.watches.load(Ordering::Relaxed);
        let folder = notify::Event::new(EventKind::Create(notify::event::CreateKind::Folder))
            .add_path(made.clone());
        sink.deliver(folder, &root.join("src"));
        sink.deliver(event(&root.join("src/f0.py")), &root.join("src"));
        tokio::time::sleep(MAX_BATCH).await;
        assert_eq!(count.batches.load(Ordering::Relaxed), 3);
        assert_eq!(count.watches.load(Ordering::Relaxed), watches + 1);
        shutdown.cancel();
        task.await.unwrap();
    }
}
