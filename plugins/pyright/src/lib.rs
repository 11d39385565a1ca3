//! `pyright`: an openfiles plugin that type-checks whole Python projects with pyright's own
//! command line (`pyright --outputjson`, run at the project's root so that the project's
//! `pyrightconfig.json` or `pyproject.toml` `[tool.pyright]` applies), so that callers an
//! edit broke in files nobody edited are found (the knock-on of `docs/baseline.md`): the
//! pyright language server (the lsp plugin) publishes only for the documents it was given.
//!
//! A project-wide source: files are grouped by their project root (the nearest folder with
//! `pyrightconfig.json`, `pyproject.toml`, `setup.py` or `setup.cfg`, else the workspace),
//! one pyright run per project. Every requested and `also_report` file gets a result (its
//! items, or none); with `report_all`, every file of the project pyright found a problem in.
//! Items with no file (a broken config) go on every file of the run. Columns are converted
//! from UTF-16 units to characters, and items look exactly like the language server's
//! (source `Pyright`, the rule as code, the same message), so the service keeps a problem
//! both report once.
//!
//! Which pyright: the `pyright` setting, else — in a trusted workspace only — the project's
//! `node_modules/.bin/pyright` at or above its root, else `pyright` on `PATH` (pyright reads
//! the project's files and never runs them). With no `pyright` setting and no `pyright` on
//! `PATH` when the plugin starts, it claims no file (no tree snapshot is taken for a
//! baseline nothing would use); the language server still checks Python, and `openfiles
//! doctor` names pyright's package when no Python type checker is installed. No note: a
//! machine without Python work is not warned about it.
//!
//! A project that asks for another Python type checker (`[tool.basedpyright]`, `ty.toml`,
//! `[tool.ty]` at or above its root: the lsp plugin's rule for which one checks a file) gets
//! nothing from this plugin: pyright's rules are not the ones it chose.
//!
//! Config (`[plugin.pyright]`): `pyright = "path/to/pyright"`, `extra_args = [..]`.

pub mod parse;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use openfiles_plugin_api::markers::{self, project_root};
use openfiles_plugin_api::tools::{on_path, Findings, ToolOutput, ToolRuns};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin,
};
use serde::Deserialize;

/// The source name pyright's language server gives its diagnostics.
const SOURCE: &str = "Pyright";
const EXTENSIONS: &[&str] = &["py", "pyi"];
/// Markers by which a project asks for another type checker than pyright.
pub const OTHER_CHECKERS: &[&str] = &[
    "pyproject.toml[tool.basedpyright]",
    "ty.toml",
    "pyproject.toml[tool.ty]",
];
/// Where a Python project's root is (what the pyright CLI would be run in).
pub const MARKERS: &[&str] = &[
    "pyrightconfig.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
];

/// `[plugin.pyright]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub pyright: Option<PathBuf>,
    pub extra_args: Vec<String>,
}

pub struct Pyright {
    settings: Settings,
    markers: Vec<String>,
    runs: ToolRuns,
}

impl Plugin for Pyright {
    const NAME: &'static str = "pyright";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), String> {
        let settings: Settings = if init.config.is_null() {
            Settings::default()
        } else {
            serde_json::from_value(init.config).map_err(|e| format!("[plugin.pyright]: {e}"))?
        };
        let markers: Vec<String> = MARKERS.iter().map(|m| m.to_string()).collect();
        let caps = Capabilities {
            // No pyright to run: claim no file, so no snapshot of the tree is taken for a
            // baseline nothing would use.
            extensions: if settings.pyright.is_some() || on_path("pyright").is_some() {
                EXTENSIONS.iter().map(|s| s.to_string()).collect()
            } else {
                Vec::new()
            },
            file_names: Vec::new(),
            project_markers: markers.clone(),
            project_wide: true,
            notes: Vec::new(),
            checks_texts: false,
            late_fixes: false,
        };
        Ok((
            Pyright {
                settings,
                markers,
                runs: ToolRuns::new(),
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, String> {
        let mut projects: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        let mut seen = HashSet::new();
        for file in request.files.iter().chain(request.also_report.iter()) {
            let handled = file
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e));
            if handled && seen.insert(file.clone()) {
                projects
                    .entry(project_root(file, &request.workspace, &self.markers))
                    .or_default()
                    .push(file.clone());
            }
        }
        let mut missing = Vec::new();
        let mut runnable = BTreeMap::new();
        for (root, files) in projects {
            if other_checker(&root, &request.workspace) {
                missing.extend(files);
                continue;
            }
            match self.exe(&root, request.trusted) {
                Some(exe) => {
                    runnable.insert(root, (exe, files));
                }
                None => missing.extend(files),
            }
        }
        let groups = runnable
            .into_iter()
            .map(|(root, (exe, files))| ((root, exe), files));
        let mut files = self.runs.run_groups(
            request.id,
            SOURCE,
            request.report_all,
            groups,
            |(root, exe), wanted| {
                self.run(
                    request.id,
                    exe,
                    root,
                    wanted,
                    &request.workspace,
                    request.report_all,
                )
            },
        )?;
        // No pyright, or another checker chosen: nothing to say (the language server, if any, checks the file).
        files.extend(missing.into_iter().map(|path| FileResult {
            path,
            items: Vec::new(),
        }));
        Ok(CheckResponse { files })
    }

    fn cancel(&self, check_id: u64) {
        self.runs.cancel(check_id);
    }
}

/// Whether the project at `root` (or a folder above it, inside `workspace`) asks for
/// another type checker ([`OTHER_CHECKERS`]).
pub fn other_checker(root: &Path, workspace: &Path) -> bool {
    root.ancestors()
        .take_while(|d| d.starts_with(workspace))
        .any(|d| OTHER_CHECKERS.iter().any(|m| markers::present(d, m)))
}

/// `node_modules/.bin/pyright` at or above `start` when the workspace is trusted.
pub fn project_pyright(start: &Path, trusted: bool) -> Option<PathBuf> {
    start
        .ancestors()
        .take_while(|_| trusted)
        .map(|d| d.join("node_modules/.bin/pyright"))
        .find(|p| p.is_file())
}

impl Pyright {
    /// The pyright to run for the project at `root` (see the module docs).
    fn exe(&self, root: &Path, trusted: bool) -> Option<PathBuf> {
        self.settings
            .pyright
            .clone()
            .or_else(|| project_pyright(root, trusted))
            .or_else(|| on_path("pyright"))
    }

    /// Run pyright at `root`; items per absolute file (only `wanted`, or with `report_all`
    /// every file of the workspace), items with no file shared.
    fn run(
        &self,
        id: u64,
        exe: &Path,
        root: &Path,
        wanted: &[PathBuf],
        workspace: &Path,
        report_all: bool,
    ) -> Result<Findings, String> {
        let mut cmd = Command::new(exe);
        cmd.arg("--outputjson")
            .args(&self.settings.extra_args)
            .current_dir(root);
        let ToolOutput {
            stdout,
            stderr,
            status,
        } = self
            .runs
            .output(id, &mut cmd)
            .map_err(|e| format!("cannot run {} ({e})", exe.display()))?;
        // Exit 0: no error, 1: errors found; anything else is pyright failing.
        let diags = match parse::parse(&stdout) {
            Ok(d) if matches!(status.code(), Some(0 | 1)) || !d.is_empty() => d,
            outcome => {
                let why = outcome.err().unwrap_or_default();
                let text = if stderr.trim().is_empty() {
                    &stdout
                } else {
                    &stderr
                };
                let tail: Vec<&str> = text.lines().take(12).collect();
                return Err(format!(
                    "pyright failed ({status}{}) in {}:\n{}",
                    if why.is_empty() {
                        String::new()
                    } else {
                        format!(", {why}")
                    },
                    root.display(),
                    tail.join("\n")
                ));
            }
        };
        let wanted: HashSet<&PathBuf> = wanted.iter().collect();
        let mut lines_cache: HashMap<PathBuf, Vec<String>> = HashMap::new();
        let mut found = Findings::default();
        for d in diags {
            let item = |line: u32, column: u32, message: String| Item {
                introduced: None,
                fixes: Vec::new(),
                line,
                column,
                severity: d.severity,
                source: SOURCE.into(),
                code: d.rule.clone(),
                message,
            };
            let Some(file) = &d.file else {
                found.shared.push(item(1, 1, d.message.clone()));
                continue;
            };
            let p = root.join(file);
            let p = std::fs::canonicalize(&p).unwrap_or(p);
            if !(wanted.contains(&p) || (report_all && p.starts_with(workspace))) {
                continue; // another file of the project, not asked for
            }
            let text = lines_cache.entry(p.clone()).or_insert_with(|| {
                std::fs::read_to_string(&p)
                    .map(|t| t.lines().map(str::to_owned).collect())
                    .unwrap_or_default()
            });
            let column = text
                .get(d.line as usize)
                .map(|l| parse::char_column(l, d.character))
                .unwrap_or(d.character + 1);
            let it = item(d.line + 1, column, d.message.clone());
            let items = found.per_file.entry(p).or_default();
            if !items.contains(&it) {
                items.push(it);
            }
        }
        Ok(found)
    }
}

export_plugin!(Pyright);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_that_chose_basedpyright_or_ty_is_left_alone() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let app = ws.join("app");
        std::fs::create_dir_all(&app).unwrap();
        std::fs::write(app.join("pyproject.toml"), "[tool.pyright]\n").unwrap();
        assert!(!other_checker(&app, ws));
        std::fs::write(ws.join("pyproject.toml"), "[tool.basedpyright]\n").unwrap();
        assert!(other_checker(&app, ws));
        std::fs::write(ws.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
        assert!(!other_checker(&app, ws));
        std::fs::write(app.join("ty.toml"), "").unwrap();
        assert!(other_checker(&app, ws));
    }

    #[test]
    fn a_projects_own_pyright_runs_only_when_trusted() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("pyright"), "#!/bin/sh\n").unwrap();
        let sub = d.path().join("pkg");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(project_pyright(&sub, true), Some(bin.join("pyright")));
        assert_eq!(project_pyright(&sub, false), None);
    }
}
