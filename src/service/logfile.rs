//! The service's own log file, for machines without journald (containers, many CI images,
//! WSL): `<state dir>/serve.log`, rotated to `serve.log.1` at [`MAX_BYTES`], so it never
//! holds more than twice that. Read by `openfiles logs`. Owns the open file and its size;
//! every write is one `write(2)` of whole lines, under a mutex.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Size at which the file is rotated.
pub const MAX_BYTES: u64 = 2 << 20;
use crate::paths::{rotated, SERVICE_LOG as NAME};

struct Inner {
    path: PathBuf,
    file: File,
    len: u64,
}

/// A cloneable handle to the log file, usable as a `tracing` writer.
#[derive(Clone)]
pub struct LogFile(Arc<Mutex<Inner>>);

impl LogFile {
    /// Open (append) `<dir>/serve.log`, creating the private state dir if needed.
    pub fn open(dir: &Path) -> std::io::Result<LogFile> {
        openfiles_os::fsutil::ensure_private_dir(dir, 0o700)?;
        let path = dir.join(NAME);
        let file = open(&path)?;
        let len = file.metadata()?.len();
        Ok(LogFile(Arc::new(Mutex::new(Inner { path, file, len }))))
    }
}

fn open(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

impl Write for LogFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if g.len + buf.len() as u64 > MAX_BYTES && g.len > 0 {
            let _ = std::fs::rename(&g.path, rotated(&g.path));
            if let Ok(f) = open(&g.path) {
                g.file = f;
                g.len = 0;
            }
        }
        g.file.write_all(buf)?;
        g.len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogFile {
    type Writer = LogFile;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_at_the_cap_and_keeps_one_generation() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = LogFile::open(dir.path()).unwrap();
        let line = vec![b'x'; 1 << 20];
        for _ in 0..5 {
            log.write_all(&line).unwrap();
        }
        let cur = std::fs::metadata(dir.path().join(NAME)).unwrap().len();
        let old = std::fs::metadata(rotated(&dir.path().join(NAME)))
            .unwrap()
            .len();
        assert!(cur <= MAX_BYTES && old <= MAX_BYTES, "{cur} {old}");
        assert_eq!(cur + old, 3 << 20);
    }
}
