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
//! A listed problem with a safe fix (the checker's own, see `openfiles_fixes`) gets a compact
//! line under it, `  fix: replace `usize` with `u32` at 3:18`: at most [`MAX_FIX_LINES`]
//! such lines per text, each at most [`MAX_FIX_CHARS`] characters; the full edits are the
//! MCP tools' (`openfiles_diagnostics`, `openfiles_fix`).
//!
//! When some sources had not answered yet (partial feedback), a line before the closing one
//! names them: `Still checking: tsc (more problems may follow).`
//!
//! Only the service speaks as openfiles. What the hook's fallback relays from an editor
//! ([`Report::from`]) has a header naming that editor: `The editor "Code" (session 1f3a)
//! found 1 error in files you edited (relayed by OpenFiles, which did not check them
//! itself):`, and its notes alone are never passed on.
//!
//! Totals come from the files' `errors`/`warnings` counts, over files that have a listed
//! item; at most [`MAX_ITEMS_PER_FILE`] items per file; the whole text stays under
//! [`MAX_CHARS`] characters (cut with `… (truncated)`, keeping the closing line). Nothing
//! to list means no text at all. Pure: no I/O.

use std::fmt::Write as _;
use std::path::Path;

use openfiles_wire::spec::{Item, Severity};

/// Items listed per file before `N more not shown`.
pub const MAX_ITEMS_PER_FILE: usize = 20;
/// The text is always shorter than this many characters.
pub const MAX_CHARS: usize = 9000;
/// Fix lines (`  fix: …`) in one text at most.
pub const MAX_FIX_LINES: usize = 10;
/// A fix line is cut to this many characters.
pub const MAX_FIX_CHARS: usize = 120;
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
    /// Whether warnings count in the header: the level lists them, or (errors only) it
    /// lists what an edit added to hide a problem.
    pub with_warnings: bool,
    /// Sources that had not answered for the file's current content (partial feedback).
    pub running: Vec<String>,
    /// Problems at the level that were already there before the session (not listed under
    /// `feedbackScope = introduced`, only counted).
    pub already: u32,
    /// Per listed item (same order; shorter or empty when none), the compact summary of its
    /// safe fix (`replace `usize` with `u32` at 3:18`).
    pub fixes: Vec<Option<String>>,
}

/// An error the session's edits caused in a file it did not edit.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub display: String,
    pub item: Item,
}

/// Everything one feedback text says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub files: Vec<FileView>,
    pub broken: Vec<Broken>,
    /// Lines the reader should know (no baseline, …).
    pub notes: Vec<String>,
    /// Who found these problems when it was not openfiles: the editor the hook's fallback
    /// relays (`the editor "Visual Studio Code" (session …)`, already escaped). The text then
    /// says so in its header instead of speaking as openfiles.
    pub from: Option<String>,
}

impl Report {
    pub fn extend(&mut self, other: Report) {
        self.files.extend(other.files);
        self.broken.extend(other.broken);
        for n in other.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        if self.from.is_none() {
            self.from = other.from;
        }
    }
}

/// Errors in files the session did not edit listed before `… and N more`.
pub const MAX_BROKEN: usize = 10;

/// Build the feedback text for the edited files' views alone, or `None` when there is
/// nothing to list.
pub fn format(files: &[FileView]) -> Option<String> {
    format_report(&Report {
        files: files.to_vec(),
        ..Report::default()
    })
}

/// Build the feedback text, or `None` when there is nothing to list (neither a problem the
/// edits introduced in the edited files nor one they caused elsewhere).
pub fn format_report(report: &Report) -> Option<String> {
    let files = &report.files;
    let listed: Vec<&FileView> = files.iter().filter(|f| !f.items.is_empty()).collect();
    if listed.is_empty() && report.broken.is_empty() {
        if report.from.is_some() {
            // An editor's notes are not openfiles's to pass on in its own words.
            return None;
        }
        // Nothing to list, but the agent should still learn that a checker did not run.
        return report
            .notes
            .iter()
            .find(|n| n.starts_with(UNTRUSTED_PREFIX))
            .cloned();
    }
    let errors: u64 = listed.iter().map(|f| u64::from(f.errors)).sum();
    let warnings: u64 = listed
        .iter()
        .filter(|f| f.with_warnings)
        .map(|f| u64::from(f.warnings))
        .sum();

    let mut body: Vec<String> = Vec::new();
    let mut fix_lines = 0;
    for file in &listed {
        for (i, item) in file.items.iter().take(MAX_ITEMS_PER_FILE).enumerate() {
            body.push(item_line(&file.display, item));
            if let Some(Some(fix)) = file.fixes.get(i) {
                if fix_lines < MAX_FIX_LINES {
                    fix_lines += 1;
                    body.push(fix_line(fix));
                }
            }
        }
        if file.items.len() > MAX_ITEMS_PER_FILE {
            body.push(format!(
                "- {}: {} more not shown",
                file.display,
                file.items.len() - MAX_ITEMS_PER_FILE
            ));
        }
    }
    let already: u64 = files.iter().map(|f| u64::from(f.already)).sum();
    if already > 0 && !listed.is_empty() {
        body.push(format!(
            "- and {already} {} that {} already there before your edits",
            if already == 1 { "problem" } else { "problems" },
            if already == 1 { "was" } else { "were" }
        ));
    }
    if !report.broken.is_empty() {
        if !listed.is_empty() {
            body.push(BROKEN_TITLE.to_owned());
        }
        body.extend(broken_lines(&report.broken));
    }
    let mut running: Vec<&str> = files
        .iter()
        .flat_map(|f| f.running.iter().map(String::as_str))
        .collect();
    running.sort_unstable();
    running.dedup();
    let mut tail: Vec<String> = report.notes.clone();
    if !running.is_empty() {
        tail.push(still_checking(&running));
    }
    tail.push(CLOSING.to_owned());
    let head = match (&report.from, listed.is_empty()) {
        (None, true) => BROKEN_ONLY_HEADER.to_owned(),
        (None, false) => header(errors, warnings),
        (Some(from), true) => relayed_broken_only_header(from),
        (Some(from), false) => relayed_header(from, errors, warnings),
    };
    Some(assemble(&head, &body, &tail.join("\n")))
}

/// How the line about checkers an untrusted workspace did not run begins.
pub const UNTRUSTED_PREFIX: &str = "OpenFiles did not run";

/// The one line saying which checkers did not run because the workspace at `root` is not
/// trusted, and the command that turns them on.
pub fn untrusted_note(sources: &[&str], root: &Path) -> String {
    format!(
        "{UNTRUSTED_PREFIX} {} here: they run this repository's own code or tools, and the \
         workspace is not trusted. To allow them: openfiles trust {}",
        sources.join(", "),
        root.display()
    )
}

/// The header when the edited files have nothing to list but the edits broke other files.
pub const BROKEN_ONLY_HEADER: &str =
    "OpenFiles found no new problem in the files you edited, but your edits caused errors in files you did not edit:";

/// The line before the errors in files the session did not edit, after the edited files'.
pub const BROKEN_TITLE: &str = "Your edits also caused errors in files you did not edit:";

/// At most [`MAX_BROKEN`] item lines, then `… and N more in M files`.
fn broken_lines(broken: &[Broken]) -> Vec<String> {
    let mut out = Vec::new();
    for b in broken.iter().take(MAX_BROKEN) {
        out.push(item_line(&b.display, &b.item));
    }
    if broken.len() > MAX_BROKEN {
        let rest = &broken[MAX_BROKEN..];
        let mut files: Vec<&str> = rest.iter().map(|b| b.display.as_str()).collect();
        files.sort_unstable();
        files.dedup();
        out.push(format!(
            "- … and {} more in {} {}",
            rest.len(),
            files.len(),
            if files.len() == 1 { "file" } else { "files" }
        ));
    }
    out
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
    format!(
        "OpenFiles found {} in files you edited:",
        totals(errors, warnings)
    )
}

/// What the hook's fallback relays from an editor says after the editor's name.
pub const RELAYED: &str = "(relayed by OpenFiles, which did not check them itself)";

/// `The editor "Code" (session 1f3a) found 2 errors in files you edited (relayed by …):`.
pub fn relayed_header(from: &str, errors: u64, warnings: u64) -> String {
    format!(
        "{} found {} in files you edited {RELAYED}:",
        capitalized(from),
        totals(errors, warnings)
    )
}

/// [`BROKEN_ONLY_HEADER`] for what an editor found.
pub fn relayed_broken_only_header(from: &str) -> String {
    format!(
        "{} found no new problem in the files you edited, but errors your edits caused in files you did not edit {RELAYED}:",
        capitalized(from)
    )
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `2 errors and 1 warning`, `problems` when both are 0.
fn totals(errors: u64, warnings: u64) -> String {
    let count = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match (errors, warnings) {
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

/// `  fix: <summary>`, one line, at most [`MAX_FIX_CHARS`] characters.
pub fn fix_line(summary: &str) -> String {
    let one: String = summary.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = format!("  fix: {one}");
    if line.chars().count() <= MAX_FIX_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_FIX_CHARS - 1).collect();
    cut.push('…');
    cut
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
    use expect_test::expect;

    use super::*;

    fn err(line: u32, msg: &str) -> Item {
        Item {
            introduced: Some(true),
            fixes: Vec::new(),
            line,
            column: 1,
            severity: Severity::Error,
            source: "rustc".into(),
            code: None,
            message: msg.into(),
        }
    }

    #[test]
    fn safe_fixes_show_under_their_problem_within_the_limits() {
        let items: Vec<Item> = (1..=12).map(|i| err(i, "mismatched types")).collect();
        let mut fixes: Vec<Option<String>> = (1..=12)
            .map(|i| Some(format!("replace `usize` with `u32` at {i}:18")))
            .collect();
        fixes[1] = None;
        fixes[2] = Some(format!("insert `{}` at 3:1", "x".repeat(300)));
        let view = FileView {
            display: "src/main.rs".into(),
            errors: 12,
            warnings: 0,
            items,
            with_warnings: true,
            running: Vec::new(),
            already: 0,
            fixes,
        };
        let text = format(&[view]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "- src/main.rs:1:1 error (rustc): mismatched types"
        );
        assert_eq!(lines[2], "  fix: replace `usize` with `u32` at 1:18");
        assert!(lines[3].starts_with("- src/main.rs:2:1"), "{text}");
        assert!(lines[5].starts_with("  fix: insert `xxx"));
        assert!(lines[5].ends_with('…'));
        assert_eq!(lines[5].chars().count(), MAX_FIX_CHARS);
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("  fix: ")).count(),
            MAX_FIX_LINES
        );
    }

    #[test]
    fn broken_files_are_capped_and_old_problems_counted() {
        let edited = FileView {
            display: "src/lib.rs".into(),
            errors: 1,
            warnings: 0,
            items: vec![err(1, "new")],
            with_warnings: true,
            running: Vec::new(),
            already: 3,
            fixes: Vec::new(),
        };
        let broken: Vec<Broken> = (1..=12)
            .map(|i| Broken {
                display: if i <= 11 {
                    "a.rs".into()
                } else {
                    "b.rs".into()
                },
                item: err(i, "E0061"),
            })
            .collect();
        let text = format_report(&Report {
            files: vec![edited.clone()],
            broken: broken.clone(),
            notes: Vec::new(),
            from: None,
        })
        .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "OpenFiles found 1 error in files you edited:");
        assert_eq!(
            lines[2],
            "- and 3 problems that were already there before your edits"
        );
        assert_eq!(lines[3], BROKEN_TITLE);
        assert_eq!(
            lines.iter().filter(|l| l.contains("E0061")).count(),
            MAX_BROKEN
        );
        assert!(text.contains("\n- … and 2 more in 2 files\n"), "{text}");
        // Only broken files: their own header; only old problems: nothing at all.
        let text = format_report(&Report {
            broken: broken[..1].to_vec(),
            ..Report::default()
        })
        .unwrap();
        assert!(text.starts_with(BROKEN_ONLY_HEADER), "{text}");
        let quiet = FileView {
            items: Vec::new(),
            ..edited
        };
        assert_eq!(format(&[quiet]), None);
    }

    /// An item as a source reports it, classified by the baseline (`introduced`).
    fn item(
        (line, column): (u32, u32),
        severity: Severity,
        source: &str,
        code: Option<&str>,
        message: &str,
        introduced: Option<bool>,
    ) -> Item {
        Item {
            introduced,
            fixes: Vec::new(),
            line,
            column,
            severity,
            source: source.into(),
            code: code.map(str::to_owned),
            message: message.into(),
        }
    }

    /// The feedback for `edited` (workspace-relative) from `files`, as the hook builds it.
    fn feedback_for(
        files: Vec<(&str, openfiles_wire::spec::FileEntry)>,
        edited: &[&str],
    ) -> String {
        use crate::hook::report::Entries;
        use openfiles_wire::spec::HookSettings;
        let root = std::path::Path::new("/w");
        let files = files.into_iter().map(|(k, e)| (k.to_owned(), e)).collect();
        let entries = Entries {
            root,
            hook: &HookSettings::default(),
            files: &files,
            baseline: None,
        };
        let paths: Vec<std::path::PathBuf> = edited.iter().map(|p| root.join(p)).collect();
        format_report(&entries.report(&paths, 100)).unwrap()
    }

    #[test]
    fn the_text_an_agent_reads_after_an_edit() {
        use openfiles_wire::spec::{FileEntry, SourceStatus};
        let entry = |key: &str, checked_at, items| {
            FileEntry::checked(format!("/w/{key}").into(), checked_at, items)
        };
        let main = entry(
            "src/main.rs",
            200,
            vec![
                item(
                    (3, 18),
                    Severity::Error,
                    "rustc",
                    Some("E0308"),
                    "mismatched types\n  expected `u32`, found `&str`",
                    Some(true),
                ),
                item(
                    (7, 5),
                    Severity::Warning,
                    "clippy",
                    Some("clippy::needless_return"),
                    "unneeded `return` statement",
                    Some(true),
                ),
                item(
                    (12, 1),
                    Severity::Warning,
                    "clippy",
                    Some("dead_code"),
                    "function `old` is never used",
                    Some(false),
                ),
                item(
                    (14, 9),
                    Severity::Info,
                    "rust-analyzer",
                    None,
                    "consider importing `HashMap`",
                    Some(true),
                ),
            ],
        );
        // Partial: the language server answered, the project-wide check still runs.
        let mut lib = entry(
            "src/lib.rs",
            0,
            vec![item(
                (40, 13),
                Severity::Error,
                "rust-analyzer",
                Some("E0425"),
                "cannot find value `count` in this scope",
                Some(true),
            )],
        );
        lib.sources = [("rust-analyzer", 150), ("cargo-check", 0)]
            .into_iter()
            .map(|(n, at)| (n.to_owned(), SourceStatus { answered_at: at }))
            .collect();
        // A file the agent did not edit, broken by its edit of src/lib.rs.
        let mut util = entry(
            "src/util.rs",
            210,
            vec![item(
                (9, 5),
                Severity::Error,
                "rustc",
                Some("E0061"),
                "this function takes 2 arguments but 1 argument was supplied",
                Some(true),
            )],
        );
        util.affected_by = vec!["src/lib.rs".into()];
        let text = feedback_for(
            vec![
                ("src/main.rs", main),
                ("src/lib.rs", lib),
                ("src/util.rs", util),
            ],
            &["src/main.rs", "src/lib.rs"],
        );
        expect![[r#"
            OpenFiles found 2 errors and 1 warning in files you edited:
            - src/main.rs:3:18 error E0308 (rustc): mismatched types expected `u32`, found `&str`
            - src/main.rs:7:5 warning clippy::needless_return (clippy): unneeded `return` statement
            - src/lib.rs:40:13 error E0425 (rust-analyzer): cannot find value `count` in this scope
            - and 1 problem that was already there before your edits
            Your edits also caused errors in files you did not edit:
            - src/util.rs:9:5 error E0061 (rustc): this function takes 2 arguments but 1 argument was supplied
            Still checking: cargo-check (more problems may follow).
            Fix these before you report the task as done."#]].assert_eq(&text);
    }

    #[test]
    fn the_text_at_its_limits() {
        use openfiles_wire::spec::FileEntry;
        let errors = |n: u32, message: &str| -> Vec<Item> {
            (1..=n)
                .map(|l| {
                    item(
                        (l, 1),
                        Severity::Error,
                        "tsc",
                        Some("TS2322"),
                        message,
                        Some(true),
                    )
                })
                .collect()
        };
        let many = FileEntry::checked(
            "/w/src/many.ts".into(),
            200,
            errors(23, "Type 'string' is not assignable to type 'number'."),
        );
        let text = feedback_for(vec![("src/many.ts", many)], &["src/many.ts"]);
        expect![[r#"
            OpenFiles found 23 errors in files you edited:
            - src/many.ts:1:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:2:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:3:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:4:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:5:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:6:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:7:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:8:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:9:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:10:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:11:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:12:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:13:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:14:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:15:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:16:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:17:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:18:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:19:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts:20:1 error TS2322 (tsc): Type 'string' is not assignable to type 'number'.
            - src/many.ts: 3 more not shown
            Fix these before you report the task as done."#]]
        .assert_eq(&text);

        // Hundreds of long messages: cut under MAX_CHARS, keeping the closing line.
        let long = "x".repeat(300);
        let files: Vec<(String, FileEntry)> = (0..40)
            .map(|i| {
                let key = format!("src/f{i:02}.ts");
                let entry = FileEntry::checked(format!("/w/{key}").into(), 200, errors(5, &long));
                (key, entry)
            })
            .collect();
        let keys: Vec<&str> = files.iter().map(|(k, _)| k.as_str()).collect();
        let text = feedback_for(
            files.iter().map(|(k, e)| (k.as_str(), e.clone())).collect(),
            &keys,
        );
        assert!(text.chars().count() < MAX_CHARS);
        let lines: Vec<&str> = text.lines().collect();
        let (head, tail) = (lines[0], &lines[lines.len() - 2..]);
        expect![[r#"
            (
                "OpenFiles found 200 errors in files you edited:",
                [
                    "… (truncated)",
                    "Fix these before you report the task as done.",
                ],
            )
        "#]]
        .assert_debug_eq(&(head, tail));
    }

    /// A checker an untrusted workspace did not run is said in one line with the command,
    /// also when nothing else is listed (before, a clean-looking edit said nothing).
    #[test]
    fn what_an_untrusted_workspace_did_not_run_is_said_once() {
        let note = untrusted_note(&["cargo"], Path::new("/src/app"));
        let quiet = Report {
            notes: vec![note.clone()],
            ..Report::default()
        };
        assert_eq!(format_report(&quiet).as_deref(), Some(note.as_str()));
        assert!(note.ends_with("openfiles trust /src/app"), "{note}");
        assert_eq!(format_report(&Report::default()), None);
    }

    /// What an editor found is never said in openfiles's voice: its header names the editor,
    /// and its notes alone (the untrusted line) are not passed on.
    #[test]
    fn an_editor_s_findings_are_relayed_under_its_name() {
        let from = Some("the editor \"Code\" (session 1f3a)".to_owned());
        let broken = Broken {
            display: "b.rs".into(),
            item: err(2, "E0061"),
        };
        let text = format_report(&Report {
            broken: vec![broken],
            from: from.clone(),
            ..Report::default()
        })
        .unwrap();
        assert!(
            text.starts_with("The editor \"Code\" (session 1f3a) found no new problem"),
            "{text}"
        );
        assert!(!text.contains("OpenFiles found"), "{text}");
        let notes_only = Report {
            notes: vec![untrusted_note(&["cargo"], Path::new("/w"))],
            from,
            ..Report::default()
        };
        assert_eq!(format_report(&notes_only), None);
    }

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
            introduced: None,
            fixes: Vec::new(),
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
