//! Fuzz target: UTF-8-safe paging of the Claws capture ring (`claws/ring.rs`, compiled in
//! from its source). Input: 4 bytes of parameters (capacity, page start, page size, chunk
//! size), then terminal output appended in chunks. Property: pages lie inside the ring and,
//! for valid UTF-8 output, are valid UTF-8.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../crates/claws/src/ring.rs"]
mod ring;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (p, text) = data.split_at(4);
    let cap = p[0] as usize + 1;
    let chunk = p[3] as usize + 1;
    let mut r = ring::Ring::new(cap);
    for c in text.chunks(chunk) {
        r.append(c);
    }
    let utf8 = std::str::from_utf8(text).is_ok();
    let mut from = r.start() + p[1] as u64 % (cap as u64 + 1);
    let limit = p[2] as u64 + 1;
    for _ in 0..64 {
        let (a, b) = r.page(from, limit);
        assert!(r.start() <= a && a <= b && b <= r.end(), "{a}..{b}");
        if utf8 && b > a {
            let bytes = r.slice(a, b);
            assert!(
                std::str::from_utf8(&bytes).is_ok(),
                "page {a}..{b} splits a character"
            );
        }
        if b >= r.end() || b == from {
            break;
        }
        from = b;
    }
});
