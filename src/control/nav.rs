//! The service side of `nav` (issue 41): find the workspace of the asked file (registering
//! it as an edit would, never trusting it), resolve a symbol name path (`Class/method`)
//! through the file's symbols, ask the workspace's pipeline (which applies the path policy
//! and asks the file's sources with the workspace's trust), and shape the answer for clients:
//! paths relative to the workspace, each location with its line of code (read confined,
//! inside the workspace only).

use std::path::{Path, PathBuf};

use openfiles_plugin_api::query::{QueryAnswer, QueryKind, QueryRequest, Symbol, DEFAULT_LIMIT};
use openfiles_wire::control::nav::{Nav, NavCall, NavLocation, NavReply};

use crate::diagnostics::pipeline::{PipelineHandle, QueryError};
use crate::workspace::{RegistryHandle, WorkspaceError};

/// How long a question may take unless it says.
const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// Most symbols of a file a name path is looked for among.
const RESOLVE_LIMIT: usize = 100_000;
/// Largest file whose lines are quoted.
const MAX_QUOTED: u64 = 8 << 20;

/// Why `nav` has no answer.
#[derive(Debug, thiserror::Error)]
pub enum NavError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error("no symbol {wanted:?} in {path}; its symbols: {known}")]
    NoSymbol {
        wanted: String,
        path: String,
        known: String,
    },
    #[error("a position needs a line and a column, or a symbol")]
    NoPosition,
}

/// Answer one `nav` request.
pub async fn answer(registry: &RegistryHandle, q: Nav) -> Result<NavReply, NavError> {
    let h = registry.lookup(q.path.clone(), true).await?;
    let root = (*h.root).clone();
    let timeout_ms = q.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    let per_page = q.limit.filter(|&n| n > 0).unwrap_or(DEFAULT_LIMIT);
    let offset = q
        .page
        .unwrap_or(1)
        .saturating_sub(1)
        .saturating_mul(per_page);
    let ask = |kind: QueryKind, line: u32, column: u32, offset: usize| QueryRequest {
        id: 0,
        kind,
        workspace: root.clone(),
        file: q.path.clone(),
        line,
        column,
        query: q.query.clone(),
        new_name: q.new_name.clone(),
        limit: per_page,
        offset,
        timeout_ms,
        trusted: false,
    };
    let positional = !matches!(
        q.kind,
        QueryKind::DocumentSymbols | QueryKind::WorkspaceSymbols
    );
    let mut resolved = None;
    // A server started for the symbol's resolution started for this question.
    let mut started_ms = 0;
    let (line, column) = match (&q.symbol, q.line, q.column) {
        (Some(name), line, _) if positional => {
            // Every symbol of the file, not a page of them.
            let outline = QueryRequest {
                limit: RESOLVE_LIMIT,
                ..ask(QueryKind::DocumentSymbols, 1, 1, 0)
            };
            let (s, ms) = resolve(&h, outline, name, line).await?;
            started_ms = ms;
            let at = (s.line, s.column);
            resolved = Some(s);
            at
        }
        (_, Some(line), Some(column)) => (line, column),
        _ if !positional => (1, 1),
        _ => return Err(NavError::NoPosition),
    };
    let mut answer = h.query(ask(q.kind, line, column, offset)).await?;
    answer.started_ms += started_ms;
    let root2 = root.clone();
    let mut reply = tokio::task::spawn_blocking(move || shape(&root2, q.kind, answer, resolved))
        .await
        .map_err(|e| QueryError::Refused {
            path: root.display().to_string(),
            reason: e.to_string(),
        })?;
    reply.next_page = reply.capped.then(|| q.page.unwrap_or(1).max(1) + 1);
    Ok(reply)
}

/// The symbol `name` (a name path, or its last parts) of the file; with `line`, the one
/// there; and how long its server took to start.
async fn resolve(
    h: &PipelineHandle,
    request: QueryRequest,
    name: &str,
    line: Option<u32>,
) -> Result<(Symbol, u64), NavError> {
    let path = request.file.display().to_string();
    let answer = h.query(request).await?;
    let wanted = name.trim_matches('/');
    let mut found: Vec<&Symbol> = answer.symbols.iter().filter(|s| fits(s, wanted)).collect();
    if let Some(l) = line {
        found.retain(|s| s.line == l);
    }
    // A getter and its field share a name (`DirEntry/depth`): the callable one is meant.
    found.sort_by_key(|s| !callable(s));
    match found.first() {
        Some(s) => Ok(((*s).clone(), answer.started_ms)),
        None => {
            let mut known: Vec<String> = answer.symbols.iter().map(Symbol::name_path).collect();
            known.truncate(40);
            Err(NavError::NoSymbol {
                wanted: name.to_owned(),
                path,
                known: if known.is_empty() {
                    format!("none ({})", answer.notes.join("; "))
                } else {
                    known.join(", ")
                },
            })
        }
    }
}

/// Whether `s` is the symbol the name path `wanted` (or its last parts) names. A segment
/// matches a container by its name, or an `impl` block by the type it is for, as rust-analyzer
/// names them (`impl WalkDir`, `impl<P> fmt::Debug for Walk<P>`): `WalkDir/min_depth` is the
/// method in `impl WalkDir`.
fn fits(s: &Symbol, wanted: &str) -> bool {
    let tail = |full: &str| full == wanted || full.ends_with(&format!("/{wanted}"));
    let full = s.name_path();
    tail(&full)
        || tail(
            &full
                .split('/')
                .map(impl_target)
                .collect::<Vec<_>>()
                .join("/"),
        )
}

/// The type an `impl` block's name is for, without generics (`impl<T> Trait for a::Foo<T>`
/// → `Foo`); any other name unchanged.
fn impl_target(segment: &str) -> &str {
    let Some(rest) = segment.strip_prefix("impl") else {
        return segment;
    };
    if !rest.starts_with([' ', '<']) {
        return segment;
    }
    let ty = rest.rsplit(" for ").next().unwrap_or(rest);
    let ty = if rest.contains(" for ") {
        ty
    } else {
        // `impl<T> Foo<T>`: past the impl's own generics.
        skip_generics(ty)
    };
    let ty = ty.trim().split('<').next().unwrap_or(ty);
    ty.rsplit("::").next().unwrap_or(ty).trim()
}

/// `text` past a leading `<…>` (nested brackets counted).
fn skip_generics(text: &str) -> &str {
    if !text.starts_with('<') {
        return text;
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &text[i + 1..];
                }
            }
            _ => {}
        }
    }
    text
}

/// Functions, methods and constructors: what a name path shared with a field most likely means.
fn callable(s: &Symbol) -> bool {
    matches!(s.kind.as_str(), "method" | "function" | "constructor")
}

/// `path` relative to `root` when inside it.
fn relative(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// The answer with workspace-relative paths and each location's line of code.
fn shape(root: &Path, kind: QueryKind, a: QueryAnswer, resolved: Option<Symbol>) -> NavReply {
    let mut texts: std::collections::HashMap<PathBuf, Option<String>> = Default::default();
    let mut code = |path: &Path, line: u32| -> Option<String> {
        let text = texts.entry(path.to_path_buf()).or_insert_with(|| {
            let bytes =
                openfiles_gate::confine::read_workspace_file(root, path, MAX_QUOTED).ok()?;
            String::from_utf8(bytes).ok()
        });
        let l = text
            .as_deref()?
            .lines()
            .nth(line.checked_sub(1)? as usize)?;
        Some(l.trim().chars().take(200).collect())
    };
    let mut located = |mut at: openfiles_plugin_api::query::Location| {
        let code = code(&at.path, at.line);
        at.path = relative(root, &at.path);
        NavLocation { at, code }
    };
    let locations = a.locations.into_iter().map(&mut located).collect();
    let fix = |mut s: Symbol| {
        s.path = relative(root, &s.path);
        s
    };
    let calls = a
        .calls
        .into_iter()
        .map(|c| NavCall {
            from: c.from.map(fix),
            to: c.to.map(fix),
            locations: c.locations.into_iter().map(&mut located).collect(),
        })
        .collect();
    NavReply {
        root: root.to_path_buf(),
        kind,
        server: a.server,
        resolved: resolved.map(fix),
        locations,
        symbols: a.symbols.into_iter().map(fix).collect(),
        calls,
        edits: a
            .edits
            .into_iter()
            .map(|mut f| {
                f.path = relative(root, &f.path);
                f
            })
            .collect(),
        text: a.text,
        total: a.total,
        capped: a.capped,
        offset: a.offset,
        next_page: None,
        partial: a.partial,
        started_ms: a.started_ms,
        notes: a.notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn symbol(name: &str, kind: &str, container: Option<&str>) -> Symbol {
        Symbol {
            name: name.into(),
            kind: kind.into(),
            path: PathBuf::from("src/lib.rs"),
            line: 1,
            column: 1,
            container: container.map(str::to_owned),
        }
    }

    #[test]
    fn a_name_path_reaches_a_method_in_an_impl_block() {
        let m = symbol("min_depth", "method", Some("impl WalkDir"));
        assert!(fits(&m, "WalkDir/min_depth"));
        assert!(fits(&m, "min_depth"));
        assert!(fits(&m, "impl WalkDir/min_depth"));
        assert!(!fits(&m, "Walk/min_depth"));
        let t = symbol(
            "fmt",
            "method",
            Some("impl<P: AsRef<Path>> fmt::Debug for Walk<P>"),
        );
        assert!(fits(&t, "Walk/fmt"));
        let g = symbol("new", "function", Some("impl<T> Stack<T>"));
        assert!(fits(&g, "Stack/new"));
        let python = symbol("invoke", "method", Some("Context"));
        assert!(fits(&python, "Context/invoke"));
        assert!(!fits(&symbol("implode", "function", None), "plode"));
        assert_eq!(impl_target("implode"), "implode");
    }

    #[test]
    fn a_getter_is_preferred_to_its_field() {
        let field = symbol("depth", "field", Some("DirEntry"));
        let getter = symbol("depth", "method", Some("impl DirEntry"));
        let mut found = [&field, &getter];
        found.sort_by_key(|s| !callable(s));
        assert_eq!(found[0].kind, "method");
    }
}
