//! `tsc`: an openfiles plugin that type-checks TypeScript projects with the TypeScript
//! compiler itself (`tsc --noEmit --pretty false -p <tsconfig>`).
//!
//! Files are grouped by their nearest `tsconfig.json`; one tsc run per project, incremental
//! with its `.tsbuildinfo` in the plugin state dir (the project tree is never written).
//! `tsc` comes from the nearest `node_modules/.bin` above the project, else `PATH` (or the
//! `tsc` setting). Every requested and `also_report` file of the project gets a result:
//! tsc's items for it, or none. Problems with the project itself (tsconfig errors, global
//! errors) are put on every file of the project, so they are never silently dropped.
//! A file with no tsconfig above it is checked alone with tsc's defaults.
//! Columns are converted from tsc's UTF-16 units to characters.
//!
//! Config (`[plugin.tsc]`): `tsc = "path/to/tsc"`, `extra_args = [..]`,
//! `check_js = false` (also claim `.js/.jsx/.mjs/.cjs`, for projects with `checkJs`).

pub mod parse;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use openfiles_plugin_api::tools::{Findings, ToolRuns};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, Init, Item, Plugin, Severity,
};
use serde::Deserialize;

const SOURCE: &str = "ts";
const TS_EXTENSIONS: &[&str] = &["ts", "tsx", "mts", "cts"];
const JS_EXTENSIONS: &[&str] = &["js", "jsx", "mjs", "cjs"];

/// `[plugin.tsc]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub tsc: Option<PathBuf>,
    pub extra_args: Vec<String>,
    pub check_js: bool,
}

pub struct Tsc {
    settings: Settings,
    extensions: Vec<String>,
    state_dir: PathBuf,
    runs: ToolRuns,
}

impl Plugin for Tsc {
    const NAME: &'static str = "tsc";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), String> {
        let settings: Settings = if init.config.is_null() {
            Settings::default()
        } else {
            serde_json::from_value(init.config).map_err(|e| format!("[plugin.tsc]: {e}"))?
        };
        let mut extensions: Vec<String> = TS_EXTENSIONS.iter().map(|s| s.to_string()).collect();
        if settings.check_js {
            extensions.extend(JS_EXTENSIONS.iter().map(|s| s.to_string()));
        }
        let caps = Capabilities {
            extensions: extensions.clone(),
            file_names: Vec::new(),
            project_markers: vec!["tsconfig.json".into()],
            project_wide: true,
        };
        Ok((
            Tsc {
                settings,
                extensions,
                state_dir: init.state_dir,
                runs: ToolRuns::new(),
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, String> {
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
        let files = self
            .runs
            .run_groups(request.id, SOURCE, projects, |tsconfig, wanted| {
                self.run_tsc(request.id, tsconfig.as_deref(), wanted, &request.workspace)
            })?;
        Ok(CheckResponse { files })
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

/// `node_modules/.bin/tsc` in `start` or above (up to the filesystem root), else `tsc`.
pub fn find_tsc(start: &Path) -> PathBuf {
    start
        .ancestors()
        .map(|d| d.join("node_modules/.bin/tsc"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("tsc"))
}

impl Tsc {
    fn build_info(&self, tsconfig: &Path) -> PathBuf {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        tsconfig.hash(&mut h);
        self.state_dir
            .join(format!("{:016x}.tsbuildinfo", h.finish()))
    }

    /// Run tsc for one project; items per absolute file, `None` = project-wide items.
    fn run_tsc(
        &self,
        id: u64,
        tsconfig: Option<&Path>,
        wanted: &[PathBuf],
        workspace: &Path,
    ) -> Result<Findings, String> {
        let cwd = tsconfig
            .and_then(Path::parent)
            .or_else(|| wanted.first().and_then(|f| f.parent()))
            .unwrap_or(workspace)
            .to_owned();
        let tsc = self.settings.tsc.clone().unwrap_or_else(|| find_tsc(&cwd));
        let mut cmd = Command::new(&tsc);
        // `--listFiles` names every file of the program, so a requested file that the
        // tsconfig leaves out is reported as unchecked instead of looking clean.
        cmd.args(["--noEmit", "--pretty", "false", "--listFiles"]);
        match tsconfig {
            Some(cfg) => {
                cmd.arg("-p")
                    .arg(cfg)
                    .arg("--incremental")
                    .arg("--tsBuildInfoFile")
                    .arg(self.build_info(cfg));
            }
            None => {
                cmd.args(wanted);
            }
        }
        cmd.args(&self.settings.extra_args)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self.runs.spawn(id, &mut cmd).map_err(|e| {
            format!(
                "cannot run {} ({e}); install TypeScript in the project (npm i -D typescript) or on PATH",
                tsc.display()
            )
        })?;
        let mut stderr = child.stderr.take();
        let err_thread = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_string(&mut text);
            }
            text
        });
        let mut stdout = String::new();
        if let Some(mut s) = child.stdout.take() {
            let _ = s.read_to_string(&mut stdout);
        }
        let status = child.wait().map_err(|e| e.to_string())?;
        self.runs.finished(id);
        let stderr = err_thread.join().unwrap_or_default();
        let diags = parse::parse(&stdout);
        if diags.is_empty() && !status.success() {
            let text = if stderr.trim().is_empty() {
                &stdout
            } else {
                &stderr
            };
            let tail: Vec<&str> = text.lines().take(12).collect();
            return Err(format!(
                "tsc failed ({status}) in {}:\n{}",
                cwd.display(),
                tail.join("\n")
            ));
        }
        let wanted: HashSet<&PathBuf> = wanted.iter().collect();
        let mut lines_cache: HashMap<PathBuf, Vec<String>> = HashMap::new();
        let mut found: HashMap<Option<PathBuf>, Vec<Item>> = HashMap::new();
        let mut dedupe = HashSet::new();
        for d in diags {
            let path = d.file.as_ref().map(|f| {
                let p = cwd.join(f);
                std::fs::canonicalize(&p).unwrap_or(p)
            });
            let (key, line, column, message) = match path {
                Some(p) if wanted.contains(&p) => {
                    let text = lines_cache.entry(p.clone()).or_insert_with(|| {
                        std::fs::read_to_string(&p)
                            .map(|t| t.lines().map(str::to_owned).collect())
                            .unwrap_or_default()
                    });
                    let column = text
                        .get(d.line as usize - 1)
                        .map(|l| parse::utf16_to_char_column(l, d.column))
                        .unwrap_or(d.column);
                    (Some(p), d.line, column, d.message)
                }
                // The tsconfig itself, or a global problem: the whole project is affected.
                Some(p) if tsconfig == Some(p.as_path()) || d.file.is_none() => (
                    None,
                    1,
                    1,
                    format!("{}({},{}): {}", p.display(), d.line, d.column, d.message),
                ),
                None => (None, 1, 1, d.message),
                // Another file of the project (not in the session): not ours to report.
                Some(_) => continue,
            };
            let item = Item {
                line,
                column,
                severity: d.severity,
                source: SOURCE.into(),
                code: Some(d.code),
                message,
            };
            if dedupe.insert((key.clone(), item.clone())) {
                found.entry(key).or_default().push(item);
            }
        }
        if let Some(cfg) = tsconfig {
            let listed: HashSet<PathBuf> = stdout
                .lines()
                .map(|l| Path::new(l.trim_end_matches('\r')))
                .filter(|p| p.is_absolute())
                .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned()))
                .collect();
            if !listed.is_empty() {
                for file in wanted.iter().filter(|f| !listed.contains(**f)) {
                    found.entry(Some((*file).clone())).or_default().push(Item::note(
                        Severity::Info,
                        SOURCE,
                        format!(
                            "not part of the TypeScript project {} (see its include/exclude/files): not type-checked",
                            cfg.display()
                        ),
                    ));
                }
            }
        }
        Ok(Findings {
            shared: found.remove(&None).unwrap_or_default(),
            per_file: found
                .into_iter()
                .filter_map(|(path, items)| Some((path?, items)))
                .collect(),
        })
    }
}

export_plugin!(Tsc);
