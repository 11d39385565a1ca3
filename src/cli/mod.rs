//! Command-line parsing, and only that: every subcommand hands its arguments to the module
//! that owns the work. `--help` on each command carries an example.

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

mod args;
mod hook;

pub use args::*;
#[cfg(test)]
use hook::is_hook_call_in;
use hook::{hooks, is_hook_call};
pub use hook::{HookArgs, HooksArgs, HooksCommand, HooksStatusArgs, Suggest};

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
    /// Control socket to serve or to talk to [default: $XDG_RUNTIME_DIR/openfiles/openfiles.sock, else /run/user/UID/openfiles/openfiles.sock]
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

    /// Show what the running service is doing (or, with --short, one line for a prompt).
    ///
    /// Examples: openfiles status --json; openfiles status --short (in a shell prompt or a
    /// tmux status line: unreviewed files, errors, warnings, last agent, paused)
    Status(StatusArgs),

    /// Review what the agents changed: the session's files by agent, errors first.
    ///
    /// An interactive view in a terminal: space marks a file reviewed, n jumps to the next
    /// unreviewed one, e opens $EDITOR at the first problem, d shows the diff against HEAD.
    /// Marks are kept by the service; a new edit of a file clears its mark. Without a
    /// terminal, use --list or --json.
    ///
    /// Example: openfiles review ~/src/app
    Review(ReviewArgs),

    /// Stop noticing edits in a workspace (watcher, queue, hooks); the session is kept.
    ///
    /// Agents' hooks are told the workspace is paused. `openfiles check` still works.
    ///
    /// Example: openfiles pause ~/src/app
    Pause(OptPathArgs),

    /// Notice edits in a paused workspace again.
    ///
    /// Example: openfiles resume ~/src/app
    Resume(OptPathArgs),

    /// Print a prompt for a model, made from the current session.
    ///
    /// fix: the current problems with file:line:col; agents-md: the instructions section for
    /// AGENTS.md / CLAUDE.md / GEMINI.md (--install puts it there between markers, --uninstall
    /// removes exactly it); small-steps: work in small checked steps; pr-description: a
    /// pull-request description of the session's changes.
    ///
    /// Example: openfiles prompt fix --copy
    Prompt(PromptArgs),

    /// Show what the service logged (its `serve.log` without journald, else the journal).
    ///
    /// Example: openfiles logs -f
    Logs(LogsArgs),
    /// Register a workspace folder with the running service (remembered across restarts).
    ///
    /// Example: openfiles add ~/src/app
    Add(AddArgs),

    /// Trust a workspace folder to run its own tools: its `node_modules/.bin` servers, its
    /// `tsc`/`tsgo`, and checkers that run its code (`cargo check`: build scripts and proc
    /// macros). Folders you name yourself (`serve -w`, `service.workspaces`, `openfiles add`)
    /// are trusted already; one an agent's edit or discovery brings is not until you say so.
    ///
    /// Example: openfiles trust ~/src/app    (openfiles trust --revoke ~/src/app)
    Trust(TrustArgs),

    /// Ask the workspace's language server (the one that checks the file, warm): where a
    /// symbol is defined, who uses it, its type and docs, a file's symbols, who calls it.
    /// TARGET is PATH:LINE:COL (1-based, columns in characters), PATH#SYMBOL (a name path
    /// such as Class/method) or, for `symbols`, PATH.
    ///
    /// Example: openfiles nav refs src/app.py#Greeter/greet
    Nav(NavArgs),

    /// Unregister a workspace folder.
    ///
    /// Example: openfiles forget ~/src/app
    Forget(PathArgs),

    /// Install, remove or inspect the systemd user units (Linux) or LaunchAgent (macOS).
    ///
    /// For installs without a Nix module. Example: openfiles service install --now
    Service(crate::setup::ServiceArgs),

    /// Check the installation: service, units, plugins, language tools, hooks, limits.
    ///
    /// Exit status 1 when something is broken. Example: openfiles doctor
    Doctor(crate::setup::DoctorArgs),

    /// Report an agent's edit and print the diagnostics back in the agent's format.
    ///
    /// Run by agents' hooks with the hook payload on stdin; always exits 0. Unknown extra
    /// arguments (such as installers' `--tag` markers) are ignored.
    ///
    /// Example: echo '{"tool_name":"Edit","tool_input":{"file_path":"/w/a.rs"}}' | openfiles hook --agent claude
    Hook(HookArgs),

    /// Install, remove or show agents' hook configurations (or, with --mcp, their MCP server).
    ///
    /// Example: openfiles hooks install --agent claude --agent codex --dry-run
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// List the plugins found, loaded or refused (and why).
    ///
    /// Searches config `plugins.paths`, `OPENFILES_PLUGIN_PATH` and `../lib/openfiles/plugins`
    /// next to the executable (in a folder, the libraries named `libopenfiles_plugin_<name>`),
    /// starting each plugin the way the service would.
    ///
    /// Example: openfiles plugins --json
    Plugins(PluginsArgs),

    /// Check files now and print their problems (exit status 1 when the threshold is met).
    ///
    /// Uses the running service when there is one (warm language servers), otherwise starts
    /// the plugins for this run only.
    ///
    /// Example: openfiles check --fail-on warning src/main.rs src/lib.rs
    Check(CheckArgs),

    /// Manage the session: the files changed since it began, listed in diagnostics.json.
    ///
    /// Example: openfiles session clear ~/src/app
    #[command(subcommand)]
    Session(SessionCommand),

    /// Internal: run one plugin library in this process, speaking JSON on stdio.
    #[command(hide = true)]
    PluginHost(PluginHostArgs),

    /// Drive Claws terminals and the bus of a workspace (`.claws/claws.sock`).
    ///
    /// Example: openfiles claws exec 1 'cargo test'
    Claws(crate::claws_client::ClawsArgs),

    /// Serve MCP on stdio: diagnostics and Claws tools for an agent (started by the agent).
    ///
    /// Example (in an agent's MCP configuration): openfiles mcp --workspace ~/src/app
    Mcp(McpArgs),

    /// Print shell completions.
    ///
    /// Example: openfiles completions bash > ~/.local/share/bash-completion/completions/openfiles
    Completions(CompletionsArgs),
}

/// Parse the command line and run it; the returned code is the process exit status.
pub fn run() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // The hook never fails an agent, not even on arguments it does not understand.
        Err(err) if is_hook_call() && !err.use_stderr() => err.exit(),
        Err(_) if is_hook_call() => return std::process::ExitCode::SUCCESS,
        Err(err) => err.exit(),
    };
    // A service a client starts on first use gets the config this command was given.
    crate::autostart::use_config(cli.config.as_deref());
    match dispatch(cli) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(err) => {
            eprintln!("openfiles: {}", error_line(&err));
            std::process::ExitCode::from(2)
        }
    }
}

/// Hand each subcommand's arguments to the module that owns the work.
fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    let socket = cli.socket.as_deref();
    match cli.command {
        Command::Serve(args) => crate::service::run(crate::service::Options {
            socket: cli.socket.clone(),
            config: cli.config.clone(),
            workspaces: args.workspaces,
            check_config: args.check_config,
            autostarted: args.autostarted,
        }),
        Command::Status(args) if args.short => {
            crate::review::short::run(args.dir.as_deref(), args.json)
        }
        Command::Status(args) => crate::admin::status(socket, args.json),
        Command::Review(args) => crate::review::run(
            socket,
            &crate::review::Options {
                dir: args.dir,
                json: args.json,
                list: args.list,
                first_frame_only: args.first_frame,
            },
        ),
        Command::Pause(args) => crate::review::pause(socket, args.dir.as_deref(), true),
        Command::Resume(args) => crate::review::pause(socket, args.dir.as_deref(), false),
        Command::Prompt(args) => prompt(socket, args),
        Command::Add(args) => crate::admin::add(socket, &args.dir, args.force),
        Command::Trust(args) => crate::admin::trust(
            socket,
            args.dir.as_deref().unwrap_or(Path::new(".")),
            !args.revoke,
        ),
        Command::Nav(a) => crate::nav::run(socket, a.options()),
        Command::Forget(args) => crate::admin::forget(socket, &args.dir),
        Command::Service(args) => crate::setup::run_service(args, cli.socket.clone()),
        Command::Doctor(args) => {
            crate::setup::run_doctor(args, cli.socket.clone(), cli.config.clone())
        }
        Command::Hook(mut args) => Ok(crate::hook::run(&crate::hook::Options {
            agent: args.take_ignored_agent(),
            event: args.event,
            no_feedback: args.no_feedback,
            verbose: args.verbose,
            socket: cli.socket.clone(),
        })),
        Command::Hooks(cmd) => hooks(cmd),
        Command::Logs(args) => crate::logs::run(args.follow, args.lines),
        Command::Check(args) => check(socket, cli.config.as_deref(), args),
        Command::Session(SessionCommand::Clear { dir }) => {
            crate::admin::session_clear(socket, dir.as_deref())
        }
        Command::Session(SessionCommand::AddGit { dir, timeout }) => crate::review::git::run(
            socket,
            dir.as_deref(),
            std::time::Duration::from_secs(timeout),
        ),
        Command::Plugins(args) => crate::plugin_host::list::run(cli.config.as_deref(), args.json),
        Command::PluginHost(args) => crate::plugin_host::child::run(&args.library),
        Command::Claws(crate::claws_client::ClawsArgs {
            cmd: crate::claws_client::ClawsCmd::Serve { dir },
            ..
        }) => crate::claws_serve::run(&dir, cli.config.as_deref()),
        Command::Claws(args) => crate::claws_client::run(args, cli.config.as_deref(), socket),
        Command::Mcp(args) => crate::mcp::run(crate::mcp::Options {
            workspace: args.workspace,
            socket: cli.socket.clone(),
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
    }
}

/// `openfiles prompt KIND`.
fn prompt(socket: Option<&Path>, args: PromptArgs) -> anyhow::Result<u8> {
    crate::review::prompt::run(
        socket,
        args.kind,
        &crate::review::prompt::Options {
            dir: args.dir,
            copy: args.copy,
            install: args.install,
            uninstall: args.uninstall,
            files: args.files,
        },
    )
}

/// `openfiles check`.
fn check(socket: Option<&Path>, config: Option<&Path>, args: CheckArgs) -> anyhow::Result<u8> {
    crate::check::run(
        socket,
        config,
        crate::check::Options {
            paths: args.paths,
            json: args.json,
            fail_on: args.fail_on,
            timeout: std::time::Duration::from_secs(args.timeout),
            tests: args.tests,
            fix: match (args.fix, args.unsafe_fixes) {
                (false, _) => None,
                (true, false) => Some(crate::check::FixMode::Safe),
                (true, true) => Some(crate::check::FixMode::Unsafe),
            },
        },
    )
}

/// One line for an error and its causes, each said once: a cause whose text the message
/// above it already includes (a `thiserror` message that quotes its `#[source]`) is not
/// repeated.
pub fn error_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod hook_call_tests {
    use clap::CommandFactory;

    use super::{is_hook_call_in, Cli};

    fn hook_call(cmd: clap::Command, args: &[&str]) -> bool {
        is_hook_call_in(cmd, args.iter().map(std::ffi::OsString::from))
    }

    /// `hook` is told apart by clap's own reading of the line, so a global option with a
    /// value — one added after this test was written too — never hides it.
    #[test]
    fn a_hook_call_is_recognised_behind_any_global_option() {
        for args in [
            &["openfiles", "hook", "--agent"][..],
            &["openfiles", "--config", "X", "hook", "--agent"],
            &[
                "openfiles",
                "--socket=/s",
                "--config",
                "X",
                "hook",
                "--event",
            ],
            &["openfiles", "--bogus", "hook", "--agent", "claude"],
            // A newer openfiles's global option with its value.
            &["openfiles", "--newer=1", "--newest", "X", "hook", "--agent"],
        ] {
            assert!(hook_call(Cli::command(), args), "{args:?}");
        }
        for args in [
            &["openfiles", "status", "--bogus"][..],
            &["openfiles", "--config", "hook"],
            &["openfiles", "hooks", "install", "--agent"],
        ] {
            assert!(!hook_call(Cli::command(), args), "{args:?}");
        }
        // A global option with a value the old name list did not know.
        let more = Cli::command().arg(
            clap::Arg::new("profile")
                .long("profile")
                .global(true)
                .num_args(1),
        );
        assert!(hook_call(
            more,
            &["openfiles", "--profile", "X", "hook", "--agent"]
        ));
    }
}

#[cfg(test)]
mod completion_tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// Every argument of every subcommand is defined consistently (unique ids: a global flag
    /// named like a subcommand's argument made `openfiles claws raw` panic).
    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
        let raw = Cli::try_parse_from(["openfiles", "claws", "raw", "{}"]);
        assert!(raw.is_ok(), "{raw:?}");
    }

    fn fish() -> String {
        let mut buf = Vec::new();
        clap_complete::generate(
            clap_complete::Shell::Fish,
            &mut Cli::command(),
            "openfiles",
            &mut buf,
        );
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn completions_offer_agent_ids_for_every_agent_option() {
        let text = fish();
        let agent_lines: Vec<&str> = text.lines().filter(|l| l.contains("-l agent")).collect();
        // hook, hooks install, hooks uninstall, hooks status
        assert_eq!(agent_lines.len(), 4, "{text}");
        for line in &agent_lines {
            assert!(
                line.contains("claude") && line.contains("codex") && line.contains("opencode"),
                "{line}"
            );
        }
        assert!(
            agent_lines.iter().any(|l| l.contains("vscode")),
            "the hook's own ids: {text}"
        );
    }

    #[test]
    fn any_agent_id_is_still_accepted() {
        let cli = Cli::try_parse_from(["openfiles", "hook", "--agent", "someday-agent"]).unwrap();
        match cli.command {
            super::Command::Hook(h) => assert_eq!(h.agent.as_deref(), Some("someday-agent")),
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from([
            "openfiles",
            "hooks",
            "status",
            "--agent",
            "claude,codex",
            "--json",
        ]);
        assert!(cli.is_ok());
    }
}

#[cfg(test)]
mod error_tests {
    use super::error_line;

    #[test]
    fn each_cause_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file (os error 2)");
        let err = anyhow::Error::new(crate::config::ConfigError::Read {
            path: "/x/config.toml".into(),
            source: io,
        });
        assert_eq!(
            error_line(&err),
            "cannot read /x/config.toml: No such file (os error 2)"
        );
        let err = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_line(&err), "outer: inner");
    }
}
