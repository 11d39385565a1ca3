//! Where each plugin stands: the [`State`] machine and the [`PluginStatus`] row that
//! `openfiles plugins`, `status` and `doctor` show. Written by the supervisors, read through
//! the manager; a leaf of `plugin_host`, so neither depends on the other for it.

use std::path::PathBuf;

use openfiles_plugin_api::Capabilities;
use serde::Serialize;

use super::discover::PluginOrigin;

/// Where a plugin stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum State {
    /// A search-path entry that does not exist.
    Missing,
    /// The library was refused (`kind` says why: `abi-mismatch`, `missing-symbol`,
    /// `load-error`, `bad-table`, `create-failed`, `host-failed`, `duplicate`).
    Refused,
    /// Named in `plugins.disabled`.
    Disabled,
    Loaded,
    /// Its host died; a new one is being started.
    Restarting,
    /// It could not be restarted; checks fail with the reason.
    Broken,
    Stopped,
}

/// One row of `openfiles plugins` / the service status.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    pub path: PathBuf,
    pub origin: PluginOrigin,
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub restarts: u32,
    /// Checks sent to this plugin since the service started.
    #[serde(default)]
    pub checks: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
}

impl PluginStatus {
    pub(super) fn new(path: PathBuf, origin: PluginOrigin, state: State) -> Self {
        PluginStatus {
            path,
            origin,
            state,
            name: None,
            version: None,
            kind: None,
            reason: None,
            restarts: 0,
            checks: 0,
            pid: None,
            capabilities: None,
        }
    }
}
