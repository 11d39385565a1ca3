//! The terminal's output path: one dedicated thread per terminal that waits with `poll` on the
//! PTY master (and a wake-up socket for close), drains what the kernel holds in one batch, and
//! hands it to the capture ring, the log file of unwrapped terminals ([`LogFile`]), the
//! shell-integration mark scanner and the rate-limited `vehicle.<id>.content` event.
//!
//! A thread rather than a tokio task: the kernel hands out at most ~4 KiB per read, so output
//! arrives in many small pieces; a blocking thread takes each with one `read` and no reactor
//! wake-up, task hand-off or timer/cancellation bookkeeping (see `benches/claws.rs`).
//! Everything the reader calls (ring, marks, history, bus) is synchronous.

use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::pty::{self, Read, Ready};
use super::super::strip::MarkScanner;
use super::super::{now_ms, ServerState};
use super::Terminal;

/// Most bytes drained from the PTY before they are processed as one batch.
const BATCH: usize = 128 << 10;
/// What the kernel's tty line discipline holds for a reader (`N_TTY_BUF_SIZE`); a read
/// rarely returns more, whatever the buffer.
const KERNEL_CHUNK: usize = 4096;
/// `vehicle.<id>.content` events at most this often per terminal.
const CONTENT_EVERY: Duration = Duration::from_millis(100);

/// Start the reader thread of `term`. It ends when the PTY's slave side is gone (EIO: the
/// kernel hangs the tty up when the shell, its session leader, exits) or when the terminal's
/// `closed` token is cancelled (which `close` also does for a shell that survived SIGKILL's
/// grace, e.g. stuck in uninterruptible sleep); a socket pair wakes its `poll` for that.
pub(super) fn start(
    shared: Arc<ServerState>,
    term: Arc<Terminal>,
    nonce: String,
    log: Option<LogFile>,
) -> std::io::Result<()> {
    let (wake_rx, mut wake_tx) = UnixStream::pair()?;
    let closed = term.closed.clone();
    let done = CancellationToken::new();
    let finished = done.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = closed.cancelled() => { let _ = wake_tx.write_all(&[1]); }
            _ = finished.cancelled() => {}
        }
    });
    // Mark handling may start tasks (bash's continuation-prompt cancel), so the thread runs
    // inside the service's runtime context.
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name(format!("claws-pty-{}", term.id))
        .spawn(move || {
            let _runtime = runtime.enter();
            let _done = done.drop_guard();
            run(&shared, &term, &nonce, log, &wake_rx);
        })?;
    Ok(())
}

fn run(
    shared: &ServerState,
    term: &Arc<Terminal>,
    nonce: &str,
    mut log: Option<LogFile>,
    wake: &UnixStream,
) {
    let fd = term.master.get_ref().as_fd();
    let mut buf = vec![0u8; BATCH];
    let mut scanner = MarkScanner::new(nonce);
    let mut marks = Vec::new();
    let mut content = Content::default();
    loop {
        let timeout = content
            .due
            .map(|d| d.saturating_duration_since(Instant::now()));
        match pty::wait_readable(fd, wake.as_fd(), timeout) {
            Ok(Ready::Output) => {}
            Ok(Ready::Timeout) => {
                content.publish(shared, term);
                continue;
            }
            Ok(Ready::Woken) | Err(_) => break,
        }
        let (n, gone) = read_batch(fd, &mut buf);
        if n > 0 {
            let chunk = &buf[..n];
            let base = {
                let mut st = term.lock();
                let base = st.ring.end();
                st.ring.append(chunk);
                base
            };
            // The log is written before marks are handled, so an `exec` answer implies the
            // command's output is in the file.
            if let Some(f) = log.as_mut() {
                write_log(f, term, chunk);
            }
            // A shell without integration has no prompt mark: its first output is READY.
            if !term.integrable && term.vehicle() == super::Vehicle::Booting {
                term.to_vehicle(shared, super::Vehicle::Ready);
            }
            scanner.feed(base, chunk, &mut marks);
            for m in marks.drain(..) {
                term.on_mark(shared, m);
            }
            content.after_output(shared, term);
        }
        if gone {
            break;
        }
    }
    if content.due.is_some() {
        publish_content(shared, term);
    }
}

/// Read what the PTY has, up to `buf`'s size: how many bytes, and whether the terminal is
/// gone.
fn read_batch(fd: std::os::fd::BorrowedFd<'_>, buf: &mut [u8]) -> (usize, bool) {
    let mut n = 0;
    while n < buf.len() {
        match pty::read_some(fd, &mut buf[n..]) {
            Read::Bytes(k) => {
                n += k;
                // Less than the line discipline's buffer: it was drained just now, so go
                // back to `poll` rather than pay a read that says EAGAIN.
                if k < KERNEL_CHUNK {
                    break;
                }
            }
            Read::Empty => break,
            Read::Closed => return (n, true),
        }
    }
    (n, false)
}

/// Append `chunk` to the terminal's log, saying when writing fails and when it resumes.
fn write_log(f: &mut LogFile, term: &Terminal, chunk: &[u8]) {
    match f.write_or_skip(chunk, std::time::Instant::now()) {
        LogWrite::Written | LogWrite::Skipped => {}
        LogWrite::Failed(e) => {
            tracing::warn!(terminal = term.id, error = %e, "terminal log write failed; output is dropped from the log until a retry succeeds (every {} s)", LOG_RETRY.as_secs());
        }
        LogWrite::Resumed { lost } => {
            tracing::warn!(
                terminal = term.id,
                lost,
                "terminal log writable again; {lost} bytes of output are missing from it"
            );
        }
    }
}

/// `vehicle.<id>.content` at most every [`CONTENT_EVERY`]: output within that is announced
/// once it has passed.
#[derive(Default)]
struct Content {
    last: Option<Instant>,
    due: Option<Instant>,
}

impl Content {
    fn publish(&mut self, shared: &ServerState, term: &Terminal) {
        self.due = None;
        self.last = Some(Instant::now());
        publish_content(shared, term);
    }

    fn after_output(&mut self, shared: &ServerState, term: &Terminal) {
        match self.last {
            Some(t) if t.elapsed() < CONTENT_EVERY => {
                self.due.get_or_insert(t + CONTENT_EVERY);
            }
            _ => self.publish(shared, term),
        }
    }
}

/// `vehicle.<id>.content`: the spec's `{termId, size, ts}` and the extension's
/// `{terminalId, contentType, foregroundPid, basename, detectedAt, confidence}`, the content
/// type read from the terminal's foreground process.
fn publish_content(shared: &ServerState, term: &Terminal) {
    let size = term.lock().ring.end();
    let (pid, name) = foreground(term);
    shared.bus.publish_server(
        &format!("vehicle.{}.content", term.id),
        json!({"termId": term.id.to_string(), "size": size, "ts": now_ms(),
               "terminalId": term.id.to_string(), "contentType": content_type(name.as_deref()),
               "foregroundPid": pid, "basename": name,
               "detectedAt": crate::iso_now(),
               "confidence": if pid.is_some() { "high" } else { "low" }}),
    );
}

/// The foreground process group of the terminal (its leader's pid) and that process's
/// name (`/proc/<pid>/comm`).
fn foreground(term: &Terminal) -> (Option<i32>, Option<String>) {
    let Ok(pg) = nix::unistd::tcgetpgrp(term.master.get_ref()) else {
        return (None, None);
    };
    let pid = pg.as_raw();
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    (Some(pid), name)
}

/// The extension's content classes: shell, python, node, vim, htop, claude, else unknown.
pub fn content_type(name: Option<&str>) -> &'static str {
    let Some(n) = name else { return "unknown" };
    let n = n.rsplit('/').next().unwrap_or(n).to_ascii_lowercase();
    let n = n.trim_start_matches('-');
    if ["bash", "zsh", "fish", "sh", "dash", "tcsh", "csh", "ksh"].contains(&n)
        || n.starts_with("bash")
        || n.starts_with("zsh")
        || n.starts_with("sh")
    {
        "shell"
    } else if n.starts_with("python") {
        "python"
    } else if n == "node" || n == "nodejs" {
        "node"
    } else if n == "vim" || n == "nvim" || n == "vi" {
        "vim"
    } else if n == "htop" || n == "top" {
        "htop"
    } else if n.contains("claude") {
        "claude"
    } else {
        "unknown"
    }
}

/// The output file of an unwrapped terminal, `<id>.log`, capped at `cap` bytes (0: no cap).
/// When full it is renamed to `<id>.log.1` (replacing the previous generation) and a fresh
/// `<id>.log` is started, so the newest output is always at the reported path, disk use
/// stays under twice the cap, and the two files together hold the last `cap`..`2*cap`
/// bytes without a gap (`cat <id>.log.1 <id>.log`). The cut is at exactly `cap` bytes.
pub struct LogFile {
    path: PathBuf,
    file: std::fs::File,
    len: u64,
    cap: u64,
    /// Since a write failed (a full disk): when to try again, and bytes not written.
    failing: Option<(std::time::Instant, u64)>,
}

/// How often a failed terminal log (a full disk) is tried again.
pub const LOG_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// What became of one chunk of output for the log.
#[derive(Debug)]
pub enum LogWrite {
    Written,
    /// The write failed now (the first failure; later chunks are skipped until a retry).
    Failed(std::io::Error),
    /// Not written: the log is failing and the next retry is not due.
    Skipped,
    /// Written after a failure; `lost` bytes were skipped meanwhile.
    Resumed {
        lost: u64,
    },
}

impl LogFile {
    /// Create (truncate) `path`, mode 0600, never through a symlink; an older rotated
    /// generation next to it is removed.
    pub fn create(path: PathBuf, cap: u64) -> std::io::Result<LogFile> {
        let file = open_fresh(&path)?;
        match std::fs::remove_file(rotated(&path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        Ok(LogFile {
            path,
            file,
            len: 0,
            cap,
            failing: None,
        })
    }

    /// Write `data`, or skip it while the log is failing: a full disk stops the log only
    /// until a retry ([`LOG_RETRY`]) succeeds, never for good.
    pub fn write_or_skip(&mut self, data: &[u8], now: std::time::Instant) -> LogWrite {
        if let Some((retry_at, lost)) = self.failing {
            if now < retry_at {
                self.failing = Some((retry_at, lost + data.len() as u64));
                return LogWrite::Skipped;
            }
        }
        match self.write(data) {
            Ok(()) => match self.failing.take() {
                Some((_, lost)) => LogWrite::Resumed { lost },
                None => LogWrite::Written,
            },
            Err(e) => {
                let first = self.failing.is_none();
                let lost = self.failing.map_or(0, |(_, l)| l) + data.len() as u64;
                self.failing = Some((now + LOG_RETRY, lost));
                if first {
                    LogWrite::Failed(e)
                } else {
                    LogWrite::Skipped
                }
            }
        }
    }

    pub fn write(&mut self, mut data: &[u8]) -> std::io::Result<()> {
        while !data.is_empty() {
            if self.cap > 0 && self.len >= self.cap {
                if let Some(dir) = self.path.parent() {
                    openfiles_os::fsutil::verify_own_dirs(dir, 2)?; // `.claws/terminals`, `.claws`
                }
                std::fs::rename(&self.path, rotated(&self.path))?;
                self.file = open_fresh(&self.path)?;
                self.len = 0;
            }
            let room = if self.cap == 0 {
                data.len()
            } else {
                (self.cap - self.len).min(data.len() as u64) as usize
            };
            self.file.write_all(&data[..room])?;
            self.len += room as u64;
            data = &data[room..];
        }
        Ok(())
    }
}

/// `<id>.log` → `<id>.log.1`.
pub fn rotated(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".1");
    PathBuf::from(s)
}

fn open_fresh(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full disk (`/dev/full` answers every write with ENOSPC) stops the log only until a
    /// retry succeeds; the bytes skipped meanwhile are counted.
    #[test]
    fn a_full_disk_pauses_the_log_and_it_resumes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("9.log");
        let mut log = LogFile::create(path.clone(), 0).unwrap();
        log.file = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let t0 = std::time::Instant::now();
        assert!(matches!(log.write_or_skip(b"abc", t0), LogWrite::Failed(_)));
        assert!(matches!(log.write_or_skip(b"de", t0), LogWrite::Skipped));
        // Space again: the next retry writes.
        log.file = open_fresh(&path).unwrap();
        assert!(matches!(log.write_or_skip(b"f", t0), LogWrite::Skipped));
        match log.write_or_skip(b"gh", t0 + LOG_RETRY) {
            LogWrite::Resumed { lost } => assert_eq!(lost, 6),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            log.write_or_skip(b"i", t0 + LOG_RETRY),
            LogWrite::Written
        ));
        assert_eq!(std::fs::read(&path).unwrap(), b"ghi");
    }

    #[test]
    fn log_rotates_at_the_cap_without_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("7.log");
        std::fs::write(rotated(&path), b"stale").unwrap();
        let mut log = LogFile::create(path.clone(), 10).unwrap();
        assert!(!rotated(&path).exists(), "a stale generation is removed");
        let data: Vec<u8> = (0..47u8).collect();
        for piece in data.chunks(7) {
            log.write(piece).unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), &data[40..]);
        assert_eq!(std::fs::read(rotated(&path)).unwrap(), &data[30..40]);
        let mut unbounded = LogFile::create(dir.path().join("8.log"), 0).unwrap();
        unbounded.write(&data).unwrap();
        assert_eq!(std::fs::read(dir.path().join("8.log")).unwrap(), data);
    }
}
