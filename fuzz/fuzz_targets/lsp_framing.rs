//! Fuzz target: LSP base-protocol framing (`transport::read_frame`) over an arbitrary byte
//! stream, reading frames until the end or an error.
#![no_main]
use libfuzzer_sys::fuzz_target;

// The lsp plugin's transport, compiled in from its source (no dependency on the plugin crate).
#[allow(dead_code)]
#[path = "../../plugins/lsp/src/transport.rs"]
mod transport;
use transport::read_frame;

fuzz_target!(|data: &[u8]| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut r = data;
        let mut total = 0usize;
        while let Ok(Some(body)) = read_frame(&mut r).await {
            total += body.len();
            // A frame's body is bytes of the input: it can never be longer.
            assert!(total <= data.len());
        }
    });
});
