//! Fuzz target: one Claws request line through the envelope parser and the typed command
//! decoder (`claws/proto.rs` and `claws/request/`, private modules compiled in from
//! their source): the protocol check, then `Command::parse` of whatever `cmd` says.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../src/claws/proto.rs"]
mod proto;
#[allow(dead_code)]
#[path = "../../src/claws/request/mod.rs"]
mod request;

fuzz_target!(|data: &[u8]| {
    if let Some(req) = proto::Request::parse(data) {
        let _ = req.id();
        let _ = req.protocol_error();
        let _ = request::Command::parse(&req);
    }
});
