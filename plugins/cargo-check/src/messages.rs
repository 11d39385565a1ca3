//! Reading `cargo --message-format=json` output: one JSON object per line; only
//! `compiler-message` lines with a span matter. Spans' `file_name` is relative to the
//! cargo workspace root (absolute for files outside it).

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{FileEdits, Fix, Item, Severity, TextEdit};
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
    #[serde(default)]
    children: Vec<Diagnostic>,
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
    #[serde(default)]
    line_end: u32,
    #[serde(default)]
    column_end: u32,
    is_primary: bool,
    label: Option<String>,
    expansion: Option<Box<Expansion>>,
    #[serde(default)]
    suggested_replacement: Option<String>,
    #[serde(default)]
    suggestion_applicability: Option<String>,
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
    let fixes = std::iter::once(("", &diag.spans))
        .chain(diag.children.iter().map(|c| (c.message.as_str(), &c.spans)))
        .filter_map(|(title, spans)| fix(title, spans, root))
        .collect();
    Some(Located {
        path: absolute(root, &span.file_name),
        item: Item {
            fixes,
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

fn absolute(root: &Path, file: &str) -> PathBuf {
    let file = Path::new(file);
    if file.is_absolute() {
        file.to_owned()
    } else {
        root.join(file)
    }
}

/// rustc's suggestion in `spans` (a diagnostic's own or a `help` child's) as a fix: every span
/// carrying a `suggested_replacement` is one edit; safe when all are `MachineApplicable` (what
/// `cargo fix` applies). Suggestions with placeholders or inside macros are not fixes. The
/// content hashes are left empty for the caller, which reads the files once.
fn fix(title: &str, spans: &[Span], root: &Path) -> Option<Fix> {
    let suggested: Vec<&Span> = spans
        .iter()
        .filter(|s| s.suggested_replacement.is_some())
        .collect();
    if suggested.is_empty()
        || suggested.iter().any(|s| {
            s.file_name.starts_with('<')
                || s.suggestion_applicability.as_deref() == Some("HasPlaceholders")
                || s.line_end == 0
        })
    {
        return None;
    }
    let safe = suggested
        .iter()
        .all(|s| s.suggestion_applicability.as_deref() == Some("MachineApplicable"));
    let mut files: Vec<FileEdits> = Vec::new();
    for s in suggested {
        let path = absolute(root, &s.file_name);
        let edit = TextEdit {
            line: s.line_start.max(1),
            column: s.column_start.max(1),
            end_line: s.line_end.max(1),
            end_column: s.column_end.max(1),
            new_text: s.suggested_replacement.clone().unwrap_or_default(),
        };
        match files.iter_mut().find(|f| f.path == path) {
            Some(f) => f.edits.push(edit),
            None => files.push(FileEdits {
                path,
                sha256: String::new(),
                edits: vec![edit],
            }),
        }
    }
    let title = if title.is_empty() {
        "apply the compiler's suggestion".to_owned()
    } else {
        title.to_owned()
    };
    Some(Fix { title, safe, files })
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
    fn help_suggestions_become_fixes_safe_only_when_machine_applicable() {
        let line = r#"{"reason":"compiler-message","message":{"code":{"code":"unused_imports"},"level":"warning","message":"unused import: `std::fmt`","spans":[{"file_name":"src/lib.rs","line_start":1,"line_end":1,"column_start":5,"column_end":13,"is_primary":true,"label":null,"expansion":null,"suggested_replacement":null,"suggestion_applicability":null}],"children":[{"message":"remove the whole `use` item","code":null,"level":"help","spans":[{"file_name":"src/lib.rs","line_start":1,"line_end":2,"column_start":1,"column_end":1,"is_primary":true,"label":null,"expansion":null,"suggested_replacement":"","suggestion_applicability":"MachineApplicable"}],"children":[]},{"message":"maybe this","code":null,"level":"help","spans":[{"file_name":"src/lib.rs","line_start":3,"line_end":3,"column_start":2,"column_end":4,"is_primary":true,"label":null,"expansion":null,"suggested_replacement":"x","suggestion_applicability":"MaybeIncorrect"}],"children":[]},{"message":"fill in","code":null,"level":"help","spans":[{"file_name":"src/lib.rs","line_start":3,"line_end":3,"column_start":2,"column_end":4,"is_primary":true,"label":null,"expansion":null,"suggested_replacement":"/* value */","suggestion_applicability":"HasPlaceholders"}],"children":[]}]}}"#;
        let got = parse_line(line, Path::new("/w")).unwrap();
        let fixes = &got.item.fixes;
        assert_eq!(fixes.len(), 2, "{fixes:?}");
        assert_eq!(fixes[0].title, "remove the whole `use` item");
        assert!(fixes[0].safe);
        assert_eq!(fixes[0].files[0].path, PathBuf::from("/w/src/lib.rs"));
        let e = &fixes[0].files[0].edits[0];
        assert_eq!((e.line, e.column, e.end_line, e.end_column), (1, 1, 2, 1));
        assert_eq!(e.new_text, "");
        assert!(!fixes[1].safe);
    }

    #[test]
    fn macro_spans_fall_back_to_the_call_site() {
        let line = r#"{"reason":"compiler-message","message":{"code":null,"level":"error","message":"boom","spans":[{"file_name":"<macros>","line_start":1,"column_start":1,"is_primary":true,"label":null,"expansion":{"span":{"file_name":"src/lib.rs","line_start":7,"column_start":9,"is_primary":false,"label":null,"expansion":null}}}]}}"#;
        let got = parse_line(line, Path::new("/w")).unwrap();
        assert_eq!((got.item.line, got.item.column), (7, 9));
        assert_eq!(got.path, PathBuf::from("/w/src/lib.rs"));
    }
}
