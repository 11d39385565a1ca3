//! What the review runs in the terminal it hands over: the user's editor at a file's first
//! problem, and `git diff` against HEAD through git's own pager rules (`GIT_PAGER`,
//! `core.pager`, `PAGER`, colour per `color.ui`) — the user's rules: git runs as
//! [`crate::gitcmd`] builds it, so the repository's own pager, external diff, textconv and
//! filters never run.
//!
//! Editor: `$VISUAL`, else `$EDITOR`, else `vi`, run by `sh -c '<editor> "$@"'` as git runs
//! it (so `EDITOR="code -w"` works), with `+LINE` before the path when there is a problem
//! (the convention of vi, vim, neovim, emacs, nano, micro, kakoune).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context as _;

use super::model;
use crate::gitcmd;
use openfiles_gate::Program;
use openfiles_wire::control::ReviewFile;

/// The editor command line the user asked for.
pub fn editor() -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned())
}

/// The command that opens `f` at its first problem.
pub fn edit_command(f: &ReviewFile) -> std::io::Result<Command> {
    // The user's own editor, as their shell would run `$VISUAL`/`$EDITOR`.
    let sh = Program::user("sh", "the user's editor")?;
    let mut c = sh.command(["-c"]);
    c.arg(format!("{} \"$@\"", editor())).arg("sh");
    if let Some(item) = model::first_problem(&f.entry.items) {
        if f.entry.errors + f.entry.warnings > 0 && item.line > 0 {
            c.arg(format!("+{}", item.line));
        }
    }
    c.arg(&f.entry.path);
    Ok(c)
}

/// Run the editor on `f`; the terminal is the child's until it exits.
pub fn edit(f: &ReviewFile) -> anyhow::Result<String> {
    let status = edit_command(f)
        .and_then(|mut c| c.status())
        .with_context(|| format!("cannot start the editor `{}`", editor()))?;
    Ok(if status.success() {
        format!("edited {}", f.key)
    } else {
        format!("the editor `{}` exited with {status}", editor())
    })
}

/// Why there is no diff to show (said in the view's message line).
#[derive(Debug, thiserror::Error)]
pub enum NoDiff {
    #[error("{0} is not in a git repository")]
    NotARepository(std::path::PathBuf),
    #[error("cannot run git: {0}")]
    Git(std::io::Error),
}

/// The `git diff` command showing `f` against HEAD (a file git does not track yet, or a
/// repository without commits, is shown whole, as new). `Err` says why there is no diff.
pub fn diff_command(root: &Path, f: &ReviewFile) -> Result<Command, NoDiff> {
    let ok = |c: std::io::Result<Command>| {
        let Ok(mut c) = c else { return false };
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !ok(gitcmd::command(
        root,
        ["rev-parse", "--is-inside-work-tree"],
    )) {
        return Err(NoDiff::NotARepository(root.to_owned()));
    }
    let path = f.entry.path.as_os_str();
    let tracked = ok(gitcmd::command(
        root,
        [
            OsStr::new("ls-files"),
            OsStr::new("--error-unmatch"),
            OsStr::new("--"),
            path,
        ],
    ));
    let has_head = ok(gitcmd::command(
        root,
        ["rev-parse", "--verify", "--quiet", "HEAD"],
    ));
    let args: Vec<&OsStr> = if tracked && has_head {
        ["diff", "HEAD", "--"].map(OsStr::new).into()
    } else {
        ["diff", "--no-index", "--", "/dev/null"]
            .map(OsStr::new)
            .into()
    };
    let mut c = gitcmd::command(root, args.into_iter().chain([path])).map_err(NoDiff::Git)?;
    // The terminal is the user's for this one: git pages it (with the user's pager).
    c.stdin(Stdio::inherit());
    Ok(c)
}

/// Show the diff of `f` in the terminal (git pages it when its output is a terminal).
pub fn diff(root: &Path, f: &ReviewFile) -> anyhow::Result<Result<(), NoDiff>> {
    let mut cmd = match diff_command(root, f) {
        Ok(c) => c,
        Err(why) => return Ok(Err(why)),
    };
    cmd.status().context("cannot run git")?;
    Ok(Ok(()))
}
