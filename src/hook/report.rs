//! Picking, from a workspace's diagnostics entries, what the feedback shows for the
//! edited paths: the entry of each path (matched by its absolute `path`, or by its key
//! joined to the root), only when checked at or after the edit — by every source, or by
//! some while others still run (partial: the view names them) — with the items the
//! workspace's `hook.feedback` level lists (errors, or errors and warnings; never info or
//! hints). Shared by the service path (entries from a `wait` reply) and the fallback
//! (entries read from `diagnostics.json`). Pure: no I/O.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::feedback::FileView;
use crate::spec::{Feedback, FileEntry, HookSettings, Severity};

/// One workspace's entries, as a `wait` reply or `diagnostics.json` holds them.
#[derive(Debug, Clone, Copy)]
pub struct Entries<'a> {
    pub root: &'a Path,
    pub hook: &'a HookSettings,
    pub files: &'a BTreeMap<String, FileEntry>,
}

impl<'a> Entries<'a> {
    /// The entry for `path`, if any.
    pub fn find(&self, path: &Path) -> Option<&'a FileEntry> {
        let want = normalize(path);
        let root = normalize(self.root);
        self.files
            .iter()
            .find(|(key, entry)| {
                normalize(&entry.path) == want || (!key.is_empty() && root.join(key) == want)
            })
            .map(|(_, entry)| entry)
    }

    /// True when every path has an entry checked at or after `since`.
    pub fn all_checked(&self, paths: &[PathBuf], since: u64) -> bool {
        paths
            .iter()
            .all(|p| self.find(p).is_some_and(|e| e.checked_at >= since))
    }

    /// The views of `paths` (in their order) that were checked at or after `since` by every
    /// source or by some (then naming the sources still running), with the items the level
    /// lists. Empty when the level is `off`.
    pub fn views(&self, paths: &[PathBuf], since: u64) -> Vec<FileView> {
        let with_warnings = match self.hook.feedback {
            Feedback::Off => return Vec::new(),
            Feedback::Errors => false,
            Feedback::ErrorsAndWarnings => true,
        };
        let mut out = Vec::new();
        for path in paths {
            let Some(entry) = self.find(path) else {
                continue;
            };
            if !entry.answered_since(since) {
                continue;
            }
            let running = if entry.checked_at != 0 && entry.checked_at >= since {
                Vec::new()
            } else {
                entry.running().map(str::to_owned).collect()
            };
            let items = entry
                .items
                .iter()
                .filter(|i| {
                    i.severity == Severity::Error
                        || (with_warnings && i.severity == Severity::Warning)
                })
                .cloned()
                .collect();
            out.push(FileView {
                display: display_path(self.root, &entry.path),
                errors: entry.errors,
                warnings: entry.warnings,
                items,
                with_warnings,
                running,
            });
        }
        out
    }
}

/// Workspace-relative with `/` separators, or the absolute path when outside `root`.
pub fn display_path(root: &Path, path: &Path) -> String {
    let path = normalize(path);
    match path.strip_prefix(normalize(root)) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        _ => path.to_string_lossy().into_owned(),
    }
}

/// Remove `.` components and resolve `..` lexically (no file system access).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(c);
                }
            }
            other => out.push(other),
        }
    }
    out
}
