//! Issue 14, feedback an agent can trust, through a real `openfiles serve` with the real
//! language servers (clangd, typescript-language-server) beside the real `tsc`:
//! an unchanged file reported again settles; no stale item of one source beside a fresh one
//! of another; `openfiles check` answers like the service; a slow project-wide source never
//! silences a fast one. Speeds are in `benches/trust.rs`; nothing here asserts a duration.

use crate::common;

use std::path::Path;

use common::plugins::{path_list, plugin};
use common::typescript::{install_test_deps, module_text, ts_project, tsc_runs, tsc_wrapper};
use common::{diagnostics, wait_until, Env};
use openfiles_wire::spec::FileEntry;
use serde_json::{json, Value};

/// A service environment with the lsp and tsc plugins and `config` (TOML).
fn ts_env(config: &str) -> Env {
    install_test_deps();
    let mut env = Env::new();
    env.plugin_path = Some(path_list(&[plugin("lsp"), plugin("tsc")]));
    std::fs::write(&env.config, config).unwrap();
    env
}

fn messages(e: &FileEntry) -> Vec<String> {
    e.items.iter().map(|i| i.message.clone()).collect()
}

fn entry(ws: &Path, key: &str) -> Option<FileEntry> {
    diagnostics(ws).and_then(|d| d.files.get(key).cloned())
}

/// Issue 14.1 through the service: the same unchanged C file reported twice (the watcher's
/// event, then the hook's report) settles with the same items, not with "clangd timed out".
#[test]
fn unchanged_c_file_reported_twice_settles_with_the_same_items() {
    install_test_deps();
    let mut env = Env::new();
    env.plugin_path = Some(plugin("lsp").into_os_string());
    std::fs::write(
        &env.config,
        "[diagnostics]\ncheck_timeout_ms = 10000\n[watch]\nenabled = false\n",
    )
    .unwrap();
    let ws = env.workspace("clib");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join("compile_flags.txt"), "-xc\n-std=c11\n").unwrap();
    let file = ws.join("lib.c");
    std::fs::write(
        &file,
        "int f(int a);\nint g(void) {\n  return f(1, 2) + missing;\n}\n",
    )
    .unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let r = env.edited(&[&file]);
    let first = env.wait(&[&file], r.ts, 120_000);
    assert!(first.complete, "{first:?}");
    let first = first.workspaces[0].files["lib.c"].clone();
    assert_eq!(first.errors, 2, "{first:?}");
    let r = env.edited(&[&file]);
    let again = env.wait(&[&file], r.ts, 120_000);
    assert!(again.complete, "{again:?}");
    let again = &again.workspaces[0].files["lib.c"];
    assert_eq!(again.items, first.items, "same items, no timeout note");
}

/// Issue 14.2: changing a function's parameters in `util.ts` and reporting only that file
/// refreshes `m1.ts` through the project-wide `tsc` run; the language server's old item for
/// `m1.ts` ("Expected 1 arguments, but got 2.") must not stay beside tsc's new one: the file
/// is re-checked by the language server, and until then shows only fresh items.
#[test]
fn a_file_refreshed_by_tsc_is_rechecked_by_the_language_server() {
    let env = ts_env("[watch]\nenabled = false\n");
    let ws = env.workspace("web");
    let p = ts_project(&ws, 3);
    let caller = &p.modules[1];
    std::fs::write(caller, module_text(1, "export const w = scale(1, 2);\n")).unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let r = env.edited(&[caller, &p.util]);
    let w = env.wait(&[caller, &p.util], r.ts, 120_000);
    assert!(w.complete, "{w:?}");
    let before = &w.workspaces[0].files["src/m1.ts"];
    assert!(
        messages(before)
            .iter()
            .any(|m| m.contains("Expected 1 arguments, but got 2")),
        "{before:?}"
    );
    assert!(
        before.items.iter().any(|i| i.source == "typescript"),
        "the language server reported it: {before:?}"
    );
    assert_eq!(
        before.errors, 1,
        "identical items of both sources once: {before:?}"
    );

    std::fs::write(
        &p.util,
        "export function scale(x: number, y: number, z: number): number {\n  return x * y * z;\n}\n",
    )
    .unwrap();
    let r = env.edited(&[&p.util]);
    let w = env.wait(&[&p.util], r.ts, 120_000);
    assert!(w.complete, "{w:?}");
    // m1.ts now breaks differently; wait until its entry holds tsc's new error, settled.
    let mut seen = Vec::new();
    wait_until("m1.ts settled with the new error", || {
        let Some(e) = entry(&ws, "src/m1.ts") else {
            return false;
        };
        // Every state written since the edit was handled must be free of the old message.
        let new = messages(&e)
            .iter()
            .any(|m| m.contains("Expected 3 arguments, but got 2"));
        if new || e.checked_at >= r.ts {
            seen.push(messages(&e));
        }
        e.checked_at >= r.ts
            && messages(&e)
                .iter()
                .any(|m| m.contains("Expected 3 arguments, but got 2"))
    });
    for state in &seen {
        assert!(
            state
                .iter()
                .all(|m| !m.contains("Expected 1 arguments, but got 2")),
            "a stale item beside a fresh one: {state:?}"
        );
    }
    let e = entry(&ws, "src/m1.ts").unwrap();
    assert!(
        e.items.iter().any(|i| i.source == "typescript"),
        "the language server answered for the new content: {e:?}"
    );
    assert!(e.sources.values().all(|s| s.answered_at >= r.ts), "{e:?}");
}

/// The hook's payload for an edit of `file`.
fn hook(env: &Env, ws: &Path, file: &Path) -> String {
    let payload =
        json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": file}}).to_string();
    let mut cmd = env.command(&["hook", "--agent", "claude", "--verbose"]);
    let out = common::hook::run_hook(&mut cmd, &payload);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if stdout.trim().is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Warm both sources on the whole project.
fn warm(env: &Env, p: &common::typescript::TsProject) {
    let mut all: Vec<&Path> = p.modules.iter().map(|m| m.as_path()).collect();
    all.push(&p.util);
    let r = env.edited(&all);
    assert!(env.wait(&all, r.ts, 240_000).complete);
}

/// Issue 14.4: with a slow `tsc` (it starts 4 s late), the hook returns what the language
/// server found once `partial_after_ms` has passed, and names tsc as still running;
/// `diagnostics.json` records per source whether it answered for the current content.
#[test]
fn hook_prints_what_the_fast_source_found_while_tsc_runs() {
    let env = ts_env("");
    let ws = env.workspace("web");
    let p = ts_project(&ws, 4);
    let slow = tsc_wrapper(env.dir.path(), 4);
    std::fs::write(
        &env.config,
        format!(
            "[watch]\nenabled = false\n[hooks]\ntimeout_ms = 240000\npartial_after_ms = 100\n[plugin.tsc]\ntsc = {:?}\n",
            slow.display().to_string()
        ),
    )
    .unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    warm(&env, &p);

    let edited = &p.modules[2];
    std::fs::write(
        edited,
        module_text(2, "export const oops: number = \"text\";\n"),
    )
    .unwrap();
    let text = hook(&env, &ws, edited);
    assert!(
        text.contains("src/m2.ts:8:14 error 2322 (typescript)"),
        "the language server's error: {text}"
    );
    assert!(
        text.contains("\nStill checking: tsc (more problems may follow).\n"),
        "{text}"
    );
    // The hook was answered from memory; the written file follows: it records the language
    // server's answer while tsc (4 s late) has not answered yet.
    wait_until("m2.ts written with the language server's answer", || {
        entry(&ws, "src/m2.ts").is_some_and(|e| {
            e.sources.get("lsp").is_some_and(|s| s.answered_at > 0) || e.checked_at != 0
        })
    });
    let e = entry(&ws, "src/m2.ts").unwrap();
    if e.checked_at == 0 {
        assert_eq!(e.sources["tsc"].answered_at, 0, "{e:?}");
        assert_eq!(e.errors, 1, "the fast source's error is in the file: {e:?}");
    }
    // tsc answers later; then the entry settles with both sources answered.
    wait_until("m2.ts settled", || {
        entry(&ws, "src/m2.ts").is_some_and(|e| e.checked_at != 0)
    });
    let e = entry(&ws, "src/m2.ts").unwrap();
    assert!(e.sources.values().all(|s| s.answered_at > 0), "{e:?}");
    assert_eq!(e.errors, 1, "tsc's identical item merged: {e:?}");
}

/// Issue 14.4: at the hook's deadline, what the finished sources found is printed (never
/// nothing), with the running sources named.
#[test]
fn hook_deadline_prints_finished_sources_not_nothing() {
    let env = ts_env("");
    let ws = env.workspace("web");
    let p = ts_project(&ws, 3);
    let slow = tsc_wrapper(env.dir.path(), 0);
    std::fs::write(
        &env.config,
        format!(
            "[watch]\nenabled = false\n[hooks]\ntimeout_ms = 240000\n[plugin.tsc]\ntsc = {:?}\n",
            slow.display().to_string()
        ),
    )
    .unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    warm(&env, &p);
    // Now tsc becomes slow, and the hook's deadline short with no early answer.
    tsc_wrapper(env.dir.path(), 30);
    std::fs::write(
        &env.config,
        format!(
            "[watch]\nenabled = false\n[hooks]\ntimeout_ms = 2000\npartial_after_ms = 600000\n[plugin.tsc]\ntsc = {:?}\n",
            slow.display().to_string()
        ),
    )
    .unwrap();
    common::signal(svc.pid(), libc::SIGHUP);
    wait_until("config reloaded", || {
        diagnostics(&ws).is_some_and(|d| d.hook.timeout_ms == 2000)
    });
    let edited = &p.modules[1];
    std::fs::write(
        edited,
        module_text(1, "export const oops: number = \"text\";\n"),
    )
    .unwrap();
    let text = hook(&env, &ws, edited);
    assert!(
        text.contains("src/m1.ts:") && text.contains("error 2322 (typescript)"),
        "{text}"
    );
    assert!(text.contains("Still checking: tsc"), "{text}");
}

/// Issue 14.3: `openfiles check` without a service goes through the same pipeline: one tsc
/// run for the project (not one per file), and an item both sources report identically once.
#[test]
fn check_in_process_merges_sources_and_runs_tsc_once_per_project() {
    let env = ts_env("");
    let ws = env.workspace("web");
    let p = ts_project(&ws, 5);
    let counting = tsc_wrapper(env.dir.path(), 0);
    std::fs::write(
        &env.config,
        format!("[plugin.tsc]\ntsc = {:?}\n", counting.display().to_string()),
    )
    .unwrap();
    let mut args = vec!["check".to_owned(), "--json".to_owned()];
    args.extend(p.modules.iter().map(|m| m.display().to_string()));
    args.push(p.legacy.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = env.command(&args).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        out.status.code(),
        Some(1),
        "the pre-existing error fails it"
    );
    let files = v["files"].as_object().unwrap();
    assert_eq!(files.len(), 6, "{v:#}");
    let legacy = files
        .iter()
        .find(|(k, _)| k.ends_with("legacy.ts"))
        .map(|(_, e)| e)
        .unwrap();
    assert_eq!(
        legacy["errors"], 1,
        "one item, not one per source: {legacy:#}"
    );
    assert_eq!(legacy["items"][0]["code"], "2322");
    assert_eq!(tsc_runs(env.dir.path()), 1, "one tsc run for the project");
}

/// Issue 14.3: with the service running, `check DIR` checks the directory's files
/// (respecting ignores), and a named path that is not checked is an error naming why.
#[test]
fn check_with_the_service_expands_directories_and_refuses_unchecked_paths() {
    let env = ts_env("[watch]\nenabled = false\n");
    let ws = env.workspace("web");
    let p = ts_project(&ws, 2);
    std::fs::create_dir_all(ws.join("node_modules/dep")).unwrap();
    std::fs::write(
        ws.join("node_modules/dep/index.ts"),
        "export const x = 1;\n",
    )
    .unwrap();
    std::fs::write(ws.join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir_all(ws.join("build")).unwrap();
    std::fs::write(
        ws.join("build/out.ts"),
        "export const y: number = \"no\";\n",
    )
    .unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);

    let out = env
        .command(&["check", "--json", ws.join("src").to_str().unwrap()])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let mut keys: Vec<&String> = v["files"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys.len(), 4, "util, m0, m1, legacy: {keys:?}");
    assert_eq!(out.status.code(), Some(1), "legacy.ts has an error");
    assert!(p.legacy.exists());

    // The whole workspace: node_modules and the gitignored build/ are left out.
    let out = env
        .command(&["check", "--json", ws.to_str().unwrap()])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&String> = v["files"].as_object().unwrap().keys().collect();
    assert!(
        keys.iter()
            .all(|k| !k.contains("node_modules") && !k.contains("build/")),
        "{keys:?}"
    );

    // A named ignored file, and a file outside every workspace: exit 2, with the reason.
    let out = env
        .command(&[
            "check",
            ws.join("node_modules/dep/index.ts").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("index.ts") && err.contains("ignored"), "{err}");

    let outside = env.dir.path().join("elsewhere.ts");
    std::fs::write(&outside, "export const z = 1;\n").unwrap();
    let out = env
        .command(&["check", outside.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout} {err}");
    assert!(err.contains("elsewhere.ts"), "{err}");
    assert!(!stdout.contains("0 file(s) checked"), "{stdout}");
}
