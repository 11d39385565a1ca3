//! The event log's writer: one thread per bus that owns the segment files and does every
//! disk operation of the log (appends, starting a segment, pruning and retention, which
//! read the folder and delete files), so none of it runs under the bus lock or on a runtime
//! thread. The bus decides under its lock where each event goes ([`super::log::Tail`]: the
//! segment and offset, and when a new segment starts) and queues it here in sequence order;
//! the thread writes what is queued in one `write` per batch and then publishes how far the
//! log is written ([`Progress`]), which a replay waits for before it reads.
//!
//! Nothing queued is lost: the server's stop waits until everything placed so far is
//! written ([`Progress::wait_written`]), and dropping the writer lets the thread drain the
//! queue and end.
//! The queue is bounded in bytes ([`MAX_QUEUED`]) and never waits: the bus queues under its
//! lock, so waiting there for a disk that stops answering would freeze every bus call. Past
//! the bound the bus does not place the event in the log at all ([`Writer::has_room`]): it is
//! still delivered live, not stored for replay, and counted and logged (`super::Logging`).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::log::{Cursor, EventLog};

/// Bytes of events queued for the disk past which the bus stores no more until it catches up.
pub const MAX_QUEUED: usize = 64 << 20;

/// One thing for the writer to do, in order.
pub enum Op {
    /// Write `line` (with its newline), after starting segment `start` when set.
    Append { start: Option<u32>, line: Vec<u8> },
    /// Delete segments last written longer ago than this (`retention_days`).
    Retain(Duration),
}

struct Queue {
    ops: Vec<Op>,
    bytes: usize,
    closed: bool,
}

/// How far the log is written: every event before this cursor is on disk (or its write
/// failed and was logged). Past the end once the writer has stopped, so no one waits on it.
pub struct Progress {
    written: Mutex<Cursor>,
    moved: Condvar,
}

impl Progress {
    fn set(&self, c: Cursor) {
        *lock(&self.written) = c;
        self.moved.notify_all();
    }

    /// Block until every event before `c` is written.
    pub fn wait_written(&self, c: Cursor) {
        let mut w = lock(&self.written);
        while *w < c {
            w = self.moved.wait(w).unwrap_or_else(|e| e.into_inner());
        }
    }
}

struct Shared {
    q: Mutex<Queue>,
    work: Condvar,
    progress: Arc<Progress>,
    /// Held by the thread while it writes a batch; a test holds it to stall the disk.
    #[cfg(test)]
    disk: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The handle the bus keeps.
pub struct Writer {
    shared: Arc<Shared>,
}

impl Writer {
    /// Start the thread that owns `log`; `at` is where its next event starts.
    pub fn start(log: EventLog, at: Cursor) -> std::io::Result<Writer> {
        let shared = Arc::new(Shared {
            q: Mutex::new(Queue {
                ops: Vec::new(),
                bytes: 0,
                closed: false,
            }),
            work: Condvar::new(),
            progress: Arc::new(Progress {
                written: Mutex::new(at),
                moved: Condvar::new(),
            }),
            #[cfg(test)]
            disk: Mutex::new(()),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("claws-event-log".into())
            .spawn(move || run(&s, log, at))?;
        Ok(Writer { shared })
    }

    pub fn progress(&self) -> Arc<Progress> {
        self.shared.progress.clone()
    }

    /// Whether the queue is under [`MAX_QUEUED`] bytes: the bus asks before it places an
    /// event, under its lock, so nothing else queues an append in between.
    pub fn has_room(&self) -> bool {
        lock(&self.shared.q).bytes <= MAX_QUEUED
    }

    /// Queue `op`; never waits for the disk (the caller decides with [`Writer::has_room`]).
    pub fn push(&self, op: Op) {
        let n = match &op {
            Op::Append { line, .. } => line.len(),
            Op::Retain(_) => 0,
        };
        let mut q = lock(&self.shared.q);
        if q.closed {
            tracing::debug!(
                "claws event log already closed; an event after shutdown is not stored"
            );
            return;
        }
        q.bytes += n;
        q.ops.push(op);
        drop(q);
        self.shared.work.notify_one();
    }

    /// Stall the disk: the thread writes nothing while the guard lives.
    #[cfg(test)]
    pub fn stall(&self) -> MutexGuard<'_, ()> {
        lock(&self.shared.disk)
    }

    /// Write everything queued, then end the thread (blocking).
    #[cfg(test)]
    pub fn close(&self) {
        lock(&self.shared.q).closed = true;
        self.shared.work.notify_one();
        // The thread marks the log written to the end as it ends.
        self.shared.progress.wait_written(END);
    }
}

impl Drop for Writer {
    /// The thread drains what is queued and ends on its own.
    fn drop(&mut self) {
        lock(&self.shared.q).closed = true;
        self.shared.work.notify_one();
    }
}

/// Marks the log as written to the end when the thread ends, however it ends.
struct EndGuard(Arc<Progress>);

/// Past every event: where the progress stands once the thread has ended.
const END: Cursor = Cursor {
    segment: u32::MAX,
    offset: u64::MAX,
};

impl Drop for EndGuard {
    fn drop(&mut self) {
        self.0.set(END);
    }
}

fn run(shared: &Shared, mut log: EventLog, mut at: Cursor) {
    let _end = EndGuard(shared.progress.clone());
    let mut buf = Vec::new();
    loop {
        let ops = {
            let mut q = lock(&shared.q);
            while q.ops.is_empty() && !q.closed {
                q = shared.work.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.ops.is_empty() {
                return;
            }
            std::mem::take(&mut q.ops)
        };
        #[cfg(test)]
        let disk = lock(&shared.disk);
        let bytes: usize = ops
            .iter()
            .map(|op| match op {
                Op::Append { line, .. } => line.len(),
                Op::Retain(_) => 0,
            })
            .sum();
        for op in ops {
            match op {
                Op::Append { start, line } => {
                    if let Some(n) = start {
                        log.write(&buf);
                        buf.clear();
                        log.start_segment(n);
                        at = Cursor {
                            segment: n,
                            offset: 0,
                        };
                    }
                    at.offset += line.len() as u64;
                    buf.extend_from_slice(&line);
                }
                Op::Retain(age) => {
                    log.write(&buf);
                    buf.clear();
                    log.retain(age);
                }
            }
        }
        log.write(&buf);
        buf.clear();
        if buf.capacity() > 4 << 20 {
            buf = Vec::new(); // a burst's buffer is not kept
        }
        #[cfg(test)]
        drop(disk);
        // Counted out only once written: the bound covers what waits for the disk.
        let mut q = lock(&shared.q);
        q.bytes = q.bytes.saturating_sub(bytes);
        drop(q);
        shared.progress.set(at);
    }
}

#[cfg(test)]
mod tests {
    use super::super::log::{for_each_event, segments, EventLog, Limits};
    use super::*;

    /// Events placed by the tail and written by the thread land exactly where the tail
    /// said, in order, across many rotations; a replay waiting for the writer sees every
    /// one; closing drains the queue.
    #[test]
    fn every_event_lands_at_its_cursor_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            segment_bytes: 4096,
            segment_age: Duration::from_secs(3600),
            total_bytes: 1 << 30,
        };
        let (log, _) = EventLog::open(dir.path(), limits).unwrap();
        let mut tail = log.tail();
        let w = Writer::start(log, tail.position()).unwrap();
        let mut placed = Vec::new();
        for seq in 1..=5000u64 {
            let line = format!(
                "{{\"sequence\":{seq},\"topic\":\"t.x\",\"payload\":{{\"pad\":\"{}\"}}}}",
                "y".repeat((seq % 97) as usize)
            );
            let start = tail.place(line.len() as u64);
            let at = tail.position();
            let mut b = line.into_bytes();
            b.push(b'\n');
            placed.push((seq, at.segment, at.offset - b.len() as u64));
            w.push(Op::Append { start, line: b });
            if seq == 2500 {
                // Half way: everything placed so far can be read back.
                w.progress().wait_written(tail.position());
                let n: usize = segments(dir.path())
                    .iter()
                    .map(|&s| {
                        let mut k = 0;
                        for_each_event(dir.path(), s, 0, u64::MAX, |_, _, _| k += 1).unwrap();
                        k
                    })
                    .sum();
                assert_eq!(n, 2500);
            }
        }
        w.close();
        let mut got = Vec::new();
        for s in segments(dir.path()) {
            for_each_event(dir.path(), s, 0, u64::MAX, |c, h, _| {
                got.push((h.sequence, c.segment, c.offset))
            })
            .unwrap();
        }
        assert_eq!(got, placed);
        assert!(segments(dir.path()).len() > 50, "rotated many times");
        // A waiter after the end is never stuck.
        w.progress().wait_written(Cursor {
            segment: u32::MAX,
            offset: 0,
        });
    }
}
