//! `openfiles status --short`: one line for a shell prompt or a tmux status line —
//! unreviewed files, errors, warnings, the last agent, paused.
//!
//! It runs on every prompt, so it never touches the control socket (connecting would wake a
//! socket-activated service): it reads the summary (`status.json`) the service writes beside
//! each workspace's session state (the wire crate's `summary::Summary`). The workspace is the
//! nearest folder, from `DIR` (default: the current one) upwards, that has one. Outside any
//! session it prints nothing and exits 0, so a prompt shows nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

use openfiles_wire::summary::{self, Summary, MAX_SUMMARY_BYTES};

/// The summary of the workspace holding `dir`, if the service keeps one.
pub fn find(state_dir: &Path, dir: &Path) -> Option<Summary> {
    for folder in dir.ancestors() {
        let path = summary::summary_file(state_dir, folder);
        if let Ok(f) = std::fs::File::open(&path) {
            let mut bytes = Vec::new();
            use std::io::Read;
            f.take(MAX_SUMMARY_BYTES).read_to_end(&mut bytes).ok()?;
            return serde_json::from_slice(&bytes).ok();
        }
    }
    None
}

/// The one line (empty for a session with no file that is not paused).
pub fn line(s: &Summary) -> String {
    let mut parts = Vec::new();
    if s.files > 0 {
        parts.push(format!("{} unreviewed", s.unreviewed));
        parts.push(format!("{}E {}W", s.errors, s.warnings));
        if s.pending > 0 {
            parts.push(format!("{} checking", s.pending));
        }
        if let Some(a) = &s.last_agent {
            parts.push(crate::visible::escape(a).into_owned());
        }
    }
    if s.paused {
        parts.push("paused".into());
    }
    parts.join(" · ")
}

/// `openfiles status --short [--json] [DIR]`.
pub fn run(dir: Option<&Path>, json: bool) -> anyhow::Result<u8> {
    let dir: PathBuf = match dir {
        Some(d) => d.to_owned(),
        None => std::env::current_dir()?,
    };
    // A folder that cannot be resolved is outside any session: nothing to show.
    let Ok(dir) = dir.canonicalize() else {
        return Ok(0);
    };
    let summary = find(&crate::paths::state_dir(), &dir);
    let mut out = std::io::stdout().lock();
    match (summary, json) {
        (Some(s), true) => writeln!(out, "{}", serde_json::to_string(&s)?)?,
        (None, true) => writeln!(out, "null")?,
        (Some(s), false) => {
            let l = line(&s);
            if !l.is_empty() {
                writeln!(out, "{l}")?;
            }
        }
        (None, false) => {}
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_a_prompt_needs() {
        let mut s = Summary {
            files: 4,
            unreviewed: 3,
            errors: 2,
            warnings: 1,
            last_agent: Some("claude".into()),
            ..Default::default()
        };
        assert_eq!(line(&s), "3 unreviewed · 2E 1W · claude");
        s.paused = true;
        s.pending = 1;
        assert_eq!(
            line(&s),
            "3 unreviewed · 2E 1W · 1 checking · claude · paused"
        );
        let empty = Summary::default();
        assert_eq!(line(&empty), "");
    }
}
