//! The host side of the ABI (cargo feature `host`): load a plugin library with
//! `libloading`, validate its table, and call it through safe wrappers.
//!
//! Trust boundary: loading a library runs its code, so only libraries the user installed
//! or configured are loaded, and the openfiles host does it in a child process of its own
//! (`openfiles plugin-host`) so a crash takes down only that child. Everything after
//! loading is checked: the ABI major, the table size, the name/version strings, and
//! each answer's status code.

use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libloading::Library;

use crate::abi::{
    Buffer, PluginTableV1, QUERY_MIN_SIZE, STATUS_CANCELLED, STATUS_ERROR, STATUS_OK, STATUS_PANIC,
    SYMBOL, V1_0_SIZE,
};
use crate::ABI_MAJOR;

/// Why a library was refused. The variants are the distinct reasons `openfiles plugins` shows.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("load error: {path}: {message}")]
    Load { path: PathBuf, message: String },
    #[error("missing symbol: {path} does not export `{symbol}` (not an openfiles plugin?)")]
    MissingSymbol { path: PathBuf, symbol: &'static str },
    #[error("ABI mismatch: {path} has plugin ABI {found}, this host speaks {expected}")]
    AbiMismatch {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("ABI mismatch: {path}: plugin table is {found} bytes, at least {expected} expected")]
    TableSize {
        path: PathBuf,
        found: usize,
        expected: usize,
    },
    #[error("bad plugin table: {path}: {message}")]
    BadTable { path: PathBuf, message: String },
}

impl LoadError {
    /// A short stable tag: `load-error`, `missing-symbol`, `abi-mismatch`, `bad-table`.
    pub fn kind(&self) -> &'static str {
        match self {
            LoadError::Load { .. } => "load-error",
            LoadError::MissingSymbol { .. } => "missing-symbol",
            LoadError::AbiMismatch { .. } | LoadError::TableSize { .. } => "abi-mismatch",
            LoadError::BadTable { .. } => "bad-table",
        }
    }
}

/// A failed call into a loaded plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("{0}")]
    Failed(String),
    /// The plugin stopped the check because it was cancelled.
    #[error("cancelled")]
    Cancelled,
    #[error("plugin panicked: {0}")]
    Panicked(String),
    #[error("plugin returned unknown status {0}")]
    BadStatus(i32),
}

/// A loaded, validated plugin library.
pub struct PluginLibrary {
    table: *const PluginTableV1,
    /// The table has `query` (minor 1 and later).
    answers_queries: bool,
    name: String,
    version: String,
    // Declared last: dropped after every use of `table`.
    _lib: Library,
}

// SAFETY: the table is immutable static data of the library, which lives as long as `self`.
unsafe impl Send for PluginLibrary {}
// SAFETY: as above: shared references only read immutable static data.
unsafe impl Sync for PluginLibrary {}

impl std::fmt::Debug for PluginLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginLibrary")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish()
    }
}

/// The table `lib`'s entry symbol returns (not null); valid while `lib` is loaded.
fn entry_table(lib: &Library, path: &Path) -> Result<*const PluginTableV1, LoadError> {
    // SAFETY: the symbol's type is fixed by the ABI (no args, returns the table).
    let sym = unsafe { lib.get::<extern "C" fn() -> *const PluginTableV1>(SYMBOL.as_bytes()) };
    let entry: extern "C" fn() -> *const PluginTableV1 = match sym {
        Ok(sym) => *sym,
        Err(_) => {
            return Err(LoadError::MissingSymbol {
                path: path.to_owned(),
                symbol: SYMBOL,
            })
        }
    };
    let table = entry();
    if table.is_null() {
        return Err(LoadError::BadTable {
            path: path.to_owned(),
            message: format!("{SYMBOL} returned a null table"),
        });
    }
    Ok(table)
}

/// The table's ABI major is this host's and it is at least as large as a minor-0 table (no
/// `query`, whose fields are the first ones of ours); whether it holds `query`.
fn check_layout(table: *const PluginTableV1, path: &Path) -> Result<bool, LoadError> {
    // SAFETY: the first fields never move across ABI versions; read only those first.
    let (major, size) = unsafe {
        (
            std::ptr::addr_of!((*table).abi_major).read(),
            std::ptr::addr_of!((*table).struct_size).read(),
        )
    };
    if major != ABI_MAJOR {
        return Err(LoadError::AbiMismatch {
            path: path.to_owned(),
            found: major,
            expected: ABI_MAJOR,
        });
    }
    let expected = V1_0_SIZE;
    if size < expected {
        return Err(LoadError::TableSize {
            path: path.to_owned(),
            found: size,
            expected,
        });
    }
    Ok(size >= QUERY_MIN_SIZE)
}

/// One of the table's strings (`what`: its name in errors): present and UTF-8.
fn table_text(p: *const std::ffi::c_char, what: &str, path: &Path) -> Result<String, LoadError> {
    let bad = |message: String| LoadError::BadTable {
        path: path.to_owned(),
        message,
    };
    if p.is_null() {
        return Err(bad(format!("{what} is null")));
    }
    // SAFETY: the ABI promises a static NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| bad(format!("{what} is not UTF-8")))
}

impl PluginLibrary {
    /// Load `path` and validate its table. Loading runs the library's initialisers: call
    /// this only for libraries the user chose to trust (and preferably in a child process).
    pub fn load(path: &Path) -> Result<Arc<PluginLibrary>, LoadError> {
        // SAFETY: loading a library is inherently trusting it; see the module docs.
        let lib = unsafe { Library::new(path) }.map_err(|e| LoadError::Load {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let table = entry_table(&lib, path)?;
        let answers_queries = check_layout(table, path)?;
        // SAFETY: major and size match, so the table has this layout (up to `query`, which is
        // read only when `answers_queries`).
        let t = unsafe { &*table };
        let name = table_text(t.name, "name", path)?;
        let version = table_text(t.version, "version", path)?;
        if name.is_empty() {
            return Err(LoadError::BadTable {
                path: path.to_owned(),
                message: "empty plugin name".into(),
            });
        }
        Ok(Arc::new(PluginLibrary {
            table,
            answers_queries,
            name,
            version,
            _lib: lib,
        }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    fn table(&self) -> &PluginTableV1 {
        // SAFETY: validated in `load`; lives as long as `_lib`.
        unsafe { &*self.table }
    }

    /// Take a buffer's bytes and give the buffer back to the plugin.
    fn take(&self, buf: Buffer) -> Vec<u8> {
        // SAFETY: the plugin just handed this buffer out.
        let bytes = unsafe { buf.as_slice() }.to_vec();
        // SAFETY: freed once, by the plugin's own allocator.
        unsafe { (self.table().free_buffer)(buf) };
        bytes
    }

    fn outcome(&self, status: i32, buf: Buffer) -> Result<Vec<u8>, CallError> {
        let bytes = self.take(buf);
        match status {
            STATUS_OK => Ok(bytes),
            STATUS_ERROR => Err(CallError::Failed(String::from_utf8_lossy(&bytes).into())),
            STATUS_PANIC => Err(CallError::Panicked(String::from_utf8_lossy(&bytes).into())),
            STATUS_CANCELLED => Err(CallError::Cancelled),
            other => Err(CallError::BadStatus(other)),
        }
    }

    /// Call `create` with an [`crate::Init`] JSON; returns the instance and the
    /// [`crate::Capabilities`] JSON.
    pub fn create(self: &Arc<Self>, init_json: &[u8]) -> Result<(Instance, Vec<u8>), CallError> {
        let mut instance: *mut c_void = std::ptr::null_mut();
        let mut out = Buffer::empty();
        // SAFETY: valid input slice, valid out slots.
        let status = unsafe {
            (self.table().create)(init_json.as_ptr(), init_json.len(), &mut instance, &mut out)
        };
        let caps = self.outcome(status, out)?;
        if instance.is_null() {
            return Err(CallError::Failed("create returned no instance".into()));
        }
        Ok((
            Instance {
                lib: Arc::clone(self),
                ptr: instance,
            },
            caps,
        ))
    }
}

/// A live plugin instance; destroyed on drop.
pub struct Instance {
    lib: Arc<PluginLibrary>,
    ptr: *mut c_void,
}

// SAFETY: the `Plugin` trait requires `Send + Sync`, which the macro-built entry points rely on.
unsafe impl Send for Instance {}
// SAFETY: as above: the plugin's instance is `Sync` by the trait's bound.
unsafe impl Sync for Instance {}

impl Instance {
    /// Run a check ([`crate::CheckRequest`] JSON in, [`crate::CheckResponse`] JSON out).
    pub fn check(&self, request_json: &[u8]) -> Result<Vec<u8>, CallError> {
        let mut out = Buffer::empty();
        // SAFETY: live instance, valid input and out slot.
        let status = unsafe {
            (self.lib.table().check)(
                self.ptr,
                request_json.as_ptr(),
                request_json.len(),
                &mut out,
            )
        };
        self.lib.outcome(status, out)
    }

    /// Ask a code-navigation question ([`crate::query::QueryRequest`] JSON in,
    /// [`crate::query::QueryAnswer`] JSON out); `None` when the library predates questions.
    pub fn query(&self, request_json: &[u8]) -> Option<Result<Vec<u8>, CallError>> {
        if !self.lib.answers_queries {
            return None;
        }
        let mut out = Buffer::empty();
        // SAFETY: live instance, valid input and out slot; the table holds `query` (checked).
        let status = unsafe {
            (self.lib.table().query)(
                self.ptr,
                request_json.as_ptr(),
                request_json.len(),
                &mut out,
            )
        };
        Some(self.lib.outcome(status, out))
    }

    /// Ask check `id` to finish early.
    pub fn cancel(&self, id: u64) {
        // SAFETY: live instance.
        unsafe { (self.lib.table().cancel)(self.ptr, id) }
    }

    pub fn library(&self) -> &Arc<PluginLibrary> {
        &self.lib
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: created by this library's `create`, destroyed once, no call in flight
        // (`&mut self`).
        unsafe { (self.lib.table().destroy)(self.ptr) }
    }
}
