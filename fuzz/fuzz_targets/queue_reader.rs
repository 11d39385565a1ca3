//! Fuzz target: the queue reader over arbitrary file contents. The input is split at the
//! first 0xFF byte: the first part is `queue.jsonl` at start, the rest is appended after the
//! first step. Every line read is parsed; reading ends with the queue drained.
#![no_main]
use libfuzzer_sys::fuzz_target;
use openfiles::diagnostics::writer::Cursor;
use openfiles::intake::queue::Reader;
use std::io::Write;

fuzz_target!(|data: &[u8]| {
    let (first, rest) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let q = dir.path().join(".openfiles");
    std::fs::create_dir(&q).expect("mkdir");
    let queue = q.join("queue.jsonl");
    std::fs::write(&queue, first).expect("write");
    let mut reader = Reader::new(dir.path(), Cursor::default());
    let mut taken = 0usize;
    for round in 0..6 {
        let step = match reader.step() {
            Ok(s) => s,
            Err(_) => break,
        };
        for line in step.lines.iter().flatten() {
            let _ = openfiles::intake::parse_line(line);
            taken += line.len() + 1;
        }
        reader.acked = reader.cursor;
        if round == 0 && !rest.is_empty() {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&queue)
                .expect("append");
            f.write_all(rest).expect("append");
        }
    }
    // Never more bytes taken as lines than were written.
    assert!(taken <= first.len() + rest.len() + 2);
});
