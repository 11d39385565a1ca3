//! The OpenFiles tools: diagnostics for agents that prefer tools to hooks (or have none).
//!
//! - `openfiles_diagnostics`: with paths, reports them as edited (as the hook does, so the
//!   results describe the text on disk now) and waits until each is checked; without, it
//!   takes the session's files from `diagnostics.json` and waits until none is pending.
//!   The text is the hook's feedback (same wording, level and limits), or a line saying
//!   there is nothing to fix, plus which files are still being checked at the deadline.
//!   It waits for the fixes sources fetch after their answer too (`Wait::fixes`).
//!   Listed problems that come with the checkers' own fixes are followed by those fixes in
//!   full (title, safe, exact edits, the content hash they were made for), as JSON lines.
//! - `openfiles_fix`: applies one problem's fix or every safe fix of a file (`openfiles_fixes`),
//!   only to the exact content the fixes were made for (anything else is refused, nothing
//!   written), reports the change as this agent's edit and answers with the file's problems
//!   once checked again.
//! - `openfiles_check`: `check` on the control socket (what `openfiles check` does with a
//!   service), every item of every severity, and the same summary line.
//! - `openfiles_status`: the service and this workspace's state, as JSON.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::call::{Call, Fail};
use super::link::control_as;
use super::pretty;
use super::server::Ctx;
use crate::hook::feedback::{self, item_line};
use crate::hook::report::{display_path, Entries};
use openfiles_wire::control::{Check, Edited, EditedReply, Status, StatusReply, Wait, WaitReply};

/// How long a diagnostics call waits for fresh results unless told otherwise.
const DEFAULT_WAIT_MS: u64 = 60_000;

pub fn call(ctx: &Ctx, call: &Call, name: &str, args: &Value) -> Result<String, Fail> {
    ctx.service(Some(call))?;
    match name {
        "openfiles_diagnostics" => diagnostics(ctx, call, args, "openfiles_diagnostics"),
        "openfiles_fix" => fix(ctx, call, args),
        "openfiles_check" => check(ctx, call, args),
        "openfiles_status" => status(ctx, call),
        other => Err(Fail::Tool(format!("unknown tool: {other}"))),
    }
}

fn paths(ctx: &Ctx, args: &Value) -> Vec<PathBuf> {
    args["paths"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|p| ctx.place.abs(p))
        .collect()
}

pub(super) fn diagnostics(
    ctx: &Ctx,
    call: &Call,
    args: &Value,
    tool: &str,
) -> Result<String, Fail> {
    let timeout_ms = args["timeout_ms"].as_u64().unwrap_or(DEFAULT_WAIT_MS);
    let asked = paths(ctx, args);
    let mut notes = Vec::new();
    let (paths, since) = if asked.is_empty() {
        let session = session_files(ctx);
        if session.is_empty() {
            return Ok("No files changed in this session yet: nothing to report.".into());
        }
        (session, 1)
    } else {
        report_edited(ctx, call, asked, tool, &mut notes)?
    };
    let waited: WaitReply = control_as(
        &ctx.place.control,
        &Wait {
            paths: paths.clone(),
            since,
            timeout_ms: Some(timeout_ms),
            // A tool call waits for every source: the model asked for fresh problems.
            partial: false,
            session: None,
            fixes: true,
        },
        Duration::from_millis(timeout_ms) + Duration::from_secs(10),
        Some(call),
    )?;
    let (report, pending) = report_of(&waited, &paths, since);
    let mut text = feedback::format_report(&report).unwrap_or_else(|| {
        format!(
            "OpenFiles found no problems in {} file(s).",
            paths.len() - pending.len()
        )
    });
    if !pending.is_empty() {
        text.push_str(&format!(
            "\nStill being checked after {timeout_ms} ms (call again for their results): {}",
            pending.join(", ")
        ));
    }
    if !notes.is_empty() {
        text.push('\n');
        text.push_str(&notes.join("\n"));
    }
    let fixes = full_fixes(&report);
    if !fixes.is_empty() {
        text.push_str(
            "\nThe checkers' fixes for these problems (apply with openfiles_fix; \"safe\": the \
             checker says it can be applied without looking):\n",
        );
        text.push_str(&fixes.join("\n"));
    }
    Ok(text)
}

/// The session's files, from the workspace's `diagnostics.json` (none when it is unreadable).
fn session_files(ctx: &Ctx) -> Vec<PathBuf> {
    let file = ctx.place.root.join(".openfiles").join("diagnostics.json");
    std::fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice::<openfiles_wire::spec::DiagnosticsFile>(&b).ok())
        .map(|d| d.files.into_values().map(|e| e.path).collect())
        .unwrap_or_default()
}

/// Report `asked` as edited by this agent (as the hook does); returns the paths accepted and
/// the edit's time, with a note per path refused. None accepted is the tool's failure.
fn report_edited(
    ctx: &Ctx,
    call: &Call,
    asked: Vec<PathBuf>,
    tool: &str,
    notes: &mut Vec<String>,
) -> Result<(Vec<PathBuf>, u64), Fail> {
    let reply: EditedReply = control_as(
        &ctx.place.control,
        &Edited {
            paths: asked,
            agent: Some("mcp".into()),
            tool: Some(tool.into()),
            event: None,
            ts: openfiles_wire::spec::now_ms(),
        },
        Duration::from_secs(15),
        Some(call),
    )?;
    for r in &reply.rejected {
        notes.push(format!(
            "- {}: not checked ({})",
            r.path.display(),
            r.reason
        ));
    }
    let accepted: Vec<PathBuf> = reply.workspaces.into_iter().flat_map(|w| w.paths).collect();
    if accepted.is_empty() {
        return Err(Fail::Tool(format!(
            "None of these files can be checked:\n{}",
            notes.join("\n")
        )));
    }
    Ok((accepted, reply.ts))
}

/// The hook's report of `paths` from a `wait` reply, and the files still being checked.
fn report_of(waited: &WaitReply, paths: &[PathBuf], since: u64) -> (feedback::Report, Vec<String>) {
    let mut report = feedback::Report::default();
    let mut pending = Vec::new();
    for ws in &waited.workspaces {
        let entries = entries_of(ws);
        report.extend(entries.report(paths, since));
        for p in paths {
            if entries.find(p).is_some() && !entries.all_checked(std::slice::from_ref(p), since) {
                pending.push(display_path(&ws.root, p));
            }
        }
    }
    (report, pending)
}

/// A workspace of a `wait` reply, as the hook's report reads it.
fn entries_of(ws: &openfiles_wire::control::WorkspaceEntries) -> Entries<'_> {
    Entries {
        root: &ws.root,
        hook: &ws.hook,
        files: &ws.files,
        baseline: ws.baseline.as_ref(),
    }
}

/// Fixes listed in full at most (a text stays readable).
const MAX_FULL_FIXES: usize = 40;

/// `- file:line:column: {fix as JSON}` for every fix of every listed problem.
fn full_fixes(report: &feedback::Report) -> Vec<String> {
    let mut out = Vec::new();
    for f in &report.files {
        for item in &f.items {
            for fix in &item.fixes {
                if out.len() == MAX_FULL_FIXES {
                    out.push(format!(
                        "- … more fixes not shown ({MAX_FULL_FIXES} listed)"
                    ));
                    return out;
                }
                let json = serde_json::to_string(fix).unwrap_or_default();
                out.push(format!(
                    "- {}:{}:{}: {json}",
                    f.display, item.line, item.column
                ));
            }
        }
    }
    out
}

/// `openfiles_fix`: one problem's fix (`line`, optional `column`; `unsafe` allows a fix the
/// checker does not call safe) or every safe fix of `path`.
fn fix(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let timeout_ms = args["timeout_ms"].as_u64().unwrap_or(DEFAULT_WAIT_MS);
    let (root, path) = fix_target(ctx, args)?;
    let line = args["line"].as_u64();
    let column = args["column"].as_u64();
    let unsafe_too = args["unsafe"].as_bool().unwrap_or(false);
    let shown = display_path(&root, &path);
    let Some(entry) = current_entry(ctx, call, &path, timeout_ms)? else {
        return Err(Fail::Tool(format!(
            "{shown}: openfiles knows no problems of this file (call openfiles_diagnostics with it first)"
        )));
    };
    let items: Vec<_> = entry
        .items
        .iter()
        .filter(|i| line.is_none_or(|l| u64::from(i.line) == l))
        .filter(|i| column.is_none_or(|c| u64::from(i.column) == c))
        .cloned()
        .collect();
    // Naming one problem takes its fix; otherwise every safe fix.
    let mut chosen = openfiles_fixes::chosen(&path, &items, unsafe_too && line.is_some());
    if line.is_some() {
        chosen.truncate(1);
    }
    if chosen.is_empty() {
        return Ok(no_fix(&items, &shown, line, unsafe_too));
    }
    still_fits(&root, &path, &shown, &chosen)?;
    let out = openfiles_fixes::apply(&root, chosen).map_err(|e| Fail::Tool(e.to_string()))?;
    let mut lines = applied_lines(&root, &out);
    if out.changed.is_empty() {
        return Ok(lines.join("\n"));
    }
    // Reported as this agent's edit, then checked again.
    let paths: Vec<Value> = out
        .changed
        .iter()
        .map(|p| Value::from(p.to_string_lossy().into_owned()))
        .collect();
    let after = diagnostics(
        ctx,
        call,
        &json!({"paths": paths, "timeout_ms": timeout_ms}),
        "openfiles_fix",
    )?;
    lines.push(String::new());
    lines.push(after);
    Ok(lines.join("\n"))
}

/// The workspace root and the file `openfiles_fix` was asked about (canonical, inside it).
fn fix_target(ctx: &Ctx, args: &Value) -> Result<(PathBuf, PathBuf), Fail> {
    let Some(asked) = args["path"].as_str() else {
        return Err(Fail::Invalid("`path` is required".into()));
    };
    let root = ctx
        .place
        .root
        .canonicalize()
        .unwrap_or_else(|_| ctx.place.root.clone());
    match ctx.place.abs(asked).canonicalize() {
        Ok(p) if p.starts_with(&root) => Ok((root, p)),
        Ok(p) => Err(Fail::Invalid(format!(
            "{}: outside the workspace this server serves ({})",
            p.display(),
            root.display()
        ))),
        Err(_) => Err(Fail::Invalid(format!("{asked}: no such file"))),
    }
}

/// The file's current entry (what the service knows for its current content).
fn current_entry(
    ctx: &Ctx,
    call: &Call,
    path: &Path,
    timeout_ms: u64,
) -> Result<Option<openfiles_wire::spec::FileEntry>, Fail> {
    let waited: WaitReply = control_as(
        &ctx.place.control,
        &Wait {
            paths: vec![path.to_owned()],
            since: 1,
            timeout_ms: Some(timeout_ms.min(15_000)),
            partial: false,
            session: None,
            fixes: true,
        },
        Duration::from_secs(30),
        Some(call),
    )?;
    Ok(waited
        .workspaces
        .iter()
        .find_map(|ws| entries_of(ws).find(path).cloned()))
}

/// The answer when no fix applies: and how to apply the ones the checker does not call safe.
fn no_fix(
    items: &[openfiles_plugin_api::Item],
    shown: &str,
    line: Option<u64>,
    unsafe_too: bool,
) -> String {
    let unsafe_only = items
        .iter()
        .filter(|i| !i.fixes.is_empty() && openfiles_fixes::choose(i, false).is_none())
        .count();
    let mut text = format!(
        "No {}fix to apply in {shown}{}.",
        if unsafe_too { "" } else { "safe " },
        line.map(|l| format!(" at line {l}")).unwrap_or_default()
    );
    if unsafe_only > 0 && !unsafe_too {
        text.push_str(&format!(
            " {unsafe_only} problem(s) have fixes the checker does not call safe: name one \
             with `line` and `unsafe: true` to apply it."
        ));
    }
    text
}

/// Fixes apply only to the exact content they were made for: otherwise nothing is written.
fn still_fits(
    root: &Path,
    path: &Path,
    shown: &str,
    chosen: &[openfiles_fixes::Chosen],
) -> Result<(), Fail> {
    let current = openfiles_plugin_api::confine::read_workspace_file(
        root,
        path,
        openfiles_fixes::MAX_FILE_BYTES,
    )
    .map_err(|e| Fail::Tool(format!("{shown}: {e}")))?;
    let hash = openfiles_plugin_api::content_hash(&current);
    if chosen
        .iter()
        .flat_map(|c| &c.fix.files)
        .any(|f| f.path == path && f.sha256 != hash)
    {
        return Err(Fail::Tool(format!(
            "{shown} changed since its problems were found, so its fixes no longer fit it: \
             nothing was changed. Call openfiles_diagnostics with it to get fixes for its \
             content now."
        )));
    }
    Ok(())
}

/// What a round of fixes did, a line per fix applied or not.
fn applied_lines(root: &Path, out: &openfiles_fixes::Outcome) -> Vec<String> {
    let mut lines = vec![format!(
        "Applied {} fix(es) in {} file(s):",
        out.applied.len(),
        out.changed.len()
    )];
    for c in &out.applied {
        lines.push(format!(
            "- {}:{}:{} {}: {} ({})",
            display_path(root, &c.file),
            c.item.line,
            c.item.column,
            c.item.code.as_deref().unwrap_or(&c.item.source),
            c.fix.title,
            c.summary
        ));
    }
    for (c, why) in &out.skipped {
        lines.push(format!(
            "- not applied: {}:{}:{} {}: {why}",
            display_path(root, &c.file),
            c.item.line,
            c.item.column,
            c.fix.title
        ));
    }
    lines
}

fn check(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let timeout_ms = args["timeout_ms"].as_u64().unwrap_or(120_000);
    let mut paths = Vec::new();
    // Only inside the workspace this server serves: a path elsewhere (another repository)
    // would register that folder as a workspace and run its checkers.
    let root = ctx
        .place
        .root
        .canonicalize()
        .unwrap_or_else(|_| ctx.place.root.clone());
    for p in self::paths(ctx, args) {
        match p.canonicalize() {
            Ok(c) if c.starts_with(&root) => paths.push(c),
            Ok(c) => {
                return Err(Fail::Invalid(format!(
                    "{}: outside the workspace this server serves ({}); check it from an MCP \
                     server of that workspace, or with `openfiles check`",
                    c.display(),
                    root.display()
                )))
            }
            Err(_) => return Err(Fail::Invalid(format!("{}: no such file", p.display()))),
        }
    }
    if paths.is_empty() {
        return Err(Fail::Invalid("`paths` is empty".into()));
    }
    let reply: WaitReply = control_as(
        &ctx.place.control,
        &Check {
            paths,
            timeout_ms: Some(timeout_ms),
            agent: None,
        },
        Duration::from_millis(timeout_ms) + Duration::from_secs(10),
        Some(call),
    )?;
    let (mut errors, mut warnings, mut files) = (0u64, 0u64, 0usize);
    let mut lines = Vec::new();
    for ws in &reply.workspaces {
        for entry in ws.files.values() {
            files += 1;
            errors += u64::from(entry.errors);
            warnings += u64::from(entry.warnings);
            let shown = display_path(&ws.root, &entry.path);
            lines.extend(entry.items.iter().map(|i| item_line(&shown, i)));
        }
    }
    lines.push(format!(
        "{files} file(s) checked: {errors} error(s), {warnings} warning(s)"
    ));
    Ok(lines.join("\n"))
}

fn status(ctx: &Ctx, call: &Call) -> Result<String, Fail> {
    let st: StatusReply = control_as(
        &ctx.place.control,
        &Status,
        Duration::from_secs(10),
        Some(call),
    )?;
    let ws = st.workspaces.iter().find(|w| w.root == ctx.place.root);
    Ok(pretty(&json!({
        "service": {"version": st.version, "pid": st.pid, "uptimeMs": st.uptime_ms,
                    "activation": st.activation},
        "workspace": ctx.place.root,
        "served": ws.is_some(),
        "state": ws,
    })))
}
