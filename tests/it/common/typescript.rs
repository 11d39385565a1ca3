//! A generated TypeScript project for the tests and benchmarks that run the real
//! typescript-language-server beside the real `tsc`: a `tsconfig.json`, a `util.ts` every
//! module imports, a chain of modules importing each other (so an edit of one breaks another),
//! and one module with a pre-existing error. Also a `tsc` wrapper that starts the real `tsc`
//! late (a slow project-wide tool beside a fast server) and logs each run.

use std::path::{Path, PathBuf};

/// The project's files.
pub struct TsProject {
    pub root: PathBuf,
    /// `src/util.ts`: `export function scale(x: number): number`.
    pub util: PathBuf,
    /// `src/m0.ts` … : module `i` imports `util` and module `i - 1`.
    pub modules: Vec<PathBuf>,
    /// `src/legacy.ts`: a pre-existing error (TS2322).
    pub legacy: PathBuf,
}

/// The text of module `i`; `extra` is appended (a planted mistake).
pub fn module_text(i: usize, extra: &str) -> String {
    let mut t = String::from("import { scale } from \"./util\";\n");
    if i > 0 {
        t.push_str(&format!("import {{ v{} }} from \"./m{}\";\n", i - 1, i - 1));
    }
    let prev = if i > 0 {
        format!(" + v{}", i - 1)
    } else {
        String::new()
    };
    t.push_str(&format!(
        "export interface Shape{i} {{ id: number; name: string; tags: string[] }}\n\
         export function make{i}(id: number): Shape{i} {{\n  return {{ id, name: `s${{id}}`, tags: [] }};\n}}\n\
         export const v{i}: number = scale({i}){prev};\n"
    ));
    t.push_str(extra);
    t
}

/// Write a project with `n` modules under `dir` (made a git root).
pub fn ts_project(dir: &Path, n: usize) -> TsProject {
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("tsconfig.json"),
        r#"{ "compilerOptions": { "strict": true, "noEmit": true, "target": "es2020", "module": "commonjs" }, "include": ["src"] }
"#,
    )
    .unwrap();
    let util = dir.join("src/util.ts");
    std::fs::write(
        &util,
        "export function scale(x: number): number {\n  return x * 2;\n}\n",
    )
    .unwrap();
    let modules = (0..n)
        .map(|i| {
            let p = dir.join(format!("src/m{i}.ts"));
            std::fs::write(&p, module_text(i, "")).unwrap();
            p
        })
        .collect();
    let legacy = dir.join("src/legacy.ts");
    std::fs::write(&legacy, "export const old: number = \"legacy\";\n").unwrap();
    TsProject {
        root: dir.to_owned(),
        util,
        modules,
        legacy,
    }
}

/// A `tsc` wrapper in `dir`: appends a line to `dir/tsc-runs.log` per run, waits `delay_s`
/// seconds (0: none), then runs the real `tsc` with the same arguments.
pub fn tsc_wrapper(dir: &Path, delay_s: u32) -> PathBuf {
    let real = which("tsc").expect("tsc on PATH (scripts/install-test-deps.sh)");
    let log = dir.join("tsc-runs.log");
    let script = dir.join("tsc-wrapper");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho run >> '{}'\nsleep {delay_s}\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// How many times the wrapper in `dir` ran `tsc`.
pub fn tsc_runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("tsc-runs.log"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// An executable on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Install the real tools the tests talk to (idempotent: only what is missing).
pub fn install_test_deps() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-test-deps.sh");
        let ok = std::process::Command::new("bash")
            .arg(script)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "scripts/install-test-deps.sh failed");
    });
}
