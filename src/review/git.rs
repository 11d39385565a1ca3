//! `openfiles session add-git [DIR]`: the files changed before openfiles was watching join
//! the session and get checked — every file that differs from HEAD (staged or not) and every
//! untracked file git does not ignore (`.gitignore`, `.git/info/exclude`, the global
//! excludes), under `DIR`. Deleted files are skipped. The edit is recorded with the agent
//! `git`, and it is taken even while the workspace is paused (an explicit request). git runs
//! as [`crate::gitcmd`] builds it: nothing the repository's config says runs a program.
//!
//! A control request is one line of at most [`MAX_LINE`] bytes, and a repository can have
//! hundreds of thousands of untracked files: the paths go in chunks of at most
//! [`CHUNK_BYTES`] of JSON, each a `check` that answers at once (the files join the session
//! and are scheduled together), then a `wait` per chunk until the one deadline; the answers
//! are merged and reported as one.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::Context as _;

use openfiles_wire::control::{Check, Wait, WaitReply};
use openfiles_wire::line::MAX_LINE;
use openfiles_wire::spec;

/// The most JSON the paths of one request take: a quarter of the request-line cap.
pub const CHUNK_BYTES: usize = MAX_LINE / 4;

/// The agent name the added files are recorded with.
pub const AGENT: &str = "git";

/// Run git in `dir` and return the NUL-separated paths it printed.
fn git_paths(dir: &Path, args: &[&str]) -> anyhow::Result<Vec<PathBuf>> {
    let out = crate::gitcmd::command(dir, args)
        .and_then(|mut c| c.stderr(Stdio::piped()).output())
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
    let has_head = crate::gitcmd::command(dir, ["rev-parse", "--verify", "--quiet", "HEAD"])?
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
    let chunks = chunks(paths, CHUNK_BYTES);
    let deadline = std::time::Instant::now() + timeout;
    // Every generation the checks answer for is newer than this (the service's clock is ours).
    let since = spec::now_ms();
    let mut reply = WaitReply {
        complete: true,
        ..Default::default()
    };
    let mut accepted = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let added: WaitReply = client.call(&Check {
            paths: chunk,
            timeout_ms: Some(0),
            agent: Some(AGENT.into()),
        })?;
        reply.rejected.extend(added.rejected);
        let taken: Vec<PathBuf> = added
            .workspaces
            .into_iter()
            .flat_map(|w| w.files.into_keys().map(move |k| w.root.join(k)))
            .collect();
        if !taken.is_empty() {
            accepted.push(taken);
        }
    }
    for paths in accepted {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let part: WaitReply = client.call(&Wait {
            paths,
            since,
            timeout_ms: Some(left.as_millis() as u64),
            partial: false,
            session: None,
            fixes: false,
        })?;
        merge(&mut reply, part);
    }
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

/// `paths` in chunks whose JSON takes at most `max` bytes each (a path longer than that
/// alone is a chunk of its own).
fn chunks(paths: Vec<PathBuf>, max: usize) -> Vec<Vec<PathBuf>> {
    let mut out: Vec<Vec<PathBuf>> = Vec::new();
    let mut size = 0;
    for p in paths {
        // Quoted and escaped, plus a comma; a path that is not UTF-8 fails the request anyway.
        let len = serde_json::to_string(&p).map_or(p.as_os_str().len() * 6 + 2, |s| s.len()) + 1;
        match out.last_mut() {
            Some(chunk) if size + len <= max => {
                size += len;
                chunk.push(p);
            }
            _ => {
                size = len;
                out.push(vec![p]);
            }
        }
    }
    out
}

/// Add one chunk's answer to the whole: entries per workspace, complete only if all were.
fn merge(whole: &mut WaitReply, part: WaitReply) {
    whole.complete &= part.complete;
    for ws in part.workspaces {
        match whole.workspaces.iter_mut().find(|w| w.root == ws.root) {
            Some(w) => w.files.extend(ws.files),
            None => whole.workspaces.push(ws),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_under_their_size_and_keep_every_path_in_order() {
        let paths: Vec<PathBuf> = (0..1000)
            .map(|i| PathBuf::from(format!("/w/{i:0>90}")))
            .collect();
        let chunks = chunks(paths.clone(), 10_000);
        assert!(chunks.len() > 1);
        for c in &chunks {
            assert!(serde_json::to_vec(c).unwrap().len() <= 10_000 + 1);
        }
        assert_eq!(chunks.concat(), paths);
    }
}
