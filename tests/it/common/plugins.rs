//! Shared helpers for the plugin tests: build the plugin cdylibs once per test binary and
//! find them.
//!
//! Integration tests of the root package do not make cargo build the other workspace
//! members' cdylibs, so the first test that needs them runs
//! `cargo build --workspace --lib --examples` into the same target directory (the outer
//! `cargo test` has released its build lock by the time tests run). It is a no-op after
//! `cargo test --workspace` (what `scripts/test.sh` and CI build): the whole workspace and
//! the examples (which need the dev-dependencies) select the same features as that build, so
//! every unit is the one it already has. Naming the plugin packages alone (`-p …`) selected
//! other features (`openfiles-plugin-api` without `host`, tokio, syn, nix, … with fewer): a
//! second build of most dependencies in the middle of the tests (CI: the first tests waited
//! on it), and the next `cargo test --workspace` relinked every plugin again.

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

/// The variables (besides `CARGO_PKG_*`) cargo gives a test process it runs.
const TEST_PROCESS_VARS: [&str; 9] = [
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

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
            .args(["--workspace", "--lib", "--examples"]);
        // What cargo sets for a test process, not for a build: a build script that tracks one
        // (ring's: `CARGO_MANIFEST_DIR`, `CARGO_PKG_*`) would make its crate and everything
        // above it (the service's lib) dirty here, and again in the next outer build.
        for (key, _) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if name.starts_with("CARGO_PKG_") || TEST_PROCESS_VARS.contains(&&*name) {
                cmd.env_remove(&key);
            }
        }
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
