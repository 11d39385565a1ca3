//! Opening files a repository controls, for the service and every plugin alike.
//!
//! A workspace is not trusted: between the moment an edit is reported and the moment a
//! file is read, any path component may have been swapped for a symlink (to `~/.ssh/…`), a
//! FIFO (which blocks a reader forever), a device (`/dev/zero`, endless), or a hard link to
//! another user's file. Two rules cover every read:
//!
//! - [`read_workspace_file`]: a file *inside* a workspace, opened component by component
//!   from the workspace root by file descriptor (`openat`), never following a symlink, so
//!   the file read is the one inside the workspace whatever happens to the paths meanwhile;
//!   it must be a regular file, not hard-linked where others could have made the link, and
//!   at most `cap` bytes.
//! - [`open_regular`] / [`read_regular`]: a file at a known place that a repository may plant
//!   (`.openfiles/config.toml`, `queue.jsonl`, heartbeats, `diagnostics.json`): the last
//!   component is not followed, the open never blocks (`O_NONBLOCK`), and it must be a
//!   regular file; reads are capped.
//!
//! Both open with `O_CLOEXEC | O_NOCTTY`.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::io::{FromRawFd, OwnedFd};
use std::path::{Component, Path};

/// Why a file was not read.
#[derive(Debug)]
pub enum ConfineError {
    /// The path does not lie under the workspace root.
    Outside,
    /// A component is a symlink (swapped in, or never allowed here).
    Symlink,
    /// Not a regular file (a FIFO, socket, device or directory).
    NotRegular(&'static str),
    /// Hard-linked (more than one name) in a folder others can write: the link may point at
    /// a file its creator could not read.
    HardLinked,
    /// Larger than the cap.
    TooLarge {
        size: u64,
        cap: u64,
    },
    Io(std::io::Error),
}

impl std::fmt::Display for ConfineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfineError::Outside => write!(f, "the path is outside the workspace"),
            ConfineError::Symlink => write!(f, "refused: a path component is a symlink"),
            ConfineError::NotRegular(kind) => write!(f, "refused: not a regular file ({kind})"),
            ConfineError::HardLinked => write!(
                f,
                "refused: the file has several hard links in a folder others can write"
            ),
            ConfineError::TooLarge { size, cap } => write!(
                f,
                "the file is larger ({size} bytes) than the {cap}-byte limit"
            ),
            ConfineError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ConfineError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfineError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl ConfineError {
    /// True when the file simply is not there (deleted since it was reported).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ConfineError::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

const OPEN_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY;

fn c_name(name: &std::ffi::OsStr) -> Result<CString, ConfineError> {
    CString::new(name.as_bytes()).map_err(|_| {
        ConfineError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a path component holds a NUL byte",
        ))
    })
}

/// `openat(dir, name, flags)`; ELOOP (a symlink under `O_NOFOLLOW`) and ENOTDIR on a
/// symlinked folder become [`ConfineError::Symlink`].
fn open_at(dir: libc::c_int, name: &CString, flags: libc::c_int) -> Result<OwnedFd, ConfineError> {
    // SAFETY: `name` is a valid NUL-terminated string; the result is checked.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP) => ConfineError::Symlink,
            Some(libc::ENXIO) => ConfineError::NotRegular("a FIFO or socket"),
            _ => ConfineError::Io(e),
        });
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fstat(fd: &OwnedFd) -> Result<libc::stat, ConfineError> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: all-zero bytes are a valid `stat`; fstat fills it for a valid fd.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid out-pointer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(ConfineError::Io(std::io::Error::last_os_error()));
    }
    Ok(st)
}

fn kind_of(mode: libc::mode_t) -> Option<&'static str> {
    match mode & libc::S_IFMT {
        libc::S_IFREG => None,
        libc::S_IFIFO => Some("a FIFO"),
        libc::S_IFSOCK => Some("a socket"),
        libc::S_IFCHR => Some("a character device"),
        libc::S_IFBLK => Some("a block device"),
        libc::S_IFDIR => Some("a directory"),
        libc::S_IFLNK => Some("a symlink"),
        _ => Some("a special file"),
    }
}

/// Read at most `cap` bytes of an open regular file; more is [`ConfineError::TooLarge`].
fn read_capped(file: File, size: u64, cap: u64) -> Result<Vec<u8>, ConfineError> {
    if size > cap {
        return Err(ConfineError::TooLarge { size, cap });
    }
    let mut buf = Vec::with_capacity(size as usize);
    file.take(cap.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(ConfineError::Io)?;
    if buf.len() as u64 > cap {
        return Err(ConfineError::TooLarge {
            size: buf.len() as u64,
            cap,
        });
    }
    Ok(buf)
}

/// Read `path`, a file inside the workspace `root`, without following any symlink below
/// `root` (see the module header). `root` itself is the workspace as registered
/// (canonical); `path` must be `root` joined with plain components.
pub fn read_workspace_file(root: &Path, path: &Path, cap: u64) -> Result<Vec<u8>, ConfineError> {
    use std::os::unix::io::AsRawFd;
    let rel = path.strip_prefix(root).map_err(|_| ConfineError::Outside)?;
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(c_name(n)?),
            _ => return Err(ConfineError::Outside),
        }
    }
    let Some(last) = names.pop() else {
        return Err(ConfineError::NotRegular("a directory"));
    };
    let root_c = c_name(root.as_os_str())?;
    let mut dir = open_at(libc::AT_FDCWD, &root_c, OPEN_FLAGS | libc::O_DIRECTORY)?;
    for name in &names {
        dir = open_at(
            dir.as_raw_fd(),
            name,
            OPEN_FLAGS | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        )
        .map_err(|e| match e {
            ConfineError::Io(io) if io.raw_os_error() == Some(libc::ENOTDIR) => {
                ConfineError::Symlink
            }
            e => e,
        })?;
    }
    let fd = open_at(
        dir.as_raw_fd(),
        &last,
        OPEN_FLAGS | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )?;
    let st = fstat(&fd)?;
    if let Some(kind) = kind_of(st.st_mode) {
        return Err(ConfineError::NotRegular(kind));
    }
    if st.st_nlink > 1 {
        let d = fstat(&dir)?;
        // SAFETY: geteuid has no failure mode.
        let me = unsafe { libc::geteuid() };
        if d.st_uid != me || d.st_mode & 0o022 != 0 {
            return Err(ConfineError::HardLinked);
        }
    }
    read_capped(File::from(fd), st.st_size as u64, cap)
}

/// Whether a symlink in the last component is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Last {
    /// A file a repository may plant: a symlink there is refused.
    NoFollow,
    /// The user's own file (a dotfile manager may link it): followed, but it must still
    /// end at a regular file and is opened without blocking.
    Follow,
}

/// Open a file a repository may plant without blocking; it must be a regular file.
/// Returns the file and its size.
pub fn open_regular(path: &Path, last: Last) -> Result<(File, u64), ConfineError> {
    let c = c_name(path.as_os_str())?;
    let nofollow = match last {
        Last::NoFollow => libc::O_NOFOLLOW,
        Last::Follow => 0,
    };
    let fd = open_at(libc::AT_FDCWD, &c, OPEN_FLAGS | nofollow | libc::O_NONBLOCK)?;
    let st = fstat(&fd)?;
    if let Some(kind) = kind_of(st.st_mode) {
        return Err(ConfineError::NotRegular(kind));
    }
    Ok((File::from(fd), st.st_size as u64))
}

/// Read a file a repository may plant (see [`open_regular`]), at most `cap` bytes.
pub fn read_regular(path: &Path, last: Last, cap: u64) -> Result<Vec<u8>, ConfineError> {
    let (file, size) = open_regular(path, last)?;
    read_capped(file, size, cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_plain_file_and_refuses_what_a_repository_can_plant() {
        let t = tempfile_dir();
        let root = t.as_path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "x = 1\n").unwrap();
        assert_eq!(
            read_workspace_file(root, &root.join("src/a.py"), 100).unwrap(),
            b"x = 1\n"
        );
        // A symlinked last component, and a symlinked folder on the way.
        std::fs::write(root.join("secret"), "s").unwrap();
        let outside = root.join("secret");
        std::os::unix::fs::symlink(&outside, root.join("src/b.py")).unwrap();
        assert!(matches!(
            read_workspace_file(root, &root.join("src/b.py"), 100),
            Err(ConfineError::Symlink)
        ));
        std::os::unix::fs::symlink(root.join("src"), root.join("lnk")).unwrap();
        assert!(matches!(
            read_workspace_file(root, &root.join("lnk/a.py"), 100),
            Err(ConfineError::Symlink)
        ));
        // A FIFO neither blocks nor is read.
        let fifo = root.join("src/f.py");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(
            read_workspace_file(root, &fifo, 100),
            Err(ConfineError::NotRegular(_))
        ));
        assert!(matches!(
            read_regular(&fifo, Last::Follow, 100),
            Err(ConfineError::NotRegular(_))
        ));
        // A device behind a planted symlink: refused, never read.
        std::os::unix::fs::symlink("/dev/zero", root.join("config.toml")).unwrap();
        assert!(matches!(
            read_regular(&root.join("config.toml"), Last::NoFollow, 100),
            Err(ConfineError::Symlink)
        ));
        assert!(matches!(
            read_regular(&root.join("config.toml"), Last::Follow, 100),
            Err(ConfineError::NotRegular("a character device"))
        ));
        // Caps.
        assert!(matches!(
            read_workspace_file(root, &root.join("src/a.py"), 3),
            Err(ConfineError::TooLarge { size: 6, cap: 3 })
        ));
        assert!(matches!(
            read_workspace_file(root, Path::new("/etc/passwd"), 100),
            Err(ConfineError::Outside)
        ));
        assert!(matches!(
            read_workspace_file(root, &root.join("src/../secret"), 100),
            Err(ConfineError::Outside)
        ));
    }

    #[test]
    fn a_hard_link_counts_only_in_a_folder_others_can_write() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile_dir();
        let root = t.as_path();
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root.join("a.py"), "1").unwrap();
        std::fs::hard_link(root.join("a.py"), root.join("b.py")).unwrap();
        assert!(read_workspace_file(root, &root.join("b.py"), 10).is_ok());
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            read_workspace_file(root, &root.join("b.py"), 10),
            Err(ConfineError::HardLinked)
        ));
    }

    /// A fresh private folder (no tempfile dependency in the API crate).
    struct Dir(std::path::PathBuf);
    impl Dir {
        fn as_path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn tempfile_dir() -> Dir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "of-confine-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        Dir(p.canonicalize().unwrap())
    }
}
