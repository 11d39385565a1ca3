//! Waiting for one file in one directory to change, for the fallback's wait on
//! `diagnostics.json`. On Linux this is inotify straight through `nix` (one fd, no thread,
//! no allocation per wait beyond the event buffer); elsewhere the `notify` crate's
//! recommended watcher. Writers replace `diagnostics.json` by rename (`IN_MOVED_TO`) or
//! rewrite it (`IN_CLOSE_WRITE`); both count. The watch is set up before the edit is
//! queued, so a write that lands before the first read is never missed.

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::time::Duration;

/// A watch on `dir/name`.
pub struct Watcher {
    name: OsString,
    inner: imp::Inner,
}

impl Watcher {
    /// Watch `dir` for writes of the file called `name`.
    pub fn new(dir: &Path, name: &str) -> io::Result<Watcher> {
        Ok(Watcher {
            name: OsString::from(name),
            inner: imp::Inner::new(dir)?,
        })
    }

    /// Block until `name` may have changed (true) or `timeout` passed (false).
    pub fn wait(&mut self, timeout: Duration) -> bool {
        self.inner.wait(&self.name, timeout)
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::OsStr;
    use std::io;
    use std::os::fd::AsFd;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use nix::errno::Errno;
    use nix::poll::{poll, PollFd, PollFlags};
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

    pub struct Inner {
        fd: Inotify,
    }

    impl Inner {
        pub fn new(dir: &Path) -> io::Result<Inner> {
            let fd = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK)?;
            fd.add_watch(
                dir,
                AddWatchFlags::IN_CLOSE_WRITE
                    | AddWatchFlags::IN_MOVED_TO
                    | AddWatchFlags::IN_CREATE,
            )?;
            Ok(Inner { fd })
        }

        pub fn wait(&mut self, name: &OsStr, timeout: Duration) -> bool {
            let deadline = Instant::now() + timeout;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return false;
                }
                let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
                match poll(&mut fds, super::super::input::poll_timeout(left)) {
                    Ok(0) => return false,
                    Ok(_) => {}
                    Err(Errno::EINTR) => continue,
                    Err(_) => return false,
                }
                match self.fd.read_events() {
                    Ok(events) => {
                        let hit = events.iter().any(|e| {
                            e.mask.contains(AddWatchFlags::IN_Q_OVERFLOW)
                                || e.name.as_deref() == Some(name)
                        });
                        if hit {
                            return true;
                        }
                    }
                    Err(Errno::EAGAIN) | Err(Errno::EINTR) => {}
                    Err(_) => return false,
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::ffi::OsStr;
    use std::io;
    use std::path::Path;
    use std::sync::mpsc::{channel, Receiver};
    use std::time::{Duration, Instant};

    use notify::{RecursiveMode, Watcher as _};

    pub struct Inner {
        _watcher: notify::RecommendedWatcher,
        rx: Receiver<notify::Result<notify::Event>>,
    }

    impl Inner {
        pub fn new(dir: &Path) -> io::Result<Inner> {
            let (tx, rx) = channel();
            let mut watcher = notify::recommended_watcher(tx).map_err(io::Error::other)?;
            watcher
                .watch(dir, RecursiveMode::NonRecursive)
                .map_err(io::Error::other)?;
            Ok(Inner {
                _watcher: watcher,
                rx,
            })
        }

        pub fn wait(&mut self, name: &OsStr, timeout: Duration) -> bool {
            let deadline = Instant::now() + timeout;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.rx.recv_timeout(left) {
                    Ok(Ok(event)) => {
                        if event.paths.iter().any(|p| p.file_name() == Some(name)) {
                            return true;
                        }
                    }
                    Ok(Err(_)) => return true,
                    Err(_) => return false,
                }
            }
        }
    }
}
