//! Python knock-on at the source (issue 42.2, 42.3): how long the pyright plugin takes to
//! answer a check after an edit, from its warm language server (the default) and from the
//! command line (`language_server = false`, before), and whether the answer names the
//! broken caller (and no longer does after the revert).
//!
//! - click (`OPENFILES_BENCH_CLICK` = a checkout of pallets/click at the pinned commit):
//!   `make_str` in `src/click/utils.py` gains a required parameter; the caller is the
//!   `reportCallIssue` at `src/click/core.py:2069`. Cold: the first check (the server starts
//!   and analyses the project); warm: `OPENFILES_BENCH_EDITS` (default 10) edits alternately
//!   breaking and reverting, one check each.
//!
//!       git clone https://github.com/pallets/click /tmp/click
//!       git -C /tmp/click checkout 2c8cd3ac958a7eb316d67f2d316c27086c4c0369
//!
//! - the monorepo: 12 packages each configuring pyright (`[tool.pyright]` in their own
//!   `pyproject.toml`), one edited file per package, one check of them all (as the service
//!   sends a warm source's projects due at once; `KNOCK_ON_CHECK_PER_PACKAGE`: one check per
//!   package at once, each package its own program): the time until every package is fully checked, and the RSS of
//!   the checker processes (the bench's descendants: the server's tree, or the command
//!   lines) sampled every 100 ms, its peak;
//!   then the plain case (one project of the same 12 modules).
//!
//! Run: `OPENFILES_BENCH_CLICK=/tmp/click cargo bench -p openfiles-plugin-pyright --bench
//! knock_on` (needs pyright; `scripts/install-test-deps.sh`). The copies are made in temp dirs.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benchmarks may panic on a broken fixture

use openfiles_plugin_api::{CheckRequest, CheckResponse, Init, Plugin};
use openfiles_plugin_pyright::Pyright;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn plugin(language_server: bool) -> Pyright {
    let state = tempfile::tempdir().unwrap();
    Pyright::create(Init {
        config: serde_json::json!({"language_server": language_server}),
        state_dir: state.path().to_owned(),
        host_version: "bench".into(),
    })
    .unwrap()
    .0
}

fn request(ws: &Path, files: Vec<PathBuf>, id: u64) -> CheckRequest {
    CheckRequest {
        id,
        workspace: ws.to_owned(),
        files,
        report_all: true,
        trusted: true,
        timeout_ms: 300_000,
        ..Default::default()
    }
}

fn names(resp: &CheckResponse, file: &Path, line: u32, code: &str) -> bool {
    resp.files.iter().any(|f| {
        f.path == file
            && f.items
                .iter()
                .any(|i| i.line == line && i.code.as_deref() == Some(code))
    })
}

fn p50(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn click(repo: &Path, edits: usize) {
    for ls in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap().join("click");
        let ok = std::process::Command::new("git")
            .args(["clone", "-q"])
            .arg(repo)
            .arg(&ws)
            .status()
            .unwrap();
        assert!(ok.success());
        let utils = ws.join("src/click/utils.py");
        let core = ws.join("src/click/core.py");
        let clean = std::fs::read_to_string(&utils).unwrap();
        let broken = clean.replace(
            "def make_str(value: t.Any) -> str:",
            "def make_str(value: t.Any, strict: bool) -> str:",
        );
        assert_ne!(clean, broken);
        let p = plugin(ls);
        let (mut warm, mut named, mut stale) = (Vec::new(), 0, 0);
        let mut cold = 0.0;
        for n in 0..=edits {
            let breaking = n % 2 == 0;
            std::fs::write(&utils, if breaking { &broken } else { &clean }).unwrap();
            let t = Instant::now();
            let resp = p
                .check(request(&ws, vec![utils.clone()], n as u64))
                .unwrap();
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            let found = names(&resp, &core, 2069, "reportCallIssue");
            if n == 0 {
                cold = ms;
                assert!(found, "the cold check names the caller");
                continue;
            }
            warm.push(ms);
            if breaking {
                named += usize::from(found);
            } else {
                stale += usize::from(found);
            }
        }
        println!(
            "click, {}: cold {cold:.0} ms; warm p50 {:.0} ms, max {:.0} ms over {} checks; caller \
             named {named}/{} breaking, still named after {stale} reverts",
            if ls {
                "language server"
            } else {
                "command line"
            },
            p50(&mut warm),
            warm.iter().cloned().fold(0.0, f64::max),
            warm.len(),
            edits / 2,
        );
    }
}

/// `n` packages under `packages/`, each its own pyright project (or, `configured` false, one
/// project at the workspace root); the edited module of each.
fn monorepo(ws: &Path, n: usize, configured: bool) -> Vec<PathBuf> {
    if !configured {
        std::fs::write(ws.join("pyproject.toml"), "[tool.pyright]\n").unwrap();
    }
    (0..n)
        .map(|i| {
            let pkg = ws.join(format!("packages/pkg{i}"));
            std::fs::create_dir_all(pkg.join(format!("pkg{i}"))).unwrap();
            if configured {
                std::fs::write(
                    pkg.join("pyproject.toml"),
                    format!("[project]\nname = \"pkg{i}\"\n\n[tool.pyright]\n"),
                )
                .unwrap();
            }
            std::fs::write(pkg.join(format!("pkg{i}/__init__.py")), "").unwrap();
            let file = pkg.join(format!("pkg{i}/core.py"));
            std::fs::write(
                &file,
                format!(
                    "import os\n\n\ndef f{i}(x: int) -> str:\n    return x + undefined_{i}\n\n\n\
                     VALUE: int = f{i}(1)\n"
                ),
            )
            .unwrap();
            file
        })
        .collect()
}

/// RSS (MiB) of this process's descendants (the language servers, the command lines),
/// summed.
fn children_rss() -> u64 {
    let mut parent = std::collections::HashMap::new();
    let mut rss = std::collections::HashMap::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1)?.parse::<u32>().ok());
        let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
        let kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        if let Some(ppid) = ppid {
            parent.insert(pid, ppid);
        }
        rss.insert(pid, kib);
    }
    let me = std::process::id();
    let below = |mut p: u32| {
        for _ in 0..64 {
            match parent.get(&p) {
                Some(&pp) if pp == me => return true,
                Some(&pp) if pp > 1 => p = pp,
                _ => return false,
            }
        }
        false
    };
    rss.iter()
        .filter(|(p, _)| below(**p))
        .map(|(_, k)| k)
        .sum::<u64>()
        >> 10
}

fn monorepo_case(n: usize, configured: bool, ls: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let files = monorepo(&ws, n, configured);
    let p = plugin(ls);
    let done = AtomicBool::new(false);
    let peak = AtomicU64::new(0);
    let t = Instant::now();
    let checked = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(children_rss(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        // One check for all packages, as the service launches a warm source's projects due
        // at once; `KNOCK_ON_CHECK_PER_PACKAGE` (any value): one check per package root at
        // once, each its own program (the service before it batched them).
        let roots: Vec<Vec<PathBuf>> =
            if configured && std::env::var_os("KNOCK_ON_CHECK_PER_PACKAGE").is_some() {
                files.iter().map(|f| vec![f.clone()]).collect()
            } else {
                vec![files.clone()]
            };
        let handles: Vec<_> = roots
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                let (p, ws) = (&p, &ws);
                s.spawn(move || p.check(request(ws, f, i as u64)).unwrap())
            })
            .collect();
        let resps: Vec<CheckResponse> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        peak.fetch_max(children_rss(), Ordering::Relaxed);
        done.store(true, Ordering::Relaxed);
        files
            .iter()
            .filter(|f| {
                resps
                    .iter()
                    .any(|r| names(r, f, 5, "reportUndefinedVariable"))
            })
            .count()
    });
    println!(
        "monorepo {n} packages{}, {}: every package checked ({checked}/{n}) in {:.0} ms; checker \
         processes' RSS peak {} MiB",
        if configured {
            " each configuring pyright"
        } else {
            " (plain: one project)"
        },
        if ls {
            "language server"
        } else {
            "command line"
        },
        t.elapsed().as_secs_f64() * 1000.0,
        peak.load(Ordering::Relaxed),
    );
}

fn main() {
    let edits = std::env::var("OPENFILES_BENCH_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    match std::env::var_os("OPENFILES_BENCH_CLICK") {
        Some(repo) => click(Path::new(&repo), edits),
        None => println!("click: skipped (set OPENFILES_BENCH_CLICK to a checkout)"),
    }
    for configured in [true, false] {
        for ls in [true, false] {
            monorepo_case(12, configured, ls);
        }
    }
}
