//! The JSON messages that cross the plugin boundary.
//!
//! These are the only shapes a plugin and the host exchange: the host serializes
//! them to UTF-8 JSON, passes pointer + length through the C ABI (see `abi`), and
//! the plugin deserializes them on its side. Neither side ever sees the other's
//! Rust types, so a plugin built with another compiler version still works.
//!
//! Compatibility rule: fields may be added (with `#[serde(default)]`), never
//! renamed or removed, without bumping [`crate::ABI_MAJOR`].

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Sent once to `create`: everything a plugin instance needs to start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Init {
    /// The plugin's own table from the user's config (`[plugins.<name>]`), or `null`.
    #[serde(default)]
    pub config: serde_json::Value,
    /// A directory the plugin may use for caches (tsc build info, cargo target dir…).
    /// Created by the host, private to this plugin.
    pub state_dir: PathBuf,
    /// Host version, for logging.
    #[serde(default)]
    pub host_version: String,
}

/// The plugin's answer to `create`: what it is and which files it handles.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// File extensions without the dot (`"rs"`, `"ts"`), matched case-sensitively.
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Exact file names handled whatever their extension (`"Cargo.toml"`).
    #[serde(default)]
    pub file_names: Vec<String>,
    /// Files whose presence in an ancestor marks a project root (`"Cargo.toml"`, `"tsconfig.json"`).
    #[serde(default)]
    pub project_markers: Vec<String>,
    /// True when one run checks a whole project (cargo, tsc): the scheduler then keeps at most
    /// one run per project in flight and queues one follow-up.
    #[serde(default)]
    pub project_wide: bool,
    /// Things the user should know about this plugin's setup (a tool it fell back from, a
    /// setting it could not honour), shown by `openfiles plugins` and `openfiles doctor`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One check: a batch of files of one workspace.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckRequest {
    /// Unique per host process; `cancel` names it.
    pub id: u64,
    /// The workspace root (absolute, canonical).
    pub workspace: PathBuf,
    /// The files to check (absolute, canonical, inside `workspace`, never sensitive files).
    pub files: Vec<PathBuf>,
    /// Other session files of the same workspace that this plugin handles. A project-wide
    /// source reports results for these too (a type error can move to another file).
    #[serde(default)]
    pub also_report: Vec<PathBuf>,
    /// Milliseconds the host will wait for this check before giving up on it.
    #[serde(default)]
    pub timeout_ms: u64,
}

/// The answer to one check.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResponse {
    /// Results per file. A file of the request missing here counts as checked with no items.
    /// Files not in the request nor in `also_report` are ignored by the host.
    #[serde(default)]
    pub files: Vec<FileResult>,
}

/// Results for one file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileResult {
    pub path: PathBuf,
    pub items: Vec<Item>,
}

/// One problem, in the shape of a `diagnostics.json` item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Item {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in Unicode scalar values (characters) of the line.
    pub column: u32,
    pub severity: Severity,
    /// The tool that produced it (`"rustc"`, `"ts"`, `"Ruff"`, `"openfiles"`).
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub message: String,
}

/// Severity levels as `diagnostics.json` spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
    Hint,
}

impl Item {
    /// An item that explains why a file has no real results (checker failed, timed out…).
    pub fn note(severity: Severity, source: impl Into<String>, message: impl Into<String>) -> Self {
        Item {
            line: 1,
            column: 1,
            severity,
            source: source.into(),
            code: None,
            message: message.into(),
        }
    }
}
