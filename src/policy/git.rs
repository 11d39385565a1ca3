//! What git ignores and what it tracks, read as data: the `.gitignore` files from the
//! repository's top down to a path, `info/exclude`, and the index — every one of them read
//! through `openfiles_gate::confine` (never through a symlink, never blocking, capped), and
//! git itself never run, so nothing the repository's config says applies.
//!
//! Git's rules, as `git check-ignore` applies them: for one path, the `.gitignore` of its
//! own folder is asked first, then each folder's above it up to the top, then `info/exclude`;
//! the first one whose last matching line matches decides (a `!` line un-ignores). A path
//! under an ignored folder is ignored (callers walking top-down ask about the folders on
//! the way). Without a repository, the workspace's own `.gitignore` files still apply (as
//! ripgrep and the watcher always did).
//!
//! A file git tracks is checked even when a rule ignores it ([`GitRules::tracked`], read
//! from the index, v2 to v4): the index is read once per state (its mtime and size) when
//! first asked, and kept as the sorted 64-bit hashes of its paths (8 bytes a file: 8 MiB for
//! a repository of a million files).
//!
//! Each folder's matcher is kept and looked at again (one `stat` of its `.gitignore`) at
//! most once a second; the cache is bounded ([`CACHE_MAX`] folders, cleared when full: a walk
//! asks about one branch at a time).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use openfiles_gate::confine;

/// Largest ignore file read.
const MAX_IGNORE_FILE: u64 = 1 << 20;
/// Largest index read (a repository of a million files has an index of about 100 MiB).
const MAX_INDEX: u64 = 1 << 30;
/// Folders whose matchers are kept.
pub const CACHE_MAX: usize = 4096;
/// How long a cached matcher is trusted before its file is looked at again.
const RECHECK: Duration = Duration::from_secs(1);

/// The rule that ignores a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRule {
    /// The line as written (`build/`).
    pub line: String,
    /// The file it is in (`.gitignore`, `src/.gitignore`, `.git/info/exclude`).
    pub file: PathBuf,
}

/// (mtime, size) of a file, `None` when absent.
type Stamp = Option<(SystemTime, u64)>;

struct Cached {
    checked: Instant,
    stamp: Stamp,
    matcher: Option<std::sync::Arc<Gitignore>>,
}

/// The git rules of one workspace.
pub struct GitRules {
    /// The workspace root (canonical).
    root: PathBuf,
    /// The repository's top (the folder holding `.git`), the root or above it.
    top: Option<PathBuf>,
    /// The repository's git folder (`.git`, or where a worktree's `.git` file points).
    git_dir: Option<PathBuf>,
    /// `info/exclude` (in the common git folder for a worktree) and the folder its patterns
    /// are relative to (the top).
    exclude: Option<(PathBuf, PathBuf)>,
    /// Matchers by folder (`info/exclude` under the git folder's path).
    cache: Mutex<HashMap<PathBuf, Cached>>,
    /// The index's paths (hashed, sorted) as of its stamp.
    tracked: Mutex<Option<(Stamp, std::sync::Arc<Vec<u64>>)>>,
}

impl std::fmt::Debug for GitRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitRules")
            .field("root", &self.root)
            .field("top", &self.top)
            .finish_non_exhaustive()
    }
}

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// The repository holding `root`: its top and its git folder.
fn find_repository(root: &Path) -> Option<(PathBuf, PathBuf)> {
    for at in root.ancestors() {
        let dot = at.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot) else {
            continue;
        };
        if meta.is_dir() {
            return Some((at.to_owned(), dot));
        }
        // A worktree's or a submodule's `.git` file: `gitdir: PATH`.
        let text = confine::read_regular(&dot, confine::Last::NoFollow, 4096).ok()?;
        let text = String::from_utf8_lossy(&text);
        let named = text.trim().strip_prefix("gitdir:")?.trim();
        return Some((at.to_owned(), at.join(named)));
    }
    None
}

/// `info/exclude` (under the common git folder for a worktree) with the folder its patterns
/// are relative to, the top.
fn exclude_file(top: Option<&Path>, git_dir: Option<&Path>) -> Option<(PathBuf, PathBuf)> {
    let (top, git_dir) = (top?, git_dir?);
    let common = confine::read_regular(&git_dir.join("commondir"), confine::Last::NoFollow, 4096)
        .ok()
        .map(|t| git_dir.join(String::from_utf8_lossy(&t).trim()))
        .unwrap_or_else(|| git_dir.to_owned());
    Some((top.to_owned(), common.join("info/exclude")))
}

impl GitRules {
    pub fn new(root: &Path) -> GitRules {
        let (top, git_dir) = find_repository(root).unzip();
        let exclude = exclude_file(top.as_deref(), git_dir.as_deref());
        GitRules {
            root: root.to_owned(),
            top,
            git_dir,
            exclude,
            cache: Mutex::new(HashMap::new()),
            tracked: Mutex::new(None),
        }
    }

    /// Whether the workspace lies in a git repository.
    pub fn in_repository(&self) -> bool {
        self.top.is_some()
    }

    /// The rule that ignores `rel` (workspace-relative) itself, folders above it aside.
    pub fn ignores(&self, rel: &Path, is_dir: bool) -> Option<GitRule> {
        let abs = self.root.join(rel);
        let first = self.top.as_deref().unwrap_or(&self.root);
        // The path's own folder first, then up to the top.
        let mut dirs: Vec<&Path> = abs
            .ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(first))
            .collect();
        if dirs.is_empty() {
            return None;
        }
        let mut matchers: Vec<std::sync::Arc<Gitignore>> = Vec::new();
        for d in dirs.drain(..) {
            if let Some(m) = self.matcher(d, &d.join(".gitignore")) {
                matchers.push(m);
            }
        }
        if let Some((dir, file)) = &self.exclude {
            if let Some(m) = self.matcher(dir, file) {
                matchers.push(m);
            }
        }
        for m in matchers {
            match m.matched(&abs, is_dir) {
                ignore::Match::None => continue,
                ignore::Match::Whitelist(_) => return None,
                ignore::Match::Ignore(glob) => {
                    let file = glob.from().map(Path::to_owned).unwrap_or_default();
                    let file = file
                        .strip_prefix(&self.root)
                        .map(Path::to_owned)
                        .unwrap_or(file);
                    return Some(GitRule {
                        line: glob.original().to_owned(),
                        file,
                    });
                }
            }
        }
        None
    }

    /// The matcher of the ignore file `file` whose patterns are relative to `dir`.
    fn matcher(&self, dir: &Path, file: &Path) -> Option<std::sync::Arc<Gitignore>> {
        let key = file.to_owned();
        let now = Instant::now();
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(c) = cache.get(&key) {
                if now.duration_since(c.checked) < RECHECK {
                    return c.matcher.clone();
                }
            }
        }
        let st = stamp(file);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get_mut(&key) {
            if c.stamp == st {
                c.checked = now;
                return c.matcher.clone();
            }
        }
        let matcher = st.and_then(|_| read_ignore_file(dir, file));
        if cache.len() >= CACHE_MAX {
            cache.clear();
        }
        cache.insert(
            key,
            Cached {
                checked: now,
                stamp: st,
                matcher: matcher.clone(),
            },
        );
        matcher
    }

    /// Whether git tracks `rel` (workspace-relative): it is in the index.
    pub fn tracked(&self, rel: &Path) -> bool {
        use std::os::unix::ffi::OsStrExt;
        let (Some(top), Some(git_dir)) = (&self.top, &self.git_dir) else {
            return false;
        };
        let Ok(in_repo) = self.root.join(rel).strip_prefix(top).map(Path::to_owned) else {
            return false;
        };
        let index = git_dir.join("index");
        let st = stamp(&index);
        let known = {
            let tracked = self.tracked.lock().unwrap_or_else(|e| e.into_inner());
            tracked
                .as_ref()
                .filter(|(s, _)| *s == st)
                .map(|(_, paths)| paths.clone())
        };
        let paths = match known {
            Some(paths) => paths,
            None => {
                let paths =
                    std::sync::Arc::new(index_paths(&index, self.sha256()).unwrap_or_default());
                *self.tracked.lock().unwrap_or_else(|e| e.into_inner()) = Some((st, paths.clone()));
                paths
            }
        };
        paths
            .binary_search(&path_hash(in_repo.as_os_str().as_bytes()))
            .is_ok()
    }

    /// Whether the repository names its objects with SHA-256 (`extensions.objectFormat`),
    /// which makes each index entry 12 bytes longer.
    fn sha256(&self) -> bool {
        let Some(git_dir) = &self.git_dir else {
            return false;
        };
        confine::read_regular(&git_dir.join("config"), confine::Last::NoFollow, 1 << 20)
            .map(|c| {
                let c = String::from_utf8_lossy(&c).to_ascii_lowercase();
                c.lines().any(|l| {
                    let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
                    l == "objectformat=sha256"
                })
            })
            .unwrap_or(false)
    }
}

/// Read one ignore file (confined) into a matcher for patterns relative to `dir`.
fn read_ignore_file(dir: &Path, file: &Path) -> Option<std::sync::Arc<Gitignore>> {
    let bytes = confine::read_regular(file, confine::Last::NoFollow, MAX_IGNORE_FILE).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut b = GitignoreBuilder::new(dir);
    for line in text.lines() {
        // A line git would reject is skipped, as git does.
        let _ = b.add_line(Some(file.to_owned()), line);
    }
    b.build().ok().map(std::sync::Arc::new)
}

/// The hash a path of the index is kept as.
fn path_hash(path: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same in every process, no allocation per path.
    let mut h = std::hash::DefaultHasher::new();
    path.hash(&mut h);
    h.finish()
}

/// The hashes of every path in the index at `index`, sorted, read as a stream: versions 2
/// and 3 (padded names) and 4 (prefix-compressed names). An index that is not one is empty.
fn index_paths(index: &Path, sha256: bool) -> std::io::Result<Vec<u64>> {
    let (file, size) = confine::open_regular(index, confine::Last::NoFollow)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    if size > MAX_INDEX {
        return Ok(Vec::new());
    }
    let mut r = BufReader::new(file);
    let mut header = [0u8; 12];
    r.read_exact(&mut header)?;
    let version = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    let count = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    if &header[..4] != b"DIRC" || !(2..=4).contains(&version) {
        return Ok(Vec::new());
    }
    // ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each), the object id.
    let fixed = 40 + if sha256 { 32 } else { 20 };
    let mut stat = vec![0u8; fixed];
    let mut name: Vec<u8> = Vec::new();
    let mut out = Vec::with_capacity((count as usize).min(1 << 24));
    for _ in 0..count {
        r.read_exact(&mut stat)?;
        let mut flags = [0u8; 2];
        r.read_exact(&mut flags)?;
        let flags = u16::from_be_bytes(flags);
        let mut len = fixed + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            r.read_exact(&mut [0u8; 2])?;
            len += 2;
        }
        if version == 4 {
            let strip = varint(&mut r)?;
            name.truncate(name.len().saturating_sub(strip));
            r.read_until(0, &mut name)?;
            name.pop();
        } else {
            name.clear();
            r.read_until(0, &mut name)?;
            name.pop();
            // Padded with 1 to 8 NULs to a multiple of 8 (one is read already).
            let total = (len + name.len() + 8) & !7;
            let pad = total - len - name.len() - 1;
            let mut skip = [0u8; 8];
            r.read_exact(&mut skip[..pad])?;
        }
        out.push(path_hash(&name));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Git's offset varint (index v4's prefix length).
fn varint(r: &mut impl Read) -> std::io::Result<usize> {
    let mut byte = [0u8; 1];
    r.read_exact(&mut byte)?;
    let mut val = (byte[0] & 0x7f) as usize;
    while byte[0] & 0x80 != 0 {
        r.read_exact(&mut byte)?;
        val = ((val + 1) << 7) | (byte[0] & 0x7f) as usize;
        if val > 1 << 24 {
            return Err(std::io::Error::other("index: prefix length out of range"));
        }
    }
    Ok(val)
}
