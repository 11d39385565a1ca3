//! Plugins: finding plugin libraries, running each in its own `openfiles plugin-host` child
//! process, and supervising those children; plus the loader that runs inside the child.
//!
//! - [`discover`]: which library files to try (config `plugins.paths`, `OPENFILES_PLUGIN_PATH`,
//!   `../lib/openfiles/plugins` next to the executable);
//! - [`protocol`]: the NDJSON spoken over the child's stdio;
//! - [`child`]: the child side (`openfiles plugin-host <library>`), checks and questions;
//! - [`supervisor`]: one actor per loaded plugin: owns the child, its pending checks and its
//!   restarts with backoff;
//! - [`manager`]: [`PluginManager`], what the scheduler calls (`plugins_for`, `check`,
//!   `status`);
//! - a plugin's state and its status row are wire types (`openfiles_wire::control::PluginStatus`);
//! - [`checker`]: the manager as the pipeline's `diagnostics::Checker`;
//! - [`list`]: `openfiles plugins`;
//! - [`nav`]: code-navigation questions (`query`), the child's side and the manager's.
//!
//! Invariant: nothing a plugin does (panic, abort, hang, garbage on stdout) can take down the
//! daemon or another plugin; a check in flight on a host that dies ends with a
//! [`PluginError`] the caller turns into an explanatory item ([`PluginError::item`]).

pub mod checker;
pub mod child;
pub mod discover;
pub mod list;
pub mod manager;
pub mod nav;
pub mod protocol;
pub mod supervisor;

pub use manager::{ManagerOptions, PluginManager};
pub use openfiles_plugin_api::{Capabilities, CheckRequest, CheckResponse};
pub use openfiles_wire::control::{PluginOrigin, PluginState, PluginStatus};

use openfiles_plugin_api::{Item, Severity};

/// A loaded plugin, as the manager numbers them (stable for the manager's lifetime).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PluginId(pub usize);

/// Why a check produced no answer from the plugin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    #[error("no such plugin ({0:?})")]
    Unknown(PluginId),
    #[error(
        "plugin {plugin}: host process died during the check ({reason}); it is being restarted"
    )]
    HostDied { plugin: String, reason: String },
    #[error("plugin {plugin}: no answer within {after_ms} ms (check cancelled)")]
    Timeout { plugin: String, after_ms: u64 },
    #[error("plugin {plugin} failed: {message}")]
    Failed { plugin: String, message: String },
    #[error("plugin {plugin} is out of service: {reason}")]
    Broken { plugin: String, reason: String },
    #[error("plugin {plugin}: the plugin host is shutting down")]
    Stopped { plugin: String },
}

impl PluginError {
    /// The explanatory item to put on each file of the failed check, so an empty list is
    /// never mistaken for a clean file.
    pub fn item(&self) -> Item {
        Item::note(Severity::Warning, "openfiles", self.to_string())
    }
}
