//! Fixture `minor0`: a plugin built before the ABI's `query` entry (minor 0): its table ends
//! at `free_buffer` and its `struct_size` says so. The host must load it, run its checks and
//! never call past the table's end: the `query` slot the newer struct type has is filled with
//! a function that aborts the process, so a host that called it would die.

use std::ffi::c_void;

use openfiles_plugin_api::abi::{Buffer, PluginTableV1, V1_0_SIZE};

fn give(out: *mut Buffer, bytes: &[u8]) {
    let boxed: Box<[u8]> = bytes.to_vec().into_boxed_slice();
    let len = boxed.len();
    let ptr = Box::into_raw(boxed) as *mut u8;
    if !out.is_null() {
        // SAFETY: the host passes a writable buffer slot.
        unsafe { out.write(Buffer { ptr, len }) };
    }
}

unsafe extern "C" fn create(
    _: *const u8,
    _: usize,
    instance: *mut *mut c_void,
    out: *mut Buffer,
) -> i32 {
    if !instance.is_null() {
        // SAFETY: the host passes a writable instance slot; any non-null value will do.
        unsafe { instance.write(std::ptr::NonNull::<u8>::dangling().as_ptr() as *mut c_void) };
    }
    give(out, br#"{"extensions":["m0"]}"#);
    0
}

unsafe extern "C" fn check(_: *mut c_void, _: *const u8, _: usize, out: *mut Buffer) -> i32 {
    give(out, br#"{"files":[]}"#);
    0
}

unsafe extern "C" fn cancel(_: *mut c_void, _: u64) {}
unsafe extern "C" fn destroy(_: *mut c_void) {}

unsafe extern "C" fn free_buffer(buf: Buffer) {
    if !buf.ptr.is_null() {
        let slice = std::ptr::slice_from_raw_parts_mut(buf.ptr, buf.len);
        // SAFETY: made by `give` from a boxed slice of `len` bytes, freed once.
        drop(unsafe { Box::from_raw(slice) });
    }
}

/// Past the end of a minor-0 table: never to be called.
unsafe extern "C" fn beyond(_: *mut c_void, _: *const u8, _: usize, _: *mut Buffer) -> i32 {
    std::process::abort()
}

struct Table(PluginTableV1);
// SAFETY: immutable static data.
unsafe impl Sync for Table {}

static TABLE: Table = Table(PluginTableV1 {
    abi_major: 1,
    abi_minor: 0,
    struct_size: V1_0_SIZE,
    name: c"minor0".as_ptr(),
    version: c"0.0.1".as_ptr(),
    create,
    check,
    cancel,
    destroy,
    free_buffer,
    query: beyond,
});

/// The entry point, with a minor-0 table.
#[no_mangle]
pub extern "C" fn openfiles_plugin_v1() -> *const PluginTableV1 {
    &TABLE.0
}
