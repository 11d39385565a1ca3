//! The feedback text and the exact JSON line each agent gets, and the limits: 20 items per
//! file, under 9000 characters with the closing line kept.

use std::collections::BTreeMap;
use std::path::PathBuf;

use openfiles::hook::feedback::{self, FileView, CLOSING, MAX_CHARS, TRUNCATED};
use openfiles::hook::output::{render, Agent, AGENT_IDS};
use openfiles::hook::report::Entries;
use openfiles_wire::spec::{Feedback, FileEntry, HookSettings, Item, Severity};

fn item(line: u32, severity: Severity, code: Option<&str>, message: &str) -> Item {
    Item {
        introduced: None,
        fixes: Vec::new(),
        line,
        column: 5,
        severity,
        source: "rustc".into(),
        code: code.map(str::to_owned),
        message: message.into(),
    }
}

fn view(display: &str, items: Vec<Item>) -> FileView {
    let count = |s| items.iter().filter(|i| i.severity == s).count() as u32;
    FileView {
        already: 0,
        display: display.into(),
        errors: count(Severity::Error),
        warnings: count(Severity::Warning),
        items,
        with_warnings: true,
        running: Vec::new(),
        fixes: Vec::new(),
    }
}

const TEXT: &str = "T \"q\"\nline";

#[test]
fn exact_output_json_per_agent() {
    let post = r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"T \"q\"\nline"}}"#;
    for agent in ["claude", "codex", "qwen", "kimi", "droid", "opencode"] {
        assert_eq!(
            render(Agent::from_id(Some(agent)), TEXT).as_deref(),
            Some(post),
            "{agent}"
        );
    }
    assert_eq!(
        render(Agent::Gemini, TEXT).as_deref(),
        Some(
            r#"{"hookSpecificOutput":{"hookEventName":"AfterTool","additionalContext":"T \"q\"\nline"}}"#
        )
    );
    assert_eq!(
        render(Agent::Cursor, TEXT).as_deref(),
        Some(r#"{"additional_context":"T \"q\"\nline"}"#)
    );
    let copilot = r#"{"additionalContext":"T \"q\"\nline","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"T \"q\"\nline"}}"#;
    assert_eq!(render(Agent::Copilot, TEXT).as_deref(), Some(copilot));
    assert_eq!(render(Agent::Vscode, TEXT).as_deref(), Some(copilot));
    for agent in ["windsurf", "kiro", "cline", "goose", "unknown"] {
        assert_eq!(render(Agent::from_id(Some(agent)), TEXT), None, "{agent}");
    }
}

#[test]
fn agent_ids_round_trip_and_unknown_ids_are_unknown() {
    for id in AGENT_IDS {
        assert_eq!(Agent::from_id(Some(id)).id(), *id);
    }
    assert_eq!(Agent::from_id(Some("emacs")), Agent::Unknown);
    assert_eq!(Agent::from_id(None), Agent::Unknown);
}

#[test]
fn who_waits_for_feedback() {
    assert!(Agent::Claude.wants_feedback(None));
    assert!(Agent::Cursor.wants_feedback(Some("postToolUse")));
    assert!(!Agent::Cursor.wants_feedback(Some("afterFileEdit")));
    // OpenCode's plugin appends the feedback to the edit tool's output.
    assert!(Agent::Opencode.wants_feedback(None));
    for agent in [
        Agent::Windsurf,
        Agent::Kiro,
        Agent::Cline,
        Agent::Goose,
        Agent::Unknown,
    ] {
        assert!(!agent.wants_feedback(None), "{agent:?}");
    }
}

#[test]
fn feedback_text_shape() {
    let files = vec![
        view(
            "src/main.rs",
            vec![
                item(
                    3,
                    Severity::Error,
                    Some("E0308"),
                    "mismatched types\n  expected `i32`,   found `&str`",
                ),
                item(9, Severity::Warning, None, "unused variable: `x`"),
            ],
        ),
        view("src/clean.rs", vec![]),
        view(
            "/outside/lib.rs",
            vec![item(1, Severity::Error, None, "boom")],
        ),
    ];
    let text = feedback::format(&files).unwrap();
    assert_eq!(
        text,
        "OpenFiles found 2 errors and 1 warning in files you edited:\n\
         - src/main.rs:3:5 error E0308 (rustc): mismatched types expected `i32`, found `&str`\n\
         - src/main.rs:9:5 warning (rustc): unused variable: `x`\n\
         - /outside/lib.rs:1:5 error (rustc): boom\n\
         Fix these before you report the task as done."
    );
}

#[test]
fn nothing_relevant_prints_nothing() {
    assert_eq!(feedback::format(&[]), None);
    assert_eq!(feedback::format(&[view("a.rs", vec![])]), None);
}

#[test]
fn twenty_items_per_file_then_more_not_shown() {
    let items: Vec<Item> = (1..=23)
        .map(|n| item(n, Severity::Error, None, "bad"))
        .collect();
    let other: Vec<Item> = (1..=20)
        .map(|n| item(n, Severity::Warning, None, "meh"))
        .collect();
    let text = feedback::format(&[view("a.rs", items), view("b.rs", other)]).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "OpenFiles found 23 errors and 20 warnings in files you edited:"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("- a.rs:") && l.contains(" error "))
            .count(),
        20
    );
    assert_eq!(lines[20], "- a.rs:20:5 error (rustc): bad");
    assert_eq!(lines[21], "- a.rs: 3 more not shown");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("- b.rs:")).count(),
        20
    );
    assert!(!text.contains("b.rs: 0 more"));
    assert_eq!(*lines.last().unwrap(), CLOSING);
}

#[test]
fn whole_text_stays_under_9000_characters_with_closing_line() {
    // 30 files × 20 items × ~200 characters ≫ 9000; multi-byte characters so bytes ≠ chars.
    let files: Vec<FileView> = (0..30)
        .map(|f| {
            let items = (1..=20)
                .map(|n| item(n, Severity::Error, Some("E1"), &"é".repeat(200)))
                .collect();
            view(&format!("src/f{f}.rs"), items)
        })
        .collect();
    let text = feedback::format(&files).unwrap();
    assert!(
        text.chars().count() < MAX_CHARS,
        "{} chars",
        text.chars().count()
    );
    assert!(text.chars().count() > MAX_CHARS - 400, "cut far too early");
    assert!(text.ends_with(&format!("\n{TRUNCATED}\n{CLOSING}")));
    assert!(text.starts_with("OpenFiles found 600 errors in files you edited:\n- src/f0.rs:1:5"));
    // One single enormous message is cut too.
    let text = feedback::format(&[view(
        "a.rs",
        vec![item(1, Severity::Error, None, &"x ".repeat(20_000))],
    )])
    .unwrap();
    assert!(text.chars().count() < MAX_CHARS);
    assert!(text.contains("- a.rs:1:5 error (rustc): x x"));
    assert!(text.ends_with(CLOSING));
}

fn entry(path: &str, checked_at: u64, items: Vec<Item>) -> FileEntry {
    FileEntry::checked(PathBuf::from(path), checked_at, items)
}

#[test]
fn entries_are_matched_by_path_filtered_by_time_and_level() {
    let mut files = BTreeMap::new();
    files.insert(
        "src/a.rs".to_owned(),
        entry(
            "/w/src/a.rs",
            100,
            vec![
                item(1, Severity::Error, None, "e"),
                item(2, Severity::Warning, None, "w"),
                item(3, Severity::Info, None, "i"),
                item(4, Severity::Hint, None, "h"),
            ],
        ),
    );
    files.insert(
        "src/old.rs".to_owned(),
        entry(
            "/w/src/old.rs",
            50,
            vec![item(1, Severity::Error, None, "stale")],
        ),
    );
    let mut hook = HookSettings::default();
    let paths = vec![
        PathBuf::from("/w/./src/a.rs"),
        PathBuf::from("/w/src/old.rs"),
        PathBuf::from("/w/none.rs"),
    ];
    let ws = Entries {
        root: "/w".as_ref(),
        hook: &hook,
        files: &files,
        baseline: None,
    };
    assert!(!ws.all_checked(&paths, 100));
    assert!(ws.all_checked(&paths[..1], 100));
    let views = ws.views(&paths, 100);
    assert_eq!(views.len(), 1, "stale and missing entries are not reported");
    assert_eq!(views[0].display, "src/a.rs");
    assert_eq!(views[0].items.len(), 2, "info and hints are never listed");

    hook.feedback = Feedback::Errors;
    let ws = Entries {
        root: "/w".as_ref(),
        hook: &hook,
        files: &files,
        baseline: None,
    };
    let text = feedback::format(&ws.views(&paths, 100)).unwrap();
    assert_eq!(
        text,
        format!("OpenFiles found 1 error in files you edited:\n- src/a.rs:1:5 error (rustc): e\n{CLOSING}")
    );

    hook.feedback = Feedback::Off;
    let ws = Entries {
        root: "/w".as_ref(),
        hook: &hook,
        files: &files,
        baseline: None,
    };
    assert!(ws.views(&paths, 100).is_empty());
}

/// At the errors-only level a plain warning is not listed, but what the edit added to hide a
/// problem (the `silencing` source's warning) is, and counts in the header.
#[test]
fn the_errors_only_level_still_names_what_hides_a_problem() {
    let silencer = Item {
        source: openfiles_wire::spec::SILENCING_SOURCE.into(),
        code: Some("silenced-suppression".into()),
        ..item(
            3,
            Severity::Warning,
            None,
            "added `# type: ignore`: it hides a problem",
        )
    };
    let mut files = BTreeMap::new();
    files.insert(
        "a.py".to_owned(),
        entry(
            "/w/a.py",
            100,
            vec![item(2, Severity::Warning, None, "plain warning"), silencer],
        ),
    );
    let hook = HookSettings {
        feedback: Feedback::Errors,
        ..HookSettings::default()
    };
    let ws = Entries {
        root: "/w".as_ref(),
        hook: &hook,
        files: &files,
        baseline: None,
    };
    let text = feedback::format(&ws.views(&[PathBuf::from("/w/a.py")], 100)).unwrap();
    assert!(
        text.contains(
            "- a.py:3:5 warning silenced-suppression (openfiles): added `# type: ignore`"
        ),
        "{text}"
    );
    assert!(!text.contains("plain warning"), "{text}");
    assert!(text.starts_with("OpenFiles found 1 warning"), "{text}");
}
