//! Fuzz target: the Claws ANSI stripper and the shell-integration mark scanner
//! (`claws/strip.rs`, compiled in from its source), the scanner fed in two chunks split at
//! the first byte's value.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/claws/src/strip.rs"]
mod strip;

fuzz_target!(|data: &[u8]| {
    let s = strip::strip(data);
    // The stripped text never grows past the input's length (lossy replacement aside).
    assert!(s.chars().count() <= data.len());
    let _ = strip::plain_output(data);
    let split = data.first().map_or(0, |&b| b as usize).min(data.len());
    let mut scanner = strip::MarkScanner::new("n0nce");
    let mut marks = Vec::new();
    scanner.feed(0, &data[..split], &mut marks);
    scanner.feed(split as u64, &data[split..], &mut marks);
});
