//! Reading `.openfiles/queue.jsonl` without losing or repeating a line.
//!
//! Writers append one line per `write(2)` on an `O_APPEND` fd and take no lock (as the editor
//! hook does), so the reader may never truncate a file a writer could still append to. The
//! drain works by rotation instead:
//!
//! 1. Read complete lines from the saved offset; a partial last line waits for its newline.
//!    The lines go to the pipeline together with the new [`Cursor`]; the pipeline persists the
//!    cursor atomically with their effect and acknowledges it.
//! 2. Once everything read is acknowledged and the file is at EOF, rename it to
//!    `.queue-draining.jsonl`. New writers create a fresh `queue.jsonl`; a writer that opened
//!    the old file before the rename still appends to the renamed one.
//! 3. Take a write lease on the renamed file (Linux `F_SETLEASE`): granted only when no other
//!    process has it open. Then unlink it, read any last lines, and keep the fd for a grace
//!    period in case a writer that resolved the name just before the unlink appends late.
//!    Where leases are unavailable, the grace period alone protects the tail.
//!
//! Files are identified by (device, inode), so a queue replaced or truncated by someone else
//! is noticed: a new inode starts at offset 0, a shrunken file restarts at 0 with a warning.
//! After `kill -9`, the persisted cursor says exactly which lines have been applied.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use openfiles_plugin_api::confine;

use crate::diagnostics::writer::{Cursor, FilePos};
use crate::fswatch::{Delivery, Events};
use openfiles_wire::spec;

use super::SkippedLine;

/// Longest queue line accepted; longer ones are skipped as malformed.
pub const MAX_LINE: usize = 1 << 20;
/// The most read from a queue file per step (whole lines of it go to the pipeline as one
/// batch): more than [`MAX_LINE`], so a runaway line is still seen as one, and small enough
/// that the pipeline's actor, which answers `status` between batches, never holds a flood's
/// hundreds of thousands of lines at once (300 000 lines were one batch: a `status` waited
/// over 30 s behind it on a loaded machine). The next step comes with the batch's
/// acknowledgement.
const READ_CHUNK: u64 = 2 * MAX_LINE as u64;
const DRAINING: &str = ".queue-draining.jsonl";
const GRACE: Duration = Duration::from_secs(2);

/// What one step produced.
#[derive(Debug, Default)]
pub struct Step {
    /// Complete lines read (without newlines); oversized lines come skipped.
    pub lines: Lines,
    /// True when the cursor moved (lines read or a file finished): persist and acknowledge it.
    pub moved: bool,
    /// Call `step` again after this long even without a file event (lease busy, grace period).
    pub retry_in: Option<Duration>,
}

/// The reader of one workspace's queue. All methods block; run them off the async runtime.
pub struct Reader {
    queue: PathBuf,
    draining: PathBuf,
    /// Read so far (sent to the pipeline).
    pub cursor: Cursor,
    /// Persisted by the pipeline.
    pub acked: Cursor,
    /// An unlinked drained file kept open until its grace period ends.
    late: Option<(File, u64, Instant)>,
    /// The queue file last refused (a symlink, FIFO or device), warned about once.
    refused: Option<PathBuf>,
}

impl Reader {
    pub fn new(root: &Path, cursor: Cursor) -> Reader {
        let dir = root.join(spec::DIR);
        Reader {
            queue: dir.join(spec::QUEUE_FILE),
            draining: dir.join(DRAINING),
            cursor,
            acked: cursor,
            late: None,
            refused: None,
        }
    }

    /// Paths whose changes should wake the reader.
    pub fn watched_names() -> [&'static str; 2] {
        [spec::QUEUE_FILE, DRAINING]
    }

    /// Whether a name in `.openfiles/` is one of the queue files (the watcher's filter: the
    /// service's own `diagnostics.json` writes there never wake the intake).
    pub fn is_watched(name: &std::ffi::OsStr) -> bool {
        Self::watched_names().iter().any(|n| name == *n)
    }

    /// Read what is new, and rotate or finish files when everything read is persisted.
    pub fn step(&mut self) -> std::io::Result<Step> {
        let mut out = Step::default();
        if !self.dir_is_ours() {
            return Ok(out);
        }
        self.read_late(&mut out)?;
        // 1. A file being drained comes first: its lines are older.
        if self.step_draining(&mut out)? {
            return Ok(out);
        }
        // 2. The live queue, rotated once everything read is persisted.
        self.step_main(&mut out)?;
        Ok(out)
    }

    /// Whether `.openfiles/` is a real folder of ours: swapped for a symlink (or handed to
    /// another user) while serving, nothing is read, renamed or deleted through it.
    fn dir_is_ours(&mut self) -> bool {
        let Some(dir) = self.queue.parent() else {
            return true;
        };
        if let Err(why) = own_real_dir(dir) {
            if self.refused.as_deref() != Some(dir) {
                tracing::warn!(dir = %dir.display(), "{why}; the queue is not read until it is a real folder of ours again");
                self.refused = Some(dir.to_owned());
            }
            return false;
        }
        if self.refused.as_deref() == Some(dir) {
            self.refused = None;
        }
        true
    }

    /// The unlinked drained file, during its grace period: lines a late writer appended.
    fn read_late(&mut self, out: &mut Step) -> std::io::Result<()> {
        let Some((file, offset, until)) = &mut self.late else {
            return Ok(());
        };
        let (lines, new_off) = read_lines(file, *offset)?;
        if new_off != *offset {
            *offset = new_off;
            out.moved = true;
        }
        out.lines.extend(lines);
        if Instant::now() >= *until {
            self.late = None;
        } else {
            out.retry_in = Some(Duration::from_millis(200));
        }
        Ok(())
    }

    /// Read the file being drained; once everything read is persisted and no writer holds
    /// it (the lease), unlink it and keep it open for the grace period. True when this step
    /// is done with it (the live queue waits).
    fn step_draining(&mut self, out: &mut Step) -> std::io::Result<bool> {
        let Some(mut file) = open_existing(&self.draining, &mut self.refused)? else {
            if self.cursor.draining.take().is_some() {
                out.moved = true; // finished before a restart
            }
            return Ok(false);
        };
        // It may have been renamed from `queue.jsonl` just before a crash: match both.
        let pos = position(&file, &[self.cursor.draining, self.cursor.main])?;
        let (lines, offset) = read_lines(&mut file, pos.offset)?;
        let pos = FilePos { offset, ..pos };
        if self.cursor.draining != Some(pos) {
            self.cursor.draining = Some(pos);
            out.moved = true;
        }
        if !lines.is_empty() {
            out.lines.extend(lines);
            return Ok(true);
        }
        if self.acked.draining != self.cursor.draining {
            return Ok(true); // wait for the pipeline to persist what we read
        }
        let lease = take_lease(&file);
        if let Lease::Busy = lease {
            out.retry_in = Some(Duration::from_millis(5));
            return Ok(true);
        }
        std::fs::remove_file(&self.draining)?;
        let (lines, offset) = read_lines(&mut file, pos.offset)?;
        if let Lease::Held = lease {
            release_lease(&file);
        }
        out.lines.extend(lines);
        self.late = Some((file, offset, Instant::now() + GRACE));
        out.retry_in.get_or_insert(Duration::from_millis(200));
        self.cursor.draining = None;
        out.moved = true;
        Ok(true)
    }

    /// Read the live queue; at EOF with everything read persisted, rotate it.
    fn step_main(&mut self, out: &mut Step) -> std::io::Result<()> {
        let Some(mut file) = open_existing(&self.queue, &mut self.refused)? else {
            if self.cursor.main.take().is_some() {
                out.moved = true;
            }
            return Ok(());
        };
        let mut pos = position(&file, &[self.cursor.main])?;
        let size = file.metadata()?.len();
        if size < pos.offset {
            tracing::warn!(
                queue = %self.queue.display(),
                "queue file shrank under us (truncated by another program); reading it from the start"
            );
            pos.offset = 0;
        }
        let (lines, offset) = read_lines(&mut file, pos.offset)?;
        let pos = FilePos { offset, ..pos };
        if self.cursor.main != Some(pos) {
            self.cursor.main = Some(pos);
            out.moved = true;
        }
        if !lines.is_empty() {
            out.lines.extend(lines);
            return Ok(());
        }
        if pos.offset > 0 && pos.offset == size && self.acked.main == self.cursor.main {
            std::fs::rename(&self.queue, &self.draining)?;
            self.cursor.draining = self.cursor.main.take();
            self.acked.draining = self.cursor.draining;
            self.acked.main = None;
            out.moved = true;
            out.retry_in = Some(Duration::ZERO);
        }
        Ok(())
    }
}

/// Why `.openfiles/` is not read.
#[derive(Debug, thiserror::Error)]
pub enum QueueDirError {
    #[error("{} is a symlink or not a folder", .0.display())]
    NotAFolder(PathBuf),
    #[error("{} belongs to uid {uid}", dir.display())]
    NotOurs { dir: PathBuf, uid: u32 },
}

/// `Ok` when `dir` is a real directory (not a symlink) owned by us; a missing one is fine
/// (nothing to read).
fn own_real_dir(dir: &Path) -> Result<(), QueueDirError> {
    match std::fs::symlink_metadata(dir) {
        Err(_) => Ok(()),
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => {
            Err(QueueDirError::NotAFolder(dir.to_owned()))
        }
        Ok(m) if m.uid() != nix::unistd::getuid().as_raw() => Err(QueueDirError::NotOurs {
            dir: dir.to_owned(),
            uid: m.uid(),
        }),
        Ok(_) => Ok(()),
    }
}

/// Open a queue file the repository may have planted: never through a symlink, never a
/// FIFO or device (which would block or never end), without blocking. A refused file is
/// treated as absent, with one warning per path until it changes.
fn open_existing(path: &Path, refused: &mut Option<PathBuf>) -> std::io::Result<Option<File>> {
    match confine::open_regular(path, confine::Last::NoFollow) {
        Ok((f, _)) => {
            if refused.as_deref() == Some(path) {
                *refused = None;
            }
            Ok(Some(f))
        }
        Err(e) if e.is_not_found() => Ok(None),
        Err(confine::ConfineError::Io(e)) => Err(e),
        Err(e) => {
            if refused.as_deref() != Some(path) {
                tracing::warn!(queue = %path.display(), "{e}: ignored until it is replaced by a regular file");
                *refused = Some(path.to_owned());
            }
            Ok(None)
        }
    }
}

/// The saved position if it names this very file, else its start.
fn position(file: &File, saved: &[Option<FilePos>]) -> std::io::Result<FilePos> {
    let meta = file.metadata()?;
    let (dev, ino) = (meta.dev(), meta.ino());
    let born = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    Ok(saved
        .iter()
        .flatten()
        .find(|p| p.dev == dev && p.ino == ino && p.born == born)
        .copied()
        .unwrap_or(FilePos {
            dev,
            ino,
            born,
            offset: 0,
        }))
}

/// Complete lines (without newlines); an oversized one comes skipped.
pub type Lines = Vec<Result<Vec<u8>, SkippedLine>>;

/// Read complete lines from `offset`; returns them and the offset after the last newline.
fn read_lines(file: &mut File, offset: u64) -> std::io::Result<(Lines, u64)> {
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::new();
    file.take(READ_CHUNK).read_to_end(&mut buf)?;
    let Some(last_nl) = buf.iter().rposition(|&b| b == b'\n') else {
        if buf.len() > MAX_LINE {
            // A runaway line with no end in sight: skip what we have; the rest of it will be
            // rejected as a malformed line when its newline comes.
            let excerpt = super::excerpt(&buf);
            return Ok((
                vec![Err(SkippedLine::TooLong(excerpt))],
                offset + buf.len() as u64,
            ));
        }
        return Ok((Vec::new(), offset));
    };
    let lines = buf[..last_nl]
        .split(|&b| b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|l| {
            if l.len() > MAX_LINE {
                Err(SkippedLine::TooLong(super::excerpt(l)))
            } else {
                Ok(l.to_vec())
            }
        })
        .collect();
    Ok((lines, offset + last_nl as u64 + 1))
}

enum Lease {
    Held,
    Busy,
    /// Leases not supported here: rely on the grace period.
    Unsupported,
}

#[cfg(target_os = "linux")]
fn take_lease(file: &File) -> Lease {
    use std::os::unix::io::AsRawFd;
    // SAFETY: plain fcntl on an fd we own.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) };
    if rc == 0 {
        return Lease::Held;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) | Some(libc::EBUSY) => Lease::Busy,
        _ => Lease::Unsupported,
    }
}

#[cfg(target_os = "linux")]
fn release_lease(file: &File) {
    use std::os::unix::io::AsRawFd;
    // SAFETY: plain fcntl on an fd we own.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
}

#[cfg(not(target_os = "linux"))]
fn take_lease(_file: &File) -> Lease {
    Lease::Unsupported
}

#[cfg(not(target_os = "linux"))]
fn release_lease(_file: &File) {}

/// True when the delivery concerns one of the queue files (a rescan of `.openfiles/` may).
fn mentions(d: &Delivery, names: &[&str]) -> bool {
    if let Delivery::Rescan { .. } = d {
        return true;
    }
    d.paths().iter().any(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| names.contains(&n))
    })
}

/// The cursor of a workspace openfiles serves for the first time: past every complete line
/// `queue.jsonl` (and a file being drained) already holds. Those lines were written before
/// openfiles served the folder — perhaps committed with the repository — and are history,
/// never requests. A symlink or anything but a regular file is left to the reader (which
/// refuses it).
pub fn history(root: &Path) -> Cursor {
    let dir = root.join(spec::DIR);
    let at_end = |name: &str| -> Option<FilePos> {
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a symlink, never blocking on a planted FIFO.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(dir.join(name))
            .ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut pos = position(&file, &[]).ok()?;
        pos.offset = end_of_last_line(&mut file, meta.len()).ok()?;
        Some(pos)
    };
    Cursor {
        main: at_end(spec::QUEUE_FILE),
        draining: at_end(DRAINING),
    }
}

/// The offset just past the last newline of `file` (of `len` bytes), looking back at most
/// [`MAX_LINE`] bytes (a longer tail is skipped whole).
fn end_of_last_line(file: &mut File, len: u64) -> std::io::Result<u64> {
    let start = len.saturating_sub(MAX_LINE as u64 + 1);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    file.take(len - start).read_to_end(&mut tail)?;
    Ok(match tail.iter().rposition(|&b| b == b'\n') {
        Some(i) => start + i as u64 + 1,
        None if start == 0 => 0,
        None => len,
    })
}

/// Run the queue reader of one workspace until `shutdown`: wake on file events in
/// `.openfiles/`, hand lines to the pipeline, advance once the pipeline persisted them.
/// `paused` (standing back for an editor) leaves the queue to the editor.
pub fn spawn(
    root: &Path,
    cursor: Cursor,
    pipeline: crate::diagnostics::pipeline::PipelineHandle,
    paused: tokio::sync::watch::Receiver<bool>,
    fs: (&crate::fswatch::FsWatch, crate::fswatch::SubscriberId),
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), notify::Error> {
    let dir = root.join(spec::DIR);
    let (ev_tx, events) = crate::fswatch::channel();
    fs.0.watch_only(&dir, fs.1, ev_tx, Reader::is_watched)?;
    let (ack_tx, acks) = tokio::sync::mpsc::unbounded_channel();
    let reader = Reader::new(root, cursor);
    // Read what is there at start; with no queue file (checked after the watch is set, so
    // one created now still wakes us) there is nothing to read: no blocking task at all,
    // which matters when 1 000 workspaces start together.
    let queued = [&reader.queue, &reader.draining]
        .iter()
        .any(|p| std::fs::symlink_metadata(p).is_ok());
    let intake = Intake {
        reader: Some(reader),
        pipeline,
        paused,
        events,
        acks,
    };
    tokio::spawn(async move {
        // First, before any line is sent: the acks must reach this task.
        intake.pipeline.attach_intake(ack_tx).await;
        intake.run(queued.then_some(Duration::ZERO), shutdown).await;
    });
    Ok(())
}

/// The queue intake's task: what wakes it, and the reader between its blocking steps.
struct Intake {
    /// Away (in `spawn_blocking`) during a step.
    reader: Option<Reader>,
    pipeline: crate::diagnostics::pipeline::PipelineHandle,
    paused: tokio::sync::watch::Receiver<bool>,
    events: Events,
    acks: tokio::sync::mpsc::UnboundedReceiver<Cursor>,
}

impl Intake {
    async fn run(
        mut self,
        mut retry: Option<Duration>,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        let names = Reader::watched_names();
        loop {
            let sleep = async {
                match retry {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                Some(d) = self.events.recv() => {
                    let mut relevant = mentions(&d, &names);
                    while let Some(more) = self.events.try_recv() {
                        relevant |= mentions(&more, &names);
                    }
                    if !relevant {
                        continue;
                    }
                }
                Some(c) = self.acks.recv() => {
                    let mut c = c;
                    while let Ok(more) = self.acks.try_recv() { c = more; }
                    if let Some(r) = self.reader.as_mut() { r.acked = c; }
                }
                Ok(()) = self.paused.changed() => {}
                _ = sleep => {}
            }
            retry = None;
            if *self.paused.borrow() {
                continue;
            }
            // Backpressure: one batch in flight. Until the pipeline has persisted what was
            // sent, read nothing more (the ack wakes us); a flood then arrives as fewer,
            // larger batches instead of an ever-growing backlog in front of `status`.
            if self.reader.as_ref().is_some_and(|r| r.cursor != r.acked) {
                continue;
            }
            match self.step().await {
                Some(next) => retry = next,
                None => return,
            }
        }
    }

    /// One blocking step off the runtime, its lines handed to the pipeline. `None` when the
    /// runtime is shutting down; else when to step again without an event.
    async fn step(&mut self) -> Option<Option<Duration>> {
        let mut r = self.reader.take()?;
        let (r, step) = tokio::task::spawn_blocking(move || {
            let s = r.step();
            (r, s)
        })
        .await
        .ok()?;
        let retry = match step {
            Ok(step) => {
                if step.moved || !step.lines.is_empty() {
                    let lines = super::parse_lines(step.lines)
                        .into_iter()
                        .map(|l| l.map_err(|e| e.to_string()))
                        .collect();
                    self.pipeline.queue_lines(lines, r.cursor).await;
                }
                step.retry_in
            }
            Err(e) => {
                tracing::error!(root = %self.pipeline.root.display(), "reading the queue failed: {e}; retrying in 1 s");
                Some(Duration::from_secs(1))
            }
        };
        self.reader = Some(r);
        Some(retry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn append(path: &Path, text: &str) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// Drive the reader like the pipeline does: every step's cursor is acknowledged at once.
    fn drain(r: &mut Reader) -> Vec<String> {
        let mut all = Vec::new();
        for _ in 0..20 {
            let s = r.step().unwrap();
            all.extend(
                s.lines
                    .into_iter()
                    .map(|l| String::from_utf8(l.unwrap()).unwrap()),
            );
            r.acked = r.cursor;
            if !s.moved && s.retry_in.is_none() {
                break;
            }
        }
        all
    }

    #[test]
    fn partial_line_waits_and_rotation_keeps_everything() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(".openfiles")).unwrap();
        let q = t.path().join(".openfiles/queue.jsonl");
        let mut r = Reader::new(t.path(), Cursor::default());
        append(&q, "a\nb\npart");
        assert_eq!(drain(&mut r), vec!["a", "b"]);
        append(&q, "ial\n");
        assert_eq!(drain(&mut r), vec!["partial"]);
        append(&q, "c\n");
        assert_eq!(drain(&mut r), vec!["c"]);
    }

    /// A flood is read in chunks of at most [`READ_CHUNK`], each step's lines whole, and
    /// every line exactly once across the steps.
    #[test]
    fn a_flood_is_read_in_bounded_steps_and_loses_no_line() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(".openfiles")).unwrap();
        let q = t.path().join(".openfiles/queue.jsonl");
        let mut r = Reader::new(t.path(), Cursor::default());
        assert!(drain(&mut r).is_empty());
        let lines: Vec<String> = (0..60_000).map(|i| format!("{{\"n\":{i:0>80}}}")).collect();
        append(&q, &(lines.join("\n") + "\n"));
        let (mut got, mut steps) = (Vec::new(), 0);
        loop {
            let s = r.step().unwrap();
            r.acked = r.cursor;
            if s.lines.is_empty() {
                break;
            }
            let bytes: usize = s.lines.iter().map(|l| l.as_ref().unwrap().len() + 1).sum();
            assert!(bytes as u64 <= READ_CHUNK, "{bytes}");
            got.extend(
                s.lines
                    .into_iter()
                    .map(|l| String::from_utf8(l.unwrap()).unwrap()),
            );
            steps += 1;
        }
        assert!(steps > 1, "{steps}");
        assert_eq!(got, lines);
    }

    /// What a queue held before openfiles first served the folder is skipped; a line still
    /// being written, and what comes after, are read; a planted FIFO does not block.
    #[test]
    fn history_is_skipped_and_new_lines_are_read() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(".openfiles")).unwrap();
        let q = t.path().join(".openfiles/queue.jsonl");
        append(&q, "old1\nold2\npart");
        let mut r = Reader::new(t.path(), history(t.path()));
        assert!(drain(&mut r).is_empty());
        append(&q, "ial\nnew\n");
        assert_eq!(drain(&mut r), vec!["partial", "new"]);
        // (the reader may have moved it aside to drain it)
        let _ = std::fs::remove_file(&q);
        nix::unistd::mkfifo(&q, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert_eq!(history(t.path()), Cursor::default());
    }

    #[test]
    fn replaced_file_starts_at_zero() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(".openfiles")).unwrap();
        let q = t.path().join(".openfiles/queue.jsonl");
        append(&q, "one\n");
        let mut r = Reader::new(t.path(), Cursor::default());
        r.step().unwrap();
        // Someone replaces the file before we rotate.
        std::fs::remove_file(&q).unwrap();
        append(&q, "two\n");
        assert_eq!(drain(&mut r), vec!["two"]);
    }

    #[test]
    fn restart_resumes_from_persisted_cursor() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join(".openfiles")).unwrap();
        let q = t.path().join(".openfiles/queue.jsonl");
        append(&q, "one\n");
        let mut r = Reader::new(t.path(), Cursor::default());
        let s = r.step().unwrap();
        assert_eq!(s.lines.len(), 1);
        let persisted = r.cursor; // the pipeline persisted this, then the process died
        append(&q, "two\n");
        let mut r2 = Reader::new(t.path(), persisted);
        assert_eq!(drain(&mut r2), vec!["two"]);
    }
}
