//! Reading `ty check --output-format github`: one line per diagnostic,
//! `::error title=ty (RULE),file=ABS,line=L,col=C,endLine=L,endColumn=C::REL:L:C: RULE: MESSAGE`
//! (`notice` for an info, no `file=…` part for a diagnostic with no place), its newlines
//! written `%0A`. Lines and columns are 1-based, columns in characters.
//!
//! Of ty's machine-readable formats this is the one that carries, after the message, the
//! notes ty's language server appends to its message (`info: …`, `help: …` sub-diagnostics
//! with no place; those with a place, `  REL:L:C: info: …`, become related information in
//! the server and are left out, as `concise` and `gitlab` leave all of them out): the item
//! is then word for word the server's, and the service lists a problem both report once.

use openfiles_plugin_api::Severity;

/// One ty diagnostic as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TyDiagnostic {
    /// Absolute; `None` for a diagnostic with no place.
    pub file: Option<String>,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    pub severity: Severity,
    pub rule: String,
    /// As ty's language server words it: the message, then a blank line and the notes.
    pub message: String,
}

/// The severities a sub-diagnostic is printed with.
const NOTE_KINDS: &[&str] = &["info: ", "help: ", "warning: ", "error: ", "fatal: "];

/// Parse ty's GitHub annotations (lines that are not one, like a summary, are skipped).
pub fn parse(stdout: &str) -> Vec<TyDiagnostic> {
    stdout.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<TyDiagnostic> {
    let rest = line.strip_prefix("::")?;
    let (level, rest) = rest.split_once(' ')?;
    let severity = match level {
        "error" => Severity::Error,
        "warning" => Severity::Warning,
        "notice" => Severity::Info,
        _ => return None,
    };
    let rest = rest.strip_prefix("title=")?;
    let open = rest.find(" (")?;
    let rest = &rest[open + 2..];
    let close = rest.find(')')?;
    let rule = rest[..close].to_owned();
    let rest = &rest[close + 1..];
    let (file, line_no, column, body) = match rest.strip_prefix(",file=") {
        Some(placed) => {
            // The path is written as is (commas and colons too): the position follows it.
            let (at, line_no, column, after) = placed
                .match_indices(",line=")
                .find_map(|(at, _)| position(&placed[at + 6..]).map(|p| (at, p.0, p.1, p.2)))?;
            let prefix = format!(":{line_no}:{column}: {rule}: ");
            let body = after
                .find(&prefix)
                .map(|i| &after[i + prefix.len()..])
                .unwrap_or(after);
            (Some(placed[..at].to_owned()), line_no, column, body)
        }
        None => {
            let after = rest.strip_prefix("::")?;
            let body = after.strip_prefix(&format!("{rule}: ")).unwrap_or(after);
            (None, 1, 1, body)
        }
    };
    Some(TyDiagnostic {
        file,
        line: line_no,
        column,
        severity,
        rule,
        message: server_message(body),
    })
}

/// `L,col=C,endLine=L,endColumn=C::` → (L, C, what follows).
fn position(s: &str) -> Option<(u32, u32, &str)> {
    let (line, s) = s.split_once(",col=")?;
    let (column, s) = s.split_once(",endLine=")?;
    let (end_line, s) = s.split_once(",endColumn=")?;
    let (end_column, s) = s.split_once("::")?;
    end_line.parse::<u32>().ok()?;
    end_column.parse::<u32>().ok()?;
    Some((line.parse().ok()?, column.parse().ok()?, s))
}

/// The body as ty's server words the message: the first line, then (after a blank line)
/// each note with no place, one a line.
fn server_message(body: &str) -> String {
    let body = body.replace("%0D", "\r");
    let mut lines = body.split("%0A");
    let mut message = lines.next().unwrap_or_default().to_owned();
    let mut first = true;
    for note in lines.filter_map(|l| l.strip_prefix("  ")) {
        if NOTE_KINDS.iter().any(|k| note.starts_with(k)) {
            if first {
                message.push('\n');
                first = false;
            }
            message.push('\n');
            message.push_str(note);
        }
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_with_notes_odd_paths_and_no_place() {
        let out = "\
::error title=ty (missing-argument),file=/p/b.py,line=3,col=9,endLine=3,endColumn=18::b.py:3:9: missing-argument: No argument provided for required parameter `c` of function `add`%0A  m.py:1:25: info: Parameter declared here
::warning title=ty (undefined-reveal),file=/p/we,ird:d/s.py,line=2,col=1,endLine=2,endColumn=12::we,ird:d/s.py:2:1: undefined-reveal: `reveal_type` used without importing it%0A  info: This is allowed for debugging convenience%0A  help: Import `reveal_type` from `typing`
::notice title=ty (revealed-type),file=/p/s.py,line=2,col=13,endLine=2,endColumn=14::s.py:2:13: revealed-type: Revealed type: `Literal[\"100%a\"]`
::error title=ty (invalid-config)::invalid-config: bad option
Found 4 diagnostics
";
        let d = parse(out);
        assert_eq!(d.len(), 4, "{d:#?}");
        assert_eq!(
            d[0],
            TyDiagnostic {
                file: Some("/p/b.py".into()),
                line: 3,
                column: 9,
                severity: Severity::Error,
                rule: "missing-argument".into(),
                message: "No argument provided for required parameter `c` of function `add`".into(),
            }
        );
        assert_eq!(d[1].file.as_deref(), Some("/p/we,ird:d/s.py"));
        assert_eq!(
            (d[1].line, d[1].column, d[1].severity),
            (2, 1, Severity::Warning)
        );
        assert_eq!(
            d[1].message,
            "`reveal_type` used without importing it\n\ninfo: This is allowed for debugging \
             convenience\nhelp: Import `reveal_type` from `typing`"
        );
        assert_eq!(d[2].severity, Severity::Info);
        assert_eq!(d[2].message, "Revealed type: `Literal[\"100%a\"]`");
        assert_eq!(
            (d[3].file.as_deref(), d[3].rule.as_str()),
            (None, "invalid-config")
        );
        assert_eq!(d[3].message, "bad option");
    }
}
