//! Monorepos (issue 22): one ruff and one pyright serve every package of a workspace as
//! workspace folders, each package checked with its own configuration (pyright's projects
//! are the folders with a pyright configuration; other packages share the workspace's); folders leave with
//! their package or when idle; servers that take a single folder get one instance per
//! root; `max_servers` and `max_memory_mib` stop the least recently used instance. Trusted
//! worktrees of one repository share their servers (issue 42.7).

use crate::support;
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

/// This file's tests that run pyright, one at a time: each analyses several packages, and
/// two at once would share the machine's two cores.
static PYRIGHT: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn one_ruff_and_one_pyright_serve_every_package_each_with_its_own_config() {
    let _one = PYRIGHT.lock().unwrap_or_else(|e| e.into_inner());
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
                trusted: true,
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
    // One pyright server, one process: pyright changes its working directory to its own
    // install, and other tests of this binary run pyright beside this one, so this plugin's
    // server is told apart by its process id.
    let pyright: Vec<u32> = env
        .plugin
        .server_pids()
        .into_iter()
        .filter(|(name, _)| name == "pyright")
        .map(|(_, pid)| pid)
        .collect();
    assert_eq!(pyright.len(), 1, "one pyright server: {pyright:?}");
    assert!(
        children_running("pyright", std::path::Path::new("/")).contains(&pyright[0]),
        "the server's process {} runs",
        pyright[0]
    );
    // ruff: every package is a project (a pyproject.toml). pyright: only b, whose pyproject
    // has a [tool.pyright] table; a and c are checked in the workspace's program, as
    // `pyright` run at the workspace root would check them.
    let packages: Vec<PathBuf> = ["a", "b", "c"].iter().map(|p| env.ws.join(p)).collect();
    assert_eq!(
        env.plugin.server_folders(),
        vec![
            (
                "pyright".to_string(),
                vec![env.ws.clone(), env.ws.join("b")]
            ),
            ("ruff".to_string(), packages),
        ]
    );
}

#[test]
fn packages_without_a_pyright_table_share_one_program_and_keep_their_imports() {
    let _one = PYRIGHT.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::new(json!({"disable": ["ruff", "basedpyright"]}));
    // Two src-layout packages importing their own modules (and one the other's, which
    // pyright cannot resolve from either package's root: same answer either way).
    let mut files = Vec::new();
    for (p, other) in [("d", "e"), ("e", "d")] {
        env.write(
            &format!("{p}/pyproject.toml"),
            &format!("[project]\nname = \"{p}\"\n"),
        );
        env.write(&format!("{p}/src/{p}/__init__.py"), "");
        env.write(
            &format!("{p}/src/{p}/util.py"),
            "def helper() -> int:\n    return 1\n",
        );
        files.push(env.write(
            &format!("{p}/src/{p}/core.py"),
            &format!("from {p}.util import helper\nfrom {other}.util import helper as h\n\nS: str = helper()\nprint(undefined_q, h)\n"),
        ));
    }
    for (f, p) in files.iter().zip(["d", "e"]) {
        let mut got: Vec<(u32, String)> = env
            .check(f, 90_000)
            .iter()
            .filter(|i| {
                i.source == "Pyright" && i.severity == openfiles_plugin_api::Severity::Error
            })
            .map(|i| (i.line, i.code.clone().unwrap_or_default()))
            .collect();
        got.sort();
        // Own import resolved (the str/int mismatch is found), the other's not, as the
        // pyright CLI says at the package's root.
        assert!(got.contains(&(4, "reportAssignmentType".into())), "{got:?}");
        assert!(got.contains(&(2, "reportMissingImports".into())), "{got:?}");
        assert!(
            !got.contains(&(1, "reportMissingImports".into())),
            "{got:?}"
        );
        assert_eq!(
            got,
            support::pyright_cli(&env.ws.join(p), &format!("src/{p}/core.py"))
        );
    }
    assert_eq!(
        env.plugin.server_folders(),
        vec![("pyright".to_string(), vec![env.ws.clone()])],
        "one folder: the workspace"
    );
}

#[test]
fn a_removed_package_and_an_idle_one_leave_the_servers_folders() {
    let env =
        Env::new(json!({"disable": ["pyright", "basedpyright", "ty"], "idle_timeout_ms": 2_000}));
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
    let env =
        Env::new(json!({"disable": ["pyright", "basedpyright", "ty"], "share_servers": false}));
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
        "disable": ["pyright", "basedpyright", "ty"], "share_servers": false, "max_servers": 2,
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
        "disable": ["pyright", "basedpyright", "ty"], "share_servers": false, "max_memory_mib": 1,
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

#[test]
fn one_typescript_server_serves_every_tsconfig_project_of_a_workspace() {
    let env = Env::new(json!({}));
    // The same file in a strict package and a lax one: only the strict one reports the
    // implicit `any` (TS7006); both report the wrong assignment (TS2322).
    let text = "export function f(x) {\n  return x;\n}\nexport const n: number = \"s\";\n";
    let mut files = Vec::new();
    for (p, strict) in [("web", true), ("api", false)] {
        env.write(
            &format!("{p}/tsconfig.json"),
            &format!(r#"{{"compilerOptions":{{"strict":{strict},"noEmit":true,"target":"es2020"}},"include":["src/*.ts"]}}"#),
        );
        env.write(
            &format!("{p}/package.json"),
            &format!(r#"{{"name":"{p}"}}"#),
        );
        files.push(env.write(&format!("{p}/src/m.ts"), text));
    }
    let (web, api) = (codes(&[(1, "7006"), (4, "2322")]), codes(&[(4, "2322")]));
    assert_eq!(
        support::errors(&env.check(&files[0], 90_000)),
        web,
        "web (strict)"
    );
    let pid = env.pid("typescript-language-server");
    assert_eq!(
        support::errors(&env.check(&files[1], 90_000)),
        api,
        "api (not strict)"
    );
    assert_eq!(
        support::errors(&env.check(&files[0], 90_000)),
        web,
        "web again"
    );
    assert_eq!(
        env.pid("typescript-language-server"),
        pid,
        "the same instance throughout"
    );
    assert_eq!(
        children_running("typescript-language-server", &env.ws).len(),
        1,
        "one process, in the workspace"
    );
}

#[test]
fn one_clangd_serves_every_compile_database_of_a_workspace() {
    let env = Env::new(json!({}));
    // Package a defines FLAG in its compile flags, b does not: only b meets the #error.
    let text = "#ifndef FLAG\n#error FLAG is not defined\n#endif\nint main(void) { return 0; }\n";
    env.write("a/compile_flags.txt", "-xc\n-DFLAG\n");
    env.write("b/compile_flags.txt", "-xc\n");
    let a = env.write("a/main.c", text);
    let b = env.write("b/main.c", text);
    assert_eq!(
        support::errors(&env.check(&a, 60_000)),
        vec![],
        "a has FLAG"
    );
    let pid = env.pid("clangd");
    let hash_error = codes(&[(2, "pp_hash_error")]);
    assert_eq!(
        support::errors(&env.check(&b, 60_000)),
        hash_error,
        "b has not"
    );
    assert_eq!(support::errors(&env.check(&a, 60_000)), vec![], "a again");
    assert_eq!(env.pid("clangd"), pid, "the same instance throughout");
    assert_eq!(children_running("clangd", &env.ws).len(), 1, "one clangd");
}

/// `git` in `dir` as the tests' one identity.
fn git(dir: &std::path::Path, args: &[&str]) {
    let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@t"];
    all.extend_from_slice(args);
    support::run(dir, "git", &all);
}

#[test]
fn trusted_worktrees_of_one_repository_share_one_pyright_each_with_its_own_problems() {
    let _one = PYRIGHT.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::new(json!({"disable": ["basedpyright", "ruff"]}));
    env.write(
        "pyproject.toml",
        "[project]\nname = \"w\"\n[tool.pyright]\n",
    );
    let a_file = env.write("src/mod.py", "x: int = 1\n");
    git(&env.ws, &["init", "-q"]);
    git(&env.ws, &["add", "."]);
    git(&env.ws, &["commit", "-q", "-m", "base"]);
    let b = env.ws.with_file_name("wt-b");
    git(
        &env.ws,
        &["worktree", "add", "-q", "--detach", b.to_str().unwrap()],
    );
    let b = b.canonicalize().unwrap();
    let b_file = b.join("src/mod.py");
    std::fs::write(&a_file, "x: int = 'a'\n").unwrap();
    std::fs::write(&b_file, "y: str = 1\n\nz: int = 'b'\n").unwrap();

    let a_items = env.check_in(&env.ws, &a_file, &[], 90_000, true);
    let b_items = env.check_in(&b, &b_file, &[], 90_000, true);
    let lines = |items: &[Item]| {
        let mut v: Vec<u32> = items
            .iter()
            .filter(|i| i.source == "Pyright")
            .map(|i| i.line)
            .collect();
        v.sort();
        v
    };
    assert_eq!(lines(&a_items), vec![1], "{a_items:#?}");
    assert_eq!(lines(&b_items), vec![1, 3], "{b_items:#?}");
    let pyright = |env: &Env| {
        env.plugin
            .server_pids()
            .into_iter()
            .filter(|(s, _)| s == "pyright")
            .count()
    };
    assert_eq!(pyright(&env), 1, "one pyright for both worktrees");
    assert_eq!(
        env.plugin.server_folders(),
        vec![("pyright".to_string(), vec![env.ws.clone(), b.clone()])]
    );
    // Another trust level is another server.
    let untrusted = env.check_in(&b, &b_file, &[], 90_000, false);
    assert_eq!(lines(&untrusted), vec![1, 3], "{untrusted:#?}");
    assert_eq!(pyright(&env), 2, "an untrusted check shares nothing");
}
