//! Small filesystem primitives with the guarantees the rest of the service relies on:
//! atomic replacement of files others read, private directories that are really ours,
//! and refusing to follow symlinks where a write could be redirected.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

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
