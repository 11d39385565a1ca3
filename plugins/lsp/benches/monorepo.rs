//! Monorepos (issue 22): a workspace of N small Python packages (each its own
//! `pyproject.toml`), one edited file in each, checked by ruff and pyright through the plugin.
//! Prints, per N and mode, the server processes started, their total RSS (summed over each
//! server's process tree, read from /proc once every file is checked) and the time from the
//! check request until every file has its results.
//!
//! Modes:
//! - "per-root": the behaviour before issue 22 (`share_servers = false`, limits off, every
//!   `pyproject.toml` a pyright root): one ruff and one pyright per package;
//! - "shared": the defaults: one ruff per workspace with the packages as workspace folders,
//!   one pyright whose project is the workspace (no package has a `[tool.pyright]` table, so
//!   none is a pyright project of its own), `max_servers` / `max_memory_mib` at their defaults;
//! - "configured": as shared, but every package has a `[tool.pyright]` table, so each is a
//!   workspace folder of the one pyright (pyright makes each folder a whole program);
//! - "ts-per-root" / "ts-shared": N TypeScript packages (a tsconfig.json each) checked by
//!   typescript-language-server, one per package (before) or one for the workspace.
//!
//! Goal: 12 packages ≤ 400 MiB and ≤ 5 s.
//!
//! Run: `cargo bench -p openfiles-plugin-lsp --bench monorepo` (needs ruff and
//! pyright-langserver; `scripts/install-test-deps.sh`). `OPENFILES_BENCH_PACKAGES=12` limits
//! the sizes run (comma-separated; default `12,50`), `OPENFILES_BENCH_MODES=shared` the modes
//! (default `per-root,shared,configured,ts-per-root,ts-shared`). Each case runs alone, in a fresh temp workspace,
//! with servers started cold.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

use openfiles_plugin_api::{CheckRequest, Init, Plugin, Severity};
use openfiles_plugin_lsp::{config, limits, LspPlugin, SOURCE};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One module per package: an unused import (ruff F401), an undefined name (ruff F821,
/// pyright reportUndefinedVariable) and a wrong return type (pyright).
fn module(i: usize) -> String {
    format!(
        "import os\n\n\ndef f{i}(x: int) -> str:\n    return x + undefined_{i}\n\n\nVALUE: int = f{i}(1)\n"
    )
}

/// One TypeScript module per package: a wrong return type and an undefined name.
fn ts_module(i: usize) -> String {
    format!("export function f{i}(x: number): string {{\n  return x;\n}}\nexport const v{i}: number = missing_{i};\n")
}

/// N TypeScript packages, each with its own tsconfig.json and package.json.
fn build_ts(ws: &Path, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let pkg = ws.join(format!("packages/pkg{i}"));
            std::fs::create_dir_all(pkg.join("src")).unwrap();
            std::fs::write(
                pkg.join("tsconfig.json"),
                r#"{"compilerOptions":{"strict":true,"noEmit":true,"target":"es2020"},"include":["src/*.ts"]}"#,
            )
            .unwrap();
            std::fs::write(pkg.join("package.json"), format!(r#"{{"name":"pkg{i}"}}"#)).unwrap();
            let file = pkg.join("src/core.ts");
            std::fs::write(&file, "export const untouched = 1;\n").unwrap();
            file
        })
        .collect()
}

fn build(ws: &Path, n: usize, configured: bool) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let pkg = ws.join(format!("packages/pkg{i}"));
            std::fs::create_dir_all(pkg.join(format!("src/pkg{i}"))).unwrap();
            std::fs::write(
                pkg.join("pyproject.toml"),
                format!(
                    "[project]\nname = \"pkg{i}\"\nversion = \"0.1.0\"\n[tool.ruff]\nline-length = 100\n{}",
                    if configured { "[tool.pyright]\nreportMissingModuleSource = \"warning\"\n" } else { "" }
                ),
            )
            .unwrap();
            std::fs::write(pkg.join(format!("src/pkg{i}/__init__.py")), "").unwrap();
            let file = pkg.join(format!("src/pkg{i}/core.py"));
            std::fs::write(&file, "def untouched() -> None:\n    pass\n").unwrap();
            file
        })
        .collect()
}

struct Figures {
    servers: usize,
    rss_mib: f64,
    seconds: f64,
    complete: usize,
}

/// How the case runs: servers per project root (before issue 22), shared, or shared with
/// every package a pyright project of its own (a `[tool.pyright]` table in each).
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    PerRoot,
    Shared,
    Configured,
    /// TypeScript packages, one typescript-language-server per package (before issue 22).
    TsPerRoot,
    /// TypeScript packages, one typescript-language-server for the workspace.
    TsShared,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::PerRoot => "per-root",
            Mode::Shared => "shared",
            Mode::Configured => "configured",
            Mode::TsPerRoot => "ts-per-root",
            Mode::TsShared => "ts-shared",
        }
    }

    fn typescript(self) -> bool {
        matches!(self, Mode::TsPerRoot | Mode::TsShared)
    }
}

fn run(n: usize, mode: Mode) -> Figures {
    let shared = !matches!(mode, Mode::PerRoot | Mode::TsPerRoot);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("ws");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let files = if mode.typescript() {
        build_ts(&ws, n)
    } else {
        build(&ws, n, mode == Mode::Configured)
    };
    let config = if mode.typescript() {
        json!({"share_servers": shared, "max_servers": if shared { 16 } else { 0 }, "max_memory_mib": if shared { 2048 } else { 0 }})
    } else if shared {
        json!({"disable": ["basedpyright"]})
    } else {
        json!({"disable": ["basedpyright"], "share_servers": false, "max_servers": 0, "max_memory_mib": 0,
               "servers": {"pyright": {"root_markers": ["pyrightconfig.json", "pyproject.toml"]}}})
    };
    let (plugin, _) = LspPlugin::create(Init {
        config,
        state_dir: state,
        host_version: "bench".into(),
    })
    .unwrap();
    // The agent edits one file in each package, then the service asks for all of them.
    for (i, f) in files.iter().enumerate() {
        let text = if mode.typescript() {
            ts_module(i)
        } else {
            module(i)
        };
        std::fs::write(f, text).unwrap();
    }
    let started = Instant::now();
    let resp = plugin
        .check(CheckRequest {
            trusted: true,
            id: 1,
            workspace: ws.clone(),
            files: files.clone(),
            also_report: Vec::new(),
            timeout_ms: 600_000,
            ..Default::default()
        })
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    // Complete: both servers answered (no timeout or error note) with the expected errors.
    let complete = resp
        .files
        .iter()
        .filter(|f| {
            let from = |s: &str| {
                f.items
                    .iter()
                    .any(|i| i.source == s && i.severity == Severity::Error)
            };
            let sources: &[&str] = if mode.typescript() {
                &["typescript"]
            } else {
                &["Ruff", "Pyright"]
            };
            f.items.iter().all(|i| i.source != SOURCE) && sources.iter().all(|s| from(s))
        })
        .count();
    let pids: Vec<u32> = plugin.server_pids().into_iter().map(|(_, p)| p).collect();
    let rss: u64 = limits::tree_rss(&pids).iter().sum();
    let figures = Figures {
        servers: pids.len(),
        rss_mib: rss as f64 / (1 << 20) as f64,
        seconds,
        complete,
    };
    drop(plugin);
    figures
}

fn main() {
    let have = |s: &str| {
        config::builtin()
            .into_iter()
            .find(|x| x.name == s)
            .is_some_and(|spec| config::on_path(&spec.command).is_some())
    };
    if !have("ruff") || !have("pyright") || !have("typescript-language-server") {
        println!("monorepo: ruff, pyright-langserver and typescript-language-server are needed (scripts/install-test-deps.sh)");
        return;
    }
    let sizes: Vec<usize> = std::env::var("OPENFILES_BENCH_PACKAGES")
        .unwrap_or_else(|_| "12,50".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    println!(
        "monorepo: N packages, one edited file each, through the lsp plugin (Python: ruff + pyright; ts-*: typescript-language-server)"
    );
    println!(
        "{:>8}  {:<10} {:>8} {:>14} {:>18} {:>9}",
        "packages", "mode", "servers", "server RSS", "all files checked", "complete"
    );
    let modes = std::env::var("OPENFILES_BENCH_MODES")
        .unwrap_or_else(|_| "per-root,shared,configured,ts-per-root,ts-shared".into());
    for &n in &sizes {
        for mode in [
            Mode::PerRoot,
            Mode::Shared,
            Mode::Configured,
            Mode::TsPerRoot,
            Mode::TsShared,
        ] {
            if !modes.split(',').any(|m| m.trim() == mode.name()) {
                continue;
            }
            let f = run(n, mode);
            println!(
                "{:>8}  {:<10} {:>8} {:>10.0} MiB {:>16.2} s {:>5}/{n}",
                n,
                mode.name(),
                f.servers,
                f.rss_mib,
                f.seconds,
                f.complete
            );
            // Let the stopped servers' memory and CPU return before the next case.
            std::thread::sleep(Duration::from_secs(2));
        }
    }
    println!("goal (issue 22): 12 packages ≤ 400 MiB and ≤ 5 s");
}
