//! Which workspace a path belongs to, and whether a folder may become one.
//!
//! For an edited file that no registered workspace contains, the workspace is the nearest
//! ancestor holding `.openfiles/` or a VCS root (`.git`, `.hg`, `.jj`, `.svn`), else the
//! nearest project root (`Cargo.toml`, `package.json`, `pyproject.toml`, …). Inside a
//! registered workspace, a folder of its own (`.git`, `.openfiles/`: a nested repository) is
//! its own workspace ([`workspace_for`]). Such a folder
//! is still refused when it is `/`, a system or temporary folder, or the home folder
//! ([`workspace_dir`]).
//! A folder becomes a workspace only if it is a real directory owned by the service's user.
//!
//! Part of the gate because trust is decided per workspace: the service's lookup, the
//! in-process `check` and the clients (MCP, `check --fix`, `openfiles trust`) resolve a path
//! alike, so they ask the trust question of one root.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ResolveError {
    #[error("{0}: no such directory")]
    Missing(PathBuf),
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("{path} is owned by uid {owner}, not by this service's user (uid {me}); refusing to serve it")]
    NotOwned { path: PathBuf, owner: u32, me: u32 },
    #[error("{0} is not inside a registered workspace, a folder with .openfiles/, a version-controlled checkout or a project")]
    NoWorkspace(PathBuf),
    #[error("{0} is a system folder; refusing to serve it (watching it would cover files that are not a project)")]
    SystemFolder(PathBuf),
    #[error("{0} is your home folder; serving it watches everything you own. Add a project folder instead, or pass --force")]
    Home(PathBuf),
}

/// Markers of a folder that is a workspace of its own: openfiles' folder and the VCS roots.
pub const OWN_ROOT_MARKERS: &[&str] = &[".openfiles", ".git", ".hg", ".jj", ".svn"];

/// Whether `dir` is a workspace of its own: it holds `.openfiles/` or a VCS root (`.git`,
/// `.hg`, `.jj`, `.svn`).
pub fn is_own_root(dir: &Path) -> bool {
    dir.join(OWN_ROOT_MARKERS[0]).is_dir()
        || OWN_ROOT_MARKERS[1..].iter().any(|m| dir.join(m).exists())
}

/// The nearest folder strictly below `root` that holds `path` (or is it, for a folder) and
/// is a workspace of its own ([`is_own_root`]): a repository nested in the workspace, which
/// is its own workspace with its own trust. `None` when the path belongs to `root` itself.
pub fn nested_root(root: &Path, path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix(root).ok()?;
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut at = root.to_path_buf();
    let mut parts = rel.components().peekable();
    while let Some(c) = parts.next() {
        at.push(c);
        // The last component is the file itself unless it is a folder.
        if parts.peek().is_none() && !at.is_dir() {
            break;
        }
        dirs.push(at.clone());
    }
    dirs.into_iter().rev().find(|d| is_own_root(d))
}

/// Folders never served: the root, the system's own trees and the shared temporary folders.
const SYSTEM_FOLDERS: &[&str] = &[
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
    "/var/tmp",
    "/home",
    "/Users",
    "/private",
    "/private/tmp",
    "/private/var",
    "/System",
    "/Library",
    "/Applications",
    "/Volumes",
    "/nix",
    "/nix/store",
];

/// Whether `dir` (canonical) is a folder never served.
pub fn is_system_folder(dir: &Path) -> bool {
    if SYSTEM_FOLDERS.iter().any(|f| dir == Path::new(f)) {
        return true;
    }
    let tmp = std::env::temp_dir();
    dir == tmp || tmp.canonicalize().is_ok_and(|t| t == dir)
}

/// Whether `dir` (canonical) is the user's home folder.
pub fn is_home(dir: &Path) -> bool {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .and_then(|h| h.canonicalize().ok())
        .is_some_and(|h| h == dir)
}

const PROJECT_MARKERS: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "go.mod",
    "tsconfig.json",
    "CMakeLists.txt",
    "compile_commands.json",
];

/// Canonicalize `dir` and check it may be served: never `/`, a system folder or a shared
/// temporary folder; the home folder only with `allow_home` (an explicit `add --force`, or
/// named on the command line or in the config).
pub fn workspace_dir(dir: &Path, allow_home: bool) -> Result<PathBuf, ResolveError> {
    let canon = dir
        .canonicalize()
        .map_err(|_| ResolveError::Missing(dir.to_owned()))?;
    if is_system_folder(&canon) {
        return Err(ResolveError::SystemFolder(canon));
    }
    if !allow_home && is_home(&canon) {
        return Err(ResolveError::Home(canon));
    }
    let meta = std::fs::metadata(&canon).map_err(|_| ResolveError::Missing(canon.clone()))?;
    if !meta.is_dir() {
        return Err(ResolveError::NotADirectory(canon));
    }
    // SAFETY: getuid has no failure mode.
    let me = unsafe { libc::getuid() };
    if meta.uid() != me {
        return Err(ResolveError::NotOwned {
            path: canon,
            owner: meta.uid(),
            me,
        });
    }
    Ok(canon)
}

/// The workspace root for `path` (absolute) when no registered workspace contains it.
pub fn root_for(path: &Path) -> Result<PathBuf, ResolveError> {
    let start = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(path)
    };
    let ancestors = || start.ancestors().filter(|a| a.parent().is_some());
    // The nearest folder with `.openfiles/` or a VCS root: a stray `.openfiles/` in a distant
    // parent (the temporary folder, home) never swallows a project's own checkout.
    if let Some(dir) = ancestors().find(|a| is_own_root(a)) {
        return Ok(dir.to_owned());
    }
    if let Some(dir) = ancestors().find(|a| PROJECT_MARKERS.iter().any(|m| a.join(m).exists())) {
        return Ok(dir.to_owned());
    }
    Err(ResolveError::NoWorkspace(path.to_owned()))
}

/// The workspace `path` (absolute, its folder canonical) belongs to, given the registered
/// `roots`: the deepest registered root that contains it — unless a folder between that root
/// and the path is a workspace of its own (a nested repository: `.git` or `.openfiles/`),
/// which is then the workspace, with its own trust —, else [`root_for`]. The service's lookup
/// and the in-process `check` resolve alike, so they ask the trust question of one root.
pub fn workspace_for<'a>(
    roots: impl Iterator<Item = &'a PathBuf>,
    path: &Path,
) -> Result<PathBuf, ResolveError> {
    match containing(roots, path) {
        Some(root) => Ok(nested_root(&root, path).unwrap_or(root)),
        None => root_for(path),
    }
}

/// The deepest of `roots` that contains `path`.
pub fn containing<'a>(roots: impl Iterator<Item = &'a PathBuf>, path: &Path) -> Option<PathBuf> {
    roots
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.components().count())
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_folders_are_never_workspaces_and_home_needs_force() {
        for d in ["/", "/etc", "/tmp", "/usr"] {
            assert!(
                matches!(
                    workspace_dir(Path::new(d), true),
                    Err(ResolveError::SystemFolder(_))
                ),
                "{d}"
            );
        }
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            if home.is_dir() && !is_system_folder(&home.canonicalize().unwrap()) {
                assert!(matches!(
                    workspace_dir(&home, false),
                    Err(ResolveError::Home(_))
                ));
            }
        }
    }

    #[test]
    fn nearest_openfiles_dir_wins_over_vcs_root() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub/.openfiles")).unwrap();
        std::fs::create_dir_all(root.join("sub/src")).unwrap();
        assert_eq!(
            root_for(&root.join("sub/src/a.rs")).unwrap(),
            root.join("sub")
        );
        std::fs::create_dir_all(root.join("other")).unwrap();
        assert_eq!(root_for(&root.join("other/b.rs")).unwrap(), root);
    }

    /// A stray `.openfiles/` in a parent (the temporary folder) made every project created
    /// below it resolve to that parent; the project's own VCS root wins now.
    #[test]
    fn a_projects_own_vcs_root_wins_over_a_distant_openfiles_dir() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".openfiles")).unwrap();
        std::fs::create_dir_all(root.join("proj/.git")).unwrap();
        std::fs::create_dir_all(root.join("proj/src")).unwrap();
        assert_eq!(
            root_for(&root.join("proj/src/a.rs")).unwrap(),
            root.join("proj")
        );
    }

    /// A repository cloned inside a registered (trusted) workspace is its own workspace:
    /// the service's lookup and the in-process `check` both resolve its files to it.
    #[test]
    fn a_repository_nested_in_a_registered_workspace_is_its_own() {
        let t = tempfile::tempdir().unwrap();
        let outer = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(outer.join(".git")).unwrap();
        std::fs::create_dir_all(outer.join("vendor/lib/.git")).unwrap();
        std::fs::create_dir_all(outer.join("vendor/lib/src")).unwrap();
        std::fs::create_dir_all(outer.join("src")).unwrap();
        let roots = [outer.clone()];
        let nested = outer.join("vendor/lib");
        assert_eq!(
            workspace_for(roots.iter(), &nested.join("src/a.py")).unwrap(),
            nested
        );
        assert_eq!(workspace_for(roots.iter(), &nested).unwrap(), nested);
        assert_eq!(
            workspace_for(roots.iter(), &outer.join("src/a.py")).unwrap(),
            outer
        );
    }

    #[test]
    fn deepest_registered_root_contains_path() {
        let roots = [PathBuf::from("/w"), PathBuf::from("/w/inner")];
        assert_eq!(
            containing(roots.iter(), Path::new("/w/inner/x.rs")),
            Some(PathBuf::from("/w/inner"))
        );
        assert_eq!(containing(roots.iter(), Path::new("/elsewhere")), None);
    }
}
