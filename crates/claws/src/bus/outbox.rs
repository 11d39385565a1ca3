//! A peer's outgoing queue of push frames: bounded in frames, in bytes for the peer and in
//! bytes for all peers together; what does not fit is dropped for that peer only and counted.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

use openfiles_wire::claws::PROTOCOL_2;

/// A peer's bounded outgoing queue of push frames (each a complete line), bounded in
/// frames (the channel), in bytes for this peer, and in bytes for all peers together: a
/// stuck subscriber of large publishes costs at most its byte budget, then frames are
/// dropped (and counted in a `dropped` notice).
pub struct Outbox {
    tx: mpsc::Sender<Arc<str>>,
    dropped: AtomicU64,
    queued: AtomicUsize,
    limit: usize,
    total: Arc<AtomicUsize>,
    total_limit: usize,
}

impl Outbox {
    pub fn new(
        tx: mpsc::Sender<Arc<str>>,
        limit: usize,
        total: Arc<AtomicUsize>,
        total_limit: usize,
    ) -> Outbox {
        Outbox {
            tx,
            dropped: AtomicU64::new(0),
            queued: AtomicUsize::new(0),
            limit,
            total,
            total_limit,
        }
    }

    pub(super) fn push(&self, frame: Arc<str>) -> bool {
        let n = frame.len();
        let over = |counter: &AtomicUsize, limit: usize| {
            counter
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                    (q + n <= limit).then_some(q + n)
                })
                .is_err()
        };
        if over(&self.queued, self.limit) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if over(&self.total, self.total_limit) {
            self.queued.fetch_sub(n, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        match self.tx.try_send(frame) {
            Ok(()) => true,
            Err(e) => {
                self.sent(n);
                if let mpsc::error::TrySendError::Full(_) = e {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
                false
            }
        }
    }

    /// A frame of `n` bytes left the queue (written, or given up).
    pub fn sent(&self, n: usize) {
        self.queued.fetch_sub(n, Ordering::AcqRel);
        self.total.fetch_sub(n, Ordering::AcqRel);
    }

    /// Bytes queued for this peer now.
    pub fn queued_bytes(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// The `dropped` frame to send now that the queue has drained, if anything was dropped.
    /// Frames dropped and not yet announced.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub fn take_dropped_notice(&self) -> Option<String> {
        let n = self.dropped.swap(0, Ordering::Relaxed);
        (n > 0).then(|| {
            format!("{{\"push\":\"dropped\",\"protocol\":\"{PROTOCOL_2}\",\"count\":{n}}}\n")
        })
    }
}

impl Drop for Outbox {
    /// Frames still queued when the peer goes leave the service-wide budget.
    fn drop(&mut self) {
        let left = self.queued.load(Ordering::Acquire);
        self.total.fetch_sub(left, Ordering::AcqRel);
    }
}
