//! Reading `tsc --pretty false` output.
//!
//! Shapes: `file(line,col): error TS2322: message`, a global `error TS5058: message`, and
//! continuation lines (indented) that belong to the message above them (elaborations such
//! as "Types of property 'a' are incompatible."). Messages are kept whole, lines joined
//! with `\n`. `col` is tsc's: 1-based UTF-16 code units; `openfiles_plugin_api::columns::utf16_to_char_column` converts.

use openfiles_plugin_api::Severity;

/// One tsc diagnostic as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TscDiagnostic {
    /// As printed (relative to tsc's working directory, or absolute); `None` for global ones.
    pub file: Option<String>,
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    /// The number without `TS` (`"2322"`).
    pub code: String,
    pub message: String,
}

fn severity(word: &str) -> Option<Severity> {
    match word {
        "error" => Some(Severity::Error),
        "warning" => Some(Severity::Warning),
        "message" | "suggestion" => Some(Severity::Info),
        _ => None,
    }
}

/// `error TS2322: message` → (severity, code, message).
fn head(text: &str) -> Option<(Severity, String, String)> {
    let (word, rest) = text.split_once(' ')?;
    let sev = severity(word)?;
    let rest = rest.strip_prefix("TS")?;
    let (code, message) = rest.split_once(':')?;
    if code.is_empty() || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((sev, code.to_owned(), message.trim_start().to_owned()))
}

/// `path(12,5): error TS…` → the diagnostic.
fn located(line: &str) -> Option<TscDiagnostic> {
    // The location ends at the first "): " whose parenthesis holds "<digits>,<digits>".
    let mut from = 0;
    while let Some(pos) = line[from..].find("): ") {
        let end = from + pos;
        if let Some(open) = line[..end].rfind('(') {
            if let Some((l, c)) = line[open + 1..end].split_once(',') {
                if let (Ok(l), Ok(c)) = (l.parse::<u32>(), c.parse::<u32>()) {
                    if let Some((severity, code, message)) = head(&line[end + 3..]) {
                        return Some(TscDiagnostic {
                            file: Some(line[..open].to_owned()),
                            line: l.max(1),
                            column: c.max(1),
                            severity,
                            code,
                            message,
                        });
                    }
                }
            }
        }
        from = end + 3;
    }
    None
}

/// Parse tsc's whole output.
pub fn parse(output: &str) -> Vec<TscDiagnostic> {
    let mut out: Vec<TscDiagnostic> = Vec::new();
    let mut open = false;
    for line in output.lines() {
        let line = line.trim_end_matches('\r');
        if line.starts_with([' ', '\t']) {
            if open {
                if let Some(last) = out.last_mut() {
                    last.message.push('\n');
                    last.message.push_str(line.trim());
                }
            }
            continue;
        }
        if let Some(d) = located(line) {
            out.push(d);
            open = true;
        } else if let Some((severity, code, message)) = head(line) {
            out.push(TscDiagnostic {
                file: None,
                line: 1,
                column: 1,
                severity,
                code,
                message,
            });
            open = true;
        } else {
            open = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_line_error() {
        let d = parse(
            "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n",
        );
        assert_eq!(
            d,
            vec![TscDiagnostic {
                file: Some("src/a.ts".into()),
                line: 3,
                column: 7,
                severity: Severity::Error,
                code: "2322".into(),
                message: "Type 'string' is not assignable to type 'number'.".into(),
            }]
        );
    }

    #[test]
    fn multi_line_messages_are_kept_whole() {
        let out = "src/b.ts(10,5): error TS2322: Type '{ a: string; }' is not assignable to type 'Foo'.\n  Types of property 'a' are incompatible.\n    Type 'string' is not assignable to type 'number'.\nsrc/c.ts(1,1): error TS1005: ';' expected.\n";
        let d = parse(out);
        assert_eq!(d.len(), 2);
        assert_eq!(
            d[0].message,
            "Type '{ a: string; }' is not assignable to type 'Foo'.\nTypes of property 'a' are incompatible.\nType 'string' is not assignable to type 'number'."
        );
        assert_eq!(d[1].code, "1005");
        assert_eq!(d[1].message, "';' expected.");
    }

    #[test]
    fn paths_with_parentheses_and_global_errors() {
        let out = "app (copy)/x(1).ts(2,3): warning TS6133: 'x' is declared but its value is never read.\nerror TS5058: The specified path does not exist: 'nope.json'.\nFound 2 errors.\n  stray indented line\n";
        let d = parse(out);
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].file.as_deref(), Some("app (copy)/x(1).ts"));
        assert_eq!((d[0].line, d[0].column), (2, 3));
        assert_eq!(d[0].severity, Severity::Warning);
        assert_eq!(d[1].file, None);
        assert_eq!(d[1].code, "5058");
        // "Found 2 errors." closes the previous message: the stray line is not appended.
        assert_eq!(
            d[1].message,
            "The specified path does not exist: 'nope.json'."
        );
    }

    /// tsgo (TypeScript 7) prints the same shapes; its outputs are fuzz seeds too.
    #[test]
    fn tsgo_output_from_the_fuzz_corpus() {
        let corpus = |name: &str| {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus/tsc_output/");
            std::fs::read_to_string(format!("{dir}{name}")).unwrap()
        };
        let d = parse(&corpus("seed-tsgo-project-listfiles"));
        assert_eq!(d.len(), 9, "{d:#?}");
        let elaborated = d.iter().find(|d| d.message.contains('\n')).unwrap();
        assert_eq!(elaborated.message.lines().count(), 3, "{elaborated:?}");
        // The --listFiles lines are not diagnostics.
        assert!(d
            .iter()
            .all(|d| !d.file.as_deref().unwrap_or("").contains("lib.es")));
        let d = parse(&corpus("seed-tsgo-tsconfig-error"));
        assert_eq!(
            (d[0].file.as_deref(), d[0].code.as_str()),
            (Some("tsconfig.json"), "5023")
        );
        let d = parse(&corpus("seed-tsgo-missing-project"));
        assert_eq!((d[0].file.as_deref(), d[0].code.as_str()), (None, "5058"));
        // A Go panic trace around a diagnostic: only the diagnostic is taken, and the
        // tab-indented trace lines after the panic are not glued to anything.
        let d = parse(&corpus("seed-tsgo-go-panic"));
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(
            d[0].message,
            "Type 'string' is not assignable to type 'number'."
        );
    }
}
