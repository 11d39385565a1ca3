//! What an edit can break elsewhere, cheaply, so the warm server's check can answer before
//! its whole analysis settled (see [`crate::server`]): the top-level names a changed file's
//! edit touched ([`changed_names`]), the files that import that module and mention one of
//! them ([`users`]), and the texts the server was told last ([`Texts`]: what the edit is a
//! diff against; a file whose text is what the server was told is not notified again).
//!
//! A text scan, not a parse: it may name too many users (the early answer then waits a
//! little longer) or too few (the answer is early without them: the check says so with
//! `more`, and the follow-up check's answer completes it).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The largest file remembered (a generated module is not scanned).
const MAX_BYTES: u64 = 1 << 20;
/// The most files remembered per server.
const MAX_FILES: usize = 5_000;

/// The top-level `def`/`class` names (and module-level assignments) whose statement the
/// line diff between `old` and `new` touches, in either text.
pub fn changed_names(old: &str, new: &str) -> BTreeSet<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    if prefix == a.len() && prefix == b.len() {
        return BTreeSet::new();
    }
    let mut names = touched(&a, prefix, a.len() - suffix);
    names.extend(touched(&b, prefix, b.len() - suffix));
    names
}

/// The names of the top-level statements of `lines` that overlap lines `from..to` (an
/// empty range: the statement it falls in, an insertion point).
fn touched(lines: &[&str], from: usize, to: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    // The current statement: its first line, the line after its last non-blank one, name.
    let (mut start, mut end) = (0, 0);
    let mut name: Option<String> = None;
    let mut pending_decorator = false;
    for (i, line) in lines.iter().enumerate() {
        let top = !line.is_empty() && !line.starts_with([' ', '\t', '#', ')', ']', '}']);
        if top && !pending_decorator {
            if overlaps(start, end, from, to) {
                out.extend(name.take());
            }
            start = i;
            name = None;
        }
        if top {
            pending_decorator = line.starts_with('@');
            if name.is_none() {
                name = top_name(line);
            }
        }
        if !line.trim().is_empty() {
            end = i + 1;
        }
    }
    if overlaps(start, end, from, to) {
        out.extend(name);
    }
    out
}

/// Whether statement lines `start..end` and changed lines `from..to` overlap (an empty
/// change range counts as the line at `from`).
fn overlaps(start: usize, end: usize, from: usize, to: usize) -> bool {
    let to = to.max(from + 1);
    start < to && from < end
}

/// The name a top-level line defines: `def NAME`, `async def NAME`, `class NAME`, `NAME =`
/// or `NAME: T =`.
fn top_name(line: &str) -> Option<String> {
    let rest = line
        .strip_prefix("async def ")
        .or_else(|| line.strip_prefix("def "))
        .or_else(|| line.strip_prefix("class "));
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(rest) = rest {
        let n = ident(rest.trim_start());
        return (!n.is_empty()).then_some(n);
    }
    let n = ident(line);
    let after = line[n.len()..].trim_start();
    let assigns = (after.starts_with('=') && !after.starts_with("=="))
        || (after.starts_with(':') && after.contains('='));
    (!n.is_empty() && !n.starts_with(|c: char| c.is_ascii_digit()) && assigns).then_some(n)
}

/// The module name of `file` (its stem; a package's `__init__` is the folder's name).
fn module_of(file: &Path) -> Option<String> {
    let stem = file.file_stem()?.to_str()?;
    if stem == "__init__" {
        return Some(file.parent()?.file_name()?.to_str()?.to_owned());
    }
    Some(stem.to_owned())
}

/// Whether `text` imports the module `module` (its last component) in any form:
/// `from .m import`, `from pkg.m import`, `import pkg.m`, `from . import m`.
fn imports(text: &str, module: &str) -> bool {
    let names = |s: &str| -> bool {
        s.split(|c: char| c == ',' || c.is_whitespace() || c == '(' || c == ')')
            .filter(|w| !w.is_empty() && *w != "as")
            .any(|w| {
                w.trim_start_matches('.')
                    .split('.')
                    .any(|part| part == module)
            })
    };
    text.lines().map(str::trim_start).any(|l| {
        if let Some(rest) = l.strip_prefix("from ") {
            let (from, what) = rest.split_once(" import").unwrap_or((rest, ""));
            names(from) || (from.trim_start_matches('.').is_empty() && names(what))
        } else if let Some(rest) = l.strip_prefix("import ") {
            names(rest)
        } else {
            false
        }
    })
}

/// Whether `text` has `name` as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// The files of `texts` other than `changed` that import it and mention one of `names`
/// (with no names known, every importer).
pub fn users<'a>(
    changed: &Path,
    names: Option<&BTreeSet<String>>,
    texts: impl Iterator<Item = (&'a PathBuf, &'a str)>,
) -> Vec<PathBuf> {
    let Some(module) = module_of(changed) else {
        return Vec::new();
    };
    texts
        .filter(|(p, _)| p.as_path() != changed)
        .filter(|(_, t)| imports(t, &module))
        .filter(|(_, t)| names.is_none_or(|ns| ns.iter().any(|n| mentions(t, n))))
        .map(|(p, _)| p.clone())
        .collect()
}

/// How far a change time may trail the write that set it: the kernel stamps files
/// from a clock that ticks every few milliseconds (10 ms at 100 Hz), on Linux's local
/// filesystems; with room to spare.
const CTIME_SLACK: std::time::Duration = std::time::Duration::from_millis(100);

/// The texts of a server's files: as seen last (what an edit is a diff against, and what
/// [`users`] scans), and which of them the server was told (notified with that text).
#[derive(Debug, Default)]
pub struct Texts {
    seen: HashMap<PathBuf, String>,
    told: HashSet<PathBuf>,
    /// How many times [`Texts::changes`] was asked: an undo applies only to the last one.
    asked: u64,
}

/// What a check's changed files are to the server.
#[derive(Debug, Default)]
pub struct Changes {
    /// Files whose text differs from what the server was told (or was never told): notify.
    pub notify: Vec<PathBuf>,
    /// The files that may show what the changes broke (they import a changed module and
    /// mention a name its edit touched; every importer when the old text is unknown).
    pub users: Vec<PathBuf>,
    /// What was known of each notified file before ([`Texts::undo`] puts it back).
    pub before: Vec<Known>,
}

/// A file's text as seen before a notification, whether the server was told it, and the
/// text notified.
#[derive(Debug)]
pub struct Known {
    /// The [`Texts::changes`] call that notified it.
    asked: u64,
    file: PathBuf,
    seen: Option<String>,
    told: bool,
    notified: Option<String>,
}

impl Texts {
    /// Remember the text of each of `files` (under `workspace`) not seen yet: the server
    /// analysed them. What it read is not assumed (each is notified when it changes), except
    /// for a file last changed (its inode's change time, which no one can set back, unlike its
    /// modification time) before the server began reading its folder — the time given
    /// with it (its start, or its root's addition) —: that text is the one it read, as if
    /// told, so a check that names the file later (an edit held for its baseline while the
    /// first analysis read it) notifies nothing and waits for no re-check that never comes.
    pub fn learn<'a>(
        &mut self,
        workspace: &Path,
        files: impl Iterator<Item = (&'a PathBuf, Option<SystemTime>)>,
    ) {
        for (f, reading_since) in files {
            if self.seen.len() >= MAX_FILES {
                return;
            }
            if self.seen.contains_key(f) {
                continue;
            }
            let before = changed_at(f);
            if let Some(t) = read(workspace, f) {
                self.seen.insert(f.clone(), t);
                let read_as_is = match (before, reading_since) {
                    (Some(m), Some(since)) => m + CTIME_SLACK < since,
                    _ => false,
                };
                // Modified again while it was read: not known.
                let after = changed_at(f);
                if read_as_is && after == before {
                    self.told.insert(f.clone());
                }
            }
        }
    }

    /// Compare `changed` with what the server was told, remember them as told, and say
    /// which to notify and who uses what changed.
    pub fn changes(&mut self, workspace: &Path, changed: &[PathBuf]) -> Changes {
        let mut out = Changes::default();
        self.asked += 1;
        let mut names: Vec<(PathBuf, Option<BTreeSet<String>>)> = Vec::new();
        for f in changed {
            let new = read(workspace, f);
            let old = self.seen.get(f);
            if self.told.contains(f) && new.is_some() && new.as_ref() == old {
                continue;
            }
            out.notify.push(f.clone());
            let mut known = Known {
                asked: self.asked,
                file: f.clone(),
                seen: old.cloned(),
                told: self.told.contains(f),
                notified: None,
            };
            match (old, &new) {
                (Some(o), Some(n)) => names.push((f.clone(), Some(changed_names(o, n)))),
                _ => names.push((f.clone(), None)),
            }
            match new {
                Some(n) if self.seen.len() < MAX_FILES || self.seen.contains_key(f) => {
                    known.notified = Some(n.clone());
                    self.seen.insert(f.clone(), n);
                    self.told.insert(f.clone());
                }
                _ => {
                    self.seen.remove(f);
                    self.told.remove(f);
                }
            }
            out.before.push(known);
        }
        let mut found = BTreeSet::new();
        for (f, ns) in &names {
            if ns.as_ref().is_some_and(BTreeSet::is_empty) {
                continue;
            }
            let all = self.seen.iter().map(|(p, t)| (p, t.as_str()));
            found.extend(users(f, ns.as_ref(), all));
        }
        found.retain(|p| !out.notify.contains(p));
        out.users = found.into_iter().collect();
        out
    }

    /// The text the server was told of `file`, if the file under `workspace` still holds it.
    pub fn told_as_on_disk(&self, workspace: &Path, file: &Path) -> Option<String> {
        if !self.told.contains(file) {
            return None;
        }
        let now = read(workspace, file)?;
        (self.seen.get(file) == Some(&now)).then_some(now)
    }

    /// Forget a notification whose check was cancelled before it answered: the next check
    /// notifies those files again, diffed against what was known before (so it awaits
    /// their users too) — it would otherwise find them told and wait for the whole analysis.
    /// Only while no later check compared its files since: one that did found these files
    /// told with the text notified (the server has it), and an undo after that would leave
    /// the server's text unknown — an edit back to the older text then notified nothing, and
    /// what it broke was never reported (issue 42.1).
    pub fn undo(&mut self, before: Vec<Known>) {
        for k in before {
            if k.asked != self.asked || self.seen.get(&k.file) != k.notified.as_ref() {
                continue;
            }
            match k.seen {
                Some(t) => self.seen.insert(k.file.clone(), t),
                None => self.seen.remove(&k.file),
            };
            if !k.told {
                self.told.remove(&k.file);
            }
        }
    }
}

/// When `file`'s inode last changed (content or metadata; set by the kernel only).
fn changed_at(file: &Path) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(file).ok()?;
    let secs = u64::try_from(m.ctime()).ok()?;
    let nanos = u32::try_from(m.ctime_nsec()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

pub(crate) fn read(workspace: &Path, file: &Path) -> Option<String> {
    let bytes =
        openfiles_plugin_api::confine::read_workspace_file(workspace, file, MAX_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const UTILS: &str = "import os\n\n\ndef make_str(value):\n    return str(value)\n\n\n@decorator\ndef other(x):\n    return x\n\n\nLIMIT = 3\n\n\nclass Thing:\n    pass\n";

    #[test]
    fn changed_names_are_the_statements_the_diff_touches() {
        let new = UTILS.replace("def make_str(value):", "def make_str(value, strict):");
        assert_eq!(
            changed_names(UTILS, &new),
            BTreeSet::from(["make_str".into()])
        );
        let body = UTILS.replace("    return x\n", "    return x + 1\n");
        assert_eq!(
            changed_names(UTILS, &body),
            BTreeSet::from(["other".into()])
        );
        let decorated = UTILS.replace("@decorator\n", "@decorator(1)\n");
        assert_eq!(
            changed_names(UTILS, &decorated),
            BTreeSet::from(["other".into()])
        );
        let assign = UTILS.replace("LIMIT = 3", "LIMIT = 4");
        assert_eq!(
            changed_names(UTILS, &assign),
            BTreeSet::from(["LIMIT".into()])
        );
        let added = format!("{UTILS}\n\ndef fresh():\n    pass\n");
        assert_eq!(
            changed_names(UTILS, &added),
            BTreeSet::from(["fresh".into()])
        );
        let removed = UTILS.replace("class Thing:\n    pass\n", "");
        assert!(changed_names(UTILS, &removed).contains("Thing"));
        let renamed = UTILS.replace("class Thing:", "class Other:");
        assert_eq!(
            changed_names(UTILS, &renamed),
            BTreeSet::from(["Thing".into(), "Other".into()])
        );
        assert!(changed_names(UTILS, UTILS).is_empty());
        assert!(changed_names(UTILS, &UTILS.replace("import os", "import sys")).is_empty());
    }

    #[test]
    fn users_import_the_module_and_mention_a_changed_name() {
        let files: Vec<(PathBuf, &str)> = vec![
            (
                "/p/click/core.py".into(),
                "from .utils import make_str\nmake_str(1)\n",
            ),
            (
                "/p/click/abs.py".into(),
                "from click.utils import make_str as m\n",
            ),
            (
                "/p/click/mod.py".into(),
                "import click.utils\nclick.utils.make_str(2)\n",
            ),
            ("/p/click/pkg.py".into(), "from . import (\n  utils,\n)\n"),
            (
                "/p/click/rel.py".into(),
                "from . import utils\nutils.make_str(3)\n",
            ),
            ("/p/click/other.py".into(), "from .utils import LIMIT\n"),
            ("/p/click/unrelated.py".into(), "def make_str_x(): pass\n"),
            (
                "/p/click/word.py".into(),
                "from .utils import other\nmy_make_str = 1\n",
            ),
            ("/p/click/utils.py".into(), "def make_str(v, s): pass\n"),
        ];
        let texts = || files.iter().map(|(p, t)| (p, *t));
        let changed = Path::new("/p/click/utils.py");
        let names = BTreeSet::from(["make_str".to_owned()]);
        let found: Vec<String> = users(changed, Some(&names), texts())
            .iter()
            .filter_map(|p| Some(p.file_name()?.to_str()?.to_owned()))
            .collect();
        assert_eq!(found, ["core.py", "abs.py", "mod.py", "rel.py"]);
        // No names known: every importer (a multi-line `from . import (` is missed).
        assert_eq!(users(changed, None, texts()).len(), 6);
        let init = Path::new("/p/click/__init__.py");
        let pkg = [(PathBuf::from("/p/app.py"), "import click\nclick.echo()\n")];
        let echo = BTreeSet::from(["echo".to_owned()]);
        let of_init = users(init, Some(&echo), pkg.iter().map(|(p, t)| (p, *t)));
        assert_eq!(of_init, [PathBuf::from("/p/app.py")]);
    }

    /// A file unchanged since before the server began reading its folder is known as read;
    /// one modified since, or with no such time, is notified when a check names it.
    #[test]
    fn a_file_older_than_the_servers_reading_is_known_as_read() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let old = ws.join("old.py");
        let new = ws.join("new.py");
        let unknown = ws.join("unknown.py");
        for f in [&old, &new, &unknown] {
            std::fs::write(f, "x = 1\n").unwrap();
        }
        let ctime = |f: &Path| changed_at(f).unwrap();
        let reading = ctime(&old) + std::time::Duration::from_millis(500);
        // Written after the reading began (500 ms later, its modification time set back: the
        // change time says it changed).
        std::thread::sleep(std::time::Duration::from_millis(700));
        std::fs::write(&new, "x = 2\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&new)
            .unwrap()
            .set_modified(std::time::SystemTime::UNIX_EPOCH)
            .unwrap();
        let mut texts = Texts::default();
        texts.learn(
            &ws,
            [
                (&old, Some(reading)),
                (&new, Some(reading)),
                (&unknown, None),
            ]
            .into_iter(),
        );
        let named = [old.clone(), new.clone(), unknown.clone()];
        assert_eq!(texts.changes(&ws, &named).notify, [new, unknown]);
        // Within the slack of the reading's start: not assumed read.
        let close = ws.join("close.py");
        std::fs::write(&close, "y = 2\n").unwrap();
        texts.learn(
            &ws,
            [(&close, Some(ctime(&close) + CTIME_SLACK / 2))].into_iter(),
        );
        assert_eq!(
            texts.changes(&ws, std::slice::from_ref(&close)).notify,
            [close]
        );
    }

    #[test]
    fn texts_notify_what_differs_from_what_was_told_and_name_its_users() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let utils = ws.join("utils.py");
        let core = ws.join("core.py");
        let plain = ws.join("plain.py");
        std::fs::write(&utils, UTILS).unwrap();
        std::fs::write(&core, "from .utils import make_str\nmake_str(1)\n").unwrap();
        std::fs::write(&plain, "from .utils import Thing\n").unwrap();
        let mut texts = Texts::default();
        texts.learn(&ws, [&utils, &core, &plain].into_iter().map(|f| (f, None)));
        // Seen, never told: notified (the server may have read another text; the same text
        // changed no name: no users); then it was told, and unchanged it is not notified.
        let first = texts.changes(&ws, std::slice::from_ref(&utils));
        assert_eq!(first.notify, std::slice::from_ref(&utils));
        assert!(first.users.is_empty(), "{:?}", first.users);
        let same = texts.changes(&ws, std::slice::from_ref(&utils));
        assert!(same.notify.is_empty());
        assert!(same.users.is_empty());
        let new = UTILS.replace("def make_str(value):", "def make_str(value, strict):");
        std::fs::write(&utils, new).unwrap();
        let edit = texts.changes(&ws, std::slice::from_ref(&utils));
        assert_eq!(edit.notify, std::slice::from_ref(&utils));
        assert_eq!(edit.users, std::slice::from_ref(&core));
        // Told now: the same check again notifies nothing.
        assert!(texts
            .changes(&ws, std::slice::from_ref(&utils))
            .notify
            .is_empty());
        // A check cancelled before it answered: undone, the next check notifies the file
        // again and awaits its users (told, it would notify nothing and await no one).
        let broken = UTILS.replace("def make_str(value):", "def make_str(value, x, y):");
        std::fs::write(&utils, &broken).unwrap();
        let cancelled = texts.changes(&ws, std::slice::from_ref(&utils));
        assert_eq!(cancelled.users, std::slice::from_ref(&core));
        texts.undo(cancelled.before);
        let again = texts.changes(&ws, std::slice::from_ref(&utils));
        assert_eq!(again.notify, std::slice::from_ref(&utils));
        assert_eq!(again.users, std::slice::from_ref(&core));
        // Undoing an older notification leaves a newer one of the same file alone.
        std::fs::write(&utils, UTILS).unwrap();
        let newer = texts.changes(&ws, std::slice::from_ref(&utils));
        assert_eq!(newer.notify, std::slice::from_ref(&utils));
        texts.undo(again.before);
        assert!(texts
            .changes(&ws, std::slice::from_ref(&utils))
            .notify
            .is_empty());
        // A later check that compared the file before the undo (it found it told, and
        // notified nothing): the undo leaves the text the server has, so an edit back to the
        // older text is notified (issue 42.1: else what it broke was never reported).
        std::fs::write(&utils, &broken).unwrap();
        let cancelled = texts.changes(&ws, std::slice::from_ref(&utils));
        assert_eq!(cancelled.notify, std::slice::from_ref(&utils));
        std::fs::write(&utils, UTILS).unwrap();
        let restored = texts.changes(&ws, std::slice::from_ref(&utils));
        assert_eq!(restored.notify, std::slice::from_ref(&utils));
        assert!(texts
            .changes(&ws, std::slice::from_ref(&utils))
            .notify
            .is_empty());
        texts.undo(restored.before);
        std::fs::write(&utils, &broken).unwrap();
        assert_eq!(
            texts.changes(&ws, std::slice::from_ref(&utils)).notify,
            std::slice::from_ref(&utils),
            "the edit back to the older text is notified"
        );
        // A file never told: notified, every importer is a user.
        let fresh = ws.join("fresh.py");
        std::fs::write(&fresh, "x = 1\n").unwrap();
        let notified = texts.changes(&ws, std::slice::from_ref(&fresh)).notify;
        assert_eq!(notified, [fresh]);
    }
}
