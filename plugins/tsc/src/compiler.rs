//! Which TypeScript compiler checks a project — `tsc`, or the native preview `tsgo`
//! (TypeScript 7, npm `@typescript/native-preview`) — and when a failing `tsgo` hands over
//! to `tsc`.
//!
//! The choice (`[plugin.tsc] compiler`):
//! - `auto` (default): `tsgo` when the project has `@typescript/native-preview` in a
//!   `node_modules` at or above its folder (the project's own choice), else `tsc`. A `tsgo`
//!   that is only on `PATH` is not used.
//! - `tsgo`: the project's `tsgo`, else the `tsgo` setting, else `tsgo` on `PATH`; `tsc` (with
//!   a note) when there is none.
//! - `tsc`: always `tsc` (the project's `node_modules/.bin/tsc`, the `tsc` setting, `PATH`).
//!
//! The npm package's `bin/tsgo` is a node script that starts the platform binary
//! (`@typescript/native-preview-<os>-<arch>/lib/tsgo`). Where that binary is found it is run
//! directly: no node start-up per run, and a crash is the binary's own exit status (on node
//! before 22.15 the wrapper turns a signal into an exception of its own).
//!
//! Fallback: a `tsgo` that cannot be started or that crashed ([`crash`]: killed by a
//! signal, a Go runtime panic or fatal error, or a failed exit with nothing parseable) is
//! replaced by `tsc` for that run and remembered by [`Fallbacks`] (per executable and its
//! modification time, persisted in the plugin's state dir) so that later runs, and `openfiles
//! plugins` / `doctor`, know; a reinstalled `tsgo` (new mtime) is tried again.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// `[plugin.tsc] compiler`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompilerSetting {
    #[default]
    Auto,
    Tsc,
    Tsgo,
}

/// Which compiler a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Tsc,
    Tsgo,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tsc => "tsc",
            Kind::Tsgo => "tsgo",
        }
    }
}

/// A compiler to run: its kind and executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiler {
    pub kind: Kind,
    pub exe: PathBuf,
}

/// The npm platform package name suffix for this machine (`linux-x64`), as node names it.
pub fn node_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        "x86" => "ia32",
        other => other,
    };
    format!("{os}-{arch}")
}

/// The native `tsgo` binary of an installed `@typescript/native-preview` package folder:
/// its platform package nested inside it or beside it (hoisted); else its node wrapper.
pub fn tsgo_in_package(pkg: &Path) -> Option<PathBuf> {
    let platform = format!("native-preview-{}", node_platform());
    let nested = pkg.join("node_modules/@typescript").join(&platform);
    let hoisted = pkg.parent().map(|scope| scope.join(&platform));
    [Some(nested), hoisted]
        .into_iter()
        .flatten()
        .map(|d| d.join("lib/tsgo"))
        .chain(std::iter::once(pkg.join("bin/tsgo")))
        .find(|p| is_executable(p))
}

/// The project's `tsgo`: `@typescript/native-preview` in `node_modules` of `start` or above.
pub fn project_tsgo(start: &Path) -> Option<PathBuf> {
    start.ancestors().find_map(|d| {
        let pkg = d.join("node_modules/@typescript/native-preview");
        if pkg.join("package.json").is_file() {
            let pkg = std::fs::canonicalize(&pkg).unwrap_or(pkg);
            tsgo_in_package(&pkg)
        } else {
            None
        }
    })
}

/// `tsgo` as configured or on `PATH`, resolved to the native binary when it is the npm
/// package's wrapper (`…/native-preview/bin/tsgo`).
pub fn configured_tsgo(setting: Option<&Path>) -> Option<PathBuf> {
    let exe = match setting {
        Some(p) => p.to_owned(),
        None => on_path("tsgo")?,
    };
    let real = std::fs::canonicalize(&exe).unwrap_or_else(|_| exe.clone());
    if real.ends_with("native-preview/bin/tsgo") {
        if let Some(native) = real
            .parent()
            .and_then(Path::parent)
            .and_then(tsgo_in_package)
        {
            return Some(native);
        }
    }
    Some(exe)
}

/// `node_modules/.bin/tsc` in `start` or above when the workspace is trusted, else `tsc`
/// (from `PATH`: a repository's own executables run only where the user trusts it).
pub fn find_tsc(start: &Path, trusted: bool) -> PathBuf {
    start
        .ancestors()
        .take_while(|_| trusted)
        .map(|d| d.join("node_modules/.bin/tsc"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("tsc"))
}

/// The compiler for a project whose tsc runs in `cwd`, before any fallback. The project's
/// own `tsgo`/`tsc` (its `node_modules`) only in a `trusted` workspace.
pub fn choose(
    setting: CompilerSetting,
    tsgo: Option<&Path>,
    tsc: Option<&Path>,
    cwd: &Path,
    trusted: bool,
) -> Compiler {
    let own = || project_tsgo(cwd).filter(|_| trusted);
    let tsgo = match setting {
        CompilerSetting::Tsc => None,
        CompilerSetting::Auto => own(),
        CompilerSetting::Tsgo => own().or_else(|| configured_tsgo(tsgo)),
    };
    match tsgo {
        Some(exe) => Compiler {
            kind: Kind::Tsgo,
            exe,
        },
        None => Compiler {
            kind: Kind::Tsc,
            exe: tsc
                .map(Path::to_owned)
                .unwrap_or_else(|| find_tsc(cwd, trusted)),
        },
    }
}

/// Why a `tsgo` is replaced by `tsc`.
#[derive(Debug)]
pub enum Failure {
    /// It could not be started (missing, not executable, a broken wrapper).
    CannotStart(std::io::Error),
    /// Killed by a signal it did not ask for (a cancel is told apart by the caller).
    Signal(i32),
    /// The Go runtime gave up: the `panic: …` / `fatal error: …` line.
    GoRuntime(String),
    /// A failed exit with no diagnostic and no file list: the last stderr lines.
    Silent { status: ExitStatus, stderr: String },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::CannotStart(e) => write!(f, "cannot start: {e}"),
            Failure::Signal(sig) => write!(f, "killed by signal {sig}"),
            Failure::GoRuntime(line) => write!(f, "Go runtime failure: {line}"),
            Failure::Silent { status, stderr } => {
                write!(
                    f,
                    "exited with {status} and printed no diagnostics: {stderr}"
                )
            }
        }
    }
}

impl std::error::Error for Failure {}

/// Whether a finished `tsgo` run counts as a crash. `parsed` says whether its output held
/// any diagnostic or listed file.
pub fn crash(status: &ExitStatus, stderr: &str, parsed: bool) -> Option<Failure> {
    if let Some(sig) = status.signal() {
        return Some(Failure::Signal(sig));
    }
    if let Some(line) = stderr
        .lines()
        .find(|l| l.starts_with("panic: ") || l.starts_with("fatal error: "))
    {
        return Some(Failure::GoRuntime(line.trim().to_owned()));
    }
    if !status.success() && !parsed {
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Some(Failure::Silent {
            status: *status,
            stderr: tail.join(" / "),
        });
    }
    None
}

/// One remembered fallback: the `tsgo` that failed, as it was then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    /// Modification time (seconds since the epoch) of the executable when it failed.
    pub mtime: Option<u64>,
    /// When it failed (seconds since the epoch).
    pub at: u64,
    pub reason: String,
}

/// The `tsgo` executables that failed, persisted as `tsgo-fallbacks.json` in the state dir.
#[derive(Debug, Default)]
pub struct Fallbacks {
    file: Option<PathBuf>,
    map: Mutex<BTreeMap<PathBuf, Fallback>>,
}

fn mtime(exe: &Path) -> Option<u64> {
    let t = std::fs::metadata(exe).ok()?.modified().ok()?;
    t.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

impl Fallbacks {
    /// Load the remembered fallbacks from `state_dir`, forgetting executables that changed.
    pub fn load(state_dir: &Path) -> Fallbacks {
        let file = state_dir.join("tsgo-fallbacks.json");
        let map: BTreeMap<PathBuf, Fallback> = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let map = map
            .into_iter()
            .filter(|(exe, f)| mtime(exe) == f.mtime)
            .collect();
        Fallbacks {
            file: Some(file),
            map: Mutex::new(map),
        }
    }

    /// Why `exe` is not used any more, if it failed and has not changed since.
    pub fn reason(&self, exe: &Path) -> Option<String> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.get(exe)
            .filter(|f| f.mtime == mtime(exe))
            .map(|f| f.reason.clone())
    }

    /// Remember that `exe` failed.
    pub fn record(&self, exe: &Path, reason: &str) {
        let at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(
            exe.to_owned(),
            Fallback {
                mtime: mtime(exe),
                at,
                reason: reason.to_owned(),
            },
        );
        if let (Some(file), Ok(text)) = (&self.file, serde_json::to_vec_pretty(&*map)) {
            // Best effort: the state dir is ours; a failed write only loses the memory.
            let _ = openfiles_plugin_api::private::write(file, &text);
        }
    }

    /// One line per remembered failure, for `openfiles plugins` and `doctor`.
    pub fn notes(&self) -> Vec<String> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.iter()
            .map(|(exe, f)| {
                format!(
                    "tsgo {} failed ({}): tsc is used instead until it changes",
                    exe.display(),
                    f.reason
                )
            })
            .collect()
    }
}

pub use openfiles_plugin_api::tools::{is_executable, on_path};

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn exe(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn auto_takes_the_projects_native_binary_and_never_path() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let pkg = root.join("node_modules/@typescript/native-preview");
        std::fs::create_dir_all(root.join("app/src")).unwrap();
        let c = choose(CompilerSetting::Auto, None, None, &root.join("app"), true);
        assert_eq!(c.kind, Kind::Tsc);
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("package.json"), "{}").unwrap();
        exe(&pkg.join("bin/tsgo"));
        let c = choose(CompilerSetting::Auto, None, None, &root.join("app"), true);
        assert_eq!(c.kind, Kind::Tsgo);
        assert!(c.exe.ends_with("native-preview/bin/tsgo"), "{c:?}");
        // The hoisted platform package wins over the node wrapper.
        let native = root
            .join("node_modules/@typescript")
            .join(format!("native-preview-{}", node_platform()))
            .join("lib/tsgo");
        exe(&native);
        let c = choose(CompilerSetting::Auto, None, None, &root.join("app"), true);
        assert_eq!(c.exe, native.canonicalize().unwrap());
        let c = choose(CompilerSetting::Tsc, None, None, &root.join("app"), true);
        assert_eq!(c.kind, Kind::Tsc);
    }

    /// The project's own compilers run only in a trusted workspace; elsewhere `tsc` from
    /// `PATH`.
    #[test]
    fn a_projects_own_compiler_runs_only_when_trusted() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("tsc"), "#!/bin/sh\n").unwrap();
        assert_eq!(find_tsc(d.path(), true), bin.join("tsc"));
        assert_eq!(find_tsc(d.path(), false), PathBuf::from("tsc"));
        let c = choose(CompilerSetting::Auto, None, None, d.path(), false);
        assert_eq!((c.kind, c.exe), (Kind::Tsc, PathBuf::from("tsc")));
    }

    #[test]
    fn a_configured_tsgo_path_is_taken_as_is() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("no-such-tsgo");
        // Starting it will fail; the run then falls back to tsc.
        let c = choose(CompilerSetting::Tsgo, Some(&missing), None, d.path(), true);
        assert_eq!((c.kind, c.exe), (Kind::Tsgo, missing.clone()));
        let c = choose(CompilerSetting::Auto, Some(&missing), None, d.path(), true);
        assert_eq!(c.kind, Kind::Tsc);
    }

    #[test]
    fn crashes_are_told_from_diagnostics() {
        let ok = ExitStatus::from_raw(0);
        let diags = ExitStatus::from_raw(1 << 8);
        let segv = ExitStatus::from_raw(11);
        assert!(crash(&ok, "", true).is_none());
        assert!(crash(&diags, "", true).is_none());
        assert!(matches!(crash(&segv, "", true), Some(Failure::Signal(11))));
        let panic = "panic: runtime error: index out of range\n\ngoroutine 1 [running]:\n";
        assert!(crash(&ExitStatus::from_raw(2 << 8), panic, true)
            .unwrap()
            .to_string()
            .contains("index out of range"));
        assert!(crash(&diags, "boom\n", false)
            .unwrap()
            .to_string()
            .contains("boom"));
    }

    #[test]
    fn fallbacks_persist_and_forget_a_changed_executable() {
        let d = tempfile::tempdir().unwrap();
        let tsgo = d.path().join("tsgo");
        exe(&tsgo);
        let f = Fallbacks::load(d.path());
        assert_eq!(f.reason(&tsgo), None);
        f.record(&tsgo, "killed by signal 11");
        assert_eq!(f.reason(&tsgo).as_deref(), Some("killed by signal 11"));
        let again = Fallbacks::load(d.path());
        assert_eq!(again.reason(&tsgo).as_deref(), Some("killed by signal 11"));
        assert!(again.notes()[0].contains("signal 11"));
        // A reinstall (new mtime) is tried again.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&tsgo)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(again.reason(&tsgo), None);
        assert!(Fallbacks::load(d.path()).notes().is_empty());
    }
}
