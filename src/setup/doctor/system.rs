//! The system room: the kernel's inotify limits and the control socket's permissions,
//! each gathered in a facts struct and judged by a pure function.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::{check, Check, Level};

/// The inotify limits (`None`: unreadable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InotifyFacts {
    pub max_user_watches: Option<u64>,
    pub max_user_instances: Option<u64>,
}

impl InotifyFacts {
    /// From `dir` (normally `/proc/sys/fs/inotify`).
    pub fn gather(dir: &Path) -> InotifyFacts {
        let read = |name: &str| crate::setup::probe::read_sysctl(&dir.join(name));
        InotifyFacts {
            max_user_watches: read("max_user_watches"),
            max_user_instances: read("max_user_instances"),
        }
    }
}

/// The `inotify` lines: a limit below what a large workspace needs warns.
pub fn judge_inotify(f: &InotifyFacts) -> Vec<Check> {
    const S: &str = "inotify";
    [
        ("max_user_watches", f.max_user_watches, 65_536u64),
        ("max_user_instances", f.max_user_instances, 128),
    ]
    .into_iter()
    .map(|(name, value, minimum)| match value {
        Some(v) if v >= minimum => check(S, Level::Ok, format!("{name} = {v}")),
        Some(v) => check(
            S,
            Level::Warn,
            format!("{name} = {v} (below {minimum}: large workspaces may not be watched)"),
        )
        .hint(format!("sudo sysctl fs.inotify.{name}={}", minimum * 8)),
        None => check(S, Level::Info, format!("{name}: unreadable")),
    })
    .collect()
}

/// The control socket and its folder as found (`None`: absent or unreadable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketFacts {
    pub socket: PathBuf,
    /// Our uid.
    pub uid: u32,
    pub file: Option<Node>,
    /// The folder, or why it could not be read.
    pub folder: Result<Node, FolderError>,
}

/// Why the socket's folder could not be looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FolderError {
    #[error("no folder")]
    NoFolder,
    /// Its metadata could not be read: the OS error (the kind, when there is no number).
    #[error("{}", errno.map_or_else(|| std::io::Error::from(*kind), std::io::Error::from_raw_os_error))]
    Unreadable {
        errno: Option<i32>,
        kind: std::io::ErrorKind,
    },
}

impl From<std::io::Error> for FolderError {
    fn from(e: std::io::Error) -> FolderError {
        FolderError::Unreadable {
            errno: e.raw_os_error(),
            kind: e.kind(),
        }
    }
}

/// One file's kind, mode and owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub is_socket: bool,
    pub mode: u32,
    pub uid: u32,
}

impl SocketFacts {
    pub fn gather(socket: &Path) -> SocketFacts {
        let node = |p: &Path| {
            std::fs::symlink_metadata(p).map(|m| Node {
                is_socket: m.file_type().is_socket(),
                mode: m.mode() & 0o777,
                uid: m.uid(),
            })
        };
        SocketFacts {
            socket: socket.to_owned(),
            uid: nix::unistd::getuid().as_raw(),
            file: node(socket).ok(),
            folder: match socket.parent() {
                Some(dir) => node(dir).map_err(FolderError::from),
                None => Err(FolderError::NoFolder),
            },
        }
    }
}

/// The `socket` line: 0600 and 0700, owned by us.
pub fn judge_socket(f: &SocketFacts) -> Vec<Check> {
    const S: &str = "socket";
    let shown = f.socket.display();
    let Some(file) = f.file else {
        return vec![check(S, Level::Info, format!("{shown} does not exist"))];
    };
    let uid = f.uid;
    let mut problems = Vec::new();
    if !file.is_socket {
        problems.push("is not a socket".to_string());
    }
    if file.mode != 0o600 {
        problems.push(format!("has mode {:04o}, not 0600", file.mode));
    }
    if file.uid != uid {
        problems.push(format!("belongs to uid {}, not {uid}", file.uid));
    }
    match &f.folder {
        Ok(d) => {
            if d.mode != 0o700 {
                let dir = f.socket.parent().unwrap_or(Path::new("")).display();
                problems.push(format!(
                    "its folder {dir} has mode {:04o}, not 0700",
                    d.mode
                ));
            }
            if d.uid != uid {
                problems.push(format!("its folder belongs to uid {}, not {uid}", d.uid));
            }
        }
        Err(e) => problems.push(format!("its folder is unreadable: {e}")),
    }
    vec![if problems.is_empty() {
        check(S, Level::Ok, format!("{shown} (0600, folder 0700, ours)"))
    } else {
        check(S, Level::Fail, format!("{shown} {}", problems.join("; ")))
            .hint("stop the service, remove the socket and its folder, and start it again")
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_inotify_limits_warn() {
        let out = judge_inotify(&InotifyFacts {
            max_user_watches: Some(8192),
            max_user_instances: Some(1024),
        });
        assert_eq!(out[0].level, Level::Warn);
        assert_eq!(out[1].level, Level::Ok);
        let out = judge_inotify(&InotifyFacts {
            max_user_watches: None,
            max_user_instances: Some(1),
        });
        assert_eq!(out[0].level, Level::Info);
        assert_eq!(out[1].level, Level::Warn);
    }

    #[test]
    fn inotify_limits_are_read_from_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("max_user_watches"), "8192\n").unwrap();
        let f = InotifyFacts::gather(dir.path());
        assert_eq!(f.max_user_watches, Some(8192));
        assert_eq!(f.max_user_instances, None);
    }

    #[test]
    fn an_unreadable_folder_says_the_os_error() {
        let e = std::io::Error::from_raw_os_error(libc::EACCES);
        let said = e.to_string();
        assert_eq!(FolderError::from(e).to_string(), said);
        let f = SocketFacts {
            socket: "/run/user/1/openfiles/s.sock".into(),
            uid: 1,
            file: Some(Node {
                is_socket: true,
                mode: 0o600,
                uid: 1,
            }),
            folder: Err(FolderError::from(std::io::Error::from_raw_os_error(
                libc::EACCES,
            ))),
        };
        let out = judge_socket(&f);
        assert_eq!(out[0].level, Level::Fail);
        assert!(
            out[0]
                .message
                .ends_with(&format!("its folder is unreadable: {said}")),
            "{}",
            out[0].message
        );
    }

    #[test]
    fn loose_socket_permissions_fail() {
        let f = SocketFacts {
            socket: "/run/user/1/openfiles/s.sock".into(),
            uid: 1,
            file: Some(Node {
                is_socket: true,
                mode: 0o666,
                uid: 1,
            }),
            folder: Ok(Node {
                is_socket: false,
                mode: 0o755,
                uid: 1,
            }),
        };
        let out = judge_socket(&f);
        assert_eq!(out[0].level, Level::Fail);
        assert!(
            out[0].message.contains("0666") && out[0].message.contains("0755"),
            "{}",
            out[0].message
        );
        let ours = SocketFacts {
            file: Some(Node {
                is_socket: true,
                mode: 0o600,
                uid: 1,
            }),
            folder: Ok(Node {
                is_socket: false,
                mode: 0o700,
                uid: 1,
            }),
            ..f.clone()
        };
        assert_eq!(judge_socket(&ours)[0].level, Level::Ok);
        let gone = SocketFacts { file: None, ..f };
        assert_eq!(judge_socket(&gone)[0].level, Level::Info);
    }

    #[test]
    fn a_real_socket_is_gathered_with_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
        let f = SocketFacts::gather(&sock);
        assert_eq!(f.file.map(|n| (n.is_socket, n.mode)), Some((true, 0o666)));
    }
}
