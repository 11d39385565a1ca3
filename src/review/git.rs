//! `openfiles session add-git [DIR]`: the files changed before openfiles was watching join
//! the session and get checked — every file that differs from HEAD (staged or not) and every
//! untracked file git does not ignore (`.gitignore`, `.git/info/exclude`, the global
//! excludes), under `DIR`. Deleted files are skipped. The edit is recorded with the agent
//! `git`, and it is taken even while the workspace is paused (an explicit request). git runs
//! as [`crate::gitcmd`] builds it: nothing the repository's config says runs a program.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;

use openfiles_wire::control::{Check, Request, WaitReply};

/// The agent name the added files are recorded with.
pub const AGENT: &str = "git";

/// Run git in `dir` and return the NUL-separated paths it printed.
fn git_paths(dir: &Path, args: &[&str]) -> anyhow::Result<Vec<PathBuf>> {
    let out = crate::gitcmd::command(dir, args)
        .stderr(Stdio::piped())
        .output()
        .context("cannot run git (is it installed?)")?;
    if !out.status.success() {
        anyhow::bail!(
            "git {} failed in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| dir.join(std::ffi::OsStr::from_bytes(p)))
        .collect())
}

/// The uncommitted and untracked (not ignored) files under `dir`, existing ones only.
pub fn changed_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    git_paths(dir, &["rev-parse", "--show-toplevel"])
        .with_context(|| format!("{} is not in a git repository", dir.display()))?;
    let has_head = crate::gitcmd::command(dir, ["rev-parse", "--verify", "--quiet", "HEAD"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let mut paths = if has_head {
        git_paths(dir, &["diff", "--name-only", "--relative", "-z", "HEAD"])?
    } else {
        // No commit yet: everything staged is new.
        git_paths(dir, &["ls-files", "-z", "--cached"])?
    };
    paths.extend(git_paths(
        dir,
        &["ls-files", "-z", "--others", "--exclude-standard"],
    )?);
    paths.retain(|p| p.is_file());
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// `openfiles session add-git [DIR]`.
pub fn run(socket: Option<&Path>, dir: Option<&Path>, timeout: Duration) -> anyhow::Result<u8> {
    let dir = super::folder(dir)?;
    let paths = changed_files(&dir)?;
    if paths.is_empty() {
        println!(
            "nothing to add: no uncommitted or untracked file under {}",
            dir.display()
        );
        return Ok(0);
    }
    let mut client = super::connect(socket)?;
    client.set_read_timeout(Some(timeout + Duration::from_secs(10)))?;
    let n = paths.len();
    let reply: WaitReply = client.call_as(&Request::Check(Check {
        paths,
        timeout_ms: Some(timeout.as_millis() as u64),
        agent: Some(AGENT.into()),
    }))?;
    for ws in &reply.workspaces {
        let (errors, warnings) = ws.files.values().fold((0u64, 0u64), |(e, w), f| {
            (e + u64::from(f.errors), w + u64::from(f.warnings))
        });
        println!(
            "added {} file(s) to the session of {}: {errors} error(s), {warnings} warning(s){}",
            ws.files.len(),
            crate::visible::escape(&ws.root.display().to_string()),
            if reply.complete {
                ""
            } else {
                " so far (checks still running)"
            }
        );
    }
    for r in &reply.rejected {
        println!(
            "  skipped {}: {}",
            crate::visible::escape(&r.path.display().to_string()),
            crate::visible::escape(&r.reason)
        );
    }
    if reply.workspaces.is_empty() {
        println!("none of the {n} changed file(s) could join a session");
    }
    Ok(0)
}
