//! Issue 42.3, monorepos through the whole service: a trusted workspace of 12 Python packages
//! (`packages/pkgN/src/pkgN/core.py`, one `pyproject.toml` each), served with the real lsp
//! and pyright plugins; one edit in every package at once (`edited` for the 12 files), then a
//! `wait` until every file is fully checked (every source answered: ruff and pyright's
//! language servers, the project-wide Python source); then the same again with the servers
//! warm. Two cases:
//! - "plain": no package configures pyright (`[project]` and `[tool.ruff]` only): one pyright
//!   project, the workspace;
//! - "configured": every package has a `[tool.pyright]` table: 12 pyright projects.
//!
//! Figures per case: time from `edited` to the complete `wait` (cold: the service's first
//! edit; warm: the second), the items found, and the service tree's peak RSS (the sum of
//! the RSS of the service and its descendants, sampled every 100 ms) with the processes at
//! the peak.
//!
//! Needs ruff and pyright (`scripts/install-test-deps.sh`). `MONOREPO_PACKAGES` (default
//! 12), `MONOREPO_CASE` (`plain` or `configured`: that case only), `MONOREPO_LSP_TYPES=off` (the
//! lsp plugin's Python type checkers disabled: only the pyright plugin's server analyses),
//! `MONOREPO_GIT` (any value: the packages committed in a git repository first, so the first
//! edit waits for each project's baseline, the commit's snapshot checked),
//! `MONOREPO_LOG=FILE` (the service's log written there),
//! `MONOREPO_BEFORE=DIR` (another build to compare with: DIR holds its `openfiles` and its
//! `libopenfiles_plugin_lsp.so` and `libopenfiles_plugin_pyright.so`, e.g. copied from
//! main's `target/debug`). Run: `cargo bench --bench monorepo --profile dev` (quote `uptime` beside the figures:
//! the machine's load moves them).
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::plugins::{path_list, plugin};
use common::Env;
use openfiles::control::client::Client;
use openfiles_wire::control::{Wait, WaitReply};

/// One module per package: an unused import (ruff F401), an undefined name (ruff F821,
/// pyright reportUndefinedVariable) and a wrong return type (pyright); `round` changes the
/// name so that the second edit changes every file.
fn module(i: usize, round: usize) -> String {
    format!(
        "import os\n\n\ndef f{i}(x: int) -> str:\n    return x + undefined_{i}_{round}\n\n\nVALUE: int = f{i}(1)\n"
    )
}

/// N packages, each with its own `pyproject.toml` (a `[tool.pyright]` table when
/// `configured`); the files the edits change.
fn build(ws: &Path, n: usize, configured: bool) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let pkg = ws.join(format!("packages/pkg{i}"));
            std::fs::create_dir_all(pkg.join(format!("src/pkg{i}"))).unwrap();
            let pyright = if configured {
                "[tool.pyright]\nreportMissingModuleSource = \"warning\"\n"
            } else {
                ""
            };
            std::fs::write(
                pkg.join("pyproject.toml"),
                format!("[project]\nname = \"pkg{i}\"\nversion = \"0.1.0\"\n[tool.ruff]\nline-length = 100\n{pyright}"),
            )
            .unwrap();
            std::fs::write(pkg.join(format!("src/pkg{i}/__init__.py")), "").unwrap();
            let file = pkg.join(format!("src/pkg{i}/core.py"));
            std::fs::write(&file, "def untouched() -> None:\n    pass\n").unwrap();
            file
        })
        .collect()
}

/// The processes of the tree under `root`: pid → (what it is, RSS in KiB).
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
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let rest: Vec<&str> = stat[close + 2..].split(' ').collect();
        let ppid: u32 = rest.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        let rss_pages: u64 = rest.get(21).and_then(|p| p.parse().ok()).unwrap_or(0);
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        let kind = if cmd.contains("--outputjson") {
            "pyright --outputjson"
        } else if cmd.contains("langserver") {
            "pyright-langserver"
        } else if cmd.contains("ruff") {
            "ruff"
        } else {
            "openfiles"
        };
        parent.insert(pid, ppid);
        info.insert(pid, (kind.to_owned(), rss_pages * 4));
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

/// The peak of the tree's RSS (KiB) and the processes at the peak (kind → (count, MiB)).
type Peak = (u64, BTreeMap<String, (usize, u64)>);

fn sample(pid: u32, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Peak> {
    std::thread::spawn(move || {
        let mut peak: Peak = (0, BTreeMap::new());
        while !stop.load(Ordering::Relaxed) {
            let t = tree(pid);
            let total: u64 = t.values().map(|(_, rss)| rss).sum();
            if total > peak.0 {
                let mut at: BTreeMap<String, (usize, u64)> = BTreeMap::new();
                for (kind, rss) in t.values() {
                    let e = at.entry(kind.clone()).or_default();
                    e.0 += 1;
                    e.1 += rss / 1024;
                }
                peak = (total, at);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        peak
    })
}

/// Edit every file (`round`), tell the service, wait until all are fully checked: the time,
/// whether the wait was complete, the items per source, and when each source's last answer
/// came (after `edited`).
fn edit_and_wait(
    env: &Env,
    files: &[PathBuf],
    round: usize,
) -> (Duration, bool, BTreeMap<String, usize>, Vec<String>) {
    for (i, f) in files.iter().enumerate() {
        std::fs::write(f, module(i, round)).unwrap();
    }
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let start = Instant::now();
    let since = env.edited(&paths).ts;
    let wait = Wait {
        paths: files.to_vec(),
        since,
        timeout_ms: Some(180_000),
        partial: false,
        session: None,
        fixes: false,
    };
    let reply: WaitReply = Client::connect(&env.socket, Some(Duration::from_secs(200)))
        .unwrap()
        .call(&wait)
        .unwrap();
    let took = start.elapsed();
    let mut by_source: BTreeMap<String, usize> = BTreeMap::new();
    let mut answered: BTreeMap<String, u64> = BTreeMap::new();
    for ws in &reply.workspaces {
        for entry in ws.files.values() {
            for item in &entry.items {
                *by_source.entry(item.source.clone()).or_default() += 1;
            }
            for (name, status) in &entry.sources {
                let at = answered.entry(name.clone()).or_default();
                *at = (*at).max(status.answered_at.saturating_sub(since));
            }
        }
    }
    let last = answered
        .iter()
        .map(|(name, ms)| format!("{name} {:.2} s", *ms as f64 / 1000.0))
        .collect();
    (took, reply.complete, by_source, last)
}

fn run(n: usize, configured: bool) {
    let mut env = Env::new();
    let before = std::env::var_os("MONOREPO_BEFORE").map(PathBuf::from);
    let lib = |name: &str| match &before {
        Some(dir) => dir.join(format!("libopenfiles_plugin_{name}.so")),
        None => plugin(name),
    };
    env.plugin_path = Some(path_list(&[lib("lsp"), lib("pyright")]));
    if std::env::var("MONOREPO_LSP_TYPES").as_deref() == Ok("off") {
        // The experiment of the design left (ARCHITECTURE.md, monorepos): only the pyright
        // plugin analyses the projects.
        let off = "[plugin.lsp]\ndisable = [\"pyright\", \"basedpyright\", \"ty\"]\n";
        std::fs::write(&env.config, off).unwrap();
    }
    let ws = env.workspace("mono");
    let files = build(&ws, n, configured);
    let git = std::env::var_os("MONOREPO_GIT").is_some();
    if git {
        common::git(&ws, &["init", "-q"]);
        common::git(&ws, &["add", "."]);
        common::git(&ws, &["commit", "-q", "-m", "base"]);
    }
    let trust = env
        .command(&["trust", ws.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(trust.status.success(), "{trust:?}");
    let serve = ["serve", "-w", ws.to_str().unwrap()];
    let svc = match &before {
        Some(dir) => env.serve_command(env.command_of(&dir.join("openfiles"), &serve)),
        None => env.serve_command(env.command(&serve)),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = sample(svc.pid() as u32, stop.clone());
    let cold = edit_and_wait(&env, &files, 1);
    let warm = edit_and_wait(&env, &files, 2);
    stop.store(true, Ordering::Relaxed);
    let (peak_kib, at_peak) = sampler.join().unwrap();
    let case = match (configured, git) {
        (true, false) => "configured",
        (true, true) => "configured, committed",
        (false, false) => "plain",
        (false, true) => "plain, committed",
    };
    for (what, (took, complete, items, last)) in [("cold", cold), ("warm", warm)] {
        println!(
            "{case} ({n} packages) {what}: fully checked in {:.2} s (complete: {complete}); items by source: {items:?}; last answers: {}",
            took.as_secs_f64(),
            last.join(", ")
        );
    }
    println!(
        "{case}: service tree peak RSS {} MiB; at the peak (count, MiB): {at_peak:?}",
        peak_kib / 1024
    );
    // Why the pyright plugin's warm server gave no answer, if it did not (the command line
    // answered instead).
    for line in svc
        .log_text()
        .lines()
        .filter(|l| l.contains("using its command line"))
    {
        println!("{case}: {line}");
    }
    if let Some(path) = std::env::var_os("MONOREPO_LOG") {
        std::fs::write(path, svc.log_text()).unwrap();
    }
    svc.terminate();
}

fn main() {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let have = |c: &str| std::env::split_paths(&path).any(|d| d.join(c).is_file());
    if !have("ruff") || !have("pyright-langserver") {
        println!("monorepo: ruff and pyright are needed (scripts/install-test-deps.sh)");
        return;
    }
    let n: usize = std::env::var("MONOREPO_PACKAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    match std::env::var_os("MONOREPO_BEFORE") {
        Some(dir) => println!("openfiles: {} (MONOREPO_BEFORE)", dir.to_string_lossy()),
        None => println!("openfiles: {}", common::bin()),
    }
    let case = std::env::var("MONOREPO_CASE").unwrap_or_default();
    if case != "configured" {
        run(n, false);
    }
    if case != "plain" {
        run(n, true);
    }
}
