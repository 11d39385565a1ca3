//! vitest and jest: the project's own runner (`node_modules/.bin/vitest`/`jest` at the
//! project root, started through the gate, trusted workspaces only) selecting by its own
//! rule — `vitest related FILES --run`, `jest --findRelatedTests FILES` — with its JSON
//! report written to a private file of the plugin's state dir (`--reporter=json
//! --outputFile=…`, `--json --outputFile=…`). The baseline's run is the whole suite.
//!
//! Both reports have one shape (jest's, which vitest's JSON reporter copies): per test file
//! `assertionResults` with `ancestorTitles`, `title`, `status`, `failureMessages` and, asked
//! for (`--includeTaskLocation`, `--testLocationInResults`), the test's `location`. An item's
//! `code` is the test's full name path with its file, relative to the project root
//! (`test/add.test.ts > add > adds two`); its line is the failing assertion's, the first frame
//! of the failure's stack in the test's file (the runners map TypeScript back through source
//! maps), else the test's definition line; its message the failure's first lines without the
//! stack. A test file that failed as a whole (it did not load) is one item with the file as
//! `code`. The failing tests are run again together, one start of the runner with `-t`
//! matching exactly their names (a whole-file failure makes it one run per failure); one that
//! passes then is flaky. Nothing is written into the project: vitest runs with `--no-cache`, jest with its
//! cache in the plugin's state dir and without watchman.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use openfiles_plugin_api::gate::Program;
use openfiles_plugin_api::test_runners::Runner;
use openfiles_plugin_api::PluginError;
use serde::Deserialize;

use crate::{mark_flaky, run, Failure, Job, Outcome};

/// A JSON report (vitest's and jest's).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    #[serde(default)]
    pub num_total_tests: u64,
    #[serde(default)]
    pub test_results: Vec<FileResult>,
}

/// One test file's results.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileResult {
    /// The test file, absolute.
    pub name: PathBuf,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub assertion_results: Vec<Assertion>,
}

/// One test's result.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Assertion {
    #[serde(default)]
    pub ancestor_titles: Vec<String>,
    pub title: String,
    pub status: String,
    #[serde(default)]
    pub failure_messages: Vec<String>,
    #[serde(default)]
    pub location: Option<Location>,
}

#[derive(Debug, Deserialize)]
pub struct Location {
    pub line: u32,
}

impl Assertion {
    /// The name the runners' `-t` matches: the describe blocks and the title, by spaces.
    fn full_name(&self) -> String {
        let mut parts = self.ancestor_titles.clone();
        parts.push(self.title.clone());
        parts.join(" ")
    }
}

/// Run the tests of `job`'s project that its edited files reach, with `runner` (vitest or
/// jest).
pub fn run(job: &Job, runner: Runner) -> Result<Outcome, PluginError> {
    let exe = runner.own_executable(job.root).ok_or_else(|| {
        PluginError::Tool(format!("{} is not a JavaScript runner", runner.source()))
    })?;
    let program = Program::at(&exe, &job.scope, "the project's test runner (tests plugin)")
        .map_err(|e| {
            PluginError::Tool(format!(
                "{}: the project's runner is not installed ({e}); `npm install` in {}",
                runner.source(),
                job.root.display()
            ))
        })?;
    let report_file = job.scratch(&format!("{}.json", runner.source()))?;
    let mut args = selection_args(runner, job);
    args.extend(report_args(runner, job, &report_file)?);
    let ran = job.run(&mut command(&program, job, &args))?;
    let report = read_report(&report_file);
    if ran.timed_out() {
        return Ok(Outcome {
            unfinished: Some(format!(
                "{} did not finish within the budget: {} (at {}) not run to the end",
                runner.source(),
                if job.whole {
                    "the project's test suite".to_owned()
                } else {
                    format!("the tests related to {}", list(job.root, job.files))
                },
                job.root.display()
            )),
            ..Outcome::default()
        });
    }
    let Some(report) = report else {
        return Err(PluginError::Tool(format!(
            "{} gave no report ({}) in {}:\n{}",
            runner.source(),
            ran.status.map(|s| s.to_string()).unwrap_or_default(),
            job.root.display(),
            run::tail(&format!("{}\n{}", ran.stdout, ran.stderr), 12)
        )));
    };
    eprintln!(
        "tests: {} at {}: {} test files, {} tests run",
        runner.source(),
        job.root.display(),
        report.test_results.len(),
        report.num_total_tests
    );
    let placed = failures(&report, job.root);
    let names: HashMap<String, Option<String>> = placed
        .iter()
        .map(|(f, name)| (f.id.clone(), name.clone()))
        .collect();
    let mut failed: Vec<Failure> = placed.into_iter().map(|(f, _)| f).collect();
    if names.values().all(Option::is_some) {
        // One run for every failing test at once (a runner's start is most of its time).
        if job.rerun(failed.len()) {
            let report = run_again(runner, &program, job, &failed, &names)?;
            for f in &mut failed {
                let name = names.get(&f.id).cloned().flatten();
                f.flaky = passed_in(&report, &f.path, name.as_deref());
            }
        }
    } else {
        mark_flaky(job, &mut failed, |f| {
            let name = names.get(&f.id).cloned().flatten();
            passed_again(runner, &program, job, &f.path, name.as_deref())
        })?;
    }
    Ok(Outcome {
        failures: failed,
        ..Outcome::default()
    })
}

/// The arguments that choose the tests: the runner's own selection from the edited files,
/// or everything for the baseline's run.
fn selection_args(runner: Runner, job: &Job) -> Vec<String> {
    let files = job.files.iter().map(|f| f.display().to_string());
    match (runner, job.whole) {
        (Runner::Vitest, true) => vec!["run".to_owned()],
        (Runner::Vitest, false) => std::iter::once("related".to_owned())
            .chain(files)
            .chain(["--run".to_owned()])
            .collect(),
        (_, true) => vec!["--ci".to_owned()],
        (_, false) => ["--ci".to_owned(), "--findRelatedTests".to_owned()]
            .into_iter()
            .chain(files)
            .collect(),
    }
}

/// The arguments that write the JSON report (with test locations) to `out` and keep the
/// runner's caches out of the project.
fn report_args(runner: Runner, job: &Job, out: &Path) -> Result<Vec<String>, PluginError> {
    let out = format!("--outputFile={}", out.display());
    Ok(match runner {
        Runner::Vitest => vec![
            "--passWithNoTests".to_owned(),
            "--no-cache".to_owned(),
            "--includeTaskLocation".to_owned(),
            "--reporter=json".to_owned(),
            out,
        ],
        _ => {
            let cache = job.plugin.state_dir.join("jest-cache");
            openfiles_plugin_api::private::create_dir(&cache)
                .map_err(|e| PluginError::io(format!("cannot create {}", cache.display()), e))?;
            vec![
                "--passWithNoTests".to_owned(),
                "--no-watchman".to_owned(),
                "--testLocationInResults".to_owned(),
                format!("--cacheDirectory={}", cache.display()),
                "--json".to_owned(),
                out,
            ]
        }
    })
}

fn command(program: &Program, job: &Job, args: &[String]) -> std::process::Command {
    let mut cmd = program.command(args);
    cmd.current_dir(job.root)
        .env("CI", "1")
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0");
    cmd
}

/// The report at `path`, removed once read; `None` when there is none or it does not parse.
fn read_report(path: &Path) -> Option<Report> {
    let text = std::fs::read_to_string(path).ok();
    let _ = std::fs::remove_file(path);
    serde_json::from_str(&text?).ok()
}

/// Run the failing tests again at once (their files, `-t` matching exactly their names): the
/// report (empty when there is none or the budget stopped it).
fn run_again(
    runner: Runner,
    program: &Program,
    job: &Job,
    failed: &[Failure],
    names: &HashMap<String, Option<String>>,
) -> Result<Report, PluginError> {
    let out = job.scratch(&format!("{}-again.json", runner.source()))?;
    let mut files: Vec<String> = failed
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    files.sort();
    files.dedup();
    let mut args = match runner {
        Runner::Vitest => vec!["run".to_owned()],
        _ => vec!["--ci".to_owned(), "--runTestsByPath".to_owned()],
    };
    args.extend(files);
    let pattern: Vec<String> = failed
        .iter()
        .filter_map(|f| names.get(&f.id).cloned().flatten())
        .map(|n| regex_escape(&n))
        .collect();
    args.extend(["-t".to_owned(), format!("^(?:{})$", pattern.join("|"))]);
    args.extend(report_args(runner, job, &out)?);
    let ran = job.run(&mut command(program, job, &args))?;
    let report = read_report(&out).unwrap_or_default();
    Ok(if ran.timed_out() {
        Report::default()
    } else {
        report
    })
}

/// Whether `report` has the test `name` of `file` (every test of it for `None`) passing.
fn passed_in(report: &Report, file: &Path, name: Option<&str>) -> bool {
    report
        .test_results
        .iter()
        .filter(|r| r.name == file)
        .any(|r| {
            let tests: Vec<&Assertion> = match name {
                Some(n) => r
                    .assertion_results
                    .iter()
                    .filter(|a| a.full_name() == n)
                    .collect(),
                None => r.assertion_results.iter().collect(),
            };
            !tests.is_empty() && tests.iter().all(|a| a.status == "passed")
        })
}

/// Run one failing test again on its own: whether it passed then. `name` is `None` for a
/// test file that failed as a whole (the file is run again).
fn passed_again(
    runner: Runner,
    program: &Program,
    job: &Job,
    file: &Path,
    name: Option<&str>,
) -> Result<bool, PluginError> {
    let out = job.scratch(&format!("{}-again.json", runner.source()))?;
    let file_arg = file.display().to_string();
    let mut args = match runner {
        Runner::Vitest => vec!["run".to_owned(), file_arg],
        _ => vec!["--ci".to_owned(), "--runTestsByPath".to_owned(), file_arg],
    };
    if let Some(name) = name {
        args.extend(["-t".to_owned(), format!("^{}$", regex_escape(name))]);
    }
    args.extend(report_args(runner, job, &out)?);
    let ran = job.run(&mut command(program, job, &args))?;
    let Some(report) = read_report(&out) else {
        return Ok(false);
    };
    Ok(!ran.timed_out() && passed_in(&report, file, name))
}

/// The report's failing tests, placed; each with its full name (for the re-run; `None` for
/// a test file that failed as a whole).
pub fn failures(report: &Report, root: &Path) -> Vec<(Failure, Option<String>)> {
    let mut out = Vec::new();
    for file in &report.test_results {
        let rel = file
            .name
            .strip_prefix(root)
            .unwrap_or(&file.name)
            .display()
            .to_string();
        let failing: Vec<&Assertion> = file
            .assertion_results
            .iter()
            .filter(|a| a.status == "failed")
            .collect();
        if failing.is_empty() && file.status == "failed" {
            out.push((
                Failure {
                    id: rel.clone(),
                    path: file.name.clone(),
                    line: 1,
                    message: strip_stack(&file.message),
                    flaky: false,
                },
                None,
            ));
        }
        for a in failing {
            let first = a.failure_messages.first().map(String::as_str).unwrap_or("");
            let line = stack_line(first, &file.name)
                .or_else(|| a.location.as_ref().map(|l| l.line))
                .unwrap_or(1);
            let mut path = vec![rel.clone()];
            path.extend(a.ancestor_titles.iter().cloned());
            path.push(a.title.clone());
            out.push((
                Failure {
                    id: path.join(" > "),
                    path: file.name.clone(),
                    line,
                    message: strip_stack(first),
                    flaky: false,
                },
                Some(a.full_name()),
            ));
        }
    }
    out
}

/// The line of the first stack frame in `file` (`…/file.test.ts:12:5`, also as a
/// `file://` URL).
fn stack_line(message: &str, file: &Path) -> Option<u32> {
    let needle = format!("{}:", file.display());
    message
        .lines()
        .filter(|l| l.trim_start().starts_with("at "))
        .find_map(|l| {
            let at = l.find(&needle)? + needle.len();
            let digits: String = l[at..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
}

/// A failure's text without its stack frames.
fn strip_stack(message: &str) -> String {
    message
        .lines()
        .filter(|l| !l.trim_start().starts_with("at "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` as a regular expression that matches it literally (JavaScript's syntax).
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.*+?()[]{}|/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The edited files, relative to the project root, for a sentence.
fn list(root: &Path, files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.strip_prefix(root).unwrap_or(f).display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_to_failures_at_the_assertion() {
        let report: Report = serde_json::from_str(
            r#"{"numTotalTests":3,"testResults":[
              {"name":"/p/test/add.test.js","status":"failed","message":"","assertionResults":[
                {"ancestorTitles":["add"],"title":"adds two","status":"failed","location":{"line":5,"column":3},
                 "failureMessages":["AssertionError: expected 4 to be 3 // Object.is equality\n    at /p/test/add.test.js:6:23\n    at file:///p/node_modules/x.js:1:1"]},
                {"ancestorTitles":[],"title":"passes","status":"passed","failureMessages":[]},
                {"ancestorTitles":[],"title":"no stack","status":"failed","location":{"line":9,"column":1},
                 "failureMessages":["Error: boom"]}]},
              {"name":"/p/test/broken.test.js","status":"failed","message":"SyntaxError: Unexpected token\n    at x","assertionResults":[]}]}"#,
        )
        .unwrap();
        let got: Vec<(String, u32, String, Option<String>)> = failures(&report, Path::new("/p"))
            .into_iter()
            .map(|(f, n)| (f.id, f.line, f.message, n))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "test/add.test.js > add > adds two".into(),
                    6,
                    "AssertionError: expected 4 to be 3 // Object.is equality".into(),
                    Some("add adds two".into())
                ),
                (
                    "test/add.test.js > no stack".into(),
                    9,
                    "Error: boom".into(),
                    Some("no stack".into())
                ),
                (
                    "test/broken.test.js".into(),
                    1,
                    "SyntaxError: Unexpected token".into(),
                    None
                ),
            ]
        );
        assert_eq!(regex_escape("a (b) [c]"), r"a \(b\) \[c\]");
    }
}
