//! Which plugin libraries to try, in order: config `plugins.paths`, then
//! `OPENFILES_PLUGIN_PATH` (colon-separated files or folders), then `../lib/openfiles/plugins`
//! relative to the running executable (the Nix / packaged layout). A folder contributes
//! its shared libraries (`.so`, `.dylib` on macOS) in name order. The same file reached
//! twice is tried once. A configured or env entry that does not exist is reported (it is
//! probably a typo); the executable-relative folder is optional.
//!
//! Loading a library runs its constructors, so trust is decided before any `dlopen`
//! ([`untrusted`]): a library file, and every folder above it, must belong to us or to root
//! and must not be writable by others (a root-owned sticky folder such as `/tmp` or
//! `/nix/store` is fine). Anything else is a [`Problem`], never a candidate.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

pub use openfiles_wire::control::PluginOrigin;

/// A library file worth trying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub path: PathBuf,
    pub origin: PluginOrigin,
}

/// A search entry that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub origin: PluginOrigin,
    pub message: String,
}

/// The search path: config entries, env entries, then the executable's plugin folder.
pub fn search_path(
    config_paths: &[PathBuf],
    env: Option<&OsStr>,
    exe_dir: Option<&Path>,
) -> Vec<(PathBuf, PluginOrigin)> {
    let mut out: Vec<(PathBuf, PluginOrigin)> = config_paths
        .iter()
        .map(|p| (p.clone(), PluginOrigin::Config))
        .collect();
    if let Some(env) = env {
        out.extend(
            std::env::split_paths(env)
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| (p, PluginOrigin::Env)),
        );
    }
    if let Some(dir) = exe_dir {
        out.push((dir.to_owned(), PluginOrigin::Executable));
    }
    out
}

/// `../lib/openfiles/plugins` relative to the directory of `exe`.
pub fn exe_plugin_dir(exe: &Path) -> Option<PathBuf> {
    Some(exe.parent()?.join("../lib/openfiles/plugins"))
}

fn is_library(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == std::env::consts::DLL_EXTENSION)
}

/// Expand the search path into library files.
pub fn candidates(search: &[(PathBuf, PluginOrigin)]) -> (Vec<Candidate>, Vec<Problem>) {
    let mut seen = HashSet::new();
    let mut found = Vec::new();
    let mut problems = Vec::new();
    let mut push = |path: PathBuf,
                    origin: PluginOrigin,
                    found: &mut Vec<Candidate>,
                    problems: &mut Vec<Problem>| {
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !seen.insert(key) {
            return;
        }
        match untrusted(&path) {
            None => found.push(Candidate { path, origin }),
            Some(message) => problems.push(Problem {
                path,
                origin,
                message,
            }),
        }
    };
    for (entry, origin) in search {
        match std::fs::metadata(entry) {
            Ok(meta) if meta.is_dir() => match std::fs::read_dir(entry) {
                Ok(rd) => {
                    let mut libs: Vec<PathBuf> = rd
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| is_library(p) && p.is_file())
                        .collect();
                    libs.sort();
                    for lib in libs {
                        push(lib, *origin, &mut found, &mut problems);
                    }
                }
                Err(e) => problems.push(Problem {
                    path: entry.clone(),
                    origin: *origin,
                    message: format!("cannot list folder: {e}"),
                }),
            },
            Ok(_) => push(entry.clone(), *origin, &mut found, &mut problems),
            Err(_) if *origin == PluginOrigin::Executable => {}
            Err(e) => problems.push(Problem {
                path: entry.clone(),
                origin: *origin,
                message: format!("not found: {e}"),
            }),
        }
    }
    (found, problems)
}

/// Why a library file must not be loaded, or `None` when it may: the file (symlinks
/// resolved) and every folder above it belong to us or root and are not writable by group
/// or others, except a root-owned sticky folder.
pub fn untrusted(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let real = match std::fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) => return Some(format!("cannot resolve: {e}")),
    };
    let me = nix::unistd::getuid().as_raw();
    for (i, p) in real.ancestors().enumerate() {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) => return Some(format!("cannot inspect {}: {e}", p.display())),
        };
        let what = if i == 0 { "the library" } else { "its folder" };
        if meta.uid() != me && meta.uid() != 0 {
            return Some(format!(
                "refused: {what} {} belongs to uid {}, not to you or root",
                p.display(),
                meta.uid()
            ));
        }
        let sticky_root_dir = i > 0 && meta.uid() == 0 && meta.mode() & 0o1000 != 0;
        if meta.mode() & 0o022 != 0 && !sticky_root_dir {
            return Some(format!(
                "refused: {what} {} is writable by others (mode {:o})",
                p.display(),
                meta.mode() & 0o7777
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_give_their_libraries_in_order_and_duplicates_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let ext = std::env::consts::DLL_EXTENSION;
        let b = dir.path().join(format!("libb.{ext}"));
        let a = dir.path().join(format!("liba.{ext}"));
        std::fs::write(&b, b"").unwrap();
        std::fs::write(&a, b"").unwrap();
        std::fs::write(dir.path().join("README.md"), b"").unwrap();
        let env = std::env::join_paths([dir.path(), b.as_path()]).unwrap();
        let missing = dir.path().join("nope");
        let search = search_path(
            std::slice::from_ref(&missing),
            Some(&env),
            Some(&dir.path().join("no-exe-dir")),
        );
        let (found, problems) = candidates(&search);
        let paths: Vec<_> = found.iter().map(|c| c.path.clone()).collect();
        assert_eq!(paths, vec![a, b]);
        assert!(found.iter().all(|c| c.origin == PluginOrigin::Env));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].path, missing);
        assert_eq!(problems[0].origin, PluginOrigin::Config);
    }
}
