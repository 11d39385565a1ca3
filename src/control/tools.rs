//! The service side of `tools`: looking executables up in the service's own environment, the
//! one its plugin hosts and language servers inherit, so `openfiles doctor` reports what the
//! service will find rather than what the user's shell finds.
//!
//! A tool is looked up as the lsp plugin looks up npm- and venv-distributed servers: in the
//! workspace's `node_modules/.bin` and `.venv/bin` first — only when the user trusts the
//! workspace (an unregistered folder is not trusted); an untrusted workspace's copy is
//! reported as held back and never run — then on the service's `PATH` by the gate's rules
//! ([`openfiles_gate::spawn::search`]: absolute entries only, none inside an untrusted
//! workspace). A tool with a probe (the lsp plugin's `--version` run for rust-analyzer, which
//! rustup's proxy fails without the component) counts only when the probe exits 0 within
//! [`PROBE_TIMEOUT`]; it is started through the gate ([`openfiles_gate::Program`]) with the
//! workspace's scope, stdin closed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use openfiles_gate::spawn::{is_executable, search};
use openfiles_gate::{Program, Scope};

use openfiles_wire::control::{ToolFound, ToolQuery, ToolsQuery, ToolsReply, MAX_TOOLS};

/// How long one probe may run.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most arguments one probe may carry.
const MAX_PROBE_ARGS: usize = 8;
/// The workspace folders whose executables the lsp plugin prefers, in its order.
pub const WORKSPACE_BINS: &[&str] = &["node_modules/.bin", ".venv/bin"];

/// What is wrong with a `tools` request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("at most {MAX_TOOLS} tools per request")]
    TooManyTools,
    #[error("not a plain executable name: {0:?}")]
    NotPlain(String),
    #[error("{0}: at most {MAX_PROBE_ARGS} probe arguments")]
    TooManyProbeArgs(String),
}

/// Why a probe does not count: the text `doctor` shows after the tool's name.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{shown} is not run: {source}")]
    Refused {
        shown: String,
        source: openfiles_gate::spawn::Refused,
    },
    #[error("{shown} cannot start: {source}")]
    Start {
        shown: String,
        source: std::io::Error,
    },
    #[error("{shown} did not finish within {} s", PROBE_TIMEOUT.as_secs())]
    Timeout { shown: String },
    #[error("{shown} failed: {source}")]
    Wait {
        shown: String,
        source: std::io::Error,
    },
    /// It ran and failed: how it ended and the first line it said.
    #[error("{shown} {how}{said}")]
    Failed {
        shown: String,
        how: String,
        said: String,
    },
}

/// Answer a `tools` request for a workspace the service trusts (`trusted`) or not;
/// `Err` names what is wrong with the request.
pub async fn answer(query: ToolsQuery, trusted: bool) -> Result<ToolsReply, QueryError> {
    if query.tools.len() > MAX_TOOLS {
        return Err(QueryError::TooManyTools);
    }
    for t in &query.tools {
        let plain = !t.name.is_empty()
            && !t.name.contains('/')
            && t.name != "."
            && t.name != ".."
            && !t.name.contains('\0');
        if !plain {
            return Err(QueryError::NotPlain(t.name.clone()));
        }
        if t.probe.len() > MAX_PROBE_ARGS {
            return Err(QueryError::TooManyProbeArgs(t.name.clone()));
        }
    }
    let scope = scope(query.root.as_deref(), trusted);
    let mut tools = Vec::with_capacity(query.tools.len());
    for t in query.tools {
        tools.push(one(t, &scope).await);
    }
    Ok(ToolsReply {
        path: std::env::var_os("PATH").map(|p| p.to_string_lossy().into_owned()),
        tools,
    })
}

/// The scope tools are looked up and probed in: the workspace at `root` (absolute), trusted
/// or not, else the user's own.
pub fn scope(root: Option<&Path>, trusted: bool) -> Scope {
    match root.filter(|r| r.is_absolute()) {
        Some(root) => Scope::workspace(root, trusted),
        None => Scope::user(),
    }
}

async fn one(t: ToolQuery, scope: &Scope) -> ToolFound {
    let found = lookup(&t.name, scope);
    let probe_error = match &found.path {
        Some(exe) if !t.probe.is_empty() => probe(exe, &t.probe, scope)
            .await
            .err()
            .map(|e| e.to_string()),
        _ => None,
    };
    ToolFound {
        name: t.name,
        path: found.path,
        probe_error,
        held_back: found.held_back,
    }
}

/// Where a tool was found for a scope.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// What would be used: the workspace's own copy when trusted, else `PATH`'s.
    pub path: Option<PathBuf>,
    /// The workspace's own copy, not used because the workspace is not trusted.
    pub held_back: Option<PathBuf>,
}

/// `name` in the workspace's [`WORKSPACE_BINS`] (used only when the scope trusts it), else
/// on `PATH` by the gate's rules (`doctor` uses it too when no service answers).
pub fn lookup(name: &str, scope: &Scope) -> Found {
    let local = scope.workspace_root().and_then(|root| {
        WORKSPACE_BINS
            .iter()
            .map(|d| root.join(d).join(name))
            .find(|p| is_executable(p))
    });
    match local {
        Some(p) if !scope.untrusted() => Found {
            path: Some(p),
            held_back: None,
        },
        held_back => Found {
            path: search(name, scope),
            held_back,
        },
    }
}

async fn probe(exe: &Path, args: &[String], scope: &Scope) -> Result<(), ProbeError> {
    let shown = format!("`{} {}`", exe.display(), args.join(" "));
    let program = match Program::at(exe, scope, "doctor probe") {
        Ok(p) => p,
        Err(source) => return Err(ProbeError::Refused { shown, source }),
    };
    let mut cmd = tokio::process::Command::from(program.command(args));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(source) => return Err(ProbeError::Start { shown, source }),
    };
    let out = match tokio::time::timeout(PROBE_TIMEOUT, child.wait_with_output()).await {
        Err(_) => return Err(ProbeError::Timeout { shown }),
        Ok(Err(source)) => return Err(ProbeError::Wait { shown, source }),
        Ok(Ok(out)) => out,
    };
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said = stderr
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| format!(": {}", l.chars().take(300).collect::<String>()))
        .unwrap_or_default();
    let how = match out.status.code() {
        Some(code) => format!("exits with status {code}"),
        None => format!("was killed ({})", out.status),
    };
    Err(ProbeError::Failed { shown, how, said })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str) {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn the_workspace_s_own_copy_is_used_only_when_trusted_and_names_must_be_plain() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let bin = root.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        // A name on this machine's PATH too: `sh`.
        script(&bin, "sh", "exit 0");
        let trusted = lookup("sh", &Scope::workspace(&root, true));
        assert_eq!(trusted.path, Some(bin.join("sh")));
        assert_eq!(trusted.held_back, None);
        let untrusted = lookup("sh", &Scope::workspace(&root, false));
        assert_eq!(untrusted.held_back, Some(bin.join("sh")));
        let used = untrusted.path.expect("sh on PATH");
        assert!(!used.starts_with(&root), "{}", used.display());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let bad = rt.block_on(answer(
            ToolsQuery {
                tools: vec![ToolQuery {
                    name: "../x".into(),
                    probe: vec![],
                }],
                root: None,
            },
            false,
        ));
        assert_eq!(bad.unwrap_err(), QueryError::NotPlain("../x".into()));
    }

    #[test]
    fn a_failing_probe_says_how_it_failed() {
        let dir = tempfile::tempdir().unwrap();
        script(
            dir.path(),
            "ra",
            "echo \"error: 'ra' is not installed for the toolchain\" >&2; exit 1",
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt
            .block_on(probe(
                &dir.path().join("ra"),
                &["--version".into()],
                &Scope::user(),
            ))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not installed for the toolchain"), "{err}");
        assert!(err.contains("--version"), "{err}");
    }
}
