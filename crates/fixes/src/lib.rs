//! Applying the checkers' own fixes ([`Fix`] on an [`Item`]): the one way `openfiles check
//! --fix` and the MCP tool `openfiles_fix` change a file.
//!
//! Owns: which fix of a problem is taken ([`choose`]: the first safe one, or with `unsafe`
//! the first at all), the content check (a fix is applied only to the exact content it was
//! made for: every file it edits must still hash to its [`FileEdits::sha256`](openfiles_plugin_api::FileEdits::sha256)), conflicts
//! (two fixes whose edits overlap: the later one waits for the next round), and the write
//! (all edits of a file at once, by temp file and rename, keeping the file's mode, every file
//! reached from the workspace root without following symlinks; nothing is written unless
//! every fix taken still matches its content).
//!
//! The content is checked twice: when the fixes are placed, and on the exact bytes being
//! replaced, re-read right before the rename (`replace_if_unchanged`): an edit the agent made
//! in between is kept and the round stops, naming the file. A round that stops half way
//! ([`FixError`]) names every file it had already replaced and the one it stopped at.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{openat, renameat, OFlag, AT_FDCWD};
use nix::sys::stat::Mode;

use openfiles_plugin_api::{confine, content_hash, Fix, Item, TextEdit};

/// Largest file a fix is applied to.
pub const MAX_FILE_BYTES: u64 = 32 << 20;

/// One fix to apply: the problem it is for (its file and item) and the fix.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub file: PathBuf,
    pub item: Item,
    pub fix: Fix,
    /// Set by [`apply`] on the fixes it applied: [`summary`] of the fix on the content it was
    /// applied to.
    pub summary: String,
}

/// What [`apply`] did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The fixes applied.
    pub applied: Vec<Chosen>,
    /// Fixes not applied, and why (their file changed, they overlap one applied before).
    pub skipped: Vec<(Chosen, NotPlaced)>,
    /// Every file written.
    pub changed: Vec<PathBuf>,
}

/// Why a round of fixes stopped: a file could not be replaced. Files replaced before it stay
/// replaced (each replacement is atomic, a round of several files is not), so the error
/// names them too.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}; {}", already(.done))]
pub struct FixError {
    /// The file the round stopped at (nothing was written to it).
    pub path: String,
    pub why: Stop,
    /// The files this round had already replaced, in order.
    pub done: Vec<PathBuf>,
}

/// Why a file was not replaced.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// Its bytes were not those its fixes were made for when it was about to be replaced
    /// (someone edited it meanwhile, or it is no longer a regular file).
    #[error("changed while its fixes were being applied ({0}), so nothing was written to it; check it again")]
    Changed(String),
    #[error("cannot write: {0}")]
    Write(std::io::Error),
    #[error("{0}")]
    Refused(String),
}

/// Why a fix was not placed on its file's content (the round goes on without it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotPlaced {
    /// The file could not be read the confined way (outside the workspace, not a regular
    /// file, too big, …): the reader's words.
    #[error("{path}: {why}")]
    Unreadable { path: PathBuf, why: String },
    #[error("{0}: not UTF-8 text")]
    NotText(PathBuf),
    #[error("{0} changed since this problem was found; check it again")]
    Changed(PathBuf),
    #[error("an edit lies outside {0}")]
    OutsideText(PathBuf),
    #[error("overlaps a fix applied before it; run again")]
    Overlaps,
    #[error("its own edits overlap")]
    SelfOverlap,
}

fn already(done: &[PathBuf]) -> String {
    if done.is_empty() {
        return "no file was changed".to_owned();
    }
    let names: Vec<String> = done.iter().map(|p| p.display().to_string()).collect();
    format!("already fixed before it: {}", names.join(", "))
}

/// The fix taken for `item`: its first safe fix, or (with `unsafe_too`) its first fix.
pub fn choose(item: &Item, unsafe_too: bool) -> Option<&Fix> {
    item.fixes
        .iter()
        .find(|f| f.safe)
        .or_else(|| item.fixes.iter().find(|_| unsafe_too))
}

/// Every fix [`choose`] takes for the items of `file`.
pub fn chosen(file: &Path, items: &[Item], unsafe_too: bool) -> Vec<Chosen> {
    items
        .iter()
        .filter_map(|i| {
            choose(i, unsafe_too).map(|f| Chosen {
                file: file.to_owned(),
                item: i.clone(),
                fix: f.clone(),
                summary: String::new(),
            })
        })
        .collect()
}

/// A fix's edit as a byte range of the content.
struct Span {
    start: usize,
    end: usize,
    text: String,
}

/// Apply `fixes` to files under `root`. A fix whose content changed (hash), that reaches
/// outside `root`, or whose edits overlap one taken before is skipped with the reason; the
/// rest are written, one atomic replacement per file, each only if the file still holds the
/// bytes the fixes were placed on. The first file that cannot be replaced stops the round.
pub fn apply(root: &Path, fixes: Vec<Chosen>) -> Result<Outcome, FixError> {
    let mut out = Outcome::default();
    // Current content per file, read once.
    let mut contents: BTreeMap<PathBuf, Result<String, NotPlaced>> = BTreeMap::new();
    let mut spans: BTreeMap<PathBuf, Vec<Span>> = BTreeMap::new();
    for mut chosen in fixes {
        match place(root, &chosen.fix, &mut contents, &spans) {
            Ok(placed) => {
                chosen.summary = summary(&chosen.fix, |p| {
                    contents.get(p).and_then(|c| c.as_ref().ok()).cloned()
                });
                for (path, mut s) in placed {
                    spans.entry(path).or_default().append(&mut s);
                }
                out.applied.push(chosen);
            }
            Err(why) => out.skipped.push((chosen, why)),
        }
    }
    for (path, mut edits) in spans {
        let Some(Ok(text)) = contents.get(&path) else {
            continue;
        };
        edits.sort_by_key(|s| (s.start, s.end));
        let mut new = String::with_capacity(text.len());
        let mut at = 0;
        for s in &edits {
            new.push_str(&text[at..s.start]);
            new.push_str(&s.text);
            at = s.end;
        }
        new.push_str(&text[at..]);
        #[cfg(test)]
        tests::before_replace(&path);
        let stop = |why: Stop, done: &[PathBuf]| FixError {
            path: path.display().to_string(),
            why,
            done: done.to_vec(),
        };
        let rel = path
            .strip_prefix(root)
            .map_err(|_| stop(Stop::Refused("outside the workspace".into()), &out.changed))?;
        replace_if_unchanged(root, rel, text.as_bytes(), new.as_bytes())
            .map_err(|why| stop(why, &out.changed))?;
        out.changed.push(path);
    }
    Ok(out)
}

/// Replace `root/rel` with `new`, only if it still holds exactly `old` (the bytes its fixes
/// were placed on). The folder is reached from `root` by descriptor without following a
/// symlink; `new` goes to a temp file beside it first (synced), then the file is opened again
/// (no symlink, no FIFO, regular) and compared with `old` immediately before the rename over
/// it; on any difference the temp file is removed and nothing is replaced. The file keeps its
/// mode. (No system call compares and renames at once: an edit landing between the compare
/// and the rename, microseconds, is the window left.)
fn replace_if_unchanged(root: &Path, rel: &Path, old: &[u8], new: &[u8]) -> Result<(), Stop> {
    use std::io::{Read, Write};
    use std::os::unix::fs::MetadataExt;

    let (dir, name) = open_parent(root, rel)?;
    let (_, before) = current(&dir, name)?;
    let mode = before.mode() & 0o7777;
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = format!(
        ".tmp-fix-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let fd = openat(
        &dir,
        tmp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(io)?;
    let mut temp = std::fs::File::from(fd);
    let result = (|| {
        temp.write_all(new)
            .and_then(|()| temp.set_permissions(std::fs::Permissions::from_mode(mode)))
            .and_then(|()| temp.sync_data())
            .map_err(Stop::Write)?;
        // Immediately before the rename: still exactly the bytes the fixes were made for?
        let (file, _) = current(&dir, name)?;
        let mut now = Vec::with_capacity(old.len());
        file.take(old.len() as u64 + 1)
            .read_to_end(&mut now)
            .map_err(|e| Stop::Changed(format!("cannot read it again: {e}")))?;
        if now != old {
            return Err(Stop::Changed(
                "its content is not the one its fixes were made for".into(),
            ));
        }
        renameat(&dir, tmp.as_str(), &dir, name).map_err(io)
    })();
    if result.is_err() {
        let _ = nix::unistd::unlinkat(&dir, tmp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
    }
    result
}

fn io(e: nix::Error) -> Stop {
    Stop::Write(std::io::Error::from(e))
}

/// The folder holding `root/rel`, reached from `root` by descriptor without following a
/// symlink, and the file's name in it.
fn open_parent<'a>(root: &Path, rel: &'a Path) -> Result<(OwnedFd, &'a OsStr), Stop> {
    let mut names: Vec<&OsStr> = Vec::new();
    for c in rel.components() {
        match c {
            std::path::Component::Normal(n) => names.push(n),
            _ => {
                return Err(Stop::Refused(
                    "not a plain path inside the workspace".into(),
                ))
            }
        }
    }
    let Some(name) = names.pop() else {
        return Err(Stop::Refused("not a file".into()));
    };
    let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let mut dir = openat(AT_FDCWD, root, dir_flags, Mode::empty()).map_err(io)?;
    for n in &names {
        dir = openat(&dir, *n, dir_flags | OFlag::O_NOFOLLOW, Mode::empty()).map_err(
            |e| match e {
                nix::Error::ELOOP | nix::Error::ENOTDIR => Stop::Refused(format!(
                    "{} is a symlink; not written through",
                    n.to_string_lossy()
                )),
                e => io(e),
            },
        )?;
    }
    Ok((dir, name))
}

/// The file `name` in `dir` as it is now, opened the confined way: no symlink, no FIFO,
/// a regular file.
fn current(dir: &OwnedFd, name: &OsStr) -> Result<(std::fs::File, std::fs::Metadata), Stop> {
    let fd = openat(
        dir,
        name,
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_CLOEXEC
            | OFlag::O_NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| Stop::Changed(format!("cannot open it again: {e}")))?;
    let file = std::fs::File::from(fd);
    let meta = file
        .metadata()
        .map_err(|e| Stop::Changed(format!("cannot stat it: {e}")))?;
    if !meta.is_file() {
        return Err(Stop::Changed("it is no longer a regular file".into()));
    }
    Ok((file, meta))
}

/// The byte ranges of `fix` in each file it edits, checked against the current content and
/// against the ranges already taken.
fn place(
    root: &Path,
    fix: &Fix,
    contents: &mut BTreeMap<PathBuf, Result<String, NotPlaced>>,
    taken: &BTreeMap<PathBuf, Vec<Span>>,
) -> Result<Vec<(PathBuf, Vec<Span>)>, NotPlaced> {
    let mut placed = Vec::new();
    for f in &fix.files {
        let text = contents
            .entry(f.path.clone())
            .or_insert_with(|| read(root, &f.path))
            .as_ref()
            .map_err(Clone::clone)?;
        if content_hash(text.as_bytes()) != f.sha256 {
            return Err(NotPlaced::Changed(f.path.clone()));
        }
        let mut mine: Vec<Span> = Vec::new();
        for e in &f.edits {
            let span = to_span(text, e).ok_or_else(|| NotPlaced::OutsideText(f.path.clone()))?;
            let clash = |o: &Span| {
                (o.start < span.end && span.start < o.end)
                    || o.start == span.start
                    || (o.start == o.end && span.start < o.start && o.start < span.end)
            };
            if taken.get(&f.path).into_iter().flatten().any(clash) {
                return Err(NotPlaced::Overlaps);
            }
            if mine
                .iter()
                .any(|o| o.start < span.end && span.start < o.end)
            {
                return Err(NotPlaced::SelfOverlap);
            }
            mine.push(span);
        }
        placed.push((f.path.clone(), mine));
    }
    Ok(placed)
}

fn read(root: &Path, path: &Path) -> Result<String, NotPlaced> {
    let bytes = confine::read_workspace_file(root, path, MAX_FILE_BYTES).map_err(|e| {
        NotPlaced::Unreadable {
            path: path.to_owned(),
            why: e.to_string(),
        }
    })?;
    String::from_utf8(bytes).map_err(|_| NotPlaced::NotText(path.to_owned()))
}

/// The byte offset of 1-based (`line`, `column` in characters); the position just past the
/// last character of a line (or of the text) is valid, anything further is not.
fn offset(text: &str, line: u32, column: u32) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let rest = &text[start..];
    let line_len = rest.find('\n').unwrap_or(rest.len());
    let skip = column.checked_sub(1)? as usize;
    let mut chars = rest[..line_len].char_indices().map(|(i, _)| i);
    match chars.nth(skip) {
        Some(i) => Some(start + i),
        None if skip == rest[..line_len].chars().count() => Some(start + line_len),
        None => None,
    }
}

fn to_span(text: &str, e: &TextEdit) -> Option<Span> {
    let start = offset(text, e.line, e.column)?;
    let end = offset(text, e.end_line, e.end_column)?;
    (start <= end).then(|| Span {
        start,
        end,
        text: e.new_text.clone(),
    })
}

/// A fix in a few words for the feedback: `replace `usize` with `u32` at 3:18`, `insert `;`
/// at 5:14`, `delete 1:1–2:1`; several edits give the first and a count.
pub fn summary(fix: &Fix, text_of: impl Fn(&Path) -> Option<String>) -> String {
    let edits: Vec<(&Path, &TextEdit)> = fix
        .files
        .iter()
        .flat_map(|f| f.edits.iter().map(move |e| (f.path.as_path(), e)))
        .collect();
    let Some((path, e)) = edits.first() else {
        return fix.title.clone();
    };
    let old = text_of(path).and_then(|t| {
        let s = to_span(&t, e)?;
        Some(t[s.start..s.end].to_owned())
    });
    let at = format!("{}:{}", e.line, e.column);
    let short = |s: &str| {
        let one: String = s.chars().take(40).collect();
        let one = one.replace('\n', "\\n");
        if s.chars().count() > 40 {
            format!("{one}…")
        } else {
            one
        }
    };
    let what = match (old.as_deref(), e.new_text.as_str()) {
        (Some(""), new) => format!("insert `{}` at {at}", short(new)),
        (Some(old), "") => format!("delete `{}` at {at}", short(old)),
        (Some(old), new) => format!("replace `{}` with `{}` at {at}", short(old), short(new)),
        (None, "") => format!("delete at {at}"),
        (None, new) => format!("put `{}` at {at}", short(new)),
    };
    match edits.len() {
        1 => what,
        n => format!("{what} (+{} more edit(s))", n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openfiles_plugin_api::{FileEdits, Severity};

    fn fix(path: &Path, text: &str, safe: bool, edits: Vec<TextEdit>) -> Fix {
        Fix {
            title: "t".into(),
            safe,
            files: vec![FileEdits {
                path: path.to_owned(),
                sha256: content_hash(text.as_bytes()),
                edits,
            }],
        }
    }

    fn edit(l: u32, c: u32, el: u32, ec: u32, new: &str) -> TextEdit {
        TextEdit {
            line: l,
            column: c,
            end_line: el,
            end_column: ec,
            new_text: new.into(),
        }
    }

    fn item(fixes: Vec<Fix>) -> Item {
        Item {
            fixes,
            ..Item::note(Severity::Error, "x", "m")
        }
    }

    /// A callback of the tests, given the file about to be replaced.
    type Between = Box<dyn FnMut(&Path)>;

    thread_local! {
        /// Run by [`apply`] right before it replaces a file: the tests' window between the
        /// read a fix was placed on and the replacement.
        static BEFORE_REPLACE: std::cell::RefCell<Option<Between>> =
            std::cell::RefCell::new(None);
    }

    pub(super) fn before_replace(path: &Path) {
        BEFORE_REPLACE.with(|f| {
            if let Some(f) = f.borrow_mut().as_mut() {
                f(path)
            }
        });
    }

    /// Run `apply` with `between` called for each file between its read and its replacement.
    fn apply_with(
        root: &Path,
        fixes: Vec<Chosen>,
        between: impl FnMut(&Path) + 'static,
    ) -> Result<Outcome, FixError> {
        BEFORE_REPLACE.with(|f| *f.borrow_mut() = Some(Box::new(between)));
        let out = apply(root, fixes);
        BEFORE_REPLACE.with(|f| *f.borrow_mut() = None);
        out
    }

    /// Issue: the hash was checked when the file was read, not when it was replaced; a line
    /// the agent appended in between was lost and the output said "applied 1 fix". Now the
    /// bytes being replaced are compared right before the rename: the file is left as the
    /// agent wrote it and the error names it.
    #[test]
    fn an_edit_between_read_and_replace_is_kept_and_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let path = root.join("a.rs");
        let text = "let x: usize = 3;\n";
        std::fs::write(&path, text).unwrap();
        let replace = fix(&path, text, true, vec![edit(1, 8, 1, 13, "u32")]);
        let picked = chosen(&path, &[item(vec![replace])], false);
        let out = apply_with(&root, picked, |p| {
            let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
            std::io::Write::write_all(&mut f, b"// the agent's line\n").unwrap();
        });
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "let x: usize = 3;\n// the agent's line\n",
            "the agent's edit survives, untouched"
        );
        let err = out.expect_err("a file that changed is not replaced");
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("changed"), "{msg}");
        assert!(
            !std::fs::read_dir(&root).unwrap().any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".tmp")),
            "no temp file is left"
        );
    }

    /// Issue: when the second file of a two-file round could not be written, the first was
    /// already rewritten and the report named only the failure. Now it names both.
    #[test]
    fn a_round_that_stops_half_way_names_what_it_changed_and_what_failed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (a, b) = (root.join("a.rs"), root.join("b.rs"));
        let text = "let x: usize = 3;\n";
        std::fs::write(&a, text).unwrap();
        std::fs::write(&b, text).unwrap();
        let mut picked = chosen(
            &a,
            &[item(vec![fix(
                &a,
                text,
                true,
                vec![edit(1, 8, 1, 13, "u32")],
            )])],
            false,
        );
        picked.extend(chosen(
            &b,
            &[item(vec![fix(
                &b,
                text,
                true,
                vec![edit(1, 8, 1, 13, "u32")],
            )])],
            false,
        ));
        let target = b.clone();
        let out = apply_with(&root, picked, move |p| {
            if p == target {
                // b.rs can no longer be written as a file.
                std::fs::remove_file(p).unwrap();
                std::fs::create_dir(p).unwrap();
            }
        });
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "let x: u32 = 3;\n");
        assert!(b.is_dir());
        let msg = out.expect_err("the round stopped").to_string();
        assert!(msg.contains(&b.display().to_string()), "{msg}");
        assert!(
            msg.contains(&a.display().to_string()),
            "the file already changed is named too: {msg}"
        );
    }

    #[test]
    fn offsets_count_characters_and_allow_the_end_of_a_line() {
        let t = "aé\nxyz";
        assert_eq!(offset(t, 1, 1), Some(0));
        assert_eq!(offset(t, 1, 3), Some(3)); // past "aé" (é is 2 bytes)
        assert_eq!(offset(t, 2, 1), Some(4));
        assert_eq!(offset(t, 2, 4), Some(7));
        assert_eq!(offset(t, 2, 5), None);
        assert_eq!(offset(t, 3, 1), None);
        assert_eq!(offset("a\n", 2, 1), Some(2));
    }

    #[test]
    fn safe_fixes_apply_stale_and_overlapping_ones_wait() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let path = root.join("a.rs");
        let text = "let x: usize = 3;\nuse std::fmt;\n";
        std::fs::write(&path, text).unwrap();
        let replace = fix(&path, text, true, vec![edit(1, 8, 1, 13, "u32")]);
        let overlap = fix(&path, text, true, vec![edit(1, 10, 1, 11, "Z")]);
        let delete = fix(&path, text, true, vec![edit(2, 1, 3, 1, "")]);
        let stale = fix(&path, "old", true, vec![edit(1, 1, 1, 1, "x")]);
        let unsafe_one = fix(&path, text, false, vec![edit(1, 1, 1, 1, "pub ")]);
        let items = [
            item(vec![unsafe_one.clone(), replace.clone()]),
            item(vec![overlap]),
            item(vec![delete]),
            item(vec![stale]),
            item(vec![unsafe_one]),
        ];
        assert_eq!(choose(&items[0], false), Some(&replace));
        let picked = chosen(&path, &items, false);
        assert_eq!(picked.len(), 4, "the unsafe-only item is left");
        let summary_of = summary(&replace, |_| Some(text.to_owned()));
        assert_eq!(summary_of, "replace `usize` with `u32` at 1:8");
        let out = apply(&root, picked).unwrap();
        assert_eq!(out.applied.len(), 2);
        assert_eq!(out.skipped.len(), 2);
        assert!(out
            .skipped
            .iter()
            .any(|(_, w)| matches!(w, NotPlaced::Changed(_))));
        assert!(out.skipped.iter().any(|(_, w)| *w == NotPlaced::Overlaps));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "let x: u32 = 3;\n");
        assert_eq!(out.changed, vec![path.clone()]);
        // Applying the same fixes again: the content changed, nothing is written.
        let again = apply(&root, chosen(&path, &items[..1], false)).unwrap();
        assert!(again.applied.is_empty() && again.changed.is_empty());
    }
}
