//! One file watcher for the whole service.
//!
//! inotify instances are a scarce per-user resource (128 by default, shared with every
//! editor and tool the user runs), so the service owns exactly one watcher and routes its
//! events: a component subscribes folders (non-recursive) under its subscriber id and gets
//! the events for those folders' entries on its own channel. A folder watched by several
//! subscribers costs one inotify watch. `unwatch_all` drops a subscriber's folders (and
//! their inotify watches once nobody else wants them).
//!
//! Reads are not events: the watcher reports opens and read-only closes (inotify `IN_OPEN`,
//! `IN_CLOSE_NOWRITE`), and the service's own readers (the queue intake opening
//! `queue.jsonl`) would wake themselves forever. Only changes are routed: creations,
//! modifications, removals, renames, and closes after a write.
//!
//! A subscriber may also name the entries it cares about ([`FsWatch::watch_only`]): the
//! queue intake watches `.openfiles/` for `queue.jsonl`, and the service's own writes in that
//! folder (`diagnostics.json` and its temp files) are dropped here, on the watcher's thread,
//! instead of waking the intake to be ignored. Every delivered event is logged at `trace`
//! (target `openfiles::fswatch`), which tests use to prove what reaches whom.
//!
//! Channels are bounded ([`BOUND`] events per subscriber): the watcher's thread never waits
//! for a subscriber and memory never grows with a burst. An event that does not fit is not
//! kept; its folder is marked instead, with the time of the first event lost, and the
//! subscriber receives [`Delivery::Rescan`] for it once it has taken what the channel held
//! (a loss only happens while the channel is full, so the subscriber is bound to look).
//!
//! Lock order: the routing table is never held while calling into the watcher, because the
//! watcher's `watch` waits for its event thread, which may be delivering into the table.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// Events a subscriber's channel holds before further ones coalesce into a rescan.
pub const BOUND: usize = 1024;

/// Folders whose events were lost, each with the time of the first one lost.
type Lost = Arc<Mutex<BTreeMap<PathBuf, SystemTime>>>;

/// Where a subscriber receives its events (the sending half of [`channel`]).
#[derive(Clone, Debug)]
pub struct Sink {
    tx: mpsc::Sender<notify::Event>,
    lost: Lost,
}

impl Sink {
    /// Deliver `ev` (about an entry of the watched folder `dir`, or `dir` itself) without
    /// waiting: when the channel is full, `dir` is marked for a rescan instead.
    pub fn deliver(&self, ev: notify::Event, dir: &Path) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(ev) {
            let mut lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
            lost.entry(dir.to_owned()).or_insert_with(SystemTime::now);
        }
    }
}

/// What a subscriber receives.
#[derive(Debug)]
pub enum Delivery {
    /// One change, as the watcher reported it.
    Event(notify::Event),
    /// Events about `dir`'s entries were lost in a burst (the channel was full): look at
    /// what changed there since `since`.
    Rescan { dir: PathBuf, since: SystemTime },
}

impl Delivery {
    /// The paths it concerns: an event's own, or the folder to rescan.
    pub fn paths(&self) -> Vec<&Path> {
        match self {
            Delivery::Event(ev) => ev.paths.iter().map(PathBuf::as_path).collect(),
            Delivery::Rescan { dir, .. } => vec![dir.as_path()],
        }
    }
}

/// The receiving half of [`channel`].
#[derive(Debug)]
pub struct Events {
    rx: mpsc::Receiver<notify::Event>,
    lost: Lost,
}

impl Events {
    /// The next delivery: what the channel holds, then a pending rescan, else the next
    /// event when it comes; `None` once every sink is gone.
    pub async fn recv(&mut self) -> Option<Delivery> {
        if let Some(d) = self.try_recv() {
            return Some(d);
        }
        let ev = self.rx.recv().await?;
        Some(Delivery::Event(ev))
    }

    /// [`Events::recv`] without waiting.
    pub fn try_recv(&mut self) -> Option<Delivery> {
        if let Ok(ev) = self.rx.try_recv() {
            return Some(Delivery::Event(ev));
        }
        self.take_lost()
    }

    fn take_lost(&self) -> Option<Delivery> {
        let mut lost = self.lost.lock().unwrap_or_else(|e| e.into_inner());
        let dir = lost.keys().next()?.clone();
        let since = lost.remove(&dir)?;
        Some(Delivery::Rescan { dir, since })
    }
}

/// A bounded channel of [`BOUND`] events for one subscriber.
pub fn channel() -> (Sink, Events) {
    channel_of(BOUND)
}

/// [`channel`] with another bound (tests).
pub fn channel_of(bound: usize) -> (Sink, Events) {
    let (tx, rx) = mpsc::channel(bound.max(1));
    let lost = Lost::default();
    (
        Sink {
            tx,
            lost: lost.clone(),
        },
        Events { rx, lost },
    )
}

/// Identifies a subscriber.
pub type SubscriberId = u64;

/// Which entries of a watched folder a subscriber wants (by file name); events about the
/// folder itself always pass.
pub type Filter = fn(&std::ffi::OsStr) -> bool;

struct Route {
    id: SubscriberId,
    sink: Sink,
    only: Option<Filter>,
}

type Routes = HashMap<PathBuf, Vec<Route>>;

/// Whether an event kind reports a change (anything but a read: an open, a read, a close
/// without writing).
pub fn is_change(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        notify::EventKind::Access(_) => false,
        _ => true,
    }
}

/// A cloneable handle to the service's watcher.
#[derive(Clone)]
pub struct FsWatch {
    watcher: Arc<Mutex<RecommendedWatcher>>,
    routes: Arc<Mutex<Routes>>,
    next: Arc<AtomicU64>,
}

impl FsWatch {
    pub fn new() -> notify::Result<FsWatch> {
        let routes: Arc<Mutex<Routes>> = Arc::default();
        let table = routes.clone();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(ev) = res else { return };
            if !is_change(&ev.kind) {
                return;
            }
            let Ok(routes) = table.lock() else { return };
            let mut sent: Vec<SubscriberId> = Vec::new();
            for p in &ev.paths {
                let entry = p.file_name().unwrap_or_default();
                for (dir, is_entry) in [(p.parent(), true), (Some(p.as_path()), false)] {
                    let Some(dir) = dir else { continue };
                    for r in routes.get(dir).into_iter().flatten() {
                        let wanted = !is_entry || r.only.is_none_or(|only| only(entry));
                        if wanted && !sent.contains(&r.id) {
                            sent.push(r.id);
                            tracing::trace!(subscriber = r.id, path = %p.display(), kind = ?ev.kind, "fswatch event delivered");
                            r.sink.deliver(ev.clone(), dir);
                        }
                    }
                }
            }
        })?;
        Ok(FsWatch {
            watcher: Arc::new(Mutex::new(watcher)),
            routes,
            next: Arc::new(AtomicU64::new(1)),
        })
    }

    /// A fresh subscriber id.
    pub fn subscriber(&self) -> SubscriberId {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Deliver events about `dir`'s entries (and `dir` itself) to `sink`.
    pub fn watch(&self, dir: &Path, id: SubscriberId, sink: Sink) -> notify::Result<()> {
        self.route(
            dir,
            Route {
                id,
                sink,
                only: None,
            },
        )
    }

    /// [`FsWatch::watch`], for the entries of `dir` whose name passes `only` (and `dir`
    /// itself): other events never leave the watcher's thread.
    pub fn watch_only(
        &self,
        dir: &Path,
        id: SubscriberId,
        sink: Sink,
        only: Filter,
    ) -> notify::Result<()> {
        self.route(
            dir,
            Route {
                id,
                sink,
                only: Some(only),
            },
        )
    }

    fn route(&self, dir: &Path, route: Route) -> notify::Result<()> {
        let first = {
            let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            let subs = routes.entry(dir.to_owned()).or_default();
            let first = subs.is_empty();
            if !subs.iter().any(|r| r.id == route.id) {
                subs.push(route);
            }
            first
        };
        if !first {
            return Ok(());
        }
        let result = self
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .watch(dir, RecursiveMode::NonRecursive);
        if result.is_err() {
            let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            routes.remove(dir);
        }
        result
    }

    /// Stop delivering anything to `id`; folders nobody else watches are unwatched.
    pub fn unwatch_all(&self, id: SubscriberId) {
        let orphans: Vec<PathBuf> = {
            let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            let mut orphans = Vec::new();
            routes.retain(|dir, subs| {
                subs.retain(|r| r.id != id);
                if subs.is_empty() {
                    orphans.push(dir.clone());
                    false
                } else {
                    true
                }
            });
            orphans
        };
        let mut watcher = self.watcher.lock().unwrap_or_else(|e| e.into_inner());
        for dir in orphans {
            let _ = watcher.unwatch(&dir);
        }
    }

    /// Folders watched (one inotify watch each).
    pub fn watch_count(&self) -> usize {
        self.routes.lock().map(|r| r.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
    use notify::EventKind;

    /// A burst beyond the bound is neither lost nor kept: what fits is delivered, the rest
    /// becomes one rescan of its folder, after what the channel held.
    #[tokio::test]
    async fn a_burst_beyond_the_bound_becomes_a_rescan_of_its_folder() {
        let (sink, mut events) = channel_of(4);
        let dir = Path::new("/w/src");
        let before = SystemTime::now();
        for i in 0..100 {
            let ev = notify::Event::new(EventKind::Create(CreateKind::File))
                .add_path(dir.join(format!("f{i}")));
            sink.deliver(ev, dir);
        }
        let mut got = Vec::new();
        while let Some(d) = events.try_recv() {
            got.push(d);
        }
        assert_eq!(got.len(), 5, "{got:?}");
        assert!(got[..4].iter().all(|d| matches!(d, Delivery::Event(_))));
        match &got[4] {
            Delivery::Rescan { dir: d, since } => {
                assert_eq!(d, dir);
                assert!(*since >= before);
            }
            other => panic!("{other:?}"),
        }
        // Nothing more: the loss was reported once.
        assert!(events.try_recv().is_none());
    }

    #[test]
    fn reads_are_not_changes() {
        assert!(!is_change(&EventKind::Access(AccessKind::Open(
            AccessMode::Any
        ))));
        assert!(!is_change(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(is_change(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(is_change(&EventKind::Create(CreateKind::File)));
        assert!(is_change(&EventKind::Modify(ModifyKind::Any)));
    }
}
