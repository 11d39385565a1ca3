//! Issue 42.7, fleets of agents in worktrees: the worktrees of one repository at one commit
//! share each project-wide source's baseline run (`diagnostics::baseline::shared`), each
//! keeps its own results, and project-wide runs are bounded service-wide (`[service]
//! max_project_runs`, `plugin_host::bound`). Through a real `openfiles serve` with the
//! `instant` fixture as a project-wide source that logs its runs.

use crate::common;
use crate::common::git;

use std::path::{Path, PathBuf};

use common::plugins::{fixture, path_list};
use common::{diagnostics, wait_until, Env};

/// The fixture's log: `(start|end, baseline|edit, workspace)` per line.
fn runs(log: &Path) -> Vec<(String, String, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.splitn(3, ' ');
            Some((f.next()?.into(), f.next()?.into(), f.next()?.into()))
        })
        .collect()
}

/// The most runs that were running at once, by the log's order of starts and ends.
fn most_at_once(runs: &[(String, String, String)]) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for (what, _, _) in runs {
        match what.as_str() {
            "start" => {
                now += 1;
                most = most.max(now);
            }
            _ => now = now.saturating_sub(1),
        }
    }
    most
}

/// An environment whose `instant` fixture is a project-wide source taking `delay_ms` per
/// run, logging to the returned file, with at most `bound` project-wide runs at once.
fn fleet_env(bound: usize, delay_ms: u64) -> (Env, PathBuf) {
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[fixture("instant")]));
    let log = env.dir.path().join("runs.log");
    std::fs::write(
        &env.config,
        format!(
            "[service]\nmax_project_runs = {bound}\n\
             [plugin.instant]\nproject_wide = true\ndelay_ms = {delay_ms}\nlog = {:?}\n",
            log.to_str().unwrap()
        ),
    )
    .unwrap();
    (env, log)
}

/// A repository `repo` with `notes.txt` (an old problem whose message names the checked
/// folder) and worktrees of it at the same commit: their roots, the repository's first.
fn repo_with_worktrees(env: &Env, extra: usize) -> Vec<PathBuf> {
    let repo = env.workspace("repo");
    std::fs::write(repo.join("notes.txt"), "error: old in @ws\n").unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    let mut roots = vec![repo.clone()];
    for n in 0..extra {
        let wt = env.dir.path().join(format!("wt-{n}"));
        git(
            &repo,
            &["worktree", "add", "-q", "--detach", wt.to_str().unwrap()],
        );
        roots.push(wt.canonicalize().unwrap());
    }
    roots
}

/// The agent's session start in `ws` (the warm-up).
fn session_start(env: &Env, ws: &Path) {
    let warm = openfiles_wire::control::Warm(openfiles_wire::control::PathArg {
        path: ws.to_owned(),
        force: false,
    });
    env.client().call(&warm).unwrap();
}

/// Whether `ws`'s `notes.txt` shows its own new problem as introduced and the old one as
/// not (the old one's message names `ws`, as the baseline's run said it of the snapshot).
fn own_items_classified(ws: &Path, mine: &str) -> bool {
    let Some(d) = diagnostics(ws) else {
        return false;
    };
    let Some(entry) = d.files.get("notes.txt") else {
        return false;
    };
    let old = format!("old in {}", ws.display());
    let found = |m: &str, introduced: bool| {
        entry
            .items
            .iter()
            .any(|i| i.message == m && i.introduced == Some(introduced))
    };
    entry.checked_at > 0 && found(mine, true) && found(&old, false)
}

#[test]
fn two_worktrees_at_one_commit_share_one_baseline_run_and_keep_their_own_items() {
    let (env, log) = fleet_env(1, 300);
    let roots = repo_with_worktrees(&env, 1);
    let (a, b) = (&roots[0], &roots[1]);
    let svc = env.serve(&["-w", a.to_str().unwrap(), "-w", b.to_str().unwrap()]);

    for (ws, mine) in [(a, "new in A"), (b, "new in B")] {
        let file = ws.join("notes.txt");
        std::fs::write(&file, format!("error: old in @ws\nerror: {mine}\n")).unwrap();
        env.edited(&[&file]);
    }
    wait_until("each worktree's own problems, classified", || {
        own_items_classified(a, "new in A") && own_items_classified(b, "new in B")
    });

    // Nothing of one worktree's edit or paths in the other's results.
    for (ws, other, other_edit) in [(a, b, "new in B"), (b, a, "new in A")] {
        let text = std::fs::read_to_string(ws.join(".openfiles/diagnostics.json")).unwrap();
        assert!(!text.contains(other_edit), "{}: {text}", ws.display());
        assert!(
            !text.contains(other.to_str().unwrap()),
            "{} names {}: {text}",
            ws.display(),
            other.display()
        );
    }
    let runs = runs(&log);
    let baselines: Vec<_> = runs
        .iter()
        .filter(|(w, k, _)| w == "start" && k == "baseline")
        .collect();
    assert_eq!(baselines.len(), 1, "one baseline run for both: {runs:?}");
    let edits = runs
        .iter()
        .filter(|(w, k, _)| w == "start" && k == "edit")
        .count();
    assert!(edits >= 2, "{runs:?}");
    assert_eq!(most_at_once(&runs), 1, "the bound of one run: {runs:?}");
    svc.terminate();
}

#[test]
fn the_bound_holds_for_edits_in_many_worktrees_at_once() {
    let (env, log) = fleet_env(2, 1000);
    let roots = repo_with_worktrees(&env, 4);
    let mut args = Vec::new();
    for r in &roots {
        args.push("-w");
        args.push(r.to_str().unwrap());
    }
    let svc = env.serve(&args);
    let files: Vec<PathBuf> = roots.iter().map(|r| r.join("notes.txt")).collect();
    for (n, f) in files.iter().enumerate() {
        std::fs::write(f, format!("error: old in @ws\nerror: new in {n}\n")).unwrap();
    }
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    env.edited(&paths);
    wait_until("every worktree's own problems, classified", || {
        roots
            .iter()
            .enumerate()
            .all(|(n, r)| own_items_classified(r, &format!("new in {n}")))
    });
    let runs = runs(&log);
    let starts = runs.iter().filter(|(w, _, _)| w == "start").count();
    assert!(starts >= 6, "five edits and a baseline: {runs:?}");
    assert_eq!(
        runs.iter()
            .filter(|(w, k, _)| w == "start" && k == "baseline")
            .count(),
        1,
        "{runs:?}"
    );
    assert_eq!(most_at_once(&runs), 2, "two at once, never more: {runs:?}");
    svc.terminate();
}

/// A session start (`warm`) runs the commit's baseline of a project-wide source that keeps
/// no server, before any edit (`warm.rs`, the prefetch); the first edit then finds it in the
/// shared store and runs only its own check, its items classified against it. A workspace
/// without a session start runs none until its first edit.
#[test]
fn a_session_start_runs_the_commits_baseline_before_the_first_edit() {
    let (env, log) = fleet_env(2, 300);
    let roots = repo_with_worktrees(&env, 0);
    let ws = &roots[0];
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    // Nothing runs before a session starts.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(runs(&log).is_empty(), "{:?}", runs(&log));

    session_start(&env, ws);
    wait_until("the baseline run ended before any edit", || {
        runs(&log)
            .iter()
            .any(|(w, k, _)| w == "end" && k == "baseline")
    });
    let before = runs(&log);
    assert!(
        before.iter().all(|(_, k, _)| k == "baseline"),
        "the warm-up checks nothing else of a project-wide source: {before:?}"
    );

    let file = ws.join("notes.txt");
    std::fs::write(&file, "error: old in @ws\nerror: mine\n").unwrap();
    env.edited(&[&file]);
    wait_until("the edit's problems, classified", || {
        own_items_classified(ws, "mine")
    });
    let runs = runs(&log);
    let baselines = |w: &str| {
        runs.iter()
            .filter(|(what, k, _)| what == w && k == "baseline")
            .count()
    };
    assert_eq!(baselines("start"), 1, "one baseline run: {runs:?}");
    assert!(
        runs.iter().any(|(w, k, _)| w == "start" && k == "edit"),
        "{runs:?}"
    );
    svc.terminate();
}

/// The `instant` fixture as a warm project-wide source (as the pyright plugin's server), its
/// first check — the session start's warm-up, its first analysis — `first_delay_ms` long.
fn warm_config(env: &Env, log: &Path, first_delay_ms: u64) {
    let config = format!(
        "[plugin.instant]\nproject_wide = true\nwarm = true\n\
         first_delay_ms = {first_delay_ms}\nlog = {:?}\n",
        log.to_str().unwrap()
    );
    std::fs::write(&env.config, config).unwrap();
}

/// A service for `ws`, its session start, and an edit adding `mine` to `notes.txt` while the
/// warm-up runs, waited for until classified: the service and the runs logged (the log
/// emptied).
fn ride_during_the_warm_up(
    env: &Env,
    log: &Path,
    ws: &Path,
    mine: &str,
) -> (common::Service, Vec<(String, String, String)>) {
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    session_start(env, ws);
    wait_until("the warm-up's check started", || {
        runs(log).iter().any(|(w, _, _)| w == "start")
    });
    let file = ws.join("notes.txt");
    std::fs::write(&file, format!("error: old in @ws\nerror: {mine}\n")).unwrap();
    env.edited(&[&file]);
    wait_until("the riding edit's problems, classified", || {
        own_items_classified(ws, mine)
    });
    let runs = runs(log);
    std::fs::remove_file(log).unwrap();
    (svc, runs)
}

/// [`ride_during_the_warm_up`] in `ws` with a warm-up 120 s long, its ride told the
/// baseline is known.
fn rides_told_known(
    env: &Env,
    log: &Path,
    ws: &Path,
) -> (common::Service, Vec<(String, String, String)>) {
    warm_config(env, log, 120_000);
    let (svc, runs) = ride_during_the_warm_up(env, log, ws, "later");
    assert!(
        runs.iter()
            .any(|(w, k, _)| w == "start" && k == "ride-known"),
        "the ride is told the baseline is known: {runs:?}"
    );
    (svc, runs)
}

/// A run kept at a commit (by another worktree's session, under an earlier service here)
/// serves a worktree's session from its start: its first edit, made while the session
/// start's warm-up still runs (the warm source's first analysis, 120 s here), rides the warm
/// source told that its baseline is known (`CheckRequest::baseline_known`: the pyright
/// plugin then pulls only the edit's diagnostics), and the kept run is read at once instead
/// of after the warm-up, so the edit's items are classified long before it ends. Without a
/// kept run the ride is told nothing of the kind.
#[test]
fn a_run_kept_at_the_commit_serves_an_edit_riding_a_session_start() {
    let (env, log) = fleet_env(2, 0);
    let roots = repo_with_worktrees(&env, 1);
    // The first worktree's session, its warm-up 1 s long: no run kept yet, so the ride is
    // told nothing; the commit's run follows the warm-up.
    warm_config(&env, &log, 1_000);
    let (svc, first) = ride_during_the_warm_up(&env, &log, &roots[0], "first");
    assert!(
        first.iter().any(|(w, k, _)| w == "start" && k == "ride"),
        "{first:?}"
    );
    assert!(
        first.iter().any(|(w, k, _)| w == "end" && k == "baseline"),
        "the commit's run: {first:?}"
    );
    svc.terminate();

    // The second worktree's, under a new service.
    let (svc, later) = rides_told_known(&env, &log, &roots[1]);
    assert!(
        !later.iter().any(|(_, k, _)| k == "baseline"),
        "the kept run is read, not run again: {later:?}"
    );
    svc.terminate();
}

/// A session start's warm-up over a tree clean at the commit is the warm source's baseline
/// there (`seed.rs`), kept in the shared store as its run: another worktree's session, under
/// a new service, reads it — its first edit, riding its own warm-up, is told the baseline is
/// known and classified long before that warm-up ends — and no run over the commit's
/// snapshot happens anywhere.
#[test]
fn a_warm_ups_answer_over_a_clean_tree_serves_another_worktree() {
    let (env, log) = fleet_env(2, 0);
    let roots = repo_with_worktrees(&env, 1);
    warm_config(&env, &log, 0);
    let svc = env.serve(&["-w", roots[0].to_str().unwrap()]);
    session_start(&env, &roots[0]);
    // `<state>/baselines/<repository>-<trust>/<commit>/instant-<hash>.json`
    let entries = |dir: PathBuf| std::fs::read_dir(dir).into_iter().flatten().flatten();
    wait_until("the warm-up's answer kept as the commit's run", || {
        entries(env.state.join("baselines"))
            .flat_map(|repo| entries(repo.path()))
            .flat_map(|commit| entries(commit.path()))
            .any(|f| f.file_name().to_string_lossy().starts_with("instant-"))
    });
    let first = runs(&log);
    svc.terminate();
    std::fs::remove_file(&log).unwrap();

    let (svc, later) = rides_told_known(&env, &log, &roots[1]);
    assert!(
        !first.iter().chain(&later).any(|(_, k, _)| k == "baseline"),
        "no run over the snapshot: {first:?} {later:?}"
    );
    let trees: Vec<_> = entries(env.state.join("baselines"))
        .flat_map(|repo| entries(repo.path()))
        .filter(|commit| commit.path().join("tree").exists())
        .collect();
    assert!(trees.is_empty(), "no snapshot extracted: {trees:?}");
    svc.terminate();
}

/// A repository whose tree an earlier session left changed: `other.txt` committed, then
/// edited without a commit. Its root.
fn changed_repo(env: &Env) -> PathBuf {
    let ws = repo_with_worktrees(env, 0).remove(0);
    std::fs::write(ws.join("other.txt"), "committed\n").unwrap();
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "other"]);
    std::fs::write(ws.join("other.txt"), "changed by an earlier session\n").unwrap();
    ws
}

/// A tree an earlier session left changed (an uncommitted edit of another file) still lets
/// the session's first edit ride the warm-up: its check carries the committed texts of the
/// edited file and of the tree's other changes (`git::committed_of_changed`).
#[test]
fn an_edit_in_a_tree_an_earlier_session_changed_rides_the_warm_up() {
    let (env, log) = fleet_env(2, 0);
    let ws = &changed_repo(&env);
    warm_config(&env, &log, 2_000);
    let (svc, runs) = ride_during_the_warm_up(&env, &log, ws, "mine");
    assert!(
        runs.iter().any(|(w, k, _)| w == "start" && k == "ride"),
        "the edit rides: {runs:?}"
    );
    svc.terminate();
}

/// After the session start's warm-up, a tree an earlier session left changed gives no seed
/// (its answer is not the commit's), so the project's baseline comes from a run over the
/// snapshot: the session's first edit rides the warm source instead (its check carries the
/// committed texts), and that run waits for the ride's answer instead of running beside it
/// (on click, beside the ride's pulls, it made the hook 2.7–3.5 s long instead of 1.3–1.9 s).
#[test]
fn after_the_warm_up_a_changed_trees_first_edit_rides_and_the_baseline_run_waits_for_it() {
    let (env, log) = fleet_env(2, 0);
    let ws = &changed_repo(&env);
    let config = format!(
        "[plugin.instant]\nproject_wide = true\nwarm = true\ndelay_ms = 1500\n\
         first_delay_ms = 100\nlog = {:?}\n",
        log.to_str().unwrap()
    );
    std::fs::write(&env.config, config).unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    session_start(&env, ws);
    wait_until("the warm-up is over", || {
        let warm = env.status().workspaces.into_iter().find(|w| w.root == *ws);
        warm.and_then(|w| w.warm).is_some_and(|w| w.done_at != 0)
    });
    std::fs::remove_file(&log).unwrap();
    let file = ws.join("notes.txt");
    std::fs::write(&file, "error: old in @ws\nerror: mine\n").unwrap();
    env.edited(&[&file]);
    wait_until("the edit's problems, classified", || {
        own_items_classified(ws, "mine")
    });
    let runs = runs(&log);
    let at = |what: &str, kind: &str| runs.iter().position(|(w, k, _)| w == what && k == kind);
    let ride_end = at("end", "ride");
    assert!(ride_end.is_some(), "the edit rides: {runs:?}");
    assert!(
        at("start", "edit").is_none_or(|e| e > ride_end.unwrap_or(0)),
        "no plain check first: {runs:?}"
    );
    assert!(
        at("start", "baseline") > ride_end,
        "the snapshot's run starts after the ride's answer: {runs:?}"
    );
    svc.terminate();
}
