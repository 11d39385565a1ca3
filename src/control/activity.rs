//! The service's activity record: when the last request arrived, how many control
//! connections are open (a waiting hook holds one) and how many checks are running (edits
//! that came by the queue or the watcher, not only by the control socket: [`Counting`] wraps
//! the checker). An autostarted service's idle exit (the service's `idle.rs`) reads it.

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use openfiles_plugin_api::{CheckRequest, CheckResponse};

use crate::diagnostics::{CheckError, Checker, SourceId, SourceInfo};

/// When the service was last used, and how many control connections are open.
#[derive(Debug, Default)]
pub struct Activity {
    /// Milliseconds since the Unix epoch of the last request, connection or close.
    last_ms: AtomicU64,
    connections: AtomicUsize,
    checks: AtomicUsize,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        let a = Activity::default();
        a.touch();
        Arc::new(a)
    }

    /// Something happened now.
    pub fn touch(&self) {
        self.last_ms
            .store(openfiles_wire::spec::now_ms(), Ordering::Relaxed);
    }

    /// Count one open control connection until the guard drops (which counts as activity).
    pub fn connection(self: &Arc<Self>) -> ConnectionGuard {
        self.connections.fetch_add(1, Ordering::Relaxed);
        self.touch();
        ConnectionGuard(self.clone())
    }

    pub fn last_ms(&self) -> u64 {
        self.last_ms.load(Ordering::Relaxed)
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Checks running now.
    pub fn checks(&self) -> usize {
        self.checks.load(Ordering::Relaxed)
    }
}

/// The checker every workspace uses, counting its running checks into an [`Activity`]: a
/// check started by the watcher or the queue keeps an autostarted service up like a request.
pub struct Counting {
    inner: Arc<dyn Checker>,
    activity: Arc<Activity>,
}

impl Counting {
    pub fn wrap(inner: Arc<dyn Checker>, activity: Arc<Activity>) -> Arc<dyn Checker> {
        Arc::new(Counting { inner, activity })
    }
}

/// One running check (see [`Counting`]); ending it counts as activity.
struct CheckGuard(Arc<Activity>);

impl Drop for CheckGuard {
    fn drop(&mut self) {
        self.0.checks.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

impl Checker for Counting {
    fn run_bound(&self) -> Option<Arc<crate::diagnostics::bound::RunBound>> {
        self.inner.run_bound()
    }

    fn sources_for(&self, path: &Path) -> Vec<SourceInfo> {
        self.inner.sources_for(path)
    }

    fn check(
        &self,
        source: SourceId,
        request: CheckRequest,
    ) -> BoxFuture<'static, Result<CheckResponse, CheckError>> {
        self.activity.checks.fetch_add(1, Ordering::Relaxed);
        self.activity.touch();
        let guard = CheckGuard(self.activity.clone());
        let check = self.inner.check(source, request);
        async move {
            let result = check.await;
            drop(guard);
            result
        }
        .boxed()
    }

    fn query(
        &self,
        source: SourceId,
        request: openfiles_plugin_api::query::QueryRequest,
    ) -> BoxFuture<'static, Result<openfiles_plugin_api::query::QueryAnswer, CheckError>> {
        self.activity.touch();
        self.inner.query(source, request)
    }
}

/// An open control connection (see [`Activity::connection`]).
pub struct ConnectionGuard(Arc<Activity>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checker whose one check ends when the test says so.
    struct Held(std::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>);

    impl Checker for Held {
        fn sources_for(&self, _: &Path) -> Vec<SourceInfo> {
            Vec::new()
        }

        fn check(
            &self,
            _: SourceId,
            _: CheckRequest,
        ) -> BoxFuture<'static, Result<CheckResponse, CheckError>> {
            let release = self.0.lock().unwrap().take();
            async move {
                if let Some(release) = release {
                    let _ = release.await;
                }
                Ok(CheckResponse::default())
            }
            .boxed()
        }
    }

    #[tokio::test]
    async fn a_running_check_counts_until_it_ends_and_its_end_is_activity() {
        let (release, held) = tokio::sync::oneshot::channel();
        let activity = Activity::new();
        activity.last_ms.store(1, Ordering::Relaxed);
        let checker = Counting::wrap(
            Arc::new(Held(std::sync::Mutex::new(Some(held)))),
            activity.clone(),
        );
        let check = tokio::spawn(checker.check(0, CheckRequest::default()));
        tokio::task::yield_now().await;
        assert_eq!(activity.checks(), 1);
        assert!(activity.last_ms() > 1, "starting a check is activity");
        activity.last_ms.store(1, Ordering::Relaxed);
        release.send(()).unwrap();
        check.await.unwrap().unwrap();
        assert_eq!(activity.checks(), 0);
        assert!(activity.last_ms() > 1, "ending a check is activity");
    }
}
