//! An edit riding the warm server's first analysis (issue 42.2, cold): the session start's
//! warm-up started the server a moment before the agent's edit, and the edit's check comes
//! with the changed file's committed text (`CheckRequest::committed`). The answer is early:
//! the broken caller named, and the baseline of the files it checked equal to the command
//! line's at the commit; the follow-ups settle on the command line's answer. With the
//! baseline known to the service (`CheckRequest::baseline_known`) the caller is named with
//! no baseline pulled. After the first analysis, a check with committed texts rides too. An edit with no users answers at once with nothing and no baseline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use openfiles_plugin_api::{CheckRequest, CheckResponse, Item, Plugin};
use openfiles_plugin_pyright::Pyright;

use crate::support::{by_file, edit_request, plugin, workspace, write};

fn request(ws: &Path, edited: &Path, id: u64, committed: Option<&str>) -> CheckRequest {
    CheckRequest {
        committed: committed
            .map(|t| [(edited.to_owned(), t.to_owned())].into())
            .unwrap_or_default(),
        ..edit_request(ws, edited, id)
    }
}

fn ask(p: &Pyright, ws: &Path, edited: &Path, id: u64, committed: Option<&str>) -> CheckResponse {
    p.check(request(ws, edited, id, committed)).unwrap()
}

fn codes(items: &BTreeMap<PathBuf, Vec<Item>>, file: &Path) -> Vec<String> {
    let of = items.get(file).map(Vec::as_slice).unwrap_or_default();
    of.iter().filter_map(|i| i.code.clone()).collect()
}

const GOOD: &str = "def make_str(value: object) -> str:";
const BROKEN: &str = "def make_str(value: object, strict: bool) -> str:";

/// `pkg/utils.py` with `make_str`, `lonely` (used nowhere) and `other`; `pkg/core.py` calls
/// `make_str` and has a problem of its own; thirty modules import `other` only.
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
        &format!(
            "{GOOD}\n    return str(value)\n\n\ndef lonely(x: int) -> int:\n    return x\n\n\n\
             def other(x: int) -> int:\n    return x\n"
        ),
    );
    w(
        "pkg/core.py",
        "from .utils import make_str\n\n\ndef name(v: int) -> str:\n    return make_str(v)\n\n\n\
         bad: int = \"x\"\n",
    );
    for n in 0..30 {
        w(
            &format!("pkg/m{n}.py"),
            &format!("from pkg.utils import other\n\nY{n} = other({n})\n"),
        );
    }
    (tmp, ws)
}

/// An early answer naming the caller in `core` beside its own old problem.
fn assert_names_the_caller(resp: &CheckResponse, core: &Path) {
    assert!(resp.more, "an early answer: the rest follows");
    let early = by_file(resp.files.clone());
    assert_eq!(
        codes(&early, core),
        ["reportCallIssue", "reportAssignmentType"],
        "the caller named beside its own problem: {early:#?}"
    );
}

/// Check until the answer is not early.
fn settled(p: &Pyright, ws: &Path, edited: &Path, id: &mut u64) -> BTreeMap<PathBuf, Vec<Item>> {
    loop {
        *id += 1;
        let resp = ask(p, ws, edited, *id, None);
        if !resp.more {
            return by_file(resp.files);
        }
    }
}

/// The warm-up's check of another module starts the server; a second later the edit comes.
fn edit_during_the_first_analysis(
    served: &Pyright,
    ws: &Path,
    edit: impl FnOnce() -> CheckResponse + Send,
) -> CheckResponse {
    std::thread::scope(|s| {
        let warm_up = s.spawn(|| ask(served, ws, &ws.join("pkg/m0.py"), 1, None));
        std::thread::sleep(Duration::from_millis(1_000));
        let resp = edit();
        warm_up.join().unwrap();
        resp
    })
}

/// [`project`], its `utils.py` and `core.py`, the command-line plugin, and what it says of
/// those two at the commit.
#[allow(clippy::type_complexity)]
fn project_at_commit() -> (
    tempfile::TempDir,
    PathBuf,
    PathBuf,
    PathBuf,
    Pyright,
    BTreeMap<PathBuf, Vec<Item>>,
) {
    let (tmp, ws) = project();
    let utils = ws.join("pkg/utils.py");
    let core = ws.join("pkg/core.py");
    let cli = plugin(serde_json::json!({"language_server": false}));
    let mut at_commit = by_file(ask(&cli, &ws, &utils, 1, None).files);
    at_commit.retain(|f, _| *f == core || *f == utils);
    (tmp, ws, utils, core, cli, at_commit)
}

#[test]
fn an_edit_during_the_first_analysis_names_the_caller_with_its_baseline() {
    let (_tmp, ws, utils, core, cli, at_commit) = project_at_commit();
    assert_eq!(codes(&at_commit, &core), ["reportAssignmentType"]);

    let served = plugin(serde_json::Value::Null);
    let good = std::fs::read_to_string(&utils).unwrap();
    let resp = edit_during_the_first_analysis(&served, &ws, || {
        std::fs::write(&utils, good.replace(GOOD, BROKEN)).unwrap();
        ask(&served, &ws, &utils, 2, Some(&good))
    });
    assert_names_the_caller(&resp, &core);
    let checked: Vec<&PathBuf> = resp.baseline.iter().map(|f| &f.path).collect();
    assert!(
        checked.contains(&&core) && checked.contains(&&utils),
        "the baseline covers the user and the edited file: {checked:?}"
    );
    assert_eq!(
        by_file(resp.baseline),
        at_commit,
        "the baseline is the command line's at the commit"
    );

    let mut id = 2;
    let rest = settled(&served, &ws, &utils, &mut id);
    assert_eq!(rest, by_file(ask(&cli, &ws, &utils, 2, None).files));
}

/// After the first analysis (the warm-up's check settled), an edit whose check still carries
/// committed texts (the service has no baseline for it: a tree the commit does not match)
/// rides too: the caller named early, with the baseline of the files it checked equal to the
/// command line's at the commit (without the ride: a plain check, no baseline).
#[test]
fn an_edit_after_the_first_analysis_rides_when_its_check_carries_the_committed_texts() {
    let (_tmp, ws, utils, core, cli, at_commit) = project_at_commit();

    let served = plugin(serde_json::Value::Null);
    let mut id = 0;
    settled(&served, &ws, &ws.join("pkg/m0.py"), &mut id);
    let good = std::fs::read_to_string(&utils).unwrap();
    std::fs::write(&utils, good.replace(GOOD, BROKEN)).unwrap();
    id += 1;
    let resp = ask(&served, &ws, &utils, id, Some(&good));
    assert_names_the_caller(&resp, &core);
    assert_eq!(
        by_file(resp.baseline),
        at_commit,
        "the baseline is the command line's at the commit"
    );
    let rest = settled(&served, &ws, &utils, &mut id);
    assert_eq!(rest, by_file(ask(&cli, &ws, &utils, 2, None).files));
}

/// The committed texts a ride over a tree changed before the session carries: the edited
/// file's and `others`' (`CheckRequest::committed`).
fn riding(ws: &Path, edited: &Path, good: &str, others: &[(&Path, &str)]) -> CheckRequest {
    let mut req = request(ws, edited, 2, Some(good));
    for (f, text) in others {
        req.committed.insert(f.to_path_buf(), text.to_string());
    }
    req
}

#[test]
fn an_edit_in_a_tree_changed_before_rides_with_its_other_changes_at_the_commit() {
    let (_tmp, ws) = project();
    let (utils, core, extra) = (
        ws.join("pkg/utils.py"),
        ws.join("pkg/core.py"),
        ws.join("pkg/extra.py"),
    );
    // At the commit the user also reads a constant of another module.
    let mut core_text = std::fs::read_to_string(&core).unwrap();
    core_text.push_str("\nfrom .extra import LIMIT\n\nlimit: int = LIMIT\n");
    std::fs::write(&core, core_text).unwrap();
    let extra_committed = "LIMIT: int = 1\n";
    std::fs::write(&extra, extra_committed).unwrap();
    let cli = plugin(serde_json::json!({"language_server": false}));
    let mut at_commit = by_file(ask(&cli, &ws, &utils, 1, None).files);
    at_commit.retain(|f, _| *f == core || *f == utils);
    // An earlier session's uncommitted change to that module breaks the user.
    std::fs::write(&extra, "LIMIT: str = \"one\"\n").unwrap();

    let served = plugin(serde_json::Value::Null);
    let good = std::fs::read_to_string(&utils).unwrap();
    let resp = edit_during_the_first_analysis(&served, &ws, || {
        std::fs::write(&utils, good.replace(GOOD, BROKEN)).unwrap();
        served
            .check(riding(&ws, &utils, &good, &[(&extra, extra_committed)]))
            .unwrap()
    });
    assert!(resp.more, "an early answer: the rest follows");
    assert_eq!(
        by_file(resp.baseline),
        at_commit,
        "the baseline is the command line's at the commit (the other change at it too), of \
         the user and the edited file only"
    );
    let early = by_file(resp.files);
    assert_eq!(
        codes(&early, &core),
        [
            "reportCallIssue",
            "reportAssignmentType",
            "reportAssignmentType"
        ],
        "the caller, its own old problem and the earlier change's: {early:#?}"
    );
    let mut id = 2;
    let rest = settled(&served, &ws, &utils, &mut id);
    assert_eq!(rest, by_file(ask(&cli, &ws, &utils, 2, None).files));
}

#[test]
fn an_edit_whose_user_the_tree_changed_before_does_not_ride() {
    let (_tmp, ws) = project();
    let (utils, core) = (ws.join("pkg/utils.py"), ws.join("pkg/core.py"));
    let core_committed = std::fs::read_to_string(&core).unwrap();
    std::fs::write(&core, format!("{core_committed}\nW: int = \"w\"\n")).unwrap();
    let served = plugin(serde_json::Value::Null);
    let good = std::fs::read_to_string(&utils).unwrap();
    let resp = edit_during_the_first_analysis(&served, &ws, || {
        std::fs::write(&utils, good.replace(GOOD, BROKEN)).unwrap();
        served
            .check(riding(&ws, &utils, &good, &[(&core, &core_committed)]))
            .unwrap()
    });
    assert!(resp.more, "the follow-up waits for the analysis");
    assert!(by_file(resp.files).is_empty(), "nothing yet");
    assert!(
        resp.baseline.is_empty(),
        "no baseline of a user the tree changed"
    );
}

#[test]
fn an_edit_whose_baseline_the_service_has_is_answered_without_one() {
    let (_tmp, ws) = project();
    let utils = ws.join("pkg/utils.py");
    let core = ws.join("pkg/core.py");
    let served = plugin(serde_json::Value::Null);
    let good = std::fs::read_to_string(&utils).unwrap();
    let resp = edit_during_the_first_analysis(&served, &ws, || {
        std::fs::write(&utils, good.replace(GOOD, BROKEN)).unwrap();
        let known = CheckRequest {
            baseline_known: true,
            ..request(&ws, &utils, 2, Some(&good))
        };
        served.check(known).unwrap()
    });
    assert_names_the_caller(&resp, &core);
    assert!(
        resp.baseline.is_empty(),
        "no baseline pulled: {:?}",
        resp.baseline
    );

    // The server was told of the edit as a check tells it: the revert is seen.
    std::fs::write(&utils, &good).unwrap();
    let mut id = 2;
    let rest = settled(&served, &ws, &utils, &mut id);
    assert_eq!(codes(&rest, &core), ["reportAssignmentType"], "{rest:#?}");
    let cli = plugin(serde_json::json!({"language_server": false}));
    assert_eq!(rest, by_file(ask(&cli, &ws, &utils, 1, None).files));
}

#[test]
fn an_edit_without_users_answers_at_once_with_nothing() {
    let (_tmp, ws) = project();
    let utils = ws.join("pkg/utils.py");
    let served = plugin(serde_json::Value::Null);
    let good = std::fs::read_to_string(&utils).unwrap();
    let lonely = "def lonely(x: int) -> int:\n    return x";
    let resp = edit_during_the_first_analysis(&served, &ws, || {
        let broken = good.replace(lonely, "def lonely(x: int) -> int:\n    return \"x\"");
        std::fs::write(&utils, broken).unwrap();
        ask(&served, &ws, &utils, 2, Some(&good))
    });
    assert!(resp.more, "the follow-up waits for the analysis");
    assert!(by_file(resp.files).is_empty(), "nothing yet");
    assert!(resp.baseline.is_empty(), "no file checked at the commit");

    let cli = plugin(serde_json::json!({"language_server": false}));
    let mut id = 2;
    let rest = settled(&served, &ws, &utils, &mut id);
    assert_eq!(codes(&rest, &utils), ["reportReturnType"], "{rest:#?}");
    assert_eq!(rest, by_file(ask(&cli, &ws, &utils, 1, None).files));
}
