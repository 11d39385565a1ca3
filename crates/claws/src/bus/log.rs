//! The bus event log under `.claws/events/default/` (the editor extension's layout: one
//! folder per stream, `default` the only one): append-only JSONL segments
//! `NNNN-<yyyy-mm-ddThh>.jsonl` (numbered from 0001, the hour they were opened), one event per
//! line. An older openfiles wrote bare `NNNN.jsonl` straight in `.claws/events/`: those are
//! moved into the stream folder once ([`stream_dir`]), numbers kept, so no event and no
//! cursor is lost. A cursor `<segment>:<offset>` names the byte
//! where an event starts; it stays valid across restarts because segments are never
//! rewritten. Every start opens a fresh segment, so a line torn by a crash is only ever the
//! last line of an old segment, and replay skips lines that do not parse. Segments rotate
//! by size and age; the oldest are deleted past the total-size bound.
//!
//! Two halves: [`Tail`], kept by the bus under its lock, decides where each event goes (its
//! cursor, and when a segment is full) without touching the disk; [`EventLog`], owned by the
//! writer thread (`writer.rs`), does the file work in the same order.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A position in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cursor {
    pub segment: u32,
    pub offset: u64,
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}:{}", self.segment, self.offset)
    }
}

impl Cursor {
    pub fn parse(s: &str) -> Option<Cursor> {
        let (a, b) = s.split_once(':')?;
        if a.is_empty() || b.is_empty() || !a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit()) {
            return None;
        }
        Some(Cursor {
            segment: a.parse().ok()?,
            offset: b.parse().ok()?,
        })
    }
}

pub struct Limits {
    pub segment_bytes: u64,
    pub segment_age: Duration,
    pub total_bytes: u64,
}

/// The disk half: the segment files.
pub struct EventLog {
    dir: PathBuf,
    limits: Limits,
    segment: u32,
    /// None when the segment could not be opened or a write to it failed: its later events
    /// are not stored (logged), so no cursor ever names a byte another event took.
    file: Option<File>,
}

/// The bus's half: where the next event starts, and when a new segment begins (by size and
/// age), decided without touching the disk.
pub struct Tail {
    segment: u32,
    size: u64,
    opened: Instant,
    segment_bytes: u64,
    segment_age: Duration,
}

impl Tail {
    /// Where the next event will start.
    pub fn position(&self) -> Cursor {
        Cursor {
            segment: self.segment,
            offset: self.size,
        }
    }

    /// Place an event line of `len` bytes (without its newline) at the end: the new segment
    /// to start first, when the current one is full or too old.
    pub fn place(&mut self, len: u64) -> Option<u32> {
        let start = self.size > 0
            && (self.size + len > self.segment_bytes || self.opened.elapsed() > self.segment_age);
        if start {
            self.segment += 1;
            self.size = 0;
            self.opened = Instant::now();
        }
        self.size += len + 1;
        start.then_some(self.segment)
    }
}

/// The number of a segment file: `NNNN-<hour>.jsonl`, or an older openfiles' `NNNN.jsonl`.
fn seg_number(name: &std::ffi::OsStr) -> Option<u32> {
    let stem = name.to_str()?.strip_suffix(".jsonl")?;
    let num = stem.split_once('-').map_or(stem, |(n, _)| n);
    if num.len() < 4 || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse().ok()
}

/// The file of segment `n` (a bare `NNNN.jsonl` name when there is none).
fn seg_path(dir: &Path, n: u32) -> PathBuf {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .find(|name| seg_number(name) == Some(n))
        .map(|name| dir.join(name))
        .unwrap_or_else(|| dir.join(format!("{n:04}.jsonl")))
}

/// Segment numbers present, ascending.
pub fn segments(dir: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| seg_number(&e.file_name()))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A new segment `n`, named as the extension names them (`0007-2026-04-28T18.jsonl`).
fn open_segment(dir: &Path, n: u32) -> io::Result<File> {
    let hour: String = openfiles_wire::spec::iso_now().chars().take(13).collect();
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(format!("{n:04}-{hour}.jsonl")))
}

/// The `default` stream's folder under `claws_dir` (`.claws/events/default`, both 0700),
/// with the segments an older openfiles left in `.claws/events/` moved into it.
pub fn stream_dir(claws_dir: &Path) -> io::Result<PathBuf> {
    let events = claws_dir.join("events");
    openfiles_os::fsutil::ensure_own_dir(&events, 0o700)?;
    let stream = events.join("default");
    openfiles_os::fsutil::ensure_own_dir(&stream, 0o700)?;
    for e in std::fs::read_dir(&events)?.flatten() {
        let name = e.file_name();
        let regular = e.file_type().is_ok_and(|t| t.is_file());
        if regular && seg_number(&name).is_some() && !stream.join(&name).exists() {
            std::fs::rename(events.join(&name), stream.join(&name))?;
        }
    }
    Ok(stream)
}

impl EventLog {
    /// Open the log in `dir` (created 0700), starting a new segment; also returns the highest
    /// sequence number stored so numbering continues.
    pub fn open(dir: &Path, limits: Limits) -> io::Result<(EventLog, u64)> {
        openfiles_os::fsutil::ensure_own_dir(dir, 0o700)?;
        let segs = segments(dir);
        let mut last_seq = 0;
        for &n in segs.iter().rev() {
            let mut max = None;
            for_each_event(dir, n, 0, u64::MAX, |_, head, _| {
                let s = head.sequence;
                max = Some(max.map_or(s, |m: u64| m.max(s)));
            })?;
            if let Some(m) = max {
                last_seq = m;
                break;
            }
        }
        let segment = segs.last().map_or(1, |l| l + 1);
        let file = open_segment(dir, segment)?;
        let mut log = EventLog {
            dir: dir.to_owned(),
            limits,
            segment,
            file: Some(file),
        };
        log.prune();
        Ok((log, last_seq))
    }

    /// The bus's half for this log, at the start of its fresh segment.
    pub fn tail(&self) -> Tail {
        Tail {
            segment: self.segment,
            size: 0,
            opened: Instant::now(),
            segment_bytes: self.limits.segment_bytes,
            segment_age: self.limits.segment_age,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Write event lines (each with its newline) at the end of the current segment. A
    /// failed write leaves the rest of the segment unstored (see `EventLog::file`).
    pub fn write(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let Some(f) = self.file.as_mut() else { return };
        if let Err(e) = f.write_all(bytes) {
            tracing::warn!(error = %e, segment = self.segment, "claws event log write failed; this segment's later events are not stored");
            self.file = None;
        }
    }

    /// Start segment `n` (the [`Tail`] decided it), then delete the oldest segments past
    /// the total bound.
    pub fn start_segment(&mut self, n: u32) {
        self.segment = n;
        // `.claws/events/default`, `.claws/events`, `.claws`: never a new segment (or a
        // prune) through a symlink.
        let opened = openfiles_os::fsutil::verify_own_dirs(&self.dir, 3)
            .and_then(|()| open_segment(&self.dir, n));
        self.file = match opened {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(error = %e, segment = n, "claws event log segment not opened; its events are not stored");
                return;
            }
        };
        self.prune();
    }

    /// Append one event line (without its newline), rotating as the bus would: the two
    /// halves in one, for tests.
    #[cfg(test)]
    fn append_placed(&mut self, tail: &mut Tail, line: &[u8]) {
        if let Some(n) = tail.place(line.len() as u64) {
            self.start_segment(n);
        }
        let mut buf = line.to_vec();
        buf.push(b'\n');
        self.write(&buf);
    }

    /// Delete segments (never the current one) last written more than `age` ago: the
    /// `retention_days` setting. Cursors into deleted segments replay from the next one.
    pub fn retain(&mut self, age: Duration) {
        for n in segments(&self.dir) {
            if n == self.segment {
                continue;
            }
            let old = std::fs::metadata(seg_path(&self.dir, n))
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|e| e > age);
            if old {
                let _ = std::fs::remove_file(seg_path(&self.dir, n));
            }
        }
    }

    /// Remove empty segments left by earlier runs (each start opens a fresh one). Segments
    /// with events are never merged: a cursor names a byte in its segment, and merging would
    /// move it.
    pub fn compact(&mut self) {
        for n in segments(&self.dir) {
            let p = seg_path(&self.dir, n);
            if n != self.segment && std::fs::metadata(&p).is_ok_and(|m| m.len() == 0) {
                let _ = std::fs::remove_file(p);
            }
        }
    }

    /// Delete the oldest segments (never the current one) while over the total bound.
    fn prune(&mut self) {
        let segs = segments(&self.dir);
        let sizes: Vec<(u32, u64)> = segs
            .iter()
            .map(|&n| {
                (
                    n,
                    std::fs::metadata(seg_path(&self.dir, n)).map_or(0, |m| m.len()),
                )
            })
            .collect();
        let mut total: u64 = sizes.iter().map(|s| s.1).sum();
        for (n, len) in sizes {
            if total <= self.limits.total_bytes || n == self.segment {
                break;
            }
            if std::fs::remove_file(seg_path(&self.dir, n)).is_ok() {
                total -= len;
            }
        }
    }
}

/// The fields of a stored event that replay needs; the rest is passed through as text.
#[derive(serde::Deserialize)]
pub struct Head<'a> {
    #[serde(borrow)]
    pub topic: std::borrow::Cow<'a, str>,
    pub sequence: u64,
}

/// Call `f(cursor, head, line)` for each well-formed event of segment `n` starting at or
/// after `from` and before `until` (byte offsets); `line` is the stored JSON object without
/// its newline. Torn or corrupt lines are skipped.
pub fn for_each_event(
    dir: &Path,
    n: u32,
    from: u64,
    until: u64,
    mut f: impl FnMut(Cursor, &Head<'_>, &[u8]),
) -> io::Result<()> {
    let mut file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(seg_path(dir, n))
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    file.seek(SeekFrom::Start(from))?;
    let mut rd = BufReader::with_capacity(256 << 10, file.take(until.saturating_sub(from)));
    let mut off = from;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n_read = rd.read_until(b'\n', &mut line)?;
        if n_read == 0 {
            break;
        }
        let at = off;
        off += n_read as u64;
        if line.last() != Some(&b'\n') {
            break; // torn last line
        }
        let body = &line[..line.len() - 1];
        if let Ok(head) = serde_json::from_slice::<Head<'_>>(body) {
            if body.first() == Some(&b'{') && body.last() == Some(&b'}') {
                f(
                    Cursor {
                        segment: n,
                        offset: at,
                    },
                    &head,
                    body,
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(dir: &Path) -> Vec<(Cursor, u64)> {
        let mut out = Vec::new();
        for n in segments(dir) {
            for_each_event(dir, n, 0, u64::MAX, |c, h, _| out.push((c, h.sequence))).unwrap();
        }
        out
    }

    #[test]
    fn rotates_by_size_and_keeps_the_total_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let ev = dir.path().join(".claws/events/default");
        std::fs::create_dir_all(&ev).unwrap();
        let limits = || Limits {
            segment_bytes: 300,
            segment_age: Duration::from_secs(3600),
            total_bytes: 1200,
        };
        let (mut log, last) = EventLog::open(&ev, limits()).unwrap();
        let mut tail = log.tail();
        assert_eq!(last, 0);
        assert_eq!(tail.position().to_string(), "0001:0");
        for seq in 1..=100u64 {
            let line = format!("{{\"sequence\":{seq},\"topic\":\"t.x\",\"payload\":{{}}}}");
            log.append_placed(&mut tail, line.as_bytes());
        }
        let segs = segments(&ev);
        assert!(
            segs.len() > 2 && segs[0] > 1,
            "oldest segments were deleted: {segs:?}"
        );
        let total: u64 = segs
            .iter()
            .map(|&n| std::fs::metadata(seg_path(&ev, n)).unwrap().len())
            .sum();
        assert!(total <= 1200 + 300, "{total}");
        let kept = events(&ev);
        let seqs: Vec<u64> = kept.iter().map(|e| e.1).collect();
        assert_eq!(*seqs.last().unwrap(), 100);
        assert!(
            seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "contiguous: {seqs:?}"
        );
        // Cursors name where each event starts.
        let (c, seq) = kept[3];
        let mut again = Vec::new();
        for_each_event(&ev, c.segment, c.offset, u64::MAX, |_, h, _| {
            again.push(h.sequence)
        })
        .unwrap();
        assert_eq!(again[0], seq);
        // Reopening continues the numbering in a new segment.
        drop(log);
        let (log, last) = EventLog::open(&ev, limits()).unwrap();
        assert_eq!(last, 100);
        assert_eq!(log.tail().position().segment, segs.last().unwrap() + 1);
    }

    /// The extension's layout, and an older openfiles' segments moved into it with their
    /// numbers (so their events and cursors stay).
    #[test]
    fn segments_live_in_the_default_stream_named_as_the_extension_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let claws = dir.path().join(".claws");
        std::fs::create_dir_all(claws.join("events")).unwrap();
        let old = "{\"sequence\":7,\"topic\":\"t.x\",\"payload\":{}}\n";
        std::fs::write(claws.join("events/0003.jsonl"), old).unwrap();
        let stream = stream_dir(&claws).unwrap();
        assert_eq!(stream, claws.join("events/default"));
        assert!(!claws.join("events/0003.jsonl").exists());
        let limits = Limits {
            segment_bytes: 1 << 20,
            segment_age: Duration::from_secs(3600),
            total_bytes: 8 << 20,
        };
        let (mut log, last) = EventLog::open(&stream, limits).unwrap();
        let mut tail = log.tail();
        assert_eq!(last, 7, "the moved segment's events are read");
        log.append_placed(
            &mut tail,
            b"{\"sequence\":8,\"topic\":\"t.x\",\"payload\":{}}",
        );
        let names: Vec<String> = std::fs::read_dir(&stream)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.contains(&"0003.jsonl".to_owned()), "{names:?}");
        let new = names
            .iter()
            .find(|n| n.starts_with("0004-"))
            .expect("a new segment");
        // `0004-2026-04-28T18.jsonl`
        assert_eq!(new.len(), "0004-2026-04-28T18.jsonl".len(), "{new}");
        assert_eq!(segments(&stream), vec![3, 4]);
        assert_eq!(events(&stream).len(), 2);
    }

    #[test]
    fn cursor_format() {
        assert_eq!(
            Cursor::parse("0003:17"),
            Some(Cursor {
                segment: 3,
                offset: 17
            })
        );
        for bad in ["", "3", ":1", "1:", "a:1", "1:-2", "1:2:3", " 1:2"] {
            assert_eq!(Cursor::parse(bad), None, "{bad}");
        }
    }
}
