//! `openfiles-plugin-api`: what a diagnostic-source plugin implements.
//!
//! A plugin is a `cdylib` that implements [`Plugin`] and calls `export_plugin!` once.
//! The macro exports the single C symbol the host looks for; the host (`openfiles
//! plugin-host`, one child process per plugin) loads the library with `libloading`,
//! checks the ABI version and table size, and talks to the plugin in JSON only
//! (the types in [`types`]). See `README.md` in this crate for the full ABI.

pub mod abi;
#[cfg(unix)]
pub mod compile_db;
/// The one way to start a process (`openfiles-gate`'s): every tool a plugin runs is a
/// [`gate::Program`] of the check's workspace and trust.
pub use openfiles_gate as gate;
/// Opening files a repository controls (no symlinks followed, regular files only, capped):
/// the one way the service and every plugin read workspace files (`openfiles-gate`'s).
pub use openfiles_gate::confine;
#[cfg(feature = "host")]
pub mod host;
pub mod markers;
#[cfg(unix)]
pub mod private;
#[cfg(unix)]
pub mod tools;
pub mod types;

pub use types::{
    content_hash, Capabilities, CheckRequest, CheckResponse, FileEdits, FileResult, Fix, Init,
    Item, Severity, TextEdit, UNTRUSTED_CODE,
};

/// Major version of the C ABI. The loader refuses a table whose major differs.
pub const ABI_MAJOR: u32 = 1;

/// A diagnostic source. One instance serves every workspace of the host process;
/// `check` may be called from several threads at once, `cancel` from any thread.
pub trait Plugin: Send + Sync + Sized + 'static {
    /// Short name, used in config (`[plugin.<name>]`), logs and `openfiles plugins`.
    const NAME: &'static str;
    /// The plugin's own version.
    const VERSION: &'static str;

    /// Start an instance from its config; say which files it handles.
    fn create(init: Init) -> Result<(Self, Capabilities), String>;

    /// Check a batch of files. Blocking is fine: the host calls this on its own thread.
    /// An `Err` becomes an explanatory error item on every requested file.
    fn check(&self, request: CheckRequest) -> Result<CheckResponse, String>;

    /// Ask a running check to finish early (its deadline passed, or a newer edit came).
    fn cancel(&self, _check_id: u64) {}
}

/// The README's examples compile (run as doctests).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
