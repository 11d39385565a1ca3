//! The service room: whether the control socket answers (and how the service was started),
//! whether the units are installed and enabled, and whether the workspace is trusted — each
//! gathered in a facts struct and judged by a pure function.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{check, Check, Level};
use crate::control::client::{Client, ClientError};
use crate::setup::installed::units_report;
use crate::setup::places::Platform;
use openfiles_wire::control::{Status, StatusReply};

/// What the control socket said to `status`.
#[derive(Debug, Clone)]
pub enum Answer {
    Reachable(Box<StatusReply>),
    /// Nothing listens, and the first client that needs it will start it.
    Autostarts,
    /// Nothing listens (the connection's error).
    Unreachable(String),
    /// The socket is not one of ours (the client's refusal).
    Refused(String),
    /// It answers, but `status` failed.
    Failed(String),
}

/// The service as seen through its control socket.
#[derive(Debug, Clone)]
pub struct ServiceFacts {
    pub socket: PathBuf,
    pub answer: Answer,
}

impl ServiceFacts {
    pub fn gather(socket: &Path) -> ServiceFacts {
        // Generous: the first connection may be what starts a socket-activated service.
        let reply = Client::connect(socket, Some(Duration::from_secs(15)))
            .and_then(|mut c| c.call(&Status));
        let answer = match reply {
            Ok(st) => Answer::Reachable(Box::new(st)),
            Err(ClientError::Unreachable { source, .. })
                if crate::autostart::decide(socket) == crate::autostart::Decision::Allowed
                    && matches!(
                        source.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                    ) =>
            {
                Answer::Autostarts
            }
            Err(ClientError::Unreachable { source, .. }) => Answer::Unreachable(source.to_string()),
            Err(e @ ClientError::Refused(_)) => Answer::Refused(e.to_string()),
            Err(e) => Answer::Failed(e.to_string()),
        };
        ServiceFacts {
            socket: socket.to_owned(),
            answer,
        }
    }

    /// The service's `status`, when it answered.
    pub fn status(&self) -> Option<StatusReply> {
        match &self.answer {
            Answer::Reachable(st) => Some((**st).clone()),
            _ => None,
        }
    }
}

/// The `service` line.
pub fn judge_service(f: &ServiceFacts) -> Vec<Check> {
    const S: &str = "service";
    let socket = f.socket.display();
    vec![match &f.answer {
        Answer::Reachable(st) => {
            let how = match st.activation.as_str() {
                "systemd" => "socket-activated by systemd",
                "launchd" => "socket-activated by launchd",
                "bound" => "started by hand (not socket-activated)",
                "autostarted" => "autostarted by a client (not socket-activated)",
                other => other,
            };
            check(
                S,
                Level::Ok,
                format!(
                    "reachable at {socket} (openfiles {}, pid {}, {how}, {} workspace(s))",
                    st.version,
                    st.pid,
                    st.workspaces.len()
                ),
            )
        }
        Answer::Autostarts => check(
            S,
            Level::Info,
            format!(
                "not running at {socket}; the first client that needs it (an agent's hook, \
                 `openfiles mcp`, `claws`, `review`) starts it (autostart)"
            ),
        ),
        Answer::Unreachable(why) => {
            check(S, Level::Fail, format!("not reachable at {socket}: {why}")).hint(
                "enable the socket (`openfiles service install --now`) or run `openfiles serve`",
            )
        }
        Answer::Refused(why) => check(S, Level::Fail, why.clone()),
        Answer::Failed(why) => check(
            S,
            Level::Fail,
            format!("{socket} answers, but `status` failed: {why}"),
        ),
    }]
}

/// The installed units (or LaunchAgent).
#[derive(Debug, Clone)]
pub struct UnitsFacts {
    pub platform: Platform,
    pub installed: bool,
    pub enabled: bool,
    /// What is where, one phrase each.
    pub lines: Vec<String>,
    pub problems: Vec<String>,
}

impl UnitsFacts {
    pub fn gather() -> UnitsFacts {
        let platform = Platform::native();
        let r = units_report(platform);
        UnitsFacts {
            platform,
            installed: r.installed,
            enabled: r.enabled,
            lines: r.lines,
            problems: r.problems,
        }
    }
}

/// The `units` lines.
pub fn judge_units(f: &UnitsFacts) -> Vec<Check> {
    const S: &str = "units";
    let level = if f.installed && f.enabled {
        Level::Ok
    } else {
        Level::Warn
    };
    let mut c = check(S, level, f.lines.join("; "));
    if !f.installed {
        c = c.hint("install them with `openfiles service install` (or the Nix module)");
    } else if !f.enabled {
        c = c.hint(match f.platform {
            Platform::Systemd => "systemctl --user enable --now openfiles.socket",
            Platform::Launchd => "openfiles service install --now",
        });
    }
    let mut out = vec![c];
    for p in &f.problems {
        out.push(check(S, Level::Fail, p.clone()).hint("run `openfiles service install` again"));
    }
    out
}

/// Whether the workspace's checks may run what it brings (its `node_modules/.bin`, `cargo
/// check`): as the running service sees it, else as it would decide at start.
#[derive(Debug, Clone)]
pub struct TrustFacts {
    /// The workspace folder (canonical).
    pub root: PathBuf,
    pub trusted: bool,
}

impl TrustFacts {
    pub fn gather(root: &Path, config: Option<&Path>, status: Option<&StatusReply>) -> TrustFacts {
        let served = status.and_then(|st| st.workspaces.iter().find(|w| w.root == root));
        let trusted = match served {
            Some(w) => w.trusted,
            None => {
                // The one answer the service and `check` give (`openfiles_gate::trust`).
                use crate::workspace::trust;
                let state = crate::paths::state_dir();
                let named = crate::config::Config::load(config)
                    .is_ok_and(|(cfg, _)| trust::named_offline(root, &cfg, &state));
                trust::is_trusted(root, &trust::TrustStore::load(&state), named)
            }
        };
        TrustFacts {
            root: root.to_owned(),
            trusted,
        }
    }
}

/// The `trust` line: an untrusted workspace says what is off and the one command that
/// turns it on.
pub fn judge_trust(f: &TrustFacts) -> Vec<Check> {
    const S: &str = "trust";
    let shown = f.root.display().to_string();
    vec![if f.trusted {
        check(
            S,
            Level::Ok,
            format!("{shown}: trusted (its own tools and cargo check may run)"),
        )
    } else {
        check(
            S,
            Level::Info,
            format!(
                "{shown}: not trusted: checked only with tools installed outside it, and no \
                 cargo check (build scripts)"
            ),
        )
        .hint(format!("openfiles trust {shown}"))
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_reported_with_the_command_that_gives_it() {
        let f = TrustFacts {
            root: "/w/app".into(),
            trusted: false,
        };
        let out = judge_trust(&f);
        assert_eq!(out[0].level, Level::Info);
        assert!(out[0].message.contains("not trusted"), "{}", out[0].message);
        assert_eq!(out[0].hint.as_deref(), Some("openfiles trust /w/app"));
        let out = judge_trust(&TrustFacts { trusted: true, ..f });
        assert_eq!(out[0].level, Level::Ok);
    }

    /// The service's own view of trust wins over the local records.
    #[test]
    fn the_served_workspace_s_trust_is_the_service_s() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let st = |trusted| StatusReply {
            workspaces: vec![openfiles_wire::control::WorkspaceStatus {
                root: root.clone(),
                trusted,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert!(TrustFacts::gather(&root, None, Some(&st(true))).trusted);
        assert!(!TrustFacts::gather(&root, None, Some(&st(false))).trusted);
    }

    #[test]
    fn the_service_line_says_how_it_was_started_or_why_it_is_not_there() {
        let socket = PathBuf::from("/run/user/1/openfiles/openfiles.sock");
        let up = ServiceFacts {
            socket: socket.clone(),
            answer: Answer::Reachable(Box::new(StatusReply {
                activation: openfiles_wire::control::Activation::Bound,
                pid: 42,
                version: "0.1.0".into(),
                ..Default::default()
            })),
        };
        let c = &judge_service(&up)[0];
        assert_eq!(c.level, Level::Ok);
        assert!(c.message.contains("started by hand") && c.message.contains("pid 42"));
        let auto = ServiceFacts {
            socket: socket.clone(),
            answer: Answer::Autostarts,
        };
        assert_eq!(judge_service(&auto)[0].level, Level::Info);
        let down = ServiceFacts {
            socket,
            answer: Answer::Unreachable("Connection refused".into()),
        };
        let c = &judge_service(&down)[0];
        assert_eq!(c.level, Level::Fail);
        assert!(c.message.contains("not reachable"), "{}", c.message);
        assert!(c.hint.is_some());
    }

    #[test]
    fn units_not_installed_warn_and_broken_ones_fail() {
        let f = UnitsFacts {
            platform: Platform::Systemd,
            installed: false,
            enabled: false,
            lines: vec!["openfiles.socket: not installed".into()],
            problems: vec![],
        };
        let out = judge_units(&f);
        assert_eq!(out[0].level, Level::Warn);
        assert!(out[0].hint.as_deref().unwrap().contains("service install"));
        let broken = UnitsFacts {
            installed: true,
            enabled: true,
            problems: vec!["ExecStart names a missing program".into()],
            ..f
        };
        let out = judge_units(&broken);
        assert_eq!(out[0].level, Level::Ok);
        assert_eq!(out[1].level, Level::Fail);
    }
}
