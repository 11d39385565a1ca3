//! One pyright program for several projects: a monorepo's packages, each with its own
//! configuration. pyright makes one program per project root, and every program loads and
//! evaluates the standard library's stubs again: twelve packages cost twelve first analyses
//! (the monorepo bench's configured case: 25 s of command lines, 7.7 s in one language server)
//! where one program of the same files takes about 1.4 s.
//!
//! Where every project's configuration says only what one of pyright's *execution
//! environments* can say — its rules (`report*` levels and the boolean rules), `pythonVersion`,
//! `pythonPlatform`, `extraPaths` — besides its `include` and `exclude`, and all of them agree
//! on what is the whole program's (`typeCheckingMode`, `useLibraryCodeForTypes`), the projects are checked as one program: a `pyrightconfig.json`
//! written to a folder of the plugin's state dir (0700, 0600: a repository never writes it)
//! includes each project's files, excludes what each one excludes (and pyright's default
//! exclusions under each root) and gives each root an execution environment with that
//! project's settings and import roots (its `extraPaths`, else its `src` folder as pyright's
//! automatic search path adds it). The items are the projects' own runs' (the plugin's test
//! compares the two command lines on a monorepo whose packages set different rules).
//!
//! Anything else (`strict`, `venv`, `stubPath`, `executionEnvironments`, `extends`, a glob in
//! `extraPaths`, `reportImportCycles` — the one rule pyright takes from the program's
//! configuration, not the file's environment —…), a `typings` folder (the default stub path is the project's root), a
//! configuration in doubt, nested roots, fewer than two roots, or basedpyright (its baseline
//! file is found at the project root): each project keeps its own program.

use crate::Checker;
use openfiles_plugin_api::private;
use openfiles_plugin_api::tracked;
use serde_json::{json, Map, Value};
use std::path::{Component, Path, PathBuf};

/// The boolean rules an execution environment accepts (pyright's `getBooleanDiagnosticRules`).
const BOOLEAN_RULES: &[&str] = &[
    "strictListInference",
    "strictSetInference",
    "strictDictionaryInference",
    "analyzeUnannotatedFunctions",
    "strictParameterNoneValue",
    "enableExperimentalFeatures",
    "deprecateTypingAliases",
    "disableBytesTypePromotions",
    "enableTypeIgnoreComments",
    "enableReachabilityAnalysis",
];

/// What pyright excludes under a project root when its configuration names nothing more.
const DEFAULT_EXCLUDE: &[&str] = &["**/node_modules", "**/__pycache__", "**/.*"];

/// Settings of the whole program (not of an execution environment), with pyright's defaults
/// for a configuration file: combined projects must agree on them.
static SHARED: std::sync::LazyLock<[(&str, Value); 2]> = std::sync::LazyLock::new(|| {
    [
        ("typeCheckingMode", json!("standard")),
        ("useLibraryCodeForTypes", json!(true)),
    ]
});

/// The configuration file's name in the folder [`combine`] returns.
pub const CONFIG: &str = "pyrightconfig.json";

/// The folder (under `state_dir`) holding one configuration that checks `roots` as one
/// program, written; `None` when they cannot be (see the module's doc).
pub fn combine(checker: Checker, roots: &[PathBuf], state_dir: &Path) -> Option<PathBuf> {
    let config = config(checker, roots, state_dir)?;
    let dir = folder(state_dir, roots);
    let text = serde_json::to_vec_pretty(&config).ok()?;
    let current = std::fs::read(dir.join(CONFIG)).ok();
    if current.as_deref() != Some(text.as_slice()) {
        if current.is_none() {
            prune(&state_dir.join("combined"));
        }
        if let Err(e) = private::write(&dir.join(CONFIG), &text) {
            eprintln!(
                "openfiles-plugin-pyright: cannot write {}: {e}",
                dir.join(CONFIG).display()
            );
            return None;
        }
    }
    Some(dir)
}

/// The most combined configurations kept (one per set of roots a server was asked about
/// together); past it, the least recently written go.
const MAX_KEPT: usize = 64;

/// Make room for one more folder in `combined`: the oldest beyond [`MAX_KEPT`] removed.
fn prune(combined: &Path) {
    let Ok(entries) = std::fs::read_dir(combined) else {
        return;
    };
    let mut folders: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, e.path()))
        })
        .collect();
    if folders.len() < MAX_KEPT {
        return;
    }
    folders.sort();
    for (_, dir) in &folders[..=folders.len() - MAX_KEPT] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The folder of `roots`' configuration: one per set of roots (named by a hash that stays
/// the same across builds: the folder outlives the process).
fn folder(state_dir: &Path, roots: &[PathBuf]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let mut sorted: Vec<&PathBuf> = roots.iter().collect();
    sorted.sort();
    let mut bytes = Vec::new();
    for r in sorted {
        bytes.extend_from_slice(r.as_os_str().as_bytes());
        bytes.push(0);
    }
    let hash = openfiles_plugin_api::content_hash(&bytes);
    state_dir.join("combined").join(&hash[..16])
}

/// The combined configuration, for a folder of `state_dir`.
fn config(checker: Checker, roots: &[PathBuf], state_dir: &Path) -> Option<Value> {
    if checker != Checker::Pyright || roots.len() < 2 || !state_dir.is_absolute() {
        return None;
    }
    let nested = roots
        .iter()
        .any(|a| roots.iter().any(|b| a != b && b.starts_with(a)));
    if nested || roots.iter().any(|r| !r.is_absolute()) {
        return None;
    }
    let dir = folder(state_dir, roots);
    let mut shared: Option<Map<String, Value>> = None;
    let (mut include, mut exclude, mut envs) = (Vec::new(), Vec::new(), Vec::new());
    for root in roots {
        let table = tracked::config(checker.name(), root)?;
        let project = Project::read(&table)?;
        match &shared {
            Some(s) if *s != project.shared => return None,
            _ => shared = Some(project.shared.clone()),
        }
        if root.join("typings").exists() {
            return None;
        }
        let rel = relative(&dir, root);
        // `include` and `exclude` are globs: a root whose path has glob characters would not
        // name itself there.
        if rel.contains(['*', '?', '[', ']', '{', '}']) {
            return None;
        }
        let under = |entry: &str| -> String {
            if Path::new(entry).is_absolute() {
                entry.to_owned()
            } else {
                format!("{rel}/{}", entry.trim_start_matches("./"))
            }
        };
        match &project.include {
            Some(list) => include.extend(list.iter().map(|e| under(e))),
            None => include.push(rel.clone()),
        }
        exclude.extend(project.exclude.iter().map(|e| under(e)));
        exclude.extend(DEFAULT_EXCLUDE.iter().map(|e| under(e)));
        let extra: Vec<String> = match &project.extra_paths {
            Some(list) => list.iter().map(|e| under(e)).collect(),
            None if root.join("src").is_dir() && !root.join("src/__init__.py").exists() => {
                vec![format!("{rel}/src")]
            }
            None => Vec::new(),
        };
        let mut env = Map::new();
        env.insert("root".into(), json!(rel));
        env.insert("extraPaths".into(), json!(extra));
        env.extend(project.env);
        envs.push(Value::Object(env));
    }
    let mut config = shared.unwrap_or_default();
    config.insert("include".into(), json!(include));
    config.insert("exclude".into(), json!(exclude));
    config.insert("executionEnvironments".into(), json!(envs));
    Some(Value::Object(config))
}

/// One project's configuration, as far as it can join a combined one.
struct Project {
    /// The settings of the whole program ([`SHARED`]), defaults filled in: every project's
    /// must be the same.
    shared: Map<String, Value>,
    include: Option<Vec<String>>,
    exclude: Vec<String>,
    extra_paths: Option<Vec<String>>,
    /// Its rules, `pythonVersion` and `pythonPlatform`: its execution environment's keys.
    env: Map<String, Value>,
}

impl Project {
    /// `table` (a project's configuration), or `None` if it says anything an execution
    /// environment cannot.
    fn read(table: &Map<String, Value>) -> Option<Project> {
        let strings = |v: &Value| -> Option<Vec<String>> {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect()
        };
        let mut p = Project {
            shared: SHARED
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            include: None,
            exclude: Vec::new(),
            extra_paths: None,
            env: Map::new(),
        };
        for (key, value) in table {
            match key.as_str() {
                k if SHARED.iter().any(|(s, _)| *s == k) => {
                    p.shared.insert(key.clone(), value.clone());
                }
                "include" => p.include = Some(strings(value)?),
                "exclude" => p.exclude = strings(value)?,
                "extraPaths" => {
                    let list = strings(value)?;
                    let glob = |s: &String| s.contains(['*', '?', '[']);
                    if list.iter().any(glob) {
                        return None;
                    }
                    p.extra_paths = Some(list);
                }
                "pythonVersion" | "pythonPlatform" => {
                    p.env
                        .insert(key.clone(), Value::String(value.as_str()?.to_owned()));
                }
                // The one rule pyright reads from the program's configuration, not the
                // file's environment.
                "reportImportCycles" => return None,
                k if BOOLEAN_RULES.contains(&k) && value.is_boolean() => {
                    p.env.insert(key.clone(), value.clone());
                }
                k if k.starts_with("report") && (value.is_boolean() || value.is_string()) => {
                    p.env.insert(key.clone(), value.clone());
                }
                _ => return None,
            }
        }
        Some(p)
    }
}

/// `to` relative to the folder `from` (both absolute, compared lexically), with `/`.
fn relative(from: &Path, to: &Path) -> String {
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".into(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(ws: &Path, name: &str, table: &str) -> PathBuf {
        let root = ws.join("packages").join(name);
        std::fs::create_dir_all(root.join("src").join(name)).unwrap();
        std::fs::write(
            root.join("pyproject.toml"),
            format!("[project]\nname = \"{name}\"\n[tool.pyright]\n{table}"),
        )
        .unwrap();
        root
    }

    #[test]
    fn projects_an_environment_can_describe_are_combined() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let state = d.path().join("state");
        let a = package(&ws, "a", "reportMissingModuleSource = \"warning\"\n");
        let b = package(
            &ws,
            "b",
            "include = [\"src\"]\nexclude = [\"src/gen\"]\npythonVersion = \"3.11\"\nstrictListInference = true\n",
        );
        let roots = vec![a.clone(), b.clone()];
        let dir = combine(Checker::Pyright, &roots, &state).unwrap();
        assert!(dir.starts_with(state.join("combined")));
        let c: Value = serde_json::from_slice(&std::fs::read(dir.join(CONFIG)).unwrap()).unwrap();
        let rel_a = relative(&dir, &a);
        assert!(rel_a.starts_with("../../../ws/"), "{rel_a}");
        assert_eq!(c["typeCheckingMode"], "standard");
        assert_eq!(c["include"][0], json!(rel_a));
        assert_eq!(
            c["include"][1],
            json!(format!("{}/src", relative(&dir, &b)))
        );
        let excl: Vec<&str> = c["exclude"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(excl.contains(&format!("{rel_a}/**/.*").as_str()));
        assert!(excl.contains(&format!("{}/src/gen", relative(&dir, &b)).as_str()));
        let env_a = &c["executionEnvironments"][0];
        assert_eq!(env_a["root"], json!(rel_a));
        assert_eq!(env_a["extraPaths"], json!([format!("{rel_a}/src")]));
        assert_eq!(env_a["reportMissingModuleSource"], "warning");
        let env_b = &c["executionEnvironments"][1];
        assert_eq!(env_b["pythonVersion"], "3.11");
        assert_eq!(env_b["strictListInference"], true);
        // The same roots: the same folder, not written again.
        assert_eq!(combine(Checker::Pyright, &roots, &state), Some(dir));
    }

    #[test]
    fn anything_else_keeps_each_project_its_own_program() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let state = d.path().join("state");
        let a = package(&ws, "a", "");
        let b = package(&ws, "b", "");
        let both = vec![a.clone(), b.clone()];
        assert!(combine(Checker::Pyright, &both, &state).is_some());
        assert!(combine(Checker::Basedpyright, &both, &state).is_none());
        assert!(combine(Checker::Pyright, &both[..1], &state).is_none());
        // Nested roots.
        let inner = package(&a, "inner", "");
        assert!(combine(Checker::Pyright, &[a.clone(), inner], &state).is_none());
        let with = |table: &str| {
            package(&ws, "b", table);
            combine(Checker::Pyright, &both, &state)
        };
        assert!(with("strict = [\"src\"]\n").is_none());
        assert!(with("venv = \".venv\"\n").is_none());
        assert!(with("extraPaths = [\"libs/*\"]\n").is_none());
        assert!(with("typeCheckingMode = \"strict\"\n").is_none());
        assert!(with("reportMissingImports = 3\n").is_none());
        assert!(with("reportImportCycles = \"error\"\n").is_none());
        assert!(with("extraPaths = [\"libs\"]\n").is_some());
        assert!(with("typeCheckingMode = \"standard\"\nuseLibraryCodeForTypes = true\n").is_some());
        assert!(with("useLibraryCodeForTypes = false\n").is_none());
        // A root whose path a glob would read otherwise.
        let odd = package(&ws, "b[1]", "");
        assert!(combine(Checker::Pyright, &[a.clone(), odd], &state).is_none());
        // pyright's default stub path is the root's `typings`.
        std::fs::create_dir_all(b.join("typings")).unwrap();
        assert!(with("").is_none());
    }

    #[test]
    fn old_configurations_make_room_for_new_ones() {
        let d = tempfile::tempdir().unwrap();
        let combined = d.path().join("combined");
        for i in 0..MAX_KEPT + 3 {
            std::fs::create_dir_all(combined.join(format!("{i:03}"))).unwrap();
        }
        prune(&combined);
        let left = std::fs::read_dir(&combined).unwrap().count();
        assert_eq!(left, MAX_KEPT - 1, "room for the one being written");
    }

    #[test]
    fn relative_paths_climb_to_the_common_folder() {
        assert_eq!(
            relative(Path::new("/s/t/combined/x"), Path::new("/w/p")),
            "../../../../w/p"
        );
        assert_eq!(relative(Path::new("/a/b"), Path::new("/a/b/c")), "c");
        assert_eq!(relative(Path::new("/a"), Path::new("/a")), ".");
    }
}
