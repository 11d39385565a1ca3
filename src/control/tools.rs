//! The service side of `tools`: looking executables up in the service's own environment, the
//! one its plugin hosts and language servers inherit, so `openfiles doctor` reports what the
//! service will find rather than what the user's shell finds.
//!
//! A tool is looked up in the workspace's `node_modules/.bin` first (as the lsp plugin does
//! for npm-distributed servers), then on the service's `PATH`. A tool with a probe (the lsp
//! plugin's `--version` run for rust-analyzer, which rustup's proxy fails without the
//! component) counts only when the probe exits 0 within [`PROBE_TIMEOUT`]; it runs with
//! stdin closed and the service's private variables removed, like any child of the service.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use openfiles_plugin_api::tools::is_executable;

use openfiles_wire::control::{ToolFound, ToolQuery, ToolsQuery, ToolsReply, MAX_TOOLS};

/// How long one probe may run.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most arguments one probe may carry.
const MAX_PROBE_ARGS: usize = 8;

/// Answer a `tools` request; `Err` names what is wrong with the request.
pub async fn answer(query: ToolsQuery) -> Result<ToolsReply, String> {
    if query.tools.len() > MAX_TOOLS {
        return Err(format!("at most {MAX_TOOLS} tools per request"));
    }
    for t in &query.tools {
        let plain = !t.name.is_empty()
            && !t.name.contains('/')
            && t.name != "."
            && t.name != ".."
            && !t.name.contains('\0');
        if !plain {
            return Err(format!("not a plain executable name: {:?}", t.name));
        }
        if t.probe.len() > MAX_PROBE_ARGS {
            return Err(format!(
                "{}: at most {MAX_PROBE_ARGS} probe arguments",
                t.name
            ));
        }
    }
    let path = std::env::var_os("PATH");
    let mut tools = Vec::with_capacity(query.tools.len());
    for t in query.tools {
        tools.push(one(t, path.as_deref(), query.root.as_deref()).await);
    }
    Ok(ToolsReply {
        path: path.map(|p| p.to_string_lossy().into_owned()),
        tools,
    })
}

async fn one(t: ToolQuery, path: Option<&std::ffi::OsStr>, root: Option<&Path>) -> ToolFound {
    let found = lookup(&t.name, path, root);
    let probe_error = match &found {
        Some(exe) if !t.probe.is_empty() => probe(exe, &t.probe).await.err(),
        _ => None,
    };
    ToolFound {
        name: t.name,
        path: found,
        probe_error,
    }
}

/// `name` in `<root>/node_modules/.bin`, else on `path` (`doctor` uses it too when no service
/// answers).
pub fn lookup(name: &str, path: Option<&std::ffi::OsStr>, root: Option<&Path>) -> Option<PathBuf> {
    let local = root
        .filter(|r| r.is_absolute())
        .map(|r| r.join("node_modules/.bin"));
    local
        .into_iter()
        .chain(path.map(std::env::split_paths).into_iter().flatten())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

async fn probe(exe: &Path, args: &[String]) -> Result<(), String> {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for var in openfiles_gate::child_env::PRIVATE_ENV {
        cmd.env_remove(var);
    }
    let shown = format!("`{} {}`", exe.display(), args.join(" "));
    let child = cmd
        .spawn()
        .map_err(|e| format!("{shown} cannot start: {e}"))?;
    let out = match tokio::time::timeout(PROBE_TIMEOUT, child.wait_with_output()).await {
        Err(_) => {
            return Err(format!(
                "{shown} did not finish within {} s",
                PROBE_TIMEOUT.as_secs()
            ))
        }
        Ok(Err(e)) => return Err(format!("{shown} failed: {e}")),
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
    Err(format!("{shown} {how}{said}"))
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
    fn node_modules_comes_first_and_names_must_be_plain() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        script(&bin, "tsc", "exit 0");
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        script(&other, "tsc", "exit 0");
        let path = std::ffi::OsString::from(other.as_os_str());
        assert_eq!(
            lookup("tsc", Some(&path), Some(dir.path())),
            Some(bin.join("tsc"))
        );
        assert_eq!(lookup("tsc", Some(&path), None), Some(other.join("tsc")));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let bad = rt.block_on(answer(ToolsQuery {
            tools: vec![ToolQuery {
                name: "../x".into(),
                probe: vec![],
            }],
            root: None,
        }));
        assert!(bad.unwrap_err().contains("not a plain executable name"));
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
            .block_on(probe(&dir.path().join("ra"), &["--version".into()]))
            .unwrap_err();
        assert!(err.contains("is not installed for the toolchain"), "{err}");
        assert!(err.contains("--version"), "{err}");
    }
}
