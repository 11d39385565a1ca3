//! Fuzz target: one `queue.jsonl` line through `queue::parse_line` and `queue::excerpt`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = openfiles::queue::parse_line(data);
    let _ = openfiles::queue::excerpt(data);
});
