//! `openfiles hook` and `openfiles hooks` on the command line: their arguments, how a hook
//! call is recognised even when the rest of the line does not parse (the hook never fails an
//! agent), and the hand-over of `hooks` to the installer.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Cli;

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
    pub(super) fn take_ignored_agent(&mut self) -> Option<String> {
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

/// True when the command line asks for `hook`, as clap itself reads it (every global
/// option and its value included, whatever options there are), even when the rest of the
/// line does not parse: the hook never fails an agent.
pub(super) fn is_hook_call() -> bool {
    use clap::CommandFactory;
    is_hook_call_in(Cli::command(), std::env::args_os())
}

/// Clap's reading of `args`: the subcommand it finds, once each argument it rejects (an
/// option or subcommand it does not know, say one of a newer openfiles) is left out.
pub(super) fn is_hook_call_in(
    cmd: clap::Command,
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> bool {
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

pub(super) fn hooks(cmd: HooksCommand) -> anyhow::Result<u8> {
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
