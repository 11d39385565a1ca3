//! Line framing, the one codec every openfiles protocol uses: one JSON value per line (`\n`),
//! UTF-8, both ways, on the control socket, the Claws socket and in `queue.jsonl`.
//!
//! [`MAX_LINE`] caps what a server reads for one request; a client reading answers allows
//! [`MAX_ANSWER`] (a `readLog` or `review` answer can be large). [`Conn`] is the one blocking
//! client connection: it writes whole lines, and reads the next line with a cap, a deadline
//! and an optional interruption check (the MCP server's cancellation), so no client reader is
//! unbounded in size or time. The service's own readers are async and live with their
//! servers; they enforce the same [`MAX_LINE`].

use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Longest request line a server accepts, in bytes (without the newline).
pub const MAX_LINE: usize = 1 << 20;
/// Longest answer line a client accepts, in bytes.
pub const MAX_ANSWER: usize = 64 << 20;

/// How long one blocking read lasts before an interruption check runs.
const SLICE: Duration = Duration::from_millis(100);

/// Why no line could be read.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The peer closed the connection before a whole line arrived.
    #[error("the connection was closed")]
    Closed,
    /// The line passed the cap without a newline.
    #[error("line longer than {0} bytes")]
    TooLong(usize),
    /// The deadline passed.
    #[error("timed out")]
    Timeout,
    /// The interruption check asked to stop.
    #[error("interrupted")]
    Interrupted,
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// What to check while waiting for a line: called about every 100 ms with the time waited so
/// far; `false` stops the read with [`LineError::Interrupted`].
pub type Keep<'a> = &'a mut dyn FnMut(Duration) -> bool;

/// One blocking connection speaking lines.
pub struct Conn {
    stream: UnixStream,
    /// Bytes read past the last line returned.
    buf: Vec<u8>,
    cap: usize,
}

impl Conn {
    /// Connect to the Unix socket at `path`; answers are capped at [`MAX_ANSWER`].
    pub fn connect(path: &Path) -> io::Result<Conn> {
        Ok(Conn::new(UnixStream::connect(path)?, MAX_ANSWER))
    }

    /// Wrap a connected stream; lines longer than `cap` are refused.
    pub fn new(stream: UnixStream, cap: usize) -> Conn {
        Conn {
            stream,
            buf: Vec::new(),
            cap,
        }
    }

    /// The stream (for a second handle, peer credentials, shutdown).
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Write `line` and its newline in one write, within `timeout` (`None`: no limit).
    pub fn send(&mut self, line: &[u8], timeout: Option<Duration>) -> io::Result<()> {
        let mut out = Vec::with_capacity(line.len() + 1);
        out.extend_from_slice(line);
        out.push(b'\n');
        self.stream.set_write_timeout(timeout)?;
        self.stream.write_all(&out)
    }

    /// The next line (without its newline), waiting until `deadline` at most (`None`: no
    /// limit). `keep`, when given, is asked about every 100 ms whether to go on waiting.
    pub fn recv(
        &mut self,
        deadline: Option<Instant>,
        mut keep: Option<Keep<'_>>,
    ) -> Result<Vec<u8>, LineError> {
        let started = Instant::now();
        let mut chunk = [0u8; 64 * 1024];
        let mut scanned = 0;
        loop {
            if let Some(pos) = memchr_newline(&self.buf[scanned..]) {
                let end = scanned + pos;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                return Ok(line);
            }
            scanned = self.buf.len();
            if self.buf.len() > self.cap {
                return Err(LineError::TooLong(self.cap));
            }
            if let Some(k) = keep.as_mut() {
                if !k(started.elapsed()) {
                    return Err(LineError::Interrupted);
                }
            }
            let wait = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(LineError::Timeout);
                    }
                    Some(d - now)
                }
                None => None,
            };
            let wait = match (wait, keep.is_some()) {
                (Some(w), true) => Some(w.min(SLICE)),
                (None, true) => Some(SLICE),
                (w, false) => w,
            };
            self.stream.set_read_timeout(wait)?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(LineError::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(LineError::Io(e)),
            }
        }
    }
}

fn memchr_newline(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Conn, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        (Conn::new(a, 16), b)
    }

    #[test]
    fn reads_lines_in_order_across_writes() {
        let (mut c, mut peer) = pair();
        peer.write_all(b"{\"a\":1}\n{\"b\"").unwrap();
        peer.write_all(b":2}\n").unwrap();
        let far = Some(Instant::now() + Duration::from_secs(5));
        assert_eq!(c.recv(far, None).unwrap(), b"{\"a\":1}");
        assert_eq!(c.recv(far, None).unwrap(), b"{\"b\":2}");
    }

    #[test]
    fn a_line_past_the_cap_is_refused() {
        let (mut c, mut peer) = pair();
        peer.write_all(&[b'x'; 40]).unwrap();
        let far = Some(Instant::now() + Duration::from_secs(5));
        assert!(matches!(c.recv(far, None), Err(LineError::TooLong(16))));
    }

    #[test]
    fn the_deadline_and_the_interruption_end_a_wait() {
        let (mut c, _peer) = pair();
        let soon = Some(Instant::now() + Duration::from_millis(20));
        assert!(matches!(c.recv(soon, None), Err(LineError::Timeout)));
        let mut asked = 0;
        let mut keep = |_: Duration| {
            asked += 1;
            asked < 2
        };
        assert!(matches!(
            c.recv(None, Some(&mut keep)),
            Err(LineError::Interrupted)
        ));
    }

    #[test]
    fn a_closed_peer_is_told_apart_from_a_timeout() {
        let (mut c, peer) = pair();
        drop(peer);
        assert!(matches!(c.recv(None, None), Err(LineError::Closed)));
    }
}
