//! Unit tests of the pipeline actor's scheduling, merging and waiting, with the stand-in
//! checker of [`crate::diagnostics::testing`]: an ephemeral pipeline (nothing persisted, no
//! baseline) over a temporary workspace, whose checks the test answers one by one, on
//! tokio's paused clock (deadlines and graces pass when the test lets time pass, never by
//! sleeping).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::{EditOrigin, Pipeline, PipelineHandle};
use crate::config::Config;
use crate::diagnostics::testing::{
    error, names, per_file, project_wide, settle, Call, Calls, StandIn,
};
use crate::diagnostics::waiters::WaitOutcome;
use crate::diagnostics::SourceInfo;
use crate::diagnostics::{schedule, session};
use openfiles_wire::spec::{self, FileEntry, Item, Severity};

/// `hooks.timeout_ms` of the tests' config.
const HOOK_TIMEOUT_MS: u64 = 10_000;
/// `hooks.partial_after_ms` of the tests' config.
const PARTIAL_AFTER_MS: u64 = 500;
/// `diagnostics.check_timeout_ms`: the pipeline's own guard is this plus 10 s.
const CHECK_TIMEOUT_MS: u64 = 1_000;

/// A workspace, its ephemeral pipeline and the stand-in's calls.
struct Bench {
    _dir: tempfile::TempDir,
    root: PathBuf,
    handle: PipelineHandle,
    calls: Calls,
}

impl Bench {
    /// A workspace holding `files` (workspace-relative), checked by `sources`; partial
    /// answers never wait for project-wide sources (`hooks.knock_on_wait_ms = 0`).
    fn start(sources: Vec<(SourceInfo, &str)>, files: &[&str]) -> Bench {
        Bench::start_with(sources, files, 0)
    }

    /// [`Bench::start`] with `hooks.knock_on_wait_ms`.
    fn start_with(
        sources: Vec<(SourceInfo, &str)>,
        files: &[&str],
        knock_on_wait_ms: u64,
    ) -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for f in files {
            let path = root.join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x\n").unwrap();
        }
        let mut config = Config::default();
        config.hooks.timeout_ms = HOOK_TIMEOUT_MS;
        config.hooks.partial_after_ms = PARTIAL_AFTER_MS;
        config.hooks.knock_on_wait_ms = knock_on_wait_ms;
        config.diagnostics.check_timeout_ms = CHECK_TIMEOUT_MS;
        let (checker, calls) = StandIn::start(sources);
        let handle = Pipeline::start_ephemeral(&root, Arc::new(config), checker).unwrap();
        Bench {
            _dir: dir,
            root,
            handle,
            calls,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn paths(&self, rels: &[&str]) -> Vec<PathBuf> {
        rels.iter().map(|r| self.path(r)).collect()
    }

    /// Report an edit of `rels` (every one accepted); returns its time, a `wait`'s `since`.
    async fn edit(&self, rels: &[&str]) -> u64 {
        let since = spec::now_ms();
        let out = self
            .handle
            .edited(self.paths(rels), EditOrigin::Control)
            .await;
        assert_eq!(
            out.accepted.len(),
            rels.len(),
            "rejected: {:?}",
            out.rejected
        );
        since
    }

    /// Park a `wait` for `rels` (deadline: the config's hook timeout after `since`).
    fn wait(&self, rels: &[&str], since: u64, partial: bool) -> JoinHandle<WaitOutcome> {
        let (handle, paths) = (self.handle.clone(), self.paths(rels));
        tokio::spawn(async move { handle.wait(paths, since, None, partial).await })
    }

    /// Park a `wait` for `rels` of the agent `session` (see `diagnostics::late`).
    fn wait_as(&self, rels: &[&str], since: u64, session: &str) -> JoinHandle<WaitOutcome> {
        let (handle, paths) = (self.handle.clone(), self.paths(rels));
        let session = Some(session.to_owned());
        tokio::spawn(async move { handle.wait_for(paths, since, None, true, session).await })
    }

    /// The session entry of `rel`, once everything ran.
    async fn entry(&self, rel: &str) -> FileEntry {
        settle().await;
        let review = self.handle.review().await;
        review
            .files
            .into_iter()
            .find(|f| f.key == rel)
            .map(|f| f.entry)
            .unwrap_or_else(|| panic!("{rel} is not in the session"))
    }

    /// The number of files in the session.
    async fn session_files(&self) -> usize {
        settle().await;
        self.handle.status().await.session_files
    }
}

/// The messages of an entry's items.
fn messages(e: &FileEntry) -> Vec<&str> {
    e.items.iter().map(|i| i.message.as_str()).collect()
}

fn running(e: &FileEntry) -> Vec<&str> {
    e.running().collect()
}

/// The outcome of a wait that must have been answered by now.
async fn answered(w: JoinHandle<WaitOutcome>) -> WaitOutcome {
    settle().await;
    assert!(w.is_finished(), "the waiter is still parked");
    w.await.unwrap()
}

/// A language server and a project-wide checker, both for `.ts` files.
fn lsp_and_tsc() -> Vec<(SourceInfo, &'static str)> {
    vec![
        (per_file(0, "lsp"), "ts"),
        (project_wide(1, "tsc", &["package.json"]), "ts"),
    ]
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_edits_is_one_batch_per_source() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts", "b.ts", "c.ts"]);
    // Three reports in one burst (the actor sees them together), one path twice.
    for rels in [["a.ts"], ["b.ts"], ["a.ts"]] {
        b.handle
            .edited_nowait(b.paths(&rels), EditOrigin::Control)
            .await;
    }
    settle().await;
    let calls = b.calls.take();
    let seen: Vec<_> = calls.iter().map(|c| (c.source, c.names())).collect();
    assert_eq!(
        seen,
        vec![
            (0, vec!["a.ts".into(), "b.ts".into()]),
            (1, vec!["a.ts".into(), "b.ts".into()])
        ]
    );
    // Only a project-wide run is asked for every problem of its project.
    assert!(!calls[0].request.report_all && calls[1].request.report_all);
    assert_ne!(calls[0].request.id, calls[1].request.id);
}

#[tokio::test(start_paused = true)]
async fn a_late_answer_for_an_older_generation_is_dropped_and_the_file_checked_again() {
    let mut b = Bench::start(vec![(per_file(0, "lsp"), "ts")], &["a.ts"]);
    b.edit(&["a.ts"]).await;
    let first = b.calls.one().await;
    let since = b.edit(&["a.ts"]).await;
    let second = b.calls.one().await;
    assert_eq!(
        second.names(),
        vec!["a.ts"],
        "the new content is checked again"
    );
    let w = b.wait(&["a.ts"], since, false);
    let a = b.path("a.ts");
    first.answer(vec![(&a, vec![error(1, "lsp", "for the old content")])]);
    let e = b.entry("a.ts").await;
    assert_eq!((e.checked_at, e.items.len()), (0, 0), "{e:?}");
    assert!(!w.is_finished());
    second.answer(vec![(&a, vec![error(2, "lsp", "for the new content")])]);
    let out = answered(w).await;
    assert!(out.complete);
    assert_eq!(
        messages(&out.entries.files["a.ts"]),
        vec!["for the new content"]
    );
}

/// Issue 40.2: a newer edit cancels a superseded source's run in flight (the project's
/// tests over content that is gone) and one run starts for both edits' files; its late
/// answer is not taken, and the next edit cancels again.
#[tokio::test(start_paused = true)]
async fn a_newer_edit_cancels_a_superseded_run_and_checks_both_files_at_once() {
    let tests = SourceInfo {
        superseded: true,
        serves: Vec::new(),
        ..project_wide(1, "tests", &["pyproject.toml"])
    };
    let mut b = Bench::start(vec![(tests, "py")], &["pyproject.toml", "a.py", "b.py"]);
    b.edit(&["a.py"]).await;
    let first = b.calls.one().await;
    assert_eq!(first.names(), vec!["a.py"]);
    b.edit(&["b.py"]).await;
    let second = b.calls.one().await;
    assert!(first.is_cancelled(), "the older run goes on");
    assert_eq!(second.names(), vec!["a.py", "b.py"]);
    let (a, bp) = (b.path("a.py"), b.path("b.py"));
    first.answer(vec![(&a, vec![error(1, "pytest", "stale")])]);
    second.answer(vec![(&bp, vec![error(2, "pytest", "fresh")])]);
    assert!(
        messages(&b.entry("a.py").await).is_empty(),
        "the cancelled run's answer"
    );
    assert_eq!(messages(&b.entry("b.py").await), vec!["fresh"]);
    assert_ne!(b.entry("a.py").await.checked_at, 0);
    assert!(
        b.calls.take().is_empty(),
        "no follow-up after the run that replaced it"
    );
    // And again: each newer edit cancels the run in flight.
    b.edit(&["a.py"]).await;
    let third = b.calls.one().await;
    b.edit(&["a.py"]).await;
    let fourth = b.calls.one().await;
    assert!(third.is_cancelled());
    assert_eq!(fourth.names(), vec!["a.py"]);
    fourth.clean();
    assert_eq!(messages(&b.entry("a.py").await), Vec::<&str>::new());
}

#[tokio::test(start_paused = true)]
async fn a_project_wide_source_runs_once_per_project_with_one_follow_up() {
    let files = [
        "app1/package.json",
        "app1/a.ts",
        "app1/c.ts",
        "app2/package.json",
        "app2/b.ts",
    ];
    let mut b = Bench::start(
        vec![(project_wide(1, "tsc", &["package.json"]), "ts")],
        &files,
    );
    b.edit(&["app1/a.ts", "app2/b.ts"]).await;
    settle().await;
    let mut runs = b.calls.take();
    let projects: Vec<_> = runs.iter().map(|c| c.names()).collect();
    assert_eq!(
        projects,
        vec![vec!["a.ts"], vec!["b.ts"]],
        "one run per project"
    );
    // Edits while app1's run is in flight start nothing yet, however many.
    b.edit(&["app1/a.ts"]).await;
    b.edit(&["app1/c.ts"]).await;
    b.edit(&["app1/a.ts"]).await;
    settle().await;
    assert!(b.calls.take().is_empty());
    let (app1, app2) = (runs.remove(0), runs.remove(0));
    let a = b.path("app1/a.ts");
    app1.answer(vec![(&a, vec![error(1, "tsc", "stale")])]);
    // One follow-up collects every file dirtied meanwhile.
    let follow_up = b.calls.one().await;
    assert_eq!(follow_up.names(), vec!["a.ts", "c.ts"]);
    assert!(
        messages(&b.entry("app1/a.ts").await).is_empty(),
        "the stale answer"
    );
    app2.clean();
    follow_up.answer(vec![(&a, vec![error(1, "tsc", "fresh")])]);
    assert_eq!(messages(&b.entry("app1/a.ts").await), vec!["fresh"]);
    assert_ne!(b.entry("app1/c.ts").await.checked_at, 0);
    assert_ne!(b.entry("app2/b.ts").await.checked_at, 0);
    assert!(b.calls.take().is_empty(), "no run after the follow-up");
}

#[tokio::test(start_paused = true)]
async fn a_warm_sources_projects_due_at_once_are_one_check_split_per_project() {
    let files = [
        "p1/pyproject.toml",
        "p1/a.py",
        "p2/pyproject.toml",
        "p2/b.py",
        "p3/pyproject.toml",
        "p3/c.py",
    ];
    let mut warm = project_wide(1, "pyright", &["pyproject.toml"]);
    warm.warm = true;
    let mut b = Bench::start(vec![(warm, "py")], &files);
    b.edit(&["p1/a.py", "p2/b.py", "p3/c.py"]).await;
    let joint = b.calls.one().await;
    assert_eq!(joint.names(), vec!["a.py", "b.py", "c.py"], "one check");
    assert!(joint.request.report_all);
    let (a, bb) = (b.path("p1/a.py"), b.path("p2/b.py"));
    // An edit while the joint check is in flight waits for its project's follow-up.
    b.edit(&["p1/a.py"]).await;
    settle().await;
    assert!(b.calls.take().is_empty(), "p1 is in flight");
    joint.answer(vec![
        (&a, vec![error(1, "pyright", "stale a")]),
        (&bb, vec![error(2, "pyright", "b")]),
    ]);
    // Split per project: p2 and p3 are answered, p1's answer is for an older text; only
    // p1 has a follow-up.
    let follow_up = b.calls.one().await;
    assert_eq!(follow_up.names(), vec!["a.py"]);
    assert_eq!(messages(&b.entry("p2/b.py").await), vec!["b"]);
    assert_ne!(b.entry("p3/c.py").await.checked_at, 0);
    assert!(
        messages(&b.entry("p1/a.py").await).is_empty(),
        "the stale answer"
    );
    follow_up.answer(vec![(&a, vec![error(1, "pyright", "fresh a")])]);
    assert_eq!(messages(&b.entry("p1/a.py").await), vec!["fresh a"]);
    assert_eq!(messages(&b.entry("p2/b.py").await), vec!["b"]);
    assert!(b.calls.take().is_empty(), "no run after the follow-up");
}

#[tokio::test(start_paused = true)]
async fn a_waiter_is_complete_once_every_source_answered_with_their_items_merged() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts", "b.ts"]);
    let since = b.edit(&["a.ts", "b.ts"]).await;
    let w = b.wait(&["a.ts", "b.ts"], since, false);
    settle().await;
    let mut calls = b.calls.take();
    let (lsp, tsc) = (calls.remove(0), calls.remove(0));
    let (a, bb) = (b.path("a.ts"), b.path("b.ts"));
    lsp.answer(vec![(&a, vec![error(1, "ts", "Cannot find name 'x'")])]);
    settle().await;
    assert!(!w.is_finished(), "tsc has not answered");
    tsc.answer(vec![
        // The same problem as the language server's: listed once.
        (&a, vec![error(1, "tsc", "Cannot find name 'x'")]),
        (
            &bb,
            vec![error(3, "tsc", "Type 'string' is not assignable")],
        ),
    ]);
    let out = answered(w).await;
    assert!(out.complete && !out.partial);
    let (ea, eb) = (&out.entries.files["a.ts"], &out.entries.files["b.ts"]);
    assert_eq!(messages(ea), vec!["Cannot find name 'x'"]);
    assert_eq!(messages(eb), vec!["Type 'string' is not assignable"]);
    assert!(ea.checked_at >= since && eb.checked_at >= since);
    assert!(running(ea).is_empty() && running(eb).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_partial_waiter_is_answered_at_the_grace_once_only_project_wide_sources_run() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts"]);
    let since = b.edit(&["a.ts"]).await;
    let partial = b.wait(&["a.ts"], since, true);
    let full = b.wait(&["a.ts"], since, false);
    settle().await;
    let mut calls = b.calls.take();
    let (lsp, tsc) = (calls.remove(0), calls.remove(0));
    let a = b.path("a.ts");
    lsp.answer(vec![(&a, vec![error(1, "ts", "Cannot find name 'x'")])]);
    settle().await;
    assert!(!partial.is_finished(), "answered before the grace");
    tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
    let out = answered(partial).await;
    assert!(out.partial && !out.complete);
    let e = &out.entries.files["a.ts"];
    assert_eq!(messages(e), vec!["Cannot find name 'x'"]);
    assert_eq!(
        running(e),
        vec!["tsc"],
        "the feedback names what still runs"
    );
    assert!(
        !full.is_finished(),
        "only a waiter that asked gets a partial answer"
    );
    tsc.clean();
    let out = answered(full).await;
    assert!(out.complete && !out.partial);
}

/// A project-wide source that was quick (or never ran) is waited for before a partial
/// answer, up to `hooks.knock_on_wait_ms` after the edit; one whose last run took longer is
/// not waited for at the next edit.
#[tokio::test(start_paused = true)]
async fn a_partial_answer_waits_for_a_quick_project_wide_source_only() {
    const KNOCK_ON_MS: u64 = 2_000;
    let mut b = Bench::start_with(lsp_and_tsc(), &["a.ts"], KNOCK_ON_MS);
    let a = b.path("a.ts");
    // 1. tsc never ran: awaited. Past the grace the hook still waits, and gets tsc's answer.
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait(&["a.ts"], since, true);
    settle().await;
    let mut calls = b.calls.take();
    let (lsp, tsc) = (calls.remove(0), calls.remove(0));
    lsp.clean();
    tokio::time::sleep(Duration::from_millis(2 * PARTIAL_AFTER_MS)).await;
    assert!(!w.is_finished(), "answered without the quick tsc");
    tsc.answer(vec![(
        &a,
        vec![error(2, "ts", "Expected 1 arguments, but got 0.")],
    )]);
    let out = answered(w).await;
    assert!(out.complete, "tsc answered within the knock-on wait");
    assert_eq!(
        messages(&out.entries.files["a.ts"]),
        vec!["Expected 1 arguments, but got 0."]
    );
    // 2. tsc was quick (1 s): awaited again, but only until the knock-on wait ends.
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait(&["a.ts"], since, true);
    settle().await;
    let mut calls = b.calls.take();
    let (lsp, tsc) = (calls.remove(0), calls.remove(0));
    lsp.clean();
    tokio::time::sleep(Duration::from_millis(KNOCK_ON_MS - 100)).await;
    assert!(!w.is_finished(), "answered before the knock-on wait ended");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let out = answered(w).await;
    assert!(out.partial && !out.complete);
    assert_eq!(running(&out.entries.files["a.ts"]), vec!["tsc"]);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    tsc.clean(); // this run took 3 s: slow
    settle().await;
    // 3. One slow run out of the last ones: still awaited (a busy moment is not a verdict).
    // Two more slow runs and the quick one is out of the last `RUNS_KEPT`.
    for n in 0..schedule::RUNS_KEPT {
        let since = b.edit(&["a.ts"]).await;
        let w = b.wait(&["a.ts"], since, true);
        settle().await;
        let mut calls = b.calls.take();
        let (lsp, tsc) = (calls.remove(0), calls.remove(0));
        lsp.clean();
        tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
        if n + 1 < schedule::RUNS_KEPT {
            assert!(!w.is_finished(), "run {n}: a recent run was quick");
            tokio::time::sleep(Duration::from_millis(KNOCK_ON_MS)).await;
            assert!(answered(w).await.partial);
            tsc.clean(); // 2.5 s: slow
        } else {
            // 4. Every one of the last runs was slow: the answer comes at the grace.
            let out = answered(w).await;
            assert!(out.partial && !out.complete);
            assert_eq!(running(&out.entries.files["a.ts"]), vec!["tsc"]);
            tsc.clean();
        }
        settle().await;
    }
}

/// A source that handles a file only inside a project (the C compiler over a compile
/// database) is not asked about a file with no project marker at or above it; once one
/// appears, it is.
#[tokio::test(start_paused = true)]
async fn a_source_that_needs_a_project_is_asked_only_inside_one() {
    let cc = SourceInfo {
        needs_project: true,
        ..project_wide(1, "cc", &["compile_commands.json"])
    };
    let mut b = Bench::start(vec![(per_file(0, "clangd"), "c"), (cc, "c")], &["src/a.c"]);
    b.edit(&["src/a.c"]).await;
    let calls = b.calls.take();
    let asked: Vec<_> = calls.iter().map(|c| c.source).collect();
    assert_eq!(asked, vec![0], "no compile database: clangd alone");
    for c in calls {
        c.clean();
    }
    settle().await;
    std::fs::write(b.root.join("compile_commands.json"), "[]").unwrap();
    b.edit(&["src/a.c"]).await;
    let asked: Vec<_> = b.calls.take().iter().map(|c| c.source).collect();
    assert_eq!(asked, vec![0, 1], "inside a project now");
}

#[tokio::test(start_paused = true)]
async fn a_partial_waiter_past_its_grace_still_waits_for_the_fast_sources() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts"]);
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait(&["a.ts"], since, true);
    settle().await;
    let mut calls = b.calls.take();
    let (lsp, _tsc) = (calls.remove(0), calls.remove(0));
    tokio::time::sleep(Duration::from_millis(2 * PARTIAL_AFTER_MS)).await;
    assert!(!w.is_finished(), "the language server has not answered");
    lsp.clean();
    let out = answered(w).await;
    assert!(out.partial && !out.complete);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_at_its_deadline_is_answered_incomplete() {
    let mut b = Bench::start(vec![(per_file(0, "lsp"), "ts")], &["a.ts"]);
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait(&["a.ts"], since, true);
    let _never = b.calls.one().await;
    tokio::time::sleep(Duration::from_millis(HOOK_TIMEOUT_MS - 1_000)).await;
    assert!(!w.is_finished(), "answered before its deadline");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let out = answered(w).await;
    assert!(!out.complete && !out.partial);
    let e = &out.entries.files["a.ts"];
    assert_eq!(e.checked_at, 0);
    assert_eq!(running(e), vec!["lsp"]);
}

#[tokio::test(start_paused = true)]
async fn a_failed_check_becomes_an_explanatory_item_and_settles_the_file() {
    let mut b = Bench::start(vec![(per_file(0, "lsp"), "ts")], &["a.ts"]);
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait(&["a.ts"], since, false);
    b.calls.one().await.fail("the language server crashed");
    let out = answered(w).await;
    assert!(out.complete);
    let e = &out.entries.files["a.ts"];
    assert_eq!(
        messages(e),
        vec!["not checked: the language server crashed"]
    );
    assert_eq!((e.items[0].severity, e.warnings), (Severity::Warning, 1));
    assert_eq!(e.items[0].source, "openfiles");
}

#[tokio::test(start_paused = true)]
async fn a_check_that_never_comes_back_is_cut_off_by_the_pipelines_guard() {
    let mut b = Bench::start(vec![(per_file(0, "lsp"), "ts")], &["a.ts"]);
    b.edit(&["a.ts"]).await;
    let _never = b.calls.one().await;
    let guard_ms = CHECK_TIMEOUT_MS + 10_000;
    tokio::time::sleep(Duration::from_millis(guard_ms - 10)).await;
    assert_eq!(b.entry("a.ts").await.checked_at, 0, "cut off too early");
    tokio::time::sleep(Duration::from_millis(10)).await;
    let e = b.entry("a.ts").await;
    assert_ne!(e.checked_at, 0);
    assert_eq!(
        messages(&e),
        vec![format!(
            "not checked: lsp did not answer within {guard_ms} ms"
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn files_no_checker_may_read_or_handles_settle_without_a_check() {
    let mut b = Bench::start(
        vec![(per_file(0, "lsp"), "ts")],
        &["a.ts", ".env.ts", "notes.xyz"],
    );
    let rels = ["a.ts", ".env.ts", "notes.xyz"];
    let since = b.edit(&rels).await;
    let w = b.wait(&[".env.ts", "notes.xyz"], since, false);
    let only = b.calls.one().await;
    assert_eq!(
        only.names(),
        vec!["a.ts"],
        "a sensitive file is never handed over"
    );
    let out = answered(w).await;
    assert!(out.complete);
    let note = |rel: &str| -> Vec<Item> { out.entries.files[rel].items.clone() };
    assert_eq!(note(".env.ts"), vec![session::sensitive_item()]);
    assert_eq!(
        note("notes.xyz"),
        vec![session::unhandled_item(Path::new("notes.xyz"))]
    );
}

#[tokio::test(start_paused = true)]
async fn a_project_wide_report_that_changes_an_edited_file_asks_its_other_sources_again() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts", "b.ts", "c.ts"]);
    b.edit(&["a.ts", "b.ts"]).await;
    settle().await;
    for c in b.calls.take() {
        c.clean();
    }
    assert_ne!(b.entry("b.ts").await.checked_at, 0);
    // Editing a.ts alone: the project-wide run also reports on b.ts (and finds it broken).
    b.edit(&["a.ts"]).await;
    settle().await;
    let mut calls = b.calls.take();
    let (_lsp, tsc) = (calls.remove(0), calls.remove(0));
    assert_eq!(tsc.names(), vec!["a.ts"]);
    assert_eq!(names(&tsc.request.also_report), vec!["b.ts"]);
    let (bb, c) = (b.path("b.ts"), b.path("c.ts"));
    tsc.answer(vec![
        (
            &bb,
            vec![error(4, "tsc", "Expected 2 arguments, but got 1")],
        ),
        // A file nobody edited: without a baseline it is never blamed on the edit.
        (&c, vec![error(1, "tsc", "already broken")]),
    ]);
    let again = b.calls.one().await;
    assert_eq!((again.source, again.names()), (0, vec!["b.ts".into()]));
    let e = b.entry("b.ts").await;
    assert_eq!(messages(&e), vec!["Expected 2 arguments, but got 1"]);
    assert_eq!((e.checked_at, running(&e)), (0, vec!["lsp"]));
    assert_eq!(b.session_files().await, 2, "c.ts stays out of the session");
    again.clean();
    let e = b.entry("b.ts").await;
    assert_ne!(e.checked_at, 0);
    assert_eq!(messages(&e), vec!["Expected 2 arguments, but got 1"]);
}

/// A checker without sources whose `sources_for` blocks while its gate is shut: the actor
/// stalls inside it, as an actor busy with a long burst would.
#[derive(Default)]
struct Gate {
    shut: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
    stalled: std::sync::atomic::AtomicBool,
}

impl Gate {
    fn open(&self) {
        *self.shut.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.opened.notify_all();
    }
}

/// Opens the gate when dropped, so a failing test does not leave the actor blocked (and the
/// runtime waiting for it).
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

impl crate::diagnostics::Checker for Gate {
    fn sources_for(&self, _: &Path) -> Vec<SourceInfo> {
        let shut = self.shut.lock().unwrap();
        if *shut {
            self.stalled
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        drop(self.opened.wait_while(shut, |s| *s).unwrap());
        Vec::new()
    }

    fn check(
        &self,
        _: crate::diagnostics::SourceId,
        _: openfiles_plugin_api::CheckRequest,
    ) -> futures_util::future::BoxFuture<
        'static,
        Result<openfiles_plugin_api::CheckResponse, crate::diagnostics::CheckError>,
    > {
        Box::pin(async { Ok(openfiles_plugin_api::CheckResponse::default()) })
    }
}

/// A flood of edits at an actor that cannot keep up waits at the channel's bound instead of
/// queueing without limit, and once the actor moves again every edit reaches the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_edits_waits_at_the_channels_bound_and_none_is_lost() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const EDITS: usize = 4 * super::CHANNEL;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let files: Vec<PathBuf> = (0..=EDITS).map(|i| root.join(format!("{i}.x"))).collect();
    for f in &files {
        std::fs::write(f, "x\n").unwrap();
    }
    let gate = Arc::new(Gate::default());
    *gate.shut.lock().unwrap() = true;
    let _open = OpenOnDrop(gate.clone());
    let handle =
        Pipeline::start_ephemeral(&root, Arc::new(Config::default()), gate.clone()).unwrap();
    // The first edit stalls the actor in its dispatch.
    handle
        .edited_nowait(vec![files[0].clone()], EditOrigin::Control)
        .await;
    while !gate.stalled.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sent = Arc::new(AtomicUsize::new(0));
    let flood = {
        let (handle, sent, files) = (handle.clone(), sent.clone(), files.clone());
        tokio::spawn(async move {
            for f in &files[1..] {
                handle
                    .edited_nowait(vec![f.clone()], EditOrigin::Control)
                    .await;
                sent.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let queued = sent.load(Ordering::SeqCst);
    assert!(
        queued <= super::CHANNEL,
        "{queued} edits queued in front of a stalled actor (bound {})",
        super::CHANNEL
    );
    gate.open();
    flood.await.unwrap();
    assert_eq!(handle.status().await.session_files, EDITS + 1);
}

#[tokio::test(start_paused = true)]
async fn a_result_after_the_deadline_goes_once_to_the_next_wait_of_its_session() {
    let mut b = Bench::start(vec![(per_file(0, "lsp"), "ts")], &["a.ts", "b.ts", "c.ts"]);
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait_as(&["a.ts"], since, "claude/s");
    let late = b.calls.one().await;
    tokio::time::sleep(Duration::from_millis(HOOK_TIMEOUT_MS)).await;
    let out = answered(w).await;
    assert!(!out.complete && !out.partial && out.earlier.is_none());
    let st = b.handle.status().await;
    assert_eq!((st.deadline_notes, st.owed, st.late_deliveries), (1, 1, 0));
    late.answer(vec![(&b.path("a.ts"), vec![error(1, "lsp", "boom")])]);
    settle().await;

    // Another session is owed nothing.
    let since = b.edit(&["b.ts"]).await;
    let w = b.wait_as(&["b.ts"], since, "claude/other");
    b.calls.one().await.clean();
    let out = answered(w).await;
    assert!(out.complete && out.earlier.is_none());

    // Two waits of the session at once: one of them gets the result.
    let since = b.edit(&["c.ts"]).await;
    let (w1, w2) = (
        b.wait_as(&["c.ts"], since, "claude/s"),
        b.wait_as(&["c.ts"], since, "claude/s"),
    );
    b.calls.one().await.clean();
    let (o1, o2) = (answered(w1).await, answered(w2).await);
    let earlier: Vec<_> = [o1, o2].into_iter().filter_map(|o| o.earlier).collect();
    assert_eq!(earlier.len(), 1, "handed out once");
    assert_eq!(messages(&earlier[0].files["a.ts"]), vec!["boom"]);
    assert_eq!(earlier[0].files.len(), 1, "only the owed file");

    // And never again.
    let w = b.wait_as(&["c.ts"], since, "claude/s");
    assert!(answered(w).await.earlier.is_none());
    let st = b.handle.status().await;
    assert_eq!((st.deadline_notes, st.owed, st.late_deliveries), (1, 0, 1));
}

#[tokio::test(start_paused = true)]
async fn a_file_edited_again_by_the_session_is_no_longer_owed() {
    let mut b = Bench::start(vec![(per_file(0, "lsp"), "ts")], &["a.ts"]);
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait_as(&["a.ts"], since, "s");
    let first = b.calls.one().await;
    tokio::time::sleep(Duration::from_millis(HOOK_TIMEOUT_MS)).await;
    answered(w).await;
    first.answer(vec![(&b.path("a.ts"), vec![error(1, "lsp", "old")])]);
    // The agent edits the file again: that wait tells about it, the debt is gone.
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait_as(&["a.ts"], since, "s");
    b.calls.one().await.clean();
    let out = answered(w).await;
    assert!(out.complete && out.earlier.is_none());
    assert_eq!(b.handle.status().await.owed, 0);
}

/// Issue 42 (1): what a project-wide source finds after the hook answered partially is owed
/// to the session: its next wait gets it first, once, without what the partial answer showed
/// (the same problem in the checker's words too); `status` counts it meanwhile.
#[tokio::test(start_paused = true)]
async fn a_problem_found_after_a_partial_answer_goes_once_to_the_next_wait_of_its_session() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts", "b.ts", "c.ts"]);
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait_as(&["a.ts"], since, "claude/s");
    let mut calls = b.calls.take_n(2).await;
    let tsc = calls.pop().unwrap();
    calls
        .pop()
        .unwrap()
        .answer(vec![(&b.path("a.ts"), vec![error(1, "lsp", "own")])]);
    tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
    let out = answered(w).await;
    assert!(out.partial && out.earlier.is_none());
    assert_eq!(messages(&out.entries.files["a.ts"]), vec!["own"]);
    let st = b.handle.status().await;
    assert_eq!(
        (st.deadline_notes, st.owed),
        (0, 0),
        "nothing found late yet"
    );

    // tsc reports the same problem (its words) and a new one.
    let mut same = error(1, "tsc", "own, in tsc's words");
    same.code = Some("TS2554".into());
    tsc.answer(vec![(&b.path("a.ts"), vec![same, error(7, "tsc", "late")])]);
    settle().await;
    assert_eq!(b.handle.status().await.owed, 1);

    // Another session is owed nothing.
    let since = b.edit(&["b.ts"]).await;
    let w = b.wait_as(&["b.ts"], since, "claude/other");
    for c in b.calls.take_n(2).await {
        c.clean();
    }
    assert!(answered(w).await.earlier.is_none());

    // The session's next wait gets the new problem alone, once.
    let since = b.edit(&["c.ts"]).await;
    let w = b.wait_as(&["c.ts"], since, "claude/s");
    for c in b.calls.take_n(2).await {
        c.clean();
    }
    let out = answered(w).await;
    let earlier = out.earlier.expect("the late problem");
    assert_eq!(earlier.files.len(), 1, "only the owed file");
    assert_eq!(messages(&earlier.files["a.ts"]), vec!["late"]);
    assert_eq!(earlier.files["a.ts"].errors, 1);
    let w = b.wait_as(&["c.ts"], since, "claude/s");
    assert!(answered(w).await.earlier.is_none(), "never again");
    let st = b.handle.status().await;
    assert_eq!((st.deadline_notes, st.owed, st.late_deliveries), (0, 0, 1));
}

/// A project-wide source that answers early (`CheckResponse::more`, the warm pyright once the
/// edited file and its callers were re-checked): the edit's own hook is answered from it;
/// a follow-up check of the same files runs at once (no new edit); what it finds beyond the
/// early answer is owed to the session once, nothing doubled; an early answer followed by a
/// revert owes nothing. (Problems in files nobody edited need a baseline, which this
/// ephemeral pipeline has not: they go the same way, see `late.rs`.)
#[tokio::test(start_paused = true)]
async fn an_early_answer_is_followed_up_and_what_the_rest_finds_is_owed() {
    const KNOCK_ON_MS: u64 = 2_000;
    let mut b = Bench::start_with(lsp_and_tsc(), &["a.ts", "d.ts"], KNOCK_ON_MS);
    let a = b.path("a.ts");
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait_as(&["a.ts"], since, "s");
    let mut calls = b.calls.take_n(2).await;
    let tsc = calls.pop().unwrap();
    calls.pop().unwrap().clean();
    tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
    assert!(!w.is_finished(), "answered without the awaited tsc");
    tsc.answer_more(vec![(&a, vec![error(3, "tsc", "call broken")])]);
    let out = answered(w).await;
    assert!(out.partial && !out.complete, "the rest is still owed");
    assert_eq!(messages(&out.entries.files["a.ts"]), vec!["call broken"]);
    assert_eq!(running(&out.entries.files["a.ts"]), vec!["tsc"]);
    assert_eq!(
        b.entry("a.ts").await.checked_at,
        0,
        "not settled before the rest"
    );

    // The follow-up: the same file, at once, with no new edit.
    let follow = b.calls.one().await;
    assert_eq!(
        (follow.source, follow.names()),
        (1, vec!["a.ts".to_owned()])
    );
    follow.answer(vec![(
        &a,
        vec![
            error(3, "tsc", "call broken"),
            error(9, "tsc", "more broken"),
        ],
    )]);
    settle().await;
    assert!(
        b.entry("a.ts").await.checked_at > 0,
        "the follow-up completes it"
    );
    assert_eq!(b.handle.status().await.owed, 1);
    assert!(
        b.calls.take().is_empty(),
        "no follow-up of a complete answer"
    );

    // The session's next wait gets what the rest found, once; what it was shown not.
    let since = b.edit(&["d.ts"]).await;
    let w = b.wait_as(&["d.ts"], since, "s");
    for c in b.calls.take_n(2).await {
        c.clean();
    }
    let out = answered(w).await;
    let earlier = out.earlier.expect("what the follow-up found");
    assert_eq!(messages(&earlier.files["a.ts"]), vec!["more broken"]);

    // Early again; the agent reverts before the follow-up: nothing owed.
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait_as(&["a.ts"], since, "s");
    let mut calls = b.calls.take_n(2).await;
    let tsc = calls.pop().unwrap();
    calls.pop().unwrap().clean();
    tsc.answer_more(vec![(&a, vec![error(4, "tsc", "broken again")])]);
    tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
    assert!(answered(w).await.partial);
    let follow = b.calls.one().await;
    b.handle
        .edited_nowait(b.paths(&["a.ts"]), EditOrigin::Control)
        .await;
    follow.answer(vec![(&a, vec![error(6, "tsc", "stale")])]);
    for c in b.calls.take_n(2).await {
        c.clean();
    }
    settle().await;
    assert_eq!(b.handle.status().await.owed, 0);
}

/// Issue 42.2: the agent's hook reporting an edit the watcher noticed first (the same
/// content) is that edit — no second generation, no second check — and its wait counts from
/// when the watcher noticed it; a later write is a new edit again.
#[tokio::test(start_paused = true)]
async fn a_hooks_edit_the_watcher_noticed_first_is_that_edit() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts"]);
    let before = spec::now_ms();
    b.handle.edited(b.paths(&["a.ts"]), EditOrigin::Watch).await;
    let calls = b.calls.take_n(2).await;
    let out = b
        .handle
        .edited(b.paths(&["a.ts"]), EditOrigin::Control)
        .await;
    assert_eq!(out.accepted, b.paths(&["a.ts"]));
    let since = out.since.expect("the watcher's edit");
    assert!(since >= before && since <= spec::now_ms());
    settle().await;
    assert!(b.calls.take().is_empty(), "the same content checked twice");
    let w = b.wait(&["a.ts"], since, false);
    for c in calls {
        c.clean();
    }
    assert!(answered(w).await.complete);

    // Written again after the watcher's edit: the hook's edit is a new one. A file's mtime
    // comes from the kernel's coarse clock, up to a tick (10 ms at HZ=100) behind the time
    // the pipeline reads: the writes are further apart than that (at 5 ms, the second
    // write's mtime was often not after the watcher's edit, and it was taken for that one).
    std::thread::sleep(Duration::from_millis(30));
    std::fs::write(b.path("a.ts"), "z\n").unwrap();
    b.handle.edited(b.paths(&["a.ts"]), EditOrigin::Watch).await;
    let calls = b.calls.take_n(2).await;
    std::thread::sleep(Duration::from_millis(30));
    std::fs::write(b.path("a.ts"), "y\n").unwrap();
    let out = b
        .handle
        .edited(b.paths(&["a.ts"]), EditOrigin::Control)
        .await;
    assert_eq!(out.since, None);
    for c in calls {
        c.clean();
    }
    let again = b.calls.take_n(2).await;
    assert_eq!(again.len(), 2, "a new edit, checked again");
    for c in again {
        c.clean();
    }
}

/// Issue 42.2: a newer edit does not wait behind the rest of an early answer (the follow-up
/// over the same content): it cancels it and one run checks the files at once, its own
/// early answer naming what it broke. A follow-up that also checks files dirtied while the
/// early run was in flight is a run of its own, followed up as usual.
#[tokio::test(start_paused = true)]
async fn a_newer_edit_cancels_the_rest_of_an_early_answer_and_runs_at_once() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts", "b.ts"]);
    let a = b.path("a.ts");
    b.edit(&["a.ts"]).await;
    let mut calls = b.calls.take_n(2).await;
    let tsc = calls.pop().unwrap();
    calls.pop().unwrap().clean();
    tsc.answer_more(vec![(&a, vec![error(3, "tsc", "call broken")])]);
    let rest = b.calls.one().await;
    assert_eq!((rest.source, rest.names()), (1, vec!["a.ts".to_owned()]));

    b.edit(&["a.ts"]).await;
    let mut calls = b.calls.take_n(2).await;
    calls.sort_by_key(|c| c.source);
    let (lsp, tsc) = (calls.remove(0), calls.remove(0));
    assert!(rest.is_cancelled(), "the rest of the older content goes on");
    assert_eq!((tsc.source, tsc.names()), (1, vec!["a.ts".to_owned()]));
    lsp.clean();
    rest.answer(vec![(&a, vec![error(3, "tsc", "stale")])]);
    tsc.answer_more(vec![(&a, vec![error(4, "tsc", "fresh")])]);
    assert_eq!(messages(&b.entry("a.ts").await), vec!["fresh"]);
    let rest = b.calls.one().await;

    // Edited while an early run is in flight: its follow-up checks b.ts too, and a newer
    // edit waits for it as for any run.
    b.edit(&["a.ts"]).await;
    let mut calls = b.calls.take_n(2).await;
    assert!(rest.is_cancelled());
    calls.sort_by_key(|c| c.source);
    let (lsp, tsc) = (calls.remove(0), calls.remove(0));
    lsp.clean();
    b.edit(&["b.ts"]).await;
    b.calls.one().await.clean();
    tsc.answer_more(vec![(&a, vec![error(5, "tsc", "again")])]);
    let follow = b.calls.one().await;
    assert_eq!(follow.names(), vec!["a.ts", "b.ts"]);
    b.edit(&["a.ts"]).await;
    let lsp = b.calls.one().await;
    assert_eq!(lsp.source, 0, "no tsc run beside the follow-up in flight");
    assert!(!follow.is_cancelled());
    lsp.clean();
    follow.clean();
    b.calls.one().await.clean();
    assert_ne!(b.entry("a.ts").await.checked_at, 0);
}

/// A partial answer after which the slow source finds nothing new owes nothing; a revert
/// before the next wait leaves nothing due either.
#[tokio::test(start_paused = true)]
async fn nothing_new_after_a_partial_answer_and_a_revert_owe_nothing() {
    let mut b = Bench::start(lsp_and_tsc(), &["a.ts", "b.ts"]);
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait_as(&["a.ts"], since, "s");
    let mut calls = b.calls.take_n(2).await;
    let tsc = calls.pop().unwrap();
    calls
        .pop()
        .unwrap()
        .answer(vec![(&b.path("a.ts"), vec![error(1, "lsp", "own")])]);
    tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
    assert!(answered(w).await.partial);
    tsc.answer(vec![(&b.path("a.ts"), vec![error(1, "tsc", "own")])]);
    settle().await;
    assert_eq!(b.handle.status().await.owed, 0);

    // Again, but the file is reverted (edited without a hook: the watcher) before the slow
    // source's late problem could be told: what is due is read from the file as it is now.
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait_as(&["a.ts"], since, "s");
    let mut calls = b.calls.take_n(2).await;
    let tsc = calls.pop().unwrap();
    calls.pop().unwrap().clean();
    tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
    assert!(answered(w).await.partial);
    b.handle
        .edited_nowait(b.paths(&["a.ts"]), EditOrigin::Control)
        .await;
    tsc.answer(vec![(&b.path("a.ts"), vec![error(2, "tsc", "gone")])]);
    for c in b.calls.take_n(2).await {
        c.clean();
    }
    settle().await;
    assert_eq!(b.handle.status().await.owed, 0);
    let since = b.edit(&["b.ts"]).await;
    let w = b.wait_as(&["b.ts"], since, "s");
    for c in b.calls.take_n(2).await {
        c.clean();
    }
    assert!(answered(w).await.earlier.is_none());
}

/// A per-file `lsp` and a warm project-wide `pyright` over `a.py`, the session start's
/// warm-up asked for: the lsp's warm-up check answered, pyright's — its whole first
/// analysis — still running (returned).
async fn warming(knock_on_ms: u64) -> (Bench, Call) {
    let warm = SourceInfo {
        warm: true,
        ..project_wide(1, "pyright", &["pyproject.toml"])
    };
    let mut b = Bench::start_with(
        vec![(per_file(0, "lsp"), "py"), (warm, "py")],
        &["pyproject.toml", "a.py"],
        knock_on_ms,
    );
    assert!(b.handle.warm().await);
    settle().await;
    let mut warmup = b.calls.take();
    assert_eq!(warmup.len(), 2, "the lsp and the pyright warm-up checks");
    warmup.remove(0).clean(); // the lsp's warm-up ends; pyright's analysis goes on
    let pyright_warmup = warmup.remove(0);
    (b, pyright_warmup)
}

/// A project-wide source that keeps a warm server and has not run yet is not waited for
/// while the session start's warm-up still runs (its answer would come after that whole
/// analysis): the partial answer goes out at the grace with the fast source's items. Once
/// the warm-up is done, the same source, still without a run, is waited for again.
#[tokio::test(start_paused = true)]
async fn a_warm_source_still_warming_up_is_not_waited_for() {
    const KNOCK_ON_MS: u64 = 2_000;
    let (mut b, pyright_warmup) = warming(KNOCK_ON_MS).await;
    let a = b.path("a.py");

    let since = b.edit(&["a.py"]).await;
    let w = b.wait(&["a.py"], since, true);
    settle().await;
    let mut calls = b.calls.take();
    let (lsp, pyright) = (calls.remove(0), calls.remove(0));
    lsp.answer(vec![(&a, vec![error(2, "Ruff", "Undefined name `x`")])]);
    tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
    let out = answered(w).await;
    assert!(out.partial && !out.complete, "answered at the grace");
    assert_eq!(
        messages(&out.entries.files["a.py"]),
        vec!["Undefined name `x`"]
    );
    assert_eq!(running(&out.entries.files["a.py"]), vec!["pyright"]);

    // The warm-up is done: the source, which has still not run, is awaited again.
    pyright_warmup.clean();
    settle().await;
    pyright.clean();
    settle().await;
    let _ = b.calls.take();
    let mut b2 = Bench::start_with(
        vec![
            (per_file(0, "lsp"), "py"),
            (
                SourceInfo {
                    warm: true,
                    ..project_wide(1, "pyright", &["pyproject.toml"])
                },
                "py",
            ),
        ],
        &["pyproject.toml", "a.py"],
        KNOCK_ON_MS,
    );
    assert!(b2.handle.warm().await);
    settle().await;
    for c in b2.calls.take() {
        c.clean();
    }
    settle().await;
    let (w, _pyright) = edit_past_the_grace(&mut b2).await;
    assert!(
        !w.is_finished(),
        "a warm source that never ran is awaited after the warm-up"
    );
}

/// Edit `a.py` (of [`warming`]'s bench); the lsp answers clean at once; twice the grace
/// later: the hook's wait and pyright's check.
async fn edit_past_the_grace(b: &mut Bench) -> (JoinHandle<WaitOutcome>, Call) {
    let since = b.edit(&["a.py"]).await;
    let w = b.wait(&["a.py"], since, true);
    settle().await;
    let mut calls = b.calls.take();
    let (lsp, pyright) = (calls.remove(0), calls.remove(0));
    lsp.clean();
    tokio::time::sleep(Duration::from_millis(2 * PARTIAL_AFTER_MS)).await;
    (w, pyright)
}

/// A warm source's run that began during the session start's warm-up (its server's start
/// and whole first analysis) says nothing of what an edit costs: its time is not kept, so the
/// next edit still waits for that source, however long that first run took.
#[tokio::test(start_paused = true)]
async fn a_warm_sources_cold_run_does_not_make_it_slow() {
    const KNOCK_ON_MS: u64 = 2_000;
    let (mut b, pyright_warmup) = warming(KNOCK_ON_MS).await;
    let since = b.edit(&["a.py"]).await;
    let w = b.wait(&["a.py"], since, true);
    settle().await;
    let mut calls = b.calls.take();
    let (lsp, pyright) = (calls.remove(0), calls.remove(0));
    lsp.clean();
    // The first analysis: far longer than the knock-on wait.
    tokio::time::sleep(Duration::from_millis(3 * KNOCK_ON_MS)).await;
    assert!(answered(w).await.partial);
    pyright_warmup.clean();
    settle().await;
    pyright.clean();
    settle().await;

    let (w, pyright) = edit_past_the_grace(&mut b).await;
    assert!(
        !w.is_finished(),
        "the second edit waits for the warm source: its cold run is not its speed"
    );
    pyright.clean();
    let out = answered(w).await;
    assert!(out.complete && !out.partial);
}

/// During a long warm-up (its analysis can outlast many edits) the edits' own runs tell the
/// warm source's speed: its first run is cold and not kept, but once a later one was quick
/// the next edit waits for it, the warm-up still running.
#[tokio::test(start_paused = true)]
async fn edits_during_a_long_warm_up_learn_the_warm_sources_speed() {
    const KNOCK_ON_MS: u64 = 2_000;
    let (mut b, _pyright_warmup) = warming(KNOCK_ON_MS).await;
    // Not waited for while the warm-up runs and no run is kept; the first run is long.
    let (w, pyright) = edit_past_the_grace(&mut b).await;
    assert!(answered(w).await.partial);
    tokio::time::sleep(Duration::from_millis(3 * KNOCK_ON_MS)).await;
    pyright.clean();
    settle().await;
    // Still none kept (the first was cold); this one is quick.
    let (w, pyright) = edit_past_the_grace(&mut b).await;
    assert!(answered(w).await.partial);
    pyright.clean();
    settle().await;
    let (w, pyright) = edit_past_the_grace(&mut b).await;
    assert!(
        !w.is_finished(),
        "a quick run during the warm-up makes the next edit wait for the source"
    );
    pyright.clean();
    assert!(answered(w).await.complete);
}

/// An edit made while the session start's warm-up runs does not wait for a project-wide
/// source with no run kept, warm server or not: its first run competes with the language
/// servers still loading (and its baseline run besides), so the edited file's own problems
/// go out at the grace and what the source finds is owed. An edit after the warm-up waits
/// for it again.
#[tokio::test(start_paused = true)]
async fn an_edit_during_the_warm_up_does_not_wait_for_a_first_project_wide_run() {
    const KNOCK_ON_MS: u64 = 2_000;
    let mut b = Bench::start_with(lsp_and_tsc(), &["package.json", "a.ts"], KNOCK_ON_MS);
    assert!(b.handle.warm().await);
    settle().await;
    let lsp_warmup = b.calls.one().await; // the TypeScript server still loading
    assert_eq!(lsp_warmup.source, 0);

    let since = b.edit(&["a.ts"]).await;
    let w = b.wait(&["a.ts"], since, true);
    settle().await;
    let mut calls = b.calls.take();
    calls.sort_by_key(|c| c.source);
    let (lsp, tsc) = (calls.remove(0), calls.remove(0));
    lsp.answer(vec![(&b.path("a.ts"), vec![error(2, "ts", "own")])]);
    tokio::time::sleep(Duration::from_millis(PARTIAL_AFTER_MS)).await;
    let out = answered(w).await;
    assert!(out.partial && !out.complete, "answered at the grace");
    assert_eq!(messages(&out.entries.files["a.ts"]), vec!["own"]);
    assert_eq!(running(&out.entries.files["a.ts"]), vec!["tsc"]);

    // The warm-up ends; tsc's first run is still going: an edit now waits for it.
    lsp_warmup.clean();
    settle().await;
    let since = b.edit(&["a.ts"]).await;
    let w = b.wait(&["a.ts"], since, true);
    settle().await;
    b.calls.one().await.clean(); // the lsp (tsc's next run waits behind its first)
    tokio::time::sleep(Duration::from_millis(2 * PARTIAL_AFTER_MS)).await;
    assert!(!w.is_finished(), "after the warm-up a first run is awaited");
    tsc.clean();
    settle().await;
    b.calls.one().await.clean(); // tsc's follow-up, over the new content
    assert!(answered(w).await.complete);
}

/// A source that handles several kinds of file (the lsp plugin: a JSON server for
/// `package.json`, a TypeScript one for `.ts`) gets one warm-up file per kind: the shallowest
/// file alone would leave the TypeScript server cold.
#[tokio::test(start_paused = true)]
async fn a_warm_up_checks_one_file_per_kind_a_source_handles() {
    let mut b = Bench::start(
        vec![
            (per_file(0, "lsp"), "ts"),
            (per_file(0, "lsp"), "json"),
            (per_file(0, "lsp"), "toml"),
            (project_wide(1, "tsc", &["package.json"]), "ts"),
            // A project-wide source with a warm server (the pyright plugin's): warmed too.
            (
                SourceInfo {
                    warm: true,
                    superseded: false,
                    serves: Vec::new(),
                    ..project_wide(2, "pyright", &["pyproject.toml"])
                },
                "py",
            ),
        ],
        &[
            "package.json",
            "pyproject.toml",
            "tsconfig.json",
            "src/d.ts",
            "src/e.ts",
            "src/m.py",
        ],
    );
    assert!(b.handle.warm().await);
    settle().await;
    let calls = b.calls.take();
    let mut seen: Vec<_> = calls.iter().map(|c| (c.source, c.names())).collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            (0, vec!["d.ts".into()]),
            (0, vec!["package.json".into()]),
            (2, vec!["m.py".into()])
        ],
        "one file per kind, TOML and tsc left alone"
    );
    for c in calls {
        c.clean();
    }
}

#[tokio::test(start_paused = true)]
async fn a_warm_up_checks_one_shallow_file_per_server_and_leaves_no_session() {
    let mut b = Bench::start(
        lsp_and_tsc(),
        &[
            ".hidden/a.ts",
            "node_modules/pkg/b.ts",
            "src/deep/c.ts",
            "src/d.ts",
            "README.md",
        ],
    );
    assert!(b.handle.warm().await);
    let call = b.calls.one().await;
    // The language server only (tsc keeps no server; a run is real work), on the
    // shallowest file outside hidden and vendored folders.
    assert_eq!(call.source, 0);
    assert_eq!(call.names(), vec!["d.ts"]);
    assert!(!b.handle.warm().await, "one warm-up at a time");
    call.answer(vec![(
        &b.path("src/d.ts"),
        vec![error(1, "lsp", "dropped")],
    )]);
    settle().await;
    assert!(b.calls.take().is_empty(), "nothing else checked");
    let st = b.handle.status().await;
    let warm = st.warm.unwrap();
    assert!(warm.done_at != 0);
    assert_eq!(warm.sources, ["lsp"]);
    assert_eq!(warm.files, [b.path("src/d.ts")]);
    assert_eq!(st.session_files, 0, "a warm-up is no edit");
}

/// Issue 34: a source with late fixes is asked for them after its answer, which a waiter
/// gets at once; the fixes join the items of that answer, and fixes that come after the file
/// changed are dropped. A source without the capability is never asked.
#[tokio::test(start_paused = true)]
async fn late_fixes_follow_the_answer_and_are_dropped_when_the_file_changed() {
    let mut late = per_file(0, "lsp");
    late.late_fixes = true;
    let mut b = Bench::start(
        vec![(late, "ts"), (per_file(1, "other"), "py")],
        &["a.ts", "b.py"],
    );
    let since = b.edit(&["a.ts", "b.py"]).await;
    settle().await;
    let mut calls = b.calls.take();
    calls.sort_by_key(|c| c.source);
    let [check, other]: [_; 2] = calls.try_into().unwrap();
    let (a, py) = (b.path("a.ts"), b.path("b.py"));
    let w = b.wait(&["a.ts"], since, false);
    check.answer(vec![(&a, vec![error(1, "lsp", "typo")])]);
    other.answer(vec![(&py, vec![error(1, "other", "no fixes asked")])]);
    // The waiter has its answer without waiting for fixes.
    let out = answered(w).await;
    assert!(out.complete && out.entries.files["a.ts"].items[0].fixes.is_empty());
    let ask = b.calls.one().await;
    assert_eq!((ask.source, ask.names()), (0, vec!["a.ts".to_owned()]));
    assert!(ask.request.fixes_only);
    let mut fixed = error(1, "lsp", "typo");
    fixed.fixes = vec![openfiles_plugin_api::Fix {
        title: "Change spelling".into(),
        safe: true,
        files: Vec::new(),
    }];
    ask.answer(vec![(&a, vec![fixed.clone()])]);
    let e = b.entry("a.ts").await;
    assert_eq!(e.items[0].fixes[0].title, "Change spelling");

    // Fixes that arrive after the next edit are for text the file no longer has.
    let since = b.edit(&["a.ts"]).await;
    let check = b.calls.one().await;
    check.answer(vec![(&a, vec![error(1, "lsp", "typo")])]);
    let ask = b.calls.one().await;
    b.edit(&["a.ts"]).await;
    ask.answer(vec![(&a, vec![fixed])]);
    let check = b.calls.one().await;
    check.answer(vec![(&a, vec![error(1, "lsp", "typo")])]);
    let w = b.wait(&["a.ts"], since, false);
    let out = answered(w).await;
    assert!(out.entries.files["a.ts"].items[0].fixes.is_empty());
}
