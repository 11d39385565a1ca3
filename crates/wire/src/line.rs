//! Line framing, the one codec every openfiles protocol uses: one JSON value per line (`\n`),
//! UTF-8, both ways, on the control socket, the Claws socket and in `queue.jsonl`.
//!
//! [`MAX_LINE`] caps what a server reads for one request; a client reading answers allows
//! [`MAX_ANSWER`] (a `readLog` or `review` answer can be large). [`Conn`] is the one blocking
//! client connection: it writes whole lines, and reads the next line with a cap, a deadline
//! and an optional interruption check (the MCP server's cancellation), so no client reader is
//! unbounded in size or time. The service's own readers are async and live with their
//! servers; they enforce the same [`MAX_LINE`].
//!
//! # Whom a client talks to
//!
//! Every client (the hook, `openfiles claws`, the MCP server, `review`, `status`, `doctor`, …)
//! connects through [`Conn::connect`] (or [`connect_ours`] for a bare stream), which talks only
//! to a socket that is the user's own. Before anything is sent:
//!
//! 1. the socket file (symlinks followed) is owned by the user — else
//!    [`ConnectError::NotOurs`] naming the socket and its owner;
//! 2. the folder it really lives in (the parent of the path with every symlink resolved) is
//!    owned by the user or by root, and no one else can write in it: neither group- nor
//!    other-writable, unless it is sticky *and* root-owned (`/tmp`: others may create names
//!    there but not remove or rename ours) — else [`ConnectError::NotOurs`] naming the
//!    folder and its owner, or [`ConnectError::OpenFolder`] with its mode;
//! 3. once connected, the process that listens (its credentials: `SO_PEERCRED` on Linux,
//!    `getpeereid` elsewhere) runs as the user — else [`ConnectError::Peer`]. A socket
//!    activated by the user's systemd or launchd reports the user's manager, so it passes
//!    before the service has even started.
//!
//! "The user" is the real uid of the client process. The peer check is the one that holds
//! even if a name is swapped between the checks and the connect: it is asked of the
//! connected descriptor itself. The path checks say earlier and more plainly why a place is
//! refused (a socket planted in a folder someone else controls), and keep a client from
//! connecting to it at all. The messages say why: "{path} belongs to uid N, not you;
//! refusing to talk to it".

use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
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

/// Why a client did not connect to a socket (see the module's header for the rule).
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Nothing to talk to: no such socket, nobody listening, no access.
    #[error("cannot connect to {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// The socket, or the folder it lives in, belongs to someone else.
    #[error("{} belongs to uid {owner}, not you; refusing to talk to it", .path.display())]
    NotOurs { path: PathBuf, owner: u32 },
    /// The folder the socket lives in can be written by others.
    #[error(
        "{} can be written by other users (mode {mode:04o}); refusing to talk to the socket {} in it",
        .dir.display(),
        .path.display()
    )]
    OpenFolder {
        path: PathBuf,
        dir: PathBuf,
        mode: u32,
    },
    /// The process listening on the socket runs as someone else.
    #[error("{} is served by uid {uid}, not you; refusing to talk to it", .path.display())]
    Peer { path: PathBuf, uid: u32 },
}

impl ConnectError {
    /// Whether the socket was refused (someone else's), not merely unreachable.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, ConnectError::Io { .. })
    }
}

/// What the rule says of a folder holding a socket, from its owner and mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderVerdict {
    Ours,
    /// Owned by neither the user nor root.
    Foreign,
    /// Group- or other-writable, and not a sticky folder of root's.
    Open,
}

/// The folder rule of the module's header: owned by `me` or root, and not writable by
/// group or others unless sticky and root-owned.
pub fn judge_folder(me: u32, owner: u32, mode: u32) -> FolderVerdict {
    if owner != me && owner != 0 {
        return FolderVerdict::Foreign;
    }
    let sticky_root = mode & 0o1000 != 0 && owner == 0;
    if mode & 0o022 != 0 && !sticky_root {
        return FolderVerdict::Open;
    }
    FolderVerdict::Ours
}

/// The real uid of this process.
fn my_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The uid of the process at the other end of `stream` (for a listening socket: whoever
/// called `listen`).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: a valid socket descriptor, and a buffer of `len` bytes for SO_PEERCRED's ucred.
    let r = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cred.uid)
}

/// The uid of the process at the other end of `stream` (for a listening socket: whoever
/// called `listen`).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: a valid socket descriptor and two out-parameters of the right types.
    let r = unsafe { libc::getpeereid(stream.as_raw_fd(), &mut uid, &mut gid) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(uid)
}

/// Connect to the socket at `path` only if it is the user's own (the module header's rule):
/// the socket and its folder checked before connecting, the listening process after.
pub fn connect_ours(path: &Path) -> Result<UnixStream, ConnectError> {
    let io = |source: io::Error| ConnectError::Io {
        path: path.to_owned(),
        source,
    };
    let me = my_uid();
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.uid() != me {
        return Err(ConnectError::NotOurs {
            path: path.to_owned(),
            owner: meta.uid(),
        });
    }
    let real = std::fs::canonicalize(path).map_err(io)?;
    let dir = real.parent().unwrap_or(Path::new("/"));
    let dir_meta = std::fs::metadata(dir).map_err(io)?;
    match judge_folder(me, dir_meta.uid(), dir_meta.mode()) {
        FolderVerdict::Ours => {}
        FolderVerdict::Foreign => {
            return Err(ConnectError::NotOurs {
                path: dir.to_owned(),
                owner: dir_meta.uid(),
            })
        }
        FolderVerdict::Open => {
            return Err(ConnectError::OpenFolder {
                path: path.to_owned(),
                dir: dir.to_owned(),
                mode: dir_meta.mode() & 0o7777,
            })
        }
    }
    let stream = UnixStream::connect(path).map_err(io)?;
    let uid = peer_uid(&stream).map_err(io)?;
    if uid != me {
        return Err(ConnectError::Peer {
            path: path.to_owned(),
            uid,
        });
    }
    Ok(stream)
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
    /// Connect to the Unix socket at `path` if it is the user's own (see the module's
    /// header); answers are capped at [`MAX_ANSWER`].
    pub fn connect(path: &Path) -> Result<Conn, ConnectError> {
        Ok(Conn::new(connect_ours(path)?, MAX_ANSWER))
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
    fn the_folder_rule() {
        let me = 1000;
        assert_eq!(judge_folder(me, me, 0o40700), FolderVerdict::Ours);
        assert_eq!(judge_folder(me, me, 0o40755), FolderVerdict::Ours);
        assert_eq!(judge_folder(me, 0, 0o40755), FolderVerdict::Ours);
        // /tmp: sticky and root's.
        assert_eq!(judge_folder(me, 0, 0o41777), FolderVerdict::Ours);
        assert_eq!(judge_folder(me, 1001, 0o40700), FolderVerdict::Foreign);
        assert_eq!(judge_folder(me, 1001, 0o41777), FolderVerdict::Foreign);
        assert_eq!(judge_folder(me, me, 0o40777), FolderVerdict::Open);
        assert_eq!(judge_folder(me, me, 0o40770), FolderVerdict::Open);
        assert_eq!(judge_folder(me, 0, 0o40777), FolderVerdict::Open);
        // Sticky but not root's: its owner's friends still write there.
        assert_eq!(judge_folder(me, me, 0o41777), FolderVerdict::Open);
        // Root is "the user" for root's own clients.
        assert_eq!(judge_folder(0, 0, 0o40700), FolderVerdict::Ours);
    }

    #[test]
    fn our_own_socket_is_talked_to_and_one_in_an_open_folder_is_not() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut c = Conn::connect(&path).unwrap();
        c.send(b"{}", None).unwrap();
        // Through a symlink to it: the real folder is judged, and it is ours.
        let other = tempfile::tempdir().unwrap();
        let link = other.path().join("link.sock");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(Conn::connect(&link).is_ok());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        for p in [&path, &link] {
            let err = Conn::connect(p).err().unwrap();
            assert!(
                matches!(err, ConnectError::OpenFolder { mode: 0o777, .. }),
                "{err}"
            );
            assert!(err.is_refusal());
            assert!(err.to_string().contains("refusing"), "{err}");
        }
        let missing = Conn::connect(&dir.path().join("none.sock")).err().unwrap();
        assert!(!missing.is_refusal(), "{missing}");
    }

    #[test]
    fn a_socket_or_folder_of_another_uid_is_refused() {
        // chown needs root (as the suite runs); a peer of another uid is tested with
        // setpriv in the service crate's `hostile_sockets`.
        if my_uid() != 0 {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
        let err = Conn::connect(&path).err().unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "{} belongs to uid 65534, not you; refusing to talk to it",
                path.display()
            )
        );
        std::os::unix::fs::chown(&path, Some(0), None).unwrap();
        std::os::unix::fs::chown(dir.path(), Some(65534), None).unwrap();
        let err = Conn::connect(&path).err().unwrap();
        assert!(
            matches!(&err, ConnectError::NotOurs { path, owner: 65534 } if path == dir.path()),
            "{err}"
        );
    }

    #[test]
    fn a_closed_peer_is_told_apart_from_a_timeout() {
        let (mut c, peer) = pair();
        drop(peer);
        assert!(matches!(c.recv(None, None), Err(LineError::Closed)));
    }
}
