//! Fuzz target: the `tsc --pretty false` output parser and the UTF-16 column mapping (the plugin API's `columns`).
#![no_main]
use libfuzzer_sys::fuzz_target;

// The tsc plugin's parser, compiled in from its source (no dependency on the plugin crate).
#[allow(dead_code)]
#[path = "../../plugins/tsc/src/parse.rs"]
mod parse;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse::parse(&text);
    let col = data.first().copied().unwrap_or(0) as u32;
    let _ = openfiles_plugin_api::columns::utf16_to_char_column(&text, col);
});
