//! The review's model: the session's files grouped by the agent that edited them last,
//! errors first, with the counts and the "next unreviewed" rule every view shares (the TUI,
//! `--list`, `--json`, the prompts). Pure data: no terminal, no socket.

use serde::Serialize;

use openfiles_wire::control::{ReviewFile, WorkspaceReview};
use openfiles_wire::spec::{Item, Severity};

/// One agent's files.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    pub agent: String,
    /// Indices into [`Model::files`], errors first.
    #[serde(skip)]
    pub files: Vec<usize>,
    pub errors: u64,
    pub warnings: u64,
    pub unreviewed: usize,
}

/// The session as the review shows it.
#[derive(Debug, Clone)]
pub struct Model {
    pub root: std::path::PathBuf,
    pub paused: bool,
    pub last_agent: Option<String>,
    pub files: Vec<ReviewFile>,
    /// Groups with errors first, then by name.
    pub groups: Vec<Group>,
    /// Display order: the groups' files one after the other (indices into `files`).
    pub order: Vec<usize>,
}

/// Totals over the session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub files: usize,
    pub unreviewed: usize,
    pub errors: u64,
    pub warnings: u64,
    pub pending: usize,
}

impl Model {
    pub fn new(review: WorkspaceReview) -> Model {
        let WorkspaceReview {
            root,
            paused,
            last_agent,
            files,
        } = review;
        let mut groups: Vec<Group> = Vec::new();
        for (i, f) in files.iter().enumerate() {
            let agent = agent_of(f);
            let g = match groups.iter_mut().position(|g| g.agent == agent) {
                Some(g) => &mut groups[g],
                None => {
                    groups.push(Group {
                        agent: agent.to_owned(),
                        files: Vec::new(),
                        errors: 0,
                        warnings: 0,
                        unreviewed: 0,
                    });
                    let last = groups.len() - 1;
                    &mut groups[last]
                }
            };
            g.files.push(i);
            g.errors += u64::from(f.entry.errors);
            g.warnings += u64::from(f.entry.warnings);
            g.unreviewed += usize::from(!f.mark.reviewed());
        }
        for g in &mut groups {
            g.files.sort_by(|&a, &b| {
                let (fa, fb) = (&files[a], &files[b]);
                (fb.entry.errors, fb.entry.warnings)
                    .cmp(&(fa.entry.errors, fa.entry.warnings))
                    .then_with(|| fa.key.cmp(&fb.key))
            });
        }
        groups.sort_by(|a, b| {
            (b.errors > 0, b.warnings > 0)
                .cmp(&(a.errors > 0, a.warnings > 0))
                .then_with(|| a.agent.cmp(&b.agent))
        });
        let order = groups.iter().flat_map(|g| g.files.clone()).collect();
        Model {
            root,
            paused,
            last_agent,
            files,
            groups,
            order,
        }
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals {
            files: self.files.len(),
            ..Default::default()
        };
        for f in &self.files {
            t.errors += u64::from(f.entry.errors);
            t.warnings += u64::from(f.entry.warnings);
            t.unreviewed += usize::from(!f.mark.reviewed());
            t.pending += usize::from(f.entry.checked_at == 0);
        }
        t
    }

    /// The position (in [`Model::order`]) of the next unreviewed file other than `from`:
    /// files with errors first, then with warnings, then the rest; within a tier, the first
    /// after `from` in display order (wrapping). `from` itself only when it is the last one
    /// left; `None` when every file is reviewed.
    pub fn next_unreviewed(&self, from: Option<usize>) -> Option<usize> {
        let n = self.order.len();
        let start = from.map_or(0, |f| f + 1);
        let tier = |f: &ReviewFile| {
            if f.entry.errors > 0 {
                0
            } else if f.entry.warnings > 0 {
                1
            } else {
                2
            }
        };
        let unreviewed = |pos: &usize| !self.files[self.order[*pos]].mark.reviewed();
        (0..n)
            .map(|k| (start + k) % n)
            .filter(|pos| Some(*pos) != from && unreviewed(pos))
            .min_by_key(|&pos| tier(&self.files[self.order[pos]]))
            .or_else(|| from.filter(|f| *f < n && unreviewed(f)))
    }

    /// The display position of the file with this key.
    pub fn position(&self, key: &str) -> Option<usize> {
        self.order.iter().position(|&i| self.files[i].key == key)
    }

    /// The file at a display position.
    pub fn at(&self, pos: usize) -> Option<&ReviewFile> {
        self.order.get(pos).and_then(|&i| self.files.get(i))
    }
}

/// The group a file belongs to: the agent of its last edit.
pub fn agent_of(f: &ReviewFile) -> &str {
    if f.mark.last_agent.is_empty() {
        openfiles_wire::summary::NO_AGENT
    } else {
        &f.mark.last_agent
    }
}

/// The first problem of a file (errors before warnings before the rest, then by position):
/// where the editor opens it.
pub fn first_problem(items: &[Item]) -> Option<&Item> {
    items
        .iter()
        .min_by_key(|i| (rank(i.severity), i.line, i.column))
}

fn rank(s: Severity) -> u8 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        _ => 2,
    }
}

/// `file:line:col` for an item, the path relative to the workspace root.
pub fn location(f: &ReviewFile, item: &Item) -> String {
    format!("{}:{}:{}", f.key, item.line, item.column)
}

/// A severity as a word.
pub fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
        _ => "hint",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openfiles_wire::control::Mark;
    use openfiles_wire::spec::FileEntry;

    fn file(key: &str, agent: &str, errors: usize, warnings: usize, reviewed: bool) -> ReviewFile {
        let mut items = Vec::new();
        for _ in 0..errors {
            items.push(Item::note(Severity::Error, "t", "e"));
        }
        for _ in 0..warnings {
            items.push(Item::note(Severity::Warning, "t", "w"));
        }
        ReviewFile {
            key: key.into(),
            mark: Mark {
                agents: vec![agent.into()],
                last_agent: agent.into(),
                edited_at: 1,
                reviewed_at: u64::from(reviewed),
            },
            entry: FileEntry::checked(format!("/w/{key}").into(), 1, items),
        }
    }

    fn model(files: Vec<ReviewFile>) -> Model {
        Model::new(WorkspaceReview {
            root: "/w".into(),
            files,
            ..Default::default()
        })
    }

    #[test]
    fn groups_by_last_agent_with_errors_first() {
        let m = model(vec![
            file("a.rs", "codex", 0, 0, false),
            file("b.rs", "claude", 0, 1, false),
            file("c.rs", "claude", 2, 0, true),
            file("d.rs", "codex", 0, 0, true),
        ]);
        let names: Vec<_> = m.groups.iter().map(|g| g.agent.as_str()).collect();
        assert_eq!(names, vec!["claude", "codex"]);
        let keys: Vec<_> = m.order.iter().map(|&i| m.files[i].key.as_str()).collect();
        assert_eq!(keys, vec!["c.rs", "b.rs", "a.rs", "d.rs"]);
        assert_eq!((m.groups[0].errors, m.groups[0].unreviewed), (2, 1));
        let t = m.totals();
        assert_eq!((t.files, t.unreviewed, t.errors, t.warnings), (4, 2, 2, 1));
    }

    #[test]
    fn next_unreviewed_takes_errors_first_then_wraps() {
        let m = model(vec![
            file("a.rs", "x", 0, 0, false),
            file("b.rs", "x", 0, 1, false),
            file("c.rs", "x", 3, 0, false),
            file("d.rs", "x", 1, 0, true),
        ]);
        // Order: c (3E), d (1E, reviewed), b (1W), a.
        let key = |p: Option<usize>| p.map(|p| m.at(p).unwrap().key.clone());
        assert_eq!(key(m.next_unreviewed(None)).as_deref(), Some("c.rs"));
        assert_eq!(key(m.next_unreviewed(Some(0))).as_deref(), Some("b.rs"));
        assert_eq!(key(m.next_unreviewed(Some(2))).as_deref(), Some("c.rs"));
        assert_eq!(key(m.next_unreviewed(Some(3))).as_deref(), Some("c.rs"));
        let one = model(vec![file("a.rs", "x", 1, 0, false)]);
        assert_eq!(one.next_unreviewed(Some(0)), Some(0), "the last one left");
        let all = model(vec![file("a.rs", "x", 1, 0, true)]);
        assert_eq!(all.next_unreviewed(None), None);
    }
}
