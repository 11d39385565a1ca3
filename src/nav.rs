//! `openfiles nav def|refs|hover|symbols|impl|calls|rename TARGET [--json]` (issue 41): a
//! code-navigation question to the running service, answered by the language server a check
//! of the file uses. `TARGET` is `PATH:LINE:COL` (1-based, columns in characters),
//! `PATH#SYMBOL` (a name path such as `Class/method`) or, for `symbols`, `PATH`. Prints the
//! grouped text, or the reply as JSON; `--page N` the Nth page of a capped answer; `rename --to NAME --apply` applies the edits as the
//! checkers' fixes are applied ([`apply_rename`]) and reports them as an edit.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use openfiles_wire::control::nav::{Nav, NavReply, QueryKind};

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
    /// Rename the symbol at the position (`--to NAME`): print the edits, or `--apply` them.
    Rename,
}

/// `nav`'s options.
#[derive(Debug, Clone)]
pub struct Options {
    pub what: What,
    pub target: String,
    pub query: Option<String>,
    pub limit: Option<usize>,
    /// Which page of a capped answer (1-based).
    pub page: Option<usize>,
    /// `calls`: what the function calls, not who calls it.
    pub outgoing: bool,
    /// `rename`: the new name, and whether to apply the edits.
    pub to: Option<String>,
    pub apply: bool,
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
        (What::Rename, _) => QueryKind::Rename,
        (What::Symbols, Some(_)) => QueryKind::WorkspaceSymbols,
        (What::Symbols, None) => QueryKind::DocumentSymbols,
    };
    let request = Nav {
        kind,
        path,
        line: t.line,
        column: t.column,
        symbol: t.symbol,
        query: opts.query,
        new_name: opts.to.clone(),
        limit: opts.limit,
        page: opts.page,
        timeout_ms: None,
    };
    let mut client = crate::control::client::connect_default(socket)?;
    client.set_read_timeout(Some(Duration::from_secs(90)))?;
    let reply: NavReply = client.call(&request)?;
    if opts.what == What::Rename && opts.apply {
        let changed = apply_rename(&reply, opts.to.as_deref().unwrap_or_default())?;
        let edits = openfiles_wire::control::Edited {
            paths: changed.clone(),
            agent: Some("nav".into()),
            tool: Some("rename".into()),
            event: None,
            ts: openfiles_wire::spec::now_ms(),
        };
        client.call(&edits)?;
        for p in changed {
            println!(
                "renamed in {}",
                crate::visible::escape(&p.display().to_string())
            );
        }
        return Ok(0);
    }
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&reply)?);
    } else {
        println!("{}", crate::visible::escape_lines(&reply.render()));
    }
    Ok(0)
}

/// Why a rename was not applied.
#[derive(Debug, thiserror::Error)]
pub enum RenameError {
    #[error("the server proposed no edits{0}")]
    Nothing(String),
    #[error(transparent)]
    Fix(#[from] openfiles_fixes::FixError),
    #[error("not applied: {0}")]
    Skipped(String),
}

/// Apply a rename's edits the way the checkers' fixes are applied (`openfiles_fixes`): every
/// file only if it still holds the content the edits were made for; the files changed.
pub fn apply_rename(reply: &NavReply, new_name: &str) -> Result<Vec<PathBuf>, RenameError> {
    if reply.edits.is_empty() {
        let why = match reply.notes.is_empty() {
            true => String::new(),
            false => format!(": {}", reply.notes.join("; ")),
        };
        return Err(RenameError::Nothing(why));
    }
    let files = reply
        .edits
        .iter()
        .map(|f| openfiles_plugin_api::FileEdits {
            path: reply.root.join(&f.path),
            ..f.clone()
        })
        .collect();
    let title = format!("rename to {new_name}");
    let fix = openfiles_plugin_api::Fix {
        title: title.clone(),
        safe: true,
        files,
    };
    let chosen = openfiles_fixes::Chosen {
        file: reply.root.join(&reply.edits[0].path),
        item: openfiles_plugin_api::Item::note(openfiles_plugin_api::Severity::Info, "nav", title),
        fix,
        summary: String::new(),
    };
    let out = openfiles_fixes::apply(&reply.root, vec![chosen])?;
    if let Some((_, why)) = out.skipped.first() {
        return Err(RenameError::Skipped(why.to_string()));
    }
    Ok(out.changed)
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
