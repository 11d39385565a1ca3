//! Setting openfiles up on a machine without a Nix module: `openfiles service` writes and
//! removes the systemd user units or the launchd agent ([`install`], rendered by [`units`]
//! from the templates in `packaging/`, placed where [`places`] says), and `openfiles doctor` ([`doctor`], using the
//! read-only probes in [`probe`] and [`installed`]) reports what works and what to fix.

pub mod checkers;
pub mod doctor;
pub mod install;
pub mod installed;
pub mod places;
pub mod probe;
pub mod units;

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `openfiles service …` arguments.
#[derive(Debug, Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub action: ServiceAction,
}

#[derive(Debug, Subcommand)]
pub enum ServiceAction {
    /// Write the units (or plist) and say how to enable them.
    Install(ServiceChange),
    /// Remove what `service install` wrote.
    Uninstall(ServiceChange),
    /// Show where the units are and whether they are enabled.
    ///
    /// Exit status 1 when they are not installed or something is wrong with them.
    /// Example: openfiles service status --json
    Status(ServiceStatusArgs),
    /// Restart the service so it runs the binary now on disk (after an upgrade).
    ///
    /// Example: openfiles service restart
    Restart(ServiceCommon),
}

#[derive(Debug, Args)]
pub struct ServiceChange {
    /// Print what would be written or removed, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also enable and start the socket (or stop and disable it on uninstall).
    #[arg(long)]
    pub now: bool,
    /// Overwrite unit files that `service install` did not write.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub common: ServiceCommon,
}

#[derive(Debug, Args)]
pub struct ServiceCommon {
    /// Service manager to write for [default: this platform's].
    #[arg(long, value_enum, hide = true)]
    pub platform: Option<places::Platform>,
}

#[derive(Debug, Args)]
pub struct ServiceStatusArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub common: ServiceCommon,
}

/// `openfiles doctor` arguments.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Workspace to inspect [default: the one holding the current directory].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run `openfiles service …` (`socket` is the global `--socket`).
pub fn run_service(args: ServiceArgs, socket: Option<PathBuf>) -> anyhow::Result<u8> {
    let mut json = false;
    let (action, change, common) = match args.action {
        ServiceAction::Install(c) => (
            install::Action::Install,
            Some(c.dry_run_now_force()),
            c.common,
        ),
        ServiceAction::Uninstall(c) => (
            install::Action::Uninstall,
            Some(c.dry_run_now_force()),
            c.common,
        ),
        ServiceAction::Status(c) => {
            json = c.json;
            (install::Action::Status, None, c.common)
        }
        ServiceAction::Restart(c) => {
            let platform = c.platform.unwrap_or_else(places::Platform::native);
            return install::restart(platform, socket.as_deref());
        }
    };
    let (dry_run, now, force) = change.unwrap_or_default();
    install::run(install::Options {
        action,
        dry_run,
        now,
        force,
        platform: common.platform.unwrap_or_else(places::Platform::native),
        socket,
        json,
    })
}

impl ServiceChange {
    fn dry_run_now_force(&self) -> (bool, bool, bool) {
        (self.dry_run, self.now, self.force)
    }
}

/// Run `openfiles doctor` (`socket`, `config`: the global options).
pub fn run_doctor(
    args: DoctorArgs,
    socket: Option<PathBuf>,
    config: Option<PathBuf>,
) -> anyhow::Result<u8> {
    doctor::run(doctor::Options {
        socket,
        config,
        workspace: args.workspace,
        json: args.json,
    })
}
