//! Fuzz target: one `queue.jsonl` line through `intake::parse_line` and `intake::excerpt`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = openfiles::intake::parse_line(data);
    let _ = openfiles::intake::excerpt(data);
});
