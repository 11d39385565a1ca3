//! Where openfiles keeps things on this machine: the control socket, the config file and
//! the state directory. Every other module asks here instead of building paths itself.
//!
//! - control socket: `--socket` / `OPENFILES_SOCKET`, else `$XDG_RUNTIME_DIR/openfiles/openfiles.sock`,
//!   else `$TMPDIR/openfiles-<uid>/openfiles.sock` (created 0700 and checked to be ours);
//! - config: `--config` / `OPENFILES_CONFIG`, else the platform config dir (`directories`),
//!   e.g. `~/.config/openfiles/config.toml`;
//! - state: `OPENFILES_STATE_DIR`, else the XDG state dir (`~/.local/state/openfiles`), else the
//!   platform data dir.

use std::path::{Path, PathBuf};

/// File name of the control socket inside its directory.
pub const SOCKET_NAME: &str = "openfiles.sock";

/// The control socket path, honouring an explicit override.
pub fn control_socket(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_owned();
    }
    if let Some(p) = std::env::var_os("OPENFILES_SOCKET").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    runtime_dir().join(SOCKET_NAME)
}

/// The per-user runtime directory for openfiles (not created here).
pub fn runtime_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("openfiles"),
        None => std::env::temp_dir().join(format!("openfiles-{}", nix::unistd::getuid())),
    }
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "openfiles")
}

/// The user's config file path (it may not exist).
pub fn config_file(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_owned());
    }
    if let Some(p) = std::env::var_os("OPENFILES_CONFIG").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    project_dirs().map(|d| d.config_dir().join("config.toml"))
}

/// The state directory (not created here).
pub fn state_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("OPENFILES_STATE_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(d) = project_dirs() {
        if let Some(s) = d.state_dir() {
            return s.to_owned();
        }
        return d.data_local_dir().to_owned();
    }
    std::env::temp_dir().join(format!("openfiles-state-{}", nix::unistd::getuid()))
}

/// The service's own log file when it runs without journald (rotated once, to `.1`).
pub const SERVICE_LOG: &str = "serve.log";

/// `<file>` → `<file>.1`, the one older generation of a rotated log.
pub fn rotated(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".1");
    PathBuf::from(s)
}
