//! The OpenFiles tools: diagnostics for agents that prefer tools to hooks (or have none).
//!
//! - `openfiles_diagnostics`: with paths, reports them as edited (as the hook does, so the
//!   results describe the text on disk now) and waits until each is checked; without, it
//!   takes the session's files from `diagnostics.json` and waits until none is pending.
//!   The text is the hook's feedback (same wording, level and limits), or a line saying
//!   there is nothing to fix, plus which files are still being checked at the deadline.
//! - `openfiles_check`: `check` on the control socket (what `openfiles check` does with a
//!   service), every item of every severity, and the same summary line.
//! - `openfiles_status`: the service and this workspace's state, as JSON.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::call::{Call, Fail};
use super::link::control_as;
use super::pretty;
use super::server::Ctx;
use crate::hook::feedback::{self, item_line};
use crate::hook::report::{display_path, Entries};
use openfiles_wire::control::{Check, Edited, EditedReply, Request, StatusReply, Wait, WaitReply};

/// How long a diagnostics call waits for fresh results unless told otherwise.
const DEFAULT_WAIT_MS: u64 = 60_000;

pub fn call(ctx: &Ctx, call: &Call, name: &str, args: &Value) -> Result<String, Fail> {
    ctx.service(Some(call))?;
    match name {
        "openfiles_diagnostics" => diagnostics(ctx, call, args),
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

fn diagnostics(ctx: &Ctx, call: &Call, args: &Value) -> Result<String, Fail> {
    let timeout_ms = args["timeout_ms"].as_u64().unwrap_or(DEFAULT_WAIT_MS);
    let asked = paths(ctx, args);
    let mut notes = Vec::new();
    let (paths, since) = if asked.is_empty() {
        let file = ctx.place.root.join(".openfiles").join("diagnostics.json");
        let session: Vec<PathBuf> = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<openfiles_wire::spec::DiagnosticsFile>(&b).ok())
            .map(|d| d.files.into_values().map(|e| e.path).collect())
            .unwrap_or_default();
        if session.is_empty() {
            return Ok("No files changed in this session yet: nothing to report.".into());
        }
        (session, 1)
    } else {
        let reply: EditedReply = control_as(
            &ctx.place.control,
            &Request::Edited(Edited {
                paths: asked,
                agent: Some("mcp".into()),
                tool: Some("openfiles_diagnostics".into()),
                event: None,
                ts: openfiles_wire::spec::now_ms(),
            }),
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
        (accepted, reply.ts)
    };
    let waited: WaitReply = control_as(
        &ctx.place.control,
        &Request::Wait(Wait {
            paths: paths.clone(),
            since,
            timeout_ms: Some(timeout_ms),
            // A tool call waits for every source: the model asked for fresh problems.
            partial: false,
            session: None,
        }),
        Duration::from_millis(timeout_ms) + Duration::from_secs(10),
        Some(call),
    )?;
    let mut report = feedback::Report::default();
    let mut pending = Vec::new();
    for ws in &waited.workspaces {
        let entries = Entries {
            root: &ws.root,
            hook: &ws.hook,
            files: &ws.files,
            baseline: ws.baseline.as_ref(),
        };
        report.extend(entries.report(&paths, since));
        for p in &paths {
            if entries.find(p).is_some() && !entries.all_checked(std::slice::from_ref(p), since) {
                pending.push(display_path(&ws.root, p));
            }
        }
    }
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
    Ok(text)
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
        &Request::Check(Check {
            paths,
            timeout_ms: Some(timeout_ms),
            agent: None,
        }),
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
        &Request::Status,
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
