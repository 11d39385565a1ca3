//! Diagnostics from typescript-language-server by asking tsserver directly.
//!
//! typescript-language-server only pushes, and it pushes syntactic, semantic and suggestion
//! results separately (each debounced 50 ms), so the first push after a change is often an
//! incomplete empty list. Its experimental `typescript.tsserverRequest` command forwards a
//! raw tsserver request; `syntacticDiagnosticsSync`, `semanticDiagnosticsSync` and
//! `suggestionDiagnosticsSync` run on the text just sent (tsserver handles requests in
//! order) and answer with complete lists: a pull in all but name. Shapes are raw
//! `serde_json::Value`: 1-based `line`/`offset` (UTF-16), `category`, numeric `code`.

use crate::client::Client;
use crate::convert::{to_line_col, Encoding};
use crate::error::CheckError;
use crate::transport::Error;
use openfiles_plugin_api::{Item, Severity};
use serde_json::{json, Value};
use tokio::time::Instant;

/// The command name typescript-language-server advertises.
pub const COMMAND: &str = "typescript.tsserverRequest";
const KINDS: [&str; 3] = [
    "syntacticDiagnosticsSync",
    "semanticDiagnosticsSync",
    "suggestionDiagnosticsSync",
];

/// All three kinds of tsserver diagnostics for `uri`, raw.
pub async fn diagnostics(
    client: &Client,
    uri: &str,
    deadline: Instant,
) -> Result<Vec<Value>, CheckError> {
    let mut items = Vec::new();
    for kind in KINDS {
        let left = deadline.saturating_duration_since(Instant::now());
        let params = json!({"command": COMMAND, "arguments": [kind, {"file": uri}]});
        let r = match client
            .transport
            .request("workspace/executeCommand", params, left)
            .await
        {
            Ok(r) => r,
            Err(Error::Timeout { .. }) => return Err(CheckError::Timeout(client.name.clone())),
            Err(e) => return Err(e.into()),
        };
        if r.get("success") == Some(&Value::Bool(false)) {
            let msg = r.get("message").and_then(Value::as_str).unwrap_or("failed");
            return Err(Error::Rpc {
                method: format!("tsserver {kind}"),
                code: 0,
                message: msg.into(),
            }
            .into());
        }
        let body = r
            .get("body")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        items.extend(body);
    }
    Ok(items)
}

/// Raw tsserver diagnostics as items; `text` is the document they refer to.
pub fn to_items(raw: &[Value], text: &str) -> Vec<Item> {
    raw.iter().filter_map(|d| to_item(d, text)).collect()
}

fn to_item(d: &Value, text: &str) -> Option<Item> {
    let line = d.pointer("/start/line")?.as_u64()? as u32;
    let offset = d.pointer("/start/offset")?.as_u64()? as u32;
    let (line, column) = to_line_col(
        text,
        line.saturating_sub(1),
        offset.saturating_sub(1),
        Encoding::Utf16,
    );
    let severity = match d.get("category").and_then(Value::as_str) {
        Some("warning") => Severity::Warning,
        Some("suggestion") => Severity::Hint,
        Some("message") => Severity::Info,
        _ => Severity::Error,
    };
    let code = d.get("code").map(|c| match c {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    Some(Item {
        introduced: None,
        fixes: Vec::new(),
        line,
        column,
        severity,
        source: d
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or("typescript")
            .to_owned(),
        code,
        message: d
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsserver_diagnostics_map_to_items() {
        let d = json!({"start": {"line": 2, "offset": 4}, "end": {"line": 2, "offset": 5}, "text": "t", "code": 6133, "category": "suggestion"});
        let i = to_item(&d, "x\n€€x\n").expect("item");
        assert_eq!(
            (
                i.line,
                i.column,
                i.severity,
                i.code.as_deref(),
                i.source.as_str()
            ),
            (2, 4, Severity::Hint, Some("6133"), "typescript")
        );
    }
}
