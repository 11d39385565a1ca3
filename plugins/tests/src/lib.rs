//! `tests`: an openfiles plugin that runs the project's own tests an edit reaches and
//! reports each failing test as an item in the test's file (issue 40): the edit that
//! type-checks and changes behaviour.
//!
//! A project-wide source. Per edited file, its runner and project root follow the plugin
//! API's one rule ([`test_runners`](openfiles_plugin_api::test_runners)): Rust → `cargo
//! test` (`cargo nextest run` when cargo-nextest is installed) over the edited file's crate
//! and the workspace crates that depend on it ([`cargo`]); Python → pytest over the test
//! modules whose imports reach the edited module ([`pytest`]); Go → `go test -json` over the
//! edited package and its importers ([`gotest`]); JavaScript and TypeScript → the project's
//! vitest or jest with its own selection, `vitest related`/`jest --findRelatedTests`
//! ([`js`]). A run over the baseline's snapshot
//! (`cache_of`) runs everything the project's edits could select (the crate and its
//! dependents, every test module, every package), so a test that already failed at the
//! commit is known whichever file the session edits.
//!
//! An item: in the test's file at the failing assertion's line (the test's definition when
//! the runner does not say), `source` the runner (`cargo-test`, `pytest`, `go-test`, `vitest`, `jest`), `code`
//! the test's full id, the failure's first lines as message, an error. A failing test is run
//! once more on its own at once; when it passes then, it is reported as flaky (a warning),
//! never as an error.
//!
//! Tests run the project's code: only in a trusted workspace. In an untrusted one nothing
//! runs (no `conftest.py`, build script or test executes) and each file gets the API's
//! untrusted note. One run per workspace at a time (a second check waits, and a cancelled
//! one stops waiting); the host's cancel kills the runner's process group; a budget per
//! check (`budget_ms`, default 60 s, never past the host's deadline) after which the runner
//! is stopped and an item says what did not finish; runners run at a lower CPU priority
//! (`nice`, default 10). Nothing is written into the project: cargo builds in the plugin's
//! own target directory, pytest runs without its cache plugin and without bytecode files,
//! its JUnit report goes to a private file of the plugin's state dir.
//!
//! Config (`[plugin.tests]`): `budget_ms = 60000`, `nice = 10`, `rerun_failed = true`
//! (the flaky check), `nextest = true` (use cargo-nextest when installed).

pub mod cargo;
pub mod gotest;
pub mod js;
pub mod junit;
pub mod pytest;
mod run;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use openfiles_plugin_api::gate::{Program, Scope};
use openfiles_plugin_api::test_runners::Runner;
use openfiles_plugin_api::tools::{scope, Findings, ToolRuns};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin,
    PluginError, Severity,
};
use serde::Deserialize;

/// The plugin's own notes (untrusted workspace, budget).
pub const SOURCE: &str = "tests";
/// The `code` of the item that says what did not finish within the budget.
pub const BUDGET_CODE: &str = "tests-budget";
/// How many lines of a failure's message an item keeps, and how many characters.
const MESSAGE_LINES: usize = 4;
const MESSAGE_CHARS: usize = 400;
/// At most this many failures are run again to tell a flaky test (more: the edit broke
/// them, or the run is too slow to repeat).
const MAX_RERUNS: usize = 10;

/// `[plugin.tests]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Milliseconds one check's runs may take in all.
    pub budget_ms: u64,
    /// How much lower the runners' CPU priority is (added niceness, 0–19).
    pub nice: i32,
    /// Run a failing test once more on its own, to report a flaky one as such.
    pub rerun_failed: bool,
    /// Use cargo-nextest for Rust when it is installed.
    pub nextest: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            budget_ms: 60_000,
            nice: 10,
            rerun_failed: true,
            nextest: true,
        }
    }
}

/// One failing test, as a runner reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The test's full id (`tests::min_depth_1`, `tests/test_x.py::test_y[1]`, `TestSum`).
    pub id: String,
    /// The file to report it in (absolute), and the line (1-based).
    pub path: PathBuf,
    pub line: u32,
    /// The failure's text (the plugin keeps its first lines).
    pub message: String,
    /// It passed when run again on its own: reported as a warning, never as broken.
    pub flaky: bool,
}

/// What one runner's run over one project gave.
#[derive(Debug, Default)]
pub struct Outcome {
    pub failures: Vec<Failure>,
    /// What did not finish within the budget, said plainly (`None`: everything ran).
    pub unfinished: Option<String>,
    /// Notes for every file of the run (a build that failed, a runner missing).
    pub notes: Vec<Item>,
}

/// What a runner needs for one run.
pub struct Job<'a> {
    pub plugin: &'a Tests,
    pub id: u64,
    pub scope: Scope,
    pub workspace: &'a Path,
    /// The project root (the runner's: crate folder, pytest rootdir, Go module).
    pub root: &'a Path,
    /// What selects the tests: the files edited since the last check of this project, and
    /// the files of the tests that failed in its last run (so they are run, and reported or
    /// cleared, again); not every file of the session.
    pub files: &'a [PathBuf],
    /// Run everything the project's edits could select (the baseline's run).
    pub whole: bool,
    /// The real workspace when `workspace` is its snapshot (share build caches).
    pub cache_of: Option<&'a Path>,
    pub deadline: Instant,
}

impl Job<'_> {
    /// Run `cmd` to its end or the deadline, niced, stoppable by a cancel.
    pub fn run(&self, cmd: &mut std::process::Command) -> Result<run::Ran, PluginError> {
        run::run(
            &self.plugin.runs,
            self.id,
            cmd,
            self.plugin.settings.nice,
            self.deadline,
        )
    }

    /// The program `name` for this check's scope.
    pub fn program(&self, name: &str, why: &'static str) -> Result<Program, PluginError> {
        Program::find(name, &self.scope, why).map_err(|e| PluginError::Tool(e.to_string()))
    }

    /// A private scratch file of the plugin's state dir for this check.
    pub fn scratch(&self, name: &str) -> Result<PathBuf, PluginError> {
        let dir = self.plugin.state_dir.join("runs");
        openfiles_plugin_api::private::create_dir(&dir)
            .map_err(|e| PluginError::io(format!("cannot create {}", dir.display()), e))?;
        Ok(dir.join(format!("{}-{name}", self.id)))
    }

    /// Whether to run failing tests again, time allowing. Not in the baseline's run: a
    /// test failing there, even one that would pass again, is known as failing at the
    /// commit, so the edit is never blamed for it.
    pub fn rerun(&self, failures: usize) -> bool {
        self.plugin.settings.rerun_failed
            && !self.whole
            && failures > 0
            && failures <= MAX_RERUNS
            && Instant::now() < self.deadline
    }
}

pub struct Tests {
    settings: Settings,
    state_dir: PathBuf,
    runs: ToolRuns,
    /// Workspaces with a run in progress (one at a time each).
    busy: Mutex<HashSet<PathBuf>>,
    freed: Condvar,
    /// Per (workspace, runner, project root): the files of the tests that failed in its last
    /// run.
    failed: Mutex<HashMap<(PathBuf, Runner, PathBuf), HashSet<PathBuf>>>,
}

impl Plugin for Tests {
    const NAME: &'static str = "tests";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        let settings: Settings = init.settings("tests")?;
        let caps = Capabilities {
            extensions: Runner::ALL
                .iter()
                .flat_map(|r| r.extensions().iter().map(|e| (*e).to_owned()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect(),
            file_names: Vec::new(),
            project_markers: Runner::ALL
                .iter()
                .flat_map(|r| r.markers().iter().map(|m| (*m).to_owned()))
                .chain(["package.json".to_owned()])
                .collect(),
            project_wide: true,
            needs_project: false,
            notes: Vec::new(),
            checks_texts: false,
            late_fixes: false,
            warm: false,
            // A test run over content a newer edit replaced says nothing about it.
            superseded: true,
            serves: Vec::new(),
        };
        Ok((
            Tests {
                settings,
                state_dir: init.state_dir,
                runs: ToolRuns::new(),
                busy: Mutex::new(HashSet::new()),
                freed: Condvar::new(),
                failed: Mutex::new(HashMap::new()),
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        if !request.trusted {
            // Tests run the project's code (conftest.py, build scripts, the tests).
            let files = request
                .files
                .iter()
                .filter(|f| Runner::of(f, &request.workspace).is_some())
                .map(|f| FileResult {
                    path: f.clone(),
                    items: vec![Item::untrusted(
                        SOURCE,
                        "the project's tests (running them runs its code)",
                    )],
                })
                .collect();
            return Ok(CheckResponse {
                files,
                ..Default::default()
            });
        }
        let _turn = self.wait_turn(&request)?;
        let result = self.check_trusted(&request);
        self.runs.take_cancelled(request.id);
        result
    }

    fn cancel(&self, check_id: u64) {
        self.runs.cancel(check_id);
        self.freed.notify_all();
    }
}

/// The workspace's turn: released when dropped.
struct Turn<'a> {
    plugin: &'a Tests,
    workspace: PathBuf,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut busy = self.plugin.busy.lock().unwrap_or_else(|e| e.into_inner());
        busy.remove(&self.workspace);
        self.plugin.freed.notify_all();
    }
}

impl Tests {
    /// Wait until no other check of the workspace runs tests (or this one is cancelled).
    fn wait_turn(&self, request: &CheckRequest) -> Result<Turn<'_>, PluginError> {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while busy.contains(&request.workspace) {
            if self.runs.is_cancelled(request.id) {
                self.runs.take_cancelled(request.id);
                return Err(PluginError::Cancelled);
            }
            busy = self
                .freed
                .wait_timeout(busy, Duration::from_millis(200))
                .map(|(b, _)| b)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        busy.insert(request.workspace.clone());
        Ok(Turn {
            plugin: self,
            workspace: request.workspace.clone(),
        })
    }

    fn lock_failed(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(PathBuf, Runner, PathBuf), HashSet<PathBuf>>> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The budget of one check: the setting, within the host's deadline.
    fn budget(&self, request: &CheckRequest) -> Duration {
        let mut ms = self.settings.budget_ms;
        if request.timeout_ms > 0 {
            ms = ms.min(request.timeout_ms.saturating_sub(3_000).max(1_000));
        }
        Duration::from_millis(ms)
    }

    fn check_trusted(&self, request: &CheckRequest) -> Result<CheckResponse, PluginError> {
        let deadline = Instant::now() + self.budget(request);
        let mut groups: BTreeMap<(Runner, PathBuf), Vec<PathBuf>> = BTreeMap::new();
        let mut files = Vec::new();
        let mut seen = HashSet::new();
        for file in request.files.iter().chain(&request.also_report) {
            if !seen.insert(file.clone()) {
                continue;
            }
            match Runner::of(file, &request.workspace) {
                Some(key) => groups.entry(key).or_default().push(file.clone()),
                None => files.push(FileResult {
                    path: file.clone(),
                    items: Vec::new(),
                }),
            }
        }
        let scope = scope(request);
        files.extend(self.runs.run_groups(
            request.id,
            SOURCE,
            request.report_all,
            groups,
            |(runner, root), wanted| {
                let key = (request.workspace.clone(), *runner, root.clone());
                let mut inputs: Vec<PathBuf> = wanted
                    .iter()
                    .filter(|f| request.files.contains(f))
                    .cloned()
                    .collect();
                let before: Vec<PathBuf> = self
                    .lock_failed()
                    .get(&key)
                    .map(|b| b.iter().filter(|f| !inputs.contains(f)).cloned().collect())
                    .unwrap_or_default();
                inputs.extend(before);
                let job = Job {
                    plugin: self,
                    id: request.id,
                    scope: scope.clone(),
                    workspace: &request.workspace,
                    root,
                    files: &inputs,
                    whole: request.cache_of.is_some(),
                    cache_of: request.cache_of.as_deref(),
                    deadline,
                };
                if Instant::now() >= deadline {
                    return Ok(findings(
                        *runner,
                        Outcome {
                            unfinished: Some(format!(
                                "the tests of {} did not run: the budget of {} s was spent",
                                root.display(),
                                self.budget(request).as_secs()
                            )),
                            ..Outcome::default()
                        },
                    ));
                }
                let outcome = match runner {
                    Runner::Cargo => cargo::run(&job),
                    Runner::Pytest => pytest::run(&job),
                    Runner::Go => gotest::run(&job),
                    Runner::Vitest | Runner::Jest => js::run(&job, *runner),
                };
                let outcome = outcome?;
                if outcome.unfinished.is_none() {
                    let paths = outcome.failures.iter().map(|f| f.path.clone()).collect();
                    self.lock_failed().insert(key, paths);
                }
                Ok::<Findings, PluginError>(findings(*runner, outcome))
            },
        )?);
        Ok(CheckResponse {
            files,
            ..Default::default()
        })
    }
}

/// A run's outcome as findings: each failure an item in its file, the notes and what did not
/// finish on every file of the run.
fn findings(runner: Runner, outcome: Outcome) -> Findings {
    let mut per_file: HashMap<PathBuf, Vec<Item>> = HashMap::new();
    for f in outcome.failures {
        let path = std::fs::canonicalize(&f.path).unwrap_or(f.path);
        let items = per_file.entry(path).or_default();
        let (severity, message) = if f.flaky {
            (
                Severity::Warning,
                format!("{FLAKY_PREFIX}{}", short(&f.message)),
            )
        } else {
            (Severity::Error, short(&f.message))
        };
        let item = Item {
            line: f.line.max(1),
            column: 1,
            severity,
            source: runner.source().to_owned(),
            code: Some(f.id),
            message,
            introduced: None,
            fixes: Vec::new(),
        };
        if !items.contains(&item) {
            items.push(item);
        }
    }
    let mut shared = outcome.notes;
    if let Some(what) = outcome.unfinished {
        shared.push(Item {
            code: Some(BUDGET_CODE.to_owned()),
            ..Item::note(Severity::Warning, runner.source(), what)
        });
    }
    Findings { per_file, shared }
}

/// A failure's first lines, capped, without blank lines.
pub fn short(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .take(MESSAGE_LINES)
        .collect();
    let mut text = lines.join("\n");
    if text.chars().count() > MESSAGE_CHARS {
        text = text.chars().take(MESSAGE_CHARS).collect::<String>() + "…";
    }
    if text.is_empty() {
        "test failed".to_owned()
    } else {
        text
    }
}

/// Run each failure once more on its own (`passed_again` says whether it passed), time and
/// `MAX_RERUNS` allowing: one that passes is flaky.
pub fn mark_flaky(
    job: &Job,
    failures: &mut [Failure],
    mut passed_again: impl FnMut(&Failure) -> Result<bool, PluginError>,
) -> Result<(), PluginError> {
    if !job.rerun(failures.len()) {
        return Ok(());
    }
    for f in failures.iter_mut() {
        if Instant::now() >= job.deadline {
            break;
        }
        f.flaky = passed_again(f)?;
    }
    Ok(())
}

/// How a flaky test's message starts.
pub const FLAKY_PREFIX: &str = "flaky: failed, then passed when run again on its own: ";

export_plugin!(Tests);
