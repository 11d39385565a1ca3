//! PTY creation and the shell process: `openpty`, then the shell's command from the gate
//! (`openfiles_gate::Program`, the user's scope: "terminal shell") whose
//! `pre_exec` (between fork and exec, async-signal-safe calls only) starts a new session and
//! makes the slave the controlling terminal. The master is close-on-exec and non-blocking;
//! input is written at once when the master takes it ([`write_now`]), else through tokio's
//! `AsyncFd` (registered for writability only); output is read by the terminal's reader
//! thread with `poll` + `read` ([`wait_readable`], [`read_some`]), so neither path costs
//! reactor wake-ups or task hand-offs.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::pty::{openpty, Winsize};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use openfiles_gate::{spawn, Program, Scope};

/// What to run in the PTY.
pub struct Spawn<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a BTreeMap<String, String>,
    pub cols: u16,
    pub rows: u16,
    /// Keep the tty's output post-processing (`OPOST`: `\n` → `\r\n`). Off makes the kernel's
    /// output path several times cheaper but programs' `\n` arrives as a bare `\n`.
    pub opost: bool,
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
    if !s.opost {
        use nix::sys::termios::{tcgetattr, tcsetattr, OutputFlags, SetArg};
        let mut t = tcgetattr(&pty.slave).map_err(io::Error::from)?;
        t.output_flags.remove(OutputFlags::OPOST);
        tcsetattr(&pty.slave, SetArg::TCSANOW, &t).map_err(io::Error::from)?;
    }
    let flags = OFlag::from_bits_truncate(
        fcntl(pty.master.as_fd(), FcntlArg::F_GETFL).map_err(io::Error::from)?,
    );
    fcntl(
        pty.master.as_fd(),
        FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK),
    )
    .map_err(io::Error::from)?;

    // The user's own shell (a terminal is theirs, whichever workspace it opens in), through
    // the gate: an absolute path, or a name found on PATH's absolute entries.
    let scope = Scope::user();
    let program = match s.program.to_str() {
        Some(name) if !name.contains('/') => Program::find(name, &scope, "terminal shell"),
        _ => Program::at(s.program, &scope, "terminal shell"),
    }
    .map_err(|e| io::Error::new(io::ErrorKind::NotFound, format!("terminal shell: {e}")))?;
    let mut cmd = tokio::process::Command::from(program.command(s.args));
    // The terminal's environment is the one `shell::base_env` made, less what the gate
    // keeps from every child of the user's (the service manager's handshakes, relative
    // PATH entries).
    cmd.env_clear().envs(s.env);
    for (k, v) in spawn::environment(&scope, |k| s.env.get(k).map(Into::into)) {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    cmd.current_dir(s.cwd)
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
        // Writable interest only: the reader thread reads, and read readiness must not wake
        // the reactor for every chunk of output.
        // SAFETY: the OwnedFd stays open for as long as the AsyncFd that owns it.
        master: unsafe { AsyncFd::register_with_interest(pty.master, Interest::WRITABLE) }
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

/// What [`wait_readable`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Ready {
    /// The master has output (or a hang-up, which the next read reports).
    Output,
    /// The wake-up fd became readable.
    Woken,
    Timeout,
}

/// Block until `master` is readable, `wake` is readable, or `timeout` passes (`None`: no limit).
pub fn wait_readable(
    master: BorrowedFd<'_>,
    wake: BorrowedFd<'_>,
    timeout: Option<Duration>,
) -> io::Result<Ready> {
    let ms = timeout.map_or(-1, |t| t.as_millis().clamp(1, i32::MAX as u128) as i32);
    let mut fds = [
        libc::pollfd {
            fd: master.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(if fds[1].revents != 0 {
            Ready::Woken
        } else if fds[0].revents != 0 {
            Ready::Output
        } else {
            Ready::Timeout
        });
    }
}

/// What [`read_some`] got.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    Bytes(usize),
    /// Nothing buffered right now.
    Empty,
    /// The slave side is gone (EIO) or the fd failed.
    Closed,
}

/// One non-blocking read from the master (the kernel hands out at most ~4 KiB per read).
pub fn read_some(master: BorrowedFd<'_>, buf: &mut [u8]) -> Read {
    loop {
        match nix::unistd::read(master, buf) {
            Ok(0) => return Read::Closed,
            Ok(n) => return Read::Bytes(n),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(nix::errno::Errno::EAGAIN) => return Read::Empty,
            Err(_) => return Read::Closed,
        }
    }
}

/// Write what the master takes of `data` now, without waiting: how many bytes (fewer when
/// the PTY's input queue filled up; 0 also when the terminal is gone, which the writer task
/// then finds out).
pub fn write_now(master: BorrowedFd<'_>, data: &[u8]) -> usize {
    let mut n = 0;
    while n < data.len() {
        match nix::unistd::write(master, &data[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    n
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
