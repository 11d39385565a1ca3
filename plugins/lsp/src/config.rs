//! The plugin's configuration: what a server is started with and where it is found.
//!
//! Owns: parsing `[plugin.lsp]` (handed over as JSON), merging it over the built-in server
//! table (kept in `builtin`), finding a server's executable (the project's
//! `node_modules/.bin` or `.venv/bin` when trusted, then `PATH`'s absolute entries outside
//! an untrusted workspace: the gate's rule) and a file's project root (nearest ancestor with
//! a root marker, never above the workspace).
//!
//! What a server reads from a project that can name a program or a path is off in a
//! workspace the user has not trusted: servers that run project code (rust-analyzer, ESLint)
//! are not started there at all ([`ServerSpec::runs_project_code`]); clangd starts with its
//! project configuration off ([`ServerSpec::untrusted_args`]: `.clangd` can add any compile
//! flag) and gets its compile flags only from a database the plugin writes through the
//! compile-database allowlist ([`ServerSpec::filtered_compile_db`], see `clangd_db`);
//! typescript-language-server is given the TypeScript installed beside it
//! ([`ServerSpec::outside_typescript`]: `tsserver.path`), never the project's
//! `node_modules/typescript`, and no automatic type acquisition (npm at check time). See
//! [`for_untrusted`].
//! Some built-in servers are opt-in (`tsgo --lsp`, TypeScript 7's preview server): they are
//! only used when named in `enable`. rust-analyzer is built in (trusted workspaces
//! only: it builds the project); a real one answers the navigation test
//! (`tests/it/nav_partial.rs`), none a diagnostics test yet.
//! Nothing here starts a process except the optional `probe` (a gate `Program` of the
//! workspace's scope) (a quick `--version` run used
//! for rustup's `rust-analyzer` proxy, which exists even when the component does not).

mod builtin;

use builtin::spec;
pub use builtin::{builtin, PYTHON_TYPES};
use openfiles_plugin_api::PluginError;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// `[plugin.lsp]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Servers to add, or fields overriding a built-in server of the same name.
    pub servers: BTreeMap<String, ServerOverride>,
    /// Names of servers not to use.
    pub disable: Vec<String>,
    /// Names of opt-in built-in servers to use (`tsgo`).
    pub enable: Vec<String>,
    /// A server unused for this long is shut down (milliseconds).
    pub idle_timeout_ms: u64,
    /// After a push accepted as fresh, wait this long for a further push before answering.
    pub quiet_ms: u64,
    /// Time allowed for `initialize`.
    pub startup_timeout_ms: u64,
    /// Deadline for a check when the host gives none.
    pub default_timeout_ms: u64,
    /// First restart delay after a crash; doubles per restart.
    pub restart_backoff_ms: u64,
    /// One instance per (workspace, server) with the project roots as workspace folders,
    /// for servers that support several folders; `false`: one per (project root, server).
    pub share_servers: bool,
    /// Most server instances running at once (0: no limit); least recently used stop first.
    pub max_servers: usize,
    /// Most memory (MiB of RSS, summed over each server's process tree) the running servers
    /// may hold after a check (0: no limit); least recently used stop first.
    pub max_memory_mib: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            servers: BTreeMap::new(),
            disable: Vec::new(),
            enable: Vec::new(),
            idle_timeout_ms: 600_000,
            quiet_ms: 100,
            startup_timeout_ms: 60_000,
            default_timeout_ms: 30_000,
            restart_backoff_ms: 250,
            share_servers: true,
            max_servers: 16,
            max_memory_mib: 2048,
        }
    }
}

/// The configurable fields of one server; absent fields keep the built-in value.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerOverride {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    /// File extensions without the dot.
    pub extensions: Option<Vec<String>>,
    /// Exact file names handled whatever their extension (`Dockerfile`).
    pub file_names: Option<Vec<String>>,
    /// Language id per extension (`{"h" = "cpp"}`); unlisted extensions use the usual ids.
    pub language_ids: Option<BTreeMap<String, String>>,
    pub root_markers: Option<Vec<String>>,
    pub initialization_options: Option<Value>,
    /// Answered to `workspace/configuration` by section path (`"python.analysis"`).
    pub settings: Option<Value>,
    /// Titles of work-done progress that must end before results are final.
    pub wait_for_progress: Option<Vec<String>>,
    /// How results are obtained: `auto` (pull when offered, else push), `push`, or
    /// `tsserver` (typescript-language-server's `typescript.tsserverRequest`).
    pub diagnostics: Option<DiagnosticsMode>,
    /// The server finds each file's project itself (tsserver looks up its `tsconfig.json`,
    /// clangd its compile database): with `share_servers`, one instance rooted at the
    /// workspace serves every project root, whatever workspace-folder support it announces.
    pub finds_projects: Option<bool>,
    /// Used only for files inside a project (a root marker found between the file and the
    /// workspace): ESLint without an ESLint configuration has nothing to say.
    pub needs_project: Option<bool>,
}

impl ServerOverride {
    /// Set the fields this override names on `s`; a new command drops the built-in probe.
    fn apply(&self, s: &mut ServerSpec) {
        if let Some(c) = &self.command {
            if c != &s.command {
                s.probe = None;
            }
            s.command = c.clone();
        }
        if let Some(a) = &self.args {
            s.args = a.clone();
        }
        if let Some(e) = &self.extensions {
            s.extensions = e
                .iter()
                .map(|x| x.trim_start_matches('.').to_owned())
                .collect();
        }
        if let Some(l) = &self.language_ids {
            s.language_ids = l.clone();
        }
        if let Some(m) = &self.root_markers {
            s.root_markers = m.clone();
        }
        if let Some(i) = &self.initialization_options {
            s.initialization_options = Some(i.clone());
        }
        if let Some(v) = &self.settings {
            s.settings = v.clone();
        }
        if let Some(w) = &self.wait_for_progress {
            s.wait_for_progress = w.clone();
        }
        if let Some(d) = self.diagnostics {
            s.diagnostics = d;
        }
        if let Some(f) = self.finds_projects {
            s.finds_projects = f;
        }
        if let Some(f) = &self.file_names {
            s.file_names = f.clone();
        }
        if let Some(n) = self.needs_project {
            s.needs_project = n;
        }
    }
}

/// How a server's results are obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiagnosticsMode {
    #[default]
    Auto,
    Push,
    Tsserver,
}

/// One usable server definition.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub extensions: Vec<String>,
    /// Exact file names handled whatever their extension.
    pub file_names: Vec<String>,
    pub language_ids: BTreeMap<String, String>,
    pub root_markers: Vec<String>,
    pub initialization_options: Option<Value>,
    pub settings: Value,
    pub wait_for_progress: Vec<String>,
    pub diagnostics: DiagnosticsMode,
    /// Arguments of a quick run that must succeed before the server is used.
    pub probe: Option<Vec<String>>,
    /// Distributed through npm: may be found in a workspace's `node_modules/.bin` only.
    pub node_package: bool,
    /// Used only when named in `[plugin.lsp] enable` (a preview server).
    pub opt_in: bool,
    /// Finds each file's project itself ([`ServerOverride::finds_projects`]).
    pub finds_projects: bool,
    /// Runs code the project brings (rust-analyzer: build scripts, proc macros): started
    /// only in workspaces the user trusts.
    pub runs_project_code: bool,
    /// Used only for files inside a project ([`ServerOverride::needs_project`]).
    pub needs_project: bool,
    /// Arguments added in a workspace the user has not trusted, turning off what the server
    /// would obey in the project's own files (clangd: `--enable-config=false`, no `.clangd`).
    /// The same options among the configured `args` are dropped there.
    pub untrusted_args: Vec<String>,
    /// In a workspace the user has not trusted, the server reads compile flags only from a
    /// database the plugin writes (the compile-database allowlist the cc plugin uses), named
    /// by `--compile-commands-dir` (clangd).
    pub filtered_compile_db: bool,
    /// In a workspace the user has not trusted, the server (typescript-language-server) is
    /// given `tsserver.path` of the TypeScript installed beside it, so the project's
    /// `node_modules/typescript` — JavaScript the repository brings — never runs; without one
    /// it is not started there.
    pub outside_typescript: bool,
    /// The server asks the client for schemas it does not load itself (`vscode/content`):
    /// in a workspace the user has not trusted, for every schema, files too
    /// (`handledSchemaProtocols: []`), and the client answers only with a file inside the
    /// server's folders, read the confined way — a `$schema` naming `~/.aws/credentials`
    /// reads nothing (vscode-json-language-server).
    pub schemas_from_client: bool,
    /// Notifications sent once after `initialized` (yaml-language-server's
    /// `yaml/registerContentRequest`, which makes it ask the client for http schemas, and
    /// openfiles declines: no download at check time).
    pub after_initialized: Vec<(String, Value)>,
    /// Custom notifications the server sends around its indexing (intelephense's
    /// `indexingStarted`/`indexingEnded`): while indexing, its pushes are incomplete, and
    /// only a push after the end counts.
    pub indexing: Option<(String, String)>,
    /// One of several servers doing the same job on a file (`python-types`: pyright,
    /// basedpyright, ty): only one of a group checks a file ([`ServerSpec::claims`]).
    pub group: Option<String>,
    /// Markers by which a project asks for this member of its group (`[tool.ty]`); without
    /// any, the first member found in table order is used.
    pub claims: Vec<String>,
}

/// Parse the plugin's JSON config (`null` means defaults).
pub fn parse(v: &Value) -> Result<Config, PluginError> {
    if v.is_null() {
        return Ok(Config::default());
    }
    serde_json::from_value(v.clone())
        .map_err(|e| PluginError::Config(format!("invalid [plugin.lsp] config: {e}")))
}

impl Config {
    /// The built-in servers with overrides applied, plus added servers, minus disabled ones.
    pub fn servers(&self) -> Result<Vec<ServerSpec>, PluginError> {
        let mut out = builtin();
        for (name, o) in &self.servers {
            let idx = match out.iter().position(|s| &s.name == name) {
                Some(i) => i,
                None => {
                    let Some(cmd) = &o.command else {
                        return Err(PluginError::Config(format!("[plugin.lsp.servers.{name}] is not a built-in server and has no `command`")));
                    };
                    out.push(spec(name, cmd, &[], &[], &[]));
                    out.len() - 1
                }
            };
            o.apply(&mut out[idx]);
        }
        for name in &self.enable {
            if !out.iter().any(|s| &s.name == name) {
                return Err(PluginError::Config(format!(
                    "[plugin.lsp] enable: no server named {name:?} (built-in or under servers)"
                )));
            }
        }
        out.retain(|s| {
            !self.disable.contains(&s.name) && (!s.opt_in || self.enable.contains(&s.name))
        });
        Ok(out)
    }

    pub fn quiet(&self) -> Duration {
        Duration::from_millis(self.quiet_ms)
    }
}

/// JSON files that allow comments (as editors treat them).
const JSONC_NAMES: &[&str] = &[
    "tsconfig.json",
    "jsconfig.json",
    ".eslintrc.json",
    "devcontainer.json",
    ".devcontainer.json",
    "settings.json",
    "launch.json",
    "tasks.json",
    "extensions.json",
    "keybindings.json",
];

/// The language id of a file (by extension; `Dockerfile` and commented JSON by name).
pub fn language_id(spec: &ServerSpec, path: &Path) -> String {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if let Some(id) = spec.language_ids.get(ext) {
        return id.clone();
    }
    if spec.file_names.iter().any(|f| f == name) && spec.name == "dockerfile" {
        return "dockerfile".into();
    }
    if ext == "json" && (JSONC_NAMES.contains(&name) || name.starts_with("tsconfig.")) {
        return "jsonc".into();
    }
    match ext {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "c" | "h" => "c",
        "cpp" | "cc" | "cxx" | "hpp" | "hh" => "cpp",
        "rs" => "rust",
        "go" => "go",
        "sh" | "bash" => "shellscript",
        "yml" => "yaml",
        "htm" => "html",
        "kt" | "kts" => "kotlin",
        "rb" => "ruby",
        "cs" => "csharp",
        other => other,
    }
    .to_owned()
}

/// Finds executables, caching `PATH` lookups and probe results.
#[derive(Default)]
pub struct Resolver {
    probes: Mutex<HashMap<(PathBuf, Vec<String>), bool>>,
}

impl Resolver {
    /// The executable for `spec` as seen from a project, for `scope` (its workspace and
    /// trust): in a workspace the user trusts, `<dir>/node_modules/.bin`, then
    /// `<dir>/.venv/bin` (a Python project's own ruff, basedpyright or ty), for the project
    /// root and each ancestor up to the workspace, then `PATH`; in any other, `PATH`'s
    /// absolute entries outside the workspace only (an executable the repository brings
    /// never runs there; the gate's rule). `None` if absent (or present but its probe fails,
    /// or the gate refuses it).
    pub fn find(&self, spec: &ServerSpec, root: &Path, scope: &Scope) -> Option<PathBuf> {
        let cmd = Path::new(&spec.command);
        let trusted = scope.trust() == Trust::Trusted;
        let workspace = scope.workspace_root();
        let found = if cmd.components().count() > 1 {
            Some(cmd.to_path_buf()).filter(|p| is_executable(p))
        } else {
            let local = root
                .ancestors()
                .take_while(|d| trusted && workspace.is_some_and(|w| d.starts_with(w)))
                .flat_map(|d| [d.join("node_modules/.bin"), d.join(".venv/bin")])
                .map(|bin| bin.join(cmd))
                .find(|p| is_executable(p));
            local.or_else(|| search(&spec.command, scope))
        }?;
        let program = Program::at(&found, scope, "language server probe").ok()?;
        match &spec.probe {
            None => Some(found),
            Some(args) => self.probe(&program, args).then_some(found),
        }
    }

    fn probe(&self, program: &Program, args: &[String]) -> bool {
        let exe = program.path();
        let key = (exe.to_path_buf(), args.to_vec());
        if let Some(ok) = self
            .probes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return *ok;
        }
        let ok = program
            .command(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            tracing::info!("{} {:?} failed; server not used", exe.display(), args);
        }
        self.probes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, ok);
        ok
    }
}

pub use openfiles_plugin_api::gate::spawn::search;
use openfiles_plugin_api::gate::{Program, Scope, Trust};
pub use openfiles_plugin_api::tools::{is_executable, on_path};

/// `spec` as started in a workspace the user has not trusted (see the module docs), from the
/// executable `exe`; `compile_commands_dir` is the folder of the database the plugin wrote
/// for it (servers with [`ServerSpec::filtered_compile_db`]). `Err` says why it cannot be
/// started there.
pub fn for_untrusted(
    spec: &ServerSpec,
    exe: &Path,
    compile_commands_dir: Option<&Path>,
    workspace: &Path,
) -> Result<ServerSpec, PluginError> {
    let mut s = spec.clone();
    // Options the plugin sets here, without their dashes and value.
    let name = |a: &str| -> String {
        let a = a.trim_start_matches('-');
        a.split('=').next().unwrap_or(a).to_owned()
    };
    let mut own: Vec<String> = s.untrusted_args.iter().map(|a| name(a)).collect();
    if s.filtered_compile_db {
        own.push("compile-commands-dir".into());
    }
    // The same options among the configured ones would be given twice (clangd refuses that).
    let mut kept = Vec::new();
    let mut args = s.args.iter();
    while let Some(a) = args.next() {
        if !a.starts_with('-') || !own.contains(&name(a)) {
            kept.push(a.clone());
        } else if !a.contains('=') && name(a) == "compile-commands-dir" {
            args.next(); // its value
        }
    }
    s.args = kept;
    s.args.extend(s.untrusted_args.iter().cloned());
    if s.filtered_compile_db {
        let dir = compile_commands_dir
            .ok_or_else(|| PluginError::Config("no folder for its compile database".into()))?;
        s.args
            .push(format!("--compile-commands-dir={}", dir.display()));
    }
    if s.schemas_from_client {
        let mut init = s
            .initialization_options
            .take()
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({}));
        init["handledSchemaProtocols"] = serde_json::json!([]);
        s.initialization_options = Some(init);
    }
    if s.outside_typescript {
        let tsserver = typescript_beside(exe, workspace).ok_or_else(|| {
            PluginError::Config(format!(
                "no TypeScript installed beside {} (npm i -g typescript), and the project's own runs only in a trusted workspace",
                exe.display()
            ))
        })?;
        let mut init = s
            .initialization_options
            .take()
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({}));
        init["tsserver"] = match init.get("tsserver") {
            Some(Value::Object(t)) => Value::Object(t.clone()),
            _ => serde_json::json!({}),
        };
        init["tsserver"]["path"] = Value::String(tsserver.display().to_string());
        init["tsserver"]["fallbackPath"] = Value::String(tsserver.display().to_string());
        init["disableAutomaticTypingAcquisition"] = Value::Bool(true);
        s.initialization_options = Some(init);
    }
    Ok(s)
}

/// The `tsserver.js` of the TypeScript a node program at `exe` would load itself (node's
/// lookup: `node_modules/typescript` in the folders above its real path), outside
/// `workspace`.
pub fn typescript_beside(exe: &Path, workspace: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(exe).ok()?;
    let real_ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_owned());
    real.ancestors()
        .skip(1)
        .flat_map(|d| {
            let mut c = vec![d.join("node_modules/typescript/lib/tsserver.js")];
            if d.file_name().is_some_and(|n| n == "node_modules") {
                c.push(d.join("typescript/lib/tsserver.js"));
            }
            c
        })
        .filter_map(|p| std::fs::canonicalize(&p).ok())
        .find(|p| p.is_file() && !p.starts_with(&real_ws) && !p.starts_with(workspace))
}

/// The project root of `file` for `spec`: the nearest ancestor (not above `workspace`)
/// holding one of the root markers ([`openfiles_plugin_api::markers`]), else the workspace.
pub fn project_root(spec: &ServerSpec, file: &Path, workspace: &Path) -> PathBuf {
    openfiles_plugin_api::markers::project_root(file, workspace, &spec.root_markers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overrides_merge_over_builtins_and_disable_removes() {
        let c = parse(&json!({
            "servers": {
                "ruff": {"args": ["server", "--preview"]},
                "mine": {"command": "/bin/cat", "extensions": [".foo"]},
            },
            "disable": ["pyright"],
        }))
        .unwrap();
        let s = c.servers().unwrap();
        let ruff = s.iter().find(|s| s.name == "ruff").unwrap();
        assert_eq!(ruff.args, ["server", "--preview"]);
        assert_eq!(ruff.command, "ruff");
        assert!(s.iter().all(|s| s.name != "pyright"));
        let mine = s.iter().find(|s| s.name == "mine").unwrap();
        assert_eq!(mine.extensions, ["foo"]);
    }

    #[test]
    fn opt_in_servers_only_when_enabled() {
        let names = |c: &Config| -> Vec<String> {
            c.servers().unwrap().into_iter().map(|s| s.name).collect()
        };
        let off = parse(&json!({})).unwrap();
        assert!(!names(&off).contains(&"tsgo".to_owned()));
        let on = parse(&json!({"enable": ["tsgo"]})).unwrap();
        let tsgo = on
            .servers()
            .unwrap()
            .into_iter()
            .find(|s| s.name == "tsgo")
            .unwrap();
        assert_eq!(tsgo.args, ["--lsp", "--stdio"]);
        assert!(tsgo.node_package);
        assert!(names(&on).contains(&"typescript-language-server".to_owned()));
        let typo = parse(&json!({"enable": ["tsgoo"]})).unwrap();
        assert!(typo.servers().unwrap_err().to_string().contains("tsgoo"));
    }

    /// A repository's `node_modules/.bin` and `.venv/bin` are used only where the user
    /// trusts the workspace; elsewhere the server comes from `PATH` (here: none, so not found).
    #[test]
    fn a_workspace_server_runs_only_in_a_trusted_workspace() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let sub = ws.join("pkg");
        std::fs::create_dir_all(&sub).unwrap();
        let r = Resolver::default();
        for (bin, cmd) in [
            ("node_modules/.bin", "openfiles-test-no-such-server"),
            (".venv/bin", "openfiles-test-no-such-venv-server"),
        ] {
            let bin = ws.join(bin);
            std::fs::create_dir_all(&bin).unwrap();
            let exe = bin.join(cmd);
            std::fs::write(&exe, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
            let s = spec("x", cmd, &[], &["x"], &[]);
            assert_eq!(r.find(&s, &sub, &Scope::workspace(&ws, true)), Some(exe));
            assert_eq!(r.find(&s, &sub, &Scope::workspace(&ws, false)), None);
            // Never above the workspace.
            assert_eq!(r.find(&s, &sub, &Scope::workspace(&sub, true)), None);
        }
    }

    #[test]
    fn untrusted_servers_read_no_project_config_and_run_no_project_build() {
        let all = builtin();
        let get = |n: &str| all.iter().find(|s| s.name == n).unwrap().clone();
        for n in [
            "rust-analyzer",
            "eslint",
            "jdtls",
            "kotlin-language-server",
            "sourcekit-lsp",
            "ruby-lsp",
            "csharp-ls",
        ] {
            assert!(get(n).runs_project_code, "{n}");
        }
        let ws = Path::new("/w");
        let dir = Path::new("/state/clangd/w");
        // The user's own options of the same names are replaced, never given twice.
        let mut clangd = get("clangd");
        clangd.args = vec![
            "--log=error".into(),
            "--compile-commands-dir".into(),
            "/w/build".into(),
            "--enable-config".into(),
            "-j=2".into(),
        ];
        let c = for_untrusted(&clangd, Path::new("/usr/bin/clangd"), Some(dir), ws).unwrap();
        assert_eq!(
            c.args,
            [
                "--log=error",
                "-j=2",
                "--enable-config=false",
                "--compile-commands-dir=/state/clangd/w"
            ]
        );
        assert!(for_untrusted(&clangd, Path::new("/usr/bin/clangd"), None, ws).is_err());
        // typescript-language-server: the TypeScript beside it, never the workspace's.
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let global = root.join("lib/node_modules");
        let cli = global.join("typescript-language-server/lib/cli.mjs");
        let tsserver = global.join("typescript/lib/tsserver.js");
        for f in [&cli, &tsserver] {
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, "").unwrap();
        }
        let tsls = get("typescript-language-server");
        let s = for_untrusted(&tsls, &cli, None, ws).unwrap();
        let init = s.initialization_options.unwrap();
        assert_eq!(init["tsserver"]["path"], tsserver.display().to_string());
        assert_eq!(init["disableAutomaticTypingAcquisition"], true);
        // A TypeScript only inside the workspace is none.
        assert!(for_untrusted(&tsls, &cli, None, &root).is_err());
    }

    #[test]
    fn unknown_server_without_command_is_an_error() {
        let c = parse(&json!({"servers": {"nope": {"args": []}}})).unwrap();
        assert!(c.servers().unwrap_err().to_string().contains("nope"));
        assert!(parse(&json!({"idle": 3})).is_err());
    }

    #[test]
    fn a_server_whose_probe_fails_is_not_found() {
        // Like rustup's rust-analyzer proxy without the component: present, but unusable.
        let mut s = spec("x", "sh", &[], &["x"], &[]);
        let r = Resolver::default();
        let ws = std::env::temp_dir();
        let scope = Scope::workspace(&ws, true);
        s.probe = Some(vec!["-c".into(), "exit 1".into()]);
        assert_eq!(r.find(&s, &ws, &scope), None);
        s.probe = Some(vec!["-c".into(), "exit 0".into()]);
        assert!(r.find(&s, &ws, &scope).is_some());
        s.command = "/nonexistent/openfiles-test-server".into();
        assert_eq!(r.find(&s, &ws, &scope), None);
    }

    #[test]
    fn root_is_nearest_marker_within_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join("a/b")).unwrap();
        std::fs::write(ws.join("a/pyproject.toml"), "").unwrap();
        let ruff = builtin().remove(0);
        assert_eq!(project_root(&ruff, &ws.join("a/b/x.py"), ws), ws.join("a"));
        assert_eq!(project_root(&ruff, &ws.join("x.py"), ws), ws);
    }
}
