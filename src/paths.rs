//! Where openfiles keeps things on this machine: the control socket, the config file and
//! the state directory. Every other module asks here instead of building paths itself.
//!
//! - control socket: `--socket` / `OPENFILES_SOCKET`, else `$XDG_RUNTIME_DIR/openfiles/openfiles.sock`,
//!   else on macOS `~/Library/Caches/openfiles/openfiles.sock` (the place the LaunchAgent of
//!   `service install` and of the Nix modules listens on, and the one a GUI-started client
//!   finds without any variable), else `/run/user/<uid>/openfiles/openfiles.sock` when
//!   `/run/user/<uid>` is the user's own real directory that no one else can write (where
//!   systemd's `%t` is, so the socket unit's socket is found by clients started with only
//!   HOME/PATH/USER, as MCP clients start their servers), else
//!   `$TMPDIR/openfiles-<uid>/openfiles.sock` — only while `openfiles-<uid>` is missing (the
//!   service creates it 0700) or the user's own real 0700 directory: one that is a symlink,
//!   someone else's or open to others is refused ([`RuntimeDirError`]), by the service and by
//!   every client alike, since whoever could write there could plant a socket. Whatever the
//!   path, a client talks only to a socket that is the user's (`openfiles_wire::line`);
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
pub fn control_socket(explicit: Option<&Path>) -> Result<PathBuf, RuntimeDirError> {
    if let Some(p) = explicit {
        return Ok(p.to_owned());
    }
    if let Some(p) = std::env::var_os("OPENFILES_SOCKET").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(runtime_dir()?.join(SOCKET_NAME))
}

/// A runtime folder refused: someone else could plant a socket in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{} {why}; refusing it as openfiles' runtime folder (remove it and let `openfiles serve` \
     create it, or set XDG_RUNTIME_DIR)",
    .dir.display()
)]
pub struct RuntimeDirError {
    pub dir: PathBuf,
    /// Why, as a phrase: "belongs to uid 65534, not you".
    pub why: String,
}

/// What the runtime-folder rules need to know of a path, without following a symlink there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirFacts {
    /// A real directory (not a symlink, not a file).
    pub is_dir: bool,
    pub uid: u32,
    /// The permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

/// [`DirFacts`] of `path` on this machine (`None` when nothing is there).
pub fn dir_facts(path: &Path) -> Option<DirFacts> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some(DirFacts {
        is_dir: m.file_type().is_dir(),
        uid: m.uid(),
        mode: m.mode() & 0o7777,
    })
}

/// The per-user runtime directory for openfiles (not created here).
pub fn runtime_dir() -> Result<PathBuf, RuntimeDirError> {
    runtime_dir_in(
        &var,
        Os::native(),
        nix::unistd::getuid().as_raw(),
        &dir_facts,
    )
}

/// [`runtime_dir`] for the environment `env` (unset and empty variables are `None`), the
/// user `uid` and the folders `facts` describes.
pub fn runtime_dir_in(
    env: &dyn Fn(&str) -> Option<OsString>,
    os: Os,
    uid: u32,
    facts: &dyn Fn(&Path) -> Option<DirFacts>,
) -> Result<PathBuf, RuntimeDirError> {
    if let Some(dir) = env("XDG_RUNTIME_DIR") {
        return Ok(PathBuf::from(dir).join("openfiles"));
    }
    if os == Os::MacOs {
        if let Some(home) = env("HOME") {
            return Ok(PathBuf::from(home).join("Library/Caches/openfiles"));
        }
    } else {
        // systemd's %t for the user, where the socket unit listens.
        let run = PathBuf::from(format!("/run/user/{uid}"));
        if let Some(f) = facts(&run) {
            if f.is_dir && f.uid == uid && f.mode & 0o022 == 0 {
                return Ok(run.join("openfiles"));
            }
        }
    }
    let tmp = env("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let dir = tmp.join(format!("openfiles-{uid}"));
    let why = match facts(&dir) {
        None => return Ok(dir),
        Some(f) if !f.is_dir => "is a symlink or not a directory".to_owned(),
        Some(f) if f.uid != uid => format!("belongs to uid {}, not you", f.uid),
        Some(f) if f.mode & 0o777 != 0o700 => {
            format!("has mode {:04o}, not 0700", f.mode & 0o7777)
        }
        Some(_) => return Ok(dir),
    };
    Err(RuntimeDirError { dir, why })
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

/// The state directory (not created here): `openfiles_os::dirs`'s one rule, shared with the
/// Claws crate (its `[claws.auth]` secret lives there too).
pub fn state_dir() -> PathBuf {
    openfiles_os::dirs::state_dir()
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

    /// No folder exists.
    fn none(_: &Path) -> Option<DirFacts> {
        None
    }

    fn dir(uid: u32, mode: u32) -> Option<DirFacts> {
        Some(DirFacts {
            is_dir: true,
            uid,
            mode,
        })
    }

    #[test]
    fn macos_socket_is_where_the_launch_agents_listen_without_any_variable() {
        // A GUI-started client on macOS: HOME and a per-user TMPDIR, no XDG_RUNTIME_DIR.
        let gui = env(&[("HOME", "/Users/alice"), ("TMPDIR", "/var/folders/x/T/")]);
        assert_eq!(
            runtime_dir_in(&gui, Os::MacOs, 501, &none)
                .unwrap()
                .join(SOCKET_NAME),
            PathBuf::from("/Users/alice/Library/Caches/openfiles/openfiles.sock")
        );
        // The same variables elsewhere: the temporary folder.
        assert_eq!(
            runtime_dir_in(&gui, Os::Unix, 501, &none).unwrap(),
            PathBuf::from("/var/folders/x/T/openfiles-501")
        );
        let linux = env(&[("HOME", "/home/a"), ("XDG_RUNTIME_DIR", "/run/user/1000")]);
        for os in [Os::Unix, Os::MacOs] {
            assert_eq!(
                runtime_dir_in(&linux, os, 1000, &none).unwrap(),
                PathBuf::from("/run/user/1000/openfiles")
            );
        }
        let bare = env(&[("XDG_RUNTIME_DIR", "")]);
        assert_eq!(
            runtime_dir_in(&bare, Os::Unix, 7, &none).unwrap(),
            PathBuf::from("/tmp/openfiles-7")
        );
    }

    #[test]
    fn without_xdg_runtime_dir_the_users_run_folder_is_used_when_it_is_theirs() {
        // What an MCP client passes: HOME, PATH, USER — no XDG_RUNTIME_DIR.
        let mcp = env(&[("HOME", "/home/a"), ("USER", "a")]);
        let run = |uid: u32, mode: u32| {
            move |p: &Path| {
                (p == Path::new("/run/user/1000"))
                    .then_some(())
                    .and(dir(uid, mode))
            }
        };
        assert_eq!(
            runtime_dir_in(&mcp, Os::Unix, 1000, &run(1000, 0o700)).unwrap(),
            PathBuf::from("/run/user/1000/openfiles"),
            "where the systemd socket unit listens (%t)"
        );
        // Someone else's, or open to others, or missing: the temporary folder.
        for facts in [run(1001, 0o700), run(1000, 0o777)] {
            assert_eq!(
                runtime_dir_in(&mcp, Os::Unix, 1000, &facts).unwrap(),
                PathBuf::from("/tmp/openfiles-1000")
            );
        }
        let link = |p: &Path| {
            (p == Path::new("/run/user/1000")).then_some(DirFacts {
                is_dir: false,
                uid: 1000,
                mode: 0o777,
            })
        };
        assert_eq!(
            runtime_dir_in(&mcp, Os::Unix, 1000, &link).unwrap(),
            PathBuf::from("/tmp/openfiles-1000")
        );
        // macOS has no /run/user: the LaunchAgent's place.
        assert_eq!(
            runtime_dir_in(&mcp, Os::MacOs, 1000, &run(1000, 0o700)).unwrap(),
            PathBuf::from("/home/a/Library/Caches/openfiles")
        );
    }

    #[test]
    fn a_temporary_runtime_folder_not_ours_and_private_is_refused() {
        let e = env(&[("TMPDIR", "/tmp")]);
        let tmp = |f: Option<DirFacts>| {
            move |p: &Path| (p == Path::new("/tmp/openfiles-1000")).then_some(()).and(f)
        };
        assert_eq!(
            runtime_dir_in(&e, Os::Unix, 1000, &tmp(dir(1000, 0o700))).unwrap(),
            PathBuf::from("/tmp/openfiles-1000")
        );
        let refused = |f, why: &str| {
            let err = runtime_dir_in(&e, Os::Unix, 1000, &tmp(f)).unwrap_err();
            assert_eq!(err.dir, PathBuf::from("/tmp/openfiles-1000"));
            assert_eq!(err.why, why);
            err.to_string()
        };
        let msg = refused(dir(65534, 0o700), "belongs to uid 65534, not you");
        assert!(
            msg.starts_with("/tmp/openfiles-1000 belongs to uid 65534, not you; refusing it"),
            "{msg}"
        );
        refused(dir(1000, 0o755), "has mode 0755, not 0700");
        refused(dir(1000, 0o1777), "has mode 1777, not 0700");
        refused(
            Some(DirFacts {
                is_dir: false,
                uid: 1000,
                mode: 0o777,
            }),
            "is a symlink or not a directory",
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
