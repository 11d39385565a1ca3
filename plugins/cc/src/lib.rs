//! `cc`: an openfiles plugin that finds what an edit of a C/C++ header broke in the
//! translation units that include it, which nobody edited (the knock-on of
//! `docs/baseline.md`): clangd (the lsp plugin) publishes only for the documents it was given.
//!
//! A project-wide source over a compile database ([`db`], the plugin API's
//! [`compile_db`](openfiles_plugin_api::compile_db), whose allowlist the lsp plugin's clangd
//! gets too: `compile_commands.json` or `compile_flags.txt`, found the way clangd finds it). Each unit is read with
//! `clang -fsyntax-only` (clang 14+ from `PATH`: the front end clangd is built on, so the
//! same messages), else `gcc`/`g++`'s, with the database's flags cut down to an allowlist;
//! the compiler the database names is never run. The compiler is a
//! [`gate::Program`](openfiles_plugin_api::gate::Program) of the check's workspace and trust:
//! found on `PATH`'s absolute entries outside an untrusted workspace (never `.`), with the
//! gate's environment. Per check, the units read are:
//! - over a snapshot of the commit (`cache_of` set, the baseline): every unit, once per
//!   commit (the database is read from the real workspace when the commit has none, its
//!   paths moved into the snapshot);
//! - otherwise: the units whose includes reach an edited file ([`includes`], an
//!   over-approximation), the edited units themselves, and every unit the last check of this
//!   database found an error through (remembered in the state dir), so an error it reported
//!   in a file nobody edited is either found again or known to be gone.
//!
//! Its state files (`last-errors.json`, `baselines-without-database.json`) are private
//! (0600 in a 0700 state dir, [`openfiles_plugin_api::private`]).
//!
//! A unit whose flags the compiler refuses (a database written for gcc read by clang, or the
//! other way round) is read again without them, as clangd drops them. Units run in parallel
//! (`jobs`, default the machine's cores). An error located in a header
//! belongs to that header. Columns are converted from bytes to characters; a warning's flag
//! is its code; notes are left out (they name paths, which differ between the snapshot and
//! the workspace).
//!
//! Edited files: clangd checks those itself, with messages this plugin cannot reproduce
//! exactly (it has clang's diagnostic names as codes, and capitalizes), and the service
//! keeps only exactly equal items once. So when clangd is on `PATH`, the files of `files`
//! and `also_report` that clangd handles get no items from this plugin (its report is about
//! the files nobody edited); without clangd they get everything (`report_edited` overrides).
//!
//! A project whose baseline run found no database (the build had not written it yet) gets no
//! report on files nobody edited until a later baseline run (a new commit) finds one: that
//! baseline knows none of the project's old errors, and they would all be blamed on the edit.
//!
//! With no C compiler on `PATH` (and no `compiler` setting) the plugin claims no file; with
//! one, only files inside a project with a database (`needs_project`: the service does not
//! ask about the others, nor take a baseline snapshot for them).
//!
//! Config (`[plugin.cc]`): `compiler = "/usr/bin/clang-14"`, `report_edited = true|false`,
//! `jobs = 2`.

pub use openfiles_plugin_api::compile_db as db;
pub mod includes;
pub mod parse;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use openfiles_plugin_api::gate::{Program, Scope};
use openfiles_plugin_api::markers;
use openfiles_plugin_api::private;
use openfiles_plugin_api::tools::{is_executable, on_path, Collect, Column, ToolRuns};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin,
    PluginError, Severity,
};
use serde::Deserialize;

use db::{Db, Remap, Unit};

/// The C/C++ files handled (sources and headers).
pub const EXTENSIONS: &[&str] = db::C_EXTENSIONS;
/// The ones clangd (the lsp plugin's built-in server) checks when they are edited.
pub const CLANGD_EXTENSIONS: &[&str] = &["c", "h", "cpp", "cc", "cxx", "hpp", "hh"];
/// Where a C/C++ project's root is (the folder holding its database, or a `build/` folder
/// with one); the plugin handles only files inside such a project (`needs_project`).
pub const MARKERS: &[&str] = db::DATABASE_NAMES;
/// The clang drivers looked for on `PATH`, best first.
const CLANGS: &[&str] = &[
    "clang", "clang-20", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14",
];
/// Environment variables that make a compiler write a file or take more options.
const ENV_REMOVED: &[&str] = &[
    "DEPENDENCIES_OUTPUT",
    "SUNPRO_DEPENDENCIES",
    "CCC_OVERRIDE_OPTIONS",
];

/// `[plugin.cc]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The clang or gcc to run (default: clang on `PATH`, else gcc).
    pub compiler: Option<PathBuf>,
    /// Report the edited files' own problems too (default: only when clangd is not on `PATH`).
    pub report_edited: Option<bool>,
    /// Units read at once (default: the machine's cores).
    pub jobs: Option<usize>,
}

/// Which compiler family reads the units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Clang,
    Gcc,
}

impl Kind {
    /// The items' source: the name clangd gives clang's own diagnostics, or `gcc`.
    pub fn source(self) -> &'static str {
        match self {
            Kind::Clang => "clang",
            Kind::Gcc => "gcc",
        }
    }

    fn of(path: &Path) -> Kind {
        let base = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if base.is_some_and(|b| b.contains("clang")) {
            Kind::Clang
        } else {
            Kind::Gcc
        }
    }
}

/// The compiler to run: the setting, else clang, else gcc, from `PATH`'s absolute entries
/// ([`on_path`], the gate's rule: a relative entry would be looked up from the folder a
/// compiler runs in, a repository's).
pub fn find_compiler(setting: Option<&Path>) -> Option<(PathBuf, Kind)> {
    if let Some(p) = setting {
        let p = if p.is_absolute() {
            Some(p.to_owned())
        } else {
            on_path(&p.to_string_lossy())
        };
        return p.filter(|p| is_executable(p)).map(|p| {
            let k = Kind::of(&p);
            (p, k)
        });
    }
    CLANGS
        .iter()
        .find_map(|c| on_path(c))
        .map(|p| (p, Kind::Clang))
        .or_else(|| on_path("gcc").map(|p| (p, Kind::Gcc)))
}

/// What the compiler printed for the units of one database.
struct UnitsRead {
    /// Items per file (canonical, spelled under the request's workspace).
    per_file: HashMap<PathBuf, Vec<Item>>,
    /// The units read (not skipped by a cancel).
    checked: BTreeSet<PathBuf>,
    /// The units that had an error.
    broken: BTreeSet<PathBuf>,
}

pub struct Cc {
    compiler: Option<(PathBuf, Kind)>,
    report_edited: bool,
    jobs: usize,
    state_file: PathBuf,
    blind_file: PathBuf,
    /// Projects (their roots in the real workspace, as the service computes them from
    /// [`MARKERS`]) whose last baseline run found no compile database: the baseline knows
    /// none of their old errors, so no file nobody edited is reported for them (a database
    /// made after the baseline would otherwise have every old error blamed on the edit).
    blind: Mutex<BTreeSet<PathBuf>>,
    /// Per database (its path), the units whose last check found an error.
    last_errors: Mutex<BTreeMap<PathBuf, BTreeSet<PathBuf>>>,
    /// The compiler runs of every check, and which checks were cancelled.
    runs: ToolRuns,
}

impl Plugin for Cc {
    const NAME: &'static str = "cc";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        let settings: Settings = init.settings("cc")?;
        let compiler = find_compiler(settings.compiler.as_deref());
        private::create_dir(&init.state_dir)
            .map_err(|e| PluginError::io(init.state_dir.display().to_string(), e))?;
        let state_file = init.state_dir.join("last-errors.json");
        let last_errors = std::fs::read(&state_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let blind_file = init.state_dir.join("baselines-without-database.json");
        let blind = std::fs::read(&blind_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let jobs = settings.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        });
        let caps = Capabilities {
            // No compiler: claim no file (no snapshot of the tree for a baseline nothing uses).
            extensions: if compiler.is_some() {
                EXTENSIONS.iter().map(|s| s.to_string()).collect()
            } else {
                Vec::new()
            },
            file_names: Vec::new(),
            project_markers: MARKERS.iter().map(|m| m.to_string()).collect(),
            project_wide: true,
            // Only where a compile database is: elsewhere clangd alone checks C, and no tree
            // snapshot is taken for a baseline nothing would use.
            needs_project: true,
            notes: Vec::new(),
            checks_texts: false,
            late_fixes: false,
            warm: false,
            superseded: false,
            serves: Vec::new(),
        };
        Ok((
            Cc {
                compiler,
                report_edited: settings
                    .report_edited
                    .unwrap_or_else(|| on_path("clangd").is_none()),
                jobs: jobs.max(1),
                state_file,
                blind_file,
                blind: Mutex::new(blind),
                last_errors: Mutex::new(last_errors),
                runs: ToolRuns::new(),
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        let result = self.check_all(&request);
        if self.runs.take_cancelled(request.id) {
            return Err(PluginError::Cancelled);
        }
        result
    }

    fn cancel(&self, check_id: u64) {
        self.runs.cancel(check_id);
    }
}

fn handled(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

/// `p` (canonical) spelled under `ws` as the request spells the workspace.
fn in_workspace(p: PathBuf, ws: &Path, ws_canonical: &Path) -> PathBuf {
    match p.strip_prefix(ws_canonical) {
        Ok(rel) if ws != ws_canonical => ws.join(rel),
        _ => p,
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| db::normalize(p))
}

impl Cc {
    /// The database of `file`: in the snapshot's tree, else (for a snapshot's run) in the
    /// real workspace's, whose paths are then moved into the snapshot.
    fn db_of(&self, file: &Path, request: &CheckRequest, snapshot: bool) -> Option<PathBuf> {
        if let Some(p) = db::find(file, &request.workspace) {
            return Some(p);
        }
        let real = request.cache_of.as_ref().filter(|_| snapshot)?;
        let rel = file.strip_prefix(&request.workspace).ok()?;
        db::find(&real.join(rel), real)
    }

    fn check_all(&self, request: &CheckRequest) -> Result<CheckResponse, PluginError> {
        let ws = &request.workspace;
        let snapshot = request.cache_of.as_ref().is_some_and(|c| c != ws);
        let remap = request
            .cache_of
            .as_ref()
            .filter(|_| snapshot)
            .map(|c| Remap {
                from: c.clone(),
                to: ws.clone(),
            });
        let mut seen = HashSet::new();
        let mut groups: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        let mut files = Vec::new();
        let mut without_db = false;
        for f in request.files.iter().chain(request.also_report.iter()) {
            if !handled(f) || !seen.insert(f.clone()) {
                continue;
            }
            let db = self.db_of(f, request, snapshot);
            without_db |= db.is_none();
            match db {
                Some(db) if self.compiler.is_some() => {
                    groups.entry(db).or_default().push(f.clone())
                }
                // No database: nothing to read it with (clangd falls back to guesses).
                _ => files.push(FileResult {
                    path: f.clone(),
                    items: Vec::new(),
                }),
            }
        }
        if let Some(real) = request.cache_of.as_ref().filter(|_| snapshot) {
            if let Some(project) = self.project_of(request, real) {
                self.set_blind(&project, without_db && groups.is_empty());
            }
        }
        let edited: HashSet<PathBuf> = request
            .files
            .iter()
            .chain(request.also_report.iter())
            .map(|p| canonical(p))
            .collect();
        for (db_path, wanted) in groups {
            if self.runs.is_cancelled(request.id) {
                return Err(PluginError::Cancelled);
            }
            match db::load(&db_path, remap.as_ref(), ws) {
                Ok(db) => files.extend(self.check_db(request, &db, &wanted, snapshot, &edited)),
                Err(why) => files.extend(wanted.into_iter().map(|path| FileResult {
                    path,
                    items: vec![Item::note(Severity::Error, "cc", why.to_string())],
                })),
            }
        }
        Ok(CheckResponse {
            files,
            ..Default::default()
        })
    }

    /// Which units of `db` this check reads (see the module docs).
    fn select<'a>(&self, request: &CheckRequest, db: &'a Db, snapshot: bool) -> Vec<&'a Unit> {
        // Only the workspace's own units (a database may name any file on the machine).
        let ws = &request.workspace;
        if snapshot {
            return db
                .units
                .iter()
                .filter(|u| u.file.starts_with(ws) && u.file.is_file())
                .collect();
        }
        let mut targets: HashSet<PathBuf> = request.files.iter().map(|p| canonical(p)).collect();
        if self.report_edited || !request.report_all {
            targets.extend(request.also_report.iter().map(|p| canonical(p)));
        }
        let last = self
            .last_errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&db.path)
            .cloned()
            .unwrap_or_default();
        let mut scanner = includes::Scanner::new(&request.workspace);
        db.units
            .iter()
            .filter(|u| u.file.starts_with(ws))
            .filter(|u| {
                last.contains(&u.file)
                    || targets.contains(&canonical(&u.file))
                    || scanner.reaches(u, &targets)
            })
            .collect()
    }

    /// Read the units of `db` this check needs and answer for `wanted` (and, with
    /// `report_all`, the project's other files with problems).
    fn check_db(
        &self,
        request: &CheckRequest,
        db: &Db,
        wanted: &[PathBuf],
        snapshot: bool,
        edited: &HashSet<PathBuf>,
    ) -> Vec<FileResult> {
        let Some((compiler, kind)) = self.compiler.clone() else {
            return Vec::new();
        };
        let ws = &request.workspace;
        let scope = Scope::workspace(ws, request.trusted);
        let compiler = match Program::at(&compiler, &scope, "C/C++ compiler (cc)") {
            Ok(p) => p,
            Err(why) => {
                return wanted
                    .iter()
                    .map(|path| FileResult {
                        path: path.clone(),
                        items: vec![Item::note(Severity::Error, "cc", why.to_string())],
                    })
                    .collect()
            }
        };
        let units = self.select(request, db, snapshot);
        let read = self.read_units(request, &compiler, kind, &units);
        if !snapshot {
            self.remember(&db.path, &read.checked, &read.broken);
        }
        self.answer(request, wanted, snapshot, edited, read.per_file)
    }

    /// Run the compiler on `units` and gather what it printed per file (columns in
    /// characters, each item once), with the units read and those that had errors.
    fn read_units(
        &self,
        request: &CheckRequest,
        compiler: &Program,
        kind: Kind,
        units: &[&Unit],
    ) -> UnitsRead {
        let ws = &request.workspace;
        let ws_canonical = canonical(ws);
        let outputs = self.run_units(request.id, compiler, kind, units);
        let mut collect = Collect::new(ws);
        let mut broken = BTreeSet::new();
        let mut checked = BTreeSet::new();
        for (unit, out) in units.iter().zip(outputs) {
            let Some(out) = out else { continue }; // cancelled before it ran
            checked.insert(unit.file.clone());
            let out = out.unwrap_or_else(|why| parse::Output {
                diags: Vec::new(),
                unlocated: vec![why.to_string()],
            });
            for message in out.unlocated {
                broken.insert(unit.file.clone());
                let item = Item::note(Severity::Error, kind.source(), message);
                collect.add(unit.file.clone(), item);
            }
            for d in out.diags {
                let printed = Path::new(&d.file);
                let printed = if printed.is_absolute() {
                    printed.to_owned()
                } else {
                    unit.dir.join(printed)
                };
                let path = in_workspace(canonical(&printed), ws, &ws_canonical);
                if d.severity == Severity::Error {
                    broken.insert(unit.file.clone());
                }
                let column = collect.column(&path, d.line, Column::Bytes(d.column));
                let item = Item {
                    line: d.line.max(1),
                    column,
                    severity: d.severity,
                    source: kind.source().into(),
                    code: d.code,
                    message: d.message,
                    introduced: None,
                    fixes: Vec::new(),
                };
                collect.add(path, item);
            }
        }
        UnitsRead {
            per_file: collect.finish().per_file,
            checked,
            broken,
        }
    }

    /// The answer for `wanted` from what the units printed, and with `report_all` the other
    /// files of the project with problems (see the module docs on what clangd reports).
    fn answer(
        &self,
        request: &CheckRequest,
        wanted: &[PathBuf],
        snapshot: bool,
        edited: &HashSet<PathBuf>,
        mut per_file: HashMap<PathBuf, Vec<Item>>,
    ) -> Vec<FileResult> {
        let ws = &request.workspace;
        let ws_canonical = canonical(ws);
        let edited: HashSet<PathBuf> = edited
            .iter()
            .map(|e| in_workspace(e.clone(), ws, &ws_canonical))
            .collect();
        // clangd reports the edited files itself (see the module docs).
        let quiet = |p: &Path| {
            !snapshot
                && !self.report_edited
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| CLANGD_EXTENSIONS.contains(&e))
        };
        let mut out: Vec<FileResult> = wanted
            .iter()
            .map(|path| FileResult {
                path: path.clone(),
                items: if quiet(path) {
                    Vec::new()
                } else {
                    per_file
                        .remove(&in_workspace(canonical(path), ws, &ws_canonical))
                        .unwrap_or_default()
                },
            })
            .collect();
        // Files nobody edited, inside the project the service ran this check for (it clears
        // what it no longer hears about only there, and knows the session's files only
        // there).
        let project = self
            .project_of(request, ws)
            .filter(|_| !snapshot)
            .unwrap_or_else(|| ws.clone());
        let blind = !snapshot
            && self
                .blind
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&project);
        if request.report_all && !blind {
            let mut rest: Vec<FileResult> = per_file
                .into_iter()
                .filter(|(p, items)| {
                    !items.is_empty()
                        && p.starts_with(&project)
                        && !(edited.contains(p) && quiet(p))
                })
                .map(|(path, items)| FileResult { path, items })
                .collect();
            rest.sort_by(|a, b| a.path.cmp(&b.path));
            out.extend(rest);
        }
        out
    }

    /// The project (in the real workspace `real`) of the request's first file, as the
    /// service computes it.
    fn project_of(&self, request: &CheckRequest, real: &Path) -> Option<PathBuf> {
        let first = request.files.first()?;
        let file = match first.strip_prefix(&request.workspace) {
            Ok(rel) => real.join(rel),
            Err(_) => first.clone(),
        };
        let markers: Vec<String> = MARKERS.iter().map(|m| m.to_string()).collect();
        Some(markers::project_root(&file, real, &markers))
    }

    /// Remember whether the baseline of the project at `real` was taken without a database.
    fn set_blind(&self, real: &Path, blind: bool) {
        let mut all = self.blind.lock().unwrap_or_else(|e| e.into_inner());
        let changed = if blind {
            all.insert(real.to_owned())
        } else {
            all.remove(real)
        };
        if changed {
            if let Ok(bytes) = serde_json::to_vec(&*all) {
                let _ = private::write(&self.blind_file, &bytes);
            }
        }
    }

    /// Remember which units of the database at `db` the check found errors through.
    fn remember(&self, db: &Path, checked: &BTreeSet<PathBuf>, broken: &BTreeSet<PathBuf>) {
        let mut all = self.last_errors.lock().unwrap_or_else(|e| e.into_inner());
        let entry = all.entry(db.to_owned()).or_default();
        let before = entry.clone();
        entry.retain(|u| !checked.contains(u));
        entry.extend(broken.iter().cloned());
        if *entry == before {
            return;
        }
        if entry.is_empty() {
            all.remove(db);
        }
        if let Ok(bytes) = serde_json::to_vec(&*all) {
            let _ = private::write(&self.state_file, &bytes);
        }
    }

    /// Read `units` in parallel; `None` for a unit not read because the check was cancelled.
    fn run_units(
        &self,
        id: u64,
        compiler: &Program,
        kind: Kind,
        units: &[&Unit],
    ) -> Vec<Option<Result<parse::Output, PluginError>>> {
        let results: Mutex<Vec<Option<Result<parse::Output, PluginError>>>> =
            Mutex::new((0..units.len()).map(|_| None).collect());
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..self.jobs.min(units.len()) {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(unit) = units.get(k) else { break };
                    let Some(r) = self.run_unit(id, compiler, kind, unit) else {
                        break;
                    };
                    results.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(r);
                });
            }
        });
        results.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// The command line that reads `unit` (see the module docs).
    pub fn command(compiler: &Program, kind: Kind, unit: &Unit) -> Command {
        let mut cmd = compiler.command(["-fsyntax-only"]);
        match kind {
            Kind::Clang => cmd.args([
                "-fno-color-diagnostics",
                "-fno-caret-diagnostics",
                "-fdiagnostics-absolute-paths",
            ]),
            Kind::Gcc => cmd.args([
                "-fdiagnostics-plain-output",
                "-fdiagnostics-column-unit=byte",
                "-fdiagnostics-color=never",
            ]),
        };
        cmd.args(db::unit_arguments(unit));
        let dir = if unit.dir.is_dir() {
            unit.dir.clone()
        } else {
            unit.file.parent().map(Path::to_owned).unwrap_or_default()
        };
        cmd.current_dir(dir);
        for v in ENV_REMOVED {
            cmd.env_remove(v);
        }
        cmd
    }

    /// Read one unit; `None` when the check was cancelled first.
    fn run_unit(
        &self,
        id: u64,
        compiler: &Program,
        kind: Kind,
        unit: &Unit,
    ) -> Option<Result<parse::Output, PluginError>> {
        if self.runs.is_cancelled(id) {
            return None;
        }
        let run = |unit: &Unit| {
            let out = self
                .runs
                .output(id, &mut Self::command(compiler, kind, unit));
            out.map(|o| parse::parse(&o.stderr))
        };
        let mut out = run(unit);
        // A database written for the other compiler: read the unit again without the flags
        // this one refused (as clangd drops them).
        if let Ok(first) = &out {
            let refused = parse::unknown_flags(first);
            if !refused.is_empty() && !self.runs.is_cancelled(id) {
                let mut fewer = unit.clone();
                fewer.args.retain(|a| !refused.contains(a));
                if fewer.args.len() < unit.args.len() {
                    out = run(&fewer);
                }
            }
        }
        if self.runs.is_cancelled(id) {
            return None;
        }
        Some(out.map_err(|e| {
            PluginError::Tool(format!("cannot run {} ({e})", compiler.path().display()))
        }))
    }
}

export_plugin!(Cc);
