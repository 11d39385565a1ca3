//! Reading `pyright --outputjson`: its `generalDiagnostics`, each with an absolute `file`, a
//! `severity` (`error`, `warning`, `information`), a `message`, an optional `rule` and a
//! 0-based `range` whose characters are UTF-16 units (as the language server's are).

use openfiles_plugin_api::Severity;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    #[serde(default)]
    general_diagnostics: Vec<Raw>,
}

#[derive(Debug, Deserialize)]
struct Raw {
    #[serde(default)]
    file: String,
    #[serde(default)]
    severity: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    range: Option<Range>,
    #[serde(default)]
    rule: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Range {
    start: Position,
}

#[derive(Debug, Deserialize)]
struct Position {
    line: u32,
    character: u32,
}

/// One pyright diagnostic as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyrightDiagnostic {
    /// Absolute, as pyright prints it; `None` for a problem with no file (a config error).
    pub file: Option<String>,
    /// 0-based line.
    pub line: u32,
    /// 0-based UTF-16 column.
    pub character: u32,
    pub severity: Severity,
    pub rule: Option<String>,
    pub message: String,
}

/// Why pyright's output is no report (its text is what the checker's failure says).
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Nothing like a JSON object was printed.
    #[error("no JSON report")]
    NoReport,
    /// The JSON is not a report.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Parse pyright's JSON report (anything printed before its opening brace is skipped).
pub fn parse(stdout: &str) -> Result<Vec<PyrightDiagnostic>, ParseError> {
    let start = stdout.find('{').ok_or(ParseError::NoReport)?;
    let report: Report = serde_json::from_str(&stdout[start..])?;
    Ok(report
        .general_diagnostics
        .into_iter()
        .map(|d| {
            let (line, character) = d
                .range
                .map(|r| (r.start.line, r.start.character))
                .unwrap_or((0, 0));
            PyrightDiagnostic {
                file: Some(d.file).filter(|f| !f.is_empty()),
                line,
                character,
                severity: match d.severity.as_str() {
                    "warning" => Severity::Warning,
                    "information" => Severity::Info,
                    _ => Severity::Error,
                },
                rule: d.rule.filter(|r| !r.is_empty()),
                message: d.message,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_with_a_rule_an_elaboration_and_no_file() {
        let out = r#"{"version":"1.1.414","generalDiagnostics":[
            {"file":"/p/b.py","severity":"error","message":"Expected 2 positional arguments",
             "range":{"start":{"line":2,"character":14},"end":{"line":2,"character":15}},"rule":"reportCallIssue"},
            {"file":"/p/c.py","severity":"warning","message":"Type \"x\"\n  is not \"int\"",
             "range":{"start":{"line":1,"character":9},"end":{"line":1,"character":12}}},
            {"file":"","severity":"information","message":"config"}],
            "summary":{"errorCount":1}}"#;
        let d = parse(out).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].file.as_deref(), Some("/p/b.py"));
        assert_eq!((d[0].line, d[0].character), (2, 14));
        assert_eq!(d[0].rule.as_deref(), Some("reportCallIssue"));
        assert_eq!(d[1].severity, Severity::Warning);
        assert_eq!(d[1].rule, None);
        assert!(d[1].message.contains('\n'));
        assert_eq!(
            (d[2].file.as_deref(), d[2].severity),
            (None, Severity::Info)
        );
        assert!(matches!(
            parse("No configuration file found.\n"),
            Err(ParseError::NoReport)
        ));
        assert!(matches!(
            parse("{\"generalDiagnostics\": 3}"),
            Err(ParseError::Json(_))
        ));
    }
}
