//! `openfiles doctor`: one screen telling a user what works and what to fix — the service
//! (reachable, socket-activated), the units, plugins, language tools for the current
//! workspace, agent hooks, inotify limits and the control socket's permissions.
//!
//! What the service uses is asked of the service: the plugins it loaded or refused
//! (`status`) and the language tools it finds on its own `PATH`, probes included (`tools`).
//! Without a running service (or with one too old to answer `tools`) the same things are
//! looked up here, and each such line says so: the shell's `PATH` may not be the service's.
//! Every installed agent hook is run once, as the agent would run it, with an empty payload:
//! a command that does not resolve (`sh: openfiles: not found`) fails here, not in the agent.
//!
//! Each finding is a [`Check`] with a [`Level`]; the exit status is 1 when any check
//! fails (the service cannot work as installed), warnings are advice. Colour only when
//! stdout is a terminal and `NO_COLOR` is unset; `--json` prints the checks for scripts.

use std::io::IsTerminal;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::installed::units_report;
use super::places::Platform;
use super::probe::{self, HookState};
use crate::control::client::{Client, ClientError};
use openfiles_wire::control::{
    PluginState, PluginStatus, Request, StatusReply, ToolQuery, ToolsQuery, ToolsReply,
};

/// How long one installed hook command may take when `doctor` runs it.
pub const HOOK_RUN_TIMEOUT: Duration = Duration::from_secs(15);

/// How a finding counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Info,
    Warn,
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub section: &'static str,
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

fn check(section: &'static str, level: Level, message: impl Into<String>) -> Check {
    Check {
        section,
        level,
        message: message.into(),
        hint: None,
    }
}

impl Check {
    fn hint(mut self, hint: impl Into<String>) -> Check {
        self.hint = Some(hint.into());
        self
    }
}

/// Options of `openfiles doctor`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub socket: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub json: bool,
}

/// Run every check and print the report; exit status 1 when a check failed.
pub fn run(opts: Options) -> anyhow::Result<u8> {
    let checks = collect(&opts);
    let failed = checks.iter().any(|c| c.level == Level::Fail);
    if opts.json {
        let out = serde_json::json!({ "ok": !failed, "checks": checks });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        print!("{}", render(&checks, colour));
    }
    Ok(u8::from(failed))
}

/// All the checks, in display order.
pub fn collect(opts: &Options) -> Vec<Check> {
    let mut out = Vec::new();
    let socket = match crate::paths::control_socket(opts.socket.as_deref()) {
        Ok(socket) => Some(socket),
        Err(e) => {
            out.push(check("service", Level::Fail, e.to_string()));
            None
        }
    };
    let status = socket.as_deref().and_then(|s| service_checks(s, &mut out));
    units_checks(Platform::native(), &mut out);
    if cfg!(target_os = "linux") {
        if let Some(socket) = &socket {
            out.extend(session_check(&SessionFacts::here(socket)));
        }
    }
    plugin_checks(opts.config.as_deref(), status.as_ref(), &mut out);
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let root = probe::workspace_root(opts.workspace.as_deref().unwrap_or(&cwd));
    let service_tools = match (&status, &socket) {
        (Some(_), Some(socket)) => Some(ask_tools(socket, &root)),
        _ => None,
    };
    tool_checks(&root, service_tools, &mut out);
    trust_checks(&root, opts.config.as_deref(), status.as_ref(), &mut out);
    hook_checks(&root, &mut out);
    if cfg!(target_os = "linux") {
        inotify_checks(Path::new("/proc/sys/fs/inotify"), &mut out);
    }
    if let Some(socket) = &socket {
        socket_checks(socket, &mut out);
    }
    out
}

/// Whether the workspace's checks may run what it brings (its `node_modules/.bin`, `cargo
/// check`): as the running service sees it, else as it would decide at start.
fn trust_checks(
    root: &Path,
    config: Option<&Path>,
    status: Option<&StatusReply>,
    out: &mut Vec<Check>,
) {
    const S: &str = "trust";
    let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let served = status.and_then(|st| st.workspaces.iter().find(|w| w.root == root));
    let trusted = match served {
        Some(w) => w.trusted,
        None => {
            use crate::workspace::trust;
            let state = crate::paths::state_dir();
            let named = crate::config::Config::load(config)
                .is_ok_and(|(cfg, _)| trust::named_offline(&root, &cfg, &state));
            trust::is_trusted(&root, &trust::TrustStore::load(&state), named)
        }
    };
    let shown = root.display().to_string();
    out.push(if trusted {
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
    });
}

fn service_checks(socket: &Path, out: &mut Vec<Check>) -> Option<StatusReply> {
    const S: &str = "service";
    // Generous: the first connection may be what starts a socket-activated service.
    let reply = Client::connect(socket, Some(Duration::from_secs(15)))
        .and_then(|mut c| c.call_as::<StatusReply>(&Request::Status));
    match reply {
        Ok(st) => {
            let how = match st.activation.as_str() {
                "systemd" => "socket-activated by systemd",
                "launchd" => "socket-activated by launchd",
                "bound" => "started by hand (not socket-activated)",
                "autostarted" => "autostarted by a client (not socket-activated)",
                other => other,
            };
            out.push(check(
                S,
                Level::Ok,
                format!(
                    "reachable at {} (openfiles {}, pid {}, {how}, {} workspace(s))",
                    socket.display(),
                    st.version,
                    st.pid,
                    st.workspaces.len()
                ),
            ));
            Some(st)
        }
        Err(ClientError::Unreachable { source, .. })
            if crate::autostart::decide(socket) == crate::autostart::Decision::Allowed
                && matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
                ) =>
        {
            out.push(check(
                S,
                Level::Info,
                format!(
                    "not running at {}; the first client that needs it (an agent's hook, \
                     `openfiles mcp`, `claws`, `review`) starts it (autostart)",
                    socket.display()
                ),
            ));
            None
        }
        Err(ClientError::Unreachable { source, .. }) => {
            out.push(
                check(
                    S,
                    Level::Fail,
                    format!("not reachable at {}: {source}", socket.display()),
                )
                .hint(
                    "enable the socket (`openfiles service install --now`) or run `openfiles serve`",
                ),
            );
            None
        }
        Err(e @ ClientError::Refused(_)) => {
            out.push(check(S, Level::Fail, e.to_string()));
            None
        }
        Err(e) => {
            out.push(check(
                S,
                Level::Fail,
                format!("{} answers, but `status` failed: {e}", socket.display()),
            ));
            None
        }
    }
}

fn units_checks(platform: Platform, out: &mut Vec<Check>) {
    const S: &str = "units";
    let r = units_report(platform);
    let level = if r.installed && r.enabled {
        Level::Ok
    } else {
        Level::Warn
    };
    let mut c = check(S, level, r.lines.join("; "));
    if !r.installed {
        c = c.hint("install them with `openfiles service install` (or the Nix module)");
    } else if !r.enabled {
        c = c.hint(match platform {
            Platform::Systemd => "systemctl --user enable --now openfiles.socket",
            Platform::Launchd => "openfiles service install --now",
        });
    }
    out.push(c);
    for p in r.problems {
        out.push(check(S, Level::Fail, p).hint("run `openfiles service install` again"));
    }
}

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
    fn here(socket: &Path) -> SessionFacts {
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
pub fn session_check(f: &SessionFacts) -> Option<Check> {
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

fn plugin_checks(config: Option<&Path>, status: Option<&StatusReply>, out: &mut Vec<Check>) {
    const S: &str = "plugins";
    let cfg = match crate::config::Config::load(config) {
        Ok((cfg, _)) => cfg,
        Err(e) => {
            out.push(check("config", Level::Fail, e.to_string()));
            crate::config::Config::default()
        }
    };
    // The running service's view when it has one, else start them here as it would.
    let (rows, whose) = match status.filter(|s| !s.plugins.is_empty()) {
        Some(st) => (st.plugins.clone(), "service"),
        None => match local_plugin_rows(&cfg) {
            Ok(rows) => (rows, "doctor"),
            Err(e) => {
                out.push(check(
                    S,
                    Level::Fail,
                    format!("cannot start plugin hosts: {e:#}"),
                ));
                return;
            }
        },
    };
    if rows.is_empty() {
        out.push(
            check(S, Level::Fail, "no plugin libraries found (searched config plugins.paths, OPENFILES_PLUGIN_PATH, ../lib/openfiles/plugins next to the binary)")
                .hint("set plugins.paths in config.toml or OPENFILES_PLUGIN_PATH"),
        );
        return;
    }
    for row in &rows {
        out.push(plugin_row_check(row, whose));
    }
}

fn local_plugin_rows(cfg: &crate::config::Config) -> anyhow::Result<Vec<PluginStatus>> {
    use crate::plugin_host::PluginManager;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let rows = rt.block_on(async {
        let token = tokio_util::sync::CancellationToken::new();
        let manager = PluginManager::start(cfg, &crate::paths::state_dir(), token.clone()).await;
        let rows = manager.status_rows();
        token.cancel();
        manager.wait_stopped().await;
        rows
    });
    Ok(rows)
}

/// One plugin row as a check; `whose` says who loaded it.
pub fn plugin_row_check(row: &PluginStatus, whose: &str) -> Check {
    const S: &str = "plugins";
    let path = row.path.display().to_string();
    let name = match (row.name.as_deref(), row.version.as_deref()) {
        (None | Some(""), _) => path.clone(),
        (Some(n), None | Some("")) => n.to_owned(),
        (Some(n), Some(v)) => format!("{n} {v}"),
    };
    let text = |o: &Option<String>| o.clone().unwrap_or_default();
    match row.state {
        PluginState::Loaded => {
            let caps = row.capabilities.clone().unwrap_or_default();
            let exts = caps.extensions.join(",");
            if caps.notes.is_empty() {
                check(
                    S,
                    Level::Ok,
                    format!("{name}: loaded by {whose} (files: {exts}) from {path}"),
                )
            } else {
                check(
                    S,
                    Level::Warn,
                    format!(
                        "{name}: loaded by {whose} (files: {exts}) from {path}; {}",
                        caps.notes.join("; ")
                    ),
                )
            }
        }
        PluginState::Disabled => check(
            S,
            Level::Info,
            format!("{name}: disabled in config ({path})"),
        ),
        PluginState::Missing => check(
            S,
            Level::Warn,
            format!("{path}: listed but missing ({})", text(&row.reason)),
        )
        .hint("fix plugins.paths or OPENFILES_PLUGIN_PATH"),
        PluginState::Restarting => check(
            S,
            Level::Warn,
            format!("{name}: its host died and is restarting"),
        ),
        state => check(
            S,
            Level::Fail,
            format!(
                "{name}: {} [{}]: {} ({path})",
                state.as_str(),
                text(&row.kind),
                text(&row.reason)
            ),
        ),
    }
}

/// The tools the workspace's languages need, asked of the running service.
fn ask_tools(socket: &Path, root: &Path) -> Result<ToolsReply, ClientError> {
    let tools = probe::languages(root)
        .into_iter()
        .flat_map(|l| l.tools())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|t| ToolQuery {
            name: (*t).to_owned(),
            probe: probe::probe_args(t)
                .iter()
                .map(|a| (*a).to_owned())
                .collect(),
        })
        .collect();
    let mut client = Client::connect(socket, Some(Duration::from_secs(30)))?;
    client.call_as(&Request::Tools(ToolsQuery {
        tools,
        root: Some(root.to_owned()),
    }))
}

/// The language tools: the service's view (`service`: its answer to `tools`, `None` when no
/// service runs), else this shell's, labelled as such.
fn tool_checks(
    root: &Path,
    service: Option<Result<ToolsReply, ClientError>>,
    out: &mut Vec<Check>,
) {
    const S: &str = "languages";
    let langs = probe::languages(root);
    if langs.is_empty() {
        out.push(check(
            S,
            Level::Info,
            format!("no known languages under {}", root.display()),
        ));
        return;
    }
    let reply = match service {
        Some(Ok(reply)) => Some(reply),
        Some(Err(e)) => {
            let why = match &e {
                ClientError::Server(m) if m.contains("unknown cmd") => {
                    "the service is older than this binary and cannot say which tools it finds \
                     (restart it with `openfiles service restart`)"
                        .to_owned()
                }
                other => format!("the service did not say which tools it finds ({other})"),
            };
            out.push(check(
                S,
                Level::Info,
                format!("{why}: looked up on this shell's PATH instead, which may differ from the service's"),
            ));
            None
        }
        None => {
            out.push(check(
                S,
                Level::Info,
                "no service running: looked up on this shell's PATH, which may differ from the service's",
            ));
            None
        }
    };
    let Some(reply) = reply else {
        local_tool_checks(root, &langs, out);
        return;
    };
    let service_path = reply.path.clone().unwrap_or_default();
    let lookup = |tool: &str| {
        let t = reply.tools.iter().find(|t| t.name == tool)?;
        Some((t.path.clone()?, t.probe_error.clone()))
    };
    for lang in langs {
        language_checks(
            lang,
            &lookup,
            "found by the service",
            &format!(
                "where the service looks (its PATH: {service_path}; with the Nix modules, \
                 add it to extraPackages)"
            ),
            out,
        );
    }
}

/// The language tools looked up on this shell's `PATH` (no service to ask).
fn local_tool_checks(
    root: &Path,
    langs: &std::collections::BTreeSet<probe::Language>,
    out: &mut Vec<Check>,
) {
    let path = std::env::var_os("PATH");
    // The same lookup the service makes for `tools`, in this process's environment.
    let lookup = |tool: &str| {
        crate::control::tools::lookup(tool, path.as_deref(), Some(root)).map(|p| (p, None))
    };
    for lang in langs {
        language_checks(
            *lang,
            &lookup,
            "this shell's PATH",
            "on this shell's PATH",
            out,
        );
    }
}

/// Where a tool was found and, when the service would not use it, the probe's complaint.
type Lookup<'a> = dyn Fn(&str) -> Option<(PathBuf, Option<String>)> + 'a;

/// One language's lines: per role (a job such as Python's type checking), the first of its
/// tools found and usable, else "none: install X" with the command for this machine's
/// package manager ([`super::checkers`]). `lookup` gives a tool's path and, when the service
/// would not use it, the probe's complaint; `whose` says where it was looked up.
fn language_checks(
    lang: probe::Language,
    lookup: &Lookup<'_>,
    whose: &str,
    install_where: &str,
    out: &mut Vec<Check>,
) {
    const S: &str = "languages";
    let packages = super::checkers::Packages::detect();
    for role in lang.roles() {
        let seen: Vec<(&str, PathBuf, Option<String>)> = role
            .tools
            .iter()
            .filter_map(|t| lookup(t).map(|(p, e)| (*t, p, e)))
            .collect();
        if let Some((tool, p, _)) = seen.iter().find(|(_, _, e)| e.is_none()) {
            out.push(if role.opt_in {
                check(
                    S,
                    Level::Info,
                    format!(
                        "{}: {tool} at {} ({whose}), used only when enabled: `[plugin.lsp] enable = [\"{}\"]`",
                        lang.name(),
                        p.display(),
                        super::checkers::server_name(tool),
                    ),
                )
            } else {
                check(
                    S,
                    Level::Ok,
                    format!("{}: {tool} at {} ({whose})", lang.name(), p.display()),
                )
            });
            continue;
        }
        if let Some((tool, p, Some(err))) = seen.first() {
            out.push(
                check(
                    S,
                    Level::Warn,
                    format!(
                        "{}: the service does not use {tool} at {}: {err}",
                        lang.name(),
                        p.display()
                    ),
                )
                .hint(if *tool == "rust-analyzer" {
                    "rustup component add rust-analyzer (or put a working rust-analyzer on the service's PATH)".to_owned()
                } else {
                    format!("repair or replace {tool} on the service's PATH")
                }),
            );
            continue;
        }
        let first = role.tools.first().copied().unwrap_or_default();
        let command = super::checkers::install_command(first, packages);
        if role.opt_in {
            out.push(check(
                S,
                Level::Info,
                format!(
                    "{} {}: none by default ({first}, opt-in: `[plugin.lsp] enable = [\"{}\"]` once installed with `{command}`)",
                    lang.name(),
                    role.name,
                    super::checkers::server_name(first),
                ),
            ));
            continue;
        }
        let others = match role.tools.len() {
            0 | 1 => String::new(),
            _ => format!(" (or {})", role.tools[1..].join(", ")),
        };
        out.push(
            check(
                S,
                Level::Warn,
                format!(
                    "{} {}: none: install {first}{others}: `{command}`",
                    lang.name(),
                    role.name
                ),
            )
            .hint(format!("install {first} {install_where}")),
        );
    }
}

fn hook_checks(root: &Path, out: &mut Vec<Check>) {
    const S: &str = "hooks";
    let mut any = false;
    for (agent, state) in probe::hooks(root) {
        match state {
            HookState::Installed(p) => {
                any = true;
                out.extend(run_hooks_of(agent, agent, &p, root));
            }
            HookState::ConfigWithoutHook(p) => out.push(
                check(
                    S,
                    Level::Warn,
                    format!("{agent}: {} does not run `openfiles hook`", p.display()),
                )
                .hint(format!("openfiles hooks install --agent {agent}")),
            ),
            HookState::Absent => {}
        }
    }
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        for (agent, path) in probe::user_hooks(Path::new(&home)) {
            any = true;
            let who = format!("{agent} (all workspaces)");
            out.extend(run_hooks_of(agent, &who, &path, root));
        }
    }
    if !any {
        out.push(
            check(
                S,
                Level::Warn,
                format!(
                    "no agent hooks installed in {} or for the user",
                    root.display()
                ),
            )
            .hint("openfiles hooks install --agent <id> (or --user)"),
        );
    }
}

/// Run each openfiles hook command of `agent`'s configuration `file` once, from `root`;
/// `who` starts each line.
fn run_hooks_of(agent: &str, who: &str, file: &Path, root: &Path) -> Vec<Check> {
    const S: &str = "hooks";
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let commands = probe::hook_commands(&text);
    let label = file.display();
    if commands.is_empty() {
        // The marker is there but no command we can run (a hand-written config).
        return vec![check(S, Level::Ok, format!("{who}: {label}"))];
    }
    let skipped = agent_skips(agent, file, &text, root);
    commands
        .iter()
        .map(|cmd| match (run_hook_command(cmd, root), &skipped) {
            (Ok(()), None) => check(S, Level::Ok, format!("{who}: {label}: `{cmd}` runs")),
            (Ok(()), Some((why, hint))) => check(
                S,
                Level::Warn,
                format!("{who}: {label}: `{cmd}` works, but {agent} will skip it: {why}"),
            )
            .hint(hint.clone()),
            (Err(why), _) => check(
                S,
                Level::Fail,
                format!("{who}: {label}: the installed command `{cmd}` {why}"),
            )
            .hint(format!(
                "openfiles hooks install --agent {agent} again: it writes a command that resolves"
            )),
        })
        .collect()
}

/// Why `agent` itself will not run the hooks in `file` (its own trust and settings rules,
/// `contrib/hooks/README.md`), with what to do; `None` when nothing stops it.
fn agent_skips(agent: &str, file: &Path, text: &str, root: &Path) -> Option<(String, String)> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(std::path::PathBuf::from)?;
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let json = |p: &Path| read(p).and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    let in_project = file.starts_with(root);
    match agent {
        "codex" => {
            use crate::hook::install::codex_trust::{self, Trust};
            let config_path = codex_trust::config_path(&home);
            let config = read(&config_path);
            if in_project && codex_trust::project_trusted(config.as_deref(), root) != Some(true) {
                return Some((
                    format!("Codex loads {}/.codex only in a trusted project", root.display()),
                    format!(
                        "trust the project when Codex asks, or add [projects.\"{}\"] trust_level = \"trusted\" to {}",
                        root.display(),
                        config_path.display()
                    ),
                ));
            }
            let entries = codex_trust::our_entries(file, text);
            let trust = codex_trust::trust(config.as_deref(), &entries);
            let why = match trust.iter().find(|t| **t != Trust::Trusted) {
                None => return None,
                Some(Trust::Modified) => "the hook changed since it was trusted",
                Some(_) => "the hook is not trusted",
            };
            Some((
                format!("{why} ({})", config_path.display()),
                "openfiles hooks install --agent codex (records the trust), or trust it in Codex's /hooks screen".into(),
            ))
        }
        "gemini" if in_project => {
            let rules = json(&home.join(".gemini/trustedFolders.json"));
            let trusted = rules
                .as_ref()
                .and_then(|r| r.as_object())
                .is_some_and(|r| folder_trusted(r, root));
            (!trusted).then(|| {
                (
                    "Gemini loads a project's settings only in a trusted folder".into(),
                    format!(
                        "trust {} when Gemini asks (it records it in ~/.gemini/trustedFolders.json)",
                        root.display()
                    ),
                )
            })
        }
        "qwen" => {
            let user = json(&home.join(".qwen/settings.json"));
            let folder_trust = user
                .as_ref()
                .and_then(|u| u.pointer("/security/folderTrust/enabled"))
                .and_then(serde_json::Value::as_bool)
                == Some(true);
            let disabled = [user, json(&root.join(".qwen/settings.json"))]
                .iter()
                .flatten()
                .any(|d| d["disableAllHooks"] == true);
            if disabled {
                return Some((
                    "\"disableAllHooks\": true in its settings".into(),
                    "remove disableAllHooks from ~/.qwen/settings.json or .qwen/settings.json"
                        .into(),
                ));
            }
            let trusted = json(&home.join(".qwen/trustedFolders.json"))
                .as_ref()
                .and_then(|r| r.as_object())
                .is_some_and(|r| folder_trusted(r, root));
            (in_project && folder_trust && !trusted).then(|| {
                (
                    "Qwen Code's folder trust is on and this folder is not trusted".into(),
                    format!("trust {} in Qwen Code (/permissions)", root.display()),
                )
            })
        }
        "claude" => {
            // Claude's settings, highest precedence first: managed, local, project, user.
            let files = [
                std::path::PathBuf::from("/etc/claude-code/managed-settings.json"),
                root.join(".claude/settings.local.json"),
                root.join(".claude/settings.json"),
                home.join(".claude/settings.json"),
            ];
            let docs: Vec<(std::path::PathBuf, serde_json::Value)> = files
                .into_iter()
                .filter_map(|f| json(&f).map(|d| (f, d)))
                .collect();
            if let Some((f, _)) = docs.iter().find(|(_, d)| d["disableAllHooks"] == true) {
                return Some((
                    format!("\"disableAllHooks\": true in {}", f.display()),
                    format!("remove disableAllHooks from {}", f.display()),
                ));
            }
            docs.first()
                .filter(|(f, d)| f.starts_with("/etc") && d["allowManagedHooksOnly"] == true)
                .map(|(f, _)| {
                    (
                        format!(
                            "only managed hooks run (allowManagedHooksOnly in {})",
                            f.display()
                        ),
                        "ask your administrator to add the hook to the managed settings".into(),
                    )
                })
        }
        _ => None,
    }
}

/// Gemini's and Qwen Code's `trustedFolders.json` rules: `"DIR": "TRUST_FOLDER"` trusts DIR
/// and below, `"DIR": "TRUST_PARENT"` DIR's parent and below; the nearest rule wins.
fn folder_trusted(rules: &serde_json::Map<String, serde_json::Value>, dir: &Path) -> bool {
    let mut best: Option<(usize, bool)> = None;
    for (path, rule) in rules {
        let p = Path::new(path);
        let (base, trust) = match rule.as_str() {
            Some("TRUST_FOLDER") => (p, true),
            Some("TRUST_PARENT") => (p.parent().unwrap_or(p), true),
            Some("DO_NOT_TRUST") => (p, false),
            _ => continue,
        };
        if dir.starts_with(base) {
            let depth = base.components().count();
            if best.is_none_or(|(d, _)| depth >= d) {
                best = Some((depth, trust));
            }
        }
    }
    best.is_some_and(|(_, t)| t)
}

/// Run one hook command line as an agent would (`sh -c`, in the workspace) with an empty
/// payload, which the hook answers with nothing; `Err` says how it failed.
pub fn run_hook_command(cmd: &str, cwd: &Path) -> Result<(), String> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot be started with /bin/sh: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that never reads its input is not an error here.
        let _ = stdin.write_all(b"{}");
    }
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(HOOK_RUN_TIMEOUT) {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => return Err(format!("failed: {e}")),
        Err(_) => {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            return Err(format!(
                "did not finish within {} s",
                HOOK_RUN_TIMEOUT.as_secs()
            ));
        }
    };
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| format!(": {l}"))
        .unwrap_or_default();
    let how = match out.status.code() {
        Some(code) => format!("fails with status {code}"),
        None => format!("was killed ({})", out.status),
    };
    Err(format!("{how}{said}"))
}

/// Inotify limits from `dir` (normally `/proc/sys/fs/inotify`).
pub fn inotify_checks(dir: &Path, out: &mut Vec<Check>) {
    const S: &str = "inotify";
    for (name, minimum) in [("max_user_watches", 65_536u64), ("max_user_instances", 128)] {
        match probe::read_sysctl(&dir.join(name)) {
            Some(v) if v >= minimum => out.push(check(S, Level::Ok, format!("{name} = {v}"))),
            Some(v) => out.push(
                check(
                    S,
                    Level::Warn,
                    format!("{name} = {v} (below {minimum}: large workspaces may not be watched)"),
                )
                .hint(format!("sudo sysctl fs.inotify.{name}={}", minimum * 8)),
            ),
            None => out.push(check(S, Level::Info, format!("{name}: unreadable"))),
        }
    }
}

/// Permissions of the control socket and its directory: 0600 and 0700, owned by us.
pub fn socket_checks(socket: &Path, out: &mut Vec<Check>) {
    const S: &str = "socket";
    let uid = nix::unistd::getuid().as_raw();
    let meta = match std::fs::symlink_metadata(socket) {
        Ok(m) => m,
        Err(_) => {
            out.push(check(
                S,
                Level::Info,
                format!("{} does not exist", socket.display()),
            ));
            return;
        }
    };
    let mut problems = Vec::new();
    if !meta.file_type().is_socket() {
        problems.push("is not a socket".to_string());
    }
    if meta.mode() & 0o777 != 0o600 {
        problems.push(format!("has mode {:04o}, not 0600", meta.mode() & 0o777));
    }
    if meta.uid() != uid {
        problems.push(format!("belongs to uid {}, not {uid}", meta.uid()));
    }
    if let Some(dir) = socket.parent() {
        match std::fs::symlink_metadata(dir) {
            Ok(d) => {
                if d.mode() & 0o777 != 0o700 {
                    problems.push(format!(
                        "its folder {} has mode {:04o}, not 0700",
                        dir.display(),
                        d.mode() & 0o777
                    ));
                }
                if d.uid() != uid {
                    problems.push(format!("its folder belongs to uid {}, not {uid}", d.uid()));
                }
            }
            Err(e) => problems.push(format!("its folder is unreadable: {e}")),
        }
    }
    if problems.is_empty() {
        out.push(check(
            S,
            Level::Ok,
            format!("{} (0600, folder 0700, ours)", socket.display()),
        ));
    } else {
        out.push(
            check(
                S,
                Level::Fail,
                format!("{} {}", socket.display(), problems.join("; ")),
            )
            .hint("stop the service, remove the socket and its folder, and start it again"),
        );
    }
}

/// The report as text, grouped by section.
pub fn render(checks: &[Check], colour: bool) -> String {
    let paint = |level: Level, s: &str| -> String {
        if !colour {
            return s.to_owned();
        }
        let code = match level {
            Level::Ok => "32",
            Level::Info => "2",
            Level::Warn => "33",
            Level::Fail => "31",
        };
        format!("\x1b[{code}m{s}\x1b[0m")
    };
    let mut out = String::new();
    let mut section = "";
    for c in checks {
        if c.section != section {
            section = c.section;
            out.push_str(section);
            out.push('\n');
        }
        let mark = match c.level {
            Level::Ok => "ok  ",
            Level::Info => "    ",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        };
        // Messages name paths and plugins' reasons: escapes shown, never obeyed.
        let message = crate::visible::escape(&c.message);
        out.push_str(&format!("  {} {message}\n", paint(c.level, mark)));
        if let Some(h) = &c.hint {
            out.push_str(&format!("       -> {}\n", crate::visible::escape(h)));
        }
    }
    let fails = checks.iter().filter(|c| c.level == Level::Fail).count();
    let warns = checks.iter().filter(|c| c.level == Level::Warn).count();
    out.push_str(&match (fails, warns) {
        (0, 0) => "all good\n".to_owned(),
        (0, w) => format!("{w} warning(s), nothing broken\n"),
        (f, w) => format!("{f} problem(s), {w} warning(s)\n"),
    });
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

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
            session_check(&facts()).is_none(),
            "a desktop login: nothing to say"
        );
        // SSH, no lingering: the manager goes with the last session.
        let ssh = SessionFacts {
            ssh: true,
            linger: Some(false),
            ..facts()
        };
        let c = session_check(&ssh).unwrap();
        assert_eq!(c.level, Level::Info);
        assert!(c.message.contains("without lingering"), "{}", c.message);
        assert!(c.hint.unwrap().contains("loginctl enable-linger alice"));
        // No manager and no XDG_RUNTIME_DIR on a systemd host: autostart, or linger.
        let bare = SessionFacts {
            user_manager: false,
            runtime_dir: false,
            ..ssh.clone()
        };
        let c = session_check(&bare).unwrap();
        assert!(c.message.contains("no XDG_RUNTIME_DIR"), "{}", c.message);
        assert!(c.message.contains("autostart"), "{}", c.message);
        assert!(c.hint.unwrap().contains("enable-linger"));
        // The same with autostart off: nothing starts it, a warning.
        let off = SessionFacts {
            autostart_off: Some("OPENFILES_AUTOSTART is off".into()),
            ..bare
        };
        let c = session_check(&off).unwrap();
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
        let c = session_check(&container).unwrap();
        assert!(c.message.starts_with("no systemd here"), "{}", c.message);
        assert!(!c.hint.unwrap().contains("linger"));
    }

    /// The workspace's trust as the service sees it: an untrusted one says what is off and
    /// the one command that turns it on.
    #[test]
    fn trust_is_reported_with_the_command_that_gives_it() {
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
        let mut out = Vec::new();
        trust_checks(&root, None, Some(&st(false)), &mut out);
        assert_eq!(out[0].level, Level::Info);
        assert!(out[0].message.contains("not trusted"), "{}", out[0].message);
        assert_eq!(
            out[0].hint.as_deref(),
            Some(format!("openfiles trust {}", root.display()).as_str())
        );
        let mut out = Vec::new();
        trust_checks(&root, None, Some(&st(true)), &mut out);
        assert_eq!(out[0].level, Level::Ok);
    }

    #[test]
    fn low_inotify_limits_warn() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("max_user_watches"), "8192\n").unwrap();
        std::fs::write(dir.path().join("max_user_instances"), "1024\n").unwrap();
        let mut out = Vec::new();
        inotify_checks(dir.path(), &mut out);
        assert_eq!(out[0].level, Level::Warn);
        assert_eq!(out[1].level, Level::Ok);
    }

    #[test]
    fn loose_socket_permissions_fail() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("s.sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut out = Vec::new();
        socket_checks(&sock, &mut out);
        assert_eq!(out[0].level, Level::Fail);
        assert!(
            out[0].message.contains("0666") && out[0].message.contains("0755"),
            "{}",
            out[0].message
        );
    }

    #[test]
    fn an_older_service_without_tools_falls_back_to_labelled_local_lookups() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("go.mod"), "module x\n").unwrap();
        let mut out = Vec::new();
        let old = ClientError::Server("unknown cmd: tools".into());
        tool_checks(dir.path(), Some(Err(old)), &mut out);
        assert_eq!(out[0].level, Level::Info);
        assert!(
            out[0].message.contains("older than this binary")
                && out[0].message.contains("this shell's PATH"),
            "{}",
            out[0].message
        );
        assert!(
            out[1..]
                .iter()
                .all(|c| c.message.contains("this shell's PATH")),
            "{out:?}"
        );
    }

    #[test]
    fn the_report_a_user_reads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("max_user_watches"), "8192\n").unwrap();
        std::fs::write(dir.path().join("max_user_instances"), "1024\n").unwrap();
        let mut checks = vec![
            check(
                "service",
                Level::Ok,
                "reachable at /run/user/1000/openfiles/control.sock (openfiles 0.1.0, pid 4242, socket-activated by systemd, 2 workspace(s))",
            ),
            check("units", Level::Ok, "openfiles.socket: enabled, active; openfiles.service: active"),
        ];
        let plugins = serde_json::json!([
            {"name": "rust", "version": "0.1.0", "origin": "config", "state": "loaded", "path": "/usr/lib/openfiles/plugins/libopenfiles_plugin_rust.so",
             "capabilities": {"extensions": ["rs"]}},
            {"name": "typescript", "version": "0.1.0", "origin": "config", "state": "loaded", "path": "/usr/lib/openfiles/plugins/libopenfiles_plugin_typescript.so",
             "capabilities": {"extensions": ["ts", "tsx"], "notes": ["tsgo not found: tsc runs instead"]}},
            {"name": "python", "origin": "config", "state": "disabled", "path": "/usr/lib/openfiles/plugins/libopenfiles_plugin_python.so"},
            {"origin": "config", "state": "missing", "path": "/opt/plugins/libopenfiles_plugin_go.so", "reason": "no such file"},
            {"name": "broken", "origin": "config", "state": "refused", "kind": "abi-mismatch", "reason": "built for plugin API 2, this host speaks 3",
             "path": "/opt/plugins/libopenfiles_plugin_broken.so"},
        ]);
        let plugins: Vec<PluginStatus> = serde_json::from_value(plugins).unwrap();
        for row in &plugins {
            checks.push(plugin_row_check(row, "the service"));
        }
        checks.push(check(
            "languages",
            Level::Ok,
            "Rust: rust-analyzer at /home/me/.cargo/bin/rust-analyzer (found by the service)",
        ));
        checks.push(
            check("languages", Level::Warn, "TypeScript: tsc not found on the service's PATH")
                .hint("install tsc where the service looks (its PATH: /usr/bin:/bin); with the Nix modules, add it to extraPackages"),
        );
        checks.push(check(
            "hooks",
            Level::Ok,
            "claude: .claude/settings.json: `openfiles hook --agent claude` runs",
        ));
        inotify_checks(dir.path(), &mut checks);
        checks.push(check(
            "socket",
            Level::Ok,
            "/run/user/1000/openfiles/control.sock (0600, folder 0700, ours)",
        ));
        expect![[r#"
            service
              ok   reachable at /run/user/1000/openfiles/control.sock (openfiles 0.1.0, pid 4242, socket-activated by systemd, 2 workspace(s))
            units
              ok   openfiles.socket: enabled, active; openfiles.service: active
            plugins
              ok   rust 0.1.0: loaded by the service (files: rs) from /usr/lib/openfiles/plugins/libopenfiles_plugin_rust.so
              warn typescript 0.1.0: loaded by the service (files: ts,tsx) from /usr/lib/openfiles/plugins/libopenfiles_plugin_typescript.so; tsgo not found: tsc runs instead
                   python: disabled in config (/usr/lib/openfiles/plugins/libopenfiles_plugin_python.so)
              warn /opt/plugins/libopenfiles_plugin_go.so: listed but missing (no such file)
                   -> fix plugins.paths or OPENFILES_PLUGIN_PATH
              FAIL broken: refused [abi-mismatch]: built for plugin API 2, this host speaks 3 (/opt/plugins/libopenfiles_plugin_broken.so)
            languages
              ok   Rust: rust-analyzer at /home/me/.cargo/bin/rust-analyzer (found by the service)
              warn TypeScript: tsc not found on the service's PATH
                   -> install tsc where the service looks (its PATH: /usr/bin:/bin); with the Nix modules, add it to extraPackages
            hooks
              ok   claude: .claude/settings.json: `openfiles hook --agent claude` runs
            inotify
              warn max_user_watches = 8192 (below 65536: large workspaces may not be watched)
                   -> sudo sysctl fs.inotify.max_user_watches=524288
              ok   max_user_instances = 1024
            socket
              ok   /run/user/1000/openfiles/control.sock (0600, folder 0700, ours)
            1 problem(s), 4 warning(s)
        "#]].assert_eq(&render(&checks, false));

        // The footer without problems, and colour only on the mark.
        let fine = [
            check("service", Level::Ok, "reachable"),
            check("socket", Level::Info, "absent"),
        ];
        expect![[r#"
            service
              ok   reachable
            socket
                   absent
            all good
        "#]]
        .assert_eq(&render(&fine, false));
        expect![[r#"
            "service\n  \u{1b}[32mok  \u{1b}[0m reachable\nall good\n"
        "#]]
        .assert_debug_eq(&render(&fine[..1], true));
    }
}
