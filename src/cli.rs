//! Command-line parsing, and only that: every subcommand hands its arguments to the module
//! that owns the work. `--help` on each command carries an example.

use std::path::{Path, PathBuf};

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

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Register this folder as a workspace for this run (repeatable).
    #[arg(long = "workspace", short = 'w', value_name = "DIR")]
    pub workspaces: Vec<PathBuf>,

    /// Validate the configuration (user file and every workspace's) and exit.
    #[arg(long)]
    pub check_config: bool,

    /// Started on first use by a client (see `crate::autostart`): logs go to the log file
    /// only, `status` says so, and the service exits after `[service] idle_exit_seconds`.
    #[arg(long, hide = true)]
    pub autostarted: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print the raw status as JSON (with --short: the summary as one JSON line).
    #[arg(long)]
    pub json: bool,
    /// One line for a shell prompt or tmux, read from the files the service writes (it never
    /// starts the service); nothing outside a session.
    #[arg(long)]
    pub short: bool,
    /// With --short: the folder whose workspace to describe [default: the current one].
    #[arg(value_name = "DIR", requires = "short")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// A folder of the workspace [default: the current one].
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the session with its review data as JSON (no terminal needed).
    #[arg(long, conflicts_with = "list")]
    pub json: bool,
    /// Print one line per file, grouped by agent (no terminal needed).
    #[arg(long)]
    pub list: bool,
    /// Draw the first frame and exit (for benchmarks).
    #[arg(long, hide = true)]
    pub first_frame: bool,
}

#[derive(Debug, Args)]
pub struct OptPathArgs {
    /// A folder of the workspace [default: the current one].
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// Which prompt.
    #[arg(value_enum)]
    pub kind: crate::review::prompt::Kind,
    /// A folder of the workspace [default: the current one].
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Copy to the clipboard instead of printing (OSC 52 through the terminal, and wl-copy,
    /// xclip, xsel or pbcopy when present); says which were used.
    #[arg(long)]
    pub copy: bool,
    /// agents-md: put the section in AGENTS.md, CLAUDE.md and GEMINI.md (those that exist;
    /// else a new AGENTS.md) between markers; again: update it.
    #[arg(long, conflicts_with_all = ["uninstall", "copy"])]
    pub install: bool,
    /// agents-md: remove exactly the section --install added.
    #[arg(long, conflicts_with = "copy")]
    pub uninstall: bool,
    /// With --install/--uninstall: this file (relative to DIR) instead (repeatable).
    #[arg(long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Keep printing new lines as they are logged.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// How many of the last lines to print first.
    #[arg(long, short = 'n', default_value_t = 50, value_name = "LINES")]
    pub lines: usize,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The workspace folder.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Serve it even when it is your home folder (system folders are always refused).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct NavArgs {
    #[arg(value_enum)]
    pub what: crate::nav::What,
    /// PATH:LINE:COL, PATH#SYMBOL or PATH.
    pub target: String,
    /// `symbols` only: search the workspace's symbols for this text.
    #[arg(long)]
    pub query: Option<String>,
    /// Most locations or symbols to show (default 200).
    #[arg(long)]
    pub limit: Option<usize>,
    /// `calls` only: what the function calls, not who calls it.
    #[arg(long)]
    pub outgoing: bool,
    /// `rename` only: the new name.
    #[arg(long, value_name = "NAME")]
    pub to: Option<String>,
    /// `rename` only: apply the edits (each file only if unchanged since), not just print them.
    #[arg(long)]
    pub apply: bool,
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The workspace folder [default: the current folder].
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Stop trusting it.
    #[arg(long)]
    pub revoke: bool,
}

#[derive(Debug, Args)]
pub struct PathArgs {
    /// The workspace folder.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The agent: claude codex copilot vscode gemini qwen kimi cursor windsurf kiro cline droid
    /// goose opencode unknown (anything else counts as unknown).
    #[arg(long, value_name = "ID", value_parser = Suggest(crate::hook::output::AGENT_IDS),
          hide_possible_values = true)]
    pub agent: Option<String>,

    /// The hook event, when the agent has several (e.g. afterFileEdit, postToolUse).
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,

    /// Only report the edit; do not wait for or print diagnostics.
    #[arg(long)]
    pub no_feedback: bool,

    /// Say on stderr why nothing was printed.
    #[arg(long, short = 'v')]
    pub verbose: bool,

    /// Marker added by `openfiles hooks install`; ignored.
    #[arg(long, hide = true, value_name = "TAG")]
    pub tag: Vec<String>,

    /// Anything else is ignored.
    #[arg(hide = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub ignored: Vec<String>,
}

impl HookArgs {
    /// Known options that came after an unknown one land in `ignored`; pick them up from
    /// there so `hook --tag x --agent claude` still means claude. Returns the agent.
    fn take_ignored_agent(&mut self) -> Option<String> {
        let mut rest = std::mem::take(&mut self.ignored).into_iter();
        while let Some(arg) = rest.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            match name.as_str() {
                "--agent" => self.agent = inline.or_else(|| rest.next()).or(self.agent.take()),
                "--event" => self.event = inline.or_else(|| rest.next()).or(self.event.take()),
                "--no-feedback" => self.no_feedback = true,
                "--verbose" | "-v" => self.verbose = true,
                _ => {}
            }
        }
        self.agent.take()
    }
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Write (merge) each agent's hook configuration so it runs `openfiles hook`.
    ///
    /// Shows the change as a diff before writing it.
    ///
    /// Example: openfiles hooks install --agent claude --workspace ~/src/app
    Install(HooksArgs),
    /// Remove exactly what `hooks install` added.
    ///
    /// Example: openfiles hooks uninstall --agent claude
    Uninstall(HooksArgs),
    /// Show which agents have the hook installed, in the workspace and for the user.
    ///
    /// Example: openfiles hooks status --json
    Status(HooksStatusArgs),
}

#[derive(Debug, Args)]
pub struct HooksStatusArgs {
    #[command(flatten)]
    pub hooks: HooksArgs,
    /// Print the states as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A value parser that takes any text but offers `ids` to shell completions (an unknown
/// agent id is meaningful: it counts as `unknown`, or is refused with a list by `hooks`).
#[derive(Debug, Clone, Copy)]
pub struct Suggest(pub &'static [&'static str]);

impl clap::builder::TypedValueParser for Suggest {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::TypedValueParser::parse_ref(
            &clap::builder::StringValueParser::new(),
            cmd,
            arg,
            value,
        )
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.0
                .iter()
                .map(|id| clap::builder::PossibleValue::new(*id)),
        ))
    }
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    /// Agent id (repeatable or comma-separated): claude codex copilot gemini cursor windsurf
    /// opencode. Uninstall and status default to all.
    #[arg(long = "agent", value_name = "ID",
          value_parser = Suggest(crate::hook::install::agents::SUPPORTED),
          hide_possible_values = true)]
    pub agents: Vec<String>,

    /// The workspace folder whose configuration to change [default: the current directory].
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub workspace: Option<PathBuf>,

    /// Change the user's configuration (in the home directory) instead.
    #[arg(long)]
    pub user: bool,

    /// Show the diff only; write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// The program agents should run [default: `openfiles` when that is this program on
    /// PATH, else this program's absolute path]. Refused when it does not resolve.
    #[arg(long, value_name = "PATH")]
    pub bin: Option<String>,

    /// Configure the agents' MCP server (`openfiles mcp`) instead of their hooks.
    #[arg(long)]
    pub mcp: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files to check.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print the entries as JSON (the diagnostics.json shape).
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when there is an error (or, with `warning`, a warning too).
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: crate::check::FailOn,
    /// Give up on a checker after this many seconds.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub timeout: u64,
    /// Apply the checkers' safe fixes (rustc's machine-applicable suggestions, ruff's safe
    /// fixes, a language server's preferred quick fixes), check again, and say what changed.
    #[arg(long)]
    pub fix: bool,
    /// With --fix: also apply fixes the checker does not call safe (each problem's first).
    #[arg(long = "unsafe", requires = "fix")]
    pub unsafe_fixes: bool,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Forget every session file of a workspace (default: the one holding the current folder).
    Clear {
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Add the uncommitted changes and untracked files (ignores respected) under DIR to the
    /// session and check them: the files changed before openfiles was watching.
    ///
    /// Example: openfiles session add-git ~/src/app
    AddGit {
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Give up waiting for the checkers after this many seconds.
        #[arg(long, default_value_t = 120, value_name = "SECONDS")]
        timeout: u64,
    },
}

#[derive(Debug, Args)]
pub struct PluginsArgs {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PluginHostArgs {
    /// The plugin library to load.
    #[arg(value_name = "LIBRARY")]
    pub library: PathBuf,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// The workspace folder [default: the one holding the current directory]
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Marker added by `openfiles hooks install --mcp`; ignored.
    #[arg(long, hide = true, value_name = "TAG")]
    pub tag: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// True when the command line asks for `hook`, as clap itself reads it (every global
/// option and its value included, whatever options there are), even when the rest of the
/// line does not parse: the hook never fails an agent.
fn is_hook_call() -> bool {
    use clap::CommandFactory;
    is_hook_call_in(Cli::command(), std::env::args_os())
}

/// Clap's reading of `args`: the subcommand it finds, once each argument it rejects (an
/// option or subcommand it does not know, say one of a newer openfiles) is left out.
fn is_hook_call_in(cmd: clap::Command, args: impl IntoIterator<Item = std::ffi::OsString>) -> bool {
    use clap::error::{ContextKind, ContextValue};
    let mut args: Vec<std::ffi::OsString> = args.into_iter().collect();
    for _ in 0..args.len() {
        let lenient = cmd.clone().ignore_errors(true).try_get_matches_from(&args);
        if let Some(name) = lenient.ok().as_ref().and_then(|m| m.subcommand_name()) {
            return name == "hook";
        }
        let Err(e) = cmd.clone().try_get_matches_from(&args) else {
            return false;
        };
        let rejected = [ContextKind::InvalidArg, ContextKind::InvalidSubcommand]
            .into_iter()
            .find_map(|k| match e.get(k) {
                Some(ContextValue::String(s)) => Some(s.clone()),
                _ => None,
            });
        let Some(rejected) = rejected else {
            return false;
        };
        let at = args.iter().skip(1).position(|a| {
            a.to_str().is_some_and(|a| {
                a == rejected
                    || a.strip_prefix(rejected.as_str())
                        .is_some_and(|r| r.starts_with('='))
            })
        });
        match at {
            Some(i) => args.remove(i + 1),
            None => return false,
        };
    }
    false
}

fn hooks(cmd: HooksCommand) -> anyhow::Result<u8> {
    use crate::hook::install::{self, Action};
    let (action, args, json) = match cmd {
        HooksCommand::Install(a) => (Some(Action::Install), a, false),
        HooksCommand::Uninstall(a) => (Some(Action::Uninstall), a, false),
        HooksCommand::Status(a) => (None, a.hooks, a.json),
    };
    let req = install::Request {
        action,
        json,
        mcp: args.mcp,
        agents: args.agents,
        workspace: args.workspace,
        user: args.user,
        dry_run: args.dry_run,
        bin: args.bin,
    };
    let this_exe = || Ok(crate::setup::install::chosen_exe()?.path);
    install::run(req, this_exe, &mut std::io::stdout().lock())
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
    let result = match cli.command {
        Command::Serve(args) => crate::service::run(crate::service::Options {
            socket: cli.socket,
            config: cli.config,
            workspaces: args.workspaces,
            check_config: args.check_config,
            autostarted: args.autostarted,
        }),
        Command::Status(args) if args.short => {
            crate::review::short::run(args.dir.as_deref(), args.json)
        }
        Command::Status(args) => crate::admin::status(cli.socket.as_deref(), args.json),
        Command::Review(args) => crate::review::run(
            cli.socket.as_deref(),
            &crate::review::Options {
                dir: args.dir,
                json: args.json,
                list: args.list,
                first_frame_only: args.first_frame,
            },
        ),
        Command::Pause(args) => {
            crate::review::pause(cli.socket.as_deref(), args.dir.as_deref(), true)
        }
        Command::Resume(args) => {
            crate::review::pause(cli.socket.as_deref(), args.dir.as_deref(), false)
        }
        Command::Prompt(args) => crate::review::prompt::run(
            cli.socket.as_deref(),
            args.kind,
            &crate::review::prompt::Options {
                dir: args.dir,
                copy: args.copy,
                install: args.install,
                uninstall: args.uninstall,
                files: args.files,
            },
        ),
        Command::Add(args) => crate::admin::add(cli.socket.as_deref(), &args.dir, args.force),
        Command::Trust(args) => crate::admin::trust(
            cli.socket.as_deref(),
            args.dir.as_deref().unwrap_or(Path::new(".")),
            !args.revoke,
        ),
        Command::Nav(a) => crate::nav::run(
            cli.socket.as_deref(),
            crate::nav::Options {
                what: a.what,
                target: a.target,
                query: a.query,
                limit: a.limit,
                outgoing: a.outgoing,
                to: a.to,
                apply: a.apply,
                json: a.json,
            },
        ),
        Command::Forget(args) => crate::admin::forget(cli.socket.as_deref(), &args.dir),
        Command::Service(args) => crate::setup::run_service(args, cli.socket),
        Command::Doctor(args) => crate::setup::run_doctor(args, cli.socket, cli.config),
        Command::Hook(mut args) => Ok(crate::hook::run(&crate::hook::Options {
            agent: args.take_ignored_agent(),
            event: args.event,
            no_feedback: args.no_feedback,
            verbose: args.verbose,
            socket: cli.socket,
        })),
        Command::Hooks(cmd) => hooks(cmd),
        Command::Logs(args) => crate::logs::run(args.follow, args.lines),
        Command::Check(args) => crate::check::run(
            cli.socket.as_deref(),
            cli.config.as_deref(),
            crate::check::Options {
                paths: args.paths,
                json: args.json,
                fail_on: args.fail_on,
                timeout: std::time::Duration::from_secs(args.timeout),
                fix: match (args.fix, args.unsafe_fixes) {
                    (false, _) => None,
                    (true, false) => Some(crate::check::FixMode::Safe),
                    (true, true) => Some(crate::check::FixMode::Unsafe),
                },
            },
        ),
        Command::Session(SessionCommand::Clear { dir }) => {
            crate::admin::session_clear(cli.socket.as_deref(), dir.as_deref())
        }
        Command::Session(SessionCommand::AddGit { dir, timeout }) => crate::review::git::run(
            cli.socket.as_deref(),
            dir.as_deref(),
            std::time::Duration::from_secs(timeout),
        ),
        Command::Plugins(args) => crate::plugin_host::list::run(cli.config.as_deref(), args.json),
        Command::PluginHost(args) => crate::plugin_host::child::run(&args.library),
        Command::Claws(args) => {
            crate::claws_client::run(args, cli.config.as_deref(), cli.socket.as_deref())
        }
        Command::Mcp(args) => crate::mcp::run(crate::mcp::Options {
            workspace: args.workspace,
            socket: cli.socket,
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
            eprintln!("openfiles: {}", error_line(&err));
            std::process::ExitCode::from(2)
        }
    }
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
