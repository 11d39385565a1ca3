//! Picking, from a workspace's diagnostics entries, what the feedback shows for the
//! edited paths: the entry of each path (matched by its absolute `path`, or by its key
//! joined to the root), only when checked at or after the edit — by every source, or by
//! some while others still run (partial: the view names them) — with the items the
//! workspace's `hook.feedback` level lists (errors, or errors and warnings; never info or
//! hints; what an edit added to hide a problem — the `silencing` source's warnings — at
//! the errors-only level too, since it is about hiding errors). Under `hook.feedbackScope = introduced` only the items the session introduced
//! are listed (those marked `introduced: false` are counted), and the entries of files the
//! edits broke (`affectedBy`) give the "broken elsewhere" section. Shared by the service path
//! (entries from a `wait` reply) and the fallback (entries read from `diagnostics.json`).
//! No I/O but one: a listed problem with a safe fix gets its compact summary, which quotes
//! the text the fix replaces, read from the file (confined to the workspace, only when the
//! file still has the content the fix was made for).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::feedback::{Broken, FileView, Report};
use openfiles_wire::spec::{
    self, BaselineInfo, Feedback, FeedbackScope, FileEntry, HookSettings, Item, Severity,
};

/// One workspace's entries, as a `wait` reply or `diagnostics.json` holds them.
#[derive(Debug, Clone, Copy)]
pub struct Entries<'a> {
    pub root: &'a Path,
    pub hook: &'a HookSettings,
    pub files: &'a BTreeMap<String, FileEntry>,
    /// Where the session's baseline came from (absent: an older writer, nothing said).
    pub baseline: Option<&'a BaselineInfo>,
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
                let mut r: Vec<String> = entry.running().map(str::to_owned).collect();
                if r.is_empty() {
                    // Every source answered; the baseline that says what they broke elsewhere
                    // had not come in yet.
                    r.push("the baseline".to_owned());
                }
                r
            };
            // What hides a problem is listed at the errors-only level too.
            let at_level: Vec<_> = entry
                .items
                .iter()
                .filter(|i| {
                    i.severity == Severity::Error
                        || (with_warnings && i.severity == Severity::Warning)
                        || spec::is_silencing(i)
                })
                .collect();
            let silencers = at_level.iter().filter(|i| spec::is_silencing(i)).count() as u32;
            let (items, already, errors, warnings): (Vec<Item>, _, _, _) =
                match self.hook.feedback_scope {
                    FeedbackScope::All => (
                        at_level.into_iter().cloned().collect(),
                        0,
                        entry.errors,
                        if with_warnings {
                            entry.warnings
                        } else {
                            silencers
                        },
                    ),
                    FeedbackScope::Introduced => {
                        let (old, new): (Vec<_>, Vec<_>) = at_level
                            .into_iter()
                            .partition(|i| i.introduced == Some(false));
                        let count =
                            |s: Severity| new.iter().filter(|i| i.severity == s).count() as u32;
                        let (e, w) = (count(Severity::Error), count(Severity::Warning));
                        (new.into_iter().cloned().collect(), old.len() as u32, e, w)
                    }
                };
            let fixes = fix_summaries(self.root, &entry.path, &items);
            out.push(FileView {
                fixes,
                display: display_path(self.root, &entry.path),
                errors,
                warnings,
                items,
                // The header counts the warnings listed: all at that level, else the silencers.
                with_warnings: with_warnings || warnings > 0,
                running,
                already,
            });
        }
        out
    }

    /// What the feedback says for `paths`: their views, the errors the session caused in
    /// files it did not edit, and what the reader should know about the baseline.
    pub fn report(&self, paths: &[PathBuf], since: u64) -> Report {
        let mut report = Report {
            files: self.views(paths, since),
            ..Report::default()
        };
        if self.hook.feedback == Feedback::Off {
            return report;
        }
        // What did not run because the workspace is not trusted: one line, whatever the
        // number of files.
        let mut skipped: Vec<&str> = paths
            .iter()
            .filter_map(|p| self.find(p))
            .flat_map(|e| e.items.iter())
            .filter(|i| i.code.as_deref() == Some(openfiles_plugin_api::UNTRUSTED_CODE))
            .map(|i| i.source.as_str())
            .collect();
        skipped.sort_unstable();
        skipped.dedup();
        if !skipped.is_empty() {
            report
                .notes
                .push(super::feedback::untrusted_note(&skipped, self.root));
        }
        for entry in self.files.values().filter(|e| !e.affected_by.is_empty()) {
            let display = display_path(self.root, &entry.path);
            for item in entry
                .items
                .iter()
                .filter(|i| i.introduced == Some(true) && i.severity == Severity::Error)
            {
                report.broken.push(Broken {
                    display: display.clone(),
                    item: item.clone(),
                });
            }
        }
        if self.hook.feedback_scope == FeedbackScope::Introduced {
            if let Some(b) = self.baseline {
                if b.from == "none" {
                    report.notes.push(format!(
                        "No baseline ({}): problems that were already there are listed too, and files you did not edit were not checked for new errors.",
                        b.why.as_deref().unwrap_or("unknown reason")
                    ));
                }
            }
        }
        report
    }
}

/// Per item, the summary of its safe fix (`None` without one); empty when no item has one.
/// The file is read once, confined to `root`; a fix made for other content than the file's
/// now is not shown.
fn fix_summaries(root: &Path, path: &Path, items: &[Item]) -> Vec<Option<String>> {
    if !items
        .iter()
        .any(|i| openfiles_fixes::choose(i, false).is_some())
    {
        return Vec::new();
    }
    let text = openfiles_plugin_api::confine::read_workspace_file(
        root,
        path,
        openfiles_fixes::MAX_FILE_BYTES,
    )
    .ok()
    .and_then(|b| String::from_utf8(b).ok());
    let Some(text) = text else {
        return Vec::new();
    };
    let hash = openfiles_plugin_api::content_hash(text.as_bytes());
    items
        .iter()
        .map(|i| {
            let fix = openfiles_fixes::choose(i, false)?;
            let fresh = fix.files.iter().all(|f| f.path != path || f.sha256 == hash);
            fresh.then(|| openfiles_fixes::summary(fix, |p| (p == path).then(|| text.clone())))
        })
        .collect()
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
