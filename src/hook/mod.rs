//! `openfiles hook`: what an agent runs after each edit (`agent-hooks.md`).
//!
//! Read the payload ([`input`], [`payload`]), report the edited paths to the service
//! ([`online`]) or, when none answers, to a workspace served by the editor extension
//! ([`fallback`]), wait for their diagnostics unless this agent or event takes no feedback,
//! and print the feedback ([`feedback`], [`report`]) in the agent's format ([`output`]).
//! Results that came after an earlier hook's deadline are told once with the next hook of
//! the same agent session ([`late`]).
//!
//! At a session start (`--event SessionStart`, or the payload's `hook_event_name`) there is
//! no edit: the hook asks the service to start the checkers of the payload's working folder
//! in the background (`warm`) and prints nothing, which every agent takes as "no context".
//!
//! Invariants: the process always exits 0 and prints at most one JSON line; garbage in
//! means nothing out; diagnostics go to stderr only with `--verbose`. The hook path starts
//! no async runtime and no threads: its budget is a few milliseconds and a few MiB.
//!
//! `hooks install|uninstall|status` (writing agents' configurations) lives in [`install`].

pub mod fallback;
pub mod feedback;
pub mod input;
pub mod install;
pub mod late;
pub mod online;
pub mod output;
pub mod payload;
pub mod report;
pub mod watch;

use std::io::Write;
use std::path::{Path, PathBuf};

use output::Agent;

/// Arguments of `openfiles hook`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--agent`; missing or unknown means `unknown`.
    pub agent: Option<String>,
    /// `--event`, when the agent has several hook events.
    pub event: Option<String>,
    /// Only report the edit.
    pub no_feedback: bool,
    /// Print a diagnostic line on stderr when something is skipped or fails.
    pub verbose: bool,
    /// `--socket`, else the default control socket.
    pub socket: Option<PathBuf>,
}

/// Run the hook; the exit status is always 0, even if a bug panics (silently, unless
/// `--verbose`).
pub fn run(opts: &Options) -> u8 {
    if !opts.verbose {
        std::panic::set_hook(Box::new(|_| {}));
    }
    let line = std::panic::catch_unwind(|| {
        let input = input::read_stdin(input::STDIN_LIMIT);
        let parsed = payload::parse_bytes(&input);
        handle(opts, &parsed)
    });
    if let Ok(Some(line)) = line {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(line.as_bytes());
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
    0
}

fn say(opts: &Options, msg: std::fmt::Arguments<'_>) {
    if opts.verbose {
        eprintln!("openfiles hook: {msg}");
    }
}

/// Everything after reading stdin: the JSON line to print, if any.
pub fn handle(opts: &Options, parsed: &payload::Parsed) -> Option<String> {
    let agent = Agent::from_id(opts.agent.as_deref());
    let event = opts.event.as_deref().or(parsed.event.as_deref());
    if event.is_some_and(is_session_start) {
        warm(opts, parsed);
        return None;
    }
    if parsed.paths.is_empty() {
        match &parsed.invalid {
            Some(why) => say(opts, format_args!("{why}; nothing to report")),
            None => say(
                opts,
                format_args!(
                    "no edited paths in the payload (tool {:?}: not a file-writing tool, or no path field)",
                    parsed.tool.as_deref().unwrap_or("unknown")
                ),
            ),
        }
        return None;
    }
    let process_cwd = std::env::current_dir().ok();
    let paths: Vec<PathBuf> = parsed
        .paths
        .iter()
        .map(|p| match (&process_cwd, p.is_relative()) {
            (Some(cwd), true) => cwd.join(p),
            _ => p.clone(),
        })
        .collect();
    let feedback = !opts.no_feedback && agent.wants_feedback(event);
    let ts = openfiles_wire::spec::now_ms();
    let session = session_key(agent, parsed.session.as_deref());
    let edit = online::Edit {
        paths: &paths,
        agent: agent.id(),
        tool: parsed.tool.as_deref(),
        event,
        ts,
        session: Some(&session),
    };
    let reported = match crate::paths::control_socket(opts.socket.as_deref()) {
        Ok(socket) => online::report(&socket, &edit, feedback),
        Err(err) => Err(online::ServiceError::NoSocket(err)),
    };
    let text = match reported {
        Ok(text) => text,
        Err(err @ (online::ServiceError::NotDelivered(_) | online::ServiceError::NoSocket(_))) => {
            if err.is_refusal() {
                // Someone else's socket or folder: said even without --verbose.
                eprintln!("openfiles hook: {err}; trying the editor's queue");
            } else {
                say(opts, format_args!("{err}; trying the editor's queue"));
            }
            let starts = starts(&paths, parsed.cwd.as_deref(), process_cwd.as_deref());
            without_service(opts, &starts, &edit, feedback)
        }
        Err(err) => {
            say(opts, format_args!("{err}"));
            None
        }
    };
    let text = text?;
    output::render(agent, &text)
}

/// Whether `event` announces a new (or resumed) agent session: Claude Code's, Codex's and
/// Gemini CLI's `SessionStart`.
pub fn is_session_start(event: &str) -> bool {
    event.eq_ignore_ascii_case("SessionStart") || event.eq_ignore_ascii_case("session_start")
}

/// The key the service keeps late results under: the agent and its session id, or the
/// agent alone when the payload names no session.
pub fn session_key(agent: Agent, session: Option<&str>) -> String {
    match session {
        Some(id) => format!("{}/{id}", agent.id()),
        None => agent.id().to_owned(),
    }
}

/// A session starts: ask the service to warm the checkers of the payload's working folder.
/// Needs the payload's `cwd` (an agent's session-start payload has it; a hand-run or
/// `doctor`'s `{}` does not, and warms nothing). Where nothing socket-activates the service
/// this starts it (`crate::autostart`); no fallback: without a service there is nothing to
/// warm.
fn warm(opts: &Options, parsed: &payload::Parsed) {
    let Some(cwd) = parsed.cwd.as_deref() else {
        say(
            opts,
            format_args!("session start without a cwd; nothing to warm"),
        );
        return;
    };
    let dir = match (cwd.is_relative(), std::env::current_dir()) {
        (true, Ok(here)) => here.join(cwd),
        _ => cwd.to_owned(),
    };
    let result = crate::paths::control_socket(opts.socket.as_deref())
        .map_err(|e| e.to_string())
        .and_then(|socket| online::warm(&socket, &dir).map_err(|e| e.to_string()));
    match result {
        Ok(r) => say(
            opts,
            format_args!(
                "warming the checkers of {}{}",
                r.root.display(),
                if r.started {
                    ""
                } else {
                    " (already under way)"
                }
            ),
        ),
        Err(e) => say(opts, format_args!("cannot warm {}: {e}", dir.display())),
    }
}

/// Where the fallback starts looking for a workspace, in order.
fn starts(paths: &[PathBuf], cwd: Option<&Path>, process_cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(dir) = paths.first().and_then(|p| p.parent()) {
        out.push(dir.to_owned());
    }
    out.extend(cwd.map(Path::to_owned));
    for var in ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            out.push(PathBuf::from(v));
        }
    }
    out.extend(process_cwd.map(Path::to_owned));
    out
}

fn without_service(
    opts: &Options,
    starts: &[PathBuf],
    edit: &online::Edit<'_>,
    feedback: bool,
) -> Option<String> {
    let Some(ws) = fallback::find_workspace(starts) else {
        say(
            opts,
            format_args!(
                "no workspace with a live editor's heartbeat (fresh, ours, not tracked by git); nothing to do"
            ),
        );
        return None;
    };
    say(
        opts,
        format_args!(
            "no service: reporting to {} in {}",
            ws.editor.describe(),
            ws.root.display()
        ),
    );
    let feedback = feedback && ws.diagnostics_untracked;
    let watcher = if feedback {
        match fallback::watch(&ws) {
            Ok(w) => Some(w),
            Err(err) => {
                say(opts, format_args!("cannot watch diagnostics.json: {err}"));
                None
            }
        }
    } else {
        None
    };
    let line = openfiles_wire::spec::QueueLine {
        v: 1,
        ts: edit.ts,
        agent: Some(edit.agent.to_owned()),
        tool: edit.tool.map(str::to_owned),
        paths: edit.paths.to_vec(),
    };
    if let Err(err) = fallback::append_queue(&ws.root, &line) {
        say(
            opts,
            format_args!("cannot append to the queue in {}: {err}", ws.root.display()),
        );
        return None;
    }
    if !feedback {
        return None;
    }
    let (diag, forms) = fallback::wait(&ws, edit.paths, edit.ts, watcher)?;
    let entries = report::Entries {
        root: &ws.root,
        hook: &diag.hook,
        files: &diag.files,
        baseline: diag.baseline.as_ref(),
    };
    let mut report = entries.report(&forms, edit.ts);
    // Not openfiles's own finding: the agent is told whose it is.
    report.from = Some(ws.editor.describe());
    feedback::format_report(&report)
}
