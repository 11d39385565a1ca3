//! One baseline per commit for every worktree at it: where a commit's snapshot and the
//! project-wide sources' runs over it are kept, and the one run of each that the worktrees
//! of a repository share.
//!
//! Agents work in parallel, each in its own git worktree of one repository: six worktrees at
//! one commit have one committed tree, so each project-wide source's baseline over it is run
//! once. The place is keyed by the repository (its common git folder, `git rev-parse
//! --git-common-dir`, the same for all its worktrees), the commit and the trust level — a
//! run under one trust level is never reused under another, and an untrusted worktree gets
//! a snapshot of its own —: `<state>/baselines/<repository>-<trust>/<commit>/`. In it, the
//! tree (`tree/`, [`super::git::snapshot`]) and one file per source and project (named by
//! the workspace's and the project's paths in the tree), holding the run's items as the
//! checker said them.
//!
//! A second worktree's job for the same file waits for the first's run ([`flight`]: one
//! lock per file, the service's one process) and then reads it. Results are mapped to each
//! worktree on reading ([`Run::items_for`]): paths are the worktree's (the file's path in
//! the tree joined to its root), and a message naming the snapshot or the worktree that ran
//! it names the reader's root instead, so nothing of worktree A's appears in B's results;
//! fixes are dropped (a baseline item is only matched against, never shown).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use openfiles_plugin_api::Item;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::git::{self, GitError};
use super::CommittedFiles;

/// Snapshots kept per repository and trust level, most recently used first; older ones go
/// once unused for `UNUSED_FOR`.
const KEPT: usize = 8;
/// How long a snapshot beyond [`KEPT`] is kept after its last use (longer than a run).
const UNUSED_FOR: Duration = Duration::from_secs(15 * 60);
/// The stamp file whose mtime says when a commit's folder was last used.
const USED: &str = "used";

/// Where one commit's baseline of one repository, at one trust level, is kept.
#[derive(Debug, Clone)]
pub struct Place {
    /// `<store>/<repository>-<trust>`: every commit of the repository at that trust level.
    pub repo_dir: PathBuf,
    /// `<repo_dir>/<commit>`: the tree and the runs.
    pub commit_dir: PathBuf,
    /// The workspace's root relative to the top of its worktree.
    pub rel_root: PathBuf,
}

/// A stable short hash (SHA-256, so names stay the same across builds).
fn short_hash(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
        h.update([0]);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Place {
    /// The place of `commit` for the workspace at `root` in `store`. Blocking (git).
    pub fn find(store: &Path, root: &Path, commit: &str, trusted: bool) -> Result<Place, GitError> {
        use std::os::unix::ffi::OsStrExt;
        let common = git::common_dir(root)?;
        let top = git::toplevel(root)?;
        let rel_root = root.strip_prefix(&top).unwrap_or(Path::new("")).to_owned();
        let trust = if trusted { "trusted" } else { "untrusted" };
        let repo = short_hash(&[common.as_os_str().as_bytes()]);
        let repo_dir = store.join(format!("{repo}-{trust}"));
        Ok(Place {
            commit_dir: repo_dir.join(commit),
            repo_dir,
            rel_root,
        })
    }

    /// The file a project-wide source's run over `rel_project` (relative to the workspace
    /// root) is kept in.
    pub fn run_file(&self, source: &str, rel_project: &Path) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        let hash = short_hash(&[
            self.rel_root.as_os_str().as_bytes(),
            rel_project.as_os_str().as_bytes(),
        ]);
        self.commit_dir.join(format!("{source}-{hash}.json"))
    }

    /// The run of `source` over `rel_project` kept here for the snapshot a run would take
    /// now (the one [`git::snapshot`] extracted into this place, complete), if any: what a
    /// job would only read. Blocking.
    pub fn kept_run(&self, source: &str, rel_project: &Path) -> Option<Run> {
        let run =
            Run::load(&self.run_file(source, rel_project)).filter(|r| r.snap == self.snap())?;
        (run.lines.is_some() || self.commit_dir.join("complete").is_file()).then_some(run)
    }

    /// The workspace's root in the commit's snapshot here, as [`git::snapshot`] names it
    /// (whether or not it was extracted yet).
    pub fn snap(&self) -> PathBuf {
        let dir = self.commit_dir.canonicalize();
        let dir = dir.as_deref().unwrap_or(&self.commit_dir);
        let snap = dir.join("tree").join(&self.rel_root);
        snap.canonicalize().unwrap_or(snap)
    }

    /// Keep a warm-up's answer over a tree clean at the commit (`seed.rs`) as `source`'s run
    /// over `project` (of the workspace at `root`), for other worktrees' sessions and later
    /// ones — unless a run is kept already (a snapshot's is never replaced). Best effort.
    /// Blocking.
    pub fn keep_seed(&self, root: &Path, source: &str, project: &Path, files: &CommittedFiles) {
        let rel_project = project.strip_prefix(root).unwrap_or(Path::new(""));
        let file = self.run_file(source, rel_project);
        self.touch_and_prune();
        if file.exists() {
            return;
        }
        let mut lines = BTreeMap::new();
        let mut items = Vec::new();
        for (path, committed, found) in files {
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            if let Some(l) = committed {
                lines.insert(rel.to_owned(), l.clone());
            }
            items.push((rel.to_owned(), found.clone()));
        }
        let run = Run {
            origin: root.to_owned(),
            snap: self.snap(),
            files: items,
            lines: Some(lines),
        };
        run.save(&file);
    }

    /// Mark the commit's folder used now, and remove the repository's folders of other
    /// commits past the `KEPT` most recently used that nobody used for `UNUSED_FOR`.
    /// Blocking.
    pub fn touch_and_prune(&self) {
        // Private like every state folder (RELIABILITY.md): 0700, ours, no symlink.
        if openfiles_os::fsutil::ensure_private_dir(&self.commit_dir, 0o700).is_ok() {
            let _ = openfiles_os::fsutil::write_atomic(&self.commit_dir.join(USED), b"", 0o600);
        }
        let Ok(rd) = std::fs::read_dir(&self.repo_dir) else {
            return;
        };
        let mut others: Vec<(SystemTime, PathBuf)> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| *p != self.commit_dir)
            .map(|p| {
                let used = std::fs::metadata(p.join(USED))
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                (used, p)
            })
            .collect();
        others.sort_by_key(|o| std::cmp::Reverse(o.0));
        let now = SystemTime::now();
        for (used, dir) in others.into_iter().skip(KEPT.saturating_sub(1)) {
            if now.duration_since(used).unwrap_or_default() > UNUSED_FOR {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// Where a workspace's session finds the runs kept at its baseline's commit, and the
/// project-wide baselines it holds already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtCommit {
    /// The store of shared baselines.
    pub store: PathBuf,
    pub commit: String,
    /// The trust level its checks run at (a run is read only at its own).
    pub trusted: bool,
    /// The (source, project) pairs whose baseline the session holds (a run, a seed).
    pub held: Vec<(String, PathBuf)>,
}

impl AtCommit {
    /// Whether `source`'s baseline over `project` is held by the session or kept at the
    /// commit ([`AtCommit::kept`]). Blocking (git) when not held.
    pub fn known(&self, root: &Path, source: &str, project: &Path) -> bool {
        let held = |(s, p): &(String, PathBuf)| s == source && p == project;
        self.held.iter().any(held) || self.kept(root, source, project)
    }

    /// Whether a run of `source` over `project` of the workspace at `root` is kept at the
    /// commit ([`Place::kept_run`]): its baseline is then only read. Blocking (git).
    pub fn kept(&self, root: &Path, source: &str, project: &Path) -> bool {
        let rel = project.strip_prefix(root).unwrap_or(Path::new(""));
        Place::find(&self.store, root, &self.commit, self.trusted)
            .is_ok_and(|p| p.kept_run(source, rel).is_some())
    }
}

/// The lock of one run file: the one run of a source over a project at a commit, which the
/// other worktrees' jobs wait for.
pub fn flight(run_file: &Path) -> Arc<tokio::sync::Mutex<()>> {
    static FLIGHTS: Mutex<BTreeMap<PathBuf, Weak<tokio::sync::Mutex<()>>>> =
        Mutex::new(BTreeMap::new());
    let mut all = FLIGHTS.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|_, l| l.strong_count() > 0);
    if let Some(l) = all.get(run_file).and_then(Weak::upgrade) {
        return l;
    }
    let l = Arc::new(tokio::sync::Mutex::new(()));
    all.insert(run_file.to_owned(), Arc::downgrade(&l));
    l
}

/// A project-wide source's run over a snapshot, as kept: the items as the checker said them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// The root of the workspace whose job ran it.
    pub origin: PathBuf,
    /// The snapshot's root it ran in.
    pub snap: PathBuf,
    /// Per file (relative to `snap`), its items.
    pub files: Vec<(PathBuf, Vec<Item>)>,
    /// Per file, its committed text's line hashes, when the run is a warm-up's answer over a
    /// tree clean at the commit ([`Place::keep_seed`]): read without the snapshot's tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<BTreeMap<PathBuf, Vec<u64>>>,
}

impl Run {
    /// Read a kept run; `None` when there is none (or it cannot be read).
    pub fn load(file: &Path) -> Option<Run> {
        let bytes = std::fs::read(file).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keep it (best effort: a run not kept is run again).
    pub fn save(&self, file: &Path) {
        if let Ok(bytes) = serde_json::to_vec(self) {
            let _ = openfiles_os::fsutil::write_atomic(file, &bytes, 0o600);
        }
    }

    /// The items of each file for the workspace at `root`: messages that name the snapshot
    /// or the workspace that ran it name `root` (as the workspace's own run would say them,
    /// or an old problem would look new), fixes dropped.
    pub fn items_for(&self, root: &Path) -> Vec<(PathBuf, Vec<Item>)> {
        let to = root.to_string_lossy();
        let mut spellings = vec![self.snap.to_string_lossy().into_owned()];
        if let Ok(c) = self.snap.canonicalize() {
            spellings.push(c.to_string_lossy().into_owned());
        }
        if self.origin != root {
            spellings.push(self.origin.to_string_lossy().into_owned());
        }
        spellings.retain(|s| !s.is_empty());
        self.files
            .iter()
            .map(|(rel, items)| {
                let items = items
                    .iter()
                    .cloned()
                    .map(|mut item| {
                        for s in &spellings {
                            if item.message.contains(s.as_str()) {
                                item.message = item.message.replace(s.as_str(), &to);
                            }
                        }
                        item.fixes.clear();
                        item
                    })
                    .collect();
                (rel.clone(), items)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openfiles_plugin_api::Severity;

    #[test]
    fn a_run_reads_as_each_worktree_s_own() {
        let mut item = Item::note(
            Severity::Error,
            "ty",
            "Cannot resolve `x`\n\n1. /state/b/tree/src (first-party code)\n2. /wt/a/.venv",
        );
        item.fixes.push(openfiles_plugin_api::Fix {
            title: "fix".into(),
            safe: true,
            files: Vec::new(),
        });
        let run = Run {
            origin: PathBuf::from("/wt/a"),
            snap: PathBuf::from("/state/b/tree"),
            files: vec![(PathBuf::from("src/x.py"), vec![item])],
            lines: None,
        };
        let b = run.items_for(Path::new("/wt/b"));
        assert_eq!(b[0].0, PathBuf::from("src/x.py"));
        assert_eq!(
            b[0].1[0].message,
            "Cannot resolve `x`\n\n1. /wt/b/src (first-party code)\n2. /wt/b/.venv"
        );
        assert!(b[0].1[0].fixes.is_empty());
        let a = run.items_for(Path::new("/wt/a"));
        assert!(a[0].1[0].message.contains("1. /wt/a/src"));
    }

    #[test]
    fn one_lock_per_run_file() {
        let a = flight(Path::new("/s/r/c/pyright-1.json"));
        let b = flight(Path::new("/s/r/c/pyright-2.json"));
        let _held = a.try_lock().unwrap();
        assert!(b.try_lock().is_ok());
        assert!(flight(Path::new("/s/r/c/pyright-1.json"))
            .try_lock()
            .is_err());
    }

    #[test]
    fn worktrees_share_a_place_and_its_kept_runs_and_trust_levels_do_not() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let ok = std::process::Command::new("git")
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
        };
        git(&repo, &["init", "-q"]);
        std::fs::write(repo.join("a.txt"), "a\n").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "one"]);
        let wt = t.path().join("wt");
        git(&repo, &["worktree", "add", "-q", wt.to_str().unwrap()]);
        let store = t.path().join("store");
        let (repo, wt) = (repo.canonicalize().unwrap(), wt.canonicalize().unwrap());
        let a = Place::find(&store, &repo, "c1", true).unwrap();
        let b = Place::find(&store, &wt, "c1", true).unwrap();
        let u = Place::find(&store, &wt, "c1", false).unwrap();
        assert_eq!(a.commit_dir, b.commit_dir);
        assert_eq!(
            a.run_file("pyright", Path::new("")),
            b.run_file("pyright", Path::new(""))
        );
        assert_ne!(a.commit_dir, u.commit_dir);

        // A run kept for the commit's snapshot is the other worktree's too, at its trust
        // level only, for its source and project only, and not before the snapshot is whole.
        let commit = git::head_commit(&repo).unwrap();
        let at = |trusted| AtCommit {
            store: store.clone(),
            commit: commit.clone(),
            trusted,
            held: Vec::new(),
        };
        assert!(!at(true).kept(&wt, "pyright", &wt), "nothing kept yet");
        let place = Place::find(&store, &repo, &commit, true).unwrap();
        let snap = git::snapshot(&repo, &commit, &place.commit_dir).unwrap();
        let run = Run {
            origin: repo.clone(),
            snap,
            files: Vec::new(),
            lines: None,
        };
        run.save(&place.run_file("pyright", Path::new("")));
        assert!(at(true).kept(&wt, "pyright", &wt));
        assert!(at(true).kept(&repo, "pyright", &repo));
        assert!(!at(false).kept(&wt, "pyright", &wt), "another trust level");
        assert!(!at(true).kept(&wt, "ty", &wt), "another source");
        assert!(
            !at(true).kept(&wt, "pyright", &wt.join("sub")),
            "another project"
        );
        let held = AtCommit {
            held: vec![("ty".into(), wt.clone())],
            ..at(true)
        };
        assert!(held.known(&wt, "ty", &wt), "held by the session");
        std::fs::remove_file(place.commit_dir.join("complete")).unwrap();
        assert!(!at(true).kept(&wt, "pyright", &wt), "a snapshot not whole");

        // A warm-up's answer kept whole needs no tree; a kept run is never replaced.
        let item = Item::note(Severity::Error, "ty", "old");
        let seed = vec![(repo.join("a.txt"), Some(vec![7]), vec![item])];
        place.keep_seed(&repo, "ty", &repo, &seed);
        assert!(at(true).kept(&wt, "ty", &wt), "read without the tree");
        let run = Run::load(&place.run_file("ty", Path::new(""))).unwrap();
        assert_eq!(run.files[0].0, PathBuf::from("a.txt"));
        assert_eq!(run.lines.unwrap()[Path::new("a.txt")], vec![7]);
        place.keep_seed(&repo, "pyright", &repo, &seed);
        let kept = Run::load(&place.run_file("pyright", Path::new(""))).unwrap();
        assert!(kept.lines.is_none(), "the snapshot's run stays");
    }
}
