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

    /// Drive Claws terminals and the bus of a workspace (`.claws/claws.sock`).
    ///
    /// Example: openfiles claws exec 1 'cargo test'
    Claws(crate::claws::client::ClawsArgs),

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
        Command::Claws(args) => crate::claws::client::run(args, cli.config.as_deref()),
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
