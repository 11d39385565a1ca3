//! The hook's side of results that arrive after a hook answered (at its deadline, or with a
//! partial answer): the one line it prints at the deadline naming the files still being
//! checked, and the `Earlier edit …` section a later hook of the same agent session prints
//! when the service hands it those results (`WaitReply::earlier`; the service keeps the debt,
//! see `diagnostics::late`). A file nobody edited that an earlier edit broke is said as such:
//! `Broken by an earlier edit of src/lib.rs: src/main.rs: 1 error:`.
//!
//! The whole text keeps the feedback's shape and limits: the deadline line and the earlier
//! section come before the current feedback, the closing line stays last, and everything
//! stays under [`feedback::MAX_CHARS`]. Pure: no I/O.

use super::feedback::{self, FileView, CLOSING, MAX_ITEMS_PER_FILE, TRUNCATED};

/// How the line at the deadline begins.
pub const DEADLINE_PREFIX: &str = "OpenFiles is still checking";
/// How each edited file of the earlier section begins.
pub const EARLIER_PREFIX: &str = "Earlier edit";
/// How each file of the earlier section that an edit broke begins.
pub const BROKEN_PREFIX: &str = "Broken by an earlier edit of";
/// Why the section is there, after each file's totals.
const LATE: &str = "found after its hook had answered";
/// The earlier section is cut to this many characters (the current feedback comes first).
pub const MAX_EARLIER_CHARS: usize = 3000;
/// Files named on the deadline line before `and N more`.
const MAX_NAMED: usize = 5;

/// The one line said when the deadline passed with `files` (displayed paths) still being
/// checked, or `None` when there are none.
pub fn deadline_note(files: &[String], timeout_ms: u64) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut named = files
        .iter()
        .take(MAX_NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > MAX_NAMED {
        named.push_str(&format!(" and {} more", files.len() - MAX_NAMED));
    }
    let secs = timeout_ms as f64 / 1000.0;
    Some(format!(
        "{DEADLINE_PREFIX} {named} (the hook's {secs} s deadline passed); the result comes with the next hook output of this session."
    ))
}

/// The section for results found after an earlier hook had answered: per file a line with
/// its totals, then its items; `None` without files. `broken_by`: for a file nobody edited
/// (an `affectedBy` entry), the edited files that broke it, by its displayed path.
pub fn earlier_section(
    files: &[FileView],
    broken_by: &std::collections::BTreeMap<String, Vec<String>>,
) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut lines: Vec<String> = Vec::new();
    for f in files {
        let head = match broken_by.get(&f.display) {
            Some(by) => format!("{BROKEN_PREFIX} {}: {}", by.join(", "), f.display),
            None => format!("{EARLIER_PREFIX} {}", f.display),
        };
        if f.items.is_empty() {
            lines.push(format!("{head}: no problems ({LATE})."));
            continue;
        }
        lines.push(format!("{head}: {} ({LATE}):", totals(f)));
        for item in f.items.iter().take(MAX_ITEMS_PER_FILE) {
            lines.push(feedback::item_line(&f.display, item));
        }
        if f.items.len() > MAX_ITEMS_PER_FILE {
            lines.push(format!(
                "- {}: {} more not shown",
                f.display,
                f.items.len() - MAX_ITEMS_PER_FILE
            ));
        }
    }
    let mut out = String::new();
    for line in lines {
        if out.chars().count() + line.chars().count() + 1 > MAX_EARLIER_CHARS {
            out.push_str(TRUNCATED);
            return Some(out);
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
    }
    Some(out)
}

/// `2 errors`, `1 error and 1 warning` (warnings only when the level lists them).
fn totals(f: &FileView) -> String {
    let count = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match (f.errors, if f.with_warnings { f.warnings } else { 0 }) {
        (e, 0) if e > 0 => count(e, "error", "errors"),
        (0, w) if w > 0 => count(w, "warning", "warnings"),
        (0, 0) => "problems".to_owned(),
        (e, w) => format!(
            "{} and {}",
            count(e, "error", "errors"),
            count(w, "warning", "warnings")
        ),
    }
}

/// The text for the agent: the deadline line, the earlier section, then the current
/// feedback; the closing line last whenever anything listed a problem.
pub fn combine(
    note: Option<String>,
    earlier: Option<String>,
    current: Option<String>,
    earlier_has_problems: bool,
) -> Option<String> {
    if note.is_none() && earlier.is_none() {
        return current;
    }
    let mut parts: Vec<String> = note.into_iter().chain(earlier).collect();
    match current {
        Some(text) => {
            // Keep the whole under the feedback's limit: the current text is already under
            // it, the note and the earlier section are bounded; cut the current text's body.
            let room = feedback::MAX_CHARS
                .saturating_sub(parts.iter().map(|p| p.chars().count() + 1).sum::<usize>() + 1);
            if text.chars().count() <= room {
                parts.push(text);
            } else {
                let body: String = text
                    .chars()
                    .take(room.saturating_sub(CLOSING.len() + TRUNCATED.len() + 2))
                    .collect();
                parts.push(format!("{body}\n{TRUNCATED}\n{CLOSING}"));
            }
        }
        None if earlier_has_problems => parts.push(CLOSING.to_owned()),
        None => {}
    }
    Some(parts.join("\n"))
}

#[cfg(test)]
mod tests {
    use openfiles_wire::spec::{Item, Severity};

    use super::*;

    fn view(display: &str, errors: u32) -> FileView {
        FileView {
            display: display.into(),
            errors,
            warnings: 0,
            items: (0..errors)
                .map(|i| Item {
                    introduced: Some(true),
                    fixes: Vec::new(),
                    line: i + 1,
                    column: 7,
                    severity: Severity::Error,
                    source: "Ruff".into(),
                    code: Some("F821".into()),
                    message: "Undefined name `x`".into(),
                })
                .collect(),
            with_warnings: false,
            running: Vec::new(),
            already: 0,
            fixes: Vec::new(),
        }
    }

    #[test]
    fn the_deadline_line_names_the_files_once() {
        assert_eq!(deadline_note(&[], 4000), None);
        let files: Vec<String> = (0..7).map(|i| format!("src/{i}.py")).collect();
        let line = deadline_note(&files, 4000).unwrap();
        assert!(!line.contains('\n'));
        assert!(
            line.starts_with("OpenFiles is still checking src/0.py, src/1.py"),
            "{line}"
        );
        assert!(
            line.contains("and 2 more (the hook's 4 s deadline passed)"),
            "{line}"
        );
    }

    #[test]
    fn the_earlier_section_comes_first_and_the_closing_line_last() {
        let earlier = earlier_section(
            &[view("src/app.py", 2), view("src/ok.py", 0)],
            &Default::default(),
        );
        let text = combine(None, earlier, None, true).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Earlier edit src/app.py: 2 errors (found after its hook had answered):"
        );
        assert_eq!(
            lines[1],
            "- src/app.py:1:7 error F821 (Ruff): Undefined name `x`"
        );
        assert_eq!(
            lines[3],
            "Earlier edit src/ok.py: no problems (found after its hook had answered)."
        );
        assert_eq!(lines.last(), Some(&CLOSING));
        // Nothing late and nothing pending: the current feedback alone, unchanged.
        assert_eq!(
            combine(None, None, Some("x".into()), false),
            Some("x".into())
        );
        // A file nobody edited that an earlier edit broke says so.
        let by = std::collections::BTreeMap::from([(
            "src/main.py".to_string(),
            vec!["src/app.py".to_string()],
        )]);
        let broken = earlier_section(&[view("src/main.py", 2)], &by).unwrap();
        assert_eq!(
            broken.lines().next(),
            Some("Broken by an earlier edit of src/app.py: src/main.py: 2 errors (found after its hook had answered):")
        );
        // A clean earlier file needs no closing line.
        let clean = combine(
            None,
            earlier_section(&[view("a.py", 0)], &Default::default()),
            None,
            false,
        )
        .unwrap();
        assert!(!clean.contains(CLOSING));
    }

    #[test]
    fn the_whole_text_stays_under_the_limit() {
        let big = view("src/big.py", 500);
        let earlier = earlier_section(std::slice::from_ref(&big), &Default::default()).unwrap();
        assert!(earlier.chars().count() <= MAX_EARLIER_CHARS + TRUNCATED.len());
        let current = feedback::format(&[big]).unwrap();
        let files: Vec<String> = vec!["src/slow.py".into()];
        let text = combine(
            deadline_note(&files, 4000),
            Some(earlier),
            Some(current),
            true,
        )
        .unwrap();
        assert!(text.chars().count() < feedback::MAX_CHARS, "{}", text.len());
        assert!(text.ends_with(CLOSING));
    }
}
