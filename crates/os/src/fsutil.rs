//! Small filesystem primitives with the guarantees the rest of the service relies on:
//! atomic replacement of files others read, private directories that are really ours,
//! and refusing to follow symlinks where a write could be redirected.

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};

/// Replace `path` atomically with `contents`: a temp file in the same directory, fsync'd,
/// then renamed over the target. A reader sees the old file or the new one, never a mix.
/// The file gets `mode` whatever the umask.
pub fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_data()?;
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(mode))?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Replace `root/rel` atomically, like [`write_atomic`], but reaching its folder from the
/// workspace `root` by file descriptor: every folder below `root` is opened without
/// following symlinks and must be owned by us (a missing one is created with `dir_mode`),
/// and the temp file is created and renamed inside that folder's descriptor. A `.openfiles/`
/// swapped for a symlink while the service runs is therefore refused, never written
/// through, and a deleted one is recreated.
pub fn write_atomic_in(
    root: &Path,
    rel: &Path,
    contents: &[u8],
    mode: u32,
    dir_mode: u32,
) -> io::Result<()> {
    replace_in(root, rel, contents, mode, dir_mode, true)
}

/// [`write_atomic_in`] without waiting for the disk (no `fsync`): still atomic for readers,
/// for files whose loss in a crash does not matter (a heartbeat is stale after one anyway).
/// Starting 1 000 workspaces then costs no 1 000 disk flushes.
pub fn write_atomic_in_volatile(
    root: &Path,
    rel: &Path,
    contents: &[u8],
    mode: u32,
    dir_mode: u32,
) -> io::Result<()> {
    replace_in(root, rel, contents, mode, dir_mode, false)
}

fn replace_in(
    root: &Path,
    rel: &Path,
    contents: &[u8],
    mode: u32,
    dir_mode: u32,
    durable: bool,
) -> io::Result<()> {
    let (names, file) = split_relative(rel)?;
    let dir = open_dir_in(root, &names, Some(dir_mode))?;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = CString::new(format!(
        ".tmp-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ))
    .map_err(io::Error::other)?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    let fd = open_fd(dir.as_raw_fd(), &tmp, flags, mode)?;
    let mut f = fs::File::from(fd);
    let written = (|| {
        f.write_all(contents)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        if durable {
            f.sync_data()?;
        }
        // SAFETY: both names are valid and relative to the same open directory.
        if unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                tmp.as_ptr(),
                dir.as_raw_fd(),
                file.as_ptr(),
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    })();
    if written.is_err() {
        // SAFETY: removing our own temp name in the same directory.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
    }
    written
}

/// Refresh the modification time of the existing file `root/rel` to now without rewriting
/// it (the heartbeat: readers judge it by mtime). Its folder is reached from `root` by
/// descriptor as in [`write_atomic_in`] (nothing created; `O_PATH` descriptors, which
/// raise no open/close events for anyone watching those folders, the service's own watcher
/// included), the file is not followed if it is a symlink and must be a regular file owned
/// by us; otherwise the error says why and the caller rewrites it instead.
pub fn touch_in(root: &Path, rel: &Path) -> io::Result<()> {
    let (names, file) = split_relative(rel)?;
    let dir = open_dir_in(root, &names, None)?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a valid name relative to an open directory descriptor; `st` is written on success.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            file.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatat succeeded, so `st` is initialised.
    let st = unsafe { st.assume_init() };
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_uid != nix::unistd::getuid().as_raw() {
        return Err(io::Error::other(format!(
            "{} is not a regular file of ours; not touching it",
            rel.display()
        )));
    }
    // SAFETY: as above; null times mean "now" for both; a symlink swapped in since the
    // check would get its own times changed, never its target's.
    let r = unsafe {
        libc::utimensat(
            dir.as_raw_fd(),
            file.as_ptr(),
            std::ptr::null(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A plain relative path as its folder names and its file name.
fn split_relative(rel: &Path) -> io::Result<(Vec<CString>, CString)> {
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(
                CString::new(n.as_bytes())
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))?,
            ),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain relative path", rel.display()),
                ))
            }
        }
    }
    let Some(file) = names.pop() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty path"));
    };
    Ok((names, file))
}

/// Open the folder `root/names…` by descriptor: every folder below `root` opened without
/// following symlinks and owned by us; a missing one is created with `create`'s mode, or
/// is an error without it (and then the descriptors are `O_PATH`: good for `*at` calls
/// and `fstat`, invisible to file watchers).
fn open_dir_in(root: &Path, names: &[CString], create: Option<u32>) -> io::Result<OwnedFd> {
    let root_c = CString::new(root.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a path"))?;
    let access = match create {
        Some(_) => libc::O_RDONLY,
        None => libc::O_PATH,
    };
    let mut dir = open_fd(libc::AT_FDCWD, &root_c, access | libc::O_DIRECTORY, 0)?;
    let uid = nix::unistd::getuid().as_raw();
    for name in names {
        let flags = access | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let next = match (open_fd(dir.as_raw_fd(), name, flags, 0), create) {
            (Err(e), Some(dir_mode)) if e.kind() == io::ErrorKind::NotFound => {
                // SAFETY: a valid name relative to an open directory descriptor.
                if unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), dir_mode) } != 0 {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(e);
                    }
                }
                let fd = open_fd(dir.as_raw_fd(), name, flags, 0)?;
                // SAFETY: fchmod on a descriptor we own (the umask may have narrowed it).
                unsafe { libc::fchmod(fd.as_raw_fd(), dir_mode) };
                fd
            }
            (Err(e), _) if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) => {
                return Err(io::Error::other(format!(
                    "{} is a symlink or not a directory; refusing to write through it",
                    root.join(name.to_string_lossy().as_ref()).display()
                )))
            }
            (r, _) => r?,
        };
        let meta = fs::File::from(next.try_clone()?).metadata()?;
        if meta.uid() != uid {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not owned by uid {uid}; refusing to write in it",
                    name.to_string_lossy()
                ),
            ));
        }
        dir = next;
    }
    Ok(dir)
}

/// Check that `dir` and the `levels - 1` folders above it are real directories (not
/// symlinks) owned by us: called before creating, renaming or replacing files in a folder
/// the service made inside a workspace (`.claws/terminals`, `.claws/events`), so one
/// swapped for a symlink while the service runs is refused instead of written through.
pub fn verify_own_dirs(dir: &Path, levels: usize) -> io::Result<()> {
    let uid = nix::unistd::getuid().as_raw();
    for d in dir.ancestors().take(levels) {
        let meta = fs::symlink_metadata(d)?;
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(io::Error::other(format!(
                "{} is a symlink or not a directory; refusing to write through it",
                d.display()
            )));
        }
        if meta.uid() != uid {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not owned by uid {uid}; refusing to write in it",
                    d.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The mode for files others read in a workspace (`diagnostics.json`, heartbeats): 0644
/// when the workspace is ours and no one else can write in it, else 0600 (a shared or
/// world-writable folder must not expose what the checkers said about our files).
pub fn reader_mode(root: &Path) -> u32 {
    let uid = nix::unistd::getuid().as_raw();
    match fs::metadata(root) {
        Ok(m) if m.uid() == uid && m.mode() & 0o022 == 0 => 0o644,
        _ => 0o600,
    }
}

/// `openat` with `O_CLOEXEC`, as an owned descriptor.
fn open_fd(dir: libc::c_int, name: &CString, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    // SAFETY: `name` is NUL-terminated; the mode is only read with O_CREAT.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Create `dir` (and parents) if missing, then make sure it is a real directory (not a
/// symlink), owned by us, with exactly `mode` (e.g. 0o700).
pub fn ensure_private_dir(dir: &Path, mode: u32) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // Missing parents get `mode` too: `create_dir_all` would leave them
            // 0777 & !umask (world-writable under umask 000).
            fs::DirBuilder::new()
                .recursive(true)
                .mode(mode)
                .create(dir)?;
        }
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory (a symlink or a file is in the way); refusing to use it",
            dir.display()
        )));
    }
    let uid = nix::unistd::getuid().as_raw();
    if meta.uid() != uid {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {}, not to us (uid {uid}); refusing to use it",
                dir.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o7777 != mode {
        fs::set_permissions(dir, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Make sure `dir` exists as a real directory (never through a symlink) owned by us,
/// creating it with `mode` if missing. Unlike [`ensure_private_dir`] an existing
/// directory keeps its mode.
pub fn ensure_own_dir(dir: &Path, mode: u32) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) => {
            if meta.file_type().is_symlink() || !meta.is_dir() {
                return Err(io::Error::other(format!(
                    "{} is a symlink or not a directory; refusing to write through it",
                    dir.display()
                )));
            }
            let uid = nix::unistd::getuid().as_raw();
            if meta.uid() != uid {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{} is not owned by uid {uid}", dir.display()),
                ));
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new().mode(mode).create(dir)?;
            fs::set_permissions(dir, fs::Permissions::from_mode(mode))
        }
        Err(e) => Err(e),
    }
}

use std::os::unix::fs::DirBuilderExt;

/// The uid that owns `path` (following symlinks).
pub fn owner_uid(path: &Path) -> io::Result<u32> {
    Ok(fs::metadata(path)?.uid())
}

/// Read a file a configuration names (a secret, a certificate): it must be a regular file
/// (the open never blocks, so a FIFO is refused rather than waited on; devices such as
/// `/dev/zero` are refused rather than read forever) of at most `cap` bytes. Symlinks are
/// followed (certificates often are links). The error names the path and says why.
pub fn read_regular_capped(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    read_capped(path, cap, 0)
}

/// [`read_regular_capped`] for a file of our own state folder: a symlink there is refused,
/// not followed.
pub fn read_regular_capped_nofollow(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    read_capped(path, cap, libc::O_NOFOLLOW)
}

fn read_capped(path: &Path, cap: u64, flags: i32) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let at = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | flags)
        .open(path)
        .map_err(at)?;
    let meta = file.metadata().map_err(at)?;
    let t = meta.file_type();
    if !t.is_file() {
        let kind = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: {kind}, not a regular file; refused", path.display()),
        ));
    }
    if meta.len() > cap {
        return Err(too_large(path, cap));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut buf).map_err(at)?;
    if buf.len() as u64 > cap {
        return Err(too_large(path, cap));
    }
    Ok(buf)
}

fn too_large(path: &Path, cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: larger than {cap} bytes; refused", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn touch_moves_the_mtime_and_keeps_the_content() {
        let t = tempfile::tempdir().unwrap();
        let rel = Path::new(".openfiles/vscode/beat.json");
        write_atomic_in(t.path(), rel, b"{}\n", 0o644, 0o755).unwrap();
        let path = t.path().join(rel);
        let old = SystemTime::now() - Duration::from_secs(600);
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        touch_in(t.path(), rel).unwrap();
        let age = SystemTime::now()
            .duration_since(fs::metadata(&path).unwrap().modified().unwrap())
            .unwrap_or_default();
        assert!(
            age < Duration::from_secs(60),
            "mtime not refreshed: {age:?}"
        );
        assert_eq!(fs::read(&path).unwrap(), b"{}\n");
    }

    #[test]
    fn touch_refuses_a_missing_file_and_a_symlink() {
        let t = tempfile::tempdir().unwrap();
        let rel = Path::new(".openfiles/vscode/beat.json");
        assert!(touch_in(t.path(), rel).is_err());
        assert!(!t.path().join(".openfiles").exists(), "nothing is created");
        fs::create_dir_all(t.path().join(".openfiles/vscode")).unwrap();
        let target = t.path().join("target.txt");
        fs::write(&target, "x").unwrap();
        std::os::unix::fs::symlink(&target, t.path().join(rel)).unwrap();
        assert!(touch_in(t.path(), rel).is_err());
    }

    #[test]
    fn bounded_reads_refuse_devices_fifos_directories_and_large_files() {
        let t = tempfile::tempdir().unwrap();
        let ok = t.path().join("secret");
        fs::write(&ok, "s3cret\n").unwrap();
        assert_eq!(read_regular_capped(&ok, 1024).unwrap(), b"s3cret\n");
        let err = |p: &Path, cap| read_regular_capped(p, cap).unwrap_err().to_string();
        assert!(err(Path::new("/dev/zero"), 1024).contains("a device"));
        assert!(err(t.path(), 1024).contains("a directory"));
        let fifo = t.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(err(&fifo, 1024).contains("a FIFO"));
        assert!(err(&ok, 3).contains("larger than 3 bytes"));
        assert!(err(&t.path().join("missing"), 1024).contains("missing"));
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&ok, &link).unwrap();
        assert_eq!(read_regular_capped(&link, 1024).unwrap(), b"s3cret\n");
        assert!(read_regular_capped_nofollow(&link, 1024).is_err());
        assert!(read_regular_capped_nofollow(&ok, 1024).is_ok());
    }
}
