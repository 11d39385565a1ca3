//! The tsc plugin with the real TypeScript 7 native preview (`tsgo`, npm
//! `@typescript/native-preview`) beside the real `tsc` 5, on a generated 32-file project
//! with planted mistakes (`support/ts_project.rs`):
//!
//! - the two compilers' command lines print identical diagnostics (file, line, column,
//!   code, message), and the plugin gives identical items with either;
//! - the differences found between them (exit status, the path in TS5058) are named here;
//! - `auto` takes the project's own `tsgo`, and only that;
//! - a `tsgo` that crashes (stand-in: a binary killed by SIGSEGV; a Go panic) or cannot
//!   start is replaced by `tsc`, with a note in the results and in the plugin's notes.

#[path = "../support/ts_project.rs"]
mod ts_project;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use openfiles_plugin_api::{Capabilities, CheckRequest, Init, Item, Plugin, Severity};
use openfiles_plugin_tsc::compiler::{self, Kind};
use openfiles_plugin_tsc::parse::{self, TscDiagnostic};
use openfiles_plugin_tsc::Tsc;
use ts_project::{generate, link_native_preview, toggle_util2, TsProject, PLANTED};

fn plugin(state: &Path, config: serde_json::Value) -> (Tsc, Capabilities) {
    std::fs::create_dir_all(state).unwrap();
    Tsc::create(Init {
        config,
        state_dir: state.to_owned(),
        host_version: "test".into(),
    })
    .unwrap()
}

fn check_all(p: &Tsc, id: u64, project: &TsProject) -> BTreeMap<PathBuf, Vec<Item>> {
    let resp = p
        .check(CheckRequest {
            trusted: true,
            id,
            workspace: project.root.clone(),
            files: project.files.clone(),
            also_report: Vec::new(),
            timeout_ms: 120_000,
            ..Default::default()
        })
        .unwrap();
    assert_eq!(resp.files.len(), project.files.len());
    resp.files.into_iter().map(|f| (f.path, f.items)).collect()
}

/// The native binary of the installed package (what the plugin runs).
fn tsgo_exe() -> PathBuf {
    let pkg = ts_project::global_native_preview()
        .expect("tsgo on PATH: run scripts/install-test-deps.sh");
    compiler::tsgo_in_package(&pkg).expect("the platform binary of @typescript/native-preview")
}

fn cli(exe: &Path, project: &TsProject, args: &[&str]) -> (Vec<TscDiagnostic>, String, i32) {
    let out = Command::new(exe)
        .args(["--noEmit", "--pretty", "false"])
        .args(args)
        .current_dir(&project.root)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", exe.display()));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut d = parse::parse(&text);
    d.sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
    (d, text, out.status.code().unwrap_or(-1))
}

/// Items with their file, sorted, for comparing whole results.
fn flat(results: &BTreeMap<PathBuf, Vec<Item>>, root: &Path) -> Vec<(String, Item)> {
    let mut v: Vec<(String, Item)> = results
        .iter()
        .flat_map(|(p, items)| {
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            items.iter().map(move |i| (rel.clone(), i.clone()))
        })
        .collect();
    v.sort_by(|a, b| (&a.0, a.1.line, a.1.column).cmp(&(&b.0, b.1.line, b.1.column)));
    v
}

fn assert_planted(items: &[(String, Item)]) {
    for (file, line, code) in PLANTED {
        assert!(
            items
                .iter()
                .any(|(f, i)| f == file && i.line == *line && i.code.as_deref() == Some(*code)),
            "planted TS{code} at {file}:{line} missing from {items:#?}"
        );
    }
}

#[test]
fn tsc_and_tsgo_print_identical_diagnostics_and_the_plugin_gives_identical_items() {
    let tmp = tempfile::tempdir().unwrap();
    let project = generate(&tmp.path().join("lib"), 10);
    assert_eq!(project.files.len(), 32);

    let (by_tsc, tsc_text, _) = cli(Path::new("tsc"), &project, &["-p", "tsconfig.json"]);
    let (by_tsgo, tsgo_text, _) = cli(&tsgo_exe(), &project, &["-p", "tsconfig.json"]);
    assert_eq!(
        by_tsc.len(),
        PLANTED.len(),
        "one diagnostic per planted mistake:\n{tsc_text}"
    );
    assert_eq!(by_tsc, by_tsgo, "tsc:\n{tsc_text}\ntsgo:\n{tsgo_text}");
    // The elaboration is kept whole by both.
    let elaborated = by_tsgo
        .iter()
        .find(|d| d.file.as_deref() == Some("src/services/service9.ts"))
        .unwrap();
    assert!(elaborated.message.contains('\n'), "{elaborated:?}");

    let (with_tsc, _) = plugin(
        &tmp.path().join("state-tsc"),
        serde_json::json!({"compiler": "tsc"}),
    );
    let (with_tsgo, caps) = plugin(
        &tmp.path().join("state-tsgo"),
        serde_json::json!({"compiler": "tsgo"}),
    );
    assert!(caps.notes.is_empty(), "{:?}", caps.notes);
    // The `tsgo` on PATH is npm's node wrapper: the plugin runs the platform binary behind it.
    assert_eq!(compiler::configured_tsgo(None), Some(tsgo_exe()));
    let a = flat(&check_all(&with_tsc, 1, &project), &project.root);
    let b = flat(&check_all(&with_tsgo, 1, &project), &project.root);
    assert_eq!(a, b);
    assert_planted(&b);
    assert_eq!(a.len(), PLANTED.len(), "{a:#?}");
    // The column after "🚀" counts characters: tsc's UTF-16 column minus one.
    let cli_col = by_tsgo
        .iter()
        .find(|d| d.file.as_deref() == Some("src/util/util8.ts"))
        .unwrap()
        .column;
    let item = &b.iter().find(|(f, _)| f == "src/util/util8.ts").unwrap().1;
    assert_eq!(item.column, cli_col - 1);
    // tsgo really ran: its own build info is in its state dir.
    assert!(std::fs::read_dir(tmp.path().join("state-tsgo"))
        .unwrap()
        .any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tsgo.tsbuildinfo")));

    // The edit in util2 fixes service2 (another file), then breaks it again, warm.
    toggle_util2(&project, false);
    let fixed_tsc = flat(&check_all(&with_tsc, 2, &project), &project.root);
    let fixed_tsgo = flat(&check_all(&with_tsgo, 2, &project), &project.root);
    assert_eq!(fixed_tsc, fixed_tsgo);
    assert!(fixed_tsgo
        .iter()
        .all(|(f, _)| f != "src/services/service2.ts"));
    assert_eq!(fixed_tsgo.len(), PLANTED.len() - 1);
    toggle_util2(&project, true);
    assert_eq!(
        flat(&check_all(&with_tsgo, 3, &project), &project.root),
        b,
        "warm tsgo (incremental) after the edit"
    );
}

#[test]
fn known_differences_between_tsc_and_tsgo() {
    let tmp = tempfile::tempdir().unwrap();
    let project = generate(&tmp.path().join("lib"), 10);
    // 1. Exit status with errors: tsc 2 ("diagnostics present, outputs generated"), tsgo 1.
    //    The plugin reads diagnostics, never the status, when there are any.
    let (_, _, tsc_status) = cli(Path::new("tsc"), &project, &["-p", "tsconfig.json"]);
    let (_, _, tsgo_status) = cli(&tsgo_exe(), &project, &["-p", "tsconfig.json"]);
    assert_eq!((tsc_status, tsgo_status), (2, 1));
    // 2. A missing project file: tsc names the path as given, tsgo makes it absolute.
    //    Both are global errors (no file), put on every file of the project either way.
    let (tsc_d, _, _) = cli(Path::new("tsc"), &project, &["-p", "nope.json"]);
    let (tsgo_d, _, _) = cli(&tsgo_exe(), &project, &["-p", "nope.json"]);
    assert_eq!(tsc_d.len(), 1);
    assert_eq!(tsgo_d.len(), 1);
    assert_eq!(
        (tsc_d[0].file.as_deref(), tsgo_d[0].file.as_deref()),
        (None, None)
    );
    assert_eq!(tsc_d[0].code, "5058");
    assert_eq!(tsgo_d[0].code, "5058");
    assert!(tsc_d[0].message.ends_with("'nope.json'."), "{tsc_d:?}");
    let abs = project.root.join("nope.json");
    assert!(
        tsgo_d[0]
            .message
            .ends_with(&format!("'{}'.", abs.display())),
        "{tsgo_d:?}"
    );
}

#[test]
fn auto_takes_the_projects_own_tsgo() {
    let tmp = tempfile::tempdir().unwrap();
    let project = generate(&tmp.path().join("lib"), 10);
    let state = tmp.path().join("state");
    let (p, caps) = plugin(&state, serde_json::Value::Null);
    assert!(caps.notes.is_empty());
    // Without @typescript/native-preview in the project: tsc, even though tsgo is on PATH.
    let c = compiler::choose(
        compiler::CompilerSetting::Auto,
        None,
        None,
        &project.root,
        true,
    );
    assert_eq!(c.kind, Kind::Tsc);
    let by_tsc = flat(&check_all(&p, 1, &project), &project.root);

    let pkg = link_native_preview(&project);
    let c = compiler::choose(
        compiler::CompilerSetting::Auto,
        None,
        None,
        &project.root,
        true,
    );
    assert_eq!(c.kind, Kind::Tsgo);
    // The platform binary itself, not the node wrapper.
    assert_eq!(c.exe, compiler::tsgo_in_package(&pkg).unwrap());
    assert!(!c.exe.ends_with("bin/tsgo"), "{c:?}");
    let by_tsgo = flat(&check_all(&p, 2, &project), &project.root);
    assert_eq!(by_tsc, by_tsgo);
    assert!(std::fs::read_dir(&state).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tsgo.tsbuildinfo")));
}

/// A stand-in `@typescript/native-preview` whose platform binary runs `script`.
fn fake_native_preview(project: &TsProject, script: &str) -> PathBuf {
    let pkg = project.root.join("node_modules/@typescript/native-preview");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("package.json"), "{}").unwrap();
    let exe = pkg
        .join("node_modules/@typescript")
        .join(format!("native-preview-{}", compiler::node_platform()))
        .join("lib/tsgo");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::write(&exe, script).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe.canonicalize().unwrap()
}

fn fallback_notes(results: &BTreeMap<PathBuf, Vec<Item>>) -> Vec<&Item> {
    results
        .values()
        .flatten()
        .filter(|i| i.severity == Severity::Info && i.message.contains("from tsc"))
        .collect()
}

#[test]
fn a_crashing_tsgo_is_replaced_by_tsc_until_it_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let project = generate(&tmp.path().join("lib"), 10);
    // A real tsgo cannot be made to crash on demand: this one dies of SIGSEGV.
    let exe = fake_native_preview(&project, "#!/bin/sh\nkill -SEGV $$\n");
    let state = tmp.path().join("state");
    let (p, _) = plugin(&state, serde_json::Value::Null);

    let first = check_all(&p, 1, &project);
    let notes = fallback_notes(&first);
    assert_eq!(
        notes.len(),
        project.files.len(),
        "one note per file of the run"
    );
    assert!(notes[0].message.contains("signal 11"), "{notes:?}");
    let mut items = flat(&first, &project.root);
    items.retain(|(_, i)| i.severity != Severity::Info);
    assert_planted(&items);
    assert_eq!(items.len(), PLANTED.len());

    // Remembered: the next run goes straight to tsc, without the note.
    let second = check_all(&p, 2, &project);
    assert!(fallback_notes(&second).is_empty());
    assert_eq!(flat(&second, &project.root), items);
    // …and a new plugin instance (`openfiles plugins`, `doctor`) tells it.
    let (_, caps) = plugin(&state, serde_json::Value::Null);
    assert_eq!(caps.notes.len(), 1, "{:?}", caps.notes);
    assert!(
        caps.notes[0].contains("signal 11") && caps.notes[0].contains(&exe.display().to_string())
    );

    // A reinstalled tsgo (here: the real one behind a script) is tried again.
    let real = tsgo_exe();
    std::fs::write(&exe, format!("#!/bin/sh\nexec {} \"$@\"\n", real.display())).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(10);
    std::fs::File::options()
        .write(true)
        .open(&exe)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let third = check_all(&p, 3, &project);
    assert!(fallback_notes(&third).is_empty());
    assert_eq!(flat(&third, &project.root), items);
    assert!(std::fs::read_dir(&state).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tsgo.tsbuildinfo")));
    let (_, caps) = plugin(&state, serde_json::Value::Null);
    assert!(caps.notes.is_empty(), "{:?}", caps.notes);
}

#[test]
fn a_go_panic_is_a_crash_too() {
    let tmp = tempfile::tempdir().unwrap();
    let project = generate(&tmp.path().join("lib"), 10);
    // What a Go runtime panic looks like: a message, a goroutine trace, exit status 2.
    fake_native_preview(
        &project,
        "#!/bin/sh\necho 'panic: runtime error: invalid memory address or nil pointer dereference' >&2\necho >&2\necho 'goroutine 1 [running]:' >&2\nexit 2\n",
    );
    let (p, _) = plugin(&tmp.path().join("state"), serde_json::Value::Null);
    let results = check_all(&p, 1, &project);
    let notes = fallback_notes(&results);
    assert!(!notes.is_empty());
    assert!(notes[0].message.contains("nil pointer"), "{notes:?}");
    let mut items = flat(&results, &project.root);
    items.retain(|(_, i)| i.severity != Severity::Info);
    assert_planted(&items);
}

#[test]
fn a_configured_tsgo_that_cannot_start_is_noted_and_tsc_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let project = generate(&tmp.path().join("lib"), 10);
    let missing = tmp.path().join("no/such/tsgo");
    let config = serde_json::json!({"compiler": "tsgo", "tsgo": missing});
    let (p, caps) = plugin(&tmp.path().join("state"), config);
    assert_eq!(caps.notes.len(), 1, "{:?}", caps.notes);
    assert!(caps.notes[0].contains("cannot start"), "{:?}", caps.notes);
    let mut items = flat(&check_all(&p, 1, &project), &project.root);
    // Already noted at start: the run itself is quiet about it.
    assert!(items.iter().all(|(_, i)| i.severity != Severity::Info));
    items.retain(|(_, i)| i.severity != Severity::Info);
    assert_planted(&items);
}
