//! `openfiles check`: one-shot diagnostics for scripts, CI and people.
//!
//! With a running service the paths go through its pipeline (`check` on the control socket),
//! so warm language servers answer. Without one, the plugins are started in-process for this
//! run only and the paths go through the same pipeline actor (`crate::in_process`, the one
//! entry a client has into the service's rooms; nothing persisted): the same scheduling (one
//! project-wide run per project) and merging (an item two sources report identically once),
//! so both give the same answer.
//!
//! Plain `check` runs no test; `--tests` runs the project's tests the files reach too (the
//! `tests` plugin, trusted workspaces only; in an untrusted one it says plainly that none ran
//! and why). In-process, the `tests` source is left out unless asked for; through a running
//! service, whose session runs them on edits, their items are left out of the answer.
//!
//! A directory means its files (walked with `.gitignore` rules; files the path policy skips
//! are left out). A path named on the command line that is not checked (outside every
//! workspace, ignored, missing) is an error naming why: exit status 2. Output is either JSON (the `diagnostics.json` entries) or, for people, each
//! problem with its source line and a caret under the column (codespan-reporting), in colour
//! on a terminal, with a spinner while checkers start.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use codespan_reporting::diagnostic::{Diagnostic, Label};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, termcolor};
use openfiles_plugin_api::Severity;

use crate::control::client::{Client, ClientError};
use crate::visible::{escape, escape_lines};
use openfiles_fixes::{Chosen, FixError};
use openfiles_wire::control::{Check, Rejected, WaitReply};
use openfiles_wire::spec::FileEntry;

/// When `check` exits with status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
}

/// `openfiles check` options.
pub struct Options {
    pub paths: Vec<PathBuf>,
    pub json: bool,
    pub fail_on: FailOn,
    pub timeout: Duration,
    /// `--fix` (safe fixes) or `--fix --unsafe` (every problem's first fix).
    pub fix: Option<FixMode>,
    /// `--tests`: run the project's tests too (trusted workspaces only).
    pub tests: bool,
}

/// Which fixes `--fix` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixMode {
    Safe,
    Unsafe,
}

/// Run the command; returns the exit code.
pub fn run(socket: Option<&Path>, config: Option<&Path>, opts: Options) -> anyhow::Result<u8> {
    let mut named = BTreeSet::new();
    let mut paths = Vec::new();
    for p in &opts.paths {
        let path = p
            .canonicalize()
            .with_context(|| format!("{}: no such file", p.display()))?;
        if path.is_dir() {
            paths.extend(files_under(&path));
        } else {
            named.insert(path.clone());
            paths.push(path);
        }
    }
    let spinner = Spinner::new(!opts.json);
    let (mut entries, mut rejected) = check_all(socket, config, paths, &opts, &spinner)?;
    if let Some(fix) = opts.fix {
        (entries, rejected) = fix_rounds(socket, config, &opts, fix, entries, rejected, &spinner)?;
    }
    spinner.finish();
    if opts.tests {
        if let Some(why) = tests_not_run(&entries) {
            eprintln!("openfiles: {why}");
        }
    } else {
        without_tests(&mut entries);
    }
    // Files found under a named directory that the policy skips are simply not part of it;
    // a file named on the command line that is not checked is an error.
    let refused: Vec<String> = rejected
        .iter()
        .filter(|r| named.contains(&r.path) || r.reason != "ignored")
        .map(|r| format!("{}: {}", escape(&display_path(&r.path)), escape(&r.reason)))
        .collect();
    if entries.is_empty() && !refused.is_empty() {
        anyhow::bail!("not checked: {}", refused.join("; "));
    }
    let (errors, warnings) = entries
        .iter()
        .fold((0, 0), |(e, w), (_, f)| (e + f.errors, w + f.warnings));
    let printed = if opts.json {
        let files: serde_json::Map<String, serde_json::Value> = entries
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default()))
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({ "files": files }))?;
        writeln!(std::io::stdout().lock(), "{text}").map_err(anyhow::Error::from)
    } else {
        render(&entries).and_then(|()| {
            writeln!(
                std::io::stdout().lock(),
                "{} file(s) checked: {} error(s), {} warning(s)",
                entries.len(),
                errors,
                warnings
            )
            .map_err(anyhow::Error::from)
        })
    };
    // A reader that stopped early (`check | head`) is not an error of the check: the
    // exit code still says what was found.
    if let Err(e) = printed {
        let broken_pipe = e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        }) || e.to_string().contains("Broken pipe");
        if !broken_pipe {
            return Err(e);
        }
    }
    if !refused.is_empty() {
        anyhow::bail!("not checked: {}", refused.join("; "));
    }
    let failed = match opts.fail_on {
        FailOn::Error => errors > 0,
        FailOn::Warning => errors + warnings > 0,
    };
    Ok(u8::from(failed))
}

type Entries = Vec<(String, FileEntry)>;

/// Check `paths` through the running service, or in-process when there is none.
fn check_all(
    socket: Option<&Path>,
    config: Option<&Path>,
    paths: Vec<PathBuf>,
    opts: &Options,
    spinner: &Spinner,
) -> anyhow::Result<(Entries, Vec<Rejected>)> {
    let timeout = opts.timeout;
    // No service: checked in-process. A socket that is not the user's: the same, and said.
    let service = match crate::paths::control_socket(socket) {
        Ok(path) => Client::connect(&path, Some(Duration::from_secs(5))).map_err(|e| match e {
            ClientError::Unreachable { .. } => None,
            refused => Some(refused.to_string()),
        }),
        Err(e) => Err(Some(e.to_string())),
    };
    if let Err(Some(why)) = &service {
        eprintln!("openfiles: {why}; checking without the service");
    }
    match service {
        Ok(client) => {
            spinner.say(&format!(
                "checking {} file(s) with the running service…",
                paths.len()
            ));
            through_service(client, paths, timeout)
        }
        Err(_) => {
            spinner.say("starting checkers…");
            in_process(config, paths, timeout, opts.tests, spinner)
        }
    }
}

/// How many times `--fix` applies and checks again at most (a fix that overlapped another
/// one waits for the next round, as with `ruff check --fix`).
const FIX_ROUNDS: usize = 4;

/// `--fix`: apply the checkers' fixes (safe ones, or every first fix with `--unsafe`) to the
/// checked files, check the changed files again, repeat while fixes apply; then say on stderr
/// what changed. Returns the final entries.
fn fix_rounds(
    socket: Option<&Path>,
    config: Option<&Path>,
    opts: &Options,
    fix: FixMode,
    mut entries: Entries,
    rejected: Vec<Rejected>,
    spinner: &Spinner,
) -> anyhow::Result<(Entries, Vec<Rejected>)> {
    let unsafe_too = fix == FixMode::Unsafe;
    let mut log = FixLog::default();
    for _ in 0..FIX_ROUNDS {
        let by_root = chosen_by_root(&entries, unsafe_too);
        if by_root.values().all(Vec::is_empty) {
            break;
        }
        log.skipped.clear();
        let this_round = log.apply_round(by_root)?;
        if this_round.is_empty() {
            break;
        }
        log.changed.extend(this_round);
        let paths: Vec<PathBuf> = entries.iter().map(|(_, e)| e.path.clone()).collect();
        spinner.say("checking the fixed files again…");
        let (again, _) = check_all(socket, config, paths, opts, spinner)?;
        entries = again;
    }
    spinner.finish();
    log.report(&entries, unsafe_too);
    Ok((entries, rejected))
}

/// The fixes `--fix` takes, per workspace (each is applied from its root).
fn chosen_by_root(entries: &Entries, unsafe_too: bool) -> BTreeMap<PathBuf, Vec<Chosen>> {
    let mut by_root: BTreeMap<PathBuf, Vec<Chosen>> = BTreeMap::new();
    for (_, e) in entries {
        let root = openfiles_gate::resolve::root_for(&e.path)
            .unwrap_or_else(|_| e.path.parent().unwrap_or(&e.path).to_owned());
        by_root
            .entry(root)
            .or_default()
            .extend(openfiles_fixes::chosen(&e.path, &e.items, unsafe_too));
    }
    by_root
}

/// What `--fix` did over its rounds.
#[derive(Default)]
struct FixLog {
    applied: Vec<Chosen>,
    /// Every file changed so far.
    changed: BTreeSet<PathBuf>,
    /// The last round's fixes not applied, as lines to show.
    skipped: Vec<String>,
}

impl FixLog {
    /// Apply one round's fixes, workspace by workspace; returns the files changed.
    fn apply_round(
        &mut self,
        by_root: BTreeMap<PathBuf, Vec<Chosen>>,
    ) -> anyhow::Result<BTreeSet<PathBuf>> {
        let mut this_round = BTreeSet::new();
        for (root, chosen) in by_root {
            let out =
                openfiles_fixes::apply(&root, chosen).map_err(|e| self.stopped(&e, &this_round))?;
            self.applied.extend(out.applied);
            for (c, why) in out.skipped {
                self.skipped.push(format!(
                    "{}:{}:{}: {}: not applied: {why}",
                    display_path(&c.file),
                    c.item.line,
                    c.item.column,
                    c.fix.title
                ));
            }
            this_round.extend(out.changed);
        }
        Ok(this_round)
    }

    /// The round stopped half way: every file already changed is named, this workspace's in
    /// the error, the others' (earlier rounds, other roots) here.
    fn stopped(&self, e: &FixError, this_round: &BTreeSet<PathBuf>) -> anyhow::Error {
        let others: Vec<String> = self
            .changed
            .iter()
            .chain(this_round)
            .filter(|p| !e.done.contains(p))
            .map(|p| escape(&display_path(p)).into_owned())
            .collect();
        if others.is_empty() {
            anyhow::anyhow!("{}", escape(&e.to_string()))
        } else {
            anyhow::anyhow!(
                "{}; also fixed before: {}",
                escape(&e.to_string()),
                others.join(", ")
            )
        }
    }

    /// Say on stderr what changed, what was not applied, and what only unsafe fixes would.
    fn report(&self, entries: &Entries, unsafe_too: bool) {
        let mut err = std::io::stderr().lock();
        for c in &self.applied {
            let _ = writeln!(
                err,
                "fixed {}:{}:{} {}: {} ({})",
                escape(&display_path(&c.file)),
                c.item.line,
                c.item.column,
                escape(c.item.code.as_deref().unwrap_or(&c.item.source)),
                escape(&c.fix.title),
                escape(&c.summary)
            );
        }
        for s in &self.skipped {
            let _ = writeln!(err, "{}", escape(s));
        }
        let left: usize = entries
            .iter()
            .flat_map(|(_, e)| &e.items)
            .filter(|i| !i.fixes.is_empty() && openfiles_fixes::choose(i, unsafe_too).is_none())
            .count();
        let _ = writeln!(
            err,
            "openfiles: applied {} fix(es) in {} file(s){}",
            self.applied.len(),
            self.changed.len(),
            if left > 0 {
                format!(
                    "; {left} problem(s) have only unsafe fixes (apply them with --fix --unsafe)"
                )
            } else {
                String::new()
            }
        );
    }
}

/// The files under `dir`, walked with `.gitignore` rules (hidden files and ignored folders
/// left out), sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ignore::WalkBuilder::new(dir)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| e.path().canonicalize().ok())
        .collect();
    out.sort();
    out
}

fn through_service(
    mut client: Client,
    paths: Vec<PathBuf>,
    timeout: Duration,
) -> anyhow::Result<(Entries, Vec<Rejected>)> {
    client.set_read_timeout(Some(timeout + Duration::from_secs(10)))?;
    let reply: WaitReply = client.call(&Check {
        paths,
        timeout_ms: Some(timeout.as_millis() as u64),
        agent: None,
    })?;
    let entries = reply
        .workspaces
        .into_iter()
        .flat_map(|w| w.files.into_values().map(|e| (display_path(&e.path), e)))
        .collect();
    Ok((entries, reply.rejected))
}

fn in_process(
    config: Option<&Path>,
    paths: Vec<PathBuf>,
    timeout: Duration,
    tests: bool,
    spinner: &Spinner,
) -> anyhow::Result<(Entries, Vec<Rejected>)> {
    let out = crate::in_process::check(config, paths, timeout, tests, &|msg| spinner.say(msg))?;
    let entries = out
        .entries
        .into_iter()
        .map(|e| (display_path(&e.path), e))
        .collect();
    Ok((entries, out.rejected))
}

/// Whether an item comes from the project's tests: the `tests` plugin's own notes, or a
/// runner's failing test.
pub fn is_test_item(source: &str) -> bool {
    source == crate::in_process::TESTS_SOURCE
        || openfiles_plugin_api::test_runners::Runner::ALL
            .iter()
            .any(|r| r.source() == source)
}

/// Plain `check`: no test results (a running service may hold its session's; they are
/// `--tests`' to show).
fn without_tests(entries: &mut Entries) {
    for (_, e) in entries.iter_mut() {
        e.items.retain(|i| !is_test_item(&i.source));
        e.errors = e
            .items
            .iter()
            .filter(|i| i.severity == Severity::Error)
            .count() as u32;
        e.warnings = e
            .items
            .iter()
            .filter(|i| i.severity == Severity::Warning)
            .count() as u32;
    }
}

/// With `--tests`: why the tests did not run, when the workspace is not trusted (the tests
/// plugin's note on the files).
fn tests_not_run(entries: &Entries) -> Option<String> {
    let (shown, _) = entries.iter().find(|(_, e)| {
        e.items.iter().any(|i| {
            is_test_item(&i.source)
                && i.code.as_deref() == Some(openfiles_plugin_api::UNTRUSTED_CODE)
        })
    })?;
    Some(format!(
        "the project's tests did not run for {}: its workspace is not trusted, and running the \
         tests runs the project's code (`openfiles trust DIR` allows it)",
        escape(shown)
    ))
}

/// The path relative to the current directory when it lies below it.
fn display_path(p: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| cwd.canonicalize().ok())
        .and_then(|cwd| p.strip_prefix(cwd).ok().map(Path::to_owned))
        .unwrap_or_else(|| p.to_owned())
        .display()
        .to_string()
}

fn render(entries: &Entries) -> anyhow::Result<()> {
    let choice = if std::io::stdout().is_terminal() {
        termcolor::ColorChoice::Auto
    } else {
        termcolor::ColorChoice::Never
    };
    let stdout = termcolor::StandardStream::stdout(choice);
    let mut out = stdout.lock();
    let config = term::Config::default();
    let mut files = SimpleFiles::new();
    for (name, entry) in entries {
        // Only for showing the lines: a FIFO, device or huge file shows none (never blocks).
        let source = openfiles_plugin_api::confine::read_regular(
            &entry.path,
            openfiles_plugin_api::confine::Last::Follow,
            16 << 20,
        )
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default();
        // Shown escaped (names, contents and messages come from the repository and the
        // checkers: `crate::visible`); offsets are mapped into the escaped text.
        let shown = escape_lines(&source).into_owned();
        let name = escape(name).into_owned();
        let id = files.add(name.clone(), shown.clone());
        for item in &entry.items {
            let mut diag = match item.severity {
                Severity::Error => Diagnostic::error(),
                Severity::Warning => Diagnostic::warning(),
                Severity::Info => Diagnostic::note(),
                Severity::Hint => Diagnostic::help(),
            }
            .with_message(format!(
                "{} ({})",
                escape_lines(&item.message),
                escape(&item.source)
            ));
            if let Some(code) = &item.code {
                diag = diag.with_code(escape(code).into_owned());
            }
            if let Some(at) = byte_offset(&source, item.line, item.column) {
                let at = escape_lines(&source[..at]).len().min(shown.len());
                diag = diag.with_labels(vec![Label::primary(id, at..at)]);
            } else {
                diag = diag.with_notes(vec![format!("at {name}:{}:{}", item.line, item.column)]);
            }
            term::emit_to_write_style(&mut out, &config, &files, &diag)
                .map_err(|e| anyhow::anyhow!("cannot print a diagnostic: {e}"))?;
        }
    }
    Ok(())
}

/// Byte offset of 1-based (line, column counted in characters).
fn byte_offset(source: &str, line: u32, column: u32) -> Option<usize> {
    let mut start = 0;
    for (i, l) in source.split_inclusive('\n').enumerate() {
        if i + 1 == line as usize {
            let col = (column.max(1) - 1) as usize;
            let within = l
                .char_indices()
                .nth(col)
                .map(|(b, _)| b)
                .unwrap_or(l.trim_end_matches('\n').len());
            return Some(start + within);
        }
        start += l.len();
    }
    None
}

/// A spinner on stderr when it is a terminal; silent otherwise.
struct Spinner(Option<indicatif::ProgressBar>);

impl Spinner {
    fn new(enabled: bool) -> Spinner {
        if !enabled || !std::io::stderr().is_terminal() {
            return Spinner(None);
        }
        let bar = indicatif::ProgressBar::new_spinner();
        bar.enable_steady_tick(Duration::from_millis(100));
        Spinner(Some(bar))
    }
    fn say(&self, msg: &str) {
        if let Some(b) = &self.0 {
            b.set_message(msg.to_owned());
        }
    }
    fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::byte_offset;

    #[test]
    fn columns_are_characters() {
        let src = "ab\nçé x\n";
        assert_eq!(byte_offset(src, 1, 1), Some(0));
        assert_eq!(byte_offset(src, 2, 3), Some(3 + 4));
        assert_eq!(byte_offset(src, 9, 1), None);
    }
}
