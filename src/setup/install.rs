//! `openfiles service install|uninstall|status`: the user units for people without a Nix
//! module. systemd (Linux): `openfiles.socket` + `openfiles.service` in
//! `$XDG_CONFIG_HOME/systemd/user`; launchd (macOS): a LaunchAgent plist in
//! `~/Library/LaunchAgents`.
//!
//! Invariants: every file written carries [`units::MARKER`]; `uninstall` removes only files
//! that carry it (and the `*.wants` links pointing at them), so it never deletes a unit a
//! package or a Nix module put there. An existing file without the marker is not overwritten
//! unless `--force`. Both backends compile on every platform (the platform only picks the
//! default), so the launchd code is type-checked and its `--dry-run` output tested on Linux.

use openfiles_gate::Program;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::places::{home, launchd_plist_path, systemd_unit_dir, Platform};
use super::units::{self, LAUNCHD_LABEL, MARKER, SERVICE_UNIT, SOCKET_UNIT};

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Uninstall,
    Status,
}

/// Options of `openfiles service`.
#[derive(Debug, Clone)]
pub struct Options {
    pub action: Action,
    /// Print what would be written or run, change nothing.
    pub dry_run: bool,
    /// Also run the service-manager command (enable/bootstrap, or disable/bootout).
    pub now: bool,
    /// Overwrite unit files that `service install` did not write.
    pub force: bool,
    pub platform: Platform,
    /// The control socket (`--socket`); launchd needs its absolute path in the plist.
    pub socket: Option<PathBuf>,
    /// `status`: print the report as JSON.
    pub json: bool,
}

/// A file `install` writes.
#[derive(Debug, Clone)]
pub struct Planned {
    pub path: PathBuf,
    pub contents: String,
}

/// The path the units should run, with a warning to show when it is not stable.
pub fn chosen_exe() -> anyhow::Result<units::ExeChoice> {
    let exe = std::env::current_exe().context("cannot find the running binary")?;
    let home = home().ok();
    let user = std::env::var("USER").ok().or_else(|| {
        nix::unistd::User::from_uid(nix::unistd::getuid())
            .ok()
            .flatten()
            .map(|u| u.name)
    });
    let candidates = units::profile_candidates(home.as_deref(), user.as_deref());
    Ok(units::stable_exe(
        &exe,
        &units::nix_store_dir(),
        std::env::var_os("PATH").as_deref(),
        &candidates,
    ))
}

/// The files `install` writes for `platform`.
pub fn plan(platform: Platform, exe: &Path, socket: Option<&Path>) -> anyhow::Result<Vec<Planned>> {
    match platform {
        Platform::Systemd => {
            let dir = systemd_unit_dir()?;
            let path = std::env::var("PATH").ok();
            Ok(vec![
                Planned {
                    path: dir.join(SOCKET_UNIT),
                    contents: units::render_socket(),
                },
                Planned {
                    path: dir.join(SERVICE_UNIT),
                    contents: units::render_service(exe, path.as_deref()),
                },
            ])
        }
        Platform::Launchd => {
            let socket = crate::paths::control_socket(socket)?;
            if !socket.is_absolute() {
                bail!(
                    "the socket path must be absolute for launchd: {}",
                    socket.display()
                );
            }
            let log = home()?.join("Library/Logs/openfiles.log");
            Ok(vec![Planned {
                path: launchd_plist_path()?,
                contents: units::render_plist(exe, &socket, &log),
            }])
        }
    }
}

/// The commands that make the service manager pick up (or drop) the installed files.
pub fn manager_commands(platform: Platform, action: Action) -> anyhow::Result<Vec<Vec<String>>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    Ok(match (platform, action) {
        (Platform::Systemd, Action::Install) => {
            vec![s(&["systemctl", "--user", "enable", "--now", SOCKET_UNIT])]
        }
        (Platform::Systemd, Action::Uninstall) => vec![
            s(&[
                "systemctl",
                "--user",
                "disable",
                "--now",
                SOCKET_UNIT,
                SERVICE_UNIT,
            ]),
            s(&["systemctl", "--user", "daemon-reload"]),
        ],
        (Platform::Launchd, Action::Install) => {
            let plist = launchd_plist_path()?;
            vec![vec![
                "launchctl".into(),
                "bootstrap".into(),
                gui_domain(),
                plist.to_string_lossy().into_owned(),
            ]]
        }
        (Platform::Launchd, Action::Uninstall) => vec![vec![
            "launchctl".into(),
            "bootout".into(),
            format!("{}/{LAUNCHD_LABEL}", gui_domain()),
        ]],
        (_, Action::Status) => Vec::new(),
    })
}

fn gui_domain() -> String {
    format!("gui/{}", nix::unistd::getuid())
}

fn shell_line(cmd: &[String]) -> String {
    cmd.join(" ")
}

fn run_command(cmd: &[String]) -> anyhow::Result<()> {
    let (prog, args) = cmd.split_first().context("empty command")?;
    let status = Program::user(prog, "service manager")
        .map_err(std::io::Error::from)
        .and_then(|p| p.command(args).status())
        .with_context(|| format!("cannot run {prog}"))?;
    if !status.success() {
        bail!("`{}` failed ({status})", shell_line(cmd));
    }
    Ok(())
}

/// `openfiles service restart`: make the service run the binary now on disk (after an
/// upgrade). Under a service manager that has it, the manager restarts it; otherwise the
/// running service is asked to stop over the control socket, and socket activation (or
/// the user) starts the new binary on the next connection.
pub fn restart(platform: Platform, socket: Option<&Path>) -> anyhow::Result<u8> {
    let managed = match platform {
        Platform::Systemd if systemd_unit_in_use() => Some(vec![
            "systemctl".to_owned(),
            "--user".into(),
            "restart".into(),
            SERVICE_UNIT.into(),
        ]),
        Platform::Launchd if launchd_plist_path().is_ok_and(|p| p.exists()) => Some(vec![
            "launchctl".to_owned(),
            "kickstart".into(),
            "-k".into(),
            format!("{}/{LAUNCHD_LABEL}", gui_domain()),
        ]),
        _ => None,
    };
    if let Some(cmd) = managed {
        println!("running {}", shell_line(&cmd));
        run_command(&cmd)?;
        return Ok(0);
    }
    let path = crate::paths::control_socket(socket)?;
    let mut client =
        crate::control::client::Client::connect(&path, Some(std::time::Duration::from_secs(5)))
            .with_context(|| {
                format!(
                    "no service answers at {}; nothing to restart",
                    path.display()
                )
            })?;
    client.call(&openfiles_wire::control::Shutdown)?;
    println!(
        "stopped the service at {}; the next client starts the new binary (socket \
         activation), or start it with `openfiles serve`",
        path.display()
    );
    Ok(0)
}

/// Whether the user's systemd manager has the socket or the service enabled or running
/// (false when there is no user manager to ask).
fn systemd_unit_in_use() -> bool {
    let ask = |verb: &str| {
        Program::user("systemctl", "service manager")
            .map_err(std::io::Error::from)
            .and_then(|p| {
                p.command(["--user", verb, SOCKET_UNIT, SERVICE_UNIT])
                    .stderr(std::process::Stdio::null())
                    .output()
            })
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    ask("is-enabled")
        .lines()
        .any(|l| matches!(l.trim(), "enabled" | "enabled-runtime" | "linked"))
        || ask("is-active")
            .lines()
            .any(|l| matches!(l.trim(), "active" | "activating" | "reloading"))
}

fn carries_marker(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .map(|t| t.contains(MARKER))
        .unwrap_or(false)
}

/// Run `openfiles service …`; the exit status is 0 on success (for `status`: 0 when
/// installed and the unit's binary exists, 1 otherwise).
pub fn run(opts: Options) -> anyhow::Result<u8> {
    match opts.action {
        Action::Install => install(&opts),
        Action::Uninstall => uninstall(&opts),
        Action::Status => status(&opts),
    }
}

fn install(opts: &Options) -> anyhow::Result<u8> {
    let exe = chosen_exe()?;
    if let Some(w) = &exe.warning {
        eprintln!("warning: {w}");
    }
    if let (Platform::Systemd, Some(sock)) = (opts.platform, opts.socket.as_deref()) {
        let default = crate::paths::runtime_dir()
            .ok()
            .map(|d| d.join(crate::paths::SOCKET_NAME));
        if default.as_deref() != Some(sock) {
            eprintln!(
                "warning: the systemd socket unit listens on %t/openfiles/openfiles.sock, not on \
                 {} (--socket / OPENFILES_SOCKET); clients using that path will not reach it",
                sock.display()
            );
        }
    }
    let files = plan(opts.platform, &exe.path, opts.socket.as_deref())?;
    let commands = manager_commands(opts.platform, Action::Install)?;
    for f in &files {
        let existing = std::fs::read_to_string(&f.path).ok();
        if existing.as_deref() == Some(f.contents.as_str()) {
            println!("unchanged {}", f.path.display());
            continue;
        }
        if existing.is_some() && !carries_marker(&f.path) && !opts.force {
            bail!(
                "{} exists and was not written by `openfiles service install`; remove it or \
                 pass --force",
                f.path.display()
            );
        }
        if opts.dry_run {
            println!("would write {}:\n{}", f.path.display(), f.contents);
            continue;
        }
        let dir = f.path.parent().context("unit path has no parent")?;
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        openfiles_os::fsutil::write_atomic(&f.path, f.contents.as_bytes(), 0o644)
            .with_context(|| format!("cannot write {}", f.path.display()))?;
        println!("wrote {}", f.path.display());
    }
    if opts.platform == Platform::Launchd {
        let socket = crate::paths::control_socket(opts.socket.as_deref())?;
        if let Some(dir) = socket.parent() {
            if opts.dry_run {
                println!("would create {} (mode 0700)", dir.display());
            } else {
                openfiles_os::fsutil::ensure_private_dir(dir, 0o700)
                    .with_context(|| format!("cannot prepare {}", dir.display()))?;
            }
        }
    }
    if opts.platform == Platform::Launchd && opts.now && !opts.dry_run {
        // A loaded agent keeps its old definition and makes `bootstrap` fail: unload it
        // first (failing when it is not loaded is fine).
        let bootout = &manager_commands(Platform::Launchd, Action::Uninstall)?[0];
        if let Ok(p) = Program::user(&bootout[0], "service manager") {
            let _ = p
                .command(&bootout[1..])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
    finish(opts, &commands, "to start it on first use, run")
}

fn finish(opts: &Options, commands: &[Vec<String>], advice: &str) -> anyhow::Result<u8> {
    let line = commands
        .iter()
        .map(|c| shell_line(c))
        .collect::<Vec<_>>()
        .join(" && ");
    if opts.dry_run {
        if !line.is_empty() {
            println!("would {} `{line}`", if opts.now { "run" } else { "advise" });
        }
    } else if opts.now {
        for c in commands {
            println!("running {}", shell_line(c));
            run_command(c)?;
        }
    } else if !line.is_empty() {
        println!("{advice}:\n  {line}");
    }
    Ok(0)
}

fn uninstall(opts: &Options) -> anyhow::Result<u8> {
    let paths: Vec<PathBuf> = match opts.platform {
        Platform::Systemd => {
            let dir = systemd_unit_dir()?;
            vec![dir.join(SOCKET_UNIT), dir.join(SERVICE_UNIT)]
        }
        Platform::Launchd => vec![launchd_plist_path()?],
    };
    let ours: Vec<&PathBuf> = paths.iter().filter(|p| carries_marker(p)).collect();
    for p in paths.iter().filter(|p| p.exists() && !carries_marker(p)) {
        println!(
            "leaving {} (not written by `openfiles service install`)",
            p.display()
        );
    }
    if ours.is_empty() {
        println!("nothing installed by `openfiles service install`");
        return Ok(0);
    }
    let commands = manager_commands(opts.platform, Action::Uninstall)?;
    // Stop and disable while the unit files still exist: the manager reads them to know
    // which links to remove, and `disable` fails once they are gone. A unit that is enabled
    // or running is always stopped first, `--now` or not: removing its files under it would
    // leave the socket and service running with no way to stop them by name.
    let stop_first = opts.now || (opts.platform == Platform::Systemd && systemd_unit_in_use());
    if stop_first && !opts.dry_run {
        if let Some(first) = commands.first() {
            println!("running {}", shell_line(first));
            if let Err(e) = run_command(first) {
                eprintln!("warning: {e:#}");
            }
        }
    }
    if opts.platform == Platform::Systemd {
        let dir = systemd_unit_dir()?;
        for link in wants_links(&dir, &ours) {
            if opts.dry_run {
                println!("would remove {}", link.display());
            } else {
                std::fs::remove_file(&link)
                    .with_context(|| format!("cannot remove {}", link.display()))?;
                println!("removed {}", link.display());
            }
        }
    }
    for p in &ours {
        if opts.dry_run {
            println!("would remove {}", p.display());
        } else {
            std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
            println!("removed {}", p.display());
        }
    }
    // systemd: the stop/disable either ran above or had nothing to stop (the manager does
    // not have the units enabled or running); what is left is `daemon-reload`.
    let rest: Vec<Vec<String>> = if stop_first || opts.platform == Platform::Systemd {
        commands.into_iter().skip(1).collect()
    } else {
        commands
    };
    if stop_first && !opts.now && !opts.dry_run {
        // The stop above already ran; finish the job rather than print half of it.
        for cmd in &rest {
            println!("running {}", shell_line(cmd));
            if let Err(e) = run_command(cmd) {
                eprintln!("warning: {e:#}");
            }
        }
        return Ok(0);
    }
    let advice = match opts.platform {
        Platform::Systemd => "to make systemd forget the removed units, run",
        Platform::Launchd => "to stop what is running, run",
    };
    finish(opts, &rest, advice)
}

/// Links in `dir/*.wants/` and `dir/*.requires/` that point at one of `targets`.
fn wants_links(dir: &Path, targets: &[&PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.ends_with(".wants") || name.ends_with(".requires")) {
            continue;
        }
        let Ok(links) = std::fs::read_dir(e.path()) else {
            continue;
        };
        for l in links.flatten() {
            let path = l.path();
            let Ok(target) = std::fs::read_link(&path) else {
                continue;
            };
            let ours = targets.iter().any(|t| {
                t.file_name() == Some(l.file_name().as_os_str())
                    && t.file_name() == target.file_name()
            });
            if ours {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn status(opts: &Options) -> anyhow::Result<u8> {
    let report = super::installed::units_report(opts.platform);
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(u8::from(!(report.installed && report.problems.is_empty())));
    }
    for line in &report.lines {
        println!("{line}");
    }
    for problem in &report.problems {
        println!("problem: {problem}");
    }
    Ok(if report.installed && report.problems.is_empty() {
        0
    } else {
        1
    })
}
