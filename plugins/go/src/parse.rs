//! Reading what `go vet -vettool=<helper>` printed (on stderr): the helper's lines (after
//! [`MARKER`], one JSON object each: a finding with go/types' message, 1-based line, byte
//! column and error code, or the files of a package it checked), the compiler's
//! `file:line:col: message` lines (tab-indented continuation lines belong to the message)
//! under a `# import/path` header for packages that failed to compile, and anything else the
//! go command said (a broken `go.mod`, a missing module).

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
    /// As printed: absolute (the helper) or relative to the run's folder (the compiler).
    pub file: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in bytes of the line (as Go counts columns).
    pub byte_column: u32,
    /// `compiler` or `syntax` from the helper (gopls's sources); `go` from the go command.
    pub source: String,
    pub code: Option<String>,
    pub message: String,
}

/// Everything one `go vet` run printed, sorted out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct VetOutput {
    /// The helper's findings (go/types, gopls's shape).
    pub typed: Vec<GoDiagnostic>,
    /// Files the helper checked.
    pub checked: Vec<String>,
    /// The compiler's (or the go command's) positioned errors.
    pub compiler: Vec<GoDiagnostic>,
    /// Import paths of packages with compiler errors (from their `# path` headers).
    pub failed_packages: Vec<String>,
    /// Every other line (the go command's own errors).
    pub other: Vec<String>,
}

/// `file:line:col: message` (or `file:line: message`), else `None`.
fn positioned(line: &str) -> Option<(String, u32, u32, String)> {
    // The file may itself hold colons only in odd cases; split from the left on ".go:".
    let at = line.find(".go:")? + 3;
    let (file, rest) = line.split_at(at);
    let rest = rest.strip_prefix(':')?;
    let (l, rest) = rest.split_once(':')?;
    let l: u32 = l.parse().ok()?;
    let (col, message) = match rest.split_once(':') {
        Some((c, m)) if c.parse::<u32>().is_ok() => (c.parse().ok()?, m),
        _ => (1, rest),
    };
    Some((file.to_owned(), l, col, message.trim_start().to_owned()))
}

/// Sort out the stderr of one `go vet -vettool` run.
pub fn parse(stderr: &str) -> VetOutput {
    let mut out = VetOutput::default();
    let mut package: Option<String> = None;
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
        } else if let Some(header) = raw.strip_prefix("# ") {
            package = header.split_whitespace().next().map(str::to_owned);
        } else if let Some(more) = raw.strip_prefix('\t') {
            // The compiler's continuation (`\thave (…)`, `\twant (…)`).
            match out.compiler.last_mut() {
                Some(d) => {
                    d.message.push_str("\n\t");
                    d.message.push_str(more);
                }
                None => out.other.push(raw.to_owned()),
            }
        } else if let Some((file, line, col, message)) = positioned(raw) {
            if let Some(p) = &package {
                if !out.failed_packages.contains(p) {
                    out.failed_packages.push(p.clone());
                }
            }
            out.compiler.push(GoDiagnostic {
                file,
                line: line.max(1),
                byte_column: col.max(1),
                source: "go".into(),
                code: None,
                message,
            });
        } else if !raw.trim().is_empty() {
            package = None;
            out.other.push(raw.to_owned());
        }
    }
    out
}

/// 1-based character column of a 1-based byte column on `text` (one line); a column past
/// the end counts one character per byte.
pub fn char_column(text: &str, byte_column: u32) -> u32 {
    let target = byte_column.saturating_sub(1) as usize;
    let mut chars = 0u32;
    let mut bytes = 0usize;
    for c in text.chars() {
        if bytes >= target {
            break;
        }
        bytes += c.len_utf8();
        chars += 1;
    }
    if bytes < target {
        chars += (target - bytes) as u32;
    }
    chars + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_lines_compiler_errors_and_the_go_commands_own() {
        let err = "# example.com/demo/lib\n\
            lib/lib.go:7:48: undefined: undefinedThing\n\
            # example.com/demo/app [example.com/demo/app.test]\n\
            openfiles-go-types:{\"checked\":[\"/m/app/app.go\"]}\n\
            openfiles-go-types:{\"file\":\"/m/app/app.go\",\"line\":6,\"column\":43,\"message\":\"not enough arguments in call to lib.Add\\n\\thave (number, number)\\n\\twant (int, int, int)\",\"code\":\"WrongArgCount\",\"source\":\"compiler\"}\n\
            # example.com/demo/b\n\
            b/b.go:3:2: not enough arguments in call to f\n\
            \thave ()\n\
            \twant (int)\n\
            go: errors parsing go.mod:\n\
            /m/go.mod:3: unknown directive: foo\n";
        let out = parse(err);
        assert_eq!(out.checked, vec!["/m/app/app.go".to_string()]);
        assert_eq!(out.typed.len(), 1);
        assert_eq!(out.typed[0].code.as_deref(), Some("WrongArgCount"));
        assert_eq!((out.typed[0].line, out.typed[0].byte_column), (6, 43));
        assert!(out.typed[0].message.ends_with("\twant (int, int, int)"));
        assert_eq!(out.compiler.len(), 2);
        assert_eq!(out.compiler[0].file, "lib/lib.go");
        assert_eq!(
            out.compiler[1].message,
            "not enough arguments in call to f\n\thave ()\n\twant (int)"
        );
        assert_eq!(
            out.failed_packages,
            vec![
                "example.com/demo/lib".to_string(),
                "example.com/demo/b".to_string()
            ]
        );
        assert_eq!(
            out.other,
            vec![
                "go: errors parsing go.mod:".to_string(),
                "/m/go.mod:3: unknown directive: foo".to_string()
            ]
        );
    }

    #[test]
    fn byte_columns_become_character_columns() {
        // "é" is 2 bytes: `x` is byte column 10, character column 9.
        assert_eq!(char_column("s := \"é\"x", 10), 9);
        assert_eq!(char_column("\tx := \"日本\"; return f(1)", 24), 20);
        assert_eq!(char_column("abc", 1), 1);
        assert_eq!(char_column("abc", 6), 6);
    }
}
