//! The session room: who will start the service here (a systemd user manager, lingering,
//! an SSH login, autostart), gathered in [`SessionFacts`] and judged by [`judge_session`].

use std::path::Path;

use super::{check, Check, Level};

/// What decides who starts the service in this session (Linux): a systemd user manager,
/// lingering, an SSH login, autostart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFacts {
    /// systemd is the init system (`/run/systemd/system` exists).
    pub systemd: bool,
    /// `XDG_RUNTIME_DIR` is set.
    pub runtime_dir: bool,
    /// A systemd user manager of ours runs (its private socket exists).
    pub user_manager: bool,
    /// `/var/lib/systemd/linger/<user>` exists (`None`: unknown user name).
    pub linger: Option<bool>,
    /// Logged in over SSH (`SSH_CONNECTION`).
    pub ssh: bool,
    /// The user name, for the hints.
    pub user: String,
    /// Why autostart will not happen, if it will not.
    pub autostart_off: Option<String>,
}

impl SessionFacts {
    pub fn here(socket: &Path) -> SessionFacts {
        let user = std::env::var("USER")
            .ok()
            .filter(|u| !u.is_empty())
            .or_else(|| {
                nix::unistd::User::from_uid(nix::unistd::getuid())
                    .ok()
                    .flatten()
                    .map(|u| u.name)
            });
        SessionFacts {
            systemd: Path::new("/run/systemd/system").is_dir(),
            runtime_dir: std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|v| !v.is_empty()),
            user_manager: crate::autostart::user_manager().is_some(),
            linger: user
                .as_ref()
                .map(|u| Path::new("/var/lib/systemd/linger").join(u).exists()),
            ssh: std::env::var_os("SSH_CONNECTION").is_some_and(|v| !v.is_empty()),
            autostart_off: match crate::autostart::decide(socket) {
                crate::autostart::Decision::Allowed => None,
                crate::autostart::Decision::Off(why) => Some(why.to_owned()),
                crate::autostart::Decision::SocketUnit(why) => Some(why),
            },
            user: user.unwrap_or_else(|| "$USER".into()),
        }
    }
}

/// The `session` line: who will start the service here, and what to do on a host without
/// a user manager or without lingering (`docs/INSTALL.md`, "Over SSH").
pub fn judge_session(f: &SessionFacts) -> Option<Check> {
    const S: &str = "session";
    let linger_hint = format!(
        "`loginctl enable-linger {}` keeps your user manager (and the socket unit) running \
         without a login",
        f.user
    );
    if !f.user_manager {
        let what = match (f.systemd, f.runtime_dir) {
            (false, _) => "no systemd here (a container or CI runner?)",
            (true, false) => {
                "no systemd user manager and no XDG_RUNTIME_DIR (an SSH session without \
                 lingering, `su` or `sudo -u`?)"
            }
            (true, true) => "no systemd user manager runs for you",
        };
        return Some(match &f.autostart_off {
            None => check(
                S,
                Level::Info,
                format!(
                    "{what}: socket activation cannot start the service; clients start it on \
                     first use (autostart) and it exits when idle"
                ),
            )
            .hint(if f.systemd {
                linger_hint
            } else {
                "nothing to do; `OPENFILES_AUTOSTART=0` turns autostart off".into()
            }),
            Some(why) => check(
                S,
                Level::Warn,
                format!("{what}, and autostart is off ({why}): nothing starts the service"),
            )
            .hint(if f.systemd {
                format!("{linger_hint}, or turn autostart on, or run `openfiles serve`")
            } else {
                "turn autostart on, or run `openfiles serve` first".into()
            }),
        });
    }
    if f.ssh && f.linger == Some(false) {
        return Some(
            check(
                S,
                Level::Info,
                "logged in over SSH without lingering: your user manager, and the service it \
                 socket-activates, stop when your last session ends (an agent left running \
                 after you log out loses it)",
            )
            .hint(linger_hint),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> SessionFacts {
        SessionFacts {
            systemd: true,
            runtime_dir: true,
            user_manager: true,
            linger: Some(true),
            ssh: false,
            user: "alice".into(),
            autostart_off: None,
        }
    }

    #[test]
    fn session_says_which_case_applies_without_a_user_manager_or_lingering() {
        assert!(
            judge_session(&facts()).is_none(),
            "a desktop login: nothing to say"
        );
        // SSH, no lingering: the manager goes with the last session.
        let ssh = SessionFacts {
            ssh: true,
            linger: Some(false),
            ..facts()
        };
        let c = judge_session(&ssh).unwrap();
        assert_eq!(c.level, Level::Info);
        assert!(c.message.contains("without lingering"), "{}", c.message);
        assert!(c.hint.unwrap().contains("loginctl enable-linger alice"));
        // No manager and no XDG_RUNTIME_DIR on a systemd host: autostart, or linger.
        let bare = SessionFacts {
            user_manager: false,
            runtime_dir: false,
            ..ssh.clone()
        };
        let c = judge_session(&bare).unwrap();
        assert!(c.message.contains("no XDG_RUNTIME_DIR"), "{}", c.message);
        assert!(c.message.contains("autostart"), "{}", c.message);
        assert!(c.hint.unwrap().contains("enable-linger"));
        // The same with autostart off: nothing starts it, a warning.
        let off = SessionFacts {
            autostart_off: Some("OPENFILES_AUTOSTART is off".into()),
            ..bare
        };
        let c = judge_session(&off).unwrap();
        assert_eq!(c.level, Level::Warn);
        assert!(
            c.message.contains("nothing starts the service"),
            "{}",
            c.message
        );
        // A container: no systemd at all.
        let container = SessionFacts {
            systemd: false,
            user_manager: false,
            ..facts()
        };
        let c = judge_session(&container).unwrap();
        assert!(c.message.starts_with("no systemd here"), "{}", c.message);
        assert!(!c.hint.unwrap().contains("linger"));
    }
}
