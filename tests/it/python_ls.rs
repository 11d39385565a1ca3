//! Issue 42.2: Python knock-on from the pyright plugin's warm language server (workspace mode)
//! through a real `openfiles serve`: the callers an edit broke in several modules nobody
//! edited are named in the edit's own hook, a revert clears them, and a language server that
//! crashes leaves the knock-on to pyright's command line, with the reason in the log. A
//! session start's warm-up over a clean tree is the first edit's baseline: no snapshot run,
//! an item already at `HEAD` stays the project's and the edit's knock-on is the agent's.

use crate::common;
use crate::common::git;

use std::path::Path;

use common::plugins::{path_list, plugin};
use common::typescript::install_test_deps;
use common::{diagnostics, wait_until, Env};
use serde_json::{json, Value};

const GOOD: &str = "def price_with_tax(amount: Money, rate: float) -> Money:";
const BROKEN: &str = "def price_with_tax(amount: Money, rate: float, region: str) -> Money:";

/// A committed project: `shop/core/money.py` and six service modules calling it, one of
/// them with an error of its own before the session.
fn shop(ws: &Path) {
    let w = |rel: &str, text: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("pyproject.toml", "[tool.pyright]\n");
    w("shop/__init__.py", "");
    w("shop/core/__init__.py", "");
    w(
        "shop/core/money.py",
        &format!(
            "from dataclasses import dataclass\n\n\n@dataclass\nclass Money:\n    cents: int\n\n\n\
             {GOOD}\n    return Money(int(amount.cents * (1 + rate)))\n"
        ),
    );
    for i in 0..6 {
        let old = if i == 0 {
            "    legacy: int = \"x\"\n"
        } else {
            ""
        };
        w(
            &format!("shop/service_{i}.py"),
            &format!(
                "from shop.core.money import Money, price_with_tax\n\n\ndef quote_{i}(cents: int) \
                 -> int:\n{old}    return price_with_tax(Money(cents), 0.2).cents\n"
            ),
        );
    }
    git(ws, &["init", "-q"]);
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "base"]);
}

/// The hook's feedback for an edit of `file`, `None` when it printed nothing.
fn hook(env: &Env, ws: &Path, file: &Path) -> Option<String> {
    let payload =
        json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": file}}).to_string();
    let mut cmd = env.command(&["hook", "--agent", "claude"]);
    let out = common::hook::run_hook(&mut cmd, &payload);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.trim()).ok()?;
    Some(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()?
            .to_owned(),
    )
}

fn env(pyright: &str) -> Env {
    install_test_deps();
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp"), plugin("pyright")]));
    // A wait long enough that a loaded machine cannot make the checker "slow" (see
    // `baseline.rs`); only ruff and pyright's language servers.
    std::fs::write(
        &env.config,
        format!(
            "[hooks]\ntimeout_ms = 240000\nknock_on_wait_ms = 240000\n[plugin.lsp]\ndisable = \
             [\"basedpyright\", \"ty\", \"ruff\"]\n{pyright}"
        ),
    )
    .unwrap();
    env
}

/// Break `price_with_tax`, expect every caller named in that edit's hook, revert, expect
/// silence. The service's log.
fn break_and_revert(env: &Env) -> String {
    let ws = env.workspace("shop");
    shop(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let money = ws.join("shop/core/money.py");
    let committed = std::fs::read_to_string(&money).unwrap();
    std::fs::write(&money, committed.replace(GOOD, BROKEN)).unwrap();
    let text =
        hook(env, &ws, &money).unwrap_or_else(|| panic!("no feedback; log:\n{}", svc.log_text()));
    for i in 0..6 {
        let line = if i == 0 { 6 } else { 5 };
        assert!(
            text.contains(&format!(
                "shop/service_{i}.py:{line}:12 error reportCallIssue (Pyright): Argument missing for \
                 parameter \"region\""
            )),
            "service_{i} named in the edit's own hook: {text}"
        );
    }
    assert!(!text.contains("legacy"), "nothing old blamed: {text}");
    assert_eq!(text.matches("service_3.py").count(), 1, "once: {text}");
    std::fs::write(&money, committed).unwrap();
    assert_eq!(hook(env, &ws, &money), None, "the revert clears it");
    let log = svc.log_text();
    svc.terminate();
    log
}

#[test]
fn the_language_server_names_the_callers_in_the_edits_own_hook_and_a_revert_clears_them() {
    let log = break_and_revert(&env(""));
    assert!(
        !log.contains("using its command line"),
        "the language server answered: {log}"
    );
}

#[test]
fn a_language_server_that_crashes_leaves_it_to_the_command_line_and_says_why() {
    let bin = tempfile::tempdir().unwrap();
    let real = common::typescript::which("pyright").expect("pyright on PATH");
    let script = |name: &str, body: &str| {
        use std::os::unix::fs::PermissionsExt;
        let p = bin.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    };
    let pyright = script("pyright", &format!("exec '{}' \"$@\"", real.display()));
    script("pyright-langserver", "echo broken >&2; exit 3");
    let log = break_and_revert(&env(&format!(
        "[plugin.pyright]\npyright = \"{}\"\n",
        pyright.display()
    )));
    assert!(
        log.contains("pyright language server at") && log.contains("; using its command line"),
        "{log}"
    );
}

/// An agent's session start in `ws`, and its warm-up's answer kept as the commit's baseline.
fn session_start(env: &Env, ws: &Path, svc: &common::Service) {
    let payload = json!({"session_id": "s", "cwd": ws, "hook_event_name": "SessionStart",
        "source": "startup"})
    .to_string();
    let mut cmd = env.command(&["hook", "--agent", "claude", "--event", "SessionStart"]);
    assert!(common::hook::run_hook(&mut cmd, &payload).status.success());
    wait_until("the warm-up's answer is the commit's baseline", || {
        svc.log_text()
            .contains("the warm-up over a clean tree is the commit's baseline")
    });
}

/// Snapshot trees of commits in the state dir's shared baselines.
fn snapshot_trees(state: &Path) -> Vec<std::path::PathBuf> {
    let Ok(repos) = std::fs::read_dir(state.join("baselines")) else {
        return Vec::new();
    };
    repos
        .flatten()
        .filter_map(|r| std::fs::read_dir(r.path()).ok())
        .flat_map(|commits| commits.flatten().map(|c| c.path().join("tree")))
        .filter(|t| t.exists())
        .collect()
}

#[test]
fn a_session_starts_warm_up_over_a_clean_tree_is_the_first_edits_baseline() {
    let env = env("");
    let ws = env.workspace("shop");
    shop(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    session_start(&env, &ws, &svc);

    let money = ws.join("shop/core/money.py");
    let committed = std::fs::read_to_string(&money).unwrap();
    std::fs::write(&money, committed.replace(GOOD, BROKEN)).unwrap();
    let text =
        hook(&env, &ws, &money).unwrap_or_else(|| panic!("no feedback; log:\n{}", svc.log_text()));
    assert!(
        text.contains("shop/service_3.py:5:12 error reportCallIssue (Pyright)"),
        "the knock-on is the agent's: {text}"
    );
    assert!(!text.contains("legacy"), "nothing old blamed: {text}");
    wait_until("service_0.py's broken call is written", || {
        diagnostics(&ws).is_some_and(|d| {
            d.files.get("shop/service_0.py").is_some_and(|e| {
                e.items
                    .iter()
                    .any(|i| i.code.as_deref() == Some("reportCallIssue"))
            })
        })
    });
    let d = diagnostics(&ws).unwrap();
    let marks = |code: &str| -> Vec<Option<bool>> {
        d.files["shop/service_0.py"]
            .items
            .iter()
            .filter(|i| i.code.as_deref() == Some(code))
            .map(|i| i.introduced)
            .collect()
    };
    assert_eq!(marks("reportAssignmentType"), [Some(false)], "{d:#?}");
    assert_eq!(marks("reportCallIssue"), [Some(true)], "{d:#?}");
    assert_eq!(
        snapshot_trees(&env.state),
        Vec::<std::path::PathBuf>::new(),
        "no snapshot of the commit was needed; log:\n{}",
        svc.log_text()
    );
    svc.terminate();
}

/// Packages `a`, `b` and `c` under `packages/`, each configuring pyright (`[tool.pyright]`,
/// a `src/` layout), each with `money.py` and a caller, `c`'s caller with an error of its own
/// before the session; committed.
fn packages(ws: &Path) {
    let w = |rel: &str, text: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    for name in ["a", "b", "c"] {
        let pkg = format!("packages/{name}");
        w(
            &format!("{pkg}/pyproject.toml"),
            &format!(
                "[project]\nname = \"{name}\"\n[tool.pyright]\nreportUnusedImport = \"warning\"\n"
            ),
        );
        w(&format!("{pkg}/src/{name}/__init__.py"), "");
        w(
            &format!("{pkg}/src/{name}/money.py"),
            &format!(
                "from dataclasses import dataclass\n\n\n@dataclass\nclass Money:\n    cents: int\n\n\n\
                 {GOOD}\n    return Money(int(amount.cents * (1 + rate)))\n"
            ),
        );
        let old = if name == "c" {
            "    legacy: int = \"x\"\n"
        } else {
            ""
        };
        w(
            &format!("{pkg}/src/{name}/service.py"),
            &format!(
                "from {name}.money import Money, price_with_tax\n\n\ndef quote(cents: int) -> int:\n\
                 {old}    return price_with_tax(Money(cents), 0.2).cents\n"
            ),
        );
    }
    git(ws, &["init", "-q"]);
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "base"]);
}

/// Issue 42.3 in an agent's session: the warm-up analyses every package of a monorepo (one
/// program: the packages' configurations combined) and its answer is each package's baseline,
/// so an edit in a package other than the first one found needs no snapshot run, names its
/// caller and blames nothing old.
#[test]
fn a_session_starts_warm_up_is_every_packages_baseline_in_one_program() {
    let env = env("");
    let ws = env.workspace("mono");
    packages(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    session_start(&env, &ws, &svc);
    let money = ws.join("packages/c/src/c/money.py");
    let committed = std::fs::read_to_string(&money).unwrap();
    std::fs::write(&money, committed.replace(GOOD, BROKEN)).unwrap();
    let text =
        hook(&env, &ws, &money).unwrap_or_else(|| panic!("no feedback; log:\n{}", svc.log_text()));
    assert!(
        text.contains("packages/c/src/c/service.py:6:12 error reportCallIssue (Pyright)"),
        "the knock-on is the agent's: {text}"
    );
    assert!(!text.contains("legacy"), "nothing old blamed: {text}");
    assert_eq!(
        snapshot_trees(&env.state),
        Vec::<std::path::PathBuf>::new(),
        "every package's baseline came from the warm-up; log:\n{}",
        svc.log_text()
    );
    let combined: Vec<std::path::PathBuf> = walk(&env.state)
        .into_iter()
        .filter(|p| p.ends_with("pyrightconfig.json"))
        .collect();
    assert_eq!(
        combined.len(),
        1,
        "the three packages, one program: {combined:?}"
    );
    let config = std::fs::read_to_string(&combined[0]).unwrap();
    for name in ["a", "b", "c"] {
        assert!(config.contains(&format!("packages/{name}\"")), "{config}");
    }
    svc.terminate();
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Issue 42.3 in a committed monorepo: packages edited at once are held for their committed
/// texts' checks and then reach the pyright plugin together — one live check of all three,
/// one baseline run over the commit's snapshot for all three (each package its own run file
/// and result) — and the items are classified per package: the edit's broken callers are
/// the agent's, an error already at `HEAD` is not.
#[test]
fn packages_edited_at_once_share_one_check_and_one_baseline_run() {
    let env = env("");
    let ws = env.workspace("mono");
    packages(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let names = ["a", "b", "c"];
    let moneys: Vec<std::path::PathBuf> = names
        .iter()
        .map(|n| ws.join(format!("packages/{n}/src/{n}/money.py")))
        .collect();
    for m in &moneys {
        let text = std::fs::read_to_string(m).unwrap();
        std::fs::write(m, text.replace(GOOD, BROKEN)).unwrap();
    }
    let paths: Vec<&Path> = moneys.iter().map(|p| p.as_path()).collect();
    env.edited(&paths);
    let service = |n: &str| format!("packages/{n}/src/{n}/service.py");
    let broken = |d: &openfiles_wire::spec::DiagnosticsFile, n: &str| {
        d.files.get(&service(n)).is_some_and(|e| {
            e.items
                .iter()
                .any(|i| i.code.as_deref() == Some("reportCallIssue"))
        })
    };
    wait_until("every package's broken caller is written", || {
        diagnostics(&ws).is_some_and(|d| names.iter().all(|n| broken(&d, n)))
    });
    let d = diagnostics(&ws).unwrap();
    for n in names {
        let marks = |code: &str| -> Vec<Option<bool>> {
            d.files[&service(n)]
                .items
                .iter()
                .filter(|i| i.code.as_deref() == Some(code))
                .map(|i| i.introduced)
                .collect()
        };
        assert_eq!(marks("reportCallIssue"), [Some(true)], "{n}: {d:#?}");
        let old = if n == "c" { vec![Some(false)] } else { vec![] };
        assert_eq!(marks("reportAssignmentType"), old, "{n}: {d:#?}");
    }
    let log = svc.log_text();
    let together = |what: &str| {
        log.lines()
            .filter(|l| l.contains(what) && l.contains("source=pyright"))
            .map(|l| l.contains("projects=3"))
            .collect::<Vec<bool>>()
    };
    assert_eq!(
        together("baseline run of projects together"),
        [true],
        "{log}"
    );
    assert_eq!(together("check sent (projects together)"), [true], "{log}");
    svc.terminate();
}
