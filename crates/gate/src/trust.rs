//! Who the user trusts to run a workspace's own code, and the one answer to "is this
//! trusted" that the service and the in-process `openfiles check` both ask ([`is_trusted`]).
//!
//! A workspace is trusted when the user named it (command line, `service.workspaces`,
//! `openfiles add`: the caller says so with `named_by_user`) or trusted it with `openfiles
//! trust DIR`, kept here in `trust.json` in the state folder (0600). The root asked about is
//! the workspace the edited file resolves to — a repository nested in a trusted workspace
//! (its own `.git`) is its own workspace and is asked about by its own root.
//!
//! An `openfiles trust` entry is keyed to the folder itself, never to its path alone, so a
//! folder removed and re-cloned at the same path (another repository) does not ride on the
//! old trust, even when the filesystem hands the new folder the freed inode at once (ext4
//! does): the key is the device and inode **plus** the folder's birth time (`statx`
//! `stx_btime`, nanoseconds) **plus** a random mark openfiles writes at trust time into the
//! folder's extended attribute `user.openfiles.trust` (a `git clone`, an archive or a
//! repository's contents cannot set it; a new folder starts without it). Each part the
//! filesystem could not give at trust time is recorded as absent and not asked later;
//! [`Keyed`] says which parts hold, so `openfiles trust` can say when trust there is keyed
//! to the inode only. A part recorded but missing or different now fails the match (closed).
//! Like VS Code's workspace trust, changes to a trusted folder's contents keep it trusted.
//!
//! A `trust.json` of an older openfiles (keys of device and inode only) trusts nothing: its
//! entries cannot be told apart from a re-clone, so they are listed once
//! ([`TrustStore::outdated`]) for the caller to log, and dropped at the next save.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The store's file name in the state folder.
pub const FILE: &str = "trust.json";
/// The extended attribute holding the folder's trust mark.
pub const XATTR: &str = "user.openfiles.trust";
/// The store format this module writes; older ones trust nothing.
const VERSION: u32 = 2;
/// Largest trust file read.
const MAX_BYTES: u64 = 4 << 20;

/// The one answer to "may this workspace run its own code": the user named it, or trusted
/// this very folder with `openfiles trust`. `root` is the workspace the path resolves to
/// (canonical; a nested repository's own root, not the workspace around it).
pub fn is_trusted(root: &Path, store: &TrustStore, named_by_user: bool) -> bool {
    named_by_user || store.trusts(root)
}

/// A folder's birth time, as `statx` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Birth {
    pub sec: i64,
    pub nsec: u32,
}

/// What identifies a trusted folder (one entry of `trust.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Key {
    pub dev: u64,
    pub ino: u64,
    /// The folder's birth time; `None` when the filesystem did not report one.
    pub birth: Option<Birth>,
    /// The random mark written to [`XATTR`]; `None` when the filesystem took none.
    pub mark: Option<String>,
    /// When the user trusted it (ms since the epoch).
    pub at_ms: u64,
}

/// Which parts of a folder's identity a trust entry is keyed to, beyond device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keyed {
    pub birth: bool,
    pub mark: bool,
}

impl Keyed {
    /// Keyed to the inode only: a folder re-created at the same path that gets the freed
    /// inode would be taken for the trusted one.
    pub fn inode_only(self) -> bool {
        !self.birth && !self.mark
    }
}

/// A folder as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    birth: Option<Birth>,
    mark: Option<String>,
}

impl Identity {
    fn same(&self, other: &Identity) -> bool {
        self.dev == other.dev
            && self.ino == other.ino
            && self.birth == other.birth
            && self.mark == other.mark
    }
}

/// A folder as it was when a decision was made about it, to tell later whether it is still
/// that folder (a running service's workspace removed and re-cloned at the same path is
/// not): device, inode, birth time and mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin(Identity);

impl Pin {
    /// The folder at `root` now; `None` when it cannot be opened.
    pub fn of(root: &Path) -> Option<Pin> {
        identity(root).ok().map(Pin)
    }

    /// Whether `root` is still the folder pinned.
    pub fn holds(&self, root: &Path) -> bool {
        identity(root).is_ok_and(|now| now.same(&self.0))
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    #[serde(default)]
    trusted: BTreeMap<PathBuf, serde_json::Value>,
}

/// `openfiles trust` decisions (in the service, one owner: the registry actor).
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    trusted: BTreeMap<PathBuf, Key>,
    outdated: Vec<PathBuf>,
    /// What went wrong reading the file, for the caller's log (nothing is trusted by it).
    problem: Option<String>,
}

impl TrustStore {
    /// Load the store of `state_dir`; a missing file is empty, an unreadable or corrupt one
    /// is kept beside as `trust.json.corrupt` and counts as empty (nothing is trusted by
    /// accident; [`TrustStore::problem`] says why).
    pub fn load(state_dir: &Path) -> TrustStore {
        let path = state_dir.join(FILE);
        let mut store = TrustStore {
            path: path.clone(),
            trusted: BTreeMap::new(),
            outdated: Vec::new(),
            problem: None,
        };
        let bytes =
            match crate::confine::read_regular(&path, crate::confine::Last::NoFollow, MAX_BYTES) {
                Ok(b) => b,
                Err(e) if e.is_not_found() => return store,
                Err(e) => {
                    store.problem = Some(format!(
                        "{}: {e}; no workspace is trusted by it",
                        path.display()
                    ));
                    return store;
                }
            };
        let file = match serde_json::from_slice::<File>(&bytes) {
            Ok(f) => f,
            Err(e) => {
                let keep = path.with_extension("json.corrupt");
                store.problem = Some(format!(
                    "{}: {e}; kept as {} and starting with no trusted workspace",
                    path.display(),
                    keep.display()
                ));
                let _ = std::fs::rename(&path, &keep);
                return store;
            }
        };
        for (root, value) in file.trusted {
            match serde_json::from_value::<Key>(value) {
                Ok(key) if file.version >= VERSION => {
                    store.trusted.insert(root, key);
                }
                _ => store.outdated.push(root),
            }
        }
        store
    }

    /// Folders an older `trust.json` trusted by device and inode only: not trusted now (a
    /// re-cloned folder could hold that inode); the user trusts them again to trust them.
    pub fn outdated(&self) -> &[PathBuf] {
        &self.outdated
    }

    /// Why the file was not taken, if it was not.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Whether the user trusted `root` with `openfiles trust`: the same folder — device,
    /// inode, birth time and mark as recorded —, not a new one at the same path.
    pub fn trusts(&self, root: &Path) -> bool {
        let Some(k) = self.trusted.get(root) else {
            return false;
        };
        let Ok(now) = identity(root) else {
            return false;
        };
        now.dev == k.dev
            && now.ino == k.ino
            && (k.birth.is_none() || now.birth == k.birth)
            && (k.mark.is_none() || now.mark == k.mark)
    }

    /// What the entry of `root` is keyed to, if there is one.
    pub fn keyed(&self, root: &Path) -> Option<Keyed> {
        self.trusted.get(root).map(|k| Keyed {
            birth: k.birth.is_some(),
            mark: k.mark.is_some(),
        })
    }

    /// Record (or, with `trusted: false`, drop) the user's trust in `root`, and save. On
    /// trust the folder gets a fresh mark ([`XATTR`]) where the filesystem takes one;
    /// returns what the entry is keyed to (`None` when revoked).
    pub fn set(&mut self, root: &Path, trusted: bool) -> io::Result<Option<Keyed>> {
        let keyed = if trusted {
            let dir = open_dir(root)?;
            let mark = new_mark()?;
            let marked = set_mark(&dir, &mark).is_ok();
            let now = identity_of(&dir)?;
            let key = Key {
                dev: now.dev,
                ino: now.ino,
                birth: now.birth,
                mark: (marked && now.mark.as_deref() == Some(mark.as_str())).then_some(mark),
                at_ms: now_ms(),
            };
            let keyed = Keyed {
                birth: key.birth.is_some(),
                mark: key.mark.is_some(),
            };
            self.trusted.insert(root.to_owned(), key);
            Some(keyed)
        } else {
            self.trusted.remove(root);
            None
        };
        self.outdated.retain(|r| r != root);
        self.save()?;
        Ok(keyed)
    }

    fn save(&self) -> io::Result<()> {
        let file = File {
            version: VERSION,
            trusted: self
                .trusted
                .iter()
                .map(|(r, k)| Ok((r.clone(), serde_json::to_value(k)?)))
                .collect::<Result<_, serde_json::Error>>()
                .map_err(io::Error::other)?,
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(io::Error::other)?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        private_dir(dir)?;
        write_atomic(&self.path, &bytes)
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// 16 random bytes, hex (fails closed: no time-based fallback).
fn new_mark() -> io::Result<String> {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf).map_err(|e| io::Error::other(format!("no randomness: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn c_path(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// The folder itself, opened without following a symlink in its last component.
fn open_dir(root: &Path) -> io::Result<OwnedFd> {
    let c = c_path(root)?;
    // SAFETY: `c` is a valid NUL-terminated string; the descriptor returned is owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn identity(root: &Path) -> io::Result<Identity> {
    identity_of(&open_dir(root)?)
}

/// Device, inode, birth time (when the filesystem reports it) and mark of an open folder.
fn identity_of(dir: &OwnedFd) -> io::Result<Identity> {
    // SAFETY: an all-zero `statx` is a valid value of this plain C struct.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    let empty = c"";
    // SAFETY: `dir` is an open descriptor, `empty` a valid C string, `st` a valid out-buffer.
    let rc = unsafe {
        libc::statx(
            dir.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_INO | libc::STATX_BTIME,
            &mut st,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let dev = libc::makedev(st.stx_dev_major, st.stx_dev_minor);
    let birth = (st.stx_mask & libc::STATX_BTIME != 0).then_some(Birth {
        sec: st.stx_btime.tv_sec,
        nsec: st.stx_btime.tv_nsec,
    });
    Ok(Identity {
        dev,
        ino: st.stx_ino,
        birth,
        mark: get_mark(dir),
    })
}

fn xattr_name() -> CString {
    // A constant without NUL bytes.
    CString::new(XATTR).unwrap_or_default()
}

fn get_mark(dir: &OwnedFd) -> Option<String> {
    let name = xattr_name();
    let mut buf = [0u8; 64];
    // SAFETY: `dir` is open, `name` a valid C string, `buf` writable for its length.
    let n = unsafe {
        libc::fgetxattr(
            dir.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n <= 0 {
        return None;
    }
    String::from_utf8(buf[..n as usize].to_vec()).ok()
}

fn set_mark(dir: &OwnedFd, mark: &str) -> io::Result<()> {
    let name = xattr_name();
    // SAFETY: `dir` is open, `name` a valid C string, `mark` readable for its length.
    let rc = unsafe {
        libc::fsetxattr(
            dir.as_raw_fd(),
            name.as_ptr(),
            mark.as_ptr().cast(),
            mark.len(),
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `dir`, made 0700 when missing (an existing one is left as it is).
fn private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Replace `path` atomically with `contents`, mode 0600.
fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_data()?;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o600))?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// Remove `dir` and make a new, empty folder at the same path that has the inode `ino`
    /// (ext4 and tmpfs hand a freed inode out again at once); placeholders keep the inodes
    /// handed out meanwhile. Whether the inode was matched.
    fn recreate_with_inode(dir: &Path, ino: u64) -> bool {
        std::fs::remove_dir_all(dir).unwrap();
        let parent = dir.parent().unwrap();
        for i in 0..64 {
            std::fs::create_dir(dir).unwrap();
            if std::fs::metadata(dir).unwrap().ino() == ino {
                return true;
            }
            std::fs::rename(dir, parent.join(format!(".hold-{i}"))).unwrap();
        }
        std::fs::create_dir(dir).unwrap();
        false
    }

    /// Run `decide` on a folder (`ws` under a fresh temporary folder), recreate the folder
    /// with the same inode, then run `check` with what `decide` returned. Tests running beside
    /// this one take freed inodes too, so one that got ours makes the attempt start again
    /// (at most 8 times; every attempt failing to reuse the inode fails the test: it would
    /// prove nothing).
    fn with_inode_reused<T>(decide: impl Fn(&Path, &Path) -> T, check: impl Fn(&Path, &Path, T)) {
        for _ in 0..8 {
            let dir = tempfile::tempdir().unwrap();
            let ws = dir.path().join("ws");
            std::fs::create_dir(&ws).unwrap();
            let decided = decide(dir.path(), &ws);
            let ino = std::fs::metadata(&ws).unwrap().ino();
            if recreate_with_inode(&ws, ino) {
                return check(dir.path(), &ws, decided);
            }
        }
        panic!("the filesystem never handed the inode out again: the test proves nothing");
    }

    #[test]
    fn trust_is_kept_for_the_same_folder_only() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let mut store = TrustStore::load(&state);
        assert!(!store.trusts(&ws));
        let keyed = store.set(&ws, true).unwrap().unwrap();
        assert!(store.trusts(&ws));
        assert!(is_trusted(&ws, &store, false));
        // Survives a restart, private.
        let again = TrustStore::load(&state);
        assert!(again.trusts(&ws));
        assert_eq!(again.keyed(&ws), Some(keyed));
        let mode = std::fs::metadata(state.join(FILE)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Revoked: gone.
        let mut store = TrustStore::load(&state);
        store.set(&ws, false).unwrap();
        assert!(!TrustStore::load(&state).trusts(&ws));
        assert!(is_trusted(&ws, &store, true), "named by the user");
    }

    /// The re-clone attack: the trusted folder is removed and a new one is made at the same
    /// path that gets the very same inode (the test makes sure it did). Keyed to device and
    /// inode only, the new folder was trusted.
    #[test]
    fn a_folder_recreated_with_the_same_inode_is_not_trusted() {
        with_inode_reused(
            |dir, ws| {
                std::fs::create_dir_all(ws.join("node_modules/.bin")).unwrap();
                let mut store = TrustStore::load(&dir.join("state"));
                let keyed = store.set(ws, true).unwrap().unwrap();
                assert!(
                    !keyed.inode_only(),
                    "this filesystem gives a birth time or a mark"
                );
                store
            },
            |dir, ws, store| {
                assert!(!TrustStore::load(&dir.join("state")).trusts(ws));
                assert!(!store.trusts(ws));
            },
        );
    }

    /// A `trust.json` of an older openfiles (device and inode only) trusts nothing and
    /// names its folders once.
    #[test]
    fn an_older_store_trusts_nothing_and_says_which() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let m = std::fs::metadata(&ws).unwrap();
        let old = serde_json::json!({
            "version": 1,
            "trusted": { ws.to_str().unwrap(): {"dev": m.dev(), "ino": m.ino(), "atMs": 1} }
        });
        std::fs::write(dir.path().join(FILE), old.to_string()).unwrap();
        let mut store = TrustStore::load(dir.path());
        assert!(!store.trusts(&ws));
        assert_eq!(store.outdated(), std::slice::from_ref(&ws));
        store.set(&ws, true).unwrap();
        assert!(store.outdated().is_empty());
        assert!(TrustStore::load(dir.path()).trusts(&ws));
    }

    #[test]
    fn a_pin_holds_for_the_same_folder_only() {
        with_inode_reused(
            |_, ws| {
                let pin = Pin::of(ws).unwrap();
                std::fs::write(ws.join("a"), "x").unwrap();
                assert!(pin.holds(ws), "contents changed, same folder");
                pin
            },
            |_, ws, pin| assert!(!pin.holds(ws)),
        );
    }

    #[test]
    fn a_corrupt_store_trusts_nothing_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        let store = TrustStore::load(dir.path());
        assert!(!store.trusts(dir.path()));
        assert!(store.problem().is_some());
        assert!(dir.path().join("trust.json.corrupt").exists());
    }

    /// A mark recorded but gone (the folder's attributes were stripped, or it was copied
    /// back without them) fails the match: closed.
    #[test]
    fn a_recorded_mark_that_is_gone_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let mut store = TrustStore::load(dir.path());
        let keyed = store.set(&ws, true).unwrap().unwrap();
        if !keyed.mark {
            return; // a filesystem without user xattrs: nothing to strip
        }
        let c = c_path(&ws).unwrap();
        let name = xattr_name();
        // SAFETY: valid C strings.
        assert_eq!(unsafe { libc::removexattr(c.as_ptr(), name.as_ptr()) }, 0);
        assert!(!store.trusts(&ws));
    }
}
