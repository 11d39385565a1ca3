//! The capture ring of one terminal: raw PTY output bytes addressed by absolute offsets
//! (offset 0 is the first byte the terminal ever wrote). When full it drops from the front,
//! so `start()` only grows. Pages handed out never cut a UTF-8 character at either end.

use std::collections::VecDeque;

/// Raw output with absolute offsets; `cap` bytes at most.
#[derive(Debug)]
pub struct Ring {
    buf: VecDeque<u8>,
    start: u64,
    cap: usize,
}

impl Ring {
    pub fn new(cap: usize) -> Ring {
        Ring {
            buf: VecDeque::with_capacity(cap.min(1 << 20)),
            start: 0,
            cap: cap.max(1),
        }
    }

    /// Offset of the oldest byte still held.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Offset one past the newest byte (the total ever written).
    pub fn end(&self) -> u64 {
        self.start + self.buf.len() as u64
    }

    pub fn append(&mut self, data: &[u8]) {
        if data.len() >= self.cap {
            self.start += (self.buf.len() + data.len() - self.cap) as u64;
            self.buf.clear();
            self.buf.extend(&data[data.len() - self.cap..]);
            return;
        }
        let over = (self.buf.len() + data.len()).saturating_sub(self.cap);
        if over > 0 {
            self.buf.drain(..over);
            self.start += over as u64;
        }
        self.buf.extend(data);
    }

    /// Bytes in `[from, to)`, clamped to what is held.
    pub fn slice(&self, from: u64, to: u64) -> Vec<u8> {
        let from = from.clamp(self.start, self.end());
        let to = to.clamp(from, self.end());
        let a = (from - self.start) as usize;
        let b = (to - self.start) as usize;
        let (x, y) = self.buf.as_slices();
        let mut out = Vec::with_capacity(b - a);
        if a < x.len() {
            out.extend_from_slice(&x[a..b.min(x.len())]);
        }
        if b > x.len() {
            out.extend_from_slice(&y[a.saturating_sub(x.len())..b - x.len()]);
        }
        out
    }

    fn byte(&self, off: u64) -> Option<u8> {
        if off < self.start || off >= self.end() {
            return None;
        }
        self.buf.get((off - self.start) as usize).copied()
    }

    /// A page `[from, to)` within `[from, from+limit)` whose ends sit on UTF-8 character
    /// boundaries: a leading partial character is skipped, a trailing one left for the next page.
    pub fn page(&self, from: u64, limit: u64) -> (u64, u64) {
        let mut from = from.clamp(self.start, self.end());
        // Skip continuation bytes at the start (at most 3).
        for _ in 0..3 {
            match self.byte(from) {
                Some(b) if b & 0xC0 == 0x80 => from += 1,
                _ => break,
            }
        }
        let mut to = from.saturating_add(limit).min(self.end());
        if to < self.end() {
            // Walk back to the lead byte of the last character; keep it only if complete.
            let mut p = to;
            for _ in 0..4 {
                if p <= from {
                    break;
                }
                p -= 1;
                let b = self.byte(p).unwrap_or(0);
                if b & 0xC0 != 0x80 {
                    let need = if b >= 0xF0 {
                        4
                    } else if b >= 0xE0 {
                        3
                    } else if b >= 0xC0 {
                        2
                    } else {
                        1
                    };
                    if p + need > to {
                        to = p;
                    }
                    break;
                }
            }
        }
        (from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_from_front_with_absolute_offsets() {
        let mut r = Ring::new(10);
        r.append(b"0123456789");
        r.append(b"abc");
        assert_eq!(r.start(), 3);
        assert_eq!(r.end(), 13);
        assert_eq!(r.slice(0, 13), b"3456789abc");
        r.append(&[b'x'; 25]);
        assert_eq!(r.start(), 28);
        assert_eq!(r.slice(28, 38), vec![b'x'; 10]);
    }

    #[test]
    fn pages_never_split_utf8() {
        let mut r = Ring::new(100);
        r.append("aé€😀b".as_bytes()); // 1 + 2 + 3 + 4 + 1
        for from in 0..r.end() {
            for limit in 1..12 {
                let (a, b) = r.page(from, limit);
                let bytes = r.slice(a, b);
                assert!(std::str::from_utf8(&bytes).is_ok(), "{from} {limit}");
            }
        }
        assert_eq!(r.page(0, 2), (0, 1));
        assert_eq!(r.page(2, 4), (3, 6));
    }
}
