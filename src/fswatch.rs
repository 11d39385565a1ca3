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
//! Lock order: the routing table is never held while calling into the watcher, because the
//! watcher's `watch` waits for its event thread, which may be delivering into the table.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

/// Where a subscriber receives its events.
pub type Sink = mpsc::UnboundedSender<notify::Event>;

/// Identifies a subscriber.
pub type SubscriberId = u64;

type Routes = HashMap<PathBuf, Vec<(SubscriberId, Sink)>>;

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
                for dir in [p.parent(), Some(p.as_path())].into_iter().flatten() {
                    for (id, sink) in routes.get(dir).into_iter().flatten() {
                        if !sent.contains(id) {
                            sent.push(*id);
                            let _ = sink.send(ev.clone());
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
        let first = {
            let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            let subs = routes.entry(dir.to_owned()).or_default();
            let first = subs.is_empty();
            if !subs.iter().any(|(i, _)| *i == id) {
                subs.push((id, sink));
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
                subs.retain(|(i, _)| *i != id);
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
