//! Fuzz target: one Claws request line through the envelope parser and the typed command
//! decoder (`openfiles_wire::claws`): the protocol check, `Command::parse` of whatever `cmd`
//! says, and back to the wire with `Command::to_value`, which must decode to the same command.
#![no_main]
use libfuzzer_sys::fuzz_target;
use openfiles_wire::claws::request::Command;
use openfiles_wire::claws::Request;

fuzz_target!(|data: &[u8]| {
    if let Some(req) = Request::parse(data) {
        let _ = req.id();
        let _ = req.protocol_error();
        if let Ok(cmd) = Command::parse(&req) {
            let again = Request::from_value(cmd.to_value()).expect("an object");
            assert_eq!(Command::parse(&again).as_ref(), Ok(&cmd));
        }
    }
});
