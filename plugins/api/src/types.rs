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
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Sent once to `create`: everything a plugin instance needs to start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Init {
    /// The plugin's own table from the user's config (`[plugin.<name>]`), or `null`.
    #[serde(default)]
    pub config: serde_json::Value,
    /// A directory the plugin may use for caches (tsc build info, cargo target dir…).
    /// Created by the host, private to this plugin.
    pub state_dir: PathBuf,
    /// Host version, for logging.
    #[serde(default)]
    pub host_version: String,
}

impl Init {
    /// The plugin's settings from its table (`[plugin.<name>]`), their defaults when it has
    /// none; a table that does not fit is a [`crate::PluginError::Config`] naming it.
    pub fn settings<T: serde::de::DeserializeOwned + Default>(
        &self,
        name: &str,
    ) -> Result<T, crate::PluginError> {
        if self.config.is_null() {
            return Ok(T::default());
        }
        serde_json::from_value(self.config.clone())
            .map_err(|e| crate::PluginError::Config(format!("[plugin.{name}]: {e}")))
    }
}

/// The plugin's answer to `create`: what it is and which files it handles.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// File extensions without the dot (`"rs"`, `"ts"`), matched case-sensitively.
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Exact file names handled whatever their extension (`"Cargo.toml"`).
    #[serde(default)]
    pub file_names: Vec<String>,
    /// Files whose presence in an ancestor marks a project root (`"Cargo.toml"`, `"tsconfig.json"`),
    /// or a file holding a TOML table (`"pyproject.toml[tool.pyright]"`): see [`crate::markers`].
    #[serde(default)]
    pub project_markers: Vec<String>,
    /// True when one run checks a whole project (cargo, tsc): the scheduler then keeps at most
    /// one run per project in flight and queues one follow-up.
    #[serde(default)]
    pub project_wide: bool,
    /// True when the plugin handles a file only inside a project: one of `project_markers` in
    /// a folder at or above it, inside the workspace (a C/C++ compile database). The service
    /// does not ask it about other files, and takes no baseline for it there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_project: bool,
    /// Things the user should know about this plugin's setup (a tool it fell back from, a
    /// setting it could not honour), shown by `openfiles plugins` and `openfiles doctor`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// True when the plugin honours [`CheckRequest::texts`] (checks a given text instead of
    /// the file on disk): the service then takes a per-file source's baseline from the
    /// committed text. Without it, that source's items are not classified.
    #[serde(default)]
    pub checks_texts: bool,
    /// True when the plugin fetches fixes in a second step ([`CheckRequest::fixes_only`]):
    /// the service then asks for them right after a check's answer, never delaying it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub late_fixes: bool,
    /// True when a project-wide plugin keeps a server warm across checks (the pyright
    /// plugin's language server): the session-start warm-up then checks one of its files
    /// too, so the agent's first edit finds the project analysed. Per-file sources are
    /// always warmed; other project-wide ones never (a run is real work).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warm: bool,
    /// True when a newer edit makes a project-wide run in flight worthless (the tests
    /// plugin: tests run over content that is gone): the service cancels that run and starts
    /// one for both edits' files at once, instead of queueing a follow-up behind it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
    /// The per-file language servers (by the lsp plugin's names: `pyright`, `basedpyright`)
    /// whose diagnostics this project-wide plugin's warm server gives, hints included, for
    /// the files of the projects it serves (the pyright plugin's). In a trusted workspace
    /// the service then tells the per-file sources to leave those servers out of a check of
    /// such a file, and this plugin to give their items ([`CheckRequest::served`]): one
    /// analysis of a project instead of two.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serves: Vec<String>,
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
    /// A project-wide source reports every file of the projects it ran on that has a
    /// problem, not only `files` and `also_report`: how the service learns what an edit broke
    /// in files nobody edited (and a project's baseline). Per-file sources ignore it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub report_all: bool,
    /// Check these files as if they held this text instead of what is on disk (their
    /// committed content, for the baseline). Sources that cannot check a text (project-wide
    /// tools) are never sent one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub texts: BTreeMap<PathBuf, String>,
    /// Set when `workspace` is a snapshot of this workspace (its committed tree, for the
    /// baseline): share caches such as a build directory with it, so the snapshot's run
    /// rebuilds only what differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_of: Option<PathBuf>,
    /// The user trusts this workspace (`openfiles trust`, or they named it themselves): the
    /// plugin may run executables the workspace holds (`node_modules/.bin`, a project's own
    /// `tsc`/`tsgo`) and tools that run the project's code (cargo's build scripts and proc
    /// macros). Absent or false: only tools installed outside the workspace, and nothing that
    /// runs code the repository brings — what is skipped is said with [`Item::untrusted`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trusted: bool,
    /// Do not check: answer with the fixes for the items this plugin last reported for
    /// `files`, when those files still hold the text they were reported for (else no items).
    /// Only items that have fixes need be returned; the service matches them to its own by
    /// position, code and message. Sent only to plugins with [`Capabilities::late_fixes`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fixes_only: bool,
    /// Per file, the per-file language servers (by name) whose diagnostics a project-wide
    /// source's warm server gives for it ([`Capabilities::serves`]; trusted workspaces only).
    /// A per-file source (the lsp plugin) leaves those servers out of the check — starts
    /// none of them for it — and still answers questions (`query`) with them; the
    /// project-wide source gives every item those servers would, hints included. Absent:
    /// nothing is left out.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub served: BTreeMap<PathBuf, Vec<String>>,
    /// The committed text of each of `files` — and of the other tracked files the tree changed
    /// since `HEAD` (at most 16, content changes only: no deletion or rename) —, sent to a
    /// project-wide source that keeps a warm server ([`Capabilities::warm`]) with the
    /// session's first edits when they come during the session start's warm-up: that
    /// source's baseline for the project is still to come, and one that can check the files
    /// its edit reaches against these texts answers their baseline with the check
    /// ([`CheckResponse::baseline`]) — only for files the tree did not change besides
    /// `files`. Absent otherwise.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub committed: BTreeMap<PathBuf, String>,
    /// Sent with `committed`: the service already has this source's baseline at the commit
    /// for the projects of `files` (a run kept by an earlier session, or another worktree, at
    /// that commit), so the answer need not carry one — only what the edit did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline_known: bool,
}

/// The answer to one check.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResponse {
    /// Results per file. A file of the request missing here counts as checked with no items.
    /// Files not in the request nor in `also_report` are ignored by the host.
    #[serde(default)]
    pub files: Vec<FileResult>,
    /// The source goes on; what it finds later comes in a follow-up check (of the same
    /// project, which the service runs at once).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more: bool,
    /// Per file, this source's items with [`CheckRequest::committed`]'s texts in place of the
    /// changed files (every file it checked so, with or without items): the files' baseline,
    /// ahead of the source's run over the commit. Empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline: Vec<FileResult>,
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
    /// Set by the service, never by a source: `true` when the session's edits introduced the
    /// problem, `false` when the project had it before (its baseline); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introduced: Option<bool>,
    /// The checker's own fixes for this problem (rustc's suggestions, a language server's
    /// quick fixes): exact text edits. An extra field of `diagnostics.json` (absent when
    /// empty), so readers that do not know it are unaffected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<Fix>,
}

/// One fix a checker offers for a problem: exact edits, in one or more files.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fix {
    /// What the fix does, in the checker's words (`"Remove unused import: `os`"`).
    pub title: String,
    /// The checker calls it safe to apply without looking (rustc `MachineApplicable`, ruff's
    /// safe fixes, a language server's preferred quick fix).
    #[serde(default)]
    pub safe: bool,
    /// The edits, per file.
    pub files: Vec<FileEdits>,
}

/// A fix's edits in one file, and the content they were made for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEdits {
    /// Absolute path.
    pub path: PathBuf,
    /// SHA-256 (lowercase hex) of the file's content the edits were made for: a fix is applied
    /// only to exactly that content ([`content_hash`]).
    pub sha256: String,
    /// Non-overlapping edits, positions in the content named by `sha256`.
    pub edits: Vec<TextEdit>,
}

/// Replace the text from (`line`, `column`) up to, not including, (`endLine`, `endColumn`)
/// with `newText`. Lines and columns are 1-based, columns in characters, as an [`Item`]'s.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextEdit {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    pub new_text: String,
}

/// The [`FileEdits::sha256`] of a file's content.
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

/// The `code` of the note a plugin gives instead of running something an untrusted workspace
/// may not make it run (the hook turns these into one line naming `openfiles trust`).
pub const UNTRUSTED_CODE: &str = "untrusted-workspace";

impl Item {
    /// The note for a file `what` was not run on because the workspace is not trusted, e.g.
    /// `Item::untrusted("cargo", "cargo check (it runs build scripts and proc macros)")`.
    pub fn untrusted(source: impl Into<String>, what: &str) -> Self {
        Item {
            code: Some(UNTRUSTED_CODE.to_owned()),
            ..Item::note(
                Severity::Info,
                source,
                format!("not run: {what}, and this workspace is not trusted (`openfiles trust`)"),
            )
        }
    }

    /// An item that explains why a file has no real results (checker failed, timed out…).
    pub fn note(severity: Severity, source: impl Into<String>, message: impl Into<String>) -> Self {
        Item {
            introduced: None,
            line: 1,
            column: 1,
            severity,
            source: source.into(),
            code: None,
            message: message.into(),
            fixes: Vec::new(),
        }
    }
}
