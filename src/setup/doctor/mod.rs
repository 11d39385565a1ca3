//! `openfiles doctor`: one screen telling a user what works and what to fix — the service
//! (reachable, socket-activated), the units, the session, plugins, language tools for the
//! current workspace and its test runner, its trust, agent hooks, inotify limits and the control socket's
//! permissions.
//!
//! Each concern is a room with two halves: gathering its facts (a struct, filled by I/O:
//! asking the service, reading files) and judging them (a pure function from the facts to
//! [`Check`]s, unit-tested from facts written by hand). This file runs them in order and
//! prints. What the service uses is asked of the service (`status`, `tools`); without one,
//! the same things are looked up here and each such line says so.
//!
//! Nothing a workspace supplies is run or trusted: agents' settings files are read through
//! the gate's `confine` (bounded, regular, no symlink followed, never blocking) and their
//! hook commands are compared with what `hooks install` writes, never executed
//! (`hooks.rs`); tools are looked up and probed with the workspace's trust (`languages.rs`).
//!
//! Each finding is a [`Check`] with a [`Level`]; the exit status is 1 when any check
//! fails (the service cannot work as installed), warnings are advice. Colour only when
//! stdout is a terminal and `NO_COLOR` is unset; `--json` prints the checks for scripts.

mod hooks;
mod languages;
mod plugins;
mod service;
mod session;
mod system;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use session::{judge_session, SessionFacts};

/// How a finding counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Info,
    Warn,
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub section: &'static str,
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

fn check(section: &'static str, level: Level, message: impl Into<String>) -> Check {
    Check {
        section,
        level,
        message: message.into(),
        hint: None,
    }
}

impl Check {
    fn hint(mut self, hint: impl Into<String>) -> Check {
        self.hint = Some(hint.into());
        self
    }
}

/// Options of `openfiles doctor`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub socket: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub json: bool,
}

/// Run every check and print the report; exit status 1 when a check failed.
pub fn run(opts: Options) -> anyhow::Result<u8> {
    let checks = collect(&opts);
    let failed = checks.iter().any(|c| c.level == Level::Fail);
    if opts.json {
        let out = serde_json::json!({ "ok": !failed, "checks": checks });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        print!("{}", render(&checks, colour));
    }
    Ok(u8::from(failed))
}

/// All the checks, in display order: each room's facts gathered, then judged.
pub fn collect(opts: &Options) -> Vec<Check> {
    let mut out = Vec::new();
    let socket = match crate::paths::control_socket(opts.socket.as_deref()) {
        Ok(socket) => Some(socket),
        Err(e) => {
            out.push(check("service", Level::Fail, e.to_string()));
            None
        }
    };
    let status = socket.as_deref().and_then(|s| {
        let facts = service::ServiceFacts::gather(s);
        out.extend(service::judge_service(&facts));
        facts.status()
    });
    out.extend(service::judge_units(&service::UnitsFacts::gather()));
    if cfg!(target_os = "linux") {
        if let Some(socket) = &socket {
            out.extend(judge_session(&SessionFacts::here(socket)));
        }
    }
    let plugins = plugins::PluginFacts::gather(opts.config.as_deref(), status.as_ref());
    out.extend(plugins::judge_plugins(&plugins));
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let root = super::probe::workspace_root(opts.workspace.as_deref().unwrap_or(&cwd));
    let root = root.canonicalize().unwrap_or(root);
    let trust = service::TrustFacts::gather(&root, opts.config.as_deref(), status.as_ref());
    let service_socket = status.as_ref().and(socket.as_deref());
    let languages = languages::LanguageFacts::gather(&root, trust.trusted, service_socket);
    out.extend(languages::judge_languages(&languages));
    out.push(languages::judge_tests(&root, trust.trusted));
    out.extend(service::judge_trust(&trust));
    out.extend(hooks::judge_hooks(&hooks::HookFacts::gather(&root)));
    if cfg!(target_os = "linux") {
        out.extend(system::judge_inotify(&system::InotifyFacts::gather(
            Path::new("/proc/sys/fs/inotify"),
        )));
    }
    if let Some(socket) = &socket {
        out.extend(system::judge_socket(&system::SocketFacts::gather(socket)));
    }
    out
}

/// The report as text, grouped by section.
pub fn render(checks: &[Check], colour: bool) -> String {
    let paint = |level: Level, s: &str| -> String {
        if !colour {
            return s.to_owned();
        }
        let code = match level {
            Level::Ok => "32",
            Level::Info => "2",
            Level::Warn => "33",
            Level::Fail => "31",
        };
        format!("\x1b[{code}m{s}\x1b[0m")
    };
    let mut out = String::new();
    let mut section = "";
    for c in checks {
        if c.section != section {
            section = c.section;
            out.push_str(section);
            out.push('\n');
        }
        let mark = match c.level {
            Level::Ok => "ok  ",
            Level::Info => "    ",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        };
        // Messages name paths, plugins' reasons and what a repository's files hold: escapes
        // shown, never obeyed.
        let message = crate::visible::escape(&c.message);
        out.push_str(&format!("  {} {message}\n", paint(c.level, mark)));
        if let Some(h) = &c.hint {
            out.push_str(&format!("       -> {}\n", crate::visible::escape(h)));
        }
    }
    let fails = checks.iter().filter(|c| c.level == Level::Fail).count();
    let warns = checks.iter().filter(|c| c.level == Level::Warn).count();
    out.push_str(&match (fails, warns) {
        (0, 0) => "all good\n".to_owned(),
        (0, w) => format!("{w} warning(s), nothing broken\n"),
        (f, w) => format!("{f} problem(s), {w} warning(s)\n"),
    });
    out
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use openfiles_wire::control::PluginStatus;

    #[test]
    fn the_report_a_user_reads() {
        let mut checks = vec![
            check(
                "service",
                Level::Ok,
                "reachable at /run/user/1000/openfiles/control.sock (openfiles 0.1.0, pid 4242, socket-activated by systemd, 2 workspace(s))",
            ),
            check("units", Level::Ok, "openfiles.socket: enabled, active; openfiles.service: active"),
        ];
        let plugins = serde_json::json!([
            {"name": "rust", "version": "0.1.0", "origin": "config", "state": "loaded", "path": "/usr/lib/openfiles/plugins/libopenfiles_plugin_rust.so",
             "capabilities": {"extensions": ["rs"]}},
            {"name": "typescript", "version": "0.1.0", "origin": "config", "state": "loaded", "path": "/usr/lib/openfiles/plugins/libopenfiles_plugin_typescript.so",
             "capabilities": {"extensions": ["ts", "tsx"], "notes": ["tsgo not found: tsc runs instead"]}},
            {"name": "python", "origin": "config", "state": "disabled", "path": "/usr/lib/openfiles/plugins/libopenfiles_plugin_python.so"},
            {"origin": "config", "state": "missing", "path": "/opt/plugins/libopenfiles_plugin_go.so", "reason": "no such file"},
            {"name": "broken", "origin": "config", "state": "refused", "kind": "abi-mismatch", "reason": "built for plugin API 2, this host speaks 3",
             "path": "/opt/plugins/libopenfiles_plugin_broken.so"},
        ]);
        let plugins: Vec<PluginStatus> = serde_json::from_value(plugins).unwrap();
        for row in &plugins {
            checks.push(plugins::row_check(row, "the service"));
        }
        checks.push(check(
            "languages",
            Level::Ok,
            "Rust: rust-analyzer at /home/me/.cargo/bin/rust-analyzer (found by the service)",
        ));
        checks.push(
            check("languages", Level::Warn, "TypeScript: tsc not found on the service's PATH")
                .hint("install tsc where the service looks (its PATH: /usr/bin:/bin); with the Nix modules, add it to extraPackages"),
        );
        checks.push(check(
            "hooks",
            Level::Ok,
            "claude: .claude/settings.json: PostToolUse, SessionStart as `hooks install` writes it; `openfiles` is /usr/bin/openfiles (openfiles 0.1.0)",
        ));
        checks.extend(system::judge_inotify(&system::InotifyFacts {
            max_user_watches: Some(8192),
            max_user_instances: Some(1024),
        }));
        checks.push(check(
            "socket",
            Level::Ok,
            "/run/user/1000/openfiles/control.sock (0600, folder 0700, ours)",
        ));
        expect![[r#"
            service
              ok   reachable at /run/user/1000/openfiles/control.sock (openfiles 0.1.0, pid 4242, socket-activated by systemd, 2 workspace(s))
            units
              ok   openfiles.socket: enabled, active; openfiles.service: active
            plugins
              ok   rust 0.1.0: loaded by the service (files: rs) from /usr/lib/openfiles/plugins/libopenfiles_plugin_rust.so
              warn typescript 0.1.0: loaded by the service (files: ts,tsx) from /usr/lib/openfiles/plugins/libopenfiles_plugin_typescript.so; tsgo not found: tsc runs instead
                   python: disabled in config (/usr/lib/openfiles/plugins/libopenfiles_plugin_python.so)
              warn /opt/plugins/libopenfiles_plugin_go.so: listed but missing (no such file)
                   -> fix plugins.paths or OPENFILES_PLUGIN_PATH
              FAIL broken: refused [abi-mismatch]: built for plugin API 2, this host speaks 3 (/opt/plugins/libopenfiles_plugin_broken.so)
            languages
              ok   Rust: rust-analyzer at /home/me/.cargo/bin/rust-analyzer (found by the service)
              warn TypeScript: tsc not found on the service's PATH
                   -> install tsc where the service looks (its PATH: /usr/bin:/bin); with the Nix modules, add it to extraPackages
            hooks
              ok   claude: .claude/settings.json: PostToolUse, SessionStart as `hooks install` writes it; `openfiles` is /usr/bin/openfiles (openfiles 0.1.0)
            inotify
              warn max_user_watches = 8192 (below 65536: large workspaces may not be watched)
                   -> sudo sysctl fs.inotify.max_user_watches=524288
              ok   max_user_instances = 1024
            socket
              ok   /run/user/1000/openfiles/control.sock (0600, folder 0700, ours)
            1 problem(s), 4 warning(s)
        "#]].assert_eq(&render(&checks, false));
    }

    /// The footer without problems, and colour only on the mark.
    #[test]
    fn a_report_without_problems_and_its_colours() {
        let fine = [
            check("service", Level::Ok, "reachable"),
            check("socket", Level::Info, "absent"),
        ];
        expect![[r#"
            service
              ok   reachable
            socket
                   absent
            all good
        "#]]
        .assert_eq(&render(&fine, false));
        expect![[r#"
            "service\n  \u{1b}[32mok  \u{1b}[0m reachable\nall good\n"
        "#]]
        .assert_debug_eq(&render(&fine[..1], true));
    }
}
