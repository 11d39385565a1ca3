//! Reading `cargo --message-format=json` output: one JSON object per line; only
//! `compiler-message` lines with a span matter. Spans' `file_name` is relative to the
//! cargo workspace root (absolute for files outside it).

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Item, Severity};
use serde::Deserialize;

#[derive(Deserialize)]
struct Line {
    reason: String,
    message: Option<Diagnostic>,
}

#[derive(Deserialize)]
struct Diagnostic {
    message: String,
    code: Option<Code>,
    level: String,
    #[serde(default)]
    spans: Vec<Span>,
}

#[derive(Deserialize)]
struct Code {
    code: String,
}

#[derive(Deserialize, Clone)]
struct Span {
    file_name: String,
    line_start: u32,
    column_start: u32,
    is_primary: bool,
    label: Option<String>,
    expansion: Option<Box<Expansion>>,
}

#[derive(Deserialize, Clone)]
struct Expansion {
    span: Span,
}

/// One compiler message placed in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub path: PathBuf,
    pub item: Item,
}

/// Parse one output line; `None` for anything that is not a placeable compiler message.
pub fn parse_line(line: &str, root: &Path) -> Option<Located> {
    let parsed: Line = serde_json::from_str(line).ok()?;
    if parsed.reason != "compiler-message" {
        return None;
    }
    let diag = parsed.message?;
    let severity = match diag.level.as_str() {
        "error" | "error: internal compiler error" => Severity::Error,
        "warning" => Severity::Warning,
        "note" | "failure-note" => Severity::Info,
        "help" => Severity::Hint,
        _ => return None,
    };
    let primary = diag.spans.iter().find(|s| s.is_primary)?;
    // A span inside a macro definition: use the outermost call site that is a real file.
    let mut span = primary.clone();
    while span.file_name.starts_with('<') {
        match span.expansion {
            Some(exp) => span = exp.span,
            None => return None,
        }
    }
    let code = diag.code.map(|c| c.code);
    let source = match &code {
        Some(c) if c.starts_with("clippy::") => "clippy",
        _ => "rustc",
    };
    let mut message = diag.message;
    if let Some(label) = primary.label.as_deref().filter(|l| !l.is_empty()) {
        message = format!("{message}: {label}");
    }
    let file = Path::new(&span.file_name);
    Some(Located {
        path: if file.is_absolute() {
            file.to_owned()
        } else {
            root.join(file)
        },
        item: Item {
            introduced: None,
            line: span.line_start.max(1),
            column: span.column_start.max(1),
            severity,
            source: source.into(),
            code,
            message,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_a_type_error_with_code_and_label() {
        let line = r#"{"reason":"compiler-message","package_id":"x","manifest_path":"/w/Cargo.toml","target":{},"message":{"rendered":"error[E0308]","$message_type":"diagnostic","children":[],"code":{"code":"E0308","explanation":"..."},"level":"error","message":"mismatched types","spans":[{"byte_end":10,"byte_start":5,"column_end":20,"column_start":18,"expansion":null,"file_name":"src/main.rs","is_primary":true,"label":"expected `i32`, found `&str`","line_end":2,"line_start":2,"suggested_replacement":null,"suggestion_applicability":null,"text":[]},{"byte_end":1,"byte_start":0,"column_end":15,"column_start":12,"expansion":null,"file_name":"src/main.rs","is_primary":false,"label":"expected due to this","line_end":2,"line_start":2,"suggested_replacement":null,"suggestion_applicability":null,"text":[]}]}}"#;
        let got = parse_line(line, Path::new("/w")).unwrap();
        assert_eq!(got.path, PathBuf::from("/w/src/main.rs"));
        assert_eq!(got.item.line, 2);
        assert_eq!(got.item.column, 18);
        assert_eq!(got.item.code.as_deref(), Some("E0308"));
        assert_eq!(got.item.source, "rustc");
        assert_eq!(got.item.severity, Severity::Error);
        assert_eq!(
            got.item.message,
            "mismatched types: expected `i32`, found `&str`"
        );
    }

    #[test]
    fn clippy_codes_get_clippy_source_and_spanless_messages_are_skipped() {
        let clippy = r#"{"reason":"compiler-message","message":{"code":{"code":"clippy::needless_return"},"level":"warning","message":"unneeded `return` statement","spans":[{"file_name":"/abs/lib.rs","line_start":3,"column_start":5,"is_primary":true,"label":null,"expansion":null}]}}"#;
        let got = parse_line(clippy, Path::new("/w")).unwrap();
        assert_eq!(got.item.source, "clippy");
        assert_eq!(got.item.severity, Severity::Warning);
        assert_eq!(got.path, PathBuf::from("/abs/lib.rs"));
        let aborting = r#"{"reason":"compiler-message","message":{"code":null,"level":"error","message":"aborting due to 1 previous error","spans":[]}}"#;
        assert!(parse_line(aborting, Path::new("/w")).is_none());
        assert!(parse_line(
            r#"{"reason":"build-finished","success":false}"#,
            Path::new("/w")
        )
        .is_none());
        assert!(parse_line("not json", Path::new("/w")).is_none());
    }

    #[test]
    fn macro_spans_fall_back_to_the_call_site() {
        let line = r#"{"reason":"compiler-message","message":{"code":null,"level":"error","message":"boom","spans":[{"file_name":"<macros>","line_start":1,"column_start":1,"is_primary":true,"label":null,"expansion":{"span":{"file_name":"src/lib.rs","line_start":7,"column_start":9,"is_primary":false,"label":null,"expansion":null}}}]}}"#;
        let got = parse_line(line, Path::new("/w")).unwrap();
        assert_eq!((got.item.line, got.item.column), (7, 9));
        assert_eq!(got.path, PathBuf::from("/w/src/lib.rs"));
    }
}
