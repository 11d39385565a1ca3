//! Issue 42.7, fleets of agents in worktrees: N worktrees of pallets/click, one trusted
//! workspace each of one service (the real lsp and pyright plugins), one agent edit in each at
//! the same moment — `make_str` gains a required parameter, which breaks the caller at
//! `src/click/core.py:2069` — against the same with one worktree.
//!
//! Figures per run: checker processes started (distinct processes of the service's tree
//! other than openfiles and git, seen by sampling /proc every 100 ms; and the programs
//! `status --json` lists as run), the service tree's peak RSS (the sum of the tree's RSS,
//! sampled every 100 ms for 25 s after the edit, or until every worktree has its knock-on),
//! how many first hooks (Claude's payload, the default 4 s deadline) named the broken caller
//! and how long each took, when each worktree's `diagnostics.json` named the caller, and
//! whether any worktree's results name another worktree's folder (a leak).
//!
//! Environment: `FLEET_CLICK` (required): a checkout of pallets/click at
//! 2c8cd3ac958a7eb316d67f2d316c27086c4c0369 (`git clone https://github.com/pallets/click`,
//! `git checkout 2c8cd3ac958a7eb316d67f2d316c27086c4c0369`; it is cloned, never modified);
//! `FLEET_WORKTREES` (default 6); `FLEET_MAX_RUNS` (`[service] max_project_runs`, default
//! unset: the number of cores); `FLEET_BEFORE`: another build of `openfiles` to measure
//! instead (the "before" of a change; its plugins are this tree's).
//!
//! Run: `FLEET_CLICK=/path/to/click cargo bench --bench fleet --profile dev`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::plugins::{path_list, plugin};
use common::{diagnostics, git, Env};
use serde_json::json;

const CALLER: &str = "src/click/core.py";

/// Every process of the tree under `root`: pid → (name, RSS in KiB).
fn tree(root: u32) -> BTreeMap<u32, (String, u64)> {
    let mut parent = BTreeMap::new();
    let mut info = BTreeMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_owned();
        let rest: Vec<&str> = stat[close + 2..].split(' ').collect();
        let ppid: u32 = rest.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        let rss_pages: u64 = rest.get(21).and_then(|p| p.parse().ok()).unwrap_or(0);
        parent.insert(pid, ppid);
        info.insert(pid, (name, rss_pages * 4));
    }
    let mut out = BTreeMap::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        if let Some(i) = info.get(&p) {
            out.insert(p, i.clone());
        }
        todo.extend(parent.iter().filter(|(_, pp)| **pp == p).map(|(c, _)| *c));
    }
    out
}

/// What the sampler saw.
#[derive(Default)]
struct Seen {
    peak_kib: u64,
    /// The RSS per kind of process at the peak (MiB).
    at_peak: BTreeMap<String, u64>,
    /// Every process but openfiles's own, by pid: its kind.
    checkers: BTreeMap<u32, String>,
}

/// What a process of the tree is, by its command line: the checkers by name, the shell and
/// pyenv shims that start them as `helper`.
fn kind(pid: u32, name: &str) -> String {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default();
    if name.starts_with("openfiles") || cmd.contains("plugin-host") {
        "openfiles".into()
    } else if cmd.contains("--outputjson") {
        "pyright --outputjson".into()
    } else if cmd.contains("langserver") {
        "pyright-langserver".into()
    } else if name == "ruff" {
        "ruff server".into()
    } else if name == "node" {
        "node (other)".into()
    } else {
        "helper".into()
    }
}

fn sample(pid: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Seen> {
    std::thread::spawn(move || {
        let mut seen = Seen::default();
        while !stop.load(Ordering::Relaxed) {
            let t = tree(pid);
            let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
            for (p, (name, rss)) in &t {
                let k = seen
                    .checkers
                    .get(p)
                    .cloned()
                    .unwrap_or_else(|| kind(*p, name));
                if k != "openfiles" && name != "git" {
                    seen.checkers.insert(*p, k.clone());
                }
                *by_kind.entry(k).or_default() += rss;
            }
            let total = by_kind.values().sum();
            if total > seen.peak_kib {
                seen.peak_kib = total;
                seen.at_peak = by_kind.into_iter().map(|(k, v)| (k, v / 1024)).collect();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        seen
    })
}

struct Hook {
    took: Duration,
    named_caller: bool,
    said: String,
}

fn hook(env: &Env, bin: &Path, ws: &Path, file: &Path) -> Hook {
    let payload = json!({"session_id": format!("fleet-{}", ws.display()), "cwd": ws,
        "tool_name": "Edit", "tool_input": {"file_path": file}});
    let mut cmd = env.command_of(bin, &["hook", "--agent", "claude"]);
    let start = Instant::now();
    let out = common::hook::run_hook(&mut cmd, &payload.to_string());
    let took = start.elapsed();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    Hook {
        took,
        named_caller: said.contains("core.py:2069"),
        said,
    }
}

/// A service serving `n` fresh worktrees of a clone of `click`: its environment and the
/// worktrees' roots.
fn fleet(click: &Path, n: usize) -> (Env, Vec<PathBuf>) {
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp"), plugin("pyright")]));
    let mut config = String::new();
    if let Ok(m) = std::env::var("FLEET_MAX_RUNS") {
        config.push_str(&format!("[service]\nmax_project_runs = {m}\n"));
    }
    std::fs::write(&env.config, config).unwrap();
    let repo = env.dir.path().join("click");
    let (from, to) = (click.to_str().unwrap(), repo.to_str().unwrap());
    git(env.dir.path(), &["clone", "-q", from, to]);
    let mut roots = Vec::new();
    for i in 0..n {
        let wt = env.dir.path().join(format!("wt-{i}"));
        git(
            &repo,
            &["worktree", "add", "-q", "--detach", wt.to_str().unwrap()],
        );
        roots.push(wt.canonicalize().unwrap());
    }
    (env, roots)
}

/// One edit in each worktree at the same moment (`make_str` gains a required parameter),
/// each followed by its agent's hook.
fn edit_all(env: &Env, bin: &Path, roots: &[PathBuf]) -> Vec<Hook> {
    for ws in roots {
        let file = ws.join("src/click/utils.py");
        let text = std::fs::read_to_string(&file).unwrap().replace(
            "def make_str(value: t.Any) -> str:",
            "def make_str(value: t.Any, strict: bool) -> str:",
        );
        std::fs::write(&file, text).unwrap();
    }
    std::thread::scope(|s| {
        let running: Vec<_> = roots
            .iter()
            .map(|ws| s.spawn(|| hook(env, bin, ws, &ws.join("src/click/utils.py"))))
            .collect();
        running.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// When each worktree's `diagnostics.json` named the broken caller (watched for 25 s, and
/// up to 240 s while one has not).
fn knock_ons(roots: &[PathBuf], edited: Instant) -> Vec<Option<Duration>> {
    let mut knock: Vec<Option<Duration>> = vec![None; roots.len()];
    while edited.elapsed() < Duration::from_secs(25)
        || (knock.iter().any(Option::is_none) && edited.elapsed() < Duration::from_secs(240))
    {
        for (i, ws) in roots.iter().enumerate() {
            let named = diagnostics(ws).is_some_and(|d| {
                d.files
                    .get(CALLER)
                    .is_some_and(|e| !e.affected_by.is_empty())
            });
            if knock[i].is_none() && named {
                knock[i] = Some(edited.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    knock
}

/// How many worktrees' results name another worktree's folder.
fn leaks(roots: &[PathBuf]) -> usize {
    roots
        .iter()
        .map(|ws| {
            let text =
                std::fs::read_to_string(ws.join(".openfiles/diagnostics.json")).unwrap_or_default();
            roots
                .iter()
                .filter(|o| *o != ws && text.contains(o.to_str().unwrap()))
                .count()
        })
        .sum()
}

fn run(click: &Path, n: usize, bin: &Path) {
    let (env, roots) = fleet(click, n);
    let mut args = vec!["serve".to_owned()];
    for r in &roots {
        args.extend(["-w".to_owned(), r.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let svc = env.serve_command(env.command_of(bin, &args));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample(svc.pid() as u32, stop.clone());
    let edited = Instant::now();
    let hooks = edit_all(&env, bin, &roots);
    let knock = knock_ons(&roots, edited);
    stop.store(true, Ordering::Relaxed);
    let seen = sampler.join().unwrap();
    let status = env.command_of(bin, &["status", "--json"]).output().unwrap();
    let ran = String::from_utf8_lossy(&status.stdout)
        .matches("\"atMs\"")
        .count();
    report(&seen, ran, &hooks, &knock, &roots);
    svc.terminate();
}

fn report(seen: &Seen, ran: usize, hooks: &[Hook], knock: &[Option<Duration>], roots: &[PathBuf]) {
    let n = roots.len();
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    for name in seen.checkers.values() {
        *names.entry(name.as_str()).or_default() += 1;
    }
    let checkers: usize = names
        .iter()
        .filter(|(k, _)| **k != "helper")
        .map(|(_, n)| n)
        .sum();
    println!("worktrees: {n}");
    println!("  checker processes started: {checkers} {names:?}; programs in status --json: {ran}");
    println!(
        "  service tree peak RSS: {} MiB, at the peak (MiB): {:?}",
        seen.peak_kib / 1024,
        seen.at_peak
    );
    let named = hooks.iter().filter(|h| h.named_caller).count();
    let in_time = hooks
        .iter()
        .filter(|h| h.named_caller && h.took <= Duration::from_millis(4_500))
        .count();
    println!(
        "  first hooks naming the broken caller: {named}/{n} ({in_time} within the 4 s deadline)"
    );
    for (i, h) in hooks.iter().enumerate() {
        let first: String = h
            .said
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(160)
            .collect();
        println!(
            "    wt-{i}: hook {:.2} s, caller named: {}, knock-on in diagnostics.json: {}; {first}",
            h.took.as_secs_f64(),
            h.named_caller,
            knock[i].map_or("never".into(), |d| format!("{:.1} s", d.as_secs_f64()))
        );
    }
    println!(
        "  results naming another worktree's folder: {}",
        leaks(roots)
    );
    for (i, ws) in roots
        .iter()
        .enumerate()
        .filter(|(i, _)| knock[*i].is_none())
    {
        let said: Vec<String> = diagnostics(ws)
            .and_then(|d| d.files.get("src/click/utils.py").cloned())
            .map(|e| e.items.iter().map(|i| i.message.clone()).collect())
            .unwrap_or_default();
        println!("    wt-{i} without its knock-on; utils.py says: {said:?}");
    }
}

fn main() {
    let Some(click) = std::env::var_os("FLEET_CLICK") else {
        eprintln!("set FLEET_CLICK to a checkout of pallets/click (see the doc comment)");
        return;
    };
    let n: usize = std::env::var("FLEET_WORKTREES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let bin = std::env::var_os("FLEET_BEFORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(common::bin()));
    println!("openfiles: {}", bin.display());
    run(Path::new(&click), 1, &bin);
    run(Path::new(&click), n, &bin);
}
