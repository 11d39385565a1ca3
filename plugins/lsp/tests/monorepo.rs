//! Monorepos (issue 22): one ruff and one pyright serve every package of a workspace as
//! workspace folders, each package checked with its own configuration; folders leave with
//! their package or when idle; servers that take a single folder get one instance per
//! root; `max_servers` and `max_memory_mib` stop the least recently used instance.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

mod support;
use openfiles_plugin_api::Item;
use serde_json::json;
use std::path::PathBuf;
use support::{children_running, gone, wait_until, Env};

/// One file, the same in every package; what is reported depends on the package's config.
const TEXT: &str = "import os\nx = None\nif x == None:\n    print(undefined_q)\n";

/// Packages `a` (ruff: pyflakes only), `b` (ruff: E711 only; pyright: undefined variables
/// not reported) and `c` (defaults), each with `src/mod.py` holding [`TEXT`].
fn three_packages(env: &Env) -> Vec<PathBuf> {
    env.write(
        "a/pyproject.toml",
        "[project]\nname = \"a\"\n[tool.ruff.lint]\nselect = [\"F\"]\n",
    );
    env.write(
        "b/pyproject.toml",
        "[project]\nname = \"b\"\n[tool.ruff.lint]\nselect = [\"E711\"]\n[tool.pyright]\nreportUndefinedVariable = \"none\"\n",
    );
    env.write("c/pyproject.toml", "[project]\nname = \"c\"\n");
    ["a", "b", "c"]
        .iter()
        .map(|p| env.write(&format!("{p}/src/mod.py"), TEXT))
        .collect()
}

/// (line, code) of the items from `source`, sorted.
fn from(source: &str, items: &[Item]) -> Vec<(u32, String)> {
    let mut v: Vec<_> = items
        .iter()
        .filter(|i| i.source == source)
        .map(|i| (i.line, i.code.clone().unwrap_or_default()))
        .collect();
    v.sort();
    v
}

fn codes(v: &[(u32, &str)]) -> Vec<(u32, String)> {
    v.iter().map(|(l, c)| (*l, c.to_string())).collect()
}

/// What ruff reports for [`TEXT`] in packages a, b, c: a and b as their configs say, c
/// (no ruff config: ruff's defaults, which change between releases) as `ruff check` says.
fn ruff_expected(env: &Env) -> [Vec<(u32, String)>; 3] {
    let cli: serde_json::Value = serde_json::from_str(&support::run(
        &env.ws.join("c"),
        "ruff",
        &["check", "--output-format", "json", "src/mod.py"],
    ))
    .expect("ruff json");
    let mut c: Vec<(u32, String)> = cli
        .as_array()
        .expect("array")
        .iter()
        .map(|d| {
            (
                d["location"]["row"].as_u64().unwrap() as u32,
                d["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    c.sort();
    let a = codes(&[(1, "F401"), (4, "F821")]);
    let b = codes(&[(3, "E711")]);
    assert!(
        c != a && c != b,
        "the defaults differ from a's and b's configs"
    );
    [a, b, c]
}

#[test]
fn one_ruff_and_one_pyright_serve_every_package_each_with_its_own_config() {
    let env = Env::new(json!({"disable": ["basedpyright"]}));
    let files = three_packages(&env);
    let ruff = ruff_expected(&env);
    for (i, f) in files.iter().enumerate() {
        let items = env.check(f, 90_000);
        assert_eq!(from("Ruff", &items), ruff[i], "{}: {items:#?}", f.display());
        let undefined = items
            .iter()
            .any(|i| i.source == "Pyright" && i.code.as_deref() == Some("reportUndefinedVariable"));
        assert_eq!(
            undefined,
            i != 1,
            "pyright in {} (b turns reportUndefinedVariable off): {items:#?}",
            f.display()
        );
    }
    // Once more all at once, in one request: the same answers.
    let resp = {
        use openfiles_plugin_api::{CheckRequest, Plugin};
        env.plugin
            .check(CheckRequest {
                id: 1000,
                workspace: env.ws.clone(),
                files: files.clone(),
                also_report: Vec::new(),
                timeout_ms: 90_000,
                ..Default::default()
            })
            .unwrap()
    };
    for (i, f) in files.iter().enumerate() {
        let items = &resp.files.iter().find(|r| &r.path == f).unwrap().items;
        assert_eq!(from("Ruff", items), ruff[i], "{}: {items:#?}", f.display());
    }

    assert_eq!(
        children_running("ruff", &env.ws).len(),
        1,
        "one ruff process"
    );
    // pyright changes its working directory to its own install: count every pyright child
    // (the other tests of this file disable pyright).
    assert_eq!(
        children_running("pyright", std::path::Path::new("/")).len(),
        1,
        "one pyright process"
    );
    let packages: Vec<PathBuf> = ["a", "b", "c"].iter().map(|p| env.ws.join(p)).collect();
    assert_eq!(
        env.plugin.server_folders(),
        vec![
            ("pyright".to_string(), packages.clone()),
            ("ruff".to_string(), packages),
        ]
    );
}

#[test]
fn a_removed_package_and_an_idle_one_leave_the_servers_folders() {
    let env = Env::new(json!({"disable": ["pyright", "basedpyright"], "idle_timeout_ms": 2_000}));
    let files = three_packages(&env);
    let ruff = ruff_expected(&env);
    for (i, f) in files.iter().enumerate() {
        assert_eq!(from("Ruff", &env.check(f, 30_000)), ruff[i]);
    }
    let pid = env.pid("ruff");
    let folders = || {
        env.plugin
            .server_folders()
            .into_iter()
            .flat_map(|(_, f)| f)
            .collect::<Vec<_>>()
    };
    assert_eq!(folders().len(), 3);

    // Package c removed: its folder leaves at the next check.
    std::fs::remove_dir_all(env.ws.join("c")).unwrap();
    assert_eq!(from("Ruff", &env.check(&files[0], 30_000)), ruff[0]);
    assert_eq!(folders(), vec![env.ws.join("a"), env.ws.join("b")]);

    // b unused for idle_timeout_ms while a is checked: b's folder leaves, the server stays.
    let mut n = 0;
    let left = wait_until(|| {
        n += 1;
        env.write("a/src/mod.py", &format!("{TEXT}{}", "\n".repeat(n % 2)));
        env.check(&files[0], 30_000);
        folders() == vec![env.ws.join("a")]
    });
    assert!(left, "b's folder was removed: {:?}", folders());
    assert_eq!(env.pid("ruff"), pid, "the server itself kept running");

    // b comes back with its own configuration.
    assert_eq!(from("Ruff", &env.check(&files[1], 30_000)), ruff[1]);
    assert_eq!(folders(), vec![env.ws.join("a"), env.ws.join("b")]);
    assert_eq!(env.pid("ruff"), pid);
}

#[test]
fn per_root_mode_keeps_one_server_per_package() {
    let env = Env::new(json!({"disable": ["pyright", "basedpyright"], "share_servers": false}));
    let files = three_packages(&env);
    let ruff = ruff_expected(&env);
    for (i, f) in files.iter().enumerate() {
        assert_eq!(from("Ruff", &env.check(f, 30_000)), ruff[i]);
    }
    assert_eq!(children_running("ruff", &env.ws).len(), 3);
}

fn fault_server() -> serde_json::Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/fault_server.py"
    );
    json!({"command": "python3", "args": [script, "versioned"], "extensions": ["flt"],
           "root_markers": ["marker"]})
}

#[test]
fn a_server_without_workspace_folder_support_gets_one_instance_per_root() {
    // fault_server.py announces no `workspace.workspaceFolders` capability.
    let env = Env::new(json!({"servers": {"fault": fault_server()}}));
    let mut files = Vec::new();
    for p in ["a", "b", "c"] {
        env.write(&format!("{p}/marker"), "");
        files.push(env.write(&format!("{p}/x.flt"), "ok\nERR\n"));
    }
    // The first server was started for a (as shared, then found to take one folder and
    // stopped): the second round checks a on a server of its own.
    for f in files.iter().chain(&files) {
        let items = env.check(f, 20_000);
        assert_eq!(
            items.iter().map(|i| i.line).collect::<Vec<_>>(),
            [2],
            "{items:#?}"
        );
    }
    assert!(
        wait_until(|| children_running("fault_server.py", &env.ws).len() == 3),
        "one per root: {:?}",
        env.plugin.server_folders()
    );
    let mut roots: Vec<PathBuf> = env
        .plugin
        .server_folders()
        .into_iter()
        .flat_map(|(_, f)| f)
        .collect();
    roots.sort();
    let want: Vec<PathBuf> = ["a", "b", "c"].iter().map(|p| env.ws.join(p)).collect();
    assert_eq!(roots, want);
}

#[test]
fn the_instance_limit_stops_the_least_recently_used_server() {
    let env = Env::new(json!({
        "disable": ["pyright", "basedpyright"], "share_servers": false, "max_servers": 2,
    }));
    let files = three_packages(&env);
    let ruff = ruff_expected(&env);
    // Per root, each server runs in its project root.
    let pid_of = |root: &str| {
        children_running("ruff", &env.ws.join(root))
            .first()
            .copied()
    };
    assert_eq!(from("Ruff", &env.check(&files[0], 30_000)), ruff[0]);
    assert_eq!(from("Ruff", &env.check(&files[1], 30_000)), ruff[1]);
    let a = pid_of("a").unwrap();
    let b = pid_of("b").unwrap();
    // A third package: a's server, the least recently used, stops first.
    assert_eq!(from("Ruff", &env.check(&files[2], 30_000)), ruff[2]);
    assert!(wait_until(|| gone(a)), "a's ruff {a} stopped");
    assert!(!gone(b), "b's ruff kept");
    assert_eq!(env.plugin.server_pids().len(), 2);
    // a again: now b's is the least recently used.
    assert_eq!(from("Ruff", &env.check(&files[0], 30_000)), ruff[0]);
    assert!(wait_until(|| gone(b)), "b's ruff {b} stopped");
    assert_eq!(env.plugin.server_pids().len(), 2);
}

#[test]
fn the_memory_limit_stops_the_least_recently_used_server() {
    // 1 MiB: any two servers are over it, the most recently used one is always kept.
    let env = Env::new(json!({
        "disable": ["pyright", "basedpyright"], "share_servers": false, "max_memory_mib": 1,
    }));
    let files = three_packages(&env);
    let ruff = ruff_expected(&env);
    assert_eq!(from("Ruff", &env.check(&files[0], 30_000)), ruff[0]);
    let a = env.pid("ruff");
    assert_eq!(from("Ruff", &env.check(&files[1], 30_000)), ruff[1]);
    assert!(
        wait_until(|| gone(a)),
        "a's ruff {a} stopped to free memory"
    );
    let pids = env.plugin.server_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    assert_ne!(pids[0].1, a);
    assert_eq!(
        env.plugin.server_folders(),
        vec![("ruff".to_string(), vec![env.ws.join("b")])]
    );
}
