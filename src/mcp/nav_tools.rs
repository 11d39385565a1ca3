//! The code-navigation tools (issue 41): `openfiles_definition`, `openfiles_references`,
//! `openfiles_hover`, `openfiles_symbols`, `openfiles_implementations`, `openfiles_calls`,
//! `openfiles_rename` (with `apply`, applied as `openfiles nav rename --apply` does, then
//! reported as this agent's edit and checked), each one `nav` request on the control socket,
//! answered by the language server a check of the file uses (warm, the workspace's trust).
//! A position is `{path, line, column}` or `{path, symbol}` (a name path such as
//! `Class/method`, with `line` to pick one of several); `page` asks for the rest of a capped
//! answer (`limit` per page). The answer is the grouped text for
//! the model and, as `structuredContent`, the reply itself: `locations` (workspace-relative
//! `path`, `line`, `column`, `endLine`, `endColumn`, the line's `code`), `symbols`, `text`.

use std::time::Duration;

use serde_json::Value;

use super::call::{Call, Fail};
use super::link::control_as;
use super::server::Ctx;
use openfiles_wire::control::nav::{Nav, NavReply, QueryKind};

/// The tools this module answers.
pub const TOOLS: &[&str] = &[
    "openfiles_definition",
    "openfiles_references",
    "openfiles_hover",
    "openfiles_symbols",
    "openfiles_implementations",
    "openfiles_calls",
    "openfiles_rename",
];

/// How long a question may take.
const TIMEOUT_MS: u64 = 60_000;

/// Run one navigation tool: (text, structured content).
pub fn call(ctx: &Ctx, call: &Call, name: &str, args: &Value) -> Result<(String, Value), Fail> {
    ctx.service(Some(call))?;
    let query = args["query"].as_str().map(str::to_owned);
    let kind = match name {
        "openfiles_definition" => QueryKind::Definition,
        "openfiles_references" => QueryKind::References,
        "openfiles_hover" => QueryKind::Hover,
        "openfiles_implementations" => QueryKind::Implementation,
        "openfiles_calls" if args["direction"] == "outgoing" => QueryKind::OutgoingCalls,
        "openfiles_calls" => QueryKind::IncomingCalls,
        "openfiles_rename" => QueryKind::Rename,
        _ if query.is_some() => QueryKind::WorkspaceSymbols,
        _ => QueryKind::DocumentSymbols,
    };
    let path = args["path"]
        .as_str()
        .ok_or_else(|| Fail::Invalid("`path` is required".into()))?;
    let num = |k: &str| args[k].as_u64().and_then(|n| u32::try_from(n).ok());
    let request = Nav {
        kind,
        path: ctx.place.abs(path),
        line: num("line"),
        column: num("column"),
        symbol: args["symbol"].as_str().map(str::to_owned),
        query,
        new_name: args["new_name"].as_str().map(str::to_owned),
        limit: args["limit"].as_u64().map(|n| n as usize),
        page: args["page"].as_u64().map(|n| n as usize),
        timeout_ms: Some(TIMEOUT_MS),
    };
    let reply: NavReply = control_as(
        &ctx.place.control,
        &request,
        Duration::from_millis(TIMEOUT_MS) + Duration::from_secs(10),
        Some(call),
    )?;
    let structured = serde_json::to_value(&reply)
        .map_err(|e| Fail::Tool(format!("cannot encode the answer: {e}")))?;
    if kind != QueryKind::Rename || args["apply"] != true {
        return Ok((reply.render(), structured));
    }
    // Applied as the checkers' fixes are, then reported as this agent's edit and checked.
    let new_name = args["new_name"].as_str().unwrap_or_default();
    let changed =
        crate::nav::apply_rename(&reply, new_name).map_err(|e| Fail::Tool(e.to_string()))?;
    let paths: Vec<Value> = changed
        .iter()
        .map(|p| Value::from(p.to_string_lossy().into_owned()))
        .collect();
    let after = super::openfiles_tools::diagnostics(
        ctx,
        call,
        &serde_json::json!({"paths": paths}),
        "openfiles_rename",
    )?;
    let text = format!("{}\n\nApplied.\n\n{after}", reply.render());
    Ok((text, structured))
}
