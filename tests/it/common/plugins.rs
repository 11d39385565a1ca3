//! Shared helpers for the plugin tests: build the plugin cdylibs once per test binary and
//! find them.
//!
//! Integration tests of the root package do not make cargo build the other workspace
//! members' cdylibs, so the first test that needs them runs
//! `cargo build --lib --examples -p openfiles-test-fixtures -p openfiles-plugin-cargo-check
//! -p openfiles-plugin-tsc -p openfiles-plugin-lsp -p openfiles-plugin-pyright -p openfiles-plugin-go
//! -p openfiles-plugin-cc -p openfiles-plugin-tests` into the same target directory (the outer `cargo test` has
//! released its build lock by the time tests run). It is a no-op when they are fresh.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `target/<profile>` of this test binary (`target/<profile>/deps/<test>-<hash>`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary lives in target/<profile>/deps")
        .to_owned()
}

/// Build every plugin cdylib (once per process) and return `target/<profile>`.
pub fn built() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let profile = profile_dir();
        let target = profile.parent().expect("target dir").to_owned();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = std::process::Command::new(cargo);
        cmd.args(["build", "--quiet", "--manifest-path"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .args([
                "-p",
                "openfiles-test-fixtures",
                "--lib",
                "--examples",
                "-p",
                "openfiles-plugin-cargo-check",
                "-p",
                "openfiles-plugin-tsc",
                "-p",
                "openfiles-plugin-lsp",
                "-p",
                "openfiles-plugin-pyright",
                "-p",
                "openfiles-plugin-go",
                "-p",
                "openfiles-plugin-cc",
                "-p",
                "openfiles-plugin-tests",
            ]);
        if profile.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd
            .status()
            .expect("run cargo build for the plugin cdylibs");
        assert!(status.success(), "building the plugin cdylibs failed");
        profile
    })
}

fn dll(dir: &Path, stem: &str) -> PathBuf {
    let path = dir.join(format!(
        "{}{stem}.{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_EXTENSION
    ));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// A test fixture library: `instant`, `panic`, `abort`, `bad_abi`, `no_symbol`, `minor0`.
pub fn fixture(name: &str) -> PathBuf {
    dll(
        &built().join("examples"),
        &format!("openfiles_fixture_{name}"),
    )
}

/// A real plugin library, `libopenfiles_plugin_<name>.so` (the naming rule of
/// `src/plugin_host/discover.rs`): `cargo_check`, `tsc`, `lsp`, `pyright`, `go`, `cc` or `tests`.
pub fn plugin(name: &str) -> PathBuf {
    dll(built(), &format!("openfiles_plugin_{name}"))
}

/// `OPENFILES_PLUGIN_PATH`-style list.
pub fn path_list(paths: &[PathBuf]) -> std::ffi::OsString {
    std::env::join_paths(paths).expect("joinable paths")
}
