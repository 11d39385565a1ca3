//! `openfiles nav def|refs|hover|symbols|impl|calls TARGET [--json]` (issue 41): a code-navigation
//! question to the running service, answered by the language server a check of the file
//! uses. `TARGET` is `PATH:LINE:COL` (1-based, columns in characters), `PATH:LINE` with
//! `--symbol`, `PATH#SYMBOL` (a name path such as `Class/method`) or, for `symbols`, `PATH`.
//! Prints the grouped text, or the reply as JSON.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use openfiles_wire::control::nav::{Nav, NavReply, QueryKind};
use openfiles_wire::control::Request;

/// What `nav` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum What {
    /// Where the symbol at the position is defined.
    Def,
    /// Every use of the symbol at the position (its declaration included).
    Refs,
    /// The type and documentation of the symbol at the position.
    Hover,
    /// The file's symbols (with `--query`: a search over the workspace).
    Symbols,
    /// Implementations of the interface or method at the position.
    Impl,
    /// Who calls the function at the position (`--outgoing`: what it calls).
    Calls,
}

/// `nav`'s options.
#[derive(Debug, Clone)]
pub struct Options {
    pub what: What,
    pub target: String,
    pub query: Option<String>,
    pub limit: Option<usize>,
    /// `calls`: what the function calls, not who calls it.
    pub outgoing: bool,
    pub json: bool,
}

/// A parsed target: the file, and a line/column or a symbol name path.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub path: PathBuf,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub symbol: Option<String>,
}

/// Parse `PATH:LINE:COL`, `PATH:LINE`, `PATH#SYMBOL` or `PATH`.
pub fn parse_target(s: &str) -> Target {
    if let Some((path, symbol)) = s.rsplit_once('#') {
        return Target {
            path: path.into(),
            line: None,
            column: None,
            symbol: Some(symbol.to_owned()),
        };
    }
    let mut parts = s.rsplitn(3, ':');
    let (a, b, c) = (parts.next(), parts.next(), parts.next());
    let num = |x: Option<&str>| x.and_then(|x| x.parse::<u32>().ok());
    match (c, num(b), num(a)) {
        (Some(path), Some(line), Some(column)) => Target {
            path: path.into(),
            line: Some(line),
            column: Some(column),
            symbol: None,
        },
        _ => match (b, num(a)) {
            (Some(path), Some(line)) => Target {
                path: path.into(),
                line: Some(line),
                column: None,
                symbol: None,
            },
            _ => Target {
                path: s.into(),
                line: None,
                column: None,
                symbol: None,
            },
        },
    }
}

/// Run `openfiles nav`.
pub fn run(socket: Option<&Path>, opts: Options) -> anyhow::Result<u8> {
    let t = parse_target(&opts.target);
    let path = std::path::absolute(&t.path)
        .with_context(|| format!("cannot resolve {}", t.path.display()))?;
    let kind = match (opts.what, &opts.query) {
        (What::Def, _) => QueryKind::Definition,
        (What::Refs, _) => QueryKind::References,
        (What::Hover, _) => QueryKind::Hover,
        (What::Impl, _) => QueryKind::Implementation,
        (What::Calls, _) if opts.outgoing => QueryKind::OutgoingCalls,
        (What::Calls, _) => QueryKind::IncomingCalls,
        (What::Symbols, Some(_)) => QueryKind::WorkspaceSymbols,
        (What::Symbols, None) => QueryKind::DocumentSymbols,
    };
    let request = Request::Nav(Nav {
        kind,
        path,
        line: t.line,
        column: t.column,
        symbol: t.symbol,
        query: opts.query,
        limit: opts.limit,
        timeout_ms: None,
    });
    let mut client = crate::control::client::connect_default(socket)?;
    client.set_read_timeout(Some(Duration::from_secs(90)))?;
    let reply: NavReply = client.call_as(&request)?;
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&reply)?);
    } else {
        println!("{}", crate::visible::escape_lines(&reply.render()));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_in_every_form() {
        let t = |p: &str, l, c, s: Option<&str>| Target {
            path: p.into(),
            line: l,
            column: c,
            symbol: s.map(str::to_owned),
        };
        assert_eq!(
            parse_target("a/b.py:3:7"),
            t("a/b.py", Some(3), Some(7), None)
        );
        assert_eq!(parse_target("a/b.py:3"), t("a/b.py", Some(3), None, None));
        assert_eq!(
            parse_target("b.py#Greeter/greet"),
            t("b.py", None, None, Some("Greeter/greet"))
        );
        assert_eq!(parse_target("b.py"), t("b.py", None, None, None));
        assert_eq!(
            parse_target("c:d.py:2:1"),
            t("c:d.py", Some(2), Some(1), None)
        );
    }
}
