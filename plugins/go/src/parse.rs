//! Reading what the helper (`src/helper/main.go`) printed: its lines (after [`MARKER`], one
//! JSON object each: a finding with go/types' message, 1-based line, byte column and error
//! code, or the files of a package it checked), and anything else (what `go list` said when
//! it could not list the packages: a broken `go.mod`, a missing module).

use serde::Deserialize;

/// What starts each line the helper prints (`plugins/go/src/helper/main.go`).
pub const MARKER: &str = "openfiles-go-types:";

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Line {
    file: String,
    line: u32,
    column: u32,
    message: String,
    code: String,
    source: String,
    checked: Vec<String>,
}

/// One problem as a Go tool printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoDiagnostic {
    /// Absolute, as the helper prints it; empty for an error with no position.
    pub file: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in bytes of the line (as Go counts columns).
    pub byte_column: u32,
    /// `compiler` or `syntax` (gopls's sources).
    pub source: String,
    pub code: Option<String>,
    pub message: String,
}

/// Everything one helper run printed, sorted out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// The helper's findings (go/types, gopls's shape).
    pub typed: Vec<GoDiagnostic>,
    /// Files the helper checked.
    pub checked: Vec<String>,
    /// Every other line (the go command's own errors).
    pub other: Vec<String>,
}

/// Sort out what one helper run printed (stdout and stderr, in that order).
pub fn parse(stderr: &str) -> Output {
    let mut out = Output::default();
    for raw in stderr.lines() {
        if let Some(json) = raw.strip_prefix(MARKER) {
            let Ok(l) = serde_json::from_str::<Line>(json) else {
                out.other.push(raw.to_owned());
                continue;
            };
            if !l.checked.is_empty() {
                out.checked.extend(l.checked);
                continue;
            }
            out.typed.push(GoDiagnostic {
                file: l.file,
                line: l.line.max(1),
                byte_column: l.column.max(1),
                source: if l.source.is_empty() {
                    "compiler".into()
                } else {
                    l.source
                },
                code: Some(l.code).filter(|c| !c.is_empty()),
                message: l.message,
            });
        } else if !raw.trim().is_empty() {
            out.other.push(raw.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_lines_and_the_go_commands_own() {
        let out = "openfiles-go-types:{\"checked\":[\"/m/app/app.go\"]}\n\
            openfiles-go-types:{\"file\":\"/m/app/app.go\",\"line\":6,\"column\":43,\"message\":\"not enough arguments in call to lib.Add\\n\\thave (number, number)\\n\\twant (int, int, int)\",\"code\":\"WrongArgCount\",\"source\":\"compiler\"}\n\
            openfiles-go-types:{\"file\":\"/m/app/x.go\",\"line\":2,\"column\":1,\"message\":\"expected 'package', found 'EOF'\",\"source\":\"syntax\"}\n\
            openfiles-go-types:not json\n\
            go: errors parsing go.mod:\n\
            /m/go.mod:3: unknown directive: foo\n";
        let out = parse(out);
        assert_eq!(out.checked, vec!["/m/app/app.go".to_string()]);
        assert_eq!(out.typed.len(), 2);
        assert_eq!(out.typed[0].code.as_deref(), Some("WrongArgCount"));
        assert_eq!((out.typed[0].line, out.typed[0].byte_column), (6, 43));
        assert_eq!(
            out.typed[0].message,
            "not enough arguments in call to lib.Add\n\thave (number, number)\n\twant (int, int, int)"
        );
        assert_eq!(
            (out.typed[1].source.as_str(), out.typed[1].code.as_deref()),
            ("syntax", None)
        );
        assert_eq!(
            out.other,
            vec![
                "openfiles-go-types:not json".to_string(),
                "go: errors parsing go.mod:".to_string(),
                "/m/go.mod:3: unknown directive: foo".to_string()
            ]
        );
    }
}
