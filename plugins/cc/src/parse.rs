//! Reading what `clang`/`gcc -fsyntax-only` print: one `file:line:column: kind: message`
//! line per diagnostic (no colours, no source line, no caret: the flags the plugin passes),
//! columns in bytes. Notes and the "In file included from" trail are skipped; a warning's
//! `[-Wflag]` becomes its code; lines with no position (`gcc: error: …`) are kept apart.

use openfiles_plugin_api::Severity;

/// One located diagnostic as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diag {
    /// As printed (absolute with the plugin's flags; else relative to the compiler's folder).
    pub file: String,
    pub line: u32,
    /// 1-based byte column (0: none printed).
    pub column: u32,
    pub severity: Severity,
    pub code: Option<String>,
    pub message: String,
}

/// What one compiler run printed: located diagnostics, and error lines with no position.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub diags: Vec<Diag>,
    pub unlocated: Vec<String>,
}

const KINDS: &[(&str, Option<Severity>)] = &[
    (": fatal error: ", Some(Severity::Error)),
    (": error: ", Some(Severity::Error)),
    (": warning: ", Some(Severity::Warning)),
    (": note: ", None),
    (": remark: ", None),
];

/// Parse a compiler's stderr.
pub fn parse(stderr: &str) -> Output {
    let mut out = Output::default();
    for line in stderr.lines() {
        if let Some(m) = line
            .strip_prefix("error: ")
            .or_else(|| line.strip_prefix("fatal error: "))
        {
            if !m.contains("too many errors emitted") {
                out.unlocated.push(split_flag(m).0);
            }
            continue;
        }
        let Some((at, kind, severity)) = KINDS
            .iter()
            .filter_map(|(k, s)| line.find(k).map(|at| (at, *k, *s)))
            .min_by_key(|(at, _, _)| *at)
        else {
            continue;
        };
        let Some(severity) = severity else {
            continue; // a note or remark: the error it explains is enough
        };
        let (message, code) = split_flag(&line[at + kind.len()..]);
        if message.contains("too many errors emitted") {
            continue;
        }
        match location(&line[..at]) {
            Some((file, line_no, column)) => out.diags.push(Diag {
                file: file.to_owned(),
                line: line_no,
                column,
                severity,
                code,
                message,
            }),
            None if severity == Severity::Error => out.unlocated.push(message),
            None => {}
        }
    }
    out
}

/// The flags the compiler refused (clang's `unknown argument: '-fx'`, gcc's `unrecognized
/// command-line option ‘-fx’`): a database written for one compiler read by the other.
pub fn unknown_flags(out: &Output) -> Vec<String> {
    out.unlocated
        .iter()
        .filter_map(|m| {
            let rest = m
                .strip_prefix("unknown argument")
                .or_else(|| m.strip_prefix("unrecognized command-line option"))?;
            let rest = rest.trim_start_matches([':', ' ']);
            let mut chars = rest.chars();
            let close = match chars.next()? {
                '\'' => '\'',
                '‘' => '’',
                _ => return None,
            };
            let flag: String = chars.take_while(|c| *c != close).collect();
            flag.starts_with('-').then_some(flag)
        })
        .collect()
}

/// `file:line:column` or `file:line`.
fn location(s: &str) -> Option<(&str, u32, u32)> {
    let (rest, last) = s.rsplit_once(':')?;
    let last: u32 = last.parse().ok()?;
    match rest.rsplit_once(':') {
        Some((file, line)) if !file.is_empty() => match line.parse::<u32>() {
            Ok(l) => Some((file, l, last)),
            Err(_) => Some((rest, last, 0)),
        },
        _ if !rest.is_empty() => Some((rest, last, 0)),
        _ => None,
    }
}

/// A message and the warning flag at its end (`[-Wunused-variable]`, gcc's
/// `[-Werror=unused-variable]`, clang's `[-Werror,-Wunused-variable]`) as a code.
fn split_flag(text: &str) -> (String, Option<String>) {
    let text = text.trim_end();
    if let Some(open) = text.rfind(" [-W") {
        if text.ends_with(']') {
            let flag = &text[open + 2..text.len() - 1];
            let flag = flag.rsplit(',').next().unwrap_or(flag);
            let flag = match flag.strip_prefix("-Werror=") {
                Some(f) => format!("-W{f}"),
                None => flag.to_owned(),
            };
            return (text[..open].to_owned(), Some(flag));
        }
    }
    (text.to_owned(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clang_and_gcc_lines() {
        let clang = "In file included from /w/a.c:1:\n/w/h.h:3:5: error: unknown type name 'foo'\n/w/a.c:2:27: error: too few arguments to function call, expected 2, have 1\n/w/h.h:1:5: note: 'f' declared here\n/w/a.c:4:9: warning: unused variable 'x' [-Wunused-variable]\nerror: unknown argument: '-fbogus'\nfatal error: too many errors emitted, stopping now [-ferror-limit=]\n2 errors generated.\n";
        let o = parse(clang);
        assert_eq!(o.diags.len(), 3);
        assert_eq!(
            (o.diags[0].file.as_str(), o.diags[0].line, o.diags[0].column),
            ("/w/h.h", 3, 5)
        );
        assert_eq!(o.diags[2].severity, Severity::Warning);
        assert_eq!(o.diags[2].code.as_deref(), Some("-Wunused-variable"));
        assert_eq!(o.diags[2].message, "unused variable 'x'");
        assert_eq!(o.unlocated, vec!["unknown argument: '-fbogus'".to_string()]);

        let gcc = "/w/a.c: In function ‘main’:\n/w/a.c:2:24: error: too few arguments to function ‘f’\nIn file included from /w/a.c:1:\n/w/h.h:1:5: note: declared here\n/w/b.c:3:7: error: unused variable ‘y’ [-Werror=unused-variable]\ncc1: all warnings being treated as errors\n";
        let o = parse(gcc);
        assert_eq!(o.diags.len(), 2);
        assert_eq!(o.diags[0].message, "too few arguments to function ‘f’");
        assert_eq!(o.diags[1].code.as_deref(), Some("-Wunused-variable"));
        assert!(o.unlocated.is_empty());
    }

    #[test]
    fn flags_the_compiler_refused() {
        let clang = parse("clang: error: unknown argument: '-fconserve-stack'\nclang: error: unknown argument '-fbogus'; did you mean '-fbogu'?\n");
        assert_eq!(unknown_flags(&clang), vec!["-fconserve-stack", "-fbogus"]);
        let gcc = parse(
            "gcc: error: unrecognized command-line option ‘-Wbogus’; did you mean ‘-Wbool’?\n",
        );
        assert_eq!(unknown_flags(&gcc), vec!["-Wbogus"]);
    }
}
