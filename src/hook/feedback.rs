//! The feedback text agents read after an edit, in the shape `agent-hooks.md` fixes:
//!
//! ```text
//! OpenFiles found 1 error and 2 warnings in files you edited:
//! - src/main.rs:3:18 error E0308 (rustc): mismatched types
//! - …
//! - src/lib.rs: 4 more not shown
//! Fix these before you report the task as done.
//! ```
//!
//! When some sources had not answered yet (partial feedback), a line before the closing one
//! names them: `Still checking: tsc (more problems may follow).`
//!
//! Totals come from the files' `errors`/`warnings` counts, over files that have a listed
//! item; at most [`MAX_ITEMS_PER_FILE`] items per file; the whole text stays under
//! [`MAX_CHARS`] characters (cut with `… (truncated)`, keeping the closing line). Nothing
//! to list means no text at all. Pure: no I/O.

use std::fmt::Write as _;

use crate::spec::{Item, Severity};

/// Items listed per file before `N more not shown`.
pub const MAX_ITEMS_PER_FILE: usize = 20;
/// The text is always shorter than this many characters.
pub const MAX_CHARS: usize = 9000;
/// Marker line put where the text was cut.
pub const TRUNCATED: &str = "… (truncated)";
/// The last line of every non-empty feedback text.
pub const CLOSING: &str = "Fix these before you report the task as done.";

/// One file as the feedback shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileView {
    /// Workspace-relative with `/`, or absolute when the file is outside the workspace.
    pub display: String,
    /// The entry's `errors` count.
    pub errors: u32,
    /// The entry's `warnings` count.
    pub warnings: u32,
    /// The items to list (already filtered to the level: errors, or errors and warnings).
    pub items: Vec<Item>,
    /// Whether the level lists warnings (then they count in the header).
    pub with_warnings: bool,
    /// Sources that had not answered for the file's current content (partial feedback).
    pub running: Vec<String>,
}

/// Build the feedback text, or `None` when there is nothing to list.
pub fn format(files: &[FileView]) -> Option<String> {
    let listed: Vec<&FileView> = files.iter().filter(|f| !f.items.is_empty()).collect();
    if listed.is_empty() {
        return None;
    }
    let errors: u64 = listed.iter().map(|f| u64::from(f.errors)).sum();
    let warnings: u64 = listed
        .iter()
        .filter(|f| f.with_warnings)
        .map(|f| u64::from(f.warnings))
        .sum();

    let mut body: Vec<String> = Vec::new();
    for file in &listed {
        for item in file.items.iter().take(MAX_ITEMS_PER_FILE) {
            body.push(item_line(&file.display, item));
        }
        if file.items.len() > MAX_ITEMS_PER_FILE {
            body.push(format!(
                "- {}: {} more not shown",
                file.display,
                file.items.len() - MAX_ITEMS_PER_FILE
            ));
        }
    }
    let mut running: Vec<&str> = files
        .iter()
        .flat_map(|f| f.running.iter().map(String::as_str))
        .collect();
    running.sort_unstable();
    running.dedup();
    let closing = match running.as_slice() {
        [] => CLOSING.to_owned(),
        names => format!("{}\n{CLOSING}", still_checking(names)),
    };
    Some(assemble(&header(errors, warnings), &body, &closing))
}

/// `Still checking: tsc (more problems may follow).`
pub fn still_checking(names: &[&str]) -> String {
    format!(
        "Still checking: {} (more problems may follow).",
        names.join(", ")
    )
}

/// `OpenFiles found 2 errors and 1 warning in files you edited:`.
pub fn header(errors: u64, warnings: u64) -> String {
    let count = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let totals = match (errors, warnings) {
        (e, 0) if e > 0 => count(e, "error", "errors"),
        (0, w) if w > 0 => count(w, "warning", "warnings"),
        (0, 0) => "problems".to_owned(),
        (e, w) => format!(
            "{} and {}",
            count(e, "error", "errors"),
            count(w, "warning", "warnings")
        ),
    };
    format!("OpenFiles found {totals} in files you edited:")
}

/// `- <path>:<line>:<column> <severity>[ <code>][ (<source>)]: <message>`.
pub fn item_line(display: &str, item: &Item) -> String {
    let mut line = format!(
        "- {display}:{}:{} {}",
        item.line,
        item.column,
        severity_word(item.severity)
    );
    if let Some(code) = item.code.as_deref().filter(|c| !c.trim().is_empty()) {
        let _ = write!(line, " {}", code.trim());
    }
    if !item.source.trim().is_empty() {
        let _ = write!(line, " ({})", item.source.trim());
    }
    line.push_str(": ");
    let mut first = true;
    for word in item.message.split_whitespace() {
        if !first {
            line.push(' ');
        }
        line.push_str(word);
        first = false;
    }
    line
}

fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "info",
        Severity::Hint => "hint",
    }
}

/// Header, body lines and the closing line, cut to stay under [`MAX_CHARS`].
fn assemble(header: &str, body: &[String], closing: &str) -> String {
    let chars = |s: &str| s.chars().count();
    let full: usize = chars(header) + 1 + body.iter().map(|l| chars(l) + 1).sum::<usize>();
    if full + chars(closing) < MAX_CHARS {
        let mut text = String::with_capacity(full + closing.len() + 8);
        text.push_str(header);
        text.push('\n');
        for line in body {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(closing);
        return text;
    }
    // Room left for body lines once the header, the marker and the closing line are in.
    let reserve = chars(header) + 1 + chars(TRUNCATED) + 1 + chars(closing);
    let mut budget = (MAX_CHARS - 1).saturating_sub(reserve);
    let mut text = String::with_capacity(MAX_CHARS * 2);
    text.push_str(header);
    text.push('\n');
    for line in body {
        let need = chars(line) + 1;
        if need <= budget {
            text.push_str(line);
            text.push('\n');
            budget -= need;
            continue;
        }
        // Keep the start of a line too long to fit, when a useful part fits.
        if budget > 40 {
            text.extend(line.chars().take(budget - 1));
            text.push('\n');
        }
        break;
    }
    text.push_str(TRUNCATED);
    text.push('\n');
    text.push_str(closing);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_singular_for_exactly_one() {
        assert_eq!(header(1, 0), "OpenFiles found 1 error in files you edited:");
        assert_eq!(
            header(2, 1),
            "OpenFiles found 2 errors and 1 warning in files you edited:"
        );
        assert_eq!(
            header(0, 3),
            "OpenFiles found 3 warnings in files you edited:"
        );
    }

    #[test]
    fn item_line_collapses_whitespace_and_omits_empty_parts() {
        let item = Item {
            line: 3,
            column: 18,
            severity: Severity::Error,
            source: String::new(),
            code: Some(String::new()),
            message: "mismatched\n   types\t here ".into(),
        };
        assert_eq!(
            item_line("a.rs", &item),
            "- a.rs:3:18 error: mismatched types here"
        );
    }
}
