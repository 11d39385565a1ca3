//! Getting the control socket's listener: inherited from systemd (`LISTEN_FDS`, the fd named
//! `control` or the only one), from launchd (`launch_activate_socket("Listeners")`), or bound
//! by us.
//!
//! Ownership rule: a socket handed over by systemd or launchd belongs to them, so we never
//! unlink its path; a socket we bound ourselves is removed at shutdown. Binding refuses to
//! replace a live instance (a connect succeeds) and removes a stale file (connect refused).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::{FromRawFd, RawFd};
use std::os::unix::net::{UnixListener as StdListener, UnixStream as StdStream};
use std::path::{Path, PathBuf};

use openfiles_os::fsutil;

/// How the listener was obtained (`autostarted` is never this module's answer).
pub use openfiles_wire::control::Activation;

#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    #[error("another openfiles service is already answering on {0}; stop it first (openfiles status shows it)")]
    Live(PathBuf),
    #[error("systemd passed {count} sockets and none is named `control` (names: {names})")]
    NoControlFd { count: usize, names: String },
    #[error("cannot use inherited socket fd {fd}: {source}")]
    Inherited { fd: RawFd, source: io::Error },
    #[error("cannot prepare socket directory {dir}: {source}")]
    Dir { dir: PathBuf, source: io::Error },
    #[error("cannot bind {path}: {source}")]
    Bind { path: PathBuf, source: io::Error },
    #[error("launchd activation failed: {0}")]
    Launchd(io::Error),
}

/// The control listener and where it came from.
#[derive(Debug)]
pub struct ControlListener {
    pub listener: StdListener,
    pub activation: Activation,
    /// The socket path (what clients connect to).
    pub path: PathBuf,
}

impl ControlListener {
    /// Remove the socket file at shutdown if we created it.
    pub fn cleanup(&self) {
        if let Some(file) = self.own_file() {
            file.remove();
        }
    }

    /// The socket file we bound (`None` when systemd or launchd own it).
    pub fn own_file(&self) -> Option<OwnSocketFile> {
        if self.activation != Activation::Bound {
            return None;
        }
        Some(OwnSocketFile {
            path: self.path.clone(),
            id: file_id(&self.path),
        })
    }
}

/// The control socket file a service bound, and which file it was.
#[derive(Debug, Clone)]
pub struct OwnSocketFile {
    path: PathBuf,
    id: Option<(u64, u64)>,
}

impl OwnSocketFile {
    /// Remove it — only while it is still the file we bound: an autostarted service that
    /// stopped answering may already have a successor listening at the same path.
    pub fn remove(&self) {
        if self.id.is_some() && file_id(&self.path) == self.id {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// Obtain the control listener: inherited if the service manager passed one, else bound at
/// `path`.
pub fn control_listener(path: &Path) -> Result<ControlListener, ActivationError> {
    if let Some(listener) = from_systemd()? {
        return Ok(ControlListener {
            path: local_path(&listener).unwrap_or_else(|| path.to_owned()),
            listener,
            activation: Activation::Systemd,
        });
    }
    if let Some(listener) = from_launchd()? {
        return Ok(ControlListener {
            path: local_path(&listener).unwrap_or_else(|| path.to_owned()),
            listener,
            activation: Activation::Launchd,
        });
    }
    Ok(ControlListener {
        listener: bind_private(path)?,
        activation: Activation::Bound,
        path: path.to_owned(),
    })
}

fn local_path(listener: &StdListener) -> Option<PathBuf> {
    listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(Path::to_owned))
}

fn from_systemd() -> Result<Option<StdListener>, ActivationError> {
    // `true`: unset LISTEN_* so no child process (plugin host, terminal) inherits them.
    let fds: Vec<(RawFd, String)> = match sd_notify::listen_fds_with_names(true) {
        Ok(fds) => fds.collect(),
        Err(_) => return Ok(None),
    };
    let fd = match fds.as_slice() {
        [] => return Ok(None),
        [(fd, _)] => *fd,
        many => match many.iter().find(|(_, name)| name == "control") {
            Some((fd, _)) => *fd,
            None => {
                return Err(ActivationError::NoControlFd {
                    count: many.len(),
                    names: many
                        .iter()
                        .map(|(_, n)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(","),
                })
            }
        },
    };
    // SAFETY: systemd passed this fd to us for our exclusive use (LISTEN_PID matched).
    let listener = unsafe { StdListener::from_raw_fd(fd) };
    listener
        .set_nonblocking(true)
        .map_err(|source| ActivationError::Inherited { fd, source })?;
    Ok(Some(listener))
}

#[cfg(target_os = "macos")]
fn from_launchd() -> Result<Option<StdListener>, ActivationError> {
    use std::ffi::CString;
    extern "C" {
        fn launch_activate_socket(
            name: *const libc::c_char,
            fds: *mut *mut libc::c_int,
            cnt: *mut libc::size_t,
        ) -> libc::c_int;
    }
    let name = CString::new("Listeners").expect("static name has no NUL");
    let mut fds: *mut libc::c_int = std::ptr::null_mut();
    let mut count: libc::size_t = 0;
    // SAFETY: documented launchd API; on success `fds` is a malloc'd array of `count` fds.
    let rc = unsafe { launch_activate_socket(name.as_ptr(), &mut fds, &mut count) };
    if rc == libc::ESRCH || rc == libc::ENOENT {
        return Ok(None); // not started by launchd, or no such socket entry
    }
    if rc != 0 {
        return Err(ActivationError::Launchd(io::Error::from_raw_os_error(rc)));
    }
    if count == 0 || fds.is_null() {
        return Ok(None);
    }
    // SAFETY: launchd gave us `count` valid fds; we take the first and free the array.
    let fd = unsafe { *fds };
    unsafe { libc::free(fds.cast()) };
    let listener = unsafe { StdListener::from_raw_fd(fd) };
    listener
        .set_nonblocking(true)
        .map_err(|source| ActivationError::Inherited { fd, source })?;
    Ok(Some(listener))
}

#[cfg(not(target_os = "macos"))]
fn from_launchd() -> Result<Option<StdListener>, ActivationError> {
    Ok(None)
}

/// Bind a Unix socket at `path` in a 0700 directory with mode 0600, refusing to replace a
/// live server and removing a stale file. Used for the control socket and Claws sockets.
pub fn bind_private(path: &Path) -> Result<StdListener, ActivationError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fsutil::ensure_private_dir(dir, 0o700).map_err(|source| ActivationError::Dir {
        dir: dir.to_owned(),
        source,
    })?;
    if std::fs::symlink_metadata(path).is_ok() {
        match StdStream::connect(path) {
            Ok(_) => return Err(ActivationError::Live(path.to_owned())),
            Err(_) => {
                tracing::info!(path = %path.display(), "removing stale socket file");
                let _ = std::fs::remove_file(path);
            }
        }
    }
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    let bound = StdListener::bind(path);
    nix::sys::stat::umask(old);
    let listener = bound.map_err(|source| ActivationError::Bind {
        path: path.to_owned(),
        source,
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|source| {
        ActivationError::Bind {
            path: path.to_owned(),
            source,
        }
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| ActivationError::Bind {
            path: path.to_owned(),
            source,
        })?;
    Ok(listener)
}
