//! Path policy: which paths of an edit reach the checkers.
//!
//! Every path from any intake (control socket, queue line, file watcher) passes here first.
//! A path is canonicalized (following symlinks and `..`), then must lie inside the workspace;
//! ignored paths (`.git`, `node_modules`, `target`, lockfiles, … plus config) are dropped;
//! sensitive files (`.env`, keys, credentials) stay in the session but are never read by a
//! checker. A file that no longer exists is a deletion: it leaves the session.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Directory names and file globs never checked.
pub const DEFAULT_IGNORE: &[&str] = &[
    "**/.git/**",
    "**/.openfiles/**",
    "**/.claws/**",
    "**/node_modules/**",
    "**/dist/**",
    "**/build/**",
    "**/out/**",
    "**/coverage/**",
    "**/.next/**",
    "**/target/**",
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

/// The compiled policy of one workspace.
#[derive(Debug, Clone)]
pub struct Policy {
    root: PathBuf,
    ignore: Arc<GlobSet>,
    sensitive: Arc<GlobSet>,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid glob {glob:?} in {setting}: {source}")]
pub struct GlobError {
    glob: String,
    setting: &'static str,
    source: globset::Error,
}

/// Compiled glob sets by (setting, extra globs): every workspace with the same settings
/// shares one (compiling a set costs about a millisecond and tens of KiB; a service with
/// 1 000 workspaces would otherwise pay that 2 000 times). Bounded: the oldest goes first.
type Compiled = Vec<(&'static str, Vec<String>, Arc<GlobSet>)>;
static COMPILED: Mutex<Compiled> = Mutex::new(Vec::new());
const COMPILED_MAX: usize = 32;

fn build(
    defaults: &[&str],
    extra: &[String],
    setting: &'static str,
) -> Result<Arc<GlobSet>, GlobError> {
    let mut cache = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, set)) = cache.iter().find(|(s, e, _)| *s == setting && e == extra) {
        return Ok(set.clone());
    }
    let set = Arc::new(compile(defaults, extra, setting)?);
    if cache.len() >= COMPILED_MAX {
        cache.remove(0);
    }
    cache.push((setting, extra.to_vec(), set.clone()));
    Ok(set)
}

fn compile(
    defaults: &[&str],
    extra: &[String],
    setting: &'static str,
) -> Result<GlobSet, GlobError> {
    let mut b = GlobSetBuilder::new();
    for g in defaults
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
    {
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
        }
    }
    b.build().map_err(|source| GlobError {
        glob: String::new(),
        setting,
        source,
    })
}

impl Policy {
    /// Compile the policy for the workspace at `root` (canonical).
    pub fn new(root: &Path, cfg: &crate::config::DiagnosticsConfig) -> Result<Policy, GlobError> {
        Ok(Policy {
            root: root.to_owned(),
            ignore: build(DEFAULT_IGNORE, &cfg.ignore, "diagnostics.ignore")?,
            sensitive: build(DEFAULT_SENSITIVE, &cfg.sensitive, "diagnostics.sensitive")?,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True when `rel` (workspace-relative) is ignored.
    pub fn is_ignored(&self, rel: &Path) -> bool {
        self.ignore.is_match(rel)
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
        if self.ignore.is_match(rel) {
            return Verdict::Skip {
                path: canon,
                reason: "ignored".into(),
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
        if self.sensitive.is_match(rel) {
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
        assert!(Arc::ptr_eq(&p.sensitive, &other.sensitive));
    }
}
