//! Fuzz target: one Claws request line through the envelope parser (`claws/proto.rs`, a
//! private module compiled in from its source) and its accessors and protocol check.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../src/claws/proto.rs"]
mod proto;

fuzz_target!(|data: &[u8]| {
    if let Some(req) = proto::Request::parse(data) {
        let _ = req.id();
        let _ = req.str("cmd");
        let _ = req.bool("wrapped");
        let _ = req.u64("timeoutMs");
        let _ = req.protocol_error();
    }
});
