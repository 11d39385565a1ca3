//! Which plugin libraries to try, in order: config `plugins.paths`, then
//! `OPENFILES_PLUGIN_PATH` (colon-separated files or folders), then `../lib/openfiles/plugins`
//! relative to the running executable (the Nix / packaged layout). A file entry is tried
//! whatever its name. A folder contributes, in name order, the libraries named by the one
//! rule, `libopenfiles_plugin_<name>.so` (`.dylib` on macOS; [`library_name`]), plus the
//! names plugins had before the rule ([`LEGACY_STEMS`]: `libopenfiles_tsc`,
//! `libopenfiles_cargo_check`) so existing installs keep working; when a folder holds both
//! names of one plugin only the new one is tried. Any other file in a folder is ignored. The
//! same file reached twice is tried once. A configured or env entry that does not exist is
//! reported (it is probably a typo); the executable-relative folder is optional.
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

/// The naming rule for plugin libraries: `{DLL_PREFIX}openfiles_plugin_<name>.{DLL_EXTENSION}`,
/// i.e. `libopenfiles_plugin_<name>.so` (`.dylib` on macOS), which is what cargo makes of
/// `[lib] name = "openfiles_plugin_<name>"`.
pub const RULE_STEM_PREFIX: &str = "openfiles_plugin_";

/// File stems (without `lib` and the extension) the shipped plugins had before the rule,
/// with the `<name>` each has under it. Still loaded from folders; the new name wins.
pub const LEGACY_STEMS: &[(&str, &str)] = &[
    ("openfiles_tsc", "tsc"),
    ("openfiles_cargo_check", "cargo_check"),
];

/// A library file name that a folder scan accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryName {
    /// `<name>` in `libopenfiles_plugin_<name>.so` (for a legacy name: the one it has now).
    pub name: String,
    /// Named the way the plugin was before the rule ([`LEGACY_STEMS`]).
    pub legacy: bool,
}

/// Which plugin library `path` is by its file name, or `None` when a folder scan skips it
/// (see [`RULE_STEM_PREFIX`] and [`LEGACY_STEMS`]).
pub fn library_name(path: &Path) -> Option<LibraryName> {
    let stem = path
        .file_name()?
        .to_str()?
        .strip_prefix(std::env::consts::DLL_PREFIX)?
        .strip_suffix(std::env::consts::DLL_EXTENSION)?
        .strip_suffix('.')?;
    if let Some(name) = stem.strip_prefix(RULE_STEM_PREFIX) {
        return (!name.is_empty()).then(|| LibraryName {
            name: name.to_owned(),
            legacy: false,
        });
    }
    LEGACY_STEMS
        .iter()
        .find(|(old, _)| *old == stem)
        .map(|(_, name)| LibraryName {
            name: (*name).to_owned(),
            legacy: true,
        })
}

/// The plugin libraries of a folder's entries, in name order: files named by the rule, and
/// legacy-named files whose plugin has no file named by the rule among them.
fn folder_libraries(entries: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let libs: Vec<(PathBuf, LibraryName)> = entries
        .into_iter()
        .filter_map(|p| Some((library_name(&p)?, p)))
        .filter(|(_, p)| p.is_file())
        .map(|(n, p)| (p, n))
        .collect();
    let current: HashSet<&str> = libs
        .iter()
        .filter(|(_, n)| !n.legacy)
        .map(|(_, n)| n.name.as_str())
        .collect();
    let mut out: Vec<PathBuf> = libs
        .iter()
        .filter(|(_, n)| !n.legacy || !current.contains(n.name.as_str()))
        .map(|(p, _)| p.clone())
        .collect();
    out.sort();
    out
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
                    let libs = folder_libraries(rd.filter_map(|e| e.ok().map(|e| e.path())));
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

    /// `lib<stem>.so` (`.dylib` on macOS).
    fn lib_file(stem: &str) -> String {
        format!(
            "{}{stem}.{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_EXTENSION
        )
    }

    /// A folder holding empty files of these names.
    fn folder(names: &[String]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for n in names {
            std::fs::write(dir.path().join(n), b"").unwrap();
        }
        dir
    }

    /// The file names a scan of `dir` (as an env entry) tries, and its problems.
    fn scan(dir: &Path) -> (Vec<String>, Vec<Problem>) {
        let (found, problems) = candidates(&[(dir.to_owned(), PluginOrigin::Env)]);
        let names = found
            .iter()
            .map(|c| c.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        (names, problems)
    }

    #[test]
    fn folders_give_their_libraries_in_order_and_duplicates_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path().join(lib_file("openfiles_plugin_b"));
        let a = dir.path().join(lib_file("openfiles_plugin_a"));
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

    #[test]
    fn names_by_the_rule_are_found_in_a_folder() {
        let names = [
            lib_file("openfiles_plugin_tsc"),
            lib_file("openfiles_plugin_cargo_check"),
            lib_file("openfiles_plugin_lsp"),
        ];
        let dir = folder(&names);
        let (found, problems) = scan(dir.path());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            found,
            vec![
                lib_file("openfiles_plugin_cargo_check"),
                lib_file("openfiles_plugin_lsp"),
                lib_file("openfiles_plugin_tsc"),
            ]
        );
    }

    #[test]
    fn legacy_names_are_still_loaded_from_a_folder() {
        let dir = folder(&[lib_file("openfiles_tsc"), lib_file("openfiles_cargo_check")]);
        let (found, problems) = scan(dir.path());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            found,
            vec![lib_file("openfiles_cargo_check"), lib_file("openfiles_tsc")]
        );
    }

    #[test]
    fn old_and_new_name_of_one_plugin_in_a_folder_load_only_the_new() {
        // Both orders of old vs new in a sorted listing: `cargo_check` sorts before
        // `plugin_cargo_check`, `tsc` after `plugin_tsc`. The lsp plugin is unaffected.
        let dir = folder(&[
            lib_file("openfiles_tsc"),
            lib_file("openfiles_plugin_tsc"),
            lib_file("openfiles_cargo_check"),
            lib_file("openfiles_plugin_cargo_check"),
            lib_file("openfiles_plugin_lsp"),
        ]);
        let (found, problems) = scan(dir.path());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            found,
            vec![
                lib_file("openfiles_plugin_cargo_check"),
                lib_file("openfiles_plugin_lsp"),
                lib_file("openfiles_plugin_tsc"),
            ]
        );
        // An old name next to the new name of another plugin still loads.
        let dir = folder(&[
            lib_file("openfiles_tsc"),
            lib_file("openfiles_plugin_cargo_check"),
        ]);
        assert_eq!(
            scan(dir.path()).0,
            vec![
                lib_file("openfiles_plugin_cargo_check"),
                lib_file("openfiles_tsc")
            ]
        );
    }

    #[test]
    fn unrelated_libraries_in_a_folder_are_not_tried_but_a_named_file_is() {
        let dir = folder(&[
            lib_file("foo"),
            lib_file("openfiles_fixture_instant"),
            lib_file("openfiles_plugin_"),
            lib_file("openfiles_other"),
            format!("{}.1", lib_file("openfiles_plugin_cargo_check")),
            lib_file("openfiles_plugin_tsc"),
        ]);
        let (found, problems) = scan(dir.path());
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(found, vec![lib_file("openfiles_plugin_tsc")]);
        // Named as a file, any name is tried.
        let foo = dir.path().join(lib_file("foo"));
        let (found, _) = candidates(&[(foo.clone(), PluginOrigin::Config)]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, foo);
    }

    #[test]
    fn library_names_follow_the_rule() {
        let name = |stem: &str| library_name(Path::new(&format!("/x/{}", lib_file(stem))));
        assert_eq!(
            name("openfiles_plugin_cargo_check"),
            Some(LibraryName {
                name: "cargo_check".into(),
                legacy: false
            })
        );
        assert_eq!(
            name("openfiles_cargo_check"),
            Some(LibraryName {
                name: "cargo_check".into(),
                legacy: true
            })
        );
        assert_eq!(
            name("openfiles_tsc"),
            Some(LibraryName {
                name: "tsc".into(),
                legacy: true
            })
        );
        assert_eq!(name("openfiles_lsp"), None);
        assert_eq!(name("foo"), None);
        assert_eq!(library_name(Path::new("/x/openfiles_plugin_tsc")), None);
    }
}
