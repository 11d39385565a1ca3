//! `openfiles mcp`: one native MCP server (stdio) for the workspace's diagnostics and its
//! Claws terminals, started by the agent. A client process like `hook` and `claws`: it
//! speaks the control and Claws sockets only and imports no service internals.
//!
//! - `server.rs`: JSON-RPC over stdio, lifecycle, the shared context; `call.rs`: one call's
//!   cancellation flag and progress;
//! - `catalog.rs` + `tools.json`: the tool table (schemas and forwarding rules are data);
//! - `link.rs`: the sockets (one-shot control and Claws requests, the claws/2 bus);
//! - `claws_tools.rs`: terminal, bus and forwarded orchestration tools;
//! - `worker.rs`: `claws_worker`, `claws_fleet`, `claws_workers_wait`, sub-workers; `agent.rs`:
//!   which agent CLI workers start and the marker that always ends one;
//! - `nav_tools.rs`: `openfiles_definition`, `openfiles_references`, `openfiles_hover`,
//!   `openfiles_symbols`, `openfiles_implementations`, `openfiles_calls`, `openfiles_rename` (the
//!   workspace's language servers, with `structuredContent`);
//! - `openfiles_tools.rs`: `openfiles_diagnostics`, `openfiles_check`, `openfiles_fix`,
//!   `openfiles_status`;
//!
//! The tool names, argument schemas, defaults, result shapes and bus events of the Claws
//! tools follow Claws's own MCP server, so prompts written for it work unchanged.

pub mod agent;
pub mod call;
pub mod catalog;
mod claws_tools;
pub mod link;
mod nav_tools;
mod openfiles_tools;
mod pool;
pub mod server;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use call::{Call, Fail, Out};
use catalog::Tool;
use server::Ctx;

/// `openfiles mcp` options.
pub struct Options {
    /// The workspace folder (default: the one holding the current directory).
    pub workspace: Option<PathBuf>,
    /// The control socket (default: the usual one).
    pub socket: Option<PathBuf>,
}

/// Serve MCP on stdin/stdout until stdin closes.
pub fn run(opts: Options) -> anyhow::Result<u8> {
    let dir = match opts.workspace {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    let control = crate::paths::control_socket(opts.socket.as_deref())?;
    let ctx = Arc::new(Ctx::new(link::Place::find(&dir, control)));
    let stdin = std::io::stdin();
    // Wake the service and join the bus while the agent is still initializing.
    let warm = ctx.clone();
    let warmup = move || {
        let _ = std::thread::Builder::new()
            .name("mcp-warmup".into())
            .spawn(move || {
                if warm.bus(None).is_err() {
                    let _ = warm.service(None);
                }
            });
    };
    server::serve(
        ctx,
        stdin.lock(),
        Out::new(Box::new(std::io::stdout())),
        warmup,
    );
    Ok(0)
}

/// Run one validated tool call; the navigation tools (`nav_tools`) also answer with
/// `structuredContent`.
fn dispatch_structured(
    ctx: &Arc<Ctx>,
    call: &Call,
    tool: &Tool,
    args: &Value,
) -> Result<(String, Option<Value>), Fail> {
    if nav_tools::TOOLS.contains(&tool.name.as_str()) {
        return nav_tools::call(ctx, call, &tool.name, args).map(|(t, v)| (t, Some(v)));
    }
    dispatch(ctx, call, tool, args).map(|t| (t, None))
}

/// Run one validated tool call.
fn dispatch(ctx: &Arc<Ctx>, call: &Call, tool: &Tool, args: &Value) -> Result<String, Fail> {
    if let Some(rule) = &tool.forward {
        return claws_tools::forward(ctx, call, rule, args);
    }
    match tool.name.as_str() {
        n if n.starts_with("openfiles_") => openfiles_tools::call(ctx, call, n, args),
        n
        @ ("claws_worker" | "claws_fleet" | "claws_workers_wait" | "claws_dispatch_subworker") => {
            worker::call(ctx, call, n, args)
        }
        n => claws_tools::call(ctx, call, n, args),
    }
}

/// A random (version 4) UUID, for correlation ids.
pub fn uuid() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    let filled = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if filled.is_err() {
        // No urandom: time and pid still make ids distinct within this machine.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        b = (t ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `value` as pretty JSON text (the shape Claws's tools return).
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// The answer's `error`, as the tool error text Claws's tools use.
pub fn error_text(resp: &Value) -> String {
    format!(
        "ERROR: {}",
        resp.get("error")
            .and_then(Value::as_str)
            .unwrap_or("request failed")
    )
}

/// A refusal of the Claws server that the worker tools act on (not only show), by kind.
/// claws/1 answers carry no error code yet, only words: [`Refusal::of`] is the one place
/// those words are read, so a code on the wire changes this function alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The terminal named is gone (closed, or never existed): a worker in it ended.
    UnknownTerminal,
    /// The orchestration object named (a wave) is not registered.
    NotFound,
}

impl Refusal {
    /// The refusal `resp` carries, if it is one the tools act on.
    pub fn of(resp: &Value) -> Option<Refusal> {
        if resp.get("ok") == Some(&Value::Bool(true)) {
            return None;
        }
        let e = resp.get("error").and_then(Value::as_str)?;
        if e.contains("unknown terminal") {
            Some(Refusal::UnknownTerminal)
        } else if e.contains("not-found") {
            Some(Refusal::NotFound)
        } else {
            None
        }
    }
}

/// `resp` when it says `ok`, else its error.
pub fn ok(resp: Value) -> Result<Value, Fail> {
    if resp.get("ok") == Some(&Value::Bool(true)) {
        Ok(resp)
    } else {
        Err(Fail::Tool(error_text(&resp)))
    }
}

#[cfg(test)]
mod tests {
    use super::Refusal;
    use serde_json::json;

    #[test]
    fn the_refusals_the_worker_tools_act_on_are_told_apart() {
        let gone = json!({"ok": false, "error": "unknown terminal id 9"});
        assert_eq!(Refusal::of(&gone), Some(Refusal::UnknownTerminal));
        let wave = json!({"ok": false, "error": "wave.status:not-found:w1"});
        assert_eq!(Refusal::of(&wave), Some(Refusal::NotFound));
        let other = json!({"ok": false, "error": "exec timeout after 100ms"});
        assert_eq!(Refusal::of(&other), None);
        assert_eq!(Refusal::of(&json!({"ok": true})), None);
    }
}
