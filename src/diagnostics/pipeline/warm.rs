//! Warming a workspace's checkers when an agent session starts (`warm`, sent by the
//! session-start hook): each per-file source that handles a file of the workspace checks one
//! such file once, in the background, so its language server is spawned and initialized
//! (and has loaded what it loads for the language) before the agent's first edit. The
//! answers are dropped: the session, `diagnostics.json` and review never see a warm-up.
//!
//! Costs nothing in a workspace no agent starts a session in (only `warm` starts it), and
//! nothing after: the servers stop under their plugin's usual idle rules. A project-wide
//! source that keeps a server (`Capabilities::warm`: the pyright plugin's language server)
//! analyses each of the workspace's projects before the first edit (a monorepo's packages, up
//! to [`MAX_WARM_PROJECTS`], in one check: one program where the plugin can make them one);
//! over a clean tree it is asked about every file (`report_all`), and its answer is, per
//! project, the commit's baseline for the session's first edit (`seed.rs`). The others (cargo, tsc, cc, go) keep no server to warm: once the warm-up is
//! done, each runs the commit's baseline of its shallowest file's project, one at a time, into
//! the shared store (`base_jobs::prefetch`) — the run the first edit would start anyway (every
//! session in a git workspace takes one), so a first edit made after it needs only its own
//! run, and one made during it waits for it instead of starting a second. A first edit's
//! own project-wide baseline runs start only once the per-file checks answered
//! ([`Msg::ServersWarmed`]): on a 2-core machine they would slow the language servers the
//! edit's own problems wait for.
//! The representative file is the shallowest one the path policy lets a checker read (never
//! a sensitive or ignored file), found by a bounded walk that skips hidden and vendored
//! folders — one per kind of file (extension, or name for files without one) a source
//! handles: the lsp source runs a different server for `package.json`, a `Dockerfile` and
//! `src/app.ts`, and the shallowest file alone would warm the JSON server and leave the
//! TypeScript one cold. TOML files are not warmed ([`NOT_WARMED`]). A per-file source's pick
//! is not a file outside the project of a warm project-wide source that stands in for one of
//! its servers while the walk finds one inside ([`starts_a_stand_in`]: click's `docs/conf.py`
//! would start a second pyright, whose analysis slowed the warm one's first analysis from
//! 7.3–7.9 s to 16.7–17.1 s). One warm-up per workspace at a time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openfiles_plugin_api::CheckRequest;
use openfiles_wire::control::WarmState;

use super::handle::{Msg, Warmed};
use super::seed::{self, Answer};
use super::Pipeline;
use crate::diagnostics::{project_root, Checker, SourceInfo};
use crate::policy::{Policy, Verdict};
use openfiles_wire::spec;

/// Most directory entries the walk looks at.
const MAX_ENTRIES: usize = 4000;
/// Deepest folder level the walk enters (the root is 0).
const MAX_DEPTH: usize = 6;
/// Kinds of file not warmed: every Python and Rust project holds one, an agent's first edit
/// is rarely one, and warming their server would compete with the code's servers for the
/// session start's CPU (taplo's WebAssembly server: about 1.5 s of CPU and 210 MiB on a
/// loaded 2-core machine). Their first check starts the server.
const NOT_WARMED: &[&str] = &["toml"];
/// Folders never entered (besides hidden ones): dependencies and build output.
const SKIP_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "dist",
    "build",
    "venv",
    "__pycache__",
    "vendor",
    "site-packages",
];

impl Pipeline {
    /// Start a warm-up unless one runs; returns whether one was started.
    pub(super) fn warm(&mut self) -> bool {
        if self.warming() {
            return false;
        }
        self.warm = Some(WarmState {
            started_at: spec::now_ms(),
            ..Default::default()
        });
        self.servers_warming = true;
        self.scheduler.set_warming(true);
        let checker = self.scheduler.checker();
        let (root, policy, tx) = (self.root.clone(), self.policy.clone(), self.tx.clone());
        let timeout_ms = self.config.diagnostics.check_timeout_ms;
        let seeding = self.base.takes_baselines();
        let store = self.base.store();
        tokio::spawn(async move {
            let c = checker.clone();
            let r = root.clone();
            let picks = tokio::task::spawn_blocking(move || pick(&r, &policy, c.as_ref()))
                .await
                .unwrap_or_default();
            // A project-wide answer over a clean tree is the commit's baseline (`seed.rs`).
            let r = root.clone();
            let clean_at = if seeding && picks.iter().any(|(s, _)| s.project_wide) {
                tokio::task::spawn_blocking(move || seed::clean_head(&r))
                    .await
                    .ok()
                    .flatten()
            } else {
                None
            };
            let trusted = checker.trusted();
            let (prefetch, picks): (Vec<_>, Vec<_>) = picks
                .into_iter()
                .partition(|(s, _)| s.project_wide && !s.warm);
            let (mut warmed, answers) = run(
                checker.clone(),
                &root,
                picks,
                timeout_ms,
                clean_at.is_some(),
                &tx,
            )
            .await;
            if let Some(commit) = clean_at {
                let r = root.clone();
                warmed.seeds =
                    tokio::task::spawn_blocking(move || seed::seeds(&r, &commit, trusted, answers))
                        .await
                        .unwrap_or_default();
            }
            let _ = tx.send(Msg::Warmed(warmed));
            if let Some(store) = store {
                prefetch_baselines(checker, &root, store, prefetch, timeout_ms).await;
            }
        });
        true
    }

    /// Whether the session start's warm-up runs.
    pub(super) fn warming(&self) -> bool {
        self.warm.as_ref().is_some_and(|w| w.done_at == 0)
    }

    /// The warm-up's per-file checks answered.
    pub(super) fn servers_warmed(&mut self) {
        self.servers_warming = false;
        self.base_warmed();
    }

    /// A warm-up ended.
    pub(super) fn warmed(&mut self, w: Warmed) {
        self.scheduler.set_warming(false);
        let state = self.warm.get_or_insert_with(WarmState::default);
        state.done_at = spec::now_ms().max(1);
        state.sources = w.sources;
        state.files = w.files;
        state.failed = w.failed;
        let since = state.started_at;
        tracing::info!(root = %self.root.display(), sources = ?state.sources, "warmed the checkers for an agent session");
        self.seed(w.seeds, since);
        self.servers_warmed();
    }
}

/// What a pick is one per: a kind of file for a per-file source; a kind of file and project
/// for a project-wide one keeping a warm server (each of a monorepo's packages is analysed
/// in the warm-up, together: one program where they can be); the source alone for another
/// project-wide one (its shallowest file's project is the one whose baseline is prefetched).
fn pick_key(s: &SourceInfo, kind: &str, project: &Path) -> String {
    match (s.project_wide, s.warm) {
        (true, false) => String::new(),
        (true, true) => format!("{kind}\n{}", project.display()),
        _ => kind.to_owned(),
    }
}

/// The most projects of one warm project-wide source a warm-up analyses (past it, a
/// project's first edit starts its analysis).
const MAX_WARM_PROJECTS: usize = 16;

/// The project of files in `dir` for `s` (the nearest folder up to `root` holding one of its
/// markers, else `root`: `project_root`'s rule), each folder's answer remembered for one walk
/// (a marker's TOML table is parsed to tell), so each folder is looked at once.
fn project_of(
    memo: &mut std::collections::HashMap<(usize, PathBuf), PathBuf>,
    s: &SourceInfo,
    dir: &Path,
    root: &Path,
) -> PathBuf {
    if let Some(p) = memo.get(&(s.id, dir.to_owned())) {
        return p.clone();
    }
    let marked = |d: &Path| {
        s.project_markers
            .iter()
            .any(|m| openfiles_plugin_api::markers::present(d, m))
    };
    let project = if !dir.starts_with(root) {
        root.to_owned()
    } else if dir == root || marked(dir) {
        dir.to_owned()
    } else {
        project_of(memo, s, dir.parent().unwrap_or(root), root)
    };
    memo.insert((s.id, dir.to_owned()), project.clone());
    project
}

/// Per per-file source and kind of file, the first file (breadth first) of that kind it
/// handles that a checker may read; per project-wide source keeping a warm server, the same
/// per project (up to [`MAX_WARM_PROJECTS`]); per other project-wide source, its first file.
fn pick(root: &Path, policy: &Policy, checker: &dyn Checker) -> Vec<(SourceInfo, PathBuf)> {
    let mut picks = Picks::default();
    let mut queue = std::collections::VecDeque::from([(root.to_owned(), 0usize)]);
    let mut seen = 0;
    while let Some((dir, depth)) = queue.pop_front() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        // Never more than the walk may look at, even from one huge folder.
        let mut entries: Vec<_> = rd.flatten().take(MAX_ENTRIES).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            seen += 1;
            if seen > MAX_ENTRIES {
                return picks.picks.into_values().collect();
            }
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if depth < MAX_DEPTH && !name.starts_with('.') && !SKIP_DIRS.contains(&&*name) {
                    queue.push_back((e.path(), depth + 1));
                }
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let kind = match Path::new(&*name).extension() {
                Some(ext) => ext.to_string_lossy().into_owned(),
                None => name.clone().into_owned(),
            };
            if NOT_WARMED.contains(&kind.as_str()) {
                continue;
            }
            let file = e.path();
            let sources = picks.wanted(checker, root, &file, &kind);
            if sources.is_empty() {
                continue;
            }
            let Verdict::Check(path) = policy.judge(&file) else {
                continue;
            };
            picks.take(checker, root, sources, &path);
        }
    }
    picks.picks.into_values().collect()
}

/// What [`pick`]'s walk has picked so far.
#[derive(Default)]
struct Picks {
    picks: BTreeMap<(usize, String), (SourceInfo, PathBuf)>,
    /// Per-file picks that start a server a warm source stands in for elsewhere: replaced by
    /// the walk's next file of that kind that does not ([`starts_a_stand_in`]).
    provisional: std::collections::HashSet<(usize, String)>,
    /// Each folder's project (see [`project_of`]).
    projects: std::collections::HashMap<(usize, PathBuf), PathBuf>,
    /// Per warm project-wide source, the projects picked.
    warm_projects: BTreeMap<usize, std::collections::BTreeSet<PathBuf>>,
}

/// A source wanting a file: its pick's key and, for a warm project-wide one, the project.
type Wanted = (SourceInfo, String, Option<PathBuf>);

impl Picks {
    /// The sources of `file` (of `kind`) with no pick for it yet, or a provisional one.
    fn wanted(
        &mut self,
        checker: &dyn Checker,
        root: &Path,
        file: &Path,
        kind: &str,
    ) -> Vec<Wanted> {
        checker
            .sources_for(file)
            .into_iter()
            // The built-in silencing source has nothing to warm up.
            .filter(|s| s.id != crate::diagnostics::silencing::ID)
            .filter_map(|s| {
                let project = (s.project_wide && s.warm).then(|| {
                    project_of(&mut self.projects, &s, file.parent().unwrap_or(root), root)
                });
                if let Some(p) = &project {
                    let known = self.warm_projects.entry(s.id).or_default();
                    if !known.contains(p) && known.len() >= MAX_WARM_PROJECTS {
                        return None;
                    }
                }
                let key = pick_key(&s, kind, project.as_deref().unwrap_or(root));
                let id = (s.id, key);
                let open = !self.picks.contains_key(&id) || self.provisional.contains(&id);
                open.then_some((s, id.1, project))
            })
            .collect()
    }

    /// Pick `path` for `sources` (from [`Picks::wanted`]), but not in place of a provisional
    /// pick when it would start a stand-in server too.
    fn take(&mut self, checker: &dyn Checker, root: &Path, sources: Vec<Wanted>, path: &Path) {
        let mut stand_in = None;
        for (s, key, project) in sources {
            if let Some(p) = project {
                self.warm_projects.entry(s.id).or_default().insert(p);
            }
            let (id, per_file) = ((s.id, key), !s.project_wide);
            let starts =
                per_file && *stand_in.get_or_insert_with(|| starts_a_stand_in(checker, root, path));
            if self.picks.contains_key(&id) && starts {
                continue;
            }
            if starts {
                self.provisional.insert(id.clone());
            } else {
                self.provisional.remove(&id);
            }
            self.picks.insert(id, (s, path.to_owned()));
        }
    }
}

/// Whether a per-file source's check of `file` would start a language server that a warm
/// project-wide source stands in for on the files its project tracks, because that project
/// leaves `file` out (click's `docs/conf.py`, outside its pyright `include`: the lsp plugin
/// would start pyright's server beside the pyright plugin's, and its analysis would compete
/// with the first edit's checks for the session start's CPU; the edits land in `src/`, where
/// it is never started). Only in a trusted workspace, as [`crate::diagnostics::served`].
fn starts_a_stand_in(checker: &dyn Checker, root: &Path, file: &Path) -> bool {
    checker.trusted()
        && checker
            .sources_for(file)
            .into_iter()
            .filter(|s| s.project_wide && s.warm)
            .any(|s| {
                let project = project_root(file, root, &s.project_markers);
                let tracks =
                    |name: &String| openfiles_plugin_api::tracked::tracks(name, &project, file);
                !s.serves.iter().all(tracks)
            })
}

/// After the warm-up, one at a time (background work: the language servers' warm-up came
/// first): the commit's baseline runs of the project-wide sources that keep no server, so
/// that a first edit made after them needs only its own run (`base_jobs::prefetch`).
async fn prefetch_baselines(
    checker: Arc<dyn Checker>,
    root: &Path,
    store: PathBuf,
    picks: Vec<(SourceInfo, PathBuf)>,
    timeout_ms: u64,
) {
    for (source, file) in picks {
        let name = source.name.clone();
        let (c, r, s) = (checker.clone(), root.to_owned(), store.clone());
        match super::base_jobs::prefetch(c, r, s, source, file, timeout_ms).await {
            Ok(commit) => tracing::info!(root = %root.display(), source = %name, %commit,
                "the commit's baseline is ready before the session's first edit"),
            Err(e) => tracing::debug!(root = %root.display(), source = %name,
                "no baseline ahead of the first edit: {e}"),
        }
    }
}

/// One check per pick, all at once; the answers are dropped, but with `whole` a
/// project-wide source is asked about every file (`report_all`) and its answer returned.
/// Once the per-file sources' checks answered, [`Msg::ServersWarmed`] goes to `tx`.
async fn run(
    checker: Arc<dyn Checker>,
    root: &Path,
    picks: Vec<(SourceInfo, PathBuf)>,
    timeout_ms: u64,
    whole: bool,
    tx: &tokio::sync::mpsc::UnboundedSender<Msg>,
) -> (Warmed, Vec<Answer>) {
    let (wide, per_file): (Vec<_>, Vec<_>) = picks.into_iter().partition(|(s, _)| s.project_wide);
    let per_file = async {
        let done =
            futures_util::future::join_all(checks(&checker, root, per_file, timeout_ms, whole))
                .await;
        let _ = tx.send(Msg::ServersWarmed);
        done
    };
    let wide = futures_util::future::join_all(checks(&checker, root, wide, timeout_ms, whole));
    let (mut done, wide) = futures_util::future::join(per_file, wide).await;
    done.extend(wide);
    let mut out = Warmed {
        sources: Vec::new(),
        files: Vec::new(),
        failed: Vec::new(),
        seeds: Vec::new(),
    };
    let mut answers = Vec::new();
    for (name, projects, files, result) in done {
        match result {
            Ok(resp) => {
                let files = resp.files.into_iter().map(|f| (f.path, f.items)).collect();
                answers.extend(per_project(&name, &projects, files));
                out.sources.push(name);
            }
            Err(e) => out.failed.push(format!("{name}: {e}")),
        }
        for file in files {
            if !out.files.contains(&file) {
                out.files.push(file);
            }
        }
    }
    (out, answers)
}

/// A whole-project answer of `source` over `projects`, one [`Answer`] per project: each
/// file goes to the deepest of them holding it (a project's run reports only its own files).
fn per_project(
    source: &str,
    projects: &[PathBuf],
    files: Vec<(PathBuf, Vec<openfiles_plugin_api::Item>)>,
) -> Vec<Answer> {
    let mut answers: Vec<Answer> = projects
        .iter()
        .map(|p| Answer {
            source: source.to_owned(),
            project: p.clone(),
            files: Vec::new(),
        })
        .collect();
    for (path, items) in files {
        let deepest = answers
            .iter_mut()
            .filter(|a| path.starts_with(&a.project))
            .max_by_key(|a| a.project.components().count());
        if let Some(a) = deepest {
            a.files.push((path, items));
        }
    }
    answers
}

/// One warm-up check per pick — one for all the picks of a project-wide source keeping a
/// warm server (its projects analysed together) —: its source's name, the projects it
/// reports on whole (with `whole`, for a project-wide source), its files, and its answer.
fn checks(
    checker: &Arc<dyn Checker>,
    root: &Path,
    picks: Vec<(SourceInfo, PathBuf)>,
    timeout_ms: u64,
    whole: bool,
) -> Vec<impl std::future::Future<Output = WarmCheck>> {
    let mut groups: Vec<(SourceInfo, Vec<PathBuf>)> = Vec::new();
    for (source, file) in picks {
        let together = source.project_wide && source.warm;
        match groups
            .iter_mut()
            .find(|(s, _)| together && s.id == source.id)
        {
            Some((_, files)) => files.push(file),
            None => groups.push((source, vec![file])),
        }
    }
    groups
        .into_iter()
        .map(|(source, files)| {
            let report_all = whole && source.project_wide;
            let mut projects: Vec<PathBuf> = Vec::new();
            if report_all {
                for f in &files {
                    let p = project_root(f, root, &source.project_markers);
                    if !projects.contains(&p) {
                        projects.push(p);
                    }
                }
            }
            let request = CheckRequest {
                workspace: root.to_owned(),
                // A language server the project-wide source stands in for is not started.
                served: crate::diagnostics::served(&**checker, &files),
                files: files.clone(),
                report_all,
                timeout_ms,
                ..Default::default()
            };
            let fut = checker.check(source.id, request);
            async move { (source.name, projects, files, fut.await) }
        })
        .collect()
}

/// A warm-up check's source name, whole projects, files and answer.
type WarmCheck = (
    String,
    Vec<PathBuf>,
    Vec<PathBuf>,
    Result<openfiles_plugin_api::CheckResponse, crate::diagnostics::CheckError>,
);

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty workspace (kept while the first value lives) and its canonical root.
    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        (d, root)
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// Each folder looked at once gives what `project_root` gives for a file in it.
    #[test]
    fn a_folders_project_is_project_roots_answer() {
        let (_d, root) = workspace();
        let w = |rel: &str, text: &str| write(&root, rel, text);
        w("pkgs/a/pyproject.toml", "[tool.pyright]\n");
        w("pkgs/a/src/a/m.py", "");
        w("pkgs/b/pyproject.toml", "[project]\nname = \"b\"\n");
        w("pkgs/b/src/b/m.py", "");
        w("top.py", "");
        let s = crate::diagnostics::testing::project_wide(
            1,
            "pyright",
            &["pyproject.toml[tool.pyright]"],
        );
        let mut memo = std::collections::HashMap::new();
        for rel in ["pkgs/a/src/a/m.py", "pkgs/b/src/b/m.py", "top.py"] {
            let file = root.join(rel);
            let want = project_root(&file, &root, &s.project_markers);
            let got = project_of(&mut memo, &s, file.parent().unwrap(), &root);
            assert_eq!(got, want, "{rel}");
        }
        assert_eq!(
            project_of(&mut memo, &s, &root.join("pkgs/a/src/a"), &root),
            root.join("pkgs/a")
        );
        assert_eq!(
            project_of(&mut memo, &s, &root.join("pkgs/b/src"), &root),
            root
        );
    }

    /// A trusted checker with a per-file `lsp` and a warm `pyright` standing in for the
    /// `pyright` server, for `.py` files.
    struct Python;

    impl Checker for Python {
        fn sources_for(&self, path: &Path) -> Vec<SourceInfo> {
            if path.extension().is_none_or(|e| e != "py") {
                return Vec::new();
            }
            let lsp = crate::diagnostics::testing::per_file(0, "lsp");
            let mut pyright = crate::diagnostics::testing::project_wide(
                1,
                "pyright",
                &["pyproject.toml[tool.pyright]"],
            );
            pyright.warm = true;
            pyright.serves = vec!["pyright".into()];
            vec![lsp, pyright]
        }
        fn check(
            &self,
            _: crate::diagnostics::SourceId,
            _: CheckRequest,
        ) -> futures_util::future::BoxFuture<
            'static,
            Result<openfiles_plugin_api::CheckResponse, crate::diagnostics::CheckError>,
        > {
            Box::pin(async { Ok(Default::default()) })
        }
        fn trusted(&self) -> bool {
            true
        }
    }

    /// click's layout: `docs/conf.py` is the shallowest Python file, outside the pyright
    /// `include`; the lsp's warm-up takes the first file its project tracks (where the lsp
    /// plugin leaves pyright's server to the pyright plugin), pyright's still the shallowest.
    #[test]
    fn the_lsps_pick_is_a_file_the_warm_source_stands_in_for() {
        let (_d, root) = workspace();
        let w = |rel: &str, text: &str| write(&root, rel, text);
        w("pyproject.toml", "[tool.pyright]\ninclude = [\"src\"]\n");
        w("docs/conf.py", "");
        w("examples/a/a.py", "");
        w("src/pkg/m.py", "");
        let policy = Policy::new(&root, &Default::default()).unwrap();
        let picks: BTreeMap<String, PathBuf> = pick(&root, &policy, &Python)
            .into_iter()
            .map(|(s, f)| (s.name, f))
            .collect();
        assert_eq!(picks["lsp"], root.join("src/pkg/m.py"), "{picks:?}");
        assert_eq!(picks["pyright"], root.join("docs/conf.py"), "{picks:?}");

        // No file the project tracks: the shallowest, as before.
        std::fs::remove_dir_all(root.join("src")).unwrap();
        let picks = pick(&root, &policy, &Python);
        let lsp = picks.iter().find(|(s, _)| s.name == "lsp").unwrap();
        assert_eq!(lsp.1, root.join("docs/conf.py"));
    }
}
