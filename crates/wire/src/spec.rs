//! The OpenFiles on-disk formats, exactly as `openfiles-diagnostics-and-hook.md` spells them.
//!
//! `diagnostics.json`, a `queue.jsonl` line and a heartbeat file are read by tools we do not
//! control (agents, the editor extension's `hook.js`), so every field name here is part of a
//! public contract: never rename one. The daemon writes these types, the `hook` fallback and
//! `check` read them; both sides use this one module.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use openfiles_plugin_api::{Item, Severity};

/// The `source` of the items that name what a session's edit added to hide a problem (the
/// service's built-in `silencing` source, issue 40.6), each with one of [`SILENCING_CODES`].
pub const SILENCING_SOURCE: &str = "openfiles";
/// Their codes: a suppression, a cast to "anything", a skipped test, a removed test, a
/// checker's configuration loosened.
pub const SILENCING_CODES: [&str; 5] = [
    "silenced-suppression",
    "silenced-cast",
    "silenced-test-skipped",
    "silenced-test-removed",
    "silenced-config",
];

/// Whether `item` names something an edit added to hide a problem. Such a warning is about
/// hiding errors: the hook lists it at the errors-only level too.
pub fn is_silencing(item: &Item) -> bool {
    item.source == SILENCING_SOURCE
        && item
            .code
            .as_deref()
            .is_some_and(|c| SILENCING_CODES.contains(&c))
}

/// Directory of a workspace that holds the OpenFiles files.
pub const DIR: &str = ".openfiles";
/// Heartbeat directory inside [`DIR`] (the name comes from the editor extension).
pub const HEARTBEAT_DIR: &str = "vscode";
pub const QUEUE_FILE: &str = "queue.jsonl";
pub const DIAGNOSTICS_FILE: &str = "diagnostics.json";
/// A heartbeat older than this (by mtime) means nobody is serving the workspace.
pub const HEARTBEAT_FRESH_SECS: u64 = 60;
/// `hook.timeoutMs` when `diagnostics.json` does not say.
pub const DEFAULT_HOOK_TIMEOUT_MS: u64 = 4000;
/// Largest `diagnostics.json` a reader takes (a planted `/dev/zero` or a huge file is
/// refused, not read until memory runs out).
pub const MAX_DIAGNOSTICS_BYTES: u64 = 64 << 20;
/// Largest heartbeat file read (they are a few hundred bytes).
pub const MAX_HEARTBEAT_BYTES: u64 = 64 << 10;

/// `.openfiles/diagnostics.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticsFile {
    pub version: u32,
    /// Epoch milliseconds.
    pub updated_at: u64,
    /// Always written: a known reader crashes when it is missing.
    #[serde(default)]
    pub hook: HookSettings,
    /// Keyed by workspace-relative path with `/` separators.
    #[serde(default)]
    pub files: BTreeMap<String, FileEntry>,
    /// An extra field: where the session's baseline came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineInfo>,
}

/// The `hook` object of `diagnostics.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSettings {
    pub feedback: Feedback,
    pub timeout_ms: u64,
    /// An extra field: which problems of the edited files the feedback lists
    /// (`[hooks] feedback_scope`). Absent in the seed's files: then `introduced`.
    #[serde(default)]
    pub feedback_scope: FeedbackScope,
}

impl Default for HookSettings {
    fn default() -> Self {
        HookSettings {
            feedback: Feedback::ErrorsAndWarnings,
            timeout_ms: DEFAULT_HOOK_TIMEOUT_MS,
            feedback_scope: FeedbackScope::Introduced,
        }
    }
}

/// Which problems of the edited files the feedback lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum FeedbackScope {
    /// What the session's edits introduced (items marked `introduced: false` are only
    /// counted); items that cannot be classified (no baseline) are listed.
    #[default]
    Introduced,
    /// Every problem, old and new.
    All,
}

/// An extra top-level field of `diagnostics.json` and of a `wait` reply: what the session's
/// baseline (the problems before its edits, see `docs/baseline.md`) was taken from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BaselineInfo {
    /// `head` (the committed tree of `commit`), `none` (`why` says why: items are then not
    /// classified and no file the session did not edit is reported), `pending` (the session
    /// has no edit yet) or `off`.
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Sources whose baseline could not be taken, and why (their items are not classified).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// Which items the hook reports back to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum Feedback {
    Off,
    Errors,
    #[default]
    ErrorsAndWarnings,
}

/// One file's entry in `diagnostics.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    /// Absolute path.
    pub path: PathBuf,
    /// Epoch ms when diagnostics settled after the last edit; 0 = not yet.
    pub checked_at: u64,
    pub errors: u32,
    pub warnings: u32,
    pub items: Vec<Item>,
    /// Per diagnostic source (by plugin name): whether it has answered for the file's current
    /// content. An extra field (absent in the seed's files): `checkedAt` is non-zero only
    /// when every source has answered, and `items` hold only the answers for the current
    /// content, so a reader can show what the finished sources found while the others run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, SourceStatus>,
    /// An extra field, on files the session did not edit: its edits broke this file (new
    /// errors a project-wide source found here), and these are the edited files (keys) of the
    /// check that found them. The entry leaves when the errors are gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub affected_by: Vec<String>,
}

/// One source's state for a file's current content.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceStatus {
    /// Epoch ms when the source answered for the file's current content; 0 = still running.
    pub answered_at: u64,
}

impl FileEntry {
    /// The sources that have not answered for the current content yet, by name.
    pub fn running(&self) -> impl Iterator<Item = &str> {
        self.sources
            .iter()
            .filter(|(_, s)| s.answered_at == 0)
            .map(|(n, _)| n.as_str())
    }

    /// True when the entry holds results for content edited at or before `since`: every
    /// source answered (`checkedAt ≥ since`), or at least one source answered at or after it.
    pub fn answered_since(&self, since: u64) -> bool {
        (self.checked_at != 0 && self.checked_at >= since)
            || self
                .sources
                .values()
                .any(|s| s.answered_at != 0 && s.answered_at >= since)
    }
}

impl FileEntry {
    /// An entry for a file that was edited but not checked yet.
    pub fn pending(path: PathBuf) -> Self {
        FileEntry {
            path,
            checked_at: 0,
            errors: 0,
            warnings: 0,
            items: Vec::new(),
            sources: BTreeMap::new(),
            affected_by: Vec::new(),
        }
    }

    /// An entry with `items`, counts derived from them.
    pub fn checked(path: PathBuf, checked_at: u64, items: Vec<Item>) -> Self {
        let count = |s| items.iter().filter(|i| i.severity == s).count() as u32;
        FileEntry {
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            path,
            checked_at,
            items,
            sources: BTreeMap::new(),
            affected_by: Vec::new(),
        }
    }
}

/// One line of `.openfiles/queue.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueLine {
    pub v: u32,
    /// Epoch ms of the edit.
    #[serde(default)]
    pub ts: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub paths: Vec<PathBuf>,
}

/// `.openfiles/vscode/<id>.json`: one per serving process (editor window or this service).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    pub version: u32,
    pub workspace_root: PathBuf,
    pub session_id: String,
    pub app_name: String,
    /// Epoch seconds (fractional), kept in seconds for 0.1 clients.
    pub updated_at: f64,
    #[serde(default)]
    pub files: Vec<PathBuf>,
}

/// The `appName` this service writes in its heartbeats.
pub const APP_NAME: &str = "openfiles";

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A file's modification time in ms since the epoch (`None` when it cannot be read).
pub fn mtime_ms(path: &std::path::Path) -> Option<u64> {
    let t = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as u64)
}

/// RFC 3339 UTC with milliseconds (`2026-04-27T12:00:00.123Z`), as JavaScript's
/// `toISOString` writes it.
pub fn iso_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        ms % 1000
    )
}

/// The current UTC time, as [`iso_ms`] writes it.
pub fn iso_now() -> String {
    iso_ms(now_ms())
}

#[cfg(test)]
mod tests {
    use super::iso_ms;

    #[test]
    fn iso_dates_match_javascripts_to_iso_string() {
        assert_eq!(iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
