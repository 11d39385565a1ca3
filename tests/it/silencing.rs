//! Issue 40.6, silencing flagged: what an edit adds to hide a problem — a suppression, a
//! skipped or deleted test — is named in the file's entry (a warning of source `openfiles`
//! with its line), what the committed text had already is not, and a revert clears it; a
//! cast to `any` only where it hides an error an earlier edit made.
//! Through a real `openfiles serve` over a real git repository, with the `instant` fixture
//! as the file's checker beside the built-in `silencing` source.

use crate::common;
use crate::common::git;

use std::path::Path;

use common::plugins::{fixture, path_list};
use common::{diagnostics, wait_until, Env};
use openfiles_wire::spec::Item;

const CALC: &str = "def f():\n    return 1\n\nx = f()  # type: ignore\n";
const TESTS: &str = "from calc import f\n\ndef test_one():\n    assert f() == 1\n\ndef test_two():\n    assert f() != 2\n";

fn silencers(ws: &Path, rel: &str) -> Vec<Item> {
    let d = diagnostics(ws).expect("diagnostics.json");
    d.files[rel]
        .items
        .iter()
        .filter(|i| {
            i.source == "openfiles"
                && i.code
                    .as_deref()
                    .is_some_and(|c| c.starts_with("silenced-"))
        })
        .cloned()
        .collect()
}

/// Report the edit and wait until the written file has every path settled at it.
fn check(env: &Env, ws: &Path, paths: &[&Path]) {
    let r = env.edited(paths);
    let w = env.wait(paths, r.ts, 60_000);
    assert!(w.complete, "{w:?}");
    wait_until("the entries written settled", || {
        diagnostics(ws).is_some_and(|d| {
            paths.iter().all(|p| {
                let rel = p.strip_prefix(ws).unwrap().to_str().unwrap();
                d.files
                    .get(rel)
                    .is_some_and(|e| e.checked_at >= r.ts && e.sources.contains_key("silencing"))
            })
        })
    });
}

#[test]
fn a_suppression_or_test_the_edit_added_or_removed_is_named_and_a_revert_clears_it() {
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[fixture("instant")]));
    std::fs::write(
        &env.config,
        "[watch]\nenabled = false\n[plugin.instant]\nextensions = [\"py\"]\n",
    )
    .unwrap();
    let ws = env.workspace("proj");
    std::fs::create_dir_all(ws.join("tests")).unwrap();
    std::fs::write(ws.join("calc.py"), CALC).unwrap();
    std::fs::write(ws.join("tests/test_calc.py"), TESTS).unwrap();
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "base"]);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);

    // The agent edits the line that had a suppression (it stays: the project's own) and adds
    // one; it skips one test and deletes the other.
    let calc = ws.join("calc.py");
    let tests = ws.join("tests/test_calc.py");
    std::fs::write(
        &calc,
        "def f():\n    return 1\n\nx = f() + 0  # type: ignore\ny: str = f()  # type: ignore[assignment]\n",
    )
    .unwrap();
    std::fs::write(
        &tests,
        "import pytest\nfrom calc import f\n\n@pytest.mark.skip(reason=\"later\")\ndef test_one():\n    assert f() == 1\n",
    )
    .unwrap();
    check(&env, &ws, &[&calc, &tests]);

    let found = silencers(&ws, "calc.py");
    assert_eq!(found.len(), 1, "only the added suppression: {found:?}");
    assert_eq!(
        (found[0].line, found[0].code.as_deref()),
        (5, Some("silenced-suppression"))
    );
    assert_eq!(found[0].introduced, Some(true));
    assert!(
        found[0].message.contains("# type: ignore"),
        "{}",
        found[0].message
    );

    let found = silencers(&ws, "tests/test_calc.py");
    let got: Vec<_> = found
        .iter()
        .map(|i| (i.line, i.code.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, "silenced-test-removed".to_string()),
            (4, "silenced-test-skipped".to_string()),
        ],
        "{found:?}"
    );
    assert!(
        found[0].message.contains("`test_two`"),
        "{}",
        found[0].message
    );
    let d = diagnostics(&ws).unwrap();
    assert!(d.files["calc.py"].sources.contains_key("silencing"));
    let counted = |env: &Env| env.status().workspaces[0].silenced;
    assert_eq!(counted(&env), 3, "status counts what was silenced");
    assert!(d.files["calc.py"].warnings >= 1);

    // The revert: nothing is named any more.
    std::fs::write(&calc, CALC).unwrap();
    std::fs::write(&tests, TESTS).unwrap();
    check(&env, &ws, &[&calc, &tests]);
    assert!(silencers(&ws, "calc.py").is_empty());
    assert!(silencers(&ws, "tests/test_calc.py").is_empty());
    assert_eq!(counted(&env), 0);
}

/// A file only the silencing source would look at stays unchecked: it never reads as
/// "checked, no problems" (the `instant` fixture handles `.py` only here).
#[test]
fn the_silencing_source_never_checks_a_file_alone() {
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[fixture("instant")]));
    std::fs::write(
        &env.config,
        "[watch]\nenabled = false\n[plugin.instant]\nextensions = [\"py\"]\n",
    )
    .unwrap();
    let ws = env.workspace("proj");
    std::fs::write(ws.join("a.go"), "package a\n").unwrap();
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "base"]);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let file = ws.join("a.go");
    std::fs::write(&file, "package a\n\nvar x = 1 //nolint\n").unwrap();
    let r = env.edited(&[&file]);
    let _ = env.wait(&[&file], r.ts, 30_000);
    wait_until("a.go is written", || {
        diagnostics(&ws).is_some_and(|d| d.files.contains_key("a.go"))
    });
    let entry = diagnostics(&ws).unwrap().files["a.go"].clone();
    assert!(!entry.sources.contains_key("silencing"), "{entry:?}");
    assert!(
        entry
            .items
            .iter()
            .all(|i| i.source != "openfiles" || i.code.as_deref() != Some("silenced-suppression")),
        "{entry:?}"
    );
}

/// A cast to `any` is named where it hides an error an earlier edit of the session made (the
/// real typescript-language-server reported it), not in fresh code where it hid nothing.
#[test]
fn a_cast_is_named_where_it_hides_a_new_error_not_in_fresh_code() {
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[common::plugins::plugin("lsp")]));
    std::fs::write(&env.config, "[watch]\nenabled = false\n").unwrap();
    let ws = env.workspace("proj");
    let committed = "export const k = 0;\n\nexport const n: number = 1;\nexport const z = k;\n";
    std::fs::write(ws.join("a.ts"), committed).unwrap();
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "base"]);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let a = ws.join("a.ts");
    std::fs::write(&a, committed.replace("= 1;", "= \"one\";")).unwrap();
    check(&env, &ws, &[&a]);
    let d = diagnostics(&ws).unwrap();
    assert!(
        d.files["a.ts"]
            .items
            .iter()
            .any(|i| i.line == 3 && i.code.as_deref() == Some("2322")),
        "the first edit's error: {:?}",
        d.files["a.ts"]
    );
    // The cast hides it (its line moved down under a new comment); the fresh line after it
    // casts too, hiding nothing.
    std::fs::write(
        &a,
        "export const k = 0;\n// the values\n\nexport const n: number = \"one\" as any;\nexport const m = 2 as any;\nexport const z = k;\n",
    )
    .unwrap();
    check(&env, &ws, &[&a]);
    let got: Vec<_> = silencers(&ws, "a.ts")
        .iter()
        .map(|i| (i.line, i.code.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        got,
        vec![(4, "silenced-cast".to_string())],
        "{:?}",
        diagnostics(&ws).unwrap().files["a.ts"]
    );
}
