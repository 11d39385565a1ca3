//! The control server's activity record: when the last request arrived and how many
//! control connections are open (a waiting hook holds one). An autostarted service's idle
//! exit (`crate::service::idle`) reads it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// When the service was last used, and how many control connections are open.
#[derive(Debug, Default)]
pub struct Activity {
    /// Milliseconds since the Unix epoch of the last request, connection or close.
    last_ms: AtomicU64,
    connections: AtomicUsize,
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
}

/// An open control connection (see [`Activity::connection`]).
pub struct ConnectionGuard(Arc<Activity>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}
