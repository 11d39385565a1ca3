//! The bus with its event log on a disk that stops answering: no bus call waits for it.

use super::log::{for_each_event, segments, Limits};
use super::*;

fn stored(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for s in segments(dir) {
        for_each_event(dir, s, 0, u64::MAX, |_, _, _| n += 1).unwrap();
    }
    n
}

/// With the log's writer stalled, publishing past the queue's bound still returns (the
/// events past it are delivered live and counted as not stored, never placed in the log),
/// other bus calls answer, and once the disk is back every placed event is written and
/// storing resumes.
#[test]
fn a_stalled_disk_never_blocks_a_bus_call() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        segment_bytes: 1 << 40,
        segment_age: Duration::from_secs(3600),
        total_bytes: 1 << 40,
    };
    let (log, seq) = EventLog::open(dir.path(), limits).unwrap();
    let bus = Bus::new(Some((log, seq))).unwrap();
    let writer = bus.writer.clone().unwrap();
    let stall = writer.stall();
    let pad = "x".repeat(1 << 20);
    let n = (writer::MAX_QUEUED >> 20) as u64 + 8;
    for i in 0..n {
        bus.publish_server("t.big", json!({"i": i, "pad": pad}));
    }
    let not_stored = bus.events_not_stored();
    assert!(
        not_stored >= 7,
        "the queue's bound was passed: {not_stored}"
    );
    assert_eq!(bus.last_sequence(), seq + n, "every event was delivered");
    drop(stall);
    bus.flush_log();
    assert_eq!(stored(dir.path()), n - not_stored);
    bus.publish_server("t.after", json!({}));
    bus.flush_log();
    assert_eq!(stored(dir.path()), n - not_stored + 1, "storing resumed");
    assert_eq!(bus.events_not_stored(), not_stored);
}
