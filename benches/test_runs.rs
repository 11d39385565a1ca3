//! Issue 40: how long until an edit's hook names the tests it broke, and how many tests the
//! `tests` plugin selected versus the whole suite, on a generated pytest project through the
//! real service, hook and plugin.
//!
//! The project: `MODULES` modules `pkg/m<i>.py` (each `f<i>` builds on `f<i-1>` within a
//! group of five, so an edit of a group's first module reaches five modules), each with a test
//! module of `TESTS` tests; committed; default hook settings. Each round breaks `f<k>` (the
//! first of a group, in turn), runs Claude's hook and measures from the hook's start until
//! `diagnostics.json` names the `TESTS` broken tests of `tests/test_m<k>.py` (and whether
//! the hook itself named them, within its `knock_on_wait_ms`), then restores the file and
//! measures until they are gone. The first breaking edit is cold (the baseline's run over the
//! commit's snapshot, the whole suite, comes first); the others warm.
//!
//! Figures: edit → tests named, cold and p50/min/max warm; the hook's wall time; revert →
//! cleared, p50; per run, the test modules pytest was given vs all (the plugin's log line).
//! Environment: `TEST_RUNS_ROUNDS` (default 6), `TEST_RUNS_NICE` (default 10).
//!
//! Run: `cargo bench --bench test_runs` (needs pytest and ruff: `scripts/install-test-deps.sh`).
//!
//! A real TypeScript project with vitest instead: `TEST_RUNS_PROJECT=<checkout>` (its
//! dependencies installed, `node_modules` in the checkout; the bench clones the checkout into
//! its workspace and links that `node_modules`). Each round plants `TEST_RUNS_NEW` in place of
//! `TEST_RUNS_OLD` in `TEST_RUNS_FILE`, waits until `diagnostics.json` names
//! `TEST_RUNS_EXPECT` failing tests whose code starts with `TEST_RUNS_TESTS`, checks that
//! no other test is named, then restores the file. The defaults are unjs/ufo's: pinned at
//! 11308c0bb5cb4a4bc3bfcbdc5c03177b097423e6 (v1.6.3; `git clone https://github.com/unjs/ufo`,
//! `git checkout 11308c0bb5cb4a4bc3bfcbdc5c03177b097423e6`, then vitest 4.1.12 into its
//! `node_modules`, e.g. `npm install --no-save vitest@4.1.12`, or a link to
//! `/opt/openfiles-js-tests/node_modules` from `scripts/install-test-deps.sh`):
//! `cleanDoubleSlashes` in `src/utils.ts` folding three slashes instead of two breaks exactly
//! four cases of `test/double-slash.test.ts`; the project has 13 test files, 485 tests.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::plugins::plugin;
use common::{git, Env};
use serde_json::json;

const MODULES: usize = 40;
const TESTS: usize = 10;

fn module(i: usize, broken: bool) -> String {
    let plus = if broken { 2 } else { 1 };
    if i % 5 == 0 {
        format!("def f{i}(x):\n    return x + {plus}\n")
    } else {
        format!(
            "from pkg.m{p} import f{p}\n\n\ndef f{i}(x):\n    return f{p}(x)\n",
            p = i - 1
        )
    }
}

fn project(ws: &Path) {
    let w = |rel: &str, text: &str| {
        let p = ws.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        "pyproject.toml",
        "[project]\nname = \"gen\"\nversion = \"0\"\n",
    );
    w("pkg/__init__.py", "");
    w(".gitignore", "__pycache__/\n");
    for i in 0..MODULES {
        w(&format!("pkg/m{i}.py"), &module(i, false));
        let mut t = format!("from pkg.m{i} import f{i}\n");
        for j in 0..TESTS {
            t.push_str(&format!(
                "\n\ndef test_f{i}_{j}():\n    assert f{i}({j}) == {}\n",
                j + 1
            ));
        }
        w(&format!("tests/test_m{i}.py"), &t);
    }
    git(ws, &["init", "-q"]);
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "base"]);
}

/// Claude's hook for an edit of `file`, on a thread: its wall time and text.
fn hook(env: &Env, ws: &Path, file: &Path) -> std::thread::JoinHandle<(Duration, String)> {
    let payload = json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": file}});
    let mut cmd = env.command(&["hook", "--agent", "claude"]);
    std::thread::spawn(move || {
        let start = Instant::now();
        let child = common::hook::spawn_hook(&mut cmd, &payload.to_string());
        let out = common::hook::wait_output(child, Duration::from_secs(120));
        (
            start.elapsed(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    })
}

/// The failing tests `diagnostics.json` names in `rel` whose id contains `needle`.
fn named(ws: &Path, rel: &str, needle: &str) -> usize {
    common::diagnostics(ws)
        .and_then(|d| {
            d.files.get(rel).map(|e| {
                e.items
                    .iter()
                    .filter(|i| i.code.as_deref().is_some_and(|c| c.contains(needle)))
                    .count()
            })
        })
        .unwrap_or(0)
}

/// Poll until `done`, at most 10 minutes; how long it took.
fn until(start: Instant, what: &str, mut done: impl FnMut() -> bool) -> Duration {
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "{what}: not within 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    start.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn p50(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The planted change on a real project (`TEST_RUNS_*`, ufo's by default).
struct Plant {
    file: String,
    old: String,
    new: String,
    tests: String,
    expect: usize,
}

impl Plant {
    fn from_env() -> Plant {
        let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_owned());
        Plant {
            file: var("TEST_RUNS_FILE", "src/utils.ts"),
            old: var("TEST_RUNS_OLD", r#"string_.replace(/\/{2,}/g, "/")"#),
            new: var("TEST_RUNS_NEW", r#"string_.replace(/\/{3,}/g, "/")"#),
            tests: var(
                "TEST_RUNS_TESTS",
                "test/double-slash.test.ts > cleanDoubleSlashes > ",
            ),
            expect: var("TEST_RUNS_EXPECT", "4").parse().unwrap(),
        }
    }
}

/// Every failing test `diagnostics.json` names (file key, code), test runners' items only.
fn all_named(ws: &Path) -> Vec<(String, String)> {
    let runners = ["vitest", "jest", "pytest", "cargo-test", "go-test"];
    common::diagnostics(ws)
        .map(|d| {
            d.files
                .iter()
                .flat_map(|(k, e)| e.items.iter().map(move |i| (k, i)))
                .filter(|(_, i)| runners.contains(&i.source.as_str()))
                .map(|(k, i)| (k.clone(), i.code.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

/// The rounds on a real project: the figures, and every test named that was not expected.
fn real(env: &Env, checkout: &Path, rounds: usize) {
    let plant = Plant::from_env();
    let ws = env.workspace("real");
    common::clone_checkout(checkout, &ws);
    std::os::unix::fs::symlink(checkout.join("node_modules"), ws.join("node_modules")).unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let file = ws.join(&plant.file);
    let committed = std::fs::read_to_string(&file).unwrap();
    assert!(
        committed.contains(&plant.old),
        "{} lacks TEST_RUNS_OLD",
        plant.file
    );
    let broken = committed.replacen(&plant.old, &plant.new, 1);
    let (mut warm, mut hooks, mut others) = (Vec::new(), Vec::new(), Vec::new());
    let mut cold = None;
    for r in 0..rounds {
        std::fs::write(&file, &broken).unwrap();
        let start = Instant::now();
        let h = hook(env, &ws, &file);
        let took = until(start, "tests named", || {
            let n = all_named(&ws);
            n.iter()
                .filter(|(_, c)| c.starts_with(&plant.tests))
                .count()
                == plant.expect
        });
        let (hook_took, text) = h.join().unwrap();
        let named_now = all_named(&ws);
        others.extend(
            named_now
                .into_iter()
                .filter(|(_, c)| !c.starts_with(&plant.tests)),
        );
        println!(
            "round {r}: edit of {} → {} tests named after {:.0} ms; hook {:.0} ms ({})",
            plant.file,
            plant.expect,
            ms(took),
            ms(hook_took),
            if text.contains(&plant.tests) {
                "named them"
            } else {
                "before they were in"
            }
        );
        if r == 0 {
            cold = Some(ms(took));
        } else {
            warm.push(ms(took));
        }
        hooks.push(ms(hook_took));
        std::fs::write(&file, &committed).unwrap();
        let start = Instant::now();
        let h = hook(env, &ws, &file);
        until(start, "revert clears", || all_named(&ws).is_empty());
        h.join().unwrap();
    }
    println!(
        "\n== edit → tests named ({}; {} rounds) ==",
        checkout.display(),
        rounds
    );
    println!(
        "cold (first edit, baseline run first): {:.0} ms",
        cold.unwrap_or(0.0)
    );
    if !warm.is_empty() {
        let min = warm.iter().cloned().fold(f64::MAX, f64::min);
        let max = warm.iter().cloned().fold(0.0, f64::max);
        println!(
            "warm p50 {:.0} ms (min {min:.0}, max {max:.0})",
            p50(&mut warm)
        );
    }
    println!("hook wall time p50 {:.0} ms", p50(&mut hooks));
    println!("other tests named (must be none): {others:?}");
    println!("selection per run (the runner's own, from the plugin's log):");
    for l in svc
        .log_text()
        .lines()
        .filter_map(|l| l.find("tests: ").map(|i| l[i..].to_owned()))
    {
        println!("  {l}");
    }
    svc.terminate();
}

fn main() {
    let rounds: usize = std::env::var("TEST_RUNS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let mut env = Env::new();
    env.plugin_path = Some(plugin("tests").into_os_string());
    // The default hook settings: the hook waits up to `knock_on_wait_ms` (2 s) for the tests.
    // `TEST_RUNS_NICE` sets `[plugin.tests] nice` (default 10: the runner yields to
    // everything else on a busy machine, so its figures there are mostly waiting).
    let nice = std::env::var("TEST_RUNS_NICE").unwrap_or_else(|_| "10".into());
    std::fs::write(&env.config, format!("[plugin.tests]\nnice = {nice}\n")).unwrap();
    if let Some(checkout) = std::env::var_os("TEST_RUNS_PROJECT") {
        return real(&env, Path::new(&checkout), rounds);
    }
    let ws = env.workspace("gen");
    project(&ws);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let (mut warm, mut hooks, mut reverts) = (Vec::new(), Vec::new(), Vec::new());
    let mut cold = None;
    let mut in_hook = 0;
    for r in 0..rounds {
        let k = (r * 5) % MODULES;
        let file = ws.join(format!("pkg/m{k}.py"));
        let rel = format!("tests/test_m{k}.py");
        let needle = format!("test_f{k}_");
        std::fs::write(&file, module(k, true)).unwrap();
        let start = Instant::now();
        let h = hook(&env, &ws, &file);
        let took = until(start, "tests named", || named(&ws, &rel, &needle) == TESTS);
        let (hook_took, text) = h.join().unwrap();
        let listed = text.contains(&format!("{rel}::{needle}"));
        in_hook += usize::from(listed);
        println!(
            "round {r}: edit of pkg/m{k}.py → its {TESTS} tests named in diagnostics.json after {:.0} ms; hook {:.0} ms ({})",
            ms(took),
            ms(hook_took),
            if listed { "named them" } else { "before they were in" }
        );
        if r == 0 {
            cold = Some(ms(took));
        } else {
            warm.push(ms(took));
        }
        hooks.push(ms(hook_took));
        std::fs::write(&file, module(k, false)).unwrap();
        let start = Instant::now();
        let h = hook(&env, &ws, &file);
        reverts.push(ms(until(start, "revert clears", || {
            named(&ws, &rel, &needle) == 0
        })));
        h.join().unwrap();
    }
    let log = svc.log_text();
    let selections: Vec<&str> = log
        .lines()
        .filter_map(|l| l.find("tests: pytest at").map(|i| &l[i..]))
        .collect();
    println!(
        "\n== edit → tests named (generated project: {MODULES} modules, {} tests; nice {nice}) ==",
        MODULES * TESTS
    );
    println!(
        "cold (first edit, baseline run first): {:.0} ms",
        cold.unwrap_or(0.0)
    );
    if !warm.is_empty() {
        let min = warm.iter().cloned().fold(f64::MAX, f64::min);
        let max = warm.iter().cloned().fold(0.0, f64::max);
        println!(
            "warm p50 {:.0} ms (min {min:.0}, max {max:.0}, {} edits)",
            p50(&mut warm),
            warm.len()
        );
    }
    println!("hook wall time p50 {:.0} ms (default knock_on_wait_ms); it named the tests itself in {in_hook} of {rounds} edits", p50(&mut hooks));
    println!(
        "revert → tests gone from diagnostics.json p50 {:.0} ms",
        p50(&mut reverts)
    );
    println!("selection per run (test modules given to pytest vs all):");
    for s in selections {
        println!("  {s}");
    }
    svc.terminate();
}
