//! The service-wide bound on concurrent project-wide runs (`[service] max_project_runs`,
//! default the number of cores): six worktrees edited at once queue their type checkers'
//! whole-project runs instead of starting a dozen at the same moment.
//!
//! The service's plugin manager holds the one bound (`Checker::run_bound`); the pipelines'
//! schedulers take a place for an edit's run, baseline jobs for theirs, before they ask the
//! plugin, so the time a run waits for a place counts against no deadline.
//!
//! Order when the bound is reached: baseline runs (a run over a commit's snapshot,
//! `CheckRequest::cache_of` set) go first, then the edits' runs, each class in the order it
//! came. A baseline run is one per repository, commit, source and project
//! ([`crate::diagnostics::baseline::shared`]) and every hook of every worktree at that
//! commit needs it before it can name what its edit broke elsewhere; an edit's run serves
//! one workspace. Running the shared one first lets the first edit run's knock-on be
//! classified as soon as that run ends, instead of after every queued edit run.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// Which queue a run waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A run over a commit's snapshot (the baseline), shared by every worktree at it.
    Baseline,
    /// A run for an edit.
    Edit,
}

/// The bound: how many project-wide runs may run at once, and who waits.
#[derive(Debug)]
pub struct RunBound {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    limit: usize,
    running: usize,
    /// The most that ran at once since the service started.
    peak: usize,
    baseline: VecDeque<oneshot::Sender<Permit>>,
    edit: VecDeque<oneshot::Sender<Permit>>,
}

impl State {
    fn next(&mut self) -> Option<oneshot::Sender<Permit>> {
        self.baseline.pop_front().or_else(|| self.edit.pop_front())
    }
}

/// A running project-wide run's place; dropping it lets the next one start.
#[derive(Debug)]
pub struct Permit {
    bound: Option<Arc<RunBound>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(bound) = self.bound.take() {
            let mut s = bound.lock();
            s.running = s.running.saturating_sub(1);
            RunBound::grant(&bound, s);
        }
    }
}

/// What `status` shows of the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    pub limit: usize,
    pub running: usize,
    pub waiting: usize,
    pub peak: usize,
}

/// `[service] max_project_runs`: `0` means the number of cores.
pub fn limit_for(configured: usize) -> usize {
    match configured {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    }
}

impl RunBound {
    /// A bound of `limit` runs at once (at least one).
    pub fn new(limit: usize) -> Arc<RunBound> {
        Arc::new(RunBound {
            state: Mutex::new(State {
                limit: limit.max(1),
                ..State::default()
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new limit (a config reload): more room starts waiting runs at once; less lets the
    /// running ones finish.
    pub fn set_limit(self: &Arc<Self>, limit: usize) {
        let mut s = self.lock();
        s.limit = limit.max(1);
        Self::grant(self, s);
    }

    /// The bound's state now.
    pub fn load(&self) -> Load {
        let s = self.lock();
        Load {
            limit: s.limit,
            running: s.running,
            waiting: s.baseline.len() + s.edit.len(),
            peak: s.peak,
        }
    }

    /// Wait for a place (in `class`'s queue when none is free). Dropping the future while
    /// it waits gives the place up.
    pub async fn acquire(self: &Arc<Self>, class: Class) -> Permit {
        let rx = {
            let mut s = self.lock();
            let idle = s.baseline.is_empty() && s.edit.is_empty();
            if idle && s.running < s.limit {
                s.running += 1;
                s.peak = s.peak.max(s.running);
                return Permit {
                    bound: Some(self.clone()),
                };
            }
            let (tx, rx) = oneshot::channel();
            match class {
                Class::Baseline => s.baseline.push_back(tx),
                Class::Edit => s.edit.push_back(tx),
            }
            rx
        };
        match rx.await {
            Ok(permit) => permit,
            // The bound is gone (it never drops a waiter otherwise): run unbounded.
            Err(_) => Permit { bound: None },
        }
    }

    /// Hand free places to waiters, first in order; a waiter that gave up is skipped.
    fn grant<'a>(bound: &'a Arc<RunBound>, mut s: MutexGuard<'a, State>) {
        while s.running < s.limit {
            let Some(tx) = s.next() else {
                return;
            };
            s.running += 1;
            s.peak = s.peak.max(s.running);
            drop(s);
            let permit = Permit {
                bound: Some(bound.clone()),
            };
            if let Err(mut unwanted) = tx.send(permit) {
                unwanted.bound = None;
                s = bound.lock();
                s.running = s.running.saturating_sub(1);
                continue;
            }
            s = bound.lock();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_past_the_bound_wait_and_baselines_go_first() {
        let bound = RunBound::new(1);
        let first = bound.acquire(Class::Edit).await;
        let b = bound.clone();
        let edit = tokio::spawn(async move { b.acquire(Class::Edit).await });
        tokio::task::yield_now().await;
        let b = bound.clone();
        let base = tokio::spawn(async move { b.acquire(Class::Baseline).await });
        while bound.load().waiting < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(bound.load().running, 1);
        drop(first);
        let base = base.await.unwrap();
        assert!(!edit.is_finished(), "the edit waits behind the baseline");
        assert_eq!(bound.load().running, 1);
        drop(base);
        let edit = edit.await.unwrap();
        drop(edit);
        let load = bound.load();
        assert_eq!((load.running, load.waiting, load.peak), (0, 0, 1));
    }

    #[tokio::test]
    async fn a_waiter_that_gives_up_loses_no_place() {
        let bound = RunBound::new(1);
        let first = bound.acquire(Class::Edit).await;
        let b = bound.clone();
        let gave_up = tokio::spawn(async move { b.acquire(Class::Edit).await });
        while bound.load().waiting < 1 {
            tokio::task::yield_now().await;
        }
        gave_up.abort();
        let _ = gave_up.await;
        drop(first);
        assert_eq!(bound.load().running, 0);
        let _again = bound.acquire(Class::Edit).await;
        assert_eq!(bound.load().running, 1);
    }

    #[tokio::test]
    async fn a_larger_limit_starts_waiting_runs() {
        let bound = RunBound::new(1);
        let _first = bound.acquire(Class::Edit).await;
        let b = bound.clone();
        let second = tokio::spawn(async move { b.acquire(Class::Edit).await });
        while bound.load().waiting < 1 {
            tokio::task::yield_now().await;
        }
        bound.set_limit(2);
        let _second = second.await.unwrap();
        assert_eq!(bound.load().running, 2);
    }
}
