//! What a person reviewing the session needs beside the diagnostics: per session file, the
//! agents that edited it and whether it has been reviewed since its last edit; per workspace,
//! whether noticing edits is paused and which agent edited last.
//!
//! Owned by the pipeline actor next to its [`Session`](super::session::Session) and persisted
//! with it in the session state (the `review` field), so marks survive a restart and every
//! client (`openfiles review`, `status --short`, MCP) sees the same ones. Invariant: an edit
//! of a file clears its mark ([`Review::edited`]); a file that leaves the session leaves here.
//!
//! The pipeline also writes a few-hundred-byte [`Summary`] beside the session state after
//! every change, so `openfiles status --short` (run on every shell prompt) reads one small
//! file instead of waking the service.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use openfiles_wire::control::{Mark, ReviewFile, WorkspaceReview};
pub use openfiles_wire::summary::{Summary, NO_AGENT, SUMMARY_FILE};

/// How soon after the watcher's notice of a write an agent's own report of it replaces the
/// watcher's [`NO_AGENT`] (a hook reports a write up to a few hundred ms after it).
pub const WATCH_ECHO_MS: u64 = 2_000;

/// The review state of one workspace, persisted in its session state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// Edits are not noticed (watcher, queue, hook) until `resume`; the session is kept.
    #[serde(default)]
    pub paused: bool,
    /// The agent of the last edit in the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_agent: Option<String>,
    /// Keyed by absolute path, like the session.
    #[serde(default)]
    pub files: BTreeMap<PathBuf, Mark>,
}

impl Review {
    /// `path` was edited by `agent` at `now`: the agent is recorded and the mark cleared.
    pub fn edited(&mut self, path: &Path, agent: Option<&str>, now: u64) {
        let agent = agent.filter(|a| !a.is_empty()).unwrap_or(NO_AGENT);
        let mark = self.files.entry(path.to_owned()).or_default();
        // The watcher may notice a write before the agent's hook reports it (its first
        // window is 50 ms): the agent's report soon after takes the watcher's place.
        let noticed_first = agent != NO_AGENT
            && mark.last_agent == NO_AGENT
            && mark.agents.last().is_some_and(|a| a == NO_AGENT)
            && now.saturating_sub(mark.edited_at) <= WATCH_ECHO_MS;
        if noticed_first {
            mark.agents.pop();
        }
        if !mark.agents.iter().any(|a| a == agent) {
            mark.agents.push(agent.to_owned());
        }
        agent.clone_into(&mut mark.last_agent);
        mark.edited_at = now;
        mark.reviewed_at = 0;
        self.last_agent = Some(agent.to_owned());
    }

    /// Set or clear the reviewed mark of session files; returns the paths that are in the
    /// session (others are ignored by the caller's report).
    pub fn mark(&mut self, paths: &[PathBuf], reviewed: bool, now: u64) -> Vec<PathBuf> {
        let mut done = Vec::new();
        for p in paths {
            if let Some(m) = self.files.get_mut(p) {
                m.reviewed_at = if reviewed { now.max(1) } else { 0 };
                done.push(p.clone());
            }
        }
        done
    }

    pub fn get(&self, path: &Path) -> Option<&Mark> {
        self.files.get(path)
    }

    pub fn remove(&mut self, path: &Path) {
        self.files.remove(path);
    }

    /// Forget every file (the session was cleared); `paused` stays as it is.
    pub fn clear(&mut self) {
        self.files.clear();
        self.last_agent = None;
    }

    /// Keep only the files still in the session (a restored state may hold marks of files
    /// that left it before the last write).
    pub fn retain(&mut self, keep: impl Fn(&Path) -> bool) {
        self.files.retain(|p, _| keep(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_clears_the_mark_and_records_the_agent_once() {
        let mut r = Review::default();
        let p = PathBuf::from("/w/a.rs");
        r.edited(&p, Some("claude"), 1);
        assert_eq!(r.mark(std::slice::from_ref(&p), true, 5), vec![p.clone()]);
        assert!(r.get(&p).unwrap().reviewed());
        r.edited(&p, Some("codex"), 6);
        r.edited(&p, Some("claude"), 7);
        let m = r.get(&p).unwrap();
        assert!(!m.reviewed(), "a new edit clears the mark");
        assert_eq!(m.agents, vec!["claude", "codex"]);
        assert_eq!(m.last_agent, "claude");
        r.edited(&p, None, 8);
        assert_eq!(r.get(&p).unwrap().last_agent, NO_AGENT);
        assert!(r
            .mark(&[PathBuf::from("/w/not-in-session")], true, 9)
            .is_empty());
    }

    /// The watcher noticed the write first; the agent's hook reports it a moment later.
    #[test]
    fn an_agent_s_report_right_after_the_watcher_s_takes_its_place() {
        let mut r = Review::default();
        let p = PathBuf::from("/w/a.rs");
        r.edited(&p, None, 1_000);
        r.edited(&p, Some("claude"), 1_150);
        assert_eq!(r.get(&p).unwrap().agents, vec!["claude"]);
        // A hook-less edit long before stays.
        r.edited(&p, None, 10_000);
        r.edited(&p, Some("codex"), 20_000);
        assert_eq!(
            r.get(&p).unwrap().agents,
            vec!["claude", "unknown", "codex"]
        );
    }

    #[test]
    fn round_trips_through_json_with_path_keys() {
        let mut r = Review {
            paused: true,
            ..Default::default()
        };
        r.edited(Path::new("/w/x y.py"), Some("gemini"), 3);
        let text = serde_json::to_string(&r).unwrap();
        let back: Review = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
