//! The arguments of the subcommands (clap's derive), one struct per subcommand that takes
//! more than a flag or two; `openfiles hook`'s and `hooks`' live in [`super::hook`].

use std::path::PathBuf;

use clap::{Args, Subcommand};

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
    /// Most locations or symbols to show per page (default 200).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Which page of a capped answer to show (1-based; the answer says which is next).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub page: Option<u64>,
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

impl NavArgs {
    /// What `openfiles nav` is asked.
    pub fn options(self) -> crate::nav::Options {
        crate::nav::Options {
            what: self.what,
            target: self.target,
            query: self.query,
            limit: self.limit,
            page: self.page.map(|p| p as usize),
            outgoing: self.outgoing,
            to: self.to,
            apply: self.apply,
            json: self.json,
        }
    }
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
    /// Also run the project's tests the files reach (pytest, cargo test, go test, vitest,
    /// jest) and report the failing ones. Without it `check` runs no test. Tests run the
    /// project's code: only in a trusted workspace (`openfiles trust`); in another one this
    /// says so and runs none.
    #[arg(long)]
    pub tests: bool,
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
