//! The tsc plugin with TypeScript 7's `tsgo` through the real binary: the one-shot
//! `openfiles check` (plugins in-process) and the running service give the same answer on
//! the generated 32-file project, equal to `tsc`'s; `openfiles plugins` and `doctor` carry
//! the note of a configured `tsgo` that cannot start.

use crate::common;
#[path = "../../plugins/tsc/tests/support/ts_project.rs"]
mod ts_project;

use std::path::PathBuf;

use serde_json::Value;
use ts_project::{generate, PLANTED};

fn env_with_tsc_plugin(config: &str) -> common::Env {
    let mut env = common::Env::new();
    env.plugin_path = Some(common::plugins::plugin("tsc").into_os_string());
    std::fs::write(&env.config, config).unwrap();
    env
}

/// `openfiles check --json` over `files`: the entries without their check times.
fn check_json(env: &common::Env, files: &[PathBuf]) -> Value {
    let mut cmd = env.command(&["check", "--json", "--timeout", "120"]);
    let out = cmd.args(files).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // Exit status 1: errors were found.
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let files = v["files"].as_object_mut().unwrap();
    for entry in files.values_mut() {
        let entry = entry.as_object_mut().unwrap();
        entry.remove("checkedAt");
        // Per source, whether it answered (not when).
        if let Some(sources) = entry.get_mut("sources").and_then(Value::as_object_mut) {
            for s in sources.values_mut() {
                s["answeredAt"] = Value::Bool(s["answeredAt"].as_u64().unwrap_or(0) != 0);
            }
        }
    }
    v["files"].take()
}

fn assert_planted(files: &Value, root: &std::path::Path) {
    for (file, line, code) in PLANTED {
        let key = root.join(file).display().to_string();
        let items = files[&key]["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {files:#}"));
        assert!(
            items
                .iter()
                .any(|i| i["line"] == *line && i["code"] == *code),
            "TS{code} at {file}:{line} missing: {items:#?}"
        );
    }
}

#[test]
fn one_shot_check_and_the_service_give_the_same_answer_with_tsgo_as_with_tsc() {
    let env = env_with_tsc_plugin("[plugin.tsc]\ncompiler = \"tsgo\"\n");
    let ws = env.workspace("lib");
    let project = generate(&ws, 10);

    // No service: the plugins run in-process.
    let one_shot = check_json(&env, &project.files);
    assert_eq!(one_shot.as_object().unwrap().len(), 32);
    assert_planted(&one_shot, &project.root);

    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let through_service = check_json(&env, &project.files);
    assert_eq!(one_shot, through_service);
    drop(svc);

    // tsc gives the same answer (one-shot).
    let tsc_env = env_with_tsc_plugin("[plugin.tsc]\ncompiler = \"tsc\"\n");
    let by_tsc = check_json(&tsc_env, &project.files);
    assert_eq!(one_shot, by_tsc);
}

#[test]
fn plugins_and_doctor_note_a_configured_tsgo_that_cannot_start() {
    let env = env_with_tsc_plugin(
        "[plugin.tsc]\ncompiler = \"tsgo\"\ntsgo = \"/nonexistent/openfiles-test/tsgo\"\n",
    );
    let ws = env.workspace("ws");
    std::fs::write(ws.join("a.ts"), "export const a = 1;\n").unwrap();

    let out = env.command(&["plugins"]).output().unwrap();
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(
        human.contains("note: tsgo /nonexistent/openfiles-test/tsgo failed (cannot start"),
        "{human}"
    );
    let out = env.command(&["plugins", "--json"]).output().unwrap();
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let notes = rows[0]["capabilities"]["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{rows:#?}");

    let out = env
        .command(&["doctor", "--json", "--workspace", ws.to_str().unwrap()])
        .env("HOME", env.dir.path())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let plugin_checks: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["section"] == "plugins")
        .collect();
    assert!(
        plugin_checks.iter().any(|c| c["level"] == "warn"
            && c["message"]
                .as_str()
                .unwrap()
                .contains("tsc is used instead")),
        "{plugin_checks:#?}"
    );
}
