//! A plugin's own state files (its state dir's caches, remembered results, files it hands to
//! a tool): folders only the user can enter (0700), files only the user can read (0600),
//! whatever the process's umask, written whole (a temporary file renamed over the old one).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Create `dir` and the folders above it that are missing, each 0700; an existing `dir` is
/// made 0700 too.
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Write `bytes` to `path` (0600) through a temporary file beside it, renamed over `path`;
/// the folder is created (0700) when missing.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        if !dir.is_dir() {
            create_dir(dir)?;
        }
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_and_files_are_private_whatever_the_umask() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/b");
        let file = dir.join("state.json");
        write(&file, b"{}").unwrap();
        write(&file, b"[]").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&t.path().join("a")), 0o700);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read(&file).unwrap(), b"[]");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }
}
