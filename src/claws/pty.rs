//! PTY creation and the shell process: `openpty`, then `tokio::process::Command` whose
//! `pre_exec` (between fork and exec, async-signal-safe calls only) starts a new session and
//! makes the slave the controlling terminal. The master is close-on-exec and non-blocking,
//! read and written through tokio's `AsyncFd`.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;

use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::pty::{openpty, Winsize};
use tokio::io::unix::AsyncFd;

/// What to run in the PTY.
pub struct Spawn<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a BTreeMap<String, String>,
    pub cols: u16,
    pub rows: u16,
}

/// A running PTY child.
pub struct PtyChild {
    pub master: AsyncFd<OwnedFd>,
    pub child: tokio::process::Child,
    pub pid: u32,
}

fn winsize(cols: u16, rows: u16) -> Winsize {
    Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

pub fn spawn(s: &Spawn<'_>) -> io::Result<PtyChild> {
    let pty = openpty(Some(&winsize(s.cols, s.rows)), None).map_err(io::Error::from)?;
    for fd in [pty.master.as_fd(), pty.slave.as_fd()] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(io::Error::from)?;
    }
    let flags = OFlag::from_bits_truncate(
        fcntl(pty.master.as_fd(), FcntlArg::F_GETFL).map_err(io::Error::from)?,
    );
    fcntl(
        pty.master.as_fd(),
        FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK),
    )
    .map_err(io::Error::from)?;

    let mut cmd = tokio::process::Command::new(s.program);
    cmd.args(s.args)
        .current_dir(s.cwd)
        .env_clear()
        .envs(s.env)
        .stdin(Stdio::from(pty.slave.try_clone()?))
        .stdout(Stdio::from(pty.slave.try_clone()?))
        .stderr(Stdio::from(pty.slave.try_clone()?))
        .kill_on_drop(false);
    // SAFETY: only async-signal-safe calls (setsid, ioctl) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop(pty.slave); // the child holds its copies; EIO on the master means every holder is gone
    let pid = child.id().unwrap_or(0);
    Ok(PtyChild {
        // SAFETY: the OwnedFd stays open for as long as the AsyncFd that owns it.
        master: unsafe { AsyncFd::register(pty.master) }
            .map_err(|e| io::Error::other(e.to_string()))?,
        child,
        pid,
    })
}

/// Tell the PTY (and so the foreground program, via SIGWINCH) its new size.
pub fn resize(master: &impl AsRawFd, cols: u16, rows: u16) -> io::Result<()> {
    let ws = winsize(cols, rows);
    // SAFETY: TIOCSWINSZ reads one Winsize from the pointer, which outlives the call.
    let rc = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ as _, &ws) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Non-blocking read from the master; `Ok(0)` means the slave side is gone (EIO).
pub async fn read(master: &AsyncFd<OwnedFd>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        let mut guard = master.readable().await?;
        match guard.try_io(|fd| nix::unistd::read(fd.get_ref(), buf).map_err(io::Error::from)) {
            Ok(Ok(n)) => return Ok(n),
            Ok(Err(e)) if e.raw_os_error() == Some(libc::EIO) => return Ok(0),
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => continue,
        }
    }
}

/// Write all of `data` to the master, waiting while the PTY input queue is full.
pub async fn write_all(master: &AsyncFd<OwnedFd>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let mut guard = master.writable().await?;
        match guard.try_io(|fd| nix::unistd::write(fd.get_ref(), data).map_err(io::Error::from)) {
            Ok(Ok(n)) => data = &data[n..],
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => {}
        }
    }
    Ok(())
}
