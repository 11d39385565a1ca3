//! Fixture: exports `openfiles_plugin_v1`, but its table claims ABI major 999. The loader
//! must refuse it after reading only the version fields (the rest is never touched).

use std::ffi::c_void;

use openfiles_plugin_api::abi::{Buffer, PluginTableV1};

unsafe extern "C" fn create(_: *const u8, _: usize, _: *mut *mut c_void, _: *mut Buffer) -> i32 {
    1
}
unsafe extern "C" fn check(_: *mut c_void, _: *const u8, _: usize, _: *mut Buffer) -> i32 {
    1
}
unsafe extern "C" fn cancel(_: *mut c_void, _: u64) {}
unsafe extern "C" fn destroy(_: *mut c_void) {}
unsafe extern "C" fn free_buffer(_: Buffer) {}

struct Table(PluginTableV1);
// SAFETY: immutable static data.
unsafe impl Sync for Table {}

static TABLE: Table = Table(PluginTableV1 {
    abi_major: 999,
    abi_minor: 0,
    struct_size: std::mem::size_of::<PluginTableV1>(),
    name: c"future".as_ptr(),
    version: c"9.9.9".as_ptr(),
    create,
    check,
    cancel,
    destroy,
    free_buffer,
    query: check,
});

/// The entry point, with a table from a future ABI.
#[no_mangle]
pub extern "C" fn openfiles_plugin_v1() -> *const PluginTableV1 {
    &TABLE.0
}
