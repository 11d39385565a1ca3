//! Fuzz target: one control-socket request line through `control::protocol::decode`, and
//! the error reply built from whatever it decoded (what the server sends back).
#![no_main]
use libfuzzer_sys::fuzz_target;
use openfiles_wire::control;

fuzz_target!(|data: &[u8]| {
    let inc = protocol::decode(data);
    if let Err(e) = &inc.request {
        let reply = protocol::error_reply(inc.id.as_ref(), e);
        // The reply is one JSON line the client can parse.
        assert!(protocol::Reply::parse(&reply).is_ok());
    }
});
