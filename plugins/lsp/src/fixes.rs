//! Fixes in a second step (`CheckRequest::fixes_only`): `textDocument/codeAction` with
//! `only: ["quickfix"]` and the diagnostic in its context, for the diagnostics a server last
//! reported for a file — after the check answered, so a result never waits for its fixes.
//!
//! Owns what a check leaves behind for this ([`remember`]: per file, the text and the raw
//! diagnostics, tsserver's turned into LSP shape) and the rule that fixes are only fetched
//! for that exact text: the server must still have it open and the file on disk must still
//! hold it, else there are none (the file changed; its next check brings new ones).
//! Diagnostics whose fixes came with them (`data`: clangd's inline actions, ruff's fix) and
//! notes (info, hints) are not asked about.

use crate::client::{Client, Reported};
use crate::convert::{action_fix, path_to_uri, to_item, Doc};
use lsp_types::{Diagnostic, DiagnosticSeverity};
use openfiles_plugin_api::{content_hash, Item};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use tokio::time::Instant;

/// Record what a check of `path` reported (only for the file's own text, never a given one).
pub fn remember(client: &Client, path: &Path, text: Arc<str>, diagnostics: Vec<Diagnostic>) {
    let mut r = client.reported.lock().unwrap_or_else(|e| e.into_inner());
    r.insert(path.to_path_buf(), Reported { text, diagnostics });
}

/// The items of the last report for `path` that got fixes, asked one diagnostic at a time
/// until `deadline`; none when the text changed since.
pub async fn fixes(client: &Client, path: &Path, deadline: Instant) -> Vec<Item> {
    if !client.caps.code_actions {
        return Vec::new();
    }
    let Some(rep) = client
        .reported
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(path)
        .cloned()
    else {
        return Vec::new();
    };
    let open = client
        .docs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(path)
        .map(|d| d.text.clone());
    if open.as_deref() != Some(&*rep.text)
        || on_disk(&client.root_for(path), path).as_deref() != Some(rep.text.as_bytes())
    {
        return Vec::new();
    }
    let uri = path_to_uri(path);
    let sha256 = content_hash(rep.text.as_bytes());
    let doc = Doc {
        path,
        uri: &uri,
        text: &rep.text,
        sha256: &sha256,
        enc: client.caps.encoding,
    };
    let mut out = Vec::new();
    for d in rep.diagnostics.iter().filter(|d| wants(d)) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let params = json!({
            "textDocument": {"uri": uri},
            "range": d.range,
            "context": {"diagnostics": [d], "only": ["quickfix"], "triggerKind": 1},
        });
        let Ok(answer) = client
            .transport
            .request("textDocument/codeAction", params, left)
            .await
        else {
            continue;
        };
        let fixes: Vec<_> = answer
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| action_fix(a, &doc))
            .collect();
        if !fixes.is_empty() {
            let mut item = to_item(d, &rep.text, doc.enc, &client.name);
            item.fixes = fixes;
            out.push(item);
        }
    }
    out
}

/// Largest file whose fixes are asked for (as `diagnose` sends at most).
const MAX_TEXT_BYTES: u64 = 32 << 20;

/// The file's bytes, read the confined way.
fn on_disk(root: &Path, path: &Path) -> Option<Vec<u8>> {
    openfiles_plugin_api::confine::read_workspace_file(root, path, MAX_TEXT_BYTES).ok()
}

/// An error or warning whose fixes did not come with it.
fn wants(d: &Diagnostic) -> bool {
    d.data.is_none()
        && !matches!(
            d.severity,
            Some(DiagnosticSeverity::INFORMATION | DiagnosticSeverity::HINT)
        )
}

/// A raw tsserver diagnostic (1-based `line`/`offset` in UTF-16 units) in LSP shape, as
/// typescript-language-server itself would publish it: what its `codeAction` takes.
pub fn from_tsserver(d: &Value) -> Option<Diagnostic> {
    let pos = |k: &str| -> Option<Value> {
        let line = d
            .pointer(&format!("/{k}/line"))?
            .as_u64()?
            .saturating_sub(1);
        let ch = d
            .pointer(&format!("/{k}/offset"))?
            .as_u64()?
            .saturating_sub(1);
        Some(json!({"line": line, "character": ch}))
    };
    let severity = match d.get("category").and_then(Value::as_str) {
        Some("warning") => 2,
        Some("suggestion") => 4,
        Some("message") => 3,
        _ => 1,
    };
    serde_json::from_value(json!({
        "range": {"start": pos("start")?, "end": pos("end")?},
        "severity": severity,
        "code": d.get("code").cloned().unwrap_or(Value::Null),
        "source": d.get("source").and_then(Value::as_str).unwrap_or("typescript"),
        "message": d.get("text").and_then(Value::as_str).unwrap_or_default(),
    }))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsserver_diagnostics_take_the_lsp_shape_and_notes_are_not_asked_about() {
        let raw = json!({"start": {"line": 2, "offset": 13}, "end": {"line": 2, "offset": 18},
            "text": "Cannot find name 'coutn'. Did you mean 'count'?", "code": 2552,
            "category": "error"});
        let d = from_tsserver(&raw).unwrap();
        assert_eq!((d.range.start.line, d.range.start.character), (1, 12));
        assert_eq!((d.range.end.line, d.range.end.character), (1, 17));
        assert_eq!(d.code, Some(lsp_types::NumberOrString::Number(2552)));
        assert!(wants(&d));
        let mut hint = d.clone();
        hint.severity = Some(DiagnosticSeverity::HINT);
        assert!(!wants(&hint));
        let mut inline = d;
        inline.data = Some(json!({"edits": []}));
        assert!(!wants(&inline));
    }
}
