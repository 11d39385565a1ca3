//! The warm server's early answer (issue 42.2): after an edit that breaks a caller, the
//! check answers once the edited module and its users (the modules that import it and
//! mention the changed name) were re-checked — naming the broken caller, with `more` — and
//! the follow-up check of the same file (not notified again) answers with the rest, equal
//! to the command line's (`language_server = false`, the reference).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{Item, Plugin};
use openfiles_plugin_pyright::Pyright;

use crate::support::{by_file, edit_request, plugin, workspace, write};

/// The items per file (files with none left out), and the answer's `more`.
fn check(p: &Pyright, ws: &Path, edited: &Path, id: u64) -> (BTreeMap<PathBuf, Vec<Item>>, bool) {
    let resp = p.check(edit_request(ws, edited, id)).unwrap();
    (by_file(resp.files), resp.more)
}

const GOOD: &str = "def make_str(value: object) -> str:";
const BROKEN: &str = "def make_str(value: object, strict: bool) -> str:";

/// `pkg/utils.py` with `make_str` and `other`; `pkg/core.py` calls `make_str`; twelve
/// modules import `other` only (importers the early answer does not wait for), one of them
/// with a problem of its own.
fn project() -> (tempfile::TempDir, PathBuf) {
    let (tmp, ws) = workspace();
    let w = |rel: &str, text: &str| write(&ws, rel, text);
    w(
        "pyrightconfig.json",
        "{\"typeCheckingMode\": \"standard\"}\n",
    );
    w("pkg/__init__.py", "");
    w(
        "pkg/utils.py",
        &format!("{GOOD}\n    return str(value)\n\n\ndef other(x: int) -> int:\n    return x\n"),
    );
    w(
        "pkg/core.py",
        "from .utils import make_str\n\n\ndef name(v: int) -> str:\n    return make_str(v)\n",
    );
    for n in 0..12 {
        let own = if n == 3 { "\nbad: int = \"x\"\n" } else { "" };
        w(
            &format!("pkg/m{n}.py"),
            &format!("from pkg.utils import other\n\nY{n} = other({n})\n{own}"),
        );
    }
    (tmp, ws)
}

#[test]
fn the_early_answer_names_the_caller_and_the_follow_up_equals_the_command_line() {
    let (_tmp, ws) = project();
    let utils = ws.join("pkg/utils.py");
    let core = ws.join("pkg/core.py");
    let served = plugin(serde_json::Value::Null);
    let cli = plugin(serde_json::json!({"language_server": false}));
    // Warm: the first analysis, then a check with nothing changed.
    let (before, _) = check(&served, &ws, &utils, 1);
    assert_eq!(before, check(&cli, &ws, &utils, 1).0, "before the edit");
    let text = std::fs::read_to_string(&utils).unwrap();
    std::fs::write(&utils, text.replace(GOOD, BROKEN)).unwrap();

    let (early, more) = check(&served, &ws, &utils, 2);
    assert!(more, "answered when the caller was re-checked: {early:#?}");
    let codes: Vec<&str> = early
        .get(&core)
        .map(|items| items.iter().filter_map(|i| i.code.as_deref()).collect())
        .unwrap_or_default();
    assert_eq!(
        codes,
        ["reportCallIssue"],
        "the caller is named: {early:#?}"
    );

    let (rest, more) = check(&served, &ws, &utils, 3);
    assert!(!more, "the follow-up waits for the analysis to settle");
    let (reference, _) = check(&cli, &ws, &utils, 3);
    assert!(
        reference.contains_key(&ws.join("pkg/m3.py")),
        "{reference:#?}"
    );
    assert_eq!(
        rest, reference,
        "the follow-up is the command line's answer"
    );
}

/// Check until the answer is not early (the follow-ups of an early answer).
fn settled(p: &Pyright, ws: &Path, edited: &Path, id: &mut u64) -> BTreeMap<PathBuf, Vec<Item>> {
    loop {
        *id += 1;
        let (items, more) = check(p, ws, edited, *id);
        if !more {
            return items;
        }
    }
}

/// The server holds an edit's users open so it re-checks them first; a user the agent then
/// edits is read from disk again (its own new problem, its call fixed), and one opened again
/// for a later edit is opened with the text on disk: every answer equals the command line's.
#[test]
fn a_user_held_open_is_read_again_when_it_changes() {
    let (_tmp, ws) = project();
    // Older than the server's start by more than the kernel's clock tick: known as read as
    // they are (`Texts::learn`), so a user is opened with its text.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let utils = ws.join("pkg/utils.py");
    let core = ws.join("pkg/core.py");
    let served = plugin(serde_json::Value::Null);
    let cli = plugin(serde_json::json!({"language_server": false}));
    let mut id = 0;
    settled(&served, &ws, &utils, &mut id);
    let good = std::fs::read_to_string(&utils).unwrap();
    std::fs::write(&utils, good.replace(GOOD, BROKEN)).unwrap();
    let broken = settled(&served, &ws, &utils, &mut id);
    assert_eq!(broken, check(&cli, &ws, &utils, 100).0, "the caller broken");

    // The agent fixes the call in the user held open, and adds a problem of its own.
    std::fs::write(
        &core,
        "from .utils import make_str\n\n\ndef name(v: int) -> str:\n    return make_str(v, True)\n\n\nbad: int = \"x\"\n",
    )
    .unwrap();
    let fixed = settled(&served, &ws, &core, &mut id);
    let reference = check(&cli, &ws, &core, 101).0;
    let codes = |items: &BTreeMap<PathBuf, Vec<Item>>| -> Vec<String> {
        let of_core = items.get(&core).map(Vec::as_slice).unwrap_or_default();
        of_core.iter().filter_map(|i| i.code.clone()).collect()
    };
    assert_eq!(
        codes(&reference),
        ["reportAssignmentType"],
        "{reference:#?}"
    );
    assert_eq!(
        fixed, reference,
        "the user's text on disk, not the one opened"
    );

    // The module reverted: the user, opened again, now passes one argument too many.
    std::fs::write(&utils, &good).unwrap();
    let (early, _) = check(&served, &ws, &utils, 200);
    assert!(
        codes(&early).contains(&"reportCallIssue".to_owned()),
        "the early answer names the call now broken: {early:#?}"
    );
    let reverted = settled(&served, &ws, &utils, &mut id);
    assert_eq!(reverted, check(&cli, &ws, &utils, 102).0);
}
