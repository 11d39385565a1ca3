//! The baseline a session's warm-up already holds: when the session starts
//! (`warm.rs`), a project-wide source that keeps a warm server (the pyright plugin's language
//! server) analyses the whole project anyway; over a clean tree (`git status` clean at
//! `HEAD`'s commit before the warm-up's check and after its answer, and no edit noticed in
//! between) that answer IS the source's baseline at that commit, the one run over the
//! commit's snapshot would give — so the session's first edit needs no snapshot run
//! ([`Pipeline::seed`] keeps it per commit, trust level, source and project; `base.rs`
//! reads a kept seed before starting a snapshot run).
//!
//! The seed is kept in the shared store too (`baseline::shared`, `Place::keep_seed`), as the
//! source's run at the commit, so other worktrees' sessions at it and later ones read it
//! instead of running it (unless a snapshot's run is kept there already).
//!
//! Anything less than certain falls back to the snapshot run: a dirty tree, `HEAD` moved,
//! an edit arrived before the answer, the trust level changed, git failed. An item already
//! at `HEAD` must never be blamed on the agent, so a seed is only ever what the commit's
//! own tree gave. Files the commit does not have (ignored ones the server also analysed)
//! are left out: their baseline is empty, as a snapshot's would be.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::Item;

use super::Pipeline;
use crate::diagnostics::baseline::{self, git, shared, CommittedFiles};

/// Seeds kept per workspace (the most recent last): one per project-wide source and project
/// is the usual count (a warm-up analyses up to 16 projects of a source, `warm.rs`); older
/// commits' are dropped past it.
const MAX_SEEDS: usize = 32;

/// A project-wide source's answer over a tree clean at `commit`: its baseline there.
#[derive(Debug, Clone)]
pub(super) struct Seed {
    pub commit: String,
    /// The trust level it ran under (never used under another).
    pub trusted: bool,
    pub source: String,
    pub project: PathBuf,
    /// Files with items, with their committed lines.
    pub files: CommittedFiles,
}

/// One warm-up answer of a project-wide source, before it is known to be a baseline.
#[derive(Debug, Clone)]
pub(super) struct Answer {
    pub source: String,
    pub project: PathBuf,
    pub files: Vec<(PathBuf, Vec<Item>)>,
}

/// The seeds a workspace's pipeline keeps.
#[derive(Debug, Default)]
pub(super) struct Seeds {
    kept: Vec<Seed>,
}

impl Seeds {
    /// Keep `seed`, replacing one of the same commit, trust, source and project.
    pub fn keep(&mut self, seed: Seed) {
        self.kept.retain(|s| {
            !(s.commit == seed.commit
                && s.trusted == seed.trusted
                && s.source == seed.source
                && s.project == seed.project)
        });
        self.kept.push(seed);
        let excess = self.kept.len().saturating_sub(MAX_SEEDS);
        self.kept.drain(..excess);
    }

    /// The kept baseline of `source` over `project` at `commit` under that trust level.
    pub fn get(
        &self,
        commit: &str,
        trusted: bool,
        source: &str,
        project: &Path,
    ) -> Option<&CommittedFiles> {
        self.kept
            .iter()
            .find(|s| {
                s.commit == commit
                    && s.trusted == trusted
                    && s.source == source
                    && s.project == project
            })
            .map(|s| &s.files)
    }
}

/// The commit `HEAD` names when the working tree of `root` is clean; `None` when it is not,
/// or git cannot say. Blocking.
pub(super) fn clean_head(root: &Path) -> Option<String> {
    let commit = git::head_commit(root).ok()?;
    git::is_clean(root).ok()?.then_some(commit)
}

/// The seeds `answers` give, taken from a tree that was clean at `commit` before they ran:
/// none unless it still is (the same commit, nothing changed). Blocking (git).
pub(super) fn seeds(root: &Path, commit: &str, trusted: bool, answers: Vec<Answer>) -> Vec<Seed> {
    if clean_head(root).as_deref() != Some(commit) {
        return Vec::new();
    }
    answers
        .into_iter()
        .filter_map(|a| {
            let mut files = Vec::new();
            for (path, items) in a.files {
                if items.is_empty() || !path.starts_with(root) {
                    continue;
                }
                match git::committed_text(root, commit, &path) {
                    Ok(Some(text)) => files.push((path, Some(baseline::line_hashes(&text)), items)),
                    // Not in the commit: its baseline is empty, as in a snapshot.
                    Ok(None) => {}
                    Err(_) => return None,
                }
            }
            Some(Seed {
                commit: commit.to_owned(),
                trusted,
                source: a.source,
                project: a.project,
                files,
            })
        })
        .collect()
}

impl Pipeline {
    /// The warm-up that started at `since` (ms) gave `seeds`: keep them unless an edit was
    /// noticed since (the server may have read it; the snapshot run decides then) or the
    /// trust level changed.
    pub(super) fn seed(&mut self, seeds: Vec<Seed>, since: u64) {
        if seeds.is_empty() {
            return;
        }
        if let Some((p, _)) = self.session.iter().find(|(_, s)| s.edited_at >= since) {
            tracing::info!(root = %self.root.display(), edited = %p.display(), "an edit came before the warm-up's answer: the baseline is run over the commit's snapshot");
            return;
        }
        let trusted = self.scheduler.checker().trusted();
        let seeds: Vec<Seed> = seeds.into_iter().filter(|s| s.trusted == trusted).collect();
        for s in &seeds {
            tracing::info!(root = %self.root.display(), source = %s.source, commit = %s.commit, files = s.files.len(), "the warm-up over a clean tree is the commit's baseline");
            self.base.seeds.keep(s.clone());
        }
        // Kept for the other worktrees at the commit, and later sessions.
        if let Some(store) = self.base.store() {
            let root = self.root.clone();
            tokio::task::spawn_blocking(move || {
                for s in seeds {
                    if let Ok(place) = shared::Place::find(&store, &root, &s.commit, s.trusted) {
                        place.keep_seed(&root, &s.source, &s.project, &s.files);
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openfiles_plugin_api::Severity;
    use std::process::Command;

    fn sh(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
    }

    fn seed(commit: &str, source: &str) -> Seed {
        Seed {
            commit: commit.into(),
            trusted: true,
            source: source.into(),
            project: PathBuf::from("/w"),
            files: Vec::new(),
        }
    }

    #[test]
    fn a_seed_is_found_only_at_its_commit_trust_source_and_project() {
        let mut s = Seeds::default();
        s.keep(seed("c1", "pyright"));
        assert!(s.get("c1", true, "pyright", Path::new("/w")).is_some());
        assert!(s.get("c2", true, "pyright", Path::new("/w")).is_none());
        assert!(s.get("c1", false, "pyright", Path::new("/w")).is_none());
        assert!(s.get("c1", true, "tsc", Path::new("/w")).is_none());
        assert!(s.get("c1", true, "pyright", Path::new("/w/sub")).is_none());
        for i in 0..MAX_SEEDS {
            s.keep(seed(&format!("n{i}"), "pyright"));
        }
        assert!(
            s.get("c1", true, "pyright", Path::new("/w")).is_none(),
            "oldest dropped"
        );
        assert_eq!(s.kept.len(), MAX_SEEDS);
    }

    #[test]
    fn an_answer_is_a_seed_only_over_a_tree_still_clean_at_its_commit() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        sh(&root, &["init", "-q"]);
        std::fs::write(root.join(".gitignore"), "gen.py\n").unwrap();
        std::fs::write(root.join("a.py"), "x: int = 'a'\n").unwrap();
        sh(&root, &["add", "."]);
        sh(&root, &["commit", "-q", "-m", "one"]);
        std::fs::write(root.join("gen.py"), "y: int = 'b'\n").unwrap();
        let commit = clean_head(&root).expect("clean: gen.py is ignored");
        let item = Item::note(Severity::Error, "Pyright", "str is not int");
        let answers = vec![Answer {
            source: "pyright".into(),
            project: root.clone(),
            files: vec![
                (root.join("a.py"), vec![item.clone()]),
                (root.join("gen.py"), vec![item.clone()]),
                (root.join("none.py"), Vec::new()),
            ],
        }];
        let got = seeds(&root, &commit, true, answers.clone());
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].files.len(),
            1,
            "only the commit's files: {:?}",
            got[0].files
        );
        assert_eq!(got[0].files[0].0, root.join("a.py"));
        assert_eq!(
            got[0].files[0].1,
            Some(baseline::line_hashes("x: int = 'a'\n"))
        );
        assert!(
            seeds(&root, "0000000", true, answers.clone()).is_empty(),
            "HEAD moved"
        );
        std::fs::write(root.join("a.py"), "x: int = 1\n").unwrap();
        assert!(clean_head(&root).is_none());
        assert!(
            seeds(&root, &commit, true, answers).is_empty(),
            "edited since"
        );
    }
}
