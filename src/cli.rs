//! Command-line parsing, and only that: every subcommand hands its arguments to the module
//! that owns the work. `--help` on each command carries an example.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// openfiles — headless OpenFiles + Claws for AI coding agents.
///
/// Runs language servers and compilers on the files agents edit and hands the problems back
/// through the agent's hook, and serves Claws terminals, all without an editor. Usually started
/// by systemd or launchd on the first connection to its socket.
#[derive(Debug, Parser)]
#[command(
    name = "openfiles",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Control socket to serve or to talk to [default: $XDG_RUNTIME_DIR/openfiles/openfiles.sock]
    #[arg(long, global = true, env = "OPENFILES_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Config file [default: ~/.config/openfiles/config.toml]
    #[arg(long, global = true, env = "OPENFILES_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the service in the foreground.
    ///
    /// Under systemd or launchd the socket is inherited; run by hand it binds the socket
    /// itself and refuses to start when another instance answers there.
    ///
    /// Example: openfiles serve --workspace .
    Serve(ServeArgs),

    /// Show what the running service is doing.
    ///
    /// Example: openfiles status --json
    Status(StatusArgs),

    /// Register a workspace folder with the running service (remembered across restarts).
    ///
    /// Example: openfiles add ~/src/app
    Add(PathArgs),

    /// Unregister a workspace folder.
    ///
    /// Example: openfiles forget ~/src/app
    Forget(PathArgs),

    /// Install, remove or inspect the systemd user units (Linux) or LaunchAgent (macOS).
    ///
    /// For installs without a Nix module. Example: openfiles service install --now
    Service(ServiceArgs),

    /// Check the installation: service, units, plugins, language tools, hooks, limits.
    ///
    /// Exit status 1 when something is broken. Example: openfiles doctor
    Doctor(DoctorArgs),

    /// Print shell completions.
    ///
    /// Example: openfiles completions bash > ~/.local/share/bash-completion/completions/openfiles
    Completions(CompletionsArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Register this folder as a workspace for this run (repeatable).
    #[arg(long = "workspace", short = 'w', value_name = "DIR")]
    pub workspaces: Vec<PathBuf>,

    /// Validate the configuration (user file and every workspace's) and exit.
    #[arg(long)]
    pub check_config: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print the raw status as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PathArgs {
    /// The workspace folder.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

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
    Status(ServiceCommon),
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
    pub platform: Option<crate::setup::service::Platform>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Workspace to inspect [default: the one holding the current directory].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// Parse the command line and run it; the returned code is the process exit status.
pub fn run() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => crate::service::run(crate::service::Options {
            socket: cli.socket,
            config: cli.config,
            workspaces: args.workspaces,
            check_config: args.check_config,
        }),
        Command::Status(args) => crate::admin::status(cli.socket.as_deref(), args.json),
        Command::Add(args) => crate::admin::add(cli.socket.as_deref(), &args.dir),
        Command::Forget(args) => crate::admin::forget(cli.socket.as_deref(), &args.dir),
        Command::Service(args) => {
            use crate::setup::service::{self, Action, Platform};
            let (action, change, common) = match args.action {
                ServiceAction::Install(c) => {
                    (Action::Install, Some((c.dry_run, c.now, c.force)), c.common)
                }
                ServiceAction::Uninstall(c) => (
                    Action::Uninstall,
                    Some((c.dry_run, c.now, c.force)),
                    c.common,
                ),
                ServiceAction::Status(c) => (Action::Status, None, c),
            };
            let (dry_run, now, force) = change.unwrap_or_default();
            service::run(service::Options {
                action,
                dry_run,
                now,
                force,
                platform: common.platform.unwrap_or_else(Platform::native),
                socket: cli.socket,
            })
        }
        Command::Doctor(args) => crate::setup::doctor::run(crate::setup::doctor::Options {
            socket: cli.socket,
            config: cli.config,
            workspace: args.workspace,
            json: args.json,
        }),
        Command::Completions(args) => {
            use clap::CommandFactory;
            clap_complete::generate(
                args.shell,
                &mut Cli::command(),
                "openfiles",
                &mut std::io::stdout(),
            );
            Ok(0)
        }
    };
    match result {
        Ok(code) => std::process::ExitCode::from(code),
        Err(err) => {
            eprintln!("openfiles: {err:#}");
            std::process::ExitCode::from(2)
        }
    }
}
