//! Reading the hook payload from stdin: to EOF, for at most [`STDIN_LIMIT`], at most
//! [`MAX_INPUT`] bytes. A terminal on stdin counts as empty (someone ran the hook by hand),
//! and so does a closed or unreadable stdin. Blocking `poll(2)` + `read(2)`, no threads.

use std::io::Read;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// How long the hook waits for its payload.
pub const STDIN_LIMIT: Duration = Duration::from_secs(3);
/// Payloads larger than this are dropped whole (they would not parse anyway once cut).
pub const MAX_INPUT: usize = 64 << 20;

/// Read stdin as the hook contract says; never fails, never blocks past `limit`.
pub fn read_stdin(limit: Duration) -> Vec<u8> {
    let stdin = std::io::stdin();
    let mut lock = stdin.lock();
    let fd = stdin.as_fd();
    if nix::unistd::isatty(fd).unwrap_or(false) {
        return Vec::new();
    }
    let deadline = Instant::now() + limit;
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        match poll(&mut fds, poll_timeout(left)) {
            Ok(0) => break,
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => break,
        }
        let revents = fds[0].revents().unwrap_or(PollFlags::empty());
        if revents.contains(PollFlags::POLLNVAL) {
            break;
        }
        match lock.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > MAX_INPUT {
                    return Vec::new();
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => break,
        }
    }
    buf
}

/// A poll(2) timeout for `d`, rounded up to the next millisecond so a sub-millisecond
/// remainder does not spin.
pub fn poll_timeout(d: Duration) -> PollTimeout {
    let ms = d.as_micros().div_ceil(1000).min(i32::MAX as u128);
    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
}
