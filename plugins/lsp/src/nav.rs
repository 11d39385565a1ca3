//! Code-navigation questions (issue 41: definition, references, hover, a file's symbols, a
//! workspace symbol search, implementations) answered by the workspace's own servers — the
//! instances a check of the file uses, so a warm server answers at once.
//!
//! Owns: which servers are asked (the check's jobs for the file, same trust rules: nothing
//! starts that a check would not start), in table order until one answers (of pyright and
//! ruff, ruff answers no definition: pyright does), bringing the server up to date with the
//! file on disk first (`didOpen`/`didChange`, as a check does), the position conversion both
//! ways (1-based character columns ↔ the negotiated encoding; target files' lines read
//! confined, inside the workspace), the shapes of the answers (`Location`/`LocationLink`,
//! `DocumentSymbol`/`SymbolInformation`/`WorkspaceSymbol`, hover's three content shapes) and
//! the page of an answer asked for; whether it is partial is `completeness.rs`'s.

use crate::client::Client;
use crate::convert::to_line_col;
use crate::convert::{path_to_uri, uri_to_path, Encoding};
use crate::diagnose::{refresh_others, sync};
use crate::transport::Error;
use crate::{completeness, config, Inner, Job};
use openfiles_plugin_api::columns::Column;
use openfiles_plugin_api::query::{
    page, Call, Location, QueryAnswer, QueryKind, QueryRequest, Symbol,
};
use openfiles_plugin_api::{confine, content_hash, FileEdits, PluginError, TextEdit};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// JSON-RPC's "method not found": the server does not answer this kind of question.
const METHOD_NOT_FOUND: i64 = -32601;

/// LSP's "content modified": the server's state changed under the request; ask again.
const CONTENT_MODIFIED: i64 = -32801;

/// LSP's "server cancelled": the server dropped the request; ask again.
const SERVER_CANCELLED: i64 = -32802;

/// How many lines from a declaration's start its name is looked for on.
const NAME_LINES: usize = 20;

/// Largest file read to convert a target's columns.
const MAX_READ: u64 = 8 << 20;

impl Inner {
    /// Answer `req` with the first of the file's servers that can.
    pub(crate) async fn query(
        self: Arc<Self>,
        req: QueryRequest,
    ) -> Result<QueryAnswer, PluginError> {
        let timeout_ms = match req.timeout_ms {
            0 => self.config.default_timeout_ms,
            ms => ms - (ms / 10).min(500),
        };
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let me = self.clone();
        let (workspace, file, trusted) = (req.workspace.clone(), req.file.clone(), req.trusted);
        let (jobs, notes) = tokio::task::spawn_blocking(move || {
            me.jobs(&workspace, std::slice::from_ref(&file), trusted)
        })
        .await
        .map_err(|e| PluginError::Tool(e.to_string()))?;
        let mut answer = QueryAnswer {
            notes: notes.into_iter().map(|(_, item)| item.message).collect(),
            ..QueryAnswer::unsupported()
        };
        for job in jobs {
            match self.ask_one(&job, &req, deadline).await {
                Ok(Some(mut a)) => {
                    a.notes.extend(answer.notes);
                    return Ok(a);
                }
                // Answered, but with nothing: keep it unless a later server knows more.
                Ok(None) if answer.unsupported => {
                    answer.unsupported = false;
                    answer.server = Some(job.spec.name.clone());
                }
                Ok(None) => {}
                // The server does not answer this kind of question: no note.
                Err(None) => {}
                Err(Some(why)) => answer.notes.push(format!("{}: {why}", job.spec.name)),
            }
        }
        Ok(answer)
    }

    /// One server's answer: `Ok(None)` when it answered with nothing, `Err(None)` when it
    /// does not answer such questions (`MethodNotFound`).
    async fn ask_one(
        &self,
        job: &Job,
        req: &QueryRequest,
        deadline: Instant,
    ) -> Result<Option<QueryAnswer>, Option<String>> {
        let key = self.key(job);
        let cold = self.slot(job, &key).status().await.is_none();
        let started = Instant::now();
        let client = tokio::time::timeout_at(deadline, self.client(job))
            .await
            .map_err(|_| Some(format!("{} did not start in time", job.spec.name)))?
            .map_err(|e| Some(e.to_string()))?;
        let started_ms = if cold {
            started.elapsed().as_millis() as u64
        } else {
            0
        };
        let path = &req.file;
        let uri = path_to_uri(path);
        refresh_others(&client, path);
        let lang = config::language_id(&job.spec, path);
        let sent = sync(&client, path, &uri, &lang, None).map_err(|e| Some(e.to_string()))?;
        let settled = completeness::settle(&client, req, deadline).await;
        let enc = client.caps.encoding;
        let position = to_lsp(&sent.text, req.line, req.column, enc);
        let (method, params) = request(req, &uri, position);
        let mut value = ask(&client, method, params, deadline).await?;
        // A call hierarchy is two steps: the item at the position, then its calls.
        let second = match req.kind {
            QueryKind::IncomingCalls => Some("callHierarchy/incomingCalls"),
            QueryKind::OutgoingCalls => Some("callHierarchy/outgoingCalls"),
            _ => None,
        };
        if let Some(method) = second {
            let Some(item) = value.as_array().and_then(|a| a.first()).cloned() else {
                return Ok(None);
            };
            value = ask(&client, method, json!({"item": item}), deadline).await?;
            if req.kind == QueryKind::OutgoingCalls {
                // Outgoing calls' ranges are in the asked item's file.
                value = json!({"item": item, "calls": value});
            }
        }
        let mut answer = QueryAnswer {
            server: Some(job.spec.name.clone()),
            started_ms,
            partial: completeness::partial(&client, job, req, &settled),
            ..QueryAnswer::default()
        };
        fill(
            &mut answer,
            req,
            &value,
            &mut Lines::new(&client, &req.workspace),
        );
        let empty = answer.text.as_deref().is_none_or(str::is_empty)
            && answer.edits.is_empty()
            && answer.notes.is_empty()
            && answer.locations.is_empty()
            && answer.symbols.is_empty()
            && answer.calls.is_empty()
            && answer.total == 0
            && answer.partial.is_none();
        Ok((!empty).then_some(answer))
    }
}

/// One request to the server until `deadline`: `Err(None)` when it does not answer such
/// requests (`MethodNotFound`). Asked again when the server cancelled it because its state
/// changed under it (`ContentModified`, `ServerCancelled`: rust-analyzer asked while it
/// primes its caches cancels the request when the priming ends).
async fn ask(
    client: &Client,
    method: &str,
    params: Value,
    deadline: Instant,
) -> Result<Value, Option<String>> {
    let mut changed = client.changed.clone();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match client.transport.request(method, params.clone(), left).await {
            Ok(v) => return Ok(v),
            Err(Error::Rpc {
                code: METHOD_NOT_FOUND,
                ..
            }) => return Err(None),
            Err(Error::Rpc {
                code: CONTENT_MODIFIED | SERVER_CANCELLED,
                ..
            }) if !left.is_zero() => {
                // Once the server moved on (what it sends next), or shortly.
                let wait = Duration::from_millis(50).min(left);
                let _ = tokio::time::timeout(wait, changed.changed()).await;
            }
            Err(e) => return Err(Some(e.to_string())),
        }
    }
}

/// The LSP method and parameters of `req` about the document `uri`, at `position`.
fn request(req: &QueryRequest, uri: &str, position: Value) -> (&'static str, Value) {
    let doc = json!({"uri": uri});
    match req.kind {
        QueryKind::Definition => (
            "textDocument/definition",
            json!({"textDocument": doc, "position": position}),
        ),
        QueryKind::Implementation => (
            "textDocument/implementation",
            json!({"textDocument": doc, "position": position}),
        ),
        QueryKind::References => (
            "textDocument/references",
            json!({"textDocument": doc, "position": position, "context": {"includeDeclaration": true}}),
        ),
        QueryKind::Hover => (
            "textDocument/hover",
            json!({"textDocument": doc, "position": position}),
        ),
        QueryKind::Rename => (
            "textDocument/rename",
            json!({"textDocument": doc, "position": position,
                   "newName": req.new_name.clone().unwrap_or_default()}),
        ),
        QueryKind::IncomingCalls | QueryKind::OutgoingCalls => (
            "textDocument/prepareCallHierarchy",
            json!({"textDocument": doc, "position": position}),
        ),
        QueryKind::DocumentSymbols => ("textDocument/documentSymbol", json!({"textDocument": doc})),
        QueryKind::WorkspaceSymbols => (
            "workspace/symbol",
            json!({"query": req.query.clone().unwrap_or_default()}),
        ),
    }
}

/// `answer` filled from the server's `value` for `req`: the page the request asks for.
fn fill(answer: &mut QueryAnswer, req: &QueryRequest, value: &Value, lines: &mut Lines) {
    match req.kind {
        QueryKind::Hover => answer.text = hover_text(value),
        QueryKind::Rename => match rename_edits(value, &req.workspace, lines) {
            Ok(edits) => {
                answer.total = edits.iter().map(|f| f.edits.len()).sum();
                answer.edits = edits;
            }
            Err(why) => answer.notes.push(why.to_string()),
        },
        QueryKind::IncomingCalls | QueryKind::OutgoingCalls => {
            let calls = calls_of(req.kind, value, lines);
            answer.calls = page(answer, req, calls);
        }
        QueryKind::DocumentSymbols | QueryKind::WorkspaceSymbols => {
            let mut symbols = Vec::new();
            symbols_of(value, &req.file, None, lines, &mut symbols);
            answer.symbols = page(answer, req, symbols);
        }
        _ => {
            let mut locations: Vec<Location> = locations_of(value)
                .into_iter()
                .filter_map(|(uri, range)| lines.location(&uri, &range))
                .collect();
            locations.sort();
            locations.dedup();
            answer.locations = page(answer, req, locations);
        }
    }
}

/// A 1-based (line, character column) as an LSP position in `enc` on `text`.
pub fn to_lsp(text: &str, line: u32, column: u32, enc: Encoding) -> Value {
    let l = line.saturating_sub(1);
    let chars = column.saturating_sub(1) as usize;
    let units: usize = text
        .split('\n')
        .nth(l as usize)
        .map(|s| {
            s.chars()
                .take(chars)
                .map(|c| match enc {
                    Encoding::Utf8 => c.len_utf8(),
                    Encoding::Utf16 => c.len_utf16(),
                    Encoding::Utf32 => 1,
                })
                .sum()
        })
        .unwrap_or(chars);
    json!({"line": l, "character": units})
}

/// Lines of the files an answer names, read once each, for their columns.
struct Lines<'a> {
    client: &'a Client,
    workspace: PathBuf,
    texts: HashMap<PathBuf, Option<Arc<str>>>,
}

impl<'a> Lines<'a> {
    fn new(client: &'a Client, workspace: &Path) -> Self {
        Lines {
            client,
            workspace: workspace.to_path_buf(),
            texts: HashMap::new(),
        }
    }

    /// The text of `path`: as the server has it open, else read confined (inside the
    /// workspace only; a file outside keeps the server's columns).
    fn text(&mut self, path: &Path) -> Option<Arc<str>> {
        if let Some(t) = self.texts.get(path) {
            return t.clone();
        }
        let open = self
            .client
            .docs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .map(|d| d.text.clone());
        let text = open.or_else(|| {
            let bytes = confine::read_workspace_file(&self.workspace, path, MAX_READ).ok()?;
            String::from_utf8(bytes).ok().map(Arc::from)
        });
        self.texts.insert(path.to_path_buf(), text.clone());
        text
    }

    /// 1-based (line, character column) of an LSP position in `path`.
    fn point(&mut self, path: &Path, pos: &Value) -> (u32, u32) {
        let line = pos["line"].as_u64().unwrap_or(0) as u32;
        let unit = pos["character"].as_u64().unwrap_or(0) as u32 + 1;
        let column = match self.client.caps.encoding {
            Encoding::Utf8 => Column::Bytes(unit),
            Encoding::Utf16 => Column::Utf16(unit),
            Encoding::Utf32 => Column::Chars(unit),
        };
        let text = self.text(path);
        let l = text
            .as_deref()
            .and_then(|t| t.split('\n').nth(line as usize))
            .map(|l| l.strip_suffix('\r').unwrap_or(l));
        (line + 1, column.to_chars(l))
    }

    /// Whether the 1-based line of `at` in `path` is a comment line.
    fn on_comment_line(&mut self, path: &Path, at: (u32, u32)) -> bool {
        self.text(path).is_some_and(|t| {
            t.split('\n')
                .nth(at.0.saturating_sub(1) as usize)
                .is_some_and(is_comment_line)
        })
    }

    /// Where `name` first appears as a word in `path` from `start` (within a few lines,
    /// comment lines skipped), else `start`.
    fn name_from(&mut self, path: &Path, start: (u32, u32), name: &str) -> (u32, u32) {
        let Some(text) = self.text(path).filter(|_| !name.is_empty()) else {
            return start;
        };
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        let lines = text.split('\n').skip(start.0.saturating_sub(1) as usize);
        for (k, l) in lines.take(NAME_LINES).enumerate() {
            if is_comment_line(l) {
                continue;
            }
            let skip = if k == 0 {
                start.1.saturating_sub(1) as usize
            } else {
                0
            };
            let chars: Vec<char> = l.chars().collect();
            let want: Vec<char> = name.chars().collect();
            for i in skip..chars.len().saturating_sub(want.len() - 1) {
                if chars[i..].starts_with(&want)
                    && !word(i.checked_sub(1).map(|j| chars[j]))
                    && !word(chars.get(i + want.len()).copied())
                {
                    return (start.0 + k as u32, i as u32 + 1);
                }
            }
        }
        start
    }

    fn location(&mut self, uri: &str, range: &Value) -> Option<Location> {
        let path = uri_to_path(uri)?;
        let (line, column) = self.point(&path, &range["start"]);
        let (end_line, end_column) = self.point(&path, &range["end"]);
        Some(Location {
            path,
            line,
            column,
            end_line,
            end_column,
        })
    }
}

/// The (uri, range) pairs of a definition/references/implementation answer: `Location`,
/// `Location[]`, `LocationLink[]` (its target's selection range) or null.
fn locations_of(v: &Value) -> Vec<(String, Value)> {
    let one = |l: &Value| -> Option<(String, Value)> {
        if let Some(uri) = l["targetUri"].as_str() {
            let range = l
                .get("targetSelectionRange")
                .or_else(|| l.get("targetRange"))?;
            return Some((uri.to_owned(), range.clone()));
        }
        Some((l["uri"].as_str()?.to_owned(), l.get("range")?.clone()))
    };
    match v {
        Value::Array(items) => items.iter().filter_map(one).collect(),
        Value::Object(_) => one(v).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Hover's text: `MarkupContent`, a `MarkedString` or an array of them.
fn hover_text(v: &Value) -> Option<String> {
    let contents = v.get("contents")?;
    let part = |c: &Value| -> Option<String> {
        match c {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => {
                let value = o.get("value")?.as_str()?;
                Some(match o.get("language").and_then(Value::as_str) {
                    Some(lang) => format!("```{lang}\n{value}\n```"),
                    None => value.to_owned(),
                })
            }
            _ => None,
        }
    };
    let text = match contents {
        Value::Array(parts) => parts
            .iter()
            .filter_map(part)
            .collect::<Vec<_>>()
            .join("\n\n"),
        c => part(c)?,
    };
    let text = text.trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// Why a rename's edits are not handed out.
#[derive(Debug, thiserror::Error)]
#[error("rename refused: {0}")]
pub struct Refused(String);

/// A rename's `WorkspaceEdit` (`changes` or `documentChanges`) as edits per file, each with
/// the hash of the content it was made for; refused whole when it reaches outside the
/// workspace, creates, renames or deletes a file, or names a file that cannot be read.
fn rename_edits(
    value: &Value,
    workspace: &Path,
    lines: &mut Lines,
) -> Result<Vec<FileEdits>, Refused> {
    let mut per_file: Vec<(String, Vec<Value>)> = Vec::new();
    if let Some(changes) = value["changes"].as_object() {
        for (uri, list) in changes {
            per_file.push((uri.clone(), list.as_array().cloned().unwrap_or_default()));
        }
    }
    for change in value["documentChanges"].as_array().into_iter().flatten() {
        let Some(uri) = change.pointer("/textDocument/uri").and_then(Value::as_str) else {
            return Err(Refused(
                "the rename creates, renames or deletes files".into(),
            ));
        };
        let edits = change["edits"].as_array().cloned().unwrap_or_default();
        per_file.push((uri.to_owned(), edits));
    }
    let mut out = Vec::new();
    for (uri, edits) in per_file {
        let path = uri_to_path(&uri).ok_or_else(|| Refused(format!("not a file: {uri}")))?;
        if !path.starts_with(workspace) {
            return Err(Refused(format!(
                "the server proposed edits outside the workspace ({})",
                path.display()
            )));
        }
        let text = lines
            .text(&path)
            .ok_or_else(|| Refused(format!("cannot read {}", path.display())))?;
        let enc = lines.client.caps.encoding;
        let mut file = FileEdits {
            path,
            sha256: content_hash(text.as_bytes()),
            edits: Vec::new(),
        };
        for e in edits {
            let pos = |k: &str| {
                let p = &e["range"][k];
                let line = p["line"].as_u64().unwrap_or(0) as u32;
                let ch = p["character"].as_u64().unwrap_or(0) as u32;
                to_line_col(&text, line, ch, enc)
            };
            let ((line, column), (end_line, end_column)) = (pos("start"), pos("end"));
            file.edits.push(TextEdit {
                line,
                column,
                end_line,
                end_column,
                new_text: e["newText"].as_str().unwrap_or_default().to_owned(),
            });
        }
        file.edits
            .sort_by_key(|e| (e.line, e.column, e.end_line, e.end_column));
        out.push(file);
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// A `CallHierarchyItem` as a symbol at its name.
fn item_symbol(item: &Value, lines: &mut Lines) -> Option<Symbol> {
    let path = uri_to_path(item["uri"].as_str()?)?;
    let range = item.get("selectionRange").or_else(|| item.get("range"))?;
    let (line, column) = lines.point(&path, &range["start"]);
    Some(Symbol {
        name: item["name"].as_str()?.to_owned(),
        kind: kind_name(item["kind"].as_u64().unwrap_or(0)).to_owned(),
        path,
        line,
        column,
        container: item["detail"]
            .as_str()
            .filter(|d| !d.is_empty())
            .map(str::to_owned),
    })
}

/// Incoming calls (`[{from, fromRanges}]`, ranges in the caller's file) or outgoing ones
/// (`{item, calls: [{to, fromRanges}]}`, ranges in the asked item's file).
fn calls_of(kind: QueryKind, value: &Value, lines: &mut Lines) -> Vec<Call> {
    let (edges, outgoing_in) = match kind {
        QueryKind::OutgoingCalls => (&value["calls"], value["item"]["uri"].as_str()),
        _ => (value, None),
    };
    let Some(edges) = edges.as_array() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in edges {
        let peer = if outgoing_in.is_some() {
            &e["to"]
        } else {
            &e["from"]
        };
        let Some(symbol) = item_symbol(peer, lines) else {
            continue;
        };
        let Some(uri) = outgoing_in.or(peer["uri"].as_str()) else {
            continue;
        };
        let mut locations: Vec<Location> = e["fromRanges"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| lines.location(uri, r))
            .collect();
        locations.sort();
        let (from, to) = if outgoing_in.is_some() {
            (None, Some(symbol))
        } else {
            (Some(symbol), None)
        };
        out.push(Call {
            from,
            to,
            locations,
        });
    }
    out
}

/// The LSP `SymbolKind` in words.
fn kind_name(kind: u64) -> &'static str {
    const NAMES: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enumMember",
        "struct",
        "event",
        "operator",
        "typeParameter",
    ];
    kind.checked_sub(1)
        .and_then(|i| NAMES.get(i as usize))
        .copied()
        .unwrap_or("symbol")
}

/// Flatten a symbol answer: `DocumentSymbol[]` (children nested, their container the name
/// path above them), `SymbolInformation[]` or `WorkspaceSymbol[]` (`containerName`).
fn symbols_of(
    v: &Value,
    file: &Path,
    container: Option<&str>,
    lines: &mut Lines,
    out: &mut Vec<Symbol>,
) {
    let Some(items) = v.as_array() else {
        return;
    };
    for s in items {
        let Some(name) = s["name"].as_str() else {
            continue;
        };
        let kind = kind_name(s["kind"].as_u64().unwrap_or(0)).to_owned();
        if let Some(range) = s.get("selectionRange").or_else(|| s.get("range")) {
            // A DocumentSymbol: in `file`, children below it. rust-analyzer's selection range
            // of a documented item starts at the name's first mention in its doc comment
            // (`/// Returns the depth…`): then the name is the first one past the comments.
            let mut at = lines.point(file, &range["start"]);
            if lines.on_comment_line(file, at) {
                at = lines.name_from(file, (at.0 + 1, 1), name);
            }
            let (line, column) = at;
            out.push(Symbol {
                name: name.to_owned(),
                kind,
                path: file.to_path_buf(),
                line,
                column,
                container: container.map(str::to_owned),
            });
            if let Some(children) = s.get("children") {
                let path = match container {
                    Some(c) => format!("{c}/{name}"),
                    None => name.to_owned(),
                };
                symbols_of(children, file, Some(&path), lines, out);
            }
            continue;
        }
        let location = &s["location"];
        let Some(path) = location["uri"].as_str().and_then(uri_to_path) else {
            continue;
        };
        // A `SymbolInformation`'s range is the whole declaration (from `def`, or a
        // decorator): the position is its name's, the first one from there.
        let (line, column) = match location.get("range") {
            Some(r) => {
                let start = lines.point(&path, &r["start"]);
                lines.name_from(&path, start, name)
            }
            None => (0, 0),
        };
        let container = s["containerName"]
            .as_str()
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        out.push(Symbol {
            name: name.to_owned(),
            kind,
            path,
            line,
            column,
            container,
        });
    }
}

/// A line that only comments (`//`, `///`, `/*`, ` *`, `--`, `# …`): a name on it is not a
/// declaration's. `#[attr]` and `#define` are code.
fn is_comment_line(line: &str) -> bool {
    let t = line.trim_start();
    let hash = t
        .strip_prefix('#')
        .is_some_and(|r| !r.starts_with(|c: char| c.is_alphabetic() || c == '['));
    hash || ["//", "/*", "*", "--"].iter().any(|m| t.starts_with(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_lines_and_code() {
        assert!(is_comment_line("    /// Returns the depth at which"));
        assert!(is_comment_line("  # a comment"));
        assert!(is_comment_line(" * continued"));
        assert!(!is_comment_line("    pub fn depth(&self) -> usize {"));
        assert!(!is_comment_line("#[cfg(unix)]"));
        assert!(!is_comment_line("#define MAX 3"));
        assert!(!is_comment_line("def depth(self):"));
    }

    #[test]
    fn positions_convert_both_ways_in_each_encoding() {
        let text = "a\n𝕏 = f(x)\n";
        assert_eq!(
            to_lsp(text, 2, 3, Encoding::Utf16),
            json!({"line": 1, "character": 3})
        );
        assert_eq!(
            to_lsp(text, 2, 3, Encoding::Utf8),
            json!({"line": 1, "character": 5})
        );
        assert_eq!(
            to_lsp(text, 2, 3, Encoding::Utf32),
            json!({"line": 1, "character": 2})
        );
    }

    #[test]
    fn every_location_shape_is_read() {
        let range =
            json!({"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}});
        let loc = json!({"uri": "file:///w/a.py", "range": range});
        let link = json!({"targetUri": "file:///w/b.py", "targetRange": range, "targetSelectionRange": range});
        assert_eq!(locations_of(&loc).len(), 1);
        assert_eq!(locations_of(&json!([loc, link]))[1].0, "file:///w/b.py");
        assert!(locations_of(&Value::Null).is_empty());
    }

    #[test]
    fn hover_text_takes_each_content_shape() {
        assert_eq!(
            hover_text(&json!({"contents": {"kind": "markdown", "value": "def f()"}})).as_deref(),
            Some("def f()")
        );
        assert_eq!(
            hover_text(&json!({"contents": [{"language": "python", "value": "x: int"}, "doc"]}))
                .as_deref(),
            Some("```python\nx: int\n```\n\ndoc")
        );
        assert_eq!(hover_text(&json!({"contents": ""})), None);
        assert_eq!(kind_name(5), "class");
        assert_eq!(kind_name(6), "method");
        assert_eq!(kind_name(99), "symbol");
    }
}
