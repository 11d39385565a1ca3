//! `openfiles-plugin-api`: what a diagnostic-source plugin implements.
//!
//! A plugin is a `cdylib` that implements [`Plugin`] and calls `export_plugin!` once.
//! The macro exports the single C symbol the host looks for; the host (`openfiles
//! plugin-host`, one child process per plugin) loads the library with `libloading`,
//! checks the ABI version and table size, and talks to the plugin in JSON only
//! (the types in [`types`]). See `README.md` in this crate for the full ABI.

pub mod abi;
pub mod columns;
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
pub mod query;
pub mod test_runners;
#[cfg(unix)]
pub mod tools;
pub mod tracked;
pub mod types;
#[cfg(unix)]
pub mod uri;

pub use types::{
    content_hash, Capabilities, CheckRequest, CheckResponse, FileEdits, FileResult, Fix, Init,
    Item, Severity, TextEdit, UNTRUSTED_CODE,
};

/// Major version of the C ABI. The loader refuses a table whose major differs.
pub const ABI_MAJOR: u32 = 1;

/// Why [`Plugin::create`] or [`Plugin::check`] failed. The C-ABI edge
/// ([`abi`]) turns it into the host's status and text: [`PluginError::Cancelled`] is a status
/// of its own ([`abi::STATUS_CANCELLED`]), never a message compared by its wording.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The check was cancelled (deadline passed, newer edit, shutdown).
    #[error("cancelled")]
    Cancelled,
    /// The plugin's `[plugin.<name>]` config is unusable.
    #[error("{0}")]
    Config(String),
    /// A tool the plugin runs is missing, could not be started, or failed as a whole.
    #[error("{0}")]
    Tool(String),
    /// Reading or writing a file, or starting a process, failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A request the plugin cannot serve (bad JSON, an empty instance slot).
    #[error("{0}")]
    Request(String),
}

impl PluginError {
    /// An [`PluginError::Io`] with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> PluginError {
        PluginError::Io {
            context: context.into(),
            source,
        }
    }

    pub fn is_cancelled(&self) -> bool {
        matches!(self, PluginError::Cancelled)
    }
}

/// A diagnostic source. One instance serves every workspace of the host process;
/// `check` may be called from several threads at once, `cancel` from any thread.
pub trait Plugin: Send + Sync + Sized + 'static {
    /// Short name, used in config (`[plugin.<name>]`), logs and `openfiles plugins`.
    const NAME: &'static str;
    /// The plugin's own version.
    const VERSION: &'static str;

    /// Start an instance from its config; say which files it handles.
    fn create(init: Init) -> Result<(Self, Capabilities), PluginError>;

    /// Check a batch of files. Blocking is fine: the host calls this on its own thread.
    /// An `Err` becomes an explanatory error item on every requested file;
    /// [`PluginError::Cancelled`] tells the host the check stopped because it was cancelled.
    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError>;

    /// Ask a running check to finish early (its deadline passed, or a newer edit came).
    fn cancel(&self, _check_id: u64) {}

    /// Answer a code-navigation question about one file ([`query`]); by default a plugin
    /// answers none ([`query::QueryAnswer::unsupported`]). May be called from several threads.
    fn query(&self, _request: query::QueryRequest) -> Result<query::QueryAnswer, PluginError> {
        Ok(query::QueryAnswer::unsupported())
    }
}

/// The README's examples compile (run as doctests).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
