//! Workspaces registered but not started yet, so that `READY=1` does not wait for a
//! thousand of them.
//!
//! Before `READY=1` the registry starts the workspaces named explicitly (`serve -w`,
//! `service.workspaces`) and, within [`PRE_READY_STARTS`], those restored from the state file;
//! the rest of the restored ones and everything discovered under `service.roots` (the scan
//! itself included) wait here. Once READY is sent, the registry actor starts them
//! [`BATCH`] at a time and answers the commands that queued up between batches. The queue
//! keeps the old start order (restored before discovered), and an item started later than
//! an explicitly named workspace of the same folder still gives it the source the old order
//! would have ([`Item::adopts`]), so the persisted list is what it always was. No request sees
//! a half-started world: the registry starts the pending workspace a lookup falls into before
//! answering, and finishes the queue before listing, forgetting or reloading.
//!
//! The queue is a field of the registry actor; the actor's methods that fill and drain it
//! (the scan, batches, the lookup's early start, the save and log line once all are served)
//! live here with it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{discovery, resolve, Registry, Source};

/// Workspaces started before `READY=1`, explicitly named ones included (those always start
/// there, even past this budget). Every client that connects right after READY, and every
/// test that starts a service with a few workspaces, finds them served exactly as before;
/// at ~0.8 ms a start, 64 keep READY well under 100 ms, where a thousand took ~0.8 s.
pub const PRE_READY_STARTS: usize = 64;

/// Pending workspaces started per turn of the registry actor before it answers the
/// commands that arrived meanwhile: ~25 ms of work, short enough for a request to be
/// answered promptly, long enough that the queue drains in about a second per thousand.
pub const BATCH: usize = 32;

/// Where a pending workspace came from, in the old start order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The state file, past [`PRE_READY_STARTS`] (started before `service.workspaces`).
    Restored,
    /// A scan of `service.roots` (started after `service.workspaces`, before `serve -w`).
    Discovered,
}

/// One workspace waiting to be started.
#[derive(Debug, Clone)]
pub struct Item {
    pub dir: PathBuf,
    pub source: Source,
    pub phase: Phase,
}

impl Item {
    /// Whether this item, found already served with `existing` as its source, takes that
    /// place: the old order started restored workspaces before config ones and discovered
    /// ones before `serve -w` ones, and the first registration named the source.
    pub fn adopts(&self, existing: Source) -> bool {
        match existing {
            Source::Cli => true,
            Source::Config => self.phase == Phase::Restored,
            _ => false,
        }
    }
}

/// The queue, and since when it has been waiting (for the "all served" line).
#[derive(Default)]
pub struct Pending {
    items: VecDeque<Item>,
    since: Option<Instant>,
}

impl Pending {
    /// Mark the start of a wait (the service's start, a reload with new roots): the next
    /// [`Pending::drained`] reports it, even if nothing was queued. An earlier mark is kept.
    pub fn begin(&mut self, since: Instant) {
        self.since.get_or_insert(since);
    }

    pub fn push(&mut self, dir: PathBuf, source: Source, phase: Phase) {
        self.items.push_back(Item { dir, source, phase });
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn pop(&mut self) -> Option<Item> {
        self.items.pop_front()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Item> {
        self.items.iter()
    }

    /// Take the item whose folder is exactly `dir`.
    pub fn take(&mut self, dir: &Path) -> Option<Item> {
        let i = self.items.iter().position(|it| it.dir == dir)?;
        self.items.remove(i)
    }

    /// Drop every item (the service stops).
    pub fn clear(&mut self) {
        self.items.clear();
        self.since = None;
    }

    /// Once the queue is empty: since when it waited ([`Pending::begin`]), once.
    pub fn drained(&mut self) -> Option<Instant> {
        if self.items.is_empty() {
            self.since.take()
        } else {
            None
        }
    }
}

/// How the registry actor starts what waits here.
impl Registry {
    /// Queue the workspaces found under `service.roots`; the roots are watched for new ones
    /// once these are started ([`Registry::settle`]), so that their own start-up writes
    /// (`.claws/` made in each) do not come back as discoveries.
    pub(super) fn discover(&mut self) {
        for dir in discovery::scan(&self.config.service.roots) {
            self.pending
                .push(dir, Source::Discovered, Phase::Discovered);
        }
        self.watch_roots = true;
        self.settle();
    }

    /// Start up to `n` pending workspaces, in order.
    pub(super) async fn start_pending(&mut self, n: usize) {
        for _ in 0..n {
            let Some(item) = self.pending.pop() else {
                break;
            };
            self.start_item(item).await;
        }
        self.shared.update_status(self.entries.len());
        self.settle();
    }

    /// Start every pending workspace (those a last scan adds included), for an answer
    /// that must see them all.
    pub(super) async fn finish_pending(&mut self) {
        while !self.pending.is_empty() {
            self.start_pending(usize::MAX).await;
        }
    }

    /// Start one pending workspace (or give an already served folder the source the old
    /// start order would have given it).
    async fn start_item(&mut self, item: Item) {
        // As `add` judges a restored or discovered folder: never the home folder.
        if let Ok(root) = resolve::workspace_dir(&item.dir, false) {
            if let Some(e) = self.entries.get_mut(&root) {
                if item.adopts(e.source) {
                    e.source = item.source;
                }
                return;
            }
        }
        if let Err(e) = self.add(&item.dir, item.source).await {
            match item.phase {
                Phase::Restored => {
                    tracing::warn!("not restoring workspace {}: {e}", item.dir.display())
                }
                Phase::Discovered => {
                    tracing::warn!("discovered workspace {}: {e}", item.dir.display())
                }
            }
        }
    }

    /// Once nothing is pending any more: watch the roots if a scan asked for it, save the
    /// list and say how long serving them took.
    fn settle(&mut self) {
        if let Some(since) = self.pending.drained() {
            if std::mem::take(&mut self.watch_roots) {
                discovery::watch(
                    self.config.service.roots.clone(),
                    self.handle.clone(),
                    &self.shared.fswatch,
                    self.discovery.clone(),
                );
                // A marker made between the scan and the watch is found by a second scan
                // (a folder that failed to start is tried once more).
                let missed: Vec<PathBuf> = discovery::scan(&self.config.service.roots)
                    .into_iter()
                    .filter(|d| !self.entries.contains_key(d))
                    .collect();
                if !missed.is_empty() {
                    for dir in missed {
                        self.pending
                            .push(dir, Source::Discovered, Phase::Discovered);
                    }
                    self.pending.begin(since);
                    return;
                }
            }
            self.persist();
            let ms = since.elapsed().as_millis() as u64;
            tracing::info!(
                ms,
                "all {} workspaces served in {ms} ms",
                self.entries.len()
            );
        }
    }

    /// Start the pending workspace that holds `path` (deeper than any served one), if any,
    /// so that a lookup right after READY finds it served.
    pub(super) async fn start_pending_holding(&mut self, path: &Path) {
        while !self.pending.is_empty() {
            let dirs = self.pending.iter().map(|i| &i.dir);
            let Some(deepest) = resolve::containing(self.entries.keys().chain(dirs), path) else {
                break;
            };
            if self.entries.contains_key(&deepest) {
                break;
            }
            let Some(item) = self.pending.take(&deepest) else {
                break;
            };
            self.start_item(item).await;
            self.settle();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restored_item_takes_the_place_of_a_config_one_and_a_discovered_only_of_a_cli_one() {
        let item = |phase| Item {
            dir: PathBuf::from("/p"),
            source: Source::Added,
            phase,
        };
        assert!(item(Phase::Restored).adopts(Source::Config));
        assert!(item(Phase::Restored).adopts(Source::Cli));
        assert!(!item(Phase::Discovered).adopts(Source::Config));
        assert!(item(Phase::Discovered).adopts(Source::Cli));
        assert!(!item(Phase::Restored).adopts(Source::Edit));
    }

    #[test]
    fn the_queue_reports_its_start_once_when_drained() {
        let mut q = Pending::default();
        assert_eq!(q.drained(), None);
        let t = Instant::now();
        q.begin(t);
        q.push("/a".into(), Source::Discovered, Phase::Discovered);
        q.begin(Instant::now());
        q.push("/b".into(), Source::Discovered, Phase::Discovered);
        assert_eq!(q.drained(), None);
        assert_eq!(q.take(Path::new("/b")).map(|i| i.dir), Some("/b".into()));
        assert!(q.pop().is_some());
        assert_eq!(q.drained(), Some(t));
        assert_eq!(q.drained(), None);
    }
}
