//! Fuzz target: hook payload path extraction (`hook::payload::parse_bytes`) on raw stdin
//! bytes, and `patch_targets` on the same bytes as patch text.
#![no_main]
use libfuzzer_sys::fuzz_target;
use openfiles::hook::payload;

fuzz_target!(|data: &[u8]| {
    let _ = payload::parse_bytes(data);
    if let Ok(text) = std::str::from_utf8(data) {
        let mut out = Vec::new();
        payload::patch_targets(text, &mut out);
        // Paths are what the hook hands on: none of them spans lines.
        assert!(out.iter().all(|p| !p.contains('\n')), "{out:?}");
    }
});
