//! Fuzz target: the cargo-check plugin's `--message-format json` line parser (the module is
//! private to the plugin, so it is compiled in here from its source file).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../plugins/cargo-check/src/messages.rs"]
mod messages;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let _ = messages::parse_line(line, std::path::Path::new("/w"));
    }
});
