//! `openfiles review` and the other commands for the person reviewing what agents changed:
//! `pause`/`resume`, `session add-git`, `status --short`, `prompt`.
//!
//! A client like `hook` and `check`: it speaks the control protocol only. The reviewed marks,
//! the agents per file and `paused` live in the session state on the service side
//! (`diagnostics::review`), so every client sees the same ones. Rooms:
//! - [`model`]: grouping by agent, errors first, counts, "next unreviewed" (pure);
//! - [`tui`]: the terminal view (ratatui on crossterm: keys, colours unless `NO_COLOR`,
//!   resize), [`actions`]: `$EDITOR` at the first problem, `git diff` against HEAD;
//! - [`short`]: `status --short`, which reads the summary file the service writes instead of
//!   waking it (it runs on every shell prompt);
//! - [`prompt`]: the prompts for a model, `--copy`, and the AGENTS.md section between markers;
//! - [`git`]: `session add-git`.

pub mod actions;
pub mod git;
pub mod model;
pub mod prompt;
pub mod short;
pub mod tui;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::control::client::Client;
use crate::visible::escape;
use model::Model;
use openfiles_wire::control::{PathArg, Pause, PauseReply, Resume, Review, WorkspaceReview};

/// `openfiles review` options.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub dir: Option<PathBuf>,
    pub json: bool,
    pub list: bool,
    /// Draw one frame and exit (for the benchmark).
    pub first_frame_only: bool,
}

/// Connect to the service (socket activation starts it when needed).
pub fn connect(socket: Option<&Path>) -> anyhow::Result<Client> {
    crate::control::client::connect_default(socket)
}

/// `DIR` (default: the current folder), absolute and canonical.
pub fn folder(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = dir.unwrap_or(Path::new("."));
    dir.canonicalize()
        .with_context(|| format!("{}: no such directory", dir.display()))
}

/// The session of the workspace holding `dir`, with its review data.
pub fn fetch(client: &mut Client, dir: &Path) -> anyhow::Result<WorkspaceReview> {
    client
        .call(&Review(PathArg {
            path: dir.to_owned(),
            force: false,
        }))
        .with_context(|| format!("cannot read the session of {}", dir.display()))
}

/// `openfiles review [DIR] [--json|--list]`.
pub fn run(socket: Option<&Path>, opts: &Options) -> anyhow::Result<u8> {
    let dir = folder(opts.dir.as_deref())?;
    let mut client = connect(socket)?;
    let review = fetch(&mut client, &dir)?;
    let model = Model::new(review);
    let mut out = std::io::stdout().lock();
    if opts.json {
        json(&model, &mut out)?;
        return Ok(0);
    }
    if opts.list {
        list(&model, &mut out)?;
        return Ok(0);
    }
    if !std::io::stdin().is_terminal() || !out.is_terminal() {
        anyhow::bail!(
            "`openfiles review` needs a terminal; use `openfiles review --list` or `--json` in scripts"
        );
    }
    drop(out);
    let socket = crate::paths::control_socket(socket)?;
    tui::run(client, socket, dir, model, opts.first_frame_only)?;
    Ok(0)
}

/// `--json`: the session with review data, grouped as the view shows it.
pub fn json(model: &Model, out: &mut impl Write) -> anyhow::Result<()> {
    let groups: Vec<serde_json::Value> = model
        .groups
        .iter()
        .map(|g| {
            serde_json::json!({
                "agent": g.agent,
                "errors": g.errors,
                "warnings": g.warnings,
                "unreviewed": g.unreviewed,
                "files": g.files.iter().map(|&i| &model.files[i]).collect::<Vec<_>>(),
            })
        })
        .collect();
    let doc = serde_json::json!({
        "root": model.root,
        "paused": model.paused,
        "lastAgent": model.last_agent,
        "totals": model.totals(),
        "groups": groups,
    });
    writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    Ok(())
}

/// `--list`: one line per file, grouped by agent, errors first (names, agents and messages
/// shown with their control characters escaped: [`crate::visible`]).
pub fn list(model: &Model, out: &mut impl Write) -> anyhow::Result<()> {
    let t = model.totals();
    writeln!(
        out,
        "{}: {} file(s), {} unreviewed, {} error(s), {} warning(s){}",
        escape(&model.root.display().to_string()),
        t.files,
        t.unreviewed,
        t.errors,
        t.warnings,
        if model.paused { ", paused" } else { "" }
    )?;
    for g in &model.groups {
        writeln!(
            out,
            "{} ({} file(s), {} unreviewed, {}E {}W)",
            escape(&g.agent),
            g.files.len(),
            g.unreviewed,
            g.errors,
            g.warnings
        )?;
        for &i in &g.files {
            let f = &model.files[i];
            writeln!(out, "  {}", row_text(f))?;
        }
    }
    Ok(())
}

/// A file's line: mark, key, counts, first problem.
pub fn row_text(f: &openfiles_wire::control::ReviewFile) -> String {
    let mark = if f.mark.reviewed() { "[x]" } else { "[ ]" };
    format!("{mark} {}  {}", escape(&f.key), problems_text(f))
}

/// `2E 1W  2:18 mismatched types`, `checking…`, or `ok`.
pub fn problems_text(f: &openfiles_wire::control::ReviewFile) -> String {
    let e = &f.entry;
    let mut s = if e.errors == 0 && e.warnings == 0 {
        if e.checked_at == 0 {
            "checking…".to_owned()
        } else {
            "ok".to_owned()
        }
    } else {
        format!("{}E {}W", e.errors, e.warnings)
    };
    if let Some(it) = model::first_problem(&e.items) {
        if e.errors + e.warnings > 0 {
            s.push_str(&format!(
                "  {}:{} {}",
                it.line,
                it.column,
                escape(it.message.lines().next().unwrap_or(""))
            ));
        }
    }
    s
}

/// `openfiles pause [DIR]` / `openfiles resume [DIR]`.
pub fn pause(socket: Option<&Path>, dir: Option<&Path>, paused: bool) -> anyhow::Result<u8> {
    let path = folder(dir)?;
    let arg = PathArg { path, force: false };
    let mut client = connect(socket)?;
    let reply: PauseReply = if paused {
        client.call(&Pause(arg))?
    } else {
        client.call(&Resume(arg))?
    };
    let root = reply.root.display();
    match (reply.was_paused, reply.paused) {
        (false, true) => println!(
            "paused {root}: edits are not noticed until `openfiles resume` (the session is kept)"
        ),
        (true, true) => println!("{root} was already paused"),
        (true, false) => println!("resumed {root}: noticing edits again"),
        (false, false) => println!("{root} was not paused"),
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use openfiles_wire::control::Mark;
    use openfiles_wire::control::ReviewFile;
    use openfiles_wire::spec::{FileEntry, Item, Severity};

    fn item(line: u32, column: u32, severity: Severity, message: &str) -> Item {
        Item {
            line,
            column,
            ..Item::note(severity, "rustc", message)
        }
    }

    /// A session file edited by `agents` (the last one last), checked at `checked_at`.
    fn file(
        key: &str,
        agents: &[&str],
        reviewed: bool,
        checked_at: u64,
        items: Vec<Item>,
    ) -> ReviewFile {
        ReviewFile {
            key: key.into(),
            mark: Mark {
                agents: agents.iter().map(|a| (*a).to_owned()).collect(),
                last_agent: agents.last().map(|a| (*a).to_owned()).unwrap_or_default(),
                edited_at: 10,
                reviewed_at: if reviewed { 20 } else { 0 },
            },
            entry: FileEntry::checked(format!("/home/me/proj/{key}").into(), checked_at, items),
        }
    }

    #[test]
    fn the_list_groups_files_by_agent_with_errors_first() {
        let review = WorkspaceReview {
            root: "/home/me/proj".into(),
            paused: true,
            last_agent: Some("codex".into()),
            files: vec![
                file("README.md", &["claude"], true, 5, Vec::new()),
                file(
                    "src/lib.rs",
                    &["claude"],
                    false,
                    5,
                    vec![
                        item(12, 9, Severity::Warning, "unused variable: `n`"),
                        item(
                            3,
                            18,
                            Severity::Error,
                            "mismatched types\nexpected `u32`, found `&str`",
                        ),
                        item(
                            40,
                            1,
                            Severity::Error,
                            "cannot find value `count` in this scope",
                        ),
                    ],
                ),
                file("src/main.rs", &["claude", "codex"], false, 0, Vec::new()),
                file(
                    "src/util.rs",
                    &["codex"],
                    true,
                    5,
                    vec![item(7, 5, Severity::Warning, "unneeded `return` statement")],
                ),
                file(
                    "notes.txt",
                    &[],
                    false,
                    5,
                    vec![item(
                        1,
                        1,
                        Severity::Info,
                        "not checked: no diagnostic source handles .txt files",
                    )],
                ),
            ],
        };
        let mut out = Vec::new();
        list(&Model::new(review), &mut out).unwrap();
        expect![[r#"
            /home/me/proj: 5 file(s), 3 unreviewed, 2 error(s), 2 warning(s), paused
            claude (2 file(s), 1 unreviewed, 2E 1W)
              [ ] src/lib.rs  2E 1W  3:18 mismatched types
              [x] README.md  ok
            codex (2 file(s), 1 unreviewed, 0E 1W)
              [x] src/util.rs  0E 1W  7:5 unneeded `return` statement
              [ ] src/main.rs  checking…
            unknown (1 file(s), 1 unreviewed, 0E 0W)
              [ ] notes.txt  ok
        "#]]
        .assert_eq(&String::from_utf8(out).unwrap());
    }
}
