//! `tsc`: an openfiles plugin that type-checks TypeScript projects with the TypeScript
//! compiler itself (`tsc --noEmit --pretty false -p <tsconfig>`), or with its native port
//! `tsgo` (TypeScript 7 preview), which takes the same arguments and prints the same lines.
//!
//! Files are grouped by their nearest `tsconfig.json`; one compiler run per project,
//! incremental with its `.tsbuildinfo` in the plugin state dir (the project tree is never
//! written; tsc and tsgo keep separate ones). Which compiler runs, and the fallback from a
//! failing `tsgo` to `tsc`, is [`compiler`]'s business. Every requested and `also_report`
//! file of the project gets a result: the compiler's items for it, or none. Problems with
//! the project itself (tsconfig errors, global errors) are put on every file of the project,
//! so they are never silently dropped. A file with no tsconfig above it is checked alone
//! with the compiler's defaults. Columns are converted from UTF-16 units to characters.
//!
//! Every compiler run is a [`gate::Program`](openfiles_plugin_api::gate::Program) of the
//! check's workspace and trust: a bare name (`tsc`) is found on `PATH`'s absolute entries
//! outside an untrusted workspace, a project's own `node_modules` compiler runs only in a
//! trusted one. The files the plugin reads itself (a reported file's lines, to turn UTF-16
//! columns into characters) are read the confined way.
//!
//! Config (`[plugin.tsc]`): `compiler = "auto" | "tsc" | "tsgo"`, `tsc = "path/to/tsc"`,
//! `tsgo = "path/to/tsgo"`, `extra_args = [..]`, `check_js = false` (also claim
//! `.js/.jsx/.mjs/.cjs`, for projects with `checkJs`).

pub mod compiler;
pub mod parse;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use openfiles_plugin_api::gate::{Program, Scope};
use openfiles_plugin_api::tools::{scope, Collect, Column, Findings, ToolOutput, ToolRuns};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, Init, Item, Plugin, PluginError,
    Severity,
};
use serde::Deserialize;

use compiler::{Compiler, CompilerSetting, Failure, Fallbacks, Kind};
use parse::TscDiagnostic;

const SOURCE: &str = "ts";
const TS_EXTENSIONS: &[&str] = &["ts", "tsx", "mts", "cts"];
const JS_EXTENSIONS: &[&str] = &["js", "jsx", "mjs", "cjs"];

/// `[plugin.tsc]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub compiler: CompilerSetting,
    pub tsc: Option<PathBuf>,
    pub tsgo: Option<PathBuf>,
    pub extra_args: Vec<String>,
    pub check_js: bool,
}

pub struct Tsc {
    settings: Settings,
    extensions: Vec<String>,
    state_dir: PathBuf,
    runs: ToolRuns,
    fallbacks: Fallbacks,
}

/// What one compiler run printed.
impl Plugin for Tsc {
    const NAME: &'static str = "tsc";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        let settings: Settings = init.settings("tsc")?;
        let mut extensions: Vec<String> = TS_EXTENSIONS.iter().map(|s| s.to_string()).collect();
        if settings.check_js {
            extensions.extend(JS_EXTENSIONS.iter().map(|s| s.to_string()));
        }
        let fallbacks = Fallbacks::load(&init.state_dir);
        let mut notes = fallbacks.notes();
        if let Some(note) = tsgo_setup_note(&settings, &fallbacks) {
            notes.push(note);
        }
        let caps = Capabilities {
            extensions: extensions.clone(),
            file_names: Vec::new(),
            project_markers: vec!["tsconfig.json".into()],
            project_wide: true,
            needs_project: false,
            notes,
            checks_texts: false,
            late_fixes: false,
            warm: false,
            superseded: false,
            serves: Vec::new(),
        };
        Ok((
            Tsc {
                settings,
                extensions,
                state_dir: init.state_dir,
                runs: ToolRuns::new(),
                fallbacks,
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        // Project (its tsconfig, or None for loose files) → its files.
        let mut projects: BTreeMap<Option<PathBuf>, Vec<PathBuf>> = BTreeMap::new();
        let mut seen = HashSet::new();
        for file in request.files.iter().chain(request.also_report.iter()) {
            let handled = file
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| self.extensions.iter().any(|x| x == e));
            if handled && seen.insert(file.clone()) {
                projects
                    .entry(nearest_tsconfig(file, &request.workspace))
                    .or_default()
                    .push(file.clone());
            }
        }
        let scope = scope(&request);
        let files = self.runs.run_groups(
            request.id,
            SOURCE,
            request.report_all,
            projects,
            |tsconfig, wanted| {
                let all = request.report_all;
                self.run_tsc(
                    request.id,
                    tsconfig.as_deref(),
                    wanted,
                    &request.workspace,
                    all,
                    &scope,
                )
            },
        )?;
        Ok(CheckResponse {
            files,
            ..Default::default()
        })
    }

    fn cancel(&self, check_id: u64) {
        self.runs.cancel(check_id);
    }
}

/// The nearest `tsconfig.json` above `file`, not looking above the workspace's parent.
pub fn nearest_tsconfig(file: &Path, workspace: &Path) -> Option<PathBuf> {
    for dir in file.ancestors().skip(1) {
        let candidate = dir.join("tsconfig.json");
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir == workspace {
            break;
        }
    }
    None
}

pub use compiler::find_tsc;

/// With `compiler = "tsgo"`: a note when the `tsgo` used outside projects with their own is
/// missing or does not start (`tsgo --version`); it is then remembered as failed.
fn tsgo_setup_note(settings: &Settings, fallbacks: &Fallbacks) -> Option<String> {
    if settings.compiler != CompilerSetting::Tsgo {
        return None;
    }
    let Some(exe) = compiler::configured_tsgo(settings.tsgo.as_deref()) else {
        return Some("compiler = \"tsgo\" but no tsgo is configured or on PATH: projects without @typescript/native-preview in their node_modules are checked with tsc".into());
    };
    if fallbacks.reason(&exe).is_some() {
        return None; // already among the notes
    }
    let probe = Tsc::program(&exe, &Scope::user()).and_then(|p| {
        p.command(["--version"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
    });
    let reason = match probe {
        Ok(out) if out.status.success() => return None,
        Ok(out) => compiler::crash(&out.status, &String::from_utf8_lossy(&out.stderr), false)
            .map(|f| f.to_string())
            .unwrap_or_else(|| format!("`--version` exited with {}", out.status)),
        Err(e) => Failure::CannotStart(e).to_string(),
    };
    fallbacks.record(&exe, &reason);
    Some(format!(
        "tsgo {} failed ({reason}): tsc is used instead until it changes",
        exe.display()
    ))
}

impl Tsc {
    /// The compiler at `exe` (a path, or a bare name looked up on `PATH`) for `scope`, by the
    /// gate's rules.
    fn program(exe: &Path, scope: &Scope) -> std::io::Result<Program> {
        let why = "TypeScript compiler (tsc plugin)";
        let found = if exe.is_absolute() {
            Program::at(exe, scope, why)
        } else {
            Program::find(&exe.to_string_lossy(), scope, why)
        };
        found.map_err(|e| std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string()))
    }

    fn build_info(&self, tsconfig: &Path, kind: Kind) -> PathBuf {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tsconfig.hash(&mut h);
        // tsc's and tsgo's build info formats differ: never share one file.
        let suffix = match kind {
            Kind::Tsc => "",
            Kind::Tsgo => ".tsgo",
        };
        self.state_dir
            .join(format!("{:016x}{suffix}.tsbuildinfo", h.finish()))
    }

    /// Start `compiler` for one project and collect what it prints.
    fn run_once(
        &self,
        id: u64,
        compiler: &Compiler,
        tsconfig: Option<&Path>,
        wanted: &[PathBuf],
        cwd: &Path,
        scope: &Scope,
    ) -> std::io::Result<ToolOutput> {
        // `--listFiles` names every file of the program, so a requested file that the
        // tsconfig leaves out is reported as unchecked instead of looking clean.
        let mut cmd = Self::program(&compiler.exe, scope)?.command([
            "--noEmit",
            "--pretty",
            "false",
            "--listFiles",
        ]);
        match tsconfig {
            Some(cfg) => {
                cmd.arg("-p")
                    .arg(cfg)
                    .arg("--incremental")
                    .arg("--tsBuildInfoFile")
                    .arg(self.build_info(cfg, compiler.kind));
            }
            None => {
                cmd.args(wanted);
            }
        }
        cmd.args(&self.settings.extra_args).current_dir(cwd);
        self.runs.output(id, &mut cmd)
    }

    /// Run the chosen compiler; a `tsgo` that does not start or crashes is replaced by
    /// `tsc` (and remembered). Returns the output, the compiler that produced it, and a
    /// note when a fallback happened in this run.
    fn run_compiler(
        &self,
        id: u64,
        tsconfig: Option<&Path>,
        wanted: &[PathBuf],
        cwd: &Path,
        scope: &Scope,
    ) -> Result<(ToolOutput, Compiler, Option<String>), PluginError> {
        let trusted = scope.trust() == openfiles_plugin_api::gate::Trust::Trusted;
        let s = &self.settings;
        let chosen = compiler::choose(
            s.compiler,
            s.tsgo.as_deref(),
            s.tsc.as_deref(),
            cwd,
            trusted,
        );
        let tsc = || Compiler {
            kind: Kind::Tsc,
            exe: s
                .tsc
                .clone()
                .unwrap_or_else(|| compiler::find_tsc(cwd, trusted)),
        };
        let cannot_run = |c: &Compiler, e: std::io::Error| {
            PluginError::Tool(format!(
                "cannot run {} ({e}); install TypeScript in the project (npm i -D typescript) or on PATH",
                c.exe.display()
            ))
        };
        if chosen.kind == Kind::Tsc || self.fallbacks.reason(&chosen.exe).is_some() {
            let c = tsc();
            let out = self
                .run_once(id, &c, tsconfig, wanted, cwd, scope)
                .map_err(|e| cannot_run(&c, e))?;
            return Ok((out, c, None));
        }
        let failure = match self.run_once(id, &chosen, tsconfig, wanted, cwd, scope) {
            Ok(out) => {
                let parsed = !parse::parse(&out.stdout).is_empty()
                    || out.stdout.lines().any(|l| Path::new(l).is_absolute());
                match compiler::crash(&out.status, &out.stderr, parsed) {
                    None => return Ok((out, chosen, None)),
                    Some(why) => why,
                }
            }
            Err(e) => Failure::CannotStart(e),
        };
        if self.runs.is_cancelled(id) {
            return Err(PluginError::Cancelled);
        }
        eprintln!(
            "openfiles-plugin-tsc: tsgo {} failed ({failure}); falling back to tsc",
            chosen.exe.display()
        );
        self.fallbacks.record(&chosen.exe, &failure.to_string());
        let c = tsc();
        let out = self
            .run_once(id, &c, tsconfig, wanted, cwd, scope)
            .map_err(|e| cannot_run(&c, e))?;
        let note = format!(
            "tsgo {} failed ({failure}): these results are from tsc, which replaces it until it changes (see `openfiles plugins`)",
            chosen.exe.display()
        );
        Ok((out, c, Some(note)))
    }

    /// Run tsc for one project; items per absolute file, `None` = project-wide items. With
    /// `report_all`, every file of the workspace tsc found a problem in, else only `wanted`.
    fn run_tsc(
        &self,
        id: u64,
        tsconfig: Option<&Path>,
        wanted: &[PathBuf],
        workspace: &Path,
        report_all: bool,
        scope: &Scope,
    ) -> Result<Findings, PluginError> {
        let cwd = tsconfig
            .and_then(Path::parent)
            .or_else(|| wanted.first().and_then(|f| f.parent()))
            .unwrap_or(workspace)
            .to_owned();
        let (out, used, fallback_note) = self.run_compiler(id, tsconfig, wanted, &cwd, scope)?;
        let diags = parse::parse(&out.stdout);
        if diags.is_empty() && !out.status.success() {
            return Err(failed(&out, used.kind, &cwd));
        }
        let run = Run {
            cwd: &cwd,
            tsconfig,
            workspace,
            report_all,
        };
        let mut found = run.collect(diags, wanted);
        if let Some(cfg) = tsconfig {
            not_in_project(&mut found, cfg, &out.stdout, wanted);
        }
        let mut findings = found.finish();
        if let Some(note) = fallback_note {
            findings
                .shared
                .push(Item::note(Severity::Info, SOURCE, note));
        }
        Ok(findings)
    }
}

/// A compiler run that printed no diagnostic and failed: its last words.
fn failed(out: &ToolOutput, kind: Kind, cwd: &Path) -> PluginError {
    let text = if out.stderr.trim().is_empty() {
        &out.stdout
    } else {
        &out.stderr
    };
    let tail: Vec<&str> = text.lines().take(12).collect();
    PluginError::Tool(format!(
        "{} failed ({}) in {}:\n{}",
        kind.name(),
        out.status,
        cwd.display(),
        tail.join("\n")
    ))
}

/// One compiler run over a project: where it ran and what it reports.
struct Run<'a> {
    /// The compiler's working directory (relative file names are relative to it).
    cwd: &'a Path,
    tsconfig: Option<&'a Path>,
    workspace: &'a Path,
    report_all: bool,
}

impl<'a> Run<'a> {
    /// The compiler's diagnostics as findings ([`Collect`]: columns from UTF-16 units to
    /// characters, each item once per file): those of the `wanted` files (with `report_all`,
    /// of any file of the workspace) per file; those of the tsconfig itself or of no file
    /// shared by the project's files (each once); those of another file of the project
    /// dropped.
    fn collect(&self, diags: Vec<TscDiagnostic>, wanted: &[PathBuf]) -> Collect<'a> {
        let wanted: HashSet<&PathBuf> = wanted.iter().collect();
        let mut found = Collect::new(self.workspace);
        let mut shared = HashSet::new();
        for d in diags {
            let item = |line: u32, column: u32, message: String| Item {
                introduced: None,
                fixes: Vec::new(),
                line,
                column,
                severity: d.severity,
                source: SOURCE.into(),
                code: Some(d.code.clone()),
                message,
            };
            let path = d.file.as_ref().map(|f| {
                let p = self.cwd.join(f);
                std::fs::canonicalize(&p).unwrap_or(p)
            });
            match path {
                Some(p)
                    if wanted.contains(&p)
                        || (self.report_all && p.starts_with(self.workspace)) =>
                {
                    let column = found.column(&p, d.line, Column::Utf16(d.column));
                    found.add(p, item(d.line, column, d.message.clone()));
                }
                // The tsconfig itself, or a global problem: the whole project is affected.
                Some(p) if self.tsconfig == Some(p.as_path()) || d.file.is_none() => {
                    let at = format!("{}({},{}): {}", p.display(), d.line, d.column, d.message);
                    let item = item(1, 1, at);
                    if shared.insert(item.clone()) {
                        found.shared(item);
                    }
                }
                None => {
                    let item = item(1, 1, d.message.clone());
                    if shared.insert(item.clone()) {
                        found.shared(item);
                    }
                }
                // Another file of the project (not in the session): not ours to report.
                Some(_) => {}
            }
        }
        found
    }
}

/// A note on each `wanted` file that the project's program (`--listFiles`, the absolute lines
/// of `stdout`) leaves out: it was not type-checked.
fn not_in_project(found: &mut Collect<'_>, tsconfig: &Path, stdout: &str, wanted: &[PathBuf]) {
    let listed: HashSet<PathBuf> = stdout
        .lines()
        .map(|l| Path::new(l.trim_end_matches('\r')))
        .filter(|p| p.is_absolute())
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned()))
        .collect();
    if listed.is_empty() {
        return;
    }
    for file in wanted.iter().filter(|f| !listed.contains(*f)) {
        found.add(
            file.clone(),
            Item::note(
                Severity::Info,
                SOURCE,
                format!(
                    "not part of the TypeScript project {} (see its include/exclude/files): not type-checked",
                    tsconfig.display()
                ),
            ),
        );
    }
}

export_plugin!(Tsc);
