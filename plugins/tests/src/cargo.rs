//! `cargo test` (or `cargo nextest run`) over the edited file's crate and the workspace
//! crates that depend on it (`cargo metadata --no-deps`, path dependencies of every kind,
//! transitively). Built in the plugin's own target directory (never the user's `target/`,
//! whose lock and artifacts stay theirs; a baseline snapshot builds beside it, as the
//! cargo-check plugin does). nextest's machine-readable output (`libtest-json-plus`) when it
//! is installed, else libtest's plain lines (`test x ... FAILED` and the `---- x stdout ----`
//! blocks), which are stable; a failure is placed at its panic's location when that is a
//! file of the workspace, else at the test function's `fn` line.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use openfiles_plugin_api::gate::Program;
use openfiles_plugin_api::{Item, PluginError, Severity};
use serde::Deserialize;

use crate::{mark_flaky, run, Failure, Job, Outcome};

/// The most `.rs` files searched for a test's `fn` line.
const MAX_SEARCH_FILES: usize = 4_000;

#[derive(Debug, Deserialize)]
struct Metadata {
    workspace_root: PathBuf,
    packages: Vec<Package>,
}

#[derive(Debug, Deserialize)]
struct Package {
    name: String,
    manifest_path: PathBuf,
    #[serde(default)]
    dependencies: Vec<Dependency>,
}

#[derive(Debug, Deserialize)]
struct Dependency {
    name: String,
    #[serde(default)]
    path: Option<PathBuf>,
}

/// The crates to test for `edited` files: theirs and their dependents in the workspace.
fn select(meta: &Metadata, edited: &[PathBuf]) -> BTreeSet<String> {
    let dir = |p: &Package| {
        p.manifest_path
            .parent()
            .map(Path::to_owned)
            .unwrap_or_default()
    };
    let mut start = BTreeSet::new();
    for f in edited {
        let owner = meta
            .packages
            .iter()
            .filter(|p| f.starts_with(dir(p)))
            .max_by_key(|p| dir(p).components().count());
        if let Some(p) = owner {
            start.insert(p.name.clone());
        }
    }
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in &meta.packages {
        for d in p.dependencies.iter().filter(|d| d.path.is_some()) {
            dependents
                .entry(d.name.as_str())
                .or_default()
                .push(p.name.as_str());
        }
    }
    let mut out = BTreeSet::new();
    let mut queue: VecDeque<String> = start.into_iter().collect();
    while let Some(name) = queue.pop_front() {
        if !out.insert(name.clone()) {
            continue;
        }
        for d in dependents.get(name.as_str()).into_iter().flatten() {
            queue.push_back((*d).to_owned());
        }
    }
    out
}

/// Run the tests of `job`'s crates.
pub fn run(job: &Job) -> Result<Outcome, PluginError> {
    let cargo = cargo_program(job)?;
    let mut cmd = cargo.command([
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]);
    cmd.current_dir(job.root);
    let ran = job.run(&mut cmd)?;
    let meta: Metadata = serde_json::from_str(&ran.stdout).map_err(|e| {
        PluginError::Tool(format!(
            "cargo metadata failed in {}: {e}\n{}",
            job.root.display(),
            run::tail(&ran.stderr, 8)
        ))
    })?;
    let crates = select(&meta, job.files);
    eprintln!(
        "tests: cargo at {}: {} of {} crates selected",
        meta.workspace_root.display(),
        crates.len(),
        meta.packages.len()
    );
    if crates.is_empty() {
        return Ok(Outcome::default());
    }
    let target = target_dir(job, &meta.workspace_root);
    let nextest = job.plugin.settings.nextest
        && job
            .program("cargo-nextest", "cargo-nextest (tests plugin)")
            .is_ok();
    let mut args: Vec<String> = if nextest {
        [
            "nextest",
            "run",
            "--no-fail-fast",
            "--no-tests=pass",
            "--message-format",
            "libtest-json-plus",
        ]
        .map(str::to_owned)
        .to_vec()
    } else {
        ["test", "--no-fail-fast"].map(str::to_owned).to_vec()
    };
    args.push("--target-dir".into());
    args.push(target.display().to_string());
    for c in &crates {
        args.push("-p".into());
        args.push(c.clone());
    }
    let mut cmd = cargo.command(&args);
    cmd.current_dir(&meta.workspace_root)
        .env("RUST_BACKTRACE", "0")
        .env("NEXTEST_EXPERIMENTAL_LIBTEST_JSON", "1");
    let ran = job.run(&mut cmd)?;
    let raw = if nextest {
        parse_nextest(&ran.stdout)
    } else {
        parse_libtest(&ran.stdout)
    };
    let dirs: Vec<PathBuf> = meta
        .packages
        .iter()
        .filter(|p| crates.contains(&p.name))
        .filter_map(|p| p.manifest_path.parent().map(Path::to_owned))
        .collect();
    let mut failures: Vec<Failure> = raw
        .into_iter()
        .map(|(id, output)| place(&id, &output, &meta.workspace_root, &dirs, job.files))
        .collect();
    let mut outcome = Outcome::default();
    if ran.timed_out() {
        outcome.unfinished = Some(format!(
            "cargo {} did not finish within the budget: the tests of {} (at {}) not run to the end",
            if nextest { "nextest run" } else { "test" },
            crates.iter().cloned().collect::<Vec<_>>().join(", "),
            meta.workspace_root.display()
        ));
    } else if !ran.success() && failures.is_empty() {
        outcome.notes.push(Item::note(
            Severity::Warning,
            "cargo-test",
            format!(
                "the tests of {} did not build or run, none is reported:\n{}",
                crates.iter().cloned().collect::<Vec<_>>().join(", "),
                run::tail(&ran.stderr, 6)
            ),
        ));
        return Ok(outcome);
    }
    if !ran.timed_out() {
        mark_flaky(job, &mut failures, |f| {
            let mut args = vec![
                "test".to_owned(),
                "--target-dir".into(),
                target.display().to_string(),
            ];
            for c in &crates {
                args.push("-p".into());
                args.push(c.clone());
            }
            args.extend(["--".into(), "--exact".into(), f.id.clone()]);
            let mut cmd = cargo.command(&args);
            cmd.current_dir(&meta.workspace_root)
                .env("RUST_BACKTRACE", "0");
            let again = job.run(&mut cmd)?;
            Ok(again.success() && again.stdout.contains(&format!("test {} ... ok", f.id)))
        })?;
    }
    outcome.failures = failures;
    Ok(outcome)
}

/// cargo for the check: `CARGO` from the environment the plugin host was started with is
/// not trusted; `cargo` on `PATH`, else rustup's folder.
fn cargo_program(job: &Job) -> Result<Program, PluginError> {
    if let Ok(p) = job.program("cargo", "cargo test (tests plugin)") {
        return Ok(p);
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let path = home.map(|h| h.join("bin/cargo")).unwrap_or_default();
    Program::at(&path, &job.scope, "cargo test (tests plugin)")
        .map_err(|e| PluginError::Tool(format!("cargo: {e}")))
}

/// The plugin's own target directory for the cargo workspace at `root` (a snapshot's runs
/// build in one beside the real project's).
fn target_dir(job: &Job, root: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let (real, suffix) = match job
        .cache_of
        .and_then(|real| Some(real.join(root.strip_prefix(job.workspace).ok()?)))
    {
        Some(real) => (real, "-baseline"),
        None => (root.to_owned(), ""),
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    real.hash(&mut h);
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    job.plugin
        .state_dir
        .join("target")
        .join(format!("{name}-{:016x}{suffix}", h.finish()))
}

/// nextest's `libtest-json-plus` lines: the failed tests (the path after `$`) and their
/// output.
pub fn parse_nextest(stdout: &str) -> Vec<(String, String)> {
    #[derive(Deserialize)]
    struct Event {
        #[serde(rename = "type")]
        kind: String,
        event: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        stdout: String,
    }
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Event>(l).ok())
        .filter(|e| e.kind == "test" && e.event == "failed")
        .map(|e| {
            let id = e.name.split_once('$').map(|(_, t)| t).unwrap_or(&e.name);
            (id.to_owned(), e.stdout)
        })
        .collect()
}

/// libtest's plain output: the tests reported `FAILED` and their `---- x stdout ----` blocks.
pub fn parse_libtest(stdout: &str) -> Vec<(String, String)> {
    let mut failed: Vec<String> = Vec::new();
    let mut blocks: BTreeMap<String, String> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in stdout.lines() {
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            current = Some(name.to_owned());
            continue;
        }
        if line == "failures:" || line.starts_with("test result:") {
            current = None;
            continue;
        }
        if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|l| l.strip_suffix(" ... FAILED"))
        {
            failed.push(name.to_owned());
            continue;
        }
        if let Some(name) = &current {
            let b = blocks.entry(name.clone()).or_default();
            b.push_str(line);
            b.push('\n');
        }
    }
    failed
        .into_iter()
        .map(|id| {
            let out = blocks.get(&id).cloned().unwrap_or_default();
            (id, out)
        })
        .collect()
}

/// Where a failure goes and what it says: the panic's location (a workspace file) and
/// message, else the test's `fn` line and the output's last lines.
fn place(id: &str, output: &str, ws_root: &Path, dirs: &[PathBuf], edited: &[PathBuf]) -> Failure {
    let (location, message) = panic_of(output);
    let at = location.and_then(|(file, line)| {
        let p = ws_root.join(file);
        (p.starts_with(ws_root) && p.is_file()).then_some((p, line))
    });
    let at = at
        .or_else(|| doctest_location(id, dirs))
        .or_else(|| fn_line(id, dirs))
        .unwrap_or_else(|| (edited.first().cloned().unwrap_or_default(), 1));
    let message = message.unwrap_or_else(|| {
        let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(3)..].join("\n")
    });
    Failure {
        id: id.to_owned(),
        path: at.0,
        line: at.1,
        message,
        flaky: false,
    }
}

/// The first panic in a test's output: `thread 'x' (id) panicked at file:line:col:` and the
/// message lines after it (up to a `note:` or a backtrace).
pub fn panic_of(output: &str) -> (Option<(String, u32)>, Option<String>) {
    let mut lines = output.lines();
    while let Some(l) = lines.next() {
        let Some(at) = l.find("panicked at ") else {
            continue;
        };
        let loc = l[at + "panicked at ".len()..].trim_end_matches(':');
        let mut parts = loc.rsplitn(3, ':');
        let (_col, line, file) = (parts.next(), parts.next(), parts.next());
        let location = match (file, line.and_then(|n| n.parse().ok())) {
            (Some(f), Some(n)) => Some((f.to_owned(), n)),
            _ => None,
        };
        let message: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("note:") && !l.starts_with("stack backtrace:"))
            .collect();
        let message = message.join("\n").trim().to_owned();
        return (location, (!message.is_empty()).then_some(message));
    }
    (None, None)
}

/// A doc test's id, `src/lib.rs - add (line 3)`: that file of one of the crates, that line.
fn doctest_location(id: &str, dirs: &[PathBuf]) -> Option<(PathBuf, u32)> {
    let (file, rest) = id.split_once(" - ")?;
    let line = rest
        .rsplit_once("(line ")?
        .1
        .strip_suffix(')')?
        .parse()
        .ok()?;
    dirs.iter()
        .map(|d| d.join(file))
        .find(|p| p.is_file())
        .map(|p| (p, line))
}

/// The `fn` line of a test named by its path's last segment, searched in the crates'
/// sources (bounded).
fn fn_line(id: &str, dirs: &[PathBuf]) -> Option<(PathBuf, u32)> {
    let name = id.rsplit("::").next()?;
    let needle = format!("fn {name}(");
    let mut seen = 0;
    for dir in dirs {
        let mut stack = vec![dir.join("src"), dir.join("tests")];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() {
                    stack.push(p);
                } else if ft.is_file() && p.extension().is_some_and(|x| x == "rs") {
                    seen += 1;
                    if seen > MAX_SEARCH_FILES {
                        return None;
                    }
                    let Ok(bytes) =
                        openfiles_plugin_api::confine::read_workspace_file(dir, &p, 4 << 20)
                    else {
                        continue;
                    };
                    let text = String::from_utf8_lossy(&bytes);
                    if let Some(n) = text.lines().position(|l| l.contains(&needle)) {
                        return Some((p, n as u32 + 1));
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_plain_output() {
        let out = "\nrunning 2 tests\ntest tests::ok ... ok\ntest tests::twice_two ... FAILED\n\nfailures:\n\n---- tests::twice_two stdout ----\n\nthread 'tests::twice_two' (21177) panicked at b/src/lib.rs:7:9:\nassertion `left == right` failed\n  left: 4\n right: 5\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    tests::twice_two\n\ntest result: FAILED. 1 passed; 1 failed\n";
        let f = parse_libtest(out);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].0, "tests::twice_two");
        let (loc, msg) = panic_of(&f[0].1);
        assert_eq!(loc, Some(("b/src/lib.rs".to_string(), 7)));
        assert_eq!(
            msg.as_deref(),
            Some("assertion `left == right` failed\n  left: 4\n right: 5")
        );
    }

    #[test]
    fn nextest_json_output() {
        let out = r#"{"type":"suite","event":"started","test_count":2,"nextest":{"crate":"b","test_binary":"b","kind":"lib"}}
{"type":"test","event":"ok","name":"b::b$tests::ok","exec_time":0.05}
{"type":"test","event":"failed","name":"b::it$integ","exec_time":0.38,"stdout":"\nthread 'integ' (21207) panicked at b/tests/it.rs:3:5:\nbad 1\nnote: x\n"}"#;
        let f = parse_nextest(out);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].0, "integ");
        assert_eq!(
            panic_of(&f[0].1),
            (
                Some(("b/tests/it.rs".to_string(), 3)),
                Some("bad 1".to_string())
            )
        );
    }

    #[test]
    fn dependents_are_selected_transitively() {
        let meta: Metadata = serde_json::from_value(serde_json::json!({
            "workspace_root": "/w",
            "packages": [
                {"name": "a", "manifest_path": "/w/a/Cargo.toml", "dependencies": []},
                {"name": "b", "manifest_path": "/w/b/Cargo.toml", "dependencies": [{"name": "a", "path": "/w/a"}]},
                {"name": "c", "manifest_path": "/w/c/Cargo.toml", "dependencies": [{"name": "b", "path": "/w/b"}, {"name": "serde"}]},
                {"name": "d", "manifest_path": "/w/d/Cargo.toml", "dependencies": []}
            ]
        }))
        .unwrap();
        let sel = select(&meta, &[PathBuf::from("/w/a/src/lib.rs")]);
        assert_eq!(sel.into_iter().collect::<Vec<_>>(), vec!["a", "b", "c"]);
        let sel = select(&meta, &[PathBuf::from("/w/c/src/lib.rs")]);
        assert_eq!(sel.into_iter().collect::<Vec<_>>(), vec!["c"]);
    }
}
