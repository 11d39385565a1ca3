//! The session's baseline: the problems the project had before the session's edits, per file
//! and per diagnostic source, and the classification of every item against it (introduced by
//! the session, or already there). The rule is written down in `docs/baseline.md`.
//!
//! Where it comes from: the commit `HEAD` pointed at when the session's first edit arrived
//! ([`git`]). Project-wide sources (cargo, tsc) are run once over a snapshot of that commit's
//! tree, kept in the state dir and shared by every later session at the same commit (their
//! build caches are shared with the real tree through `CheckRequest::cache_of`); per-file
//! sources (language servers) check each edited file's committed text
//! (`CheckRequest::texts`) before its current text. A file the commit does not have has an
//! empty baseline. Without a repository there is no baseline: items stay unclassified and no
//! file the session did not edit is ever blamed on it.
//!
//! Matching ([`classify`]): an item is pre-existing when the baseline has an item of the same
//! source, severity, code and message on the line the edit's diff maps it from; failing that,
//! one of the same source, severity, code and message anywhere in the file that no other
//! item matched (a line edited around an old problem). A test runner's item (a failing test)
//! is the same problem by its source and code (the test's id) alone, whatever its message:
//! a test that failed at the commit and still fails with another message is not introduced.
//! Everything else was introduced.
//!
//! The pipeline actor owns the [`Baseline`] of its session; it is persisted beside the
//! session state and dropped with the session (`session clear`).

pub mod git;
pub mod shared;

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use openfiles_plugin_api::Item;
use serde::{Deserialize, Serialize};

/// What the baseline of a session was taken from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Taken {
    /// Not asked for yet (the session has no edit), or being determined.
    #[default]
    Pending,
    /// The committed tree of `commit`.
    Head { commit: String },
    /// None can be taken (no repository, no commit yet, git missing); `why` says which.
    None { why: String },
    /// Not wanted (`openfiles check` without a service).
    Off,
}

/// Whether one source's baseline for a project or a file is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum Coverage {
    Running,
    Ready,
    Failed { why: String },
}

/// One file's baseline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BaseFile {
    /// Hashes of the committed text's lines (to map lines through the edit's diff); absent
    /// when the commit does not have the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<u64>>,
    /// Per source (plugin name): its items on the committed text.
    #[serde(default)]
    pub items: BTreeMap<String, Vec<Item>>,
    /// Per-file sources whose answer for the committed text is in (or failed).
    #[serde(default)]
    pub covered: BTreeMap<String, Coverage>,
}

/// The baseline of one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Baseline {
    pub taken: Taken,
    /// Per absolute file path of the real workspace.
    #[serde(default)]
    pub files: BTreeMap<PathBuf, BaseFile>,
    /// Per project-wide source (plugin name) and project root: whether its run over the
    /// committed tree is in.
    #[serde(default)]
    pub projects: BTreeMap<String, BTreeMap<PathBuf, Coverage>>,
}

impl Baseline {
    /// A baseline that is never taken.
    pub fn off() -> Baseline {
        Baseline {
            taken: Taken::Off,
            ..Baseline::default()
        }
    }

    /// The commit the baseline is taken from, once known.
    pub fn commit(&self) -> Option<&str> {
        match &self.taken {
            Taken::Head { commit } => Some(commit),
            _ => None,
        }
    }

    /// True when items can be classified at all (a commit is known).
    pub fn usable(&self) -> bool {
        self.commit().is_some()
    }

    pub fn project(&self, source: &str, project: &Path) -> Option<&Coverage> {
        self.projects.get(source).and_then(|p| p.get(project))
    }

    pub fn set_project(&mut self, source: &str, project: &Path, c: Coverage) {
        self.projects
            .entry(source.to_owned())
            .or_default()
            .insert(project.to_owned(), c);
    }

    pub fn file_coverage(&self, source: &str, file: &Path) -> Option<&Coverage> {
        self.files.get(file).and_then(|f| f.covered.get(source))
    }

    pub fn set_file_coverage(&mut self, source: &str, file: &Path, c: Coverage) {
        self.files
            .entry(file.to_owned())
            .or_default()
            .covered
            .insert(source.to_owned(), c);
    }

    /// Record what `source` said about `file` on the committed text (`lines`: its line
    /// hashes, `None` when the commit does not have the file).
    pub fn record(&mut self, source: &str, file: &Path, lines: Option<Vec<u64>>, items: Vec<Item>) {
        let f = self.files.entry(file.to_owned()).or_default();
        if lines.is_some() {
            f.lines = lines;
        }
        if items.is_empty() {
            f.items.remove(source);
        } else {
            f.items.insert(source.to_owned(), items);
        }
    }

    pub fn file(&self, file: &Path) -> Option<&BaseFile> {
        self.files.get(file)
    }

    /// Whether `source`'s baseline for `file` (in `project` for a project-wide source) is
    /// known: `Some(true)` in, `Some(false)` failed or impossible, `None` still coming.
    pub fn known(
        &self,
        source: &str,
        project_wide: bool,
        file: &Path,
        project: &Path,
    ) -> Option<bool> {
        if !self.usable() {
            return match self.taken {
                Taken::Pending => None,
                _ => Some(false),
            };
        }
        // A project-wide source's baseline of one file, ahead of its run over the project:
        // what its warm server answered with the changed files' committed texts
        // (`CheckResponse::baseline`).
        let ahead = self.file_coverage(source, file);
        let c = if project_wide && ahead != Some(&Coverage::Ready) {
            self.project(source, project)
        } else {
            ahead
        };
        match c {
            Some(Coverage::Ready) => Some(true),
            Some(Coverage::Failed { .. }) => Some(false),
            Some(Coverage::Running) | None => None,
        }
    }

    /// The reasons baselines failed, for the feedback (one per source).
    pub fn failures(&self) -> Vec<String> {
        let mut out = BTreeSet::new();
        for (source, projects) in &self.projects {
            for c in projects.values() {
                if let Coverage::Failed { why } = c {
                    out.insert(format!("{source}: {why}"));
                }
            }
        }
        for f in self.files.values() {
            for (source, c) in &f.covered {
                if let Coverage::Failed { why } = c {
                    out.insert(format!("{source}: {why}"));
                }
            }
        }
        out.into_iter().collect()
    }
}

/// What a session file is classified with: its baseline, the sources whose baseline for it
/// is known (items of the others stay unclassified), and the hashes of the text its items
/// are for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BaseView {
    pub file: BaseFile,
    pub known: BTreeSet<String>,
    pub now_lines: Option<Vec<u64>>,
}

/// Per file a project-wide run over a committed tree found problems in: the file, its line
/// hashes (when the snapshot has it) and the items (a snapshot run's result, or a warm-up's
/// answer over a clean tree: `pipeline/seed.rs`).
pub type CommittedFiles = Vec<(PathBuf, Option<Vec<u64>>, Vec<Item>)>;

/// Hashes of `text`'s lines (trailing whitespace ignored), for diffing.
pub fn line_hashes(text: &str) -> Vec<u64> {
    text.lines()
        .map(|l| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            l.trim_end().hash(&mut h);
            h.finish()
        })
        .collect()
}

/// For each line of `old` (1-based index − 1), the 1-based line of `new` it became, when the
/// diff kept it unchanged.
pub fn line_map(old: &[u64], new: &[u64]) -> Vec<Option<u32>> {
    let mut map = vec![None; old.len()];
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, old, new) {
        if let similar::DiffOp::Equal {
            old_index,
            new_index,
            len,
        } = op
        {
            for k in 0..len {
                if let Some(slot) = map.get_mut(old_index + k) {
                    *slot = Some((new_index + k + 1) as u32);
                }
            }
        }
    }
    map
}

/// Whether two items say the same problem. A failing test (a test runner's item) is the same
/// test by its runner and id alone: one that failed at the commit and fails now with another
/// message (another value in its assertion) was not broken by the session.
/// For each line of `old`, the 1-based line of `new` it became: kept lines as [`line_map`]
/// does, and a changed line (in a hunk replacing lines) the line at its place in the hunk
/// (an edited line, such as one that gained a cast, is still "that line"); deleted lines
/// map to nothing.
pub fn line_map_edited(old: &[u64], new: &[u64]) -> Vec<Option<u32>> {
    let mut map = vec![None; old.len()];
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, old, new) {
        let (old_index, new_index, len) = match op {
            similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => (old_index, new_index, len),
            similar::DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (old_index, new_index, old_len.min(new_len)),
            _ => continue,
        };
        for k in 0..len {
            if let Some(slot) = map.get_mut(old_index + k) {
                *slot = Some((new_index + k + 1) as u32);
            }
        }
    }
    map
}

fn same_problem(a: &Item, b: &Item) -> bool {
    if is_test_result(a) || is_test_result(b) {
        return a.source == b.source && a.code.is_some() && a.code == b.code;
    }
    a.severity == b.severity && a.code == b.code && a.message == b.message
}

/// Whether `item` is a test runner's (its `source` is one of the `tests` plugin's runners).
fn is_test_result(item: &Item) -> bool {
    openfiles_plugin_api::test_runners::Runner::ALL
        .iter()
        .any(|r| r.source() == item.source)
}

/// Mark `items` (what `source` says about a file now) introduced or pre-existing against the
/// file's baseline. `now_lines`: the hashes of the text the items are for (`None` when it
/// could not be read: lines are then compared as they are). A file without a baseline entry
/// had no problems: every item is introduced.
pub fn classify(
    base: Option<&BaseFile>,
    now_lines: Option<&[u64]>,
    source: &str,
    items: &mut [Item],
) {
    let old: &[Item] = base
        .and_then(|b| b.items.get(source))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let map = match (base.and_then(|b| b.lines.as_deref()), now_lines) {
        (Some(old_lines), Some(new_lines)) if old_lines != new_lines => {
            Some(line_map(old_lines, new_lines))
        }
        _ => None,
    };
    let moved = |line: u32| -> Option<u32> {
        match &map {
            None => Some(line),
            Some(m) => m.get((line as usize).wrapping_sub(1)).copied().flatten(),
        }
    };
    let mut used = vec![false; old.len()];
    let mut done = vec![false; items.len()];
    // Pass 1: same problem on the line it moved to.
    for (i, it) in items.iter_mut().enumerate() {
        let hit = old
            .iter()
            .enumerate()
            .find(|(j, o)| !used[*j] && same_problem(o, it) && moved(o.line) == Some(it.line));
        if let Some((j, _)) = hit {
            used[j] = true;
            done[i] = true;
            it.introduced = Some(false);
        }
    }
    // Pass 2: the same problem anywhere else (its line was edited), once each.
    for (i, it) in items.iter_mut().enumerate() {
        if done[i] {
            continue;
        }
        let hit = old
            .iter()
            .enumerate()
            .find(|(j, o)| !used[*j] && same_problem(o, it));
        it.introduced = Some(match hit {
            Some((j, _)) => {
                used[j] = true;
                false
            }
            None => true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openfiles_plugin_api::Severity;

    fn item(line: u32, msg: &str) -> Item {
        Item {
            introduced: None,
            fixes: Vec::new(),
            line,
            column: 1,
            severity: Severity::Error,
            source: "t".into(),
            code: Some("E1".into()),
            message: msg.into(),
        }
    }

    fn base(text: &str, items: Vec<Item>) -> BaseFile {
        BaseFile {
            lines: Some(line_hashes(text)),
            items: BTreeMap::from([("s".to_string(), items)]),
            covered: BTreeMap::new(),
        }
    }

    #[test]
    fn lines_shifted_by_the_edit_still_match() {
        let b = base("a\nb\nc\n", vec![item(2, "bad b"), item(3, "bad c")]);
        let now = line_hashes("new1\nnew2\na\nb\nc\n");
        let mut items = vec![item(4, "bad b"), item(5, "bad c"), item(1, "bad new")];
        classify(Some(&b), Some(&now), "s", &mut items);
        let marks: Vec<_> = items.iter().map(|i| i.introduced).collect();
        assert_eq!(marks, vec![Some(false), Some(false), Some(true)]);
    }

    #[test]
    fn a_second_copy_of_an_old_problem_is_new() {
        let b = base("x\ny\n", vec![item(1, "unused import")]);
        let now = line_hashes("x\ny\nz\n");
        let mut items = vec![item(1, "unused import"), item(3, "unused import")];
        classify(Some(&b), Some(&now), "s", &mut items);
        assert_eq!(items[0].introduced, Some(false));
        assert_eq!(items[1].introduced, Some(true));
    }

    #[test]
    fn another_source_and_no_baseline_mean_new() {
        let b = base("x\n", vec![item(1, "p")]);
        let mut items = vec![item(1, "p")];
        classify(Some(&b), None, "other", &mut items);
        assert_eq!(items[0].introduced, Some(true));
        let mut items = vec![item(1, "p")];
        classify(None, None, "s", &mut items);
        assert_eq!(items[0].introduced, Some(true));
    }

    #[test]
    fn a_test_failing_at_the_commit_with_another_message_now_is_not_introduced() {
        let test = |line: u32, id: &str, msg: &str| Item {
            source: "pytest".into(),
            code: Some(id.into()),
            ..item(line, msg)
        };
        let b = base(
            "def test_a():\n    assert f() == 2\n",
            vec![test(2, "tests/t.py::test_a", "assert 1 == 2")],
        );
        let now = line_hashes("def test_a():\n    assert f() == 2\n");
        let mut items = vec![
            test(2, "tests/t.py::test_a", "assert 3 == 2"),
            test(2, "tests/t.py::test_b", "assert 1 == 2"),
        ];
        classify(Some(&b), Some(&now), "s", &mut items);
        assert_eq!(
            items[0].introduced,
            Some(false),
            "the same test, another message"
        );
        assert_eq!(items[1].introduced, Some(true), "another test");
        // Other sources still compare messages.
        let b = base("x\n", vec![item(1, "old message")]);
        let mut items = vec![item(1, "new message")];
        classify(Some(&b), Some(&line_hashes("x\n")), "s", &mut items);
        assert_eq!(items[0].introduced, Some(true));
    }

    #[test]
    fn an_edited_line_maps_to_itself_below_an_inserted_import() {
        let old = line_hashes("def f():\n    return 1\n\nx: str = f()\n");
        let new = line_hashes(
            "from typing import Any, cast\ndef f():\n    return 1\n\nx: str = cast(Any, f())\n",
        );
        assert_eq!(line_map(&old, &new)[3], None, "kept lines only");
        assert_eq!(line_map_edited(&old, &new)[3], Some(5));
        assert_eq!(line_map_edited(&old, &new)[0], Some(2));
    }

    #[test]
    fn an_edited_line_keeps_its_old_problem() {
        let b = base("let x = 1\n", vec![item(1, "unused x")]);
        let now = line_hashes("let x = 2\n");
        let mut items = vec![item(1, "unused x")];
        classify(Some(&b), Some(&now), "s", &mut items);
        assert_eq!(items[0].introduced, Some(false));
    }
}
