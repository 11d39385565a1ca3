//! `go`: an openfiles plugin that type-checks whole Go modules, so that callers an edit
//! broke in packages nobody edited are found (the knock-on of `docs/baseline.md`): gopls
//! (the lsp plugin) is asked only about the documents it was given.
//!
//! A project-wide source: files are grouped by their module (the nearest `go.mod`; under a
//! `go.work` inside the workspace, the workspace of modules it uses), one run per group at
//! its root of the plugin's type checker (`src/helper/main.go`, this plugin's own Go source,
//! built once per Go version into the plugin's state dir). It lists the packages with
//! `go list -e -json -deps -test -export ./...` (the go command compiles what they import:
//! export data, from the user's build cache) and type-checks every package of the module,
//! test files included, from source with go/types, as gopls does: the module's packages are
//! imported as the checker saw them, so the importers of a package that does not compile are
//! still checked, as gopls checks them. Every error has go/types' message, position and error
//! code, so items look exactly like gopls's (source `compiler` or `syntax`, the code such as
//! `WrongArgCount`, the message with its `\n\thave (…)\n\twant (…)` lines, the same position)
//! and the service keeps a problem both report once. Columns are converted from bytes to
//! characters. Files that `import "C"` are checked with `C.` names unchecked (go/types'
//! `FakeImportC`). A run that found nothing and failed (a broken `go.mod`, a missing module)
//! is explained on every file of the run. The messages are those of the go/types of the
//! user's `go` (the checker is built with it), gopls's those of the Go it was built with: the
//! same when both come from one Go release (Debian's gopls and go 1.19 do); across releases a
//! reworded message is listed by both. The checker needs Go 1.18 or later.
//!
//! What runs, and what a repository can change about it: the go command (the `go` setting,
//! else `go` on `PATH`'s absolute entries; never one the workspace holds: a
//! [`gate::Program`](openfiles_plugin_api::gate::Program) of the check's workspace and trust), the Go compiler (for the export data)
//! and the checker — building Go code does not run it (Go's security policy; a repository
//! cannot set `GOFLAGS` or `-toolexec`). Offline: `GOTOOLCHAIN=local`
//! (a `toolchain` line cannot download a Go), `GOPROXY=off`, `GOSUMDB=off` (only modules
//! already in the module cache, which were verified when downloaded), `-buildvcs=false` (no
//! `git`). Nothing is written into the workspace: go list writes no binary, a `-mod=mod` in
//! the user's `GOFLAGS` is dropped (go.mod and go.sum stay as they are); the build cache and
//! module cache are the user's (content-addressed, shared with the baseline's snapshot
//! runs). cgo runs the C compiler over the repository's C code with the repository's
//! `#cgo` flags (go checks them against an allowlist): only in a trusted workspace; an
//! untrusted one is checked with `CGO_ENABLED=0` (files that `import "C"` are left out).
//!
//! The files it reads itself (a reported file's lines, to turn byte columns into characters)
//! are read the confined way ([`source_lines`](openfiles_plugin_api::tools::source_lines): no symlink, no FIFO, capped).
//!
//! Config (`[plugin.go]`): `go = "path/to/go"`, `extra_args = [..]` (go list build flags
//! such as `-tags=integration`).

pub mod parse;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use openfiles_plugin_api::gate::{Program, Scope};
use openfiles_plugin_api::markers::project_root;
use openfiles_plugin_api::tools::{on_path, scope, Collect, Column, Findings, ToolRuns};
use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin,
    PluginError, Severity,
};
use serde::Deserialize;

/// Source of the plugin's own notes (a failed run).
const SOURCE: &str = "go";
/// The helper's Go source.
const HELPER_SOURCE: &str = include_str!("helper/main.go");

/// `[plugin.go]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    pub go: Option<PathBuf>,
    pub extra_args: Vec<String>,
}

pub struct Go {
    settings: Settings,
    state_dir: PathBuf,
    runs: ToolRuns,
    /// Built helpers by `go version` output.
    helpers: Mutex<HashMap<String, PathBuf>>,
}

impl Plugin for Go {
    const NAME: &'static str = "go";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        let settings: Settings = init.settings("go")?;
        let caps = Capabilities {
            // No go to run: claim no file (no snapshot for a baseline nothing would use).
            extensions: if settings.go.is_some() || on_path("go").is_some() {
                vec!["go".into()]
            } else {
                Vec::new()
            },
            file_names: Vec::new(),
            project_markers: vec!["go.mod".into()],
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
            Go {
                settings,
                state_dir: init.state_dir,
                runs: ToolRuns::new(),
                helpers: Mutex::new(HashMap::new()),
            },
            caps,
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        let markers = vec!["go.mod".to_string()];
        let mut groups: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        let mut outside = Vec::new();
        let mut seen = HashSet::new();
        for file in request.files.iter().chain(request.also_report.iter()) {
            if file.extension().and_then(|e| e.to_str()) != Some("go") || !seen.insert(file) {
                continue;
            }
            let module = project_root(file, &request.workspace, &markers);
            if !module.join("go.mod").is_file() {
                outside.push(file.clone()); // no module: gopls alone
                continue;
            }
            groups
                .entry(go_work_root(&module, &request.workspace).unwrap_or(module))
                .or_default()
                .push(file.clone());
        }
        let go = self.go(&scope(&request))?;
        let mut files = if groups.is_empty() {
            Vec::new()
        } else {
            let helper = self.helper(request.id, &go);
            self.runs.run_groups(
                request.id,
                SOURCE,
                request.report_all,
                groups,
                |root, wanted| {
                    let helper = helper
                        .as_ref()
                        .map_err(|e| PluginError::Tool(e.to_string()))?;
                    self.run(&go, helper, root, wanted, &request)
                },
            )?
        };
        files.extend(outside.into_iter().map(|path| FileResult {
            path,
            items: Vec::new(),
        }));
        Ok(CheckResponse {
            files,
            ..Default::default()
        })
    }

    fn cancel(&self, check_id: u64) {
        self.runs.cancel(check_id);
    }
}

/// The folder of a `go.work` at or above `module` inside `workspace` (unless `GOWORK=off`).
pub fn go_work_root(module: &Path, workspace: &Path) -> Option<PathBuf> {
    if std::env::var_os("GOWORK").is_some_and(|v| v == "off") {
        return None;
    }
    module
        .ancestors()
        .take_while(|d| d.starts_with(workspace))
        .find(|d| d.join("go.work").is_file())
        .map(Path::to_owned)
}

/// The user's `GOFLAGS` without `-mod=mod` (which would let go rewrite go.mod and go.sum).
pub fn goflags(user: &str) -> String {
    user.split_whitespace()
        .filter(|f| !matches!(*f, "-mod=mod" | "--mod=mod"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `program` with the environment every go command of this plugin runs with (see the
/// module docs): the gate's for its scope (an untrusted workspace's: `CGO_ENABLED=0`, …),
/// then Go kept offline and local whatever the trust.
pub fn go_command(program: &Program) -> Command {
    let mut cmd = program.command(std::iter::empty::<&str>());
    let mut flags = goflags(&std::env::var("GOFLAGS").unwrap_or_default());
    if program.scope().untrusted() && !flags.split_whitespace().any(|f| f.starts_with("-buildvcs"))
    {
        if !flags.is_empty() {
            flags.push(' ');
        }
        flags.push_str("-buildvcs=false");
    }
    cmd.env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOSUMDB", "off")
        .env("GOFLAGS", flags);
    cmd
}

impl Go {
    /// The go command for `scope`: the setting, else `go` on `PATH` (the gate's rules).
    fn go(&self, scope: &Scope) -> Result<Program, PluginError> {
        let found = match &self.settings.go {
            Some(p) => Program::find(&p.to_string_lossy(), scope, "go (go plugin)"),
            None => Program::find("go", scope, "go (go plugin)"),
        };
        found.map_err(|e| PluginError::Tool(e.to_string()))
    }

    /// The helper built for this `go` (built once per Go version, kept in the state dir).
    fn helper(&self, id: u64, go: &Program) -> Result<PathBuf, PluginError> {
        // Our own source, built in our state dir: the user's program, for no workspace.
        let go = Program::at(
            go.path(),
            &Scope::user(),
            "go build of the go plugin's checker",
        )
        .map_err(|e| PluginError::Tool(e.to_string()))?;
        let version = go_command(&go)
            .arg("version")
            .output()
            .map_err(|e| PluginError::Tool(format!("cannot run {} ({e})", go.path().display())))?;
        let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
        if let Some(p) = self
            .helpers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&version)
        {
            return Ok(p.clone());
        }
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (HELPER_SOURCE, &version, go.path()).hash(&mut h);
        let dir = self
            .state_dir
            .join("helper")
            .join(format!("{:016x}", h.finish()));
        let exe = dir.join("openfiles-go-types");
        if !exe.is_file() {
            let src = dir.join("src");
            std::fs::create_dir_all(&src)
                .map_err(|e| PluginError::io(src.display().to_string(), e))?;
            std::fs::write(
                src.join("go.mod"),
                "module openfiles.dev/gotypes\n\ngo 1.18\n",
            )
            .and_then(|()| std::fs::write(src.join("main.go"), HELPER_SOURCE))
            .map_err(|e| PluginError::io(src.display().to_string(), e))?;
            let tmp = dir.join(format!("openfiles-go-types.{}.{id}", std::process::id()));
            let mut cmd = go_command(&go);
            // Our own source: none of the user's flags or workspaces apply to it.
            cmd.env("GOFLAGS", "")
                .env("CGO_ENABLED", "0")
                .env("GOWORK", "off")
                .args(["build", "-buildvcs=false", "-o"])
                .arg(&tmp)
                .arg(".")
                .current_dir(&src);
            let out = self.runs.output(id, &mut cmd).map_err(|e| {
                PluginError::Tool(format!("cannot run {} ({e})", go.path().display()))
            })?;
            if !out.status.success() {
                return Err(PluginError::Tool(format!(
                    "building the Go type checker with {version} failed:\n{}",
                    out.stderr.lines().take(12).collect::<Vec<_>>().join("\n")
                )));
            }
            std::fs::rename(&tmp, &exe)
                .map_err(|e| PluginError::io(exe.display().to_string(), e))?;
        }
        self.helpers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(version, exe.clone());
        Ok(exe)
    }

    /// The package patterns of a run at `root`: `./...`, or under a `go.work` every module
    /// it uses.
    fn patterns(&self, id: u64, go: &Program, root: &Path) -> Vec<String> {
        if !root.join("go.work").is_file() {
            return vec!["./...".into()];
        }
        let mut cmd = go_command(go);
        cmd.args(["list", "-m", "-f", "{{.Dir}}"]).current_dir(root);
        match self.runs.output(id, &mut cmd) {
            Ok(out) if out.status.success() => {
                let dirs: Vec<String> = out
                    .stdout
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|d| format!("{}/...", d.trim()))
                    .collect();
                if dirs.is_empty() {
                    vec!["./...".into()]
                } else {
                    dirs
                }
            }
            _ => vec!["./...".into()],
        }
    }

    /// Check the module (or go.work) at `root`: items per absolute file (only `wanted`, or
    /// with `report_all` every file of the workspace).
    fn run(
        &self,
        go: &Program,
        helper: &Path,
        root: &Path,
        wanted: &[PathBuf],
        request: &CheckRequest,
    ) -> Result<Findings, PluginError> {
        let id = request.id;
        let patterns = self.patterns(id, go, root);
        let helper = Program::at(helper, go.scope(), "the go plugin's checker")
            .map_err(|e| PluginError::Tool(e.to_string()))?;
        let mut cmd = go_command(&helper);
        cmd.arg(go.path())
            .args(&self.settings.extra_args)
            .args(&patterns)
            .current_dir(root);
        let out = self.runs.output(id, &mut cmd).map_err(|e| {
            PluginError::Tool(format!("cannot run {} ({e})", helper.path().display()))
        })?;
        let found = parse::parse(&format!("{}\n{}", out.stdout, out.stderr));
        if found.checked.is_empty() && found.typed.is_empty() && !out.status.success() {
            let text: Vec<&str> = found
                .other
                .iter()
                .map(String::as_str)
                .filter(|l| !l.starts_with("note: "))
                .take(12)
                .collect();
            return Err(PluginError::Tool(format!(
                "go list failed ({}) in {}:\n{}",
                out.status,
                root.display(),
                text.join("\n")
            )));
        }
        let canonical = |f: &str| {
            let p = root.join(f);
            std::fs::canonicalize(&p).unwrap_or(p)
        };
        let wanted: HashSet<&PathBuf> = wanted.iter().collect();
        let mut collect = Collect::new(&request.workspace);
        for (d, p) in found.typed.iter().map(|d| (d, canonical(&d.file))) {
            if d.file.is_empty() {
                collect.shared(item(d, 1, 1));
                continue;
            }
            if !(wanted.contains(&p) || (request.report_all && p.starts_with(&request.workspace))) {
                continue;
            }
            let column = collect.column(&p, d.line, Column::Bytes(d.byte_column));
            // A package and its test variants: the same error once.
            collect.add(p, item(d, d.line, column));
        }
        Ok(collect.finish())
    }
}

fn item(d: &parse::GoDiagnostic, line: u32, column: u32) -> Item {
    Item {
        introduced: None,
        fixes: Vec::new(),
        line,
        column,
        severity: Severity::Error,
        source: d.source.clone(),
        code: d.code.clone(),
        message: d.message.clone(),
    }
}

export_plugin!(Go);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_goflags_keep_all_but_mod_mod() {
        assert_eq!(goflags("-mod=mod -tags=x  -trimpath"), "-tags=x -trimpath");
        assert_eq!(goflags(""), "");
        assert_eq!(goflags("-mod=vendor"), "-mod=vendor");
    }

    #[test]
    fn offline_always_and_no_c_compiler_unless_trusted() {
        let env = |trusted| -> HashMap<String, Option<String>> {
            let go =
                Program::find("sh", &Scope::workspace(Path::new("/w"), trusted), "test").unwrap();
            go_command(&go)
                .get_envs()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.map(|v| v.to_string_lossy().into_owned()),
                    )
                })
                .collect()
        };
        for trusted in [false, true] {
            let e = env(trusted);
            assert_eq!(e["GOTOOLCHAIN"].as_deref(), Some("local"));
            assert_eq!(e["GOPROXY"].as_deref(), Some("off"));
            assert_eq!(e["GOSUMDB"].as_deref(), Some("off"));
        }
        assert_eq!(env(false)["CGO_ENABLED"].as_deref(), Some("0"));
        assert!(env(false)["GOFLAGS"]
            .as_deref()
            .unwrap()
            .contains("-buildvcs=false"));
        assert!(!env(true).contains_key("CGO_ENABLED"));
    }

    #[test]
    fn a_go_work_inside_the_workspace_is_the_root() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let m = ws.join("svc");
        std::fs::create_dir_all(&m).unwrap();
        assert_eq!(go_work_root(&m, ws), None);
        std::fs::write(ws.join("go.work"), "go 1.19\nuse ./svc\n").unwrap();
        assert_eq!(go_work_root(&m, ws), Some(ws.to_owned()));
        // One above the workspace is not the workspace's.
        assert_eq!(go_work_root(&m, &m), None);
    }
}
