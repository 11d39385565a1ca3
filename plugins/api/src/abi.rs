//! The C ABI between a plugin library and the host process, and the glue that adapts a
//! [`Plugin`] implementation to it (used through [`export_plugin!`](crate::export_plugin)).
//!
//! The library exports one symbol, [`SYMBOL`] (`openfiles_plugin_v1`), an `extern "C"`
//! function with no arguments returning a pointer to a static [`PluginTableV1`].
//! Invariants:
//! - the first two fields (`abi_major: u32`, then `struct_size: usize` after `abi_minor`)
//!   never move, so a loader can read them from a table of any version and refuse it;
//! - new entry points are only ever appended, with `abi_minor` bumped; a loader accepts a
//!   table at least as large as the one it knows;
//! - every payload is UTF-8 JSON passed as pointer + length; the callee copies what it
//!   needs before returning; a [`Buffer`] handed back by the plugin is freed by the
//!   plugin's `free_buffer`, never by the host's allocator;
//! - `query` (minor 1) was appended: a loader reads it only from a table whose `struct_size`
//!   holds it ([`QUERY_MIN_SIZE`]); an older library has no question answered;
//! - every entry point catches panics and reports them as [`STATUS_PANIC`]; nothing
//!   unwinds across the boundary;
//! - a check's answer may carry, beside the [`crate::CheckResponse`] fields, the programs the
//!   plugin started since its last answer ([`RAN_KEY`]); a host that does not know the key
//!   ignores it.

use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::query::QueryRequest;
use crate::types::{CheckRequest, Init};
use crate::{Plugin, PluginError, ABI_MAJOR};

/// Name of the one exported symbol.
pub const SYMBOL: &str = "openfiles_plugin_v1";
/// Minor version of the table layout this crate writes.
pub const ABI_MINOR: u32 = 1;

/// The entry point succeeded; the buffer holds the JSON answer.
pub const STATUS_OK: i32 = 0;
/// The plugin reported an error; the buffer holds a UTF-8 message.
pub const STATUS_ERROR: i32 = 1;
/// The plugin panicked; the buffer holds the panic message.
pub const STATUS_PANIC: i32 = 2;
/// The check stopped because it was cancelled ([`PluginError::Cancelled`]); the buffer
/// holds the text `cancelled` (for a host that only knows [`STATUS_ERROR`]'s message).
pub const STATUS_CANCELLED: i32 = 3;

/// Bytes allocated by the plugin and handed to the host; give them back with `free_buffer`.
#[repr(C)]
#[derive(Debug)]
pub struct Buffer {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Buffer {
    /// An empty buffer (nothing to free).
    pub const fn empty() -> Buffer {
        Buffer {
            ptr: std::ptr::null_mut(),
            len: 0,
        }
    }

    fn from_vec(v: Vec<u8>) -> Buffer {
        let boxed = v.into_boxed_slice();
        let len = boxed.len();
        let ptr = Box::into_raw(boxed) as *mut u8;
        Buffer { ptr, len }
    }

    /// View the bytes.
    ///
    /// # Safety
    /// `ptr`/`len` must describe live memory (as handed out by the plugin and not yet freed).
    pub unsafe fn as_slice(&self) -> &[u8] {
        if self.ptr.is_null() || self.len == 0 {
            &[]
        } else {
            // SAFETY: non-null and non-empty; the caller promises the memory is live.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// `create(init_json, init_len, out_instance, out)`: start an instance. On [`STATUS_OK`]
/// `*out_instance` is set and `out` holds the [`crate::Capabilities`] JSON.
pub type CreateFn = unsafe extern "C" fn(*const u8, usize, *mut *mut c_void, *mut Buffer) -> i32;
/// `check(instance, request_json, request_len, out)`: `out` holds a [`crate::CheckResponse`]
/// JSON on [`STATUS_OK`], else a message. May be called from several threads at once.
pub type CheckFn = unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut Buffer) -> i32;
/// `cancel(instance, check_id)`: ask a running check to finish early. Any thread.
pub type CancelFn = unsafe extern "C" fn(*mut c_void, u64);
/// `destroy(instance)`: drop the instance; no call is in flight.
pub type DestroyFn = unsafe extern "C" fn(*mut c_void);
/// `free_buffer(buffer)`: release a buffer the plugin handed out.
pub type FreeBufferFn = unsafe extern "C" fn(Buffer);

/// `query(instance, request_json, request_len, out)`: `out` holds a
/// [`crate::query::QueryAnswer`] JSON on [`STATUS_OK`], else a message. Any thread.
pub type QueryFn = unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut Buffer) -> i32;

/// The size of a minor-0 table (without `query`): the least a loader accepts.
pub const V1_0_SIZE: usize = std::mem::offset_of!(PluginTableV1, query);
/// A table at least this large has `query`.
pub const QUERY_MIN_SIZE: usize = V1_0_SIZE + std::mem::size_of::<QueryFn>();

/// The table `openfiles_plugin_v1` returns. Layout is part of the ABI: see the module docs.
#[repr(C)]
pub struct PluginTableV1 {
    pub abi_major: u32,
    pub abi_minor: u32,
    /// `size_of::<PluginTableV1>()` as the plugin was built.
    pub struct_size: usize,
    /// Static NUL-terminated UTF-8 name (the `[plugin.<name>]` config key).
    pub name: *const c_char,
    /// Static NUL-terminated UTF-8 version.
    pub version: *const c_char,
    pub create: CreateFn,
    pub check: CheckFn,
    pub cancel: CancelFn,
    pub destroy: DestroyFn,
    pub free_buffer: FreeBufferFn,
    /// Appended in minor 1: answer a code-navigation question ([`crate::Plugin::query`]).
    pub query: QueryFn,
}

/// A table in a `static`: raw pointers are not `Sync`, but everything it points to is
/// immutable and lives as long as the library.
pub struct StaticTable(PluginTableV1);

// SAFETY: the table and the strings it points to are never mutated after construction.
unsafe impl Sync for StaticTable {}
// SAFETY: as above: nothing it points to is mutated or tied to a thread.
unsafe impl Send for StaticTable {}

impl StaticTable {
    /// Build the table for `P` (the name and version strings are leaked once, on purpose).
    pub fn new<P: Plugin>() -> StaticTable {
        StaticTable(PluginTableV1 {
            abi_major: ABI_MAJOR,
            abi_minor: ABI_MINOR,
            struct_size: std::mem::size_of::<PluginTableV1>(),
            name: leak_c_string(P::NAME),
            version: leak_c_string(P::VERSION),
            create: ffi_create::<P>,
            check: ffi_check::<P>,
            cancel: ffi_cancel::<P>,
            destroy: ffi_destroy::<P>,
            free_buffer: ffi_free_buffer,
            query: ffi_query::<P>,
        })
    }

    pub fn as_ptr(&self) -> *const PluginTableV1 {
        &self.0
    }
}

fn leak_c_string(s: &str) -> *const c_char {
    let c = CString::new(s.replace('\0', "")).unwrap_or_default();
    c.into_raw()
}

/// Export `$ty` (which implements [`Plugin`]) as this library's plugin. Use once per cdylib.
#[macro_export]
macro_rules! export_plugin {
    ($ty:ty) => {
        /// The plugin entry point looked up by the openfiles plugin host.
        #[no_mangle]
        pub extern "C" fn openfiles_plugin_v1() -> *const $crate::abi::PluginTableV1 {
            static TABLE: ::std::sync::OnceLock<$crate::abi::StaticTable> =
                ::std::sync::OnceLock::new();
            TABLE
                .get_or_init($crate::abi::StaticTable::new::<$ty>)
                .as_ptr()
        }
    };
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

/// Run `f`, write its outcome to `out`, return the status code; never unwinds.
/// This is the edge where a [`PluginError`] becomes text (or, cancelled, a status of its own).
fn guarded(out: *mut Buffer, f: impl FnOnce() -> Result<Vec<u8>, PluginError>) -> i32 {
    let (status, bytes) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(bytes)) => (STATUS_OK, bytes),
        Ok(Err(e @ PluginError::Cancelled)) => (STATUS_CANCELLED, e.to_string().into_bytes()),
        Ok(Err(e)) => (STATUS_ERROR, e.to_string().into_bytes()),
        Err(payload) => (STATUS_PANIC, panic_message(&*payload).into_bytes()),
    };
    if !out.is_null() {
        // SAFETY: the host passes a valid, writable Buffer slot.
        unsafe { out.write(Buffer::from_vec(bytes)) };
    }
    status
}

/// # Safety
/// `ptr`/`len` must describe readable memory for the duration of the call.
unsafe fn input<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: non-null and non-empty; the caller promises the memory is readable.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

unsafe extern "C" fn ffi_create<P: Plugin>(
    init: *const u8,
    len: usize,
    out_instance: *mut *mut c_void,
    out: *mut Buffer,
) -> i32 {
    // SAFETY: the host passes its init buffer, readable for the duration of the call.
    let bytes = unsafe { input(init, len) };
    guarded(out, || {
        if out_instance.is_null() {
            return Err(PluginError::Request("create: null instance slot".into()));
        }
        let init: Init = serde_json::from_slice(bytes)
            .map_err(|e| PluginError::Request(format!("create: bad init JSON: {e}")))?;
        let (instance, caps) = P::create(init)?;
        let caps = serde_json::to_vec(&caps).map_err(|e| PluginError::Request(e.to_string()))?;
        // SAFETY: checked non-null above; the host owns the slot.
        unsafe { out_instance.write(Box::into_raw(Box::new(instance)) as *mut c_void) };
        Ok(caps)
    })
}

unsafe extern "C" fn ffi_check<P: Plugin>(
    instance: *mut c_void,
    req: *const u8,
    len: usize,
    out: *mut Buffer,
) -> i32 {
    // SAFETY: the host passes its request buffer, readable for the duration of the call.
    let bytes = unsafe { input(req, len) };
    guarded(out, || {
        // SAFETY: `instance` is what `ffi_create::<P>` made (the host's contract).
        let (plugin, req): (&P, CheckRequest) = unsafe { decode(instance, bytes, "check") }?;
        let resp = plugin.check(req)?;
        answer_json(&resp).map_err(|e| PluginError::Request(e.to_string()))
    })
}

unsafe extern "C" fn ffi_query<P: Plugin>(
    instance: *mut c_void,
    req: *const u8,
    len: usize,
    out: *mut Buffer,
) -> i32 {
    // SAFETY: the host passes its request buffer, readable for the duration of the call.
    let bytes = unsafe { input(req, len) };
    guarded(out, || {
        // SAFETY: `instance` is what `ffi_create::<P>` made (the host's contract).
        let (plugin, req): (&P, QueryRequest) = unsafe { decode(instance, bytes, "query") }?;
        let answer = plugin.query(req)?;
        serde_json::to_vec(&answer).map_err(|e| PluginError::Request(e.to_string()))
    })
}

/// The instance a call is for and its request, decoded (`what`: the call, for the errors).
///
/// # Safety
/// `instance` is null or came from `ffi_create::<P>` and is not destroyed while calls run.
unsafe fn decode<'a, P: Plugin, R: serde::de::DeserializeOwned>(
    instance: *mut c_void,
    bytes: &[u8],
    what: &str,
) -> Result<(&'a P, R), PluginError> {
    if instance.is_null() {
        return Err(PluginError::Request(format!("{what}: null instance")));
    }
    // SAFETY: non-null, and made by `ffi_create::<P>` (the caller's contract).
    let plugin = unsafe { &*(instance as *const P) };
    let req = serde_json::from_slice(bytes)
        .map_err(|e| PluginError::Request(format!("{what}: bad request JSON: {e}")))?;
    Ok((plugin, req))
}

/// A check's answer as JSON, with the programs the plugin started since its last answer
/// under `ran` (the gate's record, [`crate::gate::spawn::unreported`]): this library has its
/// own copy of the gate, which the host cannot read, so the answer carries them to the
/// service's `status`. A host that does not know the key ignores it.
fn answer_json(resp: &crate::types::CheckResponse) -> serde_json::Result<Vec<u8>> {
    let ran = crate::gate::spawn::unreported();
    if ran.is_empty() {
        return serde_json::to_vec(resp);
    }
    let mut value = serde_json::to_value(resp)?;
    if let serde_json::Value::Object(map) = &mut value {
        map.insert(RAN_KEY.into(), serde_json::to_value(ran)?);
    }
    serde_json::to_vec(&value)
}

/// The key of a check answer's JSON that carries the programs the plugin started
/// ([`crate::gate::spawn::Ran`] objects).
pub const RAN_KEY: &str = "ran";

unsafe extern "C" fn ffi_cancel<P: Plugin>(instance: *mut c_void, id: u64) {
    if instance.is_null() {
        return;
    }
    // SAFETY: as in `ffi_check`.
    let plugin = unsafe { &*(instance as *const P) };
    let _ = catch_unwind(AssertUnwindSafe(|| plugin.cancel(id)));
}

unsafe extern "C" fn ffi_destroy<P: Plugin>(instance: *mut c_void) {
    if instance.is_null() {
        return;
    }
    // SAFETY: `instance` came from `Box::into_raw` in `ffi_create::<P>`; destroyed once.
    let boxed = unsafe { Box::from_raw(instance as *mut P) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(boxed)));
}

unsafe extern "C" fn ffi_free_buffer(buf: Buffer) {
    if buf.ptr.is_null() {
        return;
    }
    let slice = std::ptr::slice_from_raw_parts_mut(buf.ptr, buf.len);
    // SAFETY: the buffer was made by `Buffer::from_vec` from a boxed slice of `len` bytes.
    drop(unsafe { Box::from_raw(slice) });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: impl FnOnce() -> Result<Vec<u8>, PluginError>) -> (i32, Vec<u8>) {
        let mut out = Buffer::empty();
        let status = guarded(&mut out, f);
        // SAFETY: `guarded` just wrote a live buffer.
        let bytes = unsafe { out.as_slice() }.to_vec();
        // SAFETY: made by `Buffer::from_vec`, freed once.
        unsafe { ffi_free_buffer(out) };
        (status, bytes)
    }

    #[test]
    fn cancellation_is_a_status_of_its_own_and_other_errors_are_text() {
        assert_eq!(
            run(|| Err(PluginError::Cancelled)),
            (STATUS_CANCELLED, b"cancelled".to_vec())
        );
        assert_eq!(
            run(|| Err(PluginError::Tool("gopls not found".into()))),
            (STATUS_ERROR, b"gopls not found".to_vec())
        );
        assert_eq!(run(|| Ok(b"{}".to_vec())), (STATUS_OK, b"{}".to_vec()));
    }
}
