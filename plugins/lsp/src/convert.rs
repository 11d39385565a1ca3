//! Conversions between LSP shapes and openfiles items.
//!
//! Owns: file URIs (percent-encoding both ways), position encodings (a server's `character`
//! counts UTF-8 bytes, UTF-16 code units or UTF-32 code points, as negotiated; the output
//! column counts Unicode scalar values of the line, 1-based), severities (1–4 →
//! error/warning/info/hint, absent → error), codes (numbers become strings) and the merge
//! of several servers' items for one file (identical problems appear once), and the fixes a
//! server hands with its diagnostics ([`inline_fixes`]: clangd's inline `codeActions`, ruff's
//! `data`) or in answer to `textDocument/codeAction` ([`action_fix`]).

use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString};
use openfiles_plugin_api::{FileEdits, Fix, Item, Severity, TextEdit};
use serde_json::Value;
use std::path::Path;

/// The negotiated unit of `Position.character`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

impl Encoding {
    /// From the server's `positionEncoding` (absent means UTF-16, per the spec).
    pub fn from_lsp(s: Option<&str>) -> Self {
        match s {
            Some("utf-8") => Encoding::Utf8,
            Some("utf-32") => Encoding::Utf32,
            _ => Encoding::Utf16,
        }
    }
}

/// `file://` URIs, the plugin API's one copy.
pub use openfiles_plugin_api::uri::{path_to_uri, uri_to_path};

/// 1-based (line, column) of an LSP position in `text`; column counts characters.
pub fn to_line_col(text: &str, line: u32, character: u32, enc: Encoding) -> (u32, u32) {
    let Some(l) = text.split('\n').nth(line as usize) else {
        return (line + 1, character + 1);
    };
    let l = l.strip_suffix('\r').unwrap_or(l);
    let mut units = 0u32;
    let mut chars = 0u32;
    for c in l.chars() {
        if units >= character {
            break;
        }
        units += match enc {
            Encoding::Utf8 => c.len_utf8() as u32,
            Encoding::Utf16 => c.len_utf16() as u32,
            Encoding::Utf32 => 1,
        };
        chars += 1;
    }
    (line + 1, chars + 1)
}

/// One LSP diagnostic as an item; `text` is the document the server saw.
pub fn to_item(d: &Diagnostic, text: &str, enc: Encoding, server: &str) -> Item {
    let (line, column) = to_line_col(text, d.range.start.line, d.range.start.character, enc);
    let severity = match d.severity {
        Some(DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(DiagnosticSeverity::INFORMATION) => Severity::Info,
        Some(DiagnosticSeverity::HINT) => Severity::Hint,
        _ => Severity::Error,
    };
    let code = d.code.as_ref().map(|c| match c {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.clone(),
    });
    Item {
        introduced: None,
        fixes: Vec::new(),
        line,
        column,
        severity,
        source: d
            .source
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| server.to_owned()),
        code,
        message: d.message.clone(),
    }
}

/// Merge items from several servers: sorted by position, a problem reported twice (same
/// place, severity, code and message, whatever the source) kept once.
pub fn merge(mut items: Vec<Item>) -> Vec<Item> {
    items.sort_by(|a, b| {
        (a.line, a.column, a.severity, &a.code, &a.message, &a.source)
            .cmp(&(b.line, b.column, b.severity, &b.code, &b.message, &b.source))
    });
    items.dedup_by(|b, a| {
        (a.line, a.column, a.severity, &a.code, &a.message)
            == (b.line, b.column, b.severity, &b.code, &b.message)
    });
    items
}

/// Where [`crate::client`] keeps the `codeActions` a server attached to a pushed diagnostic
/// (clangd's `codeActionsInline`), inside the diagnostic's `data` (the original `data` under
/// `"data"`), since `lsp_types::Diagnostic` has no field for them.
pub const INLINE_ACTIONS: &str = "openfiles.codeActions";

/// The document a fix is for: its path, URI, the text the server saw and its hash.
pub struct Doc<'a> {
    pub path: &'a Path,
    pub uri: &'a str,
    pub text: &'a str,
    pub sha256: &'a str,
    pub enc: Encoding,
}

/// The fixes a server handed with diagnostic `d`: clangd's inline code actions, or ruff's
/// `data` (`title`, `edits`, `is_preferred` — ruff's safe fixes are the preferred ones).
pub fn inline_fixes(d: &Diagnostic, doc: &Doc) -> Vec<Fix> {
    let Some(data) = d.data.as_ref() else {
        return Vec::new();
    };
    if let Some(actions) = data.get(INLINE_ACTIONS).and_then(Value::as_array) {
        return actions.iter().filter_map(|a| action_fix(a, doc)).collect();
    }
    let (Some(title), Some(edits)) = (
        data.get("title").and_then(Value::as_str),
        data.get("edits").and_then(Value::as_array),
    ) else {
        return Vec::new();
    };
    let safe = data.get("is_preferred").and_then(Value::as_bool) == Some(true);
    edits_fix(title, safe, edits, doc).into_iter().collect()
}

/// A `CodeAction` as a fix: a quick fix whose workspace edit (`changes` or `documentChanges`)
/// touches only `doc`; safe when the server marks it preferred. Commands, other kinds and
/// edits of other files are not fixes here.
pub fn action_fix(action: &Value, doc: &Doc) -> Option<Fix> {
    let kind = action
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("quickfix");
    if !kind.starts_with("quickfix") {
        return None;
    }
    let title = action.get("title").and_then(Value::as_str)?;
    let edit = action.get("edit")?;
    let mut edits: Vec<Value> = Vec::new();
    if let Some(changes) = edit.get("changes").and_then(Value::as_object) {
        for (uri, list) in changes {
            if !same_uri(uri, doc) {
                return None;
            }
            edits.extend(list.as_array()?.iter().cloned());
        }
    }
    for change in edit
        .get("documentChanges")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let uri = change
            .pointer("/textDocument/uri")
            .and_then(Value::as_str)?;
        if !same_uri(uri, doc) {
            return None;
        }
        edits.extend(change.get("edits")?.as_array()?.iter().cloned());
    }
    let safe = action.get("isPreferred").and_then(Value::as_bool) == Some(true);
    edits_fix(title, safe, &edits, doc)
}

fn same_uri(uri: &str, doc: &Doc) -> bool {
    uri == doc.uri || uri_to_path(uri).is_some_and(|p| p == doc.path)
}

/// LSP `TextEdit`s of `doc` as a fix (positions converted to the items' 1-based characters).
fn edits_fix(title: &str, safe: bool, edits: &[Value], doc: &Doc) -> Option<Fix> {
    let mut out = Vec::with_capacity(edits.len());
    for e in edits {
        let r = e.get("range")?;
        let pos = |k: &str| -> Option<(u32, u32)> {
            let p = r.get(k)?;
            let line = u32::try_from(p.get("line")?.as_u64()?).ok()?;
            let ch = u32::try_from(p.get("character")?.as_u64()?).ok()?;
            Some(to_line_col(doc.text, line, ch, doc.enc))
        };
        let (line, column) = pos("start")?;
        let (end_line, end_column) = pos("end")?;
        out.push(TextEdit {
            line,
            column,
            end_line,
            end_column,
            new_text: e.get("newText")?.as_str()?.to_owned(),
        });
    }
    if out.is_empty() {
        return None;
    }
    Some(Fix {
        title: title.to_owned(),
        safe,
        files: vec![FileEdits {
            path: doc.path.to_owned(),
            sha256: doc.sha256.to_owned(),
            edits: out,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_whatever_the_encoding() {
        // "é" is 2 UTF-8 bytes, 1 UTF-16 unit; "𝄞" is 4 bytes, 2 UTF-16 units.
        let text = "x\r\naé𝄞b = 1\n";
        assert_eq!(to_line_col(text, 1, 7, Encoding::Utf8), (2, 4));
        assert_eq!(to_line_col(text, 1, 4, Encoding::Utf16), (2, 4));
        assert_eq!(to_line_col(text, 1, 3, Encoding::Utf32), (2, 4));
        assert_eq!(to_line_col(text, 0, 0, Encoding::Utf16), (1, 1));
        assert_eq!(to_line_col(text, 9, 2, Encoding::Utf16), (10, 3));
    }

    #[test]
    fn severities_codes_and_sources_map_and_duplicates_merge() {
        let d: Diagnostic = serde_json::from_value(serde_json::json!({
            "range": {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 3}},
            "severity": 2, "code": 2322, "message": "m"
        }))
        .unwrap();
        let a = to_item(&d, "abc\n", Encoding::Utf16, "srv");
        assert_eq!(
            (a.severity, a.code.as_deref(), a.source.as_str(), a.column),
            (Severity::Warning, Some("2322"), "srv", 3)
        );
        for (n, s) in [
            (1, Severity::Error),
            (3, Severity::Info),
            (4, Severity::Hint),
        ] {
            let mut d = d.clone();
            d.severity = serde_json::from_value(serde_json::json!(n)).unwrap();
            assert_eq!(to_item(&d, "", Encoding::Utf16, "x").severity, s);
        }
        let mut b = a.clone();
        b.source = "other".into();
        let mut c = a.clone();
        c.line = 7;
        // Kept once (the source that sorts first), in position order.
        assert_eq!(merge(vec![c.clone(), a, b.clone()]), vec![b, c]);
    }

    fn doc_of<'a>(path: &'a Path, uri: &'a str, text: &'a str) -> Doc<'a> {
        Doc {
            path,
            uri,
            text,
            sha256: "h",
            enc: Encoding::Utf16,
        }
    }

    #[test]
    fn ruff_data_and_inline_code_actions_become_fixes_of_this_file_only() {
        let path = Path::new("/w/a.py");
        let uri = path_to_uri(path);
        let text = "import os\nx = 1\n";
        let doc = doc_of(path, &uri, text);
        let ruff: Diagnostic = serde_json::from_value(serde_json::json!({
            "range": {"start": {"line": 0, "character": 7}, "end": {"line": 0, "character": 9}},
            "message": "unused", "data": {"title": "Remove unused import: `os`", "is_preferred": true,
            "edits": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}, "newText": ""}]}
        }))
        .unwrap();
        let f = inline_fixes(&ruff, &doc);
        assert_eq!(f.len(), 1);
        assert!(f[0].safe);
        let e = &f[0].files[0].edits[0];
        assert_eq!((e.line, e.column, e.end_line, e.end_column), (1, 1, 2, 1));
        assert_eq!(f[0].files[0].sha256, "h");
        let other = path_to_uri(Path::new("/w/b.py"));
        let clangd: Diagnostic = serde_json::from_value(serde_json::json!({
            "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 1}},
            "message": "m", "data": {INLINE_ACTIONS: [
                {"title": "insert ';'", "kind": "quickfix", "isPreferred": true,
                 "edit": {"changes": {uri.clone(): [{"range": {"start": {"line": 1, "character": 5}, "end": {"line": 1, "character": 5}}, "newText": ";"}]}}},
                {"title": "elsewhere", "edit": {"changes": {other: [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "newText": "x"}]}}},
                {"title": "refactor", "kind": "refactor.extract", "edit": {"changes": {}}},
                {"title": "a command", "command": {"command": "x"}}
            ]}
        }))
        .unwrap();
        let f = inline_fixes(&clangd, &doc);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].title, "insert ';'");
        assert_eq!(f[0].files[0].edits[0].column, 6);
        let ts = serde_json::json!({"title": "Change spelling to 'count'", "kind": "quickfix",
            "edit": {"documentChanges": [{"textDocument": {"uri": uri, "version": 1},
              "edits": [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 1}}, "newText": "y"}]}]}});
        let f = action_fix(&ts, &doc).unwrap();
        assert!(!f.safe);
        assert_eq!(f.files[0].edits[0].new_text, "y");
    }
}
