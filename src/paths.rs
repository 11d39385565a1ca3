//! Where openfiles keeps things on this machine: the control socket, the config file and
//! the state directory. Every other module asks here instead of building paths itself.
//!
//! - control socket: `--socket` / `OPENFILES_SOCKET`, else `$XDG_RUNTIME_DIR/openfiles/openfiles.sock`,
//!   else on macOS `~/Library/Caches/openfiles/openfiles.sock` (the place the LaunchAgent of
//!   `service install` and of the Nix modules listens on, and the one a GUI-started client
//!   finds without any variable), else `$TMPDIR/openfiles-<uid>/openfiles.sock` (created 0700
//!   and checked to be ours);
//! - config: `--config` / `OPENFILES_CONFIG`, else `$XDG_CONFIG_HOME/openfiles/config.toml`,
//!   else `~/.config/openfiles/config.toml` — on macOS too, where home-manager writes it; a
//!   macOS user whose only config is in `~/Library/Application Support/openfiles/` keeps it;
//! - state: `OPENFILES_STATE_DIR`, else the XDG state dir (`~/.local/state/openfiles`), else the
//!   platform data dir.
//!
//! The rules are functions of the environment ([`runtime_dir_in`], [`config_file_in`]), so
//! the macOS rules are tested on any machine.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Whose path rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    MacOs,
    /// Linux and the other Unixes.
    Unix,
}

impl Os {
    /// The system this binary was built for.
    pub fn native() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Unix
        }
    }
}

/// A variable of the process environment, unset when empty.
fn var(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

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
    runtime_dir_in(&var, Os::native(), nix::unistd::getuid().as_raw())
}

/// [`runtime_dir`] for the environment `env` (unset and empty variables are `None`).
pub fn runtime_dir_in(env: &dyn Fn(&str) -> Option<OsString>, os: Os, uid: u32) -> PathBuf {
    if let Some(dir) = env("XDG_RUNTIME_DIR") {
        return PathBuf::from(dir).join("openfiles");
    }
    if let (Os::MacOs, Some(home)) = (os, env("HOME")) {
        return PathBuf::from(home).join("Library/Caches/openfiles");
    }
    let tmp = env("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    tmp.join(format!("openfiles-{uid}"))
}

fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "openfiles")
}

/// The user's config file path (it may not exist).
pub fn config_file(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_owned());
    }
    let env = |name: &str| match name {
        // Without HOME, the account's home directory (as `directories` finds it).
        "HOME" => var("HOME")
            .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().as_os_str().to_owned())),
        _ => var(name),
    };
    config_file_in(&env, Os::native(), &|p| p.exists())
}

/// [`config_file`] without `--config`, for the environment `env`; `exists` tells whether a
/// file is there (only the macOS fallback asks).
pub fn config_file_in(
    env: &dyn Fn(&str) -> Option<OsString>,
    os: Os,
    exists: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    if let Some(p) = env("OPENFILES_CONFIG") {
        return Some(PathBuf::from(p));
    }
    let xdg = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    if let Some(dir) = xdg {
        return Some(dir.join("openfiles/config.toml"));
    }
    let home = PathBuf::from(env("HOME")?);
    let file = home.join(".config/openfiles/config.toml");
    if os == Os::MacOs && !exists(&file) {
        let legacy = home.join("Library/Application Support/openfiles/config.toml");
        if exists(&legacy) {
            return Some(legacy);
        }
    }
    Some(file)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(k, v)| *k == name && !v.is_empty())
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn macos_socket_is_where_the_launch_agents_listen_without_any_variable() {
        // A GUI-started client on macOS: HOME and a per-user TMPDIR, no XDG_RUNTIME_DIR.
        let gui = env(&[("HOME", "/Users/alice"), ("TMPDIR", "/var/folders/x/T/")]);
        assert_eq!(
            runtime_dir_in(&gui, Os::MacOs, 501).join(SOCKET_NAME),
            PathBuf::from("/Users/alice/Library/Caches/openfiles/openfiles.sock")
        );
        // The same variables elsewhere: the temporary folder.
        assert_eq!(
            runtime_dir_in(&gui, Os::Unix, 501),
            PathBuf::from("/var/folders/x/T/openfiles-501")
        );
        let linux = env(&[("HOME", "/home/a"), ("XDG_RUNTIME_DIR", "/run/user/1000")]);
        for os in [Os::Unix, Os::MacOs] {
            assert_eq!(
                runtime_dir_in(&linux, os, 1000),
                PathBuf::from("/run/user/1000/openfiles")
            );
        }
        let bare = env(&[("XDG_RUNTIME_DIR", "")]);
        assert_eq!(
            runtime_dir_in(&bare, Os::Unix, 7),
            PathBuf::from("/tmp/openfiles-7")
        );
    }

    #[test]
    fn macos_reads_the_xdg_config_that_home_manager_writes() {
        let nothing = |_: &Path| false;
        let mac = env(&[("HOME", "/Users/alice")]);
        assert_eq!(
            config_file_in(&mac, Os::MacOs, &nothing),
            Some(PathBuf::from("/Users/alice/.config/openfiles/config.toml"))
        );
        let xdg = env(&[
            ("HOME", "/Users/alice"),
            ("XDG_CONFIG_HOME", "/Users/alice/cfg"),
        ]);
        assert_eq!(
            config_file_in(&xdg, Os::MacOs, &nothing),
            Some(PathBuf::from("/Users/alice/cfg/openfiles/config.toml"))
        );
        // Only the old Library file exists: it is still read.
        let legacy = |p: &Path| p.starts_with("/Users/alice/Library");
        assert_eq!(
            config_file_in(&mac, Os::MacOs, &legacy),
            Some(PathBuf::from(
                "/Users/alice/Library/Application Support/openfiles/config.toml"
            ))
        );
        // Both exist: the XDG one wins.
        let both = |_: &Path| true;
        assert_eq!(
            config_file_in(&mac, Os::MacOs, &both),
            Some(PathBuf::from("/Users/alice/.config/openfiles/config.toml"))
        );
        let explicit = env(&[("HOME", "/h"), ("OPENFILES_CONFIG", "/etc/of.toml")]);
        assert_eq!(
            config_file_in(&explicit, Os::MacOs, &nothing),
            Some(PathBuf::from("/etc/of.toml"))
        );
        // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
        let rel = env(&[("HOME", "/home/a"), ("XDG_CONFIG_HOME", "cfg")]);
        assert_eq!(
            config_file_in(&rel, Os::Unix, &nothing),
            Some(PathBuf::from("/home/a/.config/openfiles/config.toml"))
        );
    }
}
