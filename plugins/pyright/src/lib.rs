//! `pyright`: an openfiles plugin that type-checks whole Python projects with the command
//! line of the Python type checker the project chose — pyright (`pyright --outputjson`),
//! basedpyright (`basedpyright --outputjson`, the same report) or ty (`ty check
//! --output-format github`, see [`ty`]) — run at the project's root so that the project's
//! own configuration applies, so that callers an edit broke in files nobody edited are
//! found (the knock-on of `docs/baseline.md`): the language servers (the lsp plugin)
//! publish only for the documents they were given.
//!
//! Which checker: the lsp plugin's rule, shared through
//! [`openfiles_plugin_api::markers::pick_one`] and `PYTHON_TYPE_CHECKERS`: of those
//! installed, the first the project asks for (`[tool.basedpyright]` → basedpyright;
//! `ty.toml` or `[tool.ty]` → ty, at or above the file inside the workspace), else the first
//! of pyright, basedpyright, ty. So the items come from the checker whose language server
//! checks the edited file, and look exactly like its items (source `Pyright`,
//! `basedpyright` or `ty` as the server sends it, the rule as code, the same message, the
//! column in characters): the service keeps a problem both report once.
//!
//! A project-wide source: files are grouped by checker and project root (the nearest
//! folder with the checker's configuration — `pyrightconfig.json` or a `pyproject.toml`
//! with `[tool.pyright]` (or `[tool.basedpyright]` for basedpyright), `ty.toml` or
//! `[tool.ty]` for ty — else the workspace: the lsp plugin's rule, shared through
//! [`markers::python_type_checker_roots`]; a package without configuration is checked in
//! the enclosing project, not as a whole program of its own), one run per project. Every requested and
//! `also_report` file gets a result (its items, or none); with `report_all`, every file of
//! the project the checker found a problem in. Items with no file (a broken config) go on
//! every file of the run.
//!
//! Executables: a setting (`pyright`, `basedpyright`, `ty`), else — in a trusted workspace
//! only — the project's own (`node_modules/.bin/NAME` or `.venv/bin/NAME` at or above its
//! root, inside the workspace), else `NAME` on `PATH`'s absolute entries outside an
//! untrusted workspace (the checkers read the project's files and never run them); each run
//! is a [`gate::Program`](openfiles_plugin_api::gate::Program) of the check's workspace and
//! trust. The files the plugin reads itself (a reported file's lines, to turn UTF-16 columns
//! into characters) are read the confined way ([`source_lines`](openfiles_plugin_api::tools::source_lines): no symlink, no FIFO, capped). With none of the three configured or on `PATH` when the
//! plugin starts, it claims no file (no tree snapshot is taken for a baseline nothing
//! would use); the language servers still check Python, and `openfiles doctor` names a
//! checker's package when none is installed. A file whose chosen checker is not installed
//! gets nothing, and no note: a machine without Python work is not warned about it.
//!
//! Config (`[plugin.pyright]`): `pyright`, `basedpyright`, `ty` = "path/to/exe";
//! `extra_args = [..]` (after `--outputjson`, for pyright and basedpyright),
//! `ty_args = [..]` (after `ty check`'s own). `OPENFILES_PYRIGHT_LOG` (any value) prints
//! each check's timeline to the service's log (`timeline.rs`).

mod combine;
pub mod early;
mod layout;
mod memory;
mod opened;
pub mod parse;
mod report;
mod ride_stash;
pub mod rpc;
mod served;
pub mod server;
pub mod settle;
mod timeline;
pub mod ty;
use report::{cli_found, collect, lsp_found, under, Found};
use timeline::trace;

use openfiles_plugin_api::gate::{spawn::search, Program, Scope};
use openfiles_plugin_api::markers;
use openfiles_plugin_api::tools::{is_executable, on_path, scope, Findings, ToolRuns};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, FileResult, Init, Plugin, PluginError,
};
use serde::Deserialize;
use served::hints_for;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

const EXTENSIONS: &[&str] = &["py", "pyi"];

/// A Python type checker whose command line this plugin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Checker {
    Pyright,
    Basedpyright,
    Ty,
}

impl Checker {
    /// In the lsp plugin's table order ([`markers::PYTHON_TYPE_CHECKERS`]).
    pub const ALL: [Checker; 3] = [Checker::Pyright, Checker::Basedpyright, Checker::Ty];

    /// The executable's name, and the checker's in [`markers::PYTHON_TYPE_CHECKERS`].
    pub fn name(self) -> &'static str {
        match self {
            Checker::Pyright => "pyright",
            Checker::Basedpyright => "basedpyright",
            Checker::Ty => "ty",
        }
    }

    /// The `source` the checker's language server gives its diagnostics.
    pub fn source(self) -> &'static str {
        match self {
            Checker::Pyright => "Pyright",
            Checker::Basedpyright => "basedpyright",
            Checker::Ty => "ty",
        }
    }

    /// Where its projects are rooted: the lsp plugin's rule
    /// ([`markers::python_type_checker_roots`]: only folders with the checker's
    /// configuration, else the workspace root).
    pub fn root_markers(self) -> &'static [&'static str] {
        markers::python_type_checker_roots(self.name())
    }

    /// Where a project installs it (relative to a folder at or above its root).
    fn project_exes(self) -> &'static [&'static str] {
        match self {
            Checker::Pyright => &["node_modules/.bin/pyright", ".venv/bin/pyright"],
            Checker::Basedpyright => &["node_modules/.bin/basedpyright", ".venv/bin/basedpyright"],
            Checker::Ty => &[".venv/bin/ty"],
        }
    }
}

/// `[plugin.pyright]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub pyright: Option<PathBuf>,
    pub basedpyright: Option<PathBuf>,
    pub ty: Option<PathBuf>,
    /// For pyright and basedpyright.
    pub extra_args: Vec<String>,
    pub ty_args: Vec<String>,
    /// Answer a workspace's checks from the checker's warm language server (see
    /// [`server`]); `false`: the command line every time. Default `true`.
    pub language_server: Option<bool>,
    /// A language server unused for this long stops (default 600 000).
    pub idle_timeout_ms: Option<u64>,
    /// A language server whose process tree holds more after a check stops (default 1024;
    /// `0`: no bound); its Node heap is bounded at three quarters of it (`server::heap_mib`).
    pub max_memory_mib: Option<u64>,
}

impl Settings {
    fn exe(&self, checker: Checker) -> Option<&PathBuf> {
        match checker {
            Checker::Pyright => self.pyright.as_ref(),
            Checker::Basedpyright => self.basedpyright.as_ref(),
            Checker::Ty => self.ty.as_ref(),
        }
    }
}

pub struct Pyright {
    settings: Settings,
    runs: ToolRuns,
    servers: server::Servers,
    /// Why the language server gave no answer, most recent last (the last few; for tests).
    fallbacks: std::sync::Mutex<Vec<String>>,
    /// The checks a language server answered early for (`CheckResponse::more`).
    answered_early: std::sync::Mutex<HashSet<u64>>,
    /// The baselines the rides of each check answered (`server/ride.rs`).
    ride_baselines: ride_stash::RideBaselines,
    /// Each folder's projects and the checkers it asks for (see [`layout`]).
    layouts: layout::Layouts,
    /// The plugin's own folder (combined configurations, see [`combine`]).
    state_dir: PathBuf,
}

/// What a check lets the language server answer: the files that may have changed, and the
/// time the host gives the check. `None` for a baseline's snapshot (the command line runs
/// there: a server per commit would be warm for one run only).
type Live<'a> = Option<(&'a [PathBuf], u64)>;

/// What a run is asked for: the files wanted, `report_all`, and which of the other files
/// are this run's (see [`Pyright::run`]).
type Asked<'a> = (&'a [PathBuf], bool, &'a dyn Fn(&Path) -> bool);

/// One run: a checker over one project.
type Run = (Checker, PathBuf, PathBuf);
/// What a check asks a warm server: the files that may have changed, what it rides with
/// (`CheckRequest::committed`, `CheckRequest::baseline_known`), its time.
type Changed<'a> = (&'a [PathBuf], server::Riding<'a>, u64);

impl Plugin for Pyright {
    const NAME: &'static str = "pyright";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        let settings: Settings = init.settings("pyright")?;
        let any = Checker::ALL
            .iter()
            .any(|&c| settings.exe(c).is_some() || on_path(c.name()).is_some());
        let mut project_markers: Vec<String> = Checker::ALL
            .iter()
            .flat_map(|c| c.root_markers())
            .map(|m| m.to_string())
            .collect();
        project_markers.sort();
        project_markers.dedup();
        let caps = Capabilities {
            // No checker to run: claim no file, so no snapshot of the tree is taken for a
            // baseline nothing would use.
            extensions: if any {
                EXTENSIONS.iter().map(|s| s.to_string()).collect()
            } else {
                Vec::new()
            },
            file_names: Vec::new(),
            project_markers,
            project_wide: true,
            needs_project: false,
            notes: Vec::new(),
            checks_texts: false,
            late_fixes: false,
            // Its language server: the warm-up starts it and lets it analyse the project
            // (a ty project's warm-up runs `ty check`, which takes a fraction of a second).
            warm: settings.language_server != Some(false),
            superseded: false,
            // Where its warm server serves a project, the lsp plugin's server of the same
            // checker need not analyse it again (`CheckRequest::served`).
            serves: serves(&settings),
        };
        Ok((
            Pyright {
                servers: server::Servers::new(
                    settings.idle_timeout_ms.unwrap_or(600_000),
                    settings.max_memory_mib.unwrap_or(1024),
                    Some(init.state_dir.clone()),
                ),
                state_dir: init.state_dir,
                settings,
                runs: ToolRuns::new(),
                fallbacks: std::sync::Mutex::default(),
                answered_early: std::sync::Mutex::default(),
                ride_baselines: ride_stash::RideBaselines::default(),
                layouts: layout::Layouts::default(),
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        trace(|| format!("check {}: {} files", request.id, request.files.len()));
        let ws = &request.workspace;
        let scope = scope(&request);
        let mut runs: BTreeMap<Run, Vec<PathBuf>> = BTreeMap::new();
        let mut missing = Vec::new();
        let mut seen = HashSet::new();
        for file in request.files.iter().chain(request.also_report.iter()) {
            let handled = file
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e));
            if !handled || !seen.insert(file.clone()) {
                continue;
            }
            match self.choose(file, ws, &scope) {
                Some(run) => runs.entry(run).or_default().push(file.clone()),
                None => missing.push(file.clone()),
            }
        }
        trace(|| format!("check {}: checkers chosen", request.id));
        let live: Live = request
            .cache_of
            .is_none()
            .then_some((request.files.as_slice(), request.timeout_ms.max(30_000)));
        let (mut files, mut baseline) = (Vec::new(), Vec::new());
        for checker in Checker::ALL {
            let groups: Vec<(Run, Vec<PathBuf>)> = runs
                .iter()
                .filter(|((c, _, _), _)| *c == checker)
                .map(|(run, wanted)| (run.clone(), wanted.clone()))
                .collect();
            if groups.is_empty() {
                continue;
            }
            let found = self.check_projects(checker, groups.clone(), &request, &scope, live);
            if found.is_err() {
                self.early(request.id);
                self.ride_baselines.forget(request.id);
            }
            files.extend(found?);
            baseline.extend(self.ride_baselines.take(checker, &groups, &request, &scope));
        }
        // No checker installed: nothing to say (the language server, if any, checks the file).
        files.extend(missing.into_iter().map(|path| FileResult {
            path,
            items: Vec::new(),
        }));
        let more = self.early(request.id);
        trace(|| format!("check {}: {} files answered", request.id, files.len()));
        Ok(CheckResponse {
            files,
            more,
            baseline,
        })
    }

    fn cancel(&self, check_id: u64) {
        self.runs.cancel(check_id);
    }
}

/// The lsp plugin's servers this plugin's warm server stands in for (`Capabilities::serves`):
/// pyright's and basedpyright's, unless the language server is off, or a checker's configured
/// executable has no language server beside it (its command line would answer every check).
fn serves(settings: &Settings) -> Vec<String> {
    if settings.language_server == Some(false) {
        return Vec::new();
    }
    [Checker::Pyright, Checker::Basedpyright]
        .into_iter()
        .filter(|&c| {
            settings.exe(c).is_none_or(|exe| {
                is_executable(&exe.with_file_name(format!("{}-langserver", c.name())))
            })
        })
        .map(|c| c.name().to_owned())
        .collect()
}

/// The project roots of `runs` per checker and executable: what one server, or one combined
/// command line, answers for.
fn roots_by_exe<'a>(
    runs: impl IntoIterator<Item = &'a Run>,
) -> BTreeMap<(Checker, &'a PathBuf), Vec<PathBuf>> {
    let mut by_exe: BTreeMap<(Checker, &PathBuf), Vec<PathBuf>> = BTreeMap::new();
    for (checker, root, exe) in runs {
        by_exe
            .entry((*checker, exe))
            .or_default()
            .push(root.clone());
    }
    by_exe
}

/// The executable `checker` brings into a project: `node_modules/.bin/NAME` or
/// `.venv/bin/NAME` at or above `root` inside `workspace`, when the workspace is trusted.
pub fn project_exe(
    checker: Checker,
    root: &Path,
    workspace: &Path,
    trusted: bool,
) -> Option<PathBuf> {
    root.ancestors()
        .take_while(|d| trusted && d.starts_with(workspace))
        .flat_map(|d| checker.project_exes().iter().map(move |rel| d.join(rel)))
        .find(|p| is_executable(p))
}

impl Pyright {
    /// `checker`'s answer for its projects `groups` (run, files wanted): from its warm server
    /// when the check is `live`, else — or where the server gave none — from its command
    /// line, several projects of one executable as one program where they can be.
    fn check_projects(
        &self,
        checker: Checker,
        groups: Vec<(Run, Vec<PathBuf>)>,
        request: &CheckRequest,
        scope: &Scope,
        live: Live,
    ) -> Result<Vec<FileResult>, PluginError> {
        let ws = &request.workspace;
        // The warm server answers for all of this checker's projects at once.
        let served = live
            .map(|(changed, timeout_ms)| {
                let runs: Vec<&Run> = groups.iter().map(|(run, _)| run).collect();
                let riding = server::Riding {
                    committed: &request.committed,
                    baseline_known: request.baseline_known,
                };
                let asked = (changed, riding, timeout_ms);
                self.serve_together(request.id, &runs, scope, asked)
            })
            .unwrap_or_default();
        // The command line: several projects of one executable checked as one program
        // where they can be ([`combine`]).
        let combined = self.run_combined(request.id, &groups, &served, scope);
        self.runs.run_groups(
            request.id,
            checker.source(),
            request.report_all,
            groups,
            |run, wanted| {
                // With report_all, a file of a project nested in this one that chose
                // another checker (or is another project) is left to that one's run;
                // the choice is a folder's (chosen once per folder: looks at the disk).
                let chosen = std::cell::RefCell::new(HashMap::new());
                let ours = |p: &Path| {
                    let dir = p.parent().unwrap_or(p).to_owned();
                    let mut chosen = chosen.borrow_mut();
                    let c = chosen
                        .entry(dir)
                        .or_insert_with(|| self.choose(p, ws, scope));
                    c.as_ref() == Some(run)
                };
                let asked: Asked = (wanted, request.report_all, &ours);
                let served = served.get(&run.2).map(|found| under(found, &run.1));
                let served = served
                    .map(|found| hints_for(found, request, checker))
                    .or_else(|| combined.get(&run.2).map(|found| under(found, &run.1)));
                self.run(request.id, run, asked, scope, served)
            },
        )
    }

    /// The checker for `file` (the lsp plugin's rule, see the module docs), its project
    /// root and executable; `None` when no checker is installed.
    fn choose(&self, file: &Path, workspace: &Path, scope: &Scope) -> Option<Run> {
        let trusted = scope.trust() == openfiles_plugin_api::gate::Trust::Trusted;
        let layout = self.layouts.of(file, workspace);
        let installed: Vec<Run> = Checker::ALL
            .iter()
            .zip(layout.roots)
            .filter_map(|(&c, root)| {
                let exe = self
                    .settings
                    .exe(c)
                    .cloned()
                    .or_else(|| project_exe(c, &root, workspace, trusted))
                    .or_else(|| search(c.name(), scope))?;
                Some((c, root, exe))
            })
            .collect();
        let claimed = |c: &Checker| {
            Checker::ALL
                .iter()
                .zip(layout.claims)
                .any(|(x, y)| x == c && y)
        };
        let pick = markers::pick_one(&installed, |(c, _, _)| claimed(c))?;
        installed.into_iter().nth(pick)
    }

    /// Run `checker` at `root`; items per absolute file (only `wanted`, or with
    /// `report_all` every Python file of the workspace that is `ours`), items with no file
    /// shared. The warm language server's diagnostics of the project when it `served` them,
    /// else from the command line.
    fn run(
        &self,
        id: u64,
        (checker, root, exe): &Run,
        (wanted, report_all, ours): Asked,
        scope: &Scope,
        served: Option<Vec<Found>>,
    ) -> Result<Findings, PluginError> {
        let checker = *checker;
        let diags = match served {
            Some(diags) => diags,
            None => {
                let mut cmd = self.command(checker, root, exe, scope)?;
                let out = self.runs.output(id, &mut cmd).map_err(|e| {
                    PluginError::Tool(format!("cannot run {} ({e})", exe.display()))
                })?;
                cli_found(checker, root, out)?
            }
        };
        let workspace = scope.workspace_root().unwrap_or(root);
        let wanted: HashSet<&PathBuf> = wanted.iter().collect();
        let asked = |p: &Path| {
            wanted.contains(&p.to_path_buf()) || (report_all && p.starts_with(workspace) && ours(p))
        };
        Ok(collect(checker, root, workspace, diags, &asked))
    }

    /// What the warm language servers say about `runs` (one checker's projects), asked
    /// together: one question per server (per executable) with all its projects' roots, so
    /// a monorepo's packages are one analysis of the warm server, not one wait each. Per
    /// executable; one missing there runs the command line.
    fn serve_together(
        &self,
        id: u64,
        runs: &[&Run],
        scope: &Scope,
        asked: Changed,
    ) -> HashMap<PathBuf, Vec<Found>> {
        roots_by_exe(runs.iter().copied())
            .into_iter()
            .filter_map(|((checker, exe), roots)| {
                let found = self.serve(id, (checker, &roots, exe), scope, asked)?;
                Some((exe.clone(), found))
            })
            .collect()
    }

    /// The diagnostics of `roots` from `checker`'s warm language server (the executable
    /// next to its command line `exe`) after `changed` changed; `None` when there is none
    /// for this checker, or it failed (why is logged, and the command line answers), or the
    /// check was cancelled (its answer is dropped).
    fn serve(
        &self,
        id: u64,
        (checker, roots, exe): (Checker, &[PathBuf], &Path),
        scope: &Scope,
        (changed, ride, timeout_ms): Changed,
    ) -> Option<Vec<Found>> {
        if checker == Checker::Ty || self.settings.language_server == Some(false) {
            return None;
        }
        // The server installed with this command line (not another checker's, nor a
        // wrapper's neighbour).
        let ls = exe.with_file_name(format!("{}-langserver", checker.name()));
        if exe.file_name() != Some(checker.name().as_ref()) || !is_executable(&ls) {
            return None;
        }
        let workspace = scope
            .workspace_root()
            .or(roots.first().map(|r| r.as_path()))?;
        let ask = server::Ask {
            checker,
            exe: &ls,
            roots,
            workspace,
            scope,
            changed,
            ride,
            timeout_ms,
        };
        match self.servers.check(&ask, &|| self.runs.is_cancelled(id)) {
            Ok(Some(answer)) => {
                if answer.more {
                    self.answered_early
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id);
                }
                if let Some(pushes) = answer.baseline {
                    let files = pushes.iter().map(|(f, _)| f.clone()).collect();
                    self.ride_baselines.keep(id, exe, lsp_found(pushes), files);
                }
                Some(lsp_found(answer.pushes))
            }
            Ok(None) => Some(Vec::new()), // cancelled: run_groups drops the answer
            Err(e) => {
                let at: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
                let why = format!(
                    "{} language server at {}: {e}; using its command line",
                    checker.name(),
                    at.join(", ")
                );
                eprintln!("openfiles-plugin-pyright: {why}");
                let mut f = self.fallbacks.lock().unwrap_or_else(|e| e.into_inner());
                f.push(why);
                let excess = f.len().saturating_sub(16);
                f.drain(..excess);
                None
            }
        }
    }

    /// The command line's diagnostics of the projects in `groups` that no server answered
    /// for, per executable, where two or more of them can be checked as one program
    /// ([`combine`]); a run that fails is logged and leaves its projects to their own runs.
    fn run_combined(
        &self,
        id: u64,
        groups: &[(Run, Vec<PathBuf>)],
        served: &HashMap<PathBuf, Vec<Found>>,
        scope: &Scope,
    ) -> HashMap<PathBuf, Vec<Found>> {
        let unserved = groups
            .iter()
            .map(|(run, _)| run)
            .filter(|(_, _, exe)| !served.contains_key(exe));
        roots_by_exe(unserved)
            .into_iter()
            .filter_map(|((checker, exe), roots)| {
                let dir = combine::combine(checker, &roots, &self.state_dir)?;
                let found = (|| {
                    let mut cmd = self.command(checker, &dir, exe, scope)?;
                    cmd.args(["--project", combine::CONFIG]);
                    let out = self.runs.output(id, &mut cmd).map_err(|e| {
                        PluginError::Tool(format!("cannot run {} ({e})", exe.display()))
                    })?;
                    cli_found(checker, &dir, out)
                })();
                match found {
                    Ok(found) => Some((exe.clone(), found)),
                    Err(_) if self.runs.is_cancelled(id) => None,
                    Err(e) => {
                        eprintln!(
                            "openfiles-plugin-pyright: {} projects as one program: {e}; each on its own",
                            roots.len()
                        );
                        None
                    }
                }
            })
            .collect()
    }

    /// Whether a language server answered check `id` early (forgotten once asked).
    fn early(&self, id: u64) -> bool {
        self.answered_early
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
    }

    /// Why the language server gave no answer, for the last few checks it did not.
    pub fn fallbacks(&self) -> Vec<String> {
        self.fallbacks.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// Process ids of the running language servers.
    pub fn server_pids(&self) -> Vec<u32> {
        self.servers.pids()
    }

    /// The command line of `checker` (the program `exe`, for `scope`) at `root`.
    fn command(
        &self,
        checker: Checker,
        root: &Path,
        exe: &Path,
        scope: &Scope,
    ) -> Result<std::process::Command, PluginError> {
        let program = Program::at(exe, scope, "Python type checker (pyright plugin)")
            .or_else(|e| match search(&exe.to_string_lossy(), scope) {
                Some(found) => Program::at(&found, scope, "Python type checker (pyright plugin)"),
                None => Err(e),
            })
            .map_err(|e| PluginError::Tool(e.to_string()))?;
        let mut cmd = program.command(std::iter::empty::<&str>());
        match checker {
            Checker::Ty => cmd
                .args([
                    "check",
                    "--output-format",
                    "github",
                    "--no-progress",
                    "--color",
                    "never",
                ])
                .args(&self.settings.ty_args),
            _ => cmd.arg("--outputjson").args(&self.settings.extra_args),
        };
        cmd.current_dir(root);
        Ok(cmd)
    }
}

export_plugin!(Pyright);

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(config: serde_json::Value) -> Pyright {
        let state = tempfile::tempdir().unwrap();
        Pyright::create(Init {
            config,
            state_dir: state.path().to_owned(),
            host_version: "test".into(),
        })
        .unwrap()
        .0
    }

    #[test]
    fn the_project_chooses_its_checker_among_those_installed() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let app = ws.join("app");
        std::fs::create_dir_all(&app).unwrap();
        let file = app.join("m.py");
        let all = plugin(serde_json::json!({
            "pyright": "/p/pyright", "basedpyright": "/p/basedpyright", "ty": "/p/ty"}));
        let chosen = |p: &Pyright| {
            p.choose(&file, ws, &Scope::workspace(ws, false))
                .map(|(c, root, _)| (c, root))
        };
        // A package without pyright configuration is part of the workspace's project.
        std::fs::write(app.join("pyproject.toml"), "[project]\nname = \"app\"\n").unwrap();
        std::fs::write(app.join("setup.py"), "").unwrap();
        assert_eq!(chosen(&all), Some((Checker::Pyright, ws.to_owned())));
        std::fs::write(app.join("pyproject.toml"), "[tool.pyright]\n").unwrap();
        assert_eq!(chosen(&all), Some((Checker::Pyright, app.clone())));
        std::fs::write(ws.join("pyproject.toml"), "[tool.basedpyright]\n").unwrap();
        assert_eq!(chosen(&all), Some((Checker::Basedpyright, app.clone())));
        std::fs::write(ws.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
        std::fs::write(ws.join("ty.toml"), "").unwrap();
        // app configures pyright, not ty: ty's project is the workspace's.
        assert_eq!(chosen(&all), Some((Checker::Ty, ws.to_owned())));
        std::fs::write(app.join("ty.toml"), "").unwrap();
        assert_eq!(chosen(&all), Some((Checker::Ty, app.clone())));
        std::fs::remove_file(app.join("ty.toml")).unwrap();
        std::fs::remove_file(app.join("pyproject.toml")).unwrap();
        assert_eq!(chosen(&all), Some((Checker::Ty, ws.to_owned())));
    }

    #[test]
    fn it_stands_in_only_for_servers_it_can_start() {
        let serves = |config| serves(&plugin(config).settings);
        assert_eq!(serves(serde_json::Value::Null), ["pyright", "basedpyright"]);
        assert_eq!(
            serves(serde_json::json!({"pyright": "/nowhere/pyright"})),
            ["basedpyright"]
        );
        assert_eq!(
            serves(serde_json::json!({"language_server": false})),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_projects_own_checker_runs_only_when_trusted() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        for rel in ["node_modules/.bin/pyright", ".venv/bin/ty"] {
            let p = ws.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let sub = ws.join("pkg");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(
            project_exe(Checker::Pyright, &sub, ws, true),
            Some(ws.join("node_modules/.bin/pyright"))
        );
        assert_eq!(
            project_exe(Checker::Ty, &sub, ws, true),
            Some(ws.join(".venv/bin/ty"))
        );
        assert_eq!(project_exe(Checker::Ty, &sub, ws, false), None);
        assert_eq!(project_exe(Checker::Basedpyright, &sub, ws, true), None);
        // Above the workspace: never.
        assert_eq!(project_exe(Checker::Ty, &sub, &sub, true), None);
    }
}
