//! `cargo-check`: an openfiles plugin that runs `cargo check` (or `cargo clippy`) on the
//! project of each Rust file and maps the compiler's messages back to files.
//!
//! Project root: `cargo locate-project --workspace` from the file's nearest `Cargo.toml`.
//! One run per root per check, with `--message-format=json` and a target directory of our
//! own under the plugin state dir (so it never waits on, or invalidates, the user's
//! `target/`). Messages map by their primary span (1-based line and column, as rustc counts
//! them: characters); a span inside a macro falls back to its expansion's call site.
//! Every requested and `also_report` file gets a result (empty when clean), because a
//! project-wide check can move an error to another file. Cancelling kills the cargo run.
//!
//! Only in a workspace the user trusts (cargo runs its build scripts and proc macros); cargo
//! is a [`gate::Program`](openfiles_plugin_api::gate::Program) of the check's workspace and
//! trust, found on `PATH`'s absolute entries (never `.`) or in rustup's folder.
//!
//! Config (`[plugin.cargo-check]`): `command = "check" | "clippy"`, `extra_args = [..]`,
//! `all_targets = true`, `cargo = "cargo"`.

mod messages;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use openfiles_plugin_api::gate::{Program, Scope};
use openfiles_plugin_api::tools::{on_path, scope, Findings, ToolRuns};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin,
    PluginError, Severity,
};
use serde::Deserialize;

pub use messages::{parse_line, Located};

/// `[plugin.cargo-check]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// `check` or `clippy`.
    pub command: String,
    pub extra_args: Vec<String>,
    /// Pass `--all-targets` (tests, benches, examples too).
    pub all_targets: bool,
    /// The cargo executable.
    pub cargo: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            command: "check".into(),
            extra_args: Vec::new(),
            all_targets: true,
            cargo: "cargo".into(),
        }
    }
}

pub struct CargoCheck {
    settings: Settings,
    /// The cargo executable to run (see [`resolve_cargo`]).
    cargo: PathBuf,
    state_dir: PathBuf,
    /// Running cargo processes per check id, and ids cancelled.
    runs: ToolRuns,
}

const SOURCE: &str = "cargo-check";

impl Plugin for CargoCheck {
    const NAME: &'static str = "cargo-check";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        let settings: Settings = init.settings("cargo-check")?;
        if settings.command != "check" && settings.command != "clippy" {
            return Err(PluginError::Config(format!(
                "[plugin.cargo-check]: command must be \"check\" or \"clippy\", got {:?}",
                settings.command
            )));
        }
        let caps = Capabilities {
            extensions: vec!["rs".into()],
            file_names: Vec::new(),
            project_markers: vec!["Cargo.toml".into()],
            project_wide: true,
            needs_project: false,
            notes: Vec::new(),
            checks_texts: false,
            late_fixes: false,
            warm: false,
            superseded: false,
            serves: Vec::new(),
        };
        Ok((
            CargoCheck {
                cargo: resolve_cargo(&settings.cargo),
                settings,
                state_dir: init.state_dir,
                runs: ToolRuns::new(),
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        if !request.trusted {
            // cargo runs the project's build scripts and proc macros (and honours its
            // `.cargo/config.toml` wrappers and runners): nothing of it in an untrusted workspace.
            let files = request
                .files
                .iter()
                .filter(|f| f.extension() == Some(std::ffi::OsStr::new("rs")))
                .map(|f| FileResult {
                    path: f.clone(),
                    items: vec![Item::untrusted(
                        SOURCE,
                        "cargo check (it runs the project's build scripts and proc macros)",
                    )],
                })
                .collect();
            return Ok(CheckResponse {
                files,
                ..Default::default()
            });
        }
        let cargo = self.program(&scope(&request))?;
        let mut by_root: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        let mut files = Vec::new();
        let mut seen = HashSet::new();
        // One `cargo locate-project` per package folder, not per file.
        let mut roots: HashMap<PathBuf, PathBuf> = HashMap::new();
        for file in request.files.iter().chain(request.also_report.iter()) {
            if !seen.insert(file.clone()) || file.extension() != Some(std::ffi::OsStr::new("rs")) {
                continue;
            }
            let root = package_dir(file).map(|package| {
                roots
                    .entry(package.clone())
                    .or_insert_with(|| self.workspace_root(&cargo, &package))
                    .clone()
            });
            match root {
                Some(root) => by_root.entry(root).or_default().push(file.clone()),
                None => files.push(FileResult {
                    path: file.clone(),
                    items: vec![Item::note(
                        Severity::Info,
                        SOURCE,
                        "no Cargo.toml above this file: not checked by cargo",
                    )],
                }),
            }
        }
        files.extend(self.runs.run_groups(
            request.id,
            SOURCE,
            request.report_all,
            by_root,
            |root, _| {
                let target = match cache_root(root, &request) {
                    Some(real) => self.target_dir(&real, "-baseline"),
                    None => self.target_dir(root, ""),
                };
                self.run_cargo(&cargo, request.id, root, &target)
                    .map(|per_file| Findings {
                        per_file,
                        shared: Vec::new(),
                    })
            },
        )?);
        Ok(CheckResponse {
            files,
            ..Default::default()
        })
    }

    fn cancel(&self, check_id: u64) {
        self.runs.cancel(check_id);
    }
}

impl CargoCheck {
    /// The cargo to run for `scope`, by the gate's rules.
    fn program(&self, scope: &Scope) -> Result<Program, PluginError> {
        let why = "cargo (cargo-check plugin)";
        let found = if self.cargo.is_absolute() {
            Program::at(&self.cargo, scope, why)
        } else {
            Program::find(&self.cargo.to_string_lossy(), scope, why)
        };
        found.map_err(|e| PluginError::Tool(e.to_string()))
    }

    /// The cargo workspace root of the package in `package` (the folder of the workspace's
    /// `Cargo.toml`; the package itself when cargo cannot say).
    fn workspace_root(&self, cargo: &Program, package: &Path) -> PathBuf {
        let out = cargo
            .command(["locate-project", "--workspace", "--message-format", "plain"])
            .current_dir(package)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok();
        out.filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| PathBuf::from(s.trim()))
            .and_then(|p| p.parent().map(Path::to_owned))
            .unwrap_or_else(|| package.to_owned())
    }

    /// The target directory of the project at `root` (`suffix` names a second one).
    fn target_dir(&self, root: &Path, suffix: &str) -> PathBuf {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        root.hash(&mut h);
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.state_dir
            .join("target")
            .join(format!("{name}-{:016x}{suffix}", h.finish()))
    }

    /// Run cargo at `root`, building in `target`; messages per absolute file.
    fn run_cargo(
        &self,
        cargo: &Program,
        id: u64,
        root: &Path,
        target: &Path,
    ) -> Result<HashMap<PathBuf, Vec<Item>>, PluginError> {
        let mut cmd = cargo.command([&self.settings.command]);
        cmd.arg("--message-format=json")
            .arg("--workspace")
            .arg("--target-dir")
            .arg(target);
        if self.settings.all_targets {
            cmd.arg("--all-targets");
        }
        cmd.args(&self.settings.extra_args)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self
            .runs
            .spawn(id, &mut cmd)
            .map_err(|e| PluginError::io(format!("cannot run {}", cargo.path().display()), e))?;
        let stderr = child.stderr.take();
        let err_thread = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut s) = stderr {
                let _ = s.read_to_string(&mut text);
            }
            text
        });
        let mut found: HashMap<PathBuf, Vec<Item>> = HashMap::new();
        let mut dedupe = HashSet::new();
        let mut any = false;
        if let Some(stdout) = child.stdout.take() {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Some(located) = parse_line(&line, root) else {
                    continue;
                };
                any = true;
                let path = std::fs::canonicalize(&located.path).unwrap_or(located.path);
                if dedupe.insert((path.clone(), located.item.clone())) {
                    found.entry(path).or_default().push(located.item);
                }
            }
        }
        let status = child.wait().map_err(|e| PluginError::io("cargo", e))?;
        self.runs.finished(id);
        stamp_fixes(root, &mut found);
        let stderr = err_thread.join().unwrap_or_default();
        if !status.success() && !any {
            let tail: Vec<&str> = stderr.lines().rev().take(12).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(PluginError::Tool(format!(
                "cargo {} failed ({status}) in {}:\n{}",
                self.settings.command,
                root.display(),
                tail.join("\n")
            )));
        }
        Ok(found)
    }
}

/// Give every fix the hash of the content its edits are for (each file read once, the
/// confined way); a fix whose file cannot be read is dropped.
fn stamp_fixes(root: &Path, found: &mut HashMap<PathBuf, Vec<Item>>) {
    let mut hashes: HashMap<PathBuf, Option<String>> = HashMap::new();
    for item in found.values_mut().flatten() {
        item.fixes.retain_mut(|fix| {
            fix.files.iter_mut().all(|f| {
                if let Ok(p) = std::fs::canonicalize(&f.path) {
                    f.path = p;
                }
                let hash = hashes.entry(f.path.clone()).or_insert_with(|| {
                    openfiles_plugin_api::confine::read_workspace_file(root, &f.path, 32 << 20)
                        .ok()
                        .map(|b| openfiles_plugin_api::content_hash(&b))
                });
                match hash {
                    Some(h) => {
                        f.sha256 = h.clone();
                        true
                    }
                    None => false,
                }
            })
        });
    }
}

/// The cargo to run: the setting as given when it is a path, else found on `PATH`'s
/// absolute entries ([`on_path`]); else the rustup location (`$CARGO_HOME/bin`,
/// `~/.cargo/bin`), which a service's minimal `PATH` often lacks; else the bare name (looked
/// up again at each check, and the error names it).
pub fn resolve_cargo(setting: &str) -> PathBuf {
    if setting.contains('/') {
        return PathBuf::from(setting);
    }
    if let Some(p) = on_path(setting) {
        return p;
    }
    let homes = [
        std::env::var_os("CARGO_HOME").map(PathBuf::from),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")),
    ];
    homes
        .into_iter()
        .flatten()
        .map(|h| h.join("bin").join(setting))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(setting))
}

/// For a run over a snapshot of a workspace (`cache_of`: its committed tree, for the
/// baseline), the same project in the real workspace. Snapshots of every commit build in
/// one target directory of their own beside the real project's, so dependencies are built
/// once and each commit rebuilds only the workspace's crates. Never in the real project's
/// target directory: cargo's unit hashes do not include a package's path, so the
/// snapshot's older sources would pass for the real tree's build.
fn cache_root(root: &Path, request: &CheckRequest) -> Option<PathBuf> {
    let real = request.cache_of.as_ref()?;
    let rel = root.strip_prefix(&request.workspace).ok()?;
    Some(real.join(rel))
}

/// The nearest folder above `file` holding a `Cargo.toml`.
fn package_dir(file: &Path) -> Option<PathBuf> {
    file.ancestors()
        .skip(1)
        .find(|d| d.join("Cargo.toml").is_file())
        .map(Path::to_owned)
}

export_plugin!(CargoCheck);
