//! Path policy: which paths of an edit reach the checkers.
//!
//! Every path from any intake (control socket, queue line, file watcher) passes here first.
//! A path is canonicalized (following symlinks and `..`), then must lie inside the workspace;
//! ignored paths are dropped; sensitive files (`.env`, keys, credentials) stay in the session
//! but are never read by a checker. A file that no longer exists is a deletion: it leaves the
//! session.
//!
//! What is ignored, in this order (the first that speaks decides):
//!
//! 1. [`NEVER`]: openfiles's and git's own folders (`.git`, `.openfiles`, `.claws`), never
//!    checked whatever any rule says;
//! 2. the user's `diagnostics.ignore` globs (globset syntax against workspace-relative
//!    paths); one starting with `!` is an exception: what it matches is checked whatever
//!    the rules below say;
//! 3. [`DEFAULT_IGNORE`]: folders that are always generated (`node_modules`, `__pycache__`,
//!    virtual environments), lockfiles, logs and the agents' own configuration;
//! 4. what git ignores (`git.rs`: the `.gitignore` files, `info/exclude`), unless git tracks
//!    the file; outside a git repository, [`GENERATED`] (`build/`, `dist/`, `out/`,
//!    `target/`, …) stands in for the `.gitignore` a repository would have. In a repository
//!    those folder names mean nothing by themselves: a tracked `internal/build/` Go package
//!    or a `src/build/` Rust module is checked.
//!
//! A path not checked because of a rule gets a notice naming the rule and how to change it,
//! once per file for the life of the policy ([`Policy::tell_once`]); the hook shows it.

mod git;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use globset::{Glob, GlobSet, GlobSetBuilder};

pub use git::GitRule;

/// Never checked: openfiles's own folders and git's.
pub const NEVER: &[&str] = &["**/.git/**", "**/.openfiles/**", "**/.claws/**"];

/// Directory names and file globs never checked (unless a `!` glob of
/// `diagnostics.ignore` says otherwise).
pub const DEFAULT_IGNORE: &[&str] = &[
    "**/node_modules/**",
    "**/__pycache__/**",
    "**/.venv/**",
    "**/*.log",
    "**/package-lock.json",
    "**/yarn.lock",
    "**/pnpm-lock.yaml",
    "**/bun.lockb",
    "**/Cargo.lock",
    "**/poetry.lock",
    "**/uv.lock",
    "**/Gemfile.lock",
    "**/composer.lock",
    "**/go.sum",
    // Agents' and openfiles's own configuration: written by `hooks install`, or rewritten by
    // the agent itself (Qwen Code keeps a `.orig` copy), never an edit to review.
    "**/.claude/settings*.json",
    "**/.mcp.json",
    "**/.codex/config.toml",
    "**/.codex/hooks.json",
    "**/.gemini/settings.json",
    "**/.qwen/settings.json*",
    "**/opencode.json",
    "**/opencode.jsonc",
    "**/.opencode/.gitignore",
    "**/.opencode/package.json",
    "**/.opencode/bun.lock",
    "**/.opencode/plugins/openfiles.js",
    "**/.cursor/hooks.json",
    "**/.cursor/mcp.json",
    "**/.windsurf/hooks.json",
    "**/.github/hooks/openfiles.json",
    "**/.vscode/mcp.json",
];

/// Build output folders, ignored outside a git repository (inside one, its `.gitignore`
/// says what is generated).
pub const GENERATED: &[&str] = &[
    "**/dist/**",
    "**/build/**",
    "**/out/**",
    "**/coverage/**",
    "**/.next/**",
    "**/target/**",
];

/// Files whose notice a policy remembers giving.
const TOLD_MAX: usize = 10_000;

/// How a notice about a path not checked begins (the hook shows reasons that do: the wire's
/// `Rejected::is_notice`).
pub const NOT_CHECKED: &str = openfiles_wire::control::Rejected::NOTICE;

/// Whether a rejection's reason is a notice for the agent (see [`Policy::tell_once`]).
pub fn is_notice(reason: &str) -> bool {
    reason.starts_with(NOT_CHECKED)
}

/// Files that may hold secrets: in the session, never read by a checker.
pub const DEFAULT_SENSITIVE: &[&str] = &[
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "**/*.pfx",
    "**/*.p12",
    "**/credentials.*",
    "**/secrets/**",
];

/// Markers of a folder that is a workspace of its own, and the folders between a root and a
/// path that are: the gate's rule, one for the policy and the workspace lookup.
pub use openfiles_gate::resolve::{is_own_root, nested_root, OWN_ROOT_MARKERS};

/// What to do with one edited path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Check it.
    Check(PathBuf),
    /// Keep it in the session with an explanatory item; never read it.
    Sensitive(PathBuf),
    /// It no longer exists: drop it from the session.
    Deleted(PathBuf),
    /// Not ours to check (ignored, a directory, …); the reason is for logs and replies.
    Skip { path: PathBuf, reason: String },
    /// Outside the workspace (directly, through `..` or a symlink): refused and logged.
    Outside { path: PathBuf, reason: String },
}

/// Why a path is ignored: the rule, and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Openfiles's or git's own folder ([`NEVER`]).
    Never(&'static str),
    /// A glob of the user's `diagnostics.ignore`.
    Config(String),
    /// A built-in glob ([`DEFAULT_IGNORE`]).
    Default(&'static str),
    /// A build-output folder outside a git repository ([`GENERATED`]).
    Generated(&'static str),
    /// A line of a `.gitignore` or `info/exclude`, for a file git does not track.
    Git(GitRule),
}

impl Rule {
    /// The notice for the agent: which rule, and how to change it.
    pub fn notice(&self, rel: &Path) -> String {
        let rel = rel.display();
        let exception = format!(
            "add \"!{rel}\" to `ignore` under `[diagnostics]` in the openfiles config to check it"
        );
        match self {
            Rule::Never(glob) => format!(
                "{NOT_CHECKED}{rel} is ignored by `{glob}`: openfiles never checks that folder"
            ),
            Rule::Config(glob) => format!(
                "{NOT_CHECKED}{rel} is ignored by `{glob}` in `diagnostics.ignore` (remove it from `ignore` under `[diagnostics]` in the openfiles config to check such files)"
            ),
            Rule::Default(glob) => format!(
                "{NOT_CHECKED}{rel} is ignored by the built-in rule `{glob}` ({exception})"
            ),
            Rule::Generated(glob) => format!(
                "{NOT_CHECKED}{rel} is ignored by the built-in rule `{glob}` for build output outside a git repository ({exception}, or give the workspace a git repository: its .gitignore then decides)"
            ),
            Rule::Git(r) => format!(
                "{NOT_CHECKED}{rel} is ignored by git (`{}` in {}) and not tracked ({exception}, or `git add` it)",
                r.line,
                r.file.display()
            ),
        }
    }
}

/// A compiled glob set, and for each glob in it the pattern it came from.
#[derive(Debug)]
struct Rules {
    set: GlobSet,
    /// By glob index: the pattern as written.
    names: Vec<String>,
}

impl Rules {
    /// The first pattern that matches `rel`.
    fn first_match(&self, rel: &Path) -> Option<&str> {
        let hits = self.set.matches(rel);
        hits.first().map(|&i| self.names[i].as_str())
    }
}

/// The compiled policy of one workspace.
#[derive(Debug, Clone)]
pub struct Policy {
    root: PathBuf,
    never: Arc<Rules>,
    /// The user's `diagnostics.ignore` globs (`!` ones aside).
    ignore: Arc<Rules>,
    /// The user's `!` globs: checked whatever the rules below them say.
    exceptions: Arc<Rules>,
    defaults: Arc<Rules>,
    generated: Arc<Rules>,
    sensitive: Arc<Rules>,
    git: Arc<git::GitRules>,
    /// Files whose notice was given.
    told: Arc<Mutex<HashSet<PathBuf>>>,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid glob {glob:?} in {setting}: {source}")]
pub struct GlobError {
    glob: String,
    setting: &'static str,
    source: globset::Error,
}

/// Compiled glob sets by (setting, globs): every workspace with the same settings shares one
/// (compiling a set costs about a millisecond and tens of KiB; a service with 1 000
/// workspaces would otherwise pay that 2 000 times). Bounded: the oldest goes first.
type Compiled = Vec<(&'static str, Vec<String>, Arc<Rules>)>;
static COMPILED: Mutex<Compiled> = Mutex::new(Vec::new());
const COMPILED_MAX: usize = 32;

fn build(globs: Vec<String>, setting: &'static str) -> Result<Arc<Rules>, GlobError> {
    let mut cache = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, set)) = cache.iter().find(|(s, e, _)| *s == setting && *e == globs) {
        return Ok(set.clone());
    }
    let set = Arc::new(compile(&globs, setting)?);
    if cache.len() >= COMPILED_MAX {
        cache.remove(0);
    }
    cache.push((setting, globs, set.clone()));
    Ok(set)
}

fn compile(globs: &[String], setting: &'static str) -> Result<Rules, GlobError> {
    let mut b = GlobSetBuilder::new();
    let mut names = Vec::new();
    for g in globs {
        // A bare pattern like `*.tmp` or `generated` matches at any depth; a folder pattern
        // (`**/node_modules/**`) also matches the folder itself, so a watcher skips it.
        let pattern = if g.contains('/') {
            g.to_owned()
        } else {
            format!("**/{g}")
        };
        let folder = pattern.trim_end_matches("/**");
        for p in [pattern.clone(), folder.to_owned(), format!("{folder}/**")] {
            let glob = Glob::new(&p).map_err(|source| GlobError {
                glob: g.to_owned(),
                setting,
                source,
            })?;
            b.add(glob);
            names.push(g.clone());
        }
    }
    let set = b.build().map_err(|source| GlobError {
        glob: String::new(),
        setting,
        source,
    })?;
    Ok(Rules { set, names })
}

fn owned(globs: &[&str]) -> Vec<String> {
    globs.iter().map(|g| (*g).to_owned()).collect()
}

/// The `&'static str` of a built-in list that equals `name`.
fn builtin(list: &'static [&'static str], name: &str) -> &'static str {
    list.iter().copied().find(|g| *g == name).unwrap_or("")
}

impl Policy {
    /// Compile the policy for the workspace at `root` (canonical). Looks for the git
    /// repository holding it (a few `stat`s; its ignore files are read when first needed).
    pub fn new(root: &Path, cfg: &crate::config::DiagnosticsConfig) -> Result<Policy, GlobError> {
        let (exceptions, ignore): (Vec<String>, Vec<String>) =
            cfg.ignore.iter().cloned().partition(|g| g.starts_with('!'));
        let exceptions = exceptions.into_iter().map(|g| g[1..].to_owned()).collect();
        let mut sensitive = owned(DEFAULT_SENSITIVE);
        sensitive.extend(cfg.sensitive.iter().cloned());
        Ok(Policy {
            root: root.to_owned(),
            never: build(owned(NEVER), "never")?,
            ignore: build(ignore, "diagnostics.ignore")?,
            exceptions: build(exceptions, "diagnostics.ignore")?,
            defaults: build(owned(DEFAULT_IGNORE), "default")?,
            generated: build(owned(GENERATED), "generated")?,
            sensitive: build(sensitive, "diagnostics.sensitive")?,
            git: Arc::new(git::GitRules::new(root)),
            told: Arc::default(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The rule that ignores the entry `rel` (workspace-relative) itself, the folders above it
    /// taken as not ignored (a walk from the root asks about them on its way down).
    pub fn ignoring_entry(&self, rel: &Path, is_dir: bool) -> Option<Rule> {
        self.ignoring_one(rel, is_dir, false)
    }

    /// [`Policy::ignoring_entry`]; `excepted`: a `!` glob matched the path this entry
    /// holds (only [`NEVER`] and the user's own globs still apply).
    fn ignoring_one(&self, rel: &Path, is_dir: bool, excepted: bool) -> Option<Rule> {
        if let Some(g) = self.never.first_match(rel) {
            return Some(Rule::Never(builtin(NEVER, g)));
        }
        if let Some(g) = self.ignore.first_match(rel) {
            return Some(Rule::Config(g.to_owned()));
        }
        if excepted || self.exceptions.set.is_match(rel) {
            return None;
        }
        if let Some(g) = self.defaults.first_match(rel) {
            return Some(Rule::Default(builtin(DEFAULT_IGNORE, g)));
        }
        if !self.git.in_repository() {
            if let Some(g) = self.generated.first_match(rel) {
                return Some(Rule::Generated(builtin(GENERATED, g)));
            }
        }
        let rule = self.git.ignores(rel, is_dir)?;
        // A file git tracks is checked; a folder holding tracked files is not looked into
        // for them (a walk skips it; an edit inside it is judged on its own).
        if !is_dir && self.git.tracked(rel) {
            return None;
        }
        Some(Rule::Git(rule))
    }

    /// [`Policy::ignoring_entry`] as a yes or no.
    pub fn is_ignored_entry(&self, rel: &Path, is_dir: bool) -> bool {
        self.ignoring_entry(rel, is_dir).is_some()
    }

    /// The rule that ignores `rel` (workspace-relative; an existing folder is taken as one),
    /// the folders above it included.
    pub fn ignoring(&self, rel: &Path) -> Option<Rule> {
        let excepted = self.exceptions.set.is_match(rel);
        let mut at = PathBuf::new();
        let mut parts = rel.components().peekable();
        while let Some(c) = parts.next() {
            at.push(c);
            let last = parts.peek().is_none();
            let is_dir = !last || self.root.join(&at).is_dir();
            // A file git tracks is checked even inside an ignored folder.
            if let Some(rule) = self.ignoring_one(&at, is_dir, excepted) {
                let tracked_file = !last
                    && matches!(rule, Rule::Git(_))
                    && !self.root.join(rel).is_dir()
                    && self.git.tracked(rel);
                if tracked_file {
                    return None;
                }
                return Some(rule);
            }
        }
        None
    }

    /// True when `rel` (workspace-relative) is ignored.
    pub fn is_ignored(&self, rel: &Path) -> bool {
        self.ignoring(rel).is_some()
    }

    /// The reason to give for a path not checked: a notice ([`is_notice`]) the first time
    /// for `path`, the rule alone after that (the agent heard it once).
    pub fn tell_once(&self, path: &Path, reason: String) -> String {
        let Some(rest) = reason.strip_prefix(NOT_CHECKED) else {
            return reason;
        };
        let mut told = self.told.lock().unwrap_or_else(|e| e.into_inner());
        // Bounded: past that many files, notices start over.
        if told.len() >= TOLD_MAX {
            told.clear();
        }
        if told.insert(path.to_owned()) {
            return reason;
        }
        format!("ignored: {rest}")
    }

    /// Judge one edited path. Relative paths are taken relative to the workspace root.
    pub fn judge(&self, path: &Path) -> Verdict {
        let abs = if path.is_absolute() {
            path.to_owned()
        } else {
            self.root.join(path)
        };
        let lexical = normalize(&abs);
        let canon = match abs.canonicalize() {
            Ok(c) => c,
            Err(_) => {
                // Gone (or never existed): a deletion if it was ours, else nothing to do.
                return if lexical.starts_with(&self.root) {
                    Verdict::Deleted(lexical)
                } else {
                    Verdict::Outside {
                        path: abs,
                        reason: "outside the workspace".into(),
                    }
                };
            }
        };
        let Ok(rel) = canon.strip_prefix(&self.root) else {
            let reason = if lexical.starts_with(&self.root) {
                format!(
                    "resolves through a symlink to {}, outside the workspace",
                    canon.display()
                )
            } else {
                "outside the workspace".into()
            };
            return Verdict::Outside { path: abs, reason };
        };
        if rel.as_os_str().is_empty() || canon.is_dir() {
            return Verdict::Skip {
                path: canon,
                reason: "a directory".into(),
            };
        }
        if let Some(rule) = self.ignoring(rel) {
            return Verdict::Skip {
                reason: rule.notice(rel),
                path: canon,
            };
        }
        if let Some(nested) = nested_root(&self.root, &canon) {
            return Verdict::Skip {
                reason: format!(
                    "inside {}, a repository of its own: its own workspace, with its own trust",
                    nested.display()
                ),
                path: canon,
            };
        }
        if self.sensitive.set.is_match(rel) {
            return Verdict::Sensitive(canon);
        }
        Verdict::Check(canon)
    }
}

/// Resolve `.` and `..` lexically (no filesystem access).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Whether a session file may be handed to a checker now, at dispatch (the path was
/// confined when the edit arrived, but the file may have been swapped since): it must
/// still be a regular file, not a symlink, and at most `max_bytes` long. `Err` says why
/// not, for the explanatory item.
pub fn checkable(path: &Path, max_bytes: u64) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        // Deleted meanwhile: the checkers report that themselves.
        Err(_) => return Ok(()),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err("the file was replaced by a symlink after it was reported".into());
    }
    if !ft.is_file() {
        return Err("not a regular file (a FIFO, socket, device or folder)".into());
    }
    if meta.len() > max_bytes {
        return Err(format!(
            "the file is {} bytes, over diagnostics.max_file_bytes ({max_bytes})",
            meta.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, Policy) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        let root = root.canonicalize().unwrap();
        let p = Policy::new(&root, &Default::default()).unwrap();
        (t, root, p)
    }

    #[test]
    fn plain_file_is_checked() {
        let (_t, root, p) = setup();
        std::fs::write(root.join("src/a.rs"), "").unwrap();
        assert_eq!(
            p.judge(&root.join("src/a.rs")),
            Verdict::Check(root.join("src/a.rs"))
        );
        assert_eq!(
            p.judge(Path::new("src/a.rs")),
            Verdict::Check(root.join("src/a.rs"))
        );
    }

    #[test]
    fn escapes_are_refused() {
        let (t, root, p) = setup();
        std::fs::write(t.path().join("secret"), "").unwrap();
        assert!(matches!(
            p.judge(&root.join("../secret")),
            Verdict::Outside { .. }
        ));
        std::os::unix::fs::symlink(t.path().join("secret"), root.join("src/link")).unwrap();
        let v = p.judge(&root.join("src/link"));
        assert!(
            matches!(&v, Verdict::Outside { reason, .. } if reason.contains("symlink")),
            "{v:?}"
        );
        assert!(matches!(
            p.judge(Path::new("/etc/passwd")),
            Verdict::Outside { .. }
        ));
    }

    #[test]
    fn ignored_sensitive_and_deleted() {
        let (_t, root, p) = setup();
        for f in [
            "node_modules/x/i.js",
            "target/debug/a.rs",
            "Cargo.lock",
            "x.log",
            ".claude/settings.local.json",
            ".mcp.json",
            ".codex/hooks.json",
            ".gemini/settings.json",
            ".qwen/settings.json",
            ".qwen/settings.json.orig",
            "opencode.json",
            ".opencode/.gitignore",
            ".opencode/plugins/openfiles.js",
        ] {
            let path = root.join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
            assert!(matches!(p.judge(&path), Verdict::Skip { .. }), "{f}");
        }
        for f in [
            ".env",
            ".env.local",
            "k.pem",
            "credentials.json",
            "secrets/a.txt",
        ] {
            let path = root.join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
            assert_eq!(p.judge(&path), Verdict::Sensitive(path.clone()), "{f}");
        }
        assert_eq!(
            p.judge(&root.join("gone.rs")),
            Verdict::Deleted(root.join("gone.rs"))
        );
    }

    #[test]
    fn config_adds_globs() {
        let (_t, root, _) = setup();
        let cfg = crate::config::DiagnosticsConfig {
            ignore: vec!["generated".into()],
            sensitive: vec!["*.secret".into()],
            ..Default::default()
        };
        let p = Policy::new(&root, &cfg).unwrap();
        std::fs::create_dir_all(root.join("generated")).unwrap();
        std::fs::write(root.join("generated/g.rs"), "").unwrap();
        std::fs::write(root.join("a.secret"), "").unwrap();
        assert!(matches!(
            p.judge(&root.join("generated/g.rs")),
            Verdict::Skip { .. }
        ));
        assert!(matches!(
            p.judge(&root.join("a.secret")),
            Verdict::Sensitive(_)
        ));
    }

    #[test]
    fn ignored_trees_ignore_their_folder_and_workspaces_share_compiled_sets() {
        let (_t, root, p) = setup();
        assert!(p.is_ignored(Path::new(".claws")));
        assert!(p.is_ignored(Path::new(".openfiles")));
        assert!(p.is_ignored(Path::new("web/node_modules")));
        assert!(!p.is_ignored(Path::new("src")));
        let other = Policy::new(&root, &Default::default()).unwrap();
        assert!(Arc::ptr_eq(&p.ignore, &other.ignore));
        assert!(Arc::ptr_eq(&p.defaults, &other.defaults));
        assert!(Arc::ptr_eq(&p.sensitive, &other.sensitive));
    }

    fn git(dir: &Path, args: &[&str]) {
        let ok = crate::gitcmd::command(dir, args)
            .unwrap()
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    fn write(root: &Path, rel: &str) -> PathBuf {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "x").unwrap();
        p
    }

    /// In a real repository, folder names mean nothing by themselves: git's rules decide
    /// (nested `.gitignore`s, `!` lines, `info/exclude`), and what git tracks is checked
    /// even when a rule ignores it, whatever the index version.
    #[test]
    fn in_a_repository_git_decides_and_what_it_tracks_is_checked() {
        for version in ["2", "4"] {
            let (_t, root, _) = setup();
            git(&root, &["init", "-q"]);
            std::fs::write(root.join(".gitignore"), "gen/\n*.tmp\n").unwrap();
            std::fs::write(root.join("src/.gitignore"), "!keep.tmp\nlocal/\n").unwrap();
            std::fs::write(root.join(".git/info/exclude"), "scratch.rs\n").unwrap();
            let tracked = [
                write(&root, "internal/build/b.go"),
                write(&root, "out/o.rs"),
                write(&root, "gen/forced.rs"),
            ];
            git(&root, &["add", "internal", "out"]);
            git(&root, &["add", "-f", "gen/forced.rs"]);
            git(&root, &["update-index", "--index-version", version]);
            let p = Policy::new(&root, &Default::default()).unwrap();
            for f in &tracked {
                assert_eq!(p.judge(f), Verdict::Check(f.clone()), "v{version} {f:?}");
            }
            // Untracked, and no rule of git's: checked (an agent's new module).
            let new = write(&root, "src/build/mod.rs");
            assert_eq!(p.judge(&new), Verdict::Check(new.clone()));
            let kept = write(&root, "src/keep.tmp");
            assert_eq!(p.judge(&kept), Verdict::Check(kept.clone()));
            for (f, line, file) in [
                ("gen/g.rs", "gen/", ".gitignore"),
                ("a.tmp", "*.tmp", ".gitignore"),
                ("src/local/l.rs", "local/", "src/.gitignore"),
            ] {
                let path = write(&root, f);
                match p.judge(&path) {
                    Verdict::Skip { reason, .. } => {
                        assert!(is_notice(&reason), "{reason}");
                        assert!(reason.contains(&format!("`{line}` in {file}")), "{reason}");
                        assert!(reason.contains("diagnostics"), "{reason}");
                    }
                    v => panic!("v{version} {f}: {v:?}"),
                }
            }
            let scratch = write(&root, "scratch.rs");
            assert!(matches!(
                p.ignoring(Path::new("scratch.rs")),
                Some(Rule::Git(GitRule { line, .. })) if line == "scratch.rs"
            ));
            assert!(matches!(p.judge(&scratch), Verdict::Skip { .. }));
            // Folders: a walk skips the ignored one, keeps one that only its name marks.
            assert!(p.is_ignored_entry(Path::new("gen"), true));
            assert!(!p.is_ignored_entry(Path::new("internal/build"), true));
            assert!(p.is_ignored(Path::new(".git/config")));
            assert!(p.is_ignored(Path::new("web/node_modules/x.js")));
        }
    }

    /// Outside a repository build-output folders stand for the `.gitignore` there is not;
    /// a `!` glob of the config checks a file any built-in rule drops, and the notice comes
    /// once per file.
    #[test]
    fn outside_a_repository_build_folders_are_output_and_the_config_can_say_otherwise() {
        let (_t, root, p) = setup();
        let out = write(&root, "build/gen.rs");
        let Verdict::Skip { reason, .. } = p.judge(&out) else {
            panic!("build/ outside git is output");
        };
        assert!(reason.contains("`**/build/**`"), "{reason}");
        assert!(reason.contains("\"!build/gen.rs\""), "{reason}");
        let first = p.tell_once(&out, reason.clone());
        assert!(is_notice(&first));
        let again = p.tell_once(&out, reason);
        assert!(
            !is_notice(&again) && again.starts_with("ignored: "),
            "{again}"
        );
        assert_eq!(p.tell_once(&out, "a directory".into()), "a directory");

        let cfg = crate::config::DiagnosticsConfig {
            ignore: vec![
                "!build/gen.rs".into(),
                "!node_modules/**".into(),
                "!.git/**".into(),
            ],
            ..Default::default()
        };
        let p = Policy::new(&root, &cfg).unwrap();
        assert_eq!(p.judge(&out), Verdict::Check(out.clone()));
        let dep = write(&root, "node_modules/x/i.js");
        assert_eq!(p.judge(&dep), Verdict::Check(dep.clone()));
        let other = write(&root, "build/other.rs");
        assert!(matches!(p.judge(&other), Verdict::Skip { .. }));
        // Never: openfiles's and git's own folders.
        let git = write(&root, ".git/config");
        assert!(matches!(p.judge(&git), Verdict::Skip { .. }));
    }
}
