//! Configuration: the user's `config.toml`, per-workspace `.openfiles/config.toml`
//! overrides, defaults and validation.
//!
//! Every struct denies unknown keys, and range checks happen during deserialization, so
//! `toml`'s error carries the offending key and its line ("TOML parse error at line 3,
//! column 1 … unknown field `heartbeat_second`"). A workspace file (the repository's, so
//! data) may set only the keys of `WORKSPACE_KEYS`, limits only lower than the user's;
//! it is merged key by key over the user's file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use openfiles_plugin_api::confine::{self, Last};

use openfiles_wire::spec::{Feedback, FeedbackScope};

pub use openfiles_claws::config::{
    ClawsAuthConfig, ClawsConfig, ClawsEventLogConfig, ClawsLifecycleConfig, ClawsWebSocketConfig,
};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// The whole configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub service: ServiceConfig,
    pub hooks: HooksConfig,
    pub watch: WatchConfig,
    pub diagnostics: DiagnosticsConfig,
    pub plugins: PluginsConfig,
    /// Per-plugin settings, `[plugin.<name>]`, handed to the plugin as JSON.
    pub plugin: BTreeMap<String, toml::Table>,
    pub claws: ClawsConfig,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceConfig {
    /// `error`, `warn`, `info`, `debug`, `trace`, or a `RUST_LOG`-style filter. `RUST_LOG` wins.
    pub log_level: String,
    /// Seconds between two heartbeat sweeps (2–30): each refreshes the mtime of every
    /// workspace's heartbeat (readers count it fresh for 60 s) and looks for a live editor
    /// there (standing back). Lower notices an editor sooner; higher wakes less.
    #[serde(deserialize_with = "heartbeat_range")]
    pub heartbeat_seconds: u64,
    /// Folders scanned for workspaces (sub-folders holding `.openfiles/` or `.claws/`).
    pub roots: Vec<PathBuf>,
    /// Folders always registered as workspaces.
    pub workspaces: Vec<PathBuf>,
    /// Clients that need the service (`hook`, `mcp`, `claws`, `review`, …) start
    /// `openfiles serve` themselves when none answers and no systemd/launchd socket unit of
    /// ours listens there (`src/autostart.rs`). `OPENFILES_AUTOSTART=0` turns it off too.
    pub autostart: bool,
    /// An autostarted service exits after this many seconds without edits, requests,
    /// control connections, Claws terminals or Claws clients (`0`: never). A service started
    /// by hand or by systemd/launchd never exits on its own.
    pub idle_exit_seconds: u64,
    /// How many project-wide runs (a type checker over a whole project, `cargo check`, a
    /// test run) the service runs at once, over all workspaces (`0`: the number of cores).
    /// Past it, runs wait: baseline runs (one per repository, commit, source and project,
    /// shared by every worktree at that commit) first, then the edits' runs, in order.
    pub max_project_runs: usize,
}

/// Default of `[service] idle_exit_seconds`.
pub const DEFAULT_IDLE_EXIT_SECONDS: u64 = 300;

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            log_level: "info".into(),
            heartbeat_seconds: 30,
            roots: Vec::new(),
            workspaces: Vec::new(),
            autostart: true,
            idle_exit_seconds: DEFAULT_IDLE_EXIT_SECONDS,
            max_project_runs: 0,
        }
    }
}

fn heartbeat_range<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = u64::deserialize(d)?;
    if !(2..=30).contains(&v) {
        return Err(serde::de::Error::custom(format!(
            "heartbeat_seconds must be between 2 and 30, got {v}"
        )));
    }
    Ok(v)
}

/// Default of `[hooks] partial_after_ms`.
pub const DEFAULT_PARTIAL_AFTER_MS: u64 = 100;
/// Default of `[hooks] knock_on_wait_ms`.
pub const DEFAULT_KNOCK_ON_WAIT_MS: u64 = 2_000;

/// What agents get back, written to `diagnostics.json`'s `hook` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HooksConfig {
    pub feedback: Feedback,
    #[serde(deserialize_with = "timeout_range")]
    pub timeout_ms: u64,
    /// When the fast sources (language servers) have answered for every edited file and only
    /// project-wide ones (`tsc`, `cargo check`) still run, the hook gets what was found this
    /// long after the edit instead of waiting for them (naming them as still running).
    pub partial_after_ms: u64,
    /// A project-wide source (a Python type checker's command line, the go plugin's type
    /// checker, a C compiler, `tsc`, `cargo check`) that took at most this long in one of its
    /// last runs over the project (or has not run yet) is waited for, up to this long after
    /// the edit, before that partial answer: so the edit's own hook names the callers it
    /// broke in files nobody edited. A slower one is not waited for (its findings come with a
    /// later hook). `0`: never wait for a project-wide source.
    pub knock_on_wait_ms: u64,
    /// `introduced` (default): the feedback lists the problems the session's edits introduced
    /// and only counts those that were already there; `all`: every problem of the edited files.
    pub feedback_scope: FeedbackScope,
}

impl Default for HooksConfig {
    fn default() -> Self {
        HooksConfig {
            feedback_scope: FeedbackScope::Introduced,
            feedback: Feedback::ErrorsAndWarnings,
            timeout_ms: openfiles_wire::spec::DEFAULT_HOOK_TIMEOUT_MS,
            partial_after_ms: DEFAULT_PARTIAL_AFTER_MS,
            knock_on_wait_ms: DEFAULT_KNOCK_ON_WAIT_MS,
        }
    }
}

fn timeout_range<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = u64::deserialize(d)?;
    if !(100..=600_000).contains(&v) {
        return Err(serde::de::Error::custom(format!(
            "timeout_ms must be between 100 and 600000, got {v}"
        )));
    }
    Ok(v)
}

/// Noticing edits made without a hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WatchConfig {
    pub enabled: bool,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig { enabled: true }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiagnosticsConfig {
    /// Extra ignore globs (globset syntax, not gitignore's, matched against workspace-relative paths: `**/gen/**`; a bare name matches at any depth), on top of the built-in and git's rules; one starting with `!` is an exception: what it matches is checked whatever the built-in or git rules say (`src/policy`).
    pub ignore: Vec<String>,
    /// Extra sensitive-file globs: kept in the session, never read by a checker.
    pub sensitive: Vec<String>,
    /// How long one check may take before it ends with an explanatory item.
    #[serde(deserialize_with = "timeout_range")]
    pub check_timeout_ms: u64,
    /// Largest file handed to a checker; a larger one gets an explanatory item instead.
    pub max_file_bytes: u64,
}

impl Default for DiagnosticsConfig {
    fn default() -> Self {
        DiagnosticsConfig {
            ignore: Vec::new(),
            sensitive: Vec::new(),
            check_timeout_ms: 120_000,
            max_file_bytes: 4 << 20,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PluginsConfig {
    /// Extra plugin libraries or folders holding them.
    pub paths: Vec<PathBuf>,
    /// Plugin names not to load.
    pub disabled: Vec<String>,
}

impl Config {
    /// Parse a config text; `path` only names the source in errors. A leading `~/` in
    /// folder lists means the home directory.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        for p in cfg
            .service
            .roots
            .iter_mut()
            .chain(cfg.service.workspaces.iter_mut())
            .chain(cfg.plugins.paths.iter_mut())
        {
            *p = expand_home(p);
        }
        // The user's own secret and certificate files, as they may spell them (`~/…`).
        for p in [
            &mut cfg.claws.auth.token_path,
            &mut cfg.claws.web_socket.cert_path,
            &mut cfg.claws.web_socket.key_path,
        ]
        .into_iter()
        .flatten()
        {
            *p = expand_home(p);
        }
        Ok(cfg)
    }

    /// Load the user's config file (at most [`MAX_CONFIG_BYTES`]); a missing default file
    /// means defaults, a missing
    /// explicit file is an error.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>), ConfigError> {
        let Some(path) = crate::paths::config_file(explicit) else {
            return Ok((Config::default(), None));
        };
        match read_user_config(&path) {
            Ok(text) => Ok((Config::parse(&text, &path)?, Some(path))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && explicit.is_none() => {
                Ok((Config::default(), None))
            }
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    /// This config with a workspace's `.openfiles/config.toml` merged over it (if present).
    /// The repository controls that file: a symlink, FIFO, device or oversized file there
    /// is an error, never followed, waited on or read whole; and it may set only the keys of
    /// `WORKSPACE_KEYS` (a key outside them, or a limit raised past the user's, is an
    /// error naming the keys).
    pub fn for_workspace(&self, root: &Path) -> Result<Config, ConfigError> {
        let path = root.join(openfiles_wire::spec::DIR).join("config.toml");
        let text = match read_workspace_config(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self.clone()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        // Validate the file alone first so errors carry its own line numbers.
        let own = Config::parse(&text, &path)?;
        if own.service != ServiceConfig::default() {
            return Err(ConfigError::Invalid {
                path,
                message: "[service] cannot be set per workspace; put it in the user config".into(),
            });
        }
        // Plugin hosts and their language servers are shared by every workspace and start
        // once: a per-workspace plugin setting would be accepted and silently not applied.
        let mut plugin_keys: Vec<String> =
            own.plugin.keys().map(|k| format!("[plugin.{k}]")).collect();
        if own.plugins != PluginsConfig::default() {
            plugin_keys.insert(0, "[plugins]".into());
        }
        if !plugin_keys.is_empty() {
            return Err(ConfigError::Invalid {
                path,
                message: format!(
                    "{} cannot be set per workspace (plugins are shared by all workspaces and \
                     would ignore it); put it in the user config",
                    plugin_keys.join(", ")
                ),
            });
        }
        let overrides: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Invalid {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let mut base = toml::Table::try_from(self).map_err(|e| ConfigError::Invalid {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let mut keys = Vec::new();
        leaf_keys(&overrides, "", &mut keys);
        merge(&mut base, overrides);
        let merged: Config =
            toml::Value::Table(base)
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Invalid {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
        match workspace_refusal(self, &merged, &keys) {
            Some(message) => Err(ConfigError::Invalid { path, message }),
            None => Ok(merged),
        }
    }

    /// The settings of one plugin as JSON (`null` when none).
    pub fn plugin_settings(&self, name: &str) -> serde_json::Value {
        self.plugin
            .get(name)
            .and_then(|t| serde_json::to_value(t).ok())
            .unwrap_or(serde_json::Value::Null)
    }
}

/// Whether a workspace's own value of a key is acceptable, given the user's config and the
/// merged one: `true` for harmless keys; for limits, that the merged value is no looser.
type May = fn(&Config, &Config) -> bool;

/// A limit where 0 means "none": 0 is the loosest value.
fn unlimited_zero(v: u64) -> u64 {
    if v == 0 {
        u64::MAX
    } else {
        v
    }
}

/// Every key a workspace's own `.openfiles/config.toml` may set (README: "What a
/// workspace's own config may set"). A repository is data: nothing here opens a listener,
/// changes auth, names an executable, a plugin or a path, and limits that cost memory, disk
/// or CPU may only be lowered (or a feature turned off), never raised past the user's.
const WORKSPACE_KEYS: &[(&str, May)] = &[
    ("hooks.feedback", |_, _| true),
    ("hooks.timeout_ms", |_, _| true),
    ("hooks.partial_after_ms", |_, _| true),
    ("hooks.knock_on_wait_ms", |_, _| true),
    ("hooks.feedback_scope", |_, _| true),
    ("watch.enabled", |_, _| true),
    ("diagnostics.ignore", |_, _| true),
    ("diagnostics.sensitive", |_, _| true),
    ("diagnostics.check_timeout_ms", |_, _| true),
    ("diagnostics.max_file_bytes", |u, m| {
        m.diagnostics.max_file_bytes <= u.diagnostics.max_file_bytes
    }),
    ("claws.enabled", |u, m| u.claws.enabled || !m.claws.enabled),
    ("claws.exec_timeout_ms", |_, _| true),
    ("claws.opost", |_, _| true),
    ("claws.default_wrapped", |_, _| true),
    ("claws.strict_event_validation", |_, _| true),
    ("claws.strict_topics", |u, m| {
        m.claws.strict_topics || !u.claws.strict_topics
    }),
    ("claws.ring_bytes", |u, m| {
        m.claws.effective().ring_bytes <= u.claws.effective().ring_bytes
    }),
    ("claws.max_capture_bytes", |u, m| {
        m.claws.effective().ring_bytes <= u.claws.effective().ring_bytes
    }),
    ("claws.max_terminals", |u, m| {
        m.claws.max_terminals <= u.claws.max_terminals
    }),
    ("claws.poll_limit", |u, m| {
        m.claws.poll_limit <= u.claws.poll_limit
    }),
    ("claws.history_events", |u, m| {
        m.claws.effective().history_events <= u.claws.effective().history_events
    }),
    ("claws.max_history", |u, m| {
        m.claws.effective().history_events <= u.claws.effective().history_events
    }),
    ("claws.history_output_bytes", |u, m| {
        m.claws.effective().history_output_bytes <= u.claws.effective().history_output_bytes
    }),
    ("claws.max_output_bytes", |u, m| {
        m.claws.effective().history_output_bytes <= u.claws.effective().history_output_bytes
    }),
    ("claws.event_segment_bytes", |u, m| {
        m.claws.event_segment_bytes <= u.claws.event_segment_bytes
    }),
    ("claws.event_log_bytes", |u, m| {
        m.claws.event_log_bytes <= u.claws.event_log_bytes
    }),
    ("claws.peer_queue_frames", |u, m| {
        m.claws.peer_queue_frames <= u.claws.peer_queue_frames
    }),
    ("claws.peer_queue_bytes", |u, m| {
        m.claws.peer_queue_bytes <= u.claws.peer_queue_bytes
    }),
    ("claws.max_publish_rate_hz", |u, m| {
        m.claws.max_publish_rate_hz <= u.claws.max_publish_rate_hz
    }),
    ("claws.max_queue_depth", |u, m| {
        m.claws.max_queue_depth <= u.claws.max_queue_depth
    }),
    ("claws.terminal_log_bytes", |u, m| {
        unlimited_zero(m.claws.terminal_log_bytes) <= unlimited_zero(u.claws.terminal_log_bytes)
    }),
    ("claws.event_log.retention_days", |u, m| {
        unlimited_zero(m.claws.event_log.retention_days)
            <= unlimited_zero(u.claws.event_log.retention_days)
    }),
    ("claws.event_log.compact", |_, _| true),
    ("claws.lifecycle.require_plan", |u, m| {
        m.claws.lifecycle.require_plan || !u.claws.lifecycle.require_plan
    }),
];

/// The dotted names of the values a TOML table sets (`[claws.web_socket] enabled` →
/// `claws.web_socket.enabled`); arrays are values.
fn leaf_keys(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (k, v) in table {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Table(t) => leaf_keys(t, &format!("{key}."), out),
            _ => out.push(key),
        }
    }
}

/// Why a workspace's own file is refused: the keys it may not set at all, and the limits it
/// raised past the user's (`None`: acceptable).
fn workspace_refusal(user: &Config, merged: &Config, keys: &[String]) -> Option<String> {
    let mut never = Vec::new();
    let mut raised = Vec::new();
    for key in keys {
        match WORKSPACE_KEYS.iter().find(|(k, _)| *k == key.as_str()) {
            None => never.push(key.as_str()),
            Some((_, may)) if !may(user, merged) => raised.push(key.as_str()),
            Some(_) => {}
        }
    }
    let mut parts = Vec::new();
    if !never.is_empty() {
        parts.push(format!(
            "{} cannot be set in a workspace's own config (the repository's file may not open \
             listeners, change auth, or name executables, plugins or paths)",
            never.join(", ")
        ));
    }
    if !raised.is_empty() {
        parts.push(format!(
            "{} may only be lowered (or turned off) in a workspace's own config, not past the \
             user config's value",
            raised.join(", ")
        ));
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!("{}; put them in the user config", parts.join("; ")))
}

/// `~/x` → `$HOME/x`; anything else unchanged.
fn expand_home(p: &Path) -> PathBuf {
    match (p.strip_prefix("~"), directories::BaseDirs::new()) {
        (Ok(rest), Some(dirs)) => dirs.home_dir().join(rest),
        _ => p.to_owned(),
    }
}

fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Largest config file read.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The user's own config file: followed wherever it points (a dotfile manager's link, a
/// `--config <(…)` pipe), but never read past [`MAX_CONFIG_BYTES`].
fn read_user_config(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_CONFIG_BYTES} bytes"
        )));
    }
    Ok(text)
}

/// A config file a repository controls: opened without blocking, a regular file, never
/// through a symlink, capped, UTF-8.
fn read_workspace_config(path: &Path) -> std::io::Result<String> {
    let bytes =
        confine::read_regular(path, Last::NoFollow, MAX_CONFIG_BYTES).map_err(|e| match e {
            confine::ConfineError::Io(io) => io,
            other => std::io::Error::other(other.to_string()),
        })?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_error_names_key_and_line() {
        let err = Config::parse(
            "[service]\nlog_level = \"info\"\nheartbeat_second = 5\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("heartbeat_second"), "{err}");
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn bad_value_error_names_key_and_line() {
        let err = Config::parse("\n[service]\nheartbeat_seconds = 99\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("heartbeat_seconds"), "{err}");
        assert!(err.contains("line 3"), "{err}");
    }

    #[test]
    fn workspace_file_overrides_sections_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".openfiles")).unwrap();
        std::fs::write(
            dir.path().join(".openfiles/config.toml"),
            "[hooks]\nfeedback = \"errors\"\n",
        )
        .unwrap();
        let mut base = Config::default();
        base.hooks.timeout_ms = 9000;
        let cfg = base.for_workspace(dir.path()).unwrap();
        assert_eq!(cfg.hooks.feedback, Feedback::Errors);
        assert_eq!(cfg.hooks.timeout_ms, 9000);
    }

    #[test]
    fn workspace_file_may_not_set_service() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".openfiles")).unwrap();
        std::fs::write(
            dir.path().join(".openfiles/config.toml"),
            "[service]\nheartbeat_seconds = 3\n",
        )
        .unwrap();
        assert!(Config::default().for_workspace(dir.path()).is_err());
    }

    /// `[plugin.lsp] disable = ["pyright"]` in a workspace file was accepted and silently
    /// ignored (pyright still started); it is an error naming the key now.
    #[test]
    fn workspace_file_may_not_set_plugin_settings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".openfiles")).unwrap();
        std::fs::write(
            dir.path().join(".openfiles/config.toml"),
            "[plugin.lsp]\ndisable = [\"pyright\"]\n",
        )
        .unwrap();
        let err = Config::default()
            .for_workspace(dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[plugin.lsp]") && err.contains("user config"),
            "{err}"
        );
    }

    /// A workspace folder holding `.openfiles/config.toml` with `text`.
    fn workspace_with(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".openfiles")).unwrap();
        std::fs::write(dir.path().join(".openfiles/config.toml"), text).unwrap();
        dir
    }

    fn workspace_error(user: &Config, text: &str) -> String {
        let ws = workspace_with(text);
        match user.for_workspace(ws.path()) {
            Ok(cfg) => panic!("accepted:\n{text}\nas {:?}", cfg.claws),
            Err(e) => e.to_string(),
        }
    }

    /// A cloned repository's `.openfiles/config.toml` is data: files committed to hostile
    /// repositories that opened a loopback WebSocket any web page can reach on the first
    /// edit, pointed the Claws auth secret at a tracked file, or turned auth off. Each is
    /// refused with an error naming the keys (and only those).
    #[test]
    fn workspace_file_may_not_open_listeners_change_auth_or_name_paths() {
        let user = Config::default();
        let cases: &[(&str, &[&str])] = &[
            (
                "[claws.web_socket]\nenabled = true\nport = 9876\n",
                &["claws.web_socket.enabled", "claws.web_socket.port"],
            ),
            (
                "[claws]\nenable_web_socket = true\nweb_socket_port = 8080\n",
                &["claws.enable_web_socket", "claws.web_socket_port"],
            ),
            (
                "[claws.web_socket]\nhost = \"0.0.0.0\"\ncert_path = \"/etc/ssl/x.pem\"\nkey_path = \"k.pem\"\n",
                &[
                    "claws.web_socket.host",
                    "claws.web_socket.cert_path",
                    "claws.web_socket.key_path",
                ],
            ),
            (
                "[claws.auth]\ntoken_path = \"README.md\"\n",
                &["claws.auth.token_path"],
            ),
            (
                "[claws]\nsocket_path = \"/tmp/x.sock\"\nlog_directory = \"/home/u/.ssh\"\n",
                &["claws.socket_path", "claws.log_directory"],
            ),
            (
                // Allowed keys beside refused ones: only the refused are named.
                "[hooks]\nfeedback = \"errors\"\n[claws]\nexec_timeout_ms = 1000\nheartbeat_interval_ms = 1\n[claws.lifecycle]\nrequire_plan = false\n",
                &["claws.heartbeat_interval_ms"],
            ),
        ];
        for (text, keys) in cases {
            let err = workspace_error(&user, text);
            for k in *keys {
                assert!(err.contains(k), "{k} not named in: {err}");
            }
            assert!(err.contains("user config"), "{err}");
            for allowed in ["hooks.feedback", "claws.exec_timeout_ms"] {
                assert!(!err.contains(allowed), "{allowed} named in: {err}");
            }
        }
        // What the user set cannot be loosened: auth off, Claws on, a plan no longer required.
        let mut strict = Config::default();
        strict.claws.auth.enabled = true;
        strict.claws.enabled = false;
        strict.claws.lifecycle.require_plan = true;
        let err = workspace_error(&strict, "[claws.auth]\nenabled = false\n");
        assert!(err.contains("claws.auth.enabled"), "{err}");
        let err = workspace_error(&strict, "[claws]\nenabled = true\n");
        assert!(err.contains("claws.enabled"), "{err}");
        let err = workspace_error(&strict, "[claws.lifecycle]\nrequire_plan = false\n");
        assert!(err.contains("claws.lifecycle.require_plan"), "{err}");
    }

    /// Limits that cost memory or disk may be lowered per workspace, never raised (a
    /// repository asking for a 64 GiB capture ring per terminal, or no log cap).
    #[test]
    fn workspace_file_may_lower_limits_but_not_raise_them() {
        let user = Config::default();
        for (text, key) in [
            ("[claws]\nring_bytes = 68719476736\n", "claws.ring_bytes"),
            (
                "[claws]\nmax_capture_bytes = 68719476736\n",
                "claws.max_capture_bytes",
            ),
            ("[claws]\nmax_terminals = 100000\n", "claws.max_terminals"),
            (
                "[claws]\nterminal_log_bytes = 0\n",
                "claws.terminal_log_bytes",
            ),
            (
                "[claws]\nevent_log_bytes = 1099511627776\n",
                "claws.event_log_bytes",
            ),
            (
                "[claws]\nmax_publish_rate_hz = 100000000\n",
                "claws.max_publish_rate_hz",
            ),
            (
                "[diagnostics]\nmax_file_bytes = 1099511627776\n",
                "diagnostics.max_file_bytes",
            ),
        ] {
            let err = workspace_error(&user, text);
            assert!(err.contains(key), "{key} not named in: {err}");
        }
        let ws = workspace_with(
            "[claws]\nring_bytes = 1048576\nmax_terminals = 4\nterminal_log_bytes = 1024\n\
             enabled = false\n[claws.event_log]\nretention_days = 1\n\
             [diagnostics]\nmax_file_bytes = 1024\n",
        );
        let cfg = user.for_workspace(ws.path()).unwrap();
        assert_eq!(cfg.claws.ring_bytes, 1 << 20);
        assert_eq!(cfg.claws.max_terminals, 4);
        assert_eq!(cfg.claws.terminal_log_bytes, 1024);
        assert!(!cfg.claws.enabled);
        assert_eq!(cfg.claws.event_log.retention_days, 1);
        assert_eq!(cfg.diagnostics.max_file_bytes, 1024);
    }

    /// The keys a workspace may set, all at once, are accepted (the README lists them).
    #[test]
    fn workspace_file_may_set_every_allowed_key() {
        let ws = workspace_with(
            "[hooks]\nfeedback = \"errors\"\ntimeout_ms = 9000\npartial_after_ms = 50\n\
             feedback_scope = \"all\"\n[watch]\nenabled = false\n\
             [diagnostics]\nignore = [\"gen/**\"]\nsensitive = [\"*.key\"]\n\
             check_timeout_ms = 5000\n\
             [claws]\nexec_timeout_ms = 1000\nopost = false\ndefault_wrapped = true\n\
             strict_event_validation = true\npoll_limit = 10\nhistory_events = 10\n\
             history_output_bytes = 1024\nmax_history = 10\nmax_output_bytes = 1024\n\
             event_segment_bytes = 1024\npeer_queue_frames = 16\npeer_queue_bytes = 1024\n\
             max_queue_depth = 10\n[claws.event_log]\ncompact = false\n\
             [claws.lifecycle]\nrequire_plan = true\n",
        );
        let cfg = Config::default().for_workspace(ws.path()).unwrap();
        assert_eq!(cfg.diagnostics.ignore, ["gen/**"]);
        assert!(cfg.claws.lifecycle.require_plan && !cfg.watch.enabled);
    }
}
