//! Fuzz target: one control-socket request line through `control::control::decode`, and
//! the error reply built from whatever it decoded (what the server sends back).
#![no_main]
use libfuzzer_sys::fuzz_target;
use openfiles_wire::control;

fuzz_target!(|data: &[u8]| {
    let inc = control::decode(data);
    if let Err(e) = &inc.request {
        let reply = control::error_reply(inc.id.as_ref(), e);
        // The reply is one JSON line the client can parse.
        assert!(control::Reply::parse(&reply).is_ok());
    }
});
