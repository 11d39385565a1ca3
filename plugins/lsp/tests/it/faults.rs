//! Faults: a server that never answers, one that crashes at once, and (through a scripted
//! server, since real ones cannot do it on demand) stale pushes, split pushes and an unknown
//! server request.

use crate::support;
use openfiles_plugin_api::Severity;
use serde_json::json;
use support::Env;

fn fault_server(mode: &str, ext: &str) -> serde_json::Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/fault_server.py"
    );
    json!({"command": "python3", "args": [script, mode], "extensions": [ext]})
}

#[test]
fn a_server_that_never_answers_gives_a_timeout_item_naming_it() {
    let env = Env::new(
        json!({"servers": {"silent": {"command": "sleep", "args": ["1000"], "extensions": ["hang"]}}}),
    );
    let file = env.write("x.hang", "hello\n");
    let items = env.check(&file, 1_500);
    assert_eq!(items.len(), 1, "{items:#?}");
    assert_eq!(items[0].severity, Severity::Warning);
    assert_eq!(items[0].source, "openfiles");
    assert!(items[0].message.contains("silent timed out"), "{items:#?}");
}

#[test]
fn a_server_crashing_over_and_over_is_marked_broken_with_its_stderr() {
    let env = Env::new(json!({
        "restart_backoff_ms": 1,
        "servers": {"crashy": {"command": "sh", "args": ["-c", "echo boom >&2; exit 3"], "extensions": ["crash"]}},
    }));
    let file = env.write("x.crash", "hello\n");
    let first = env.check(&file, 10_000);
    assert!(
        first[0].message.contains("crashy failed to start") && first[0].message.contains("boom"),
        "{first:#?}"
    );
    let mut broken = None;
    for _ in 0..10 {
        let items = env.check(&file, 10_000);
        assert_eq!(items.len(), 1, "{items:#?}");
        if items[0].message.contains("crashed") {
            broken = Some(items[0].message.clone());
            break;
        }
    }
    let broken = broken.expect("marked broken within 10 checks");
    assert!(
        broken.contains("crashy is not used: it crashed 6 times within 3 minutes"),
        "{broken}"
    );
    assert!(broken.contains("boom"), "{broken}");
}

#[test]
fn stale_pushes_are_never_taken_and_unknown_requests_get_method_not_found() {
    let env = Env::new(json!({"servers": {"fault": fault_server("versioned", "flt")}}));
    // "é" is two UTF-8 bytes: the server reports byte 4, the column counts characters.
    let file = env.write("x.flt", "ok\naé ERR\n");
    for round in 0..3 {
        // A new text each round: the same text again would be answered from the last fresh
        // result (issue 14.1), and this server's answer also depends on its own state.
        env.write("x.flt", &format!("ok\naé ERR\n{}", "\n".repeat(round)));
        let items = env.check(&file, 20_000);
        assert_eq!(items.len(), 1, "round {round}: {items:#?}");
        let i = &items[0];
        assert_eq!(
            (i.line, i.column, i.message.as_str()),
            (2, 4, "fresh"),
            "round {round}"
        );
        // Our reply to the server's request made during `initialize` may reach it after the
        // first didOpen (replies and notifications are independent), never after a later check.
        if round > 0 {
            assert_eq!(
                i.code.as_deref(),
                Some("-32601"),
                "the unknown request was answered MethodNotFound"
            );
        }
        assert_eq!(i.source, "fault");
    }
    env.write("x.flt", "clean\n");
    assert_eq!(
        env.check(&file, 20_000),
        vec![],
        "no stale item after the fix"
    );
}

#[test]
fn unversioned_split_pushes_settle_on_the_last_one() {
    let env = Env::new(
        json!({"quiet_ms": 400, "servers": {"fault": fault_server("unversioned", "flu")}}),
    );
    let file = env.write("x.flu", "ERR\n");
    for text in ["x\nERR\n", "ERR\n\n\nERR\n"] {
        env.write("x.flu", text);
        let items = env.check(&file, 20_000);
        let lines: Vec<u32> = items.iter().map(|i| i.line).collect();
        let want: Vec<u32> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("ERR"))
            .map(|(n, _)| n as u32 + 1)
            .collect();
        assert_eq!(lines, want, "{items:#?}");
    }
}

#[test]
fn unopened_session_files_are_reported_to_a_watching_server_when_they_change() {
    let env = Env::new(json!({"servers": {"fault": fault_server("versioned", "flt")}}));
    let file = env.write("x.flt", "ok\n");
    let other = env.write("other.flt", "one\n");
    let watched = |items: Vec<openfiles_plugin_api::Item>| -> Vec<String> {
        items
            .into_iter()
            .filter(|i| i.message.starts_with("watched"))
            .map(|i| i.message)
            .collect()
    };
    assert_eq!(watched(env.check(&file, 20_000)), Vec::<String>::new());
    let also = [other.clone()];
    assert_eq!(
        watched(env.check_with(&file, &also, 20_000)),
        ["watched 1:other.flt"],
        "first seen"
    );
    // The file's own text changes so the server computes again (the same text with nothing
    // changed would be answered from the last result, which holds the event above).
    env.write("x.flt", "ok\n\n");
    assert_eq!(
        watched(env.check_with(&file, &also, 20_000)),
        Vec::<String>::new(),
        "unchanged"
    );
    env.write("other.flt", "two, longer\n");
    assert_eq!(
        watched(env.check_with(&file, &also, 20_000)),
        ["watched 2:other.flt"],
        "changed"
    );
    std::fs::remove_file(&other).expect("rm");
    assert_eq!(
        watched(env.check_with(&file, &also, 20_000)),
        ["watched 3:other.flt"],
        "deleted"
    );
    env.write("other.flt", "back\n");
    assert_eq!(
        watched(env.check_with(&file, &also, 20_000)),
        ["watched 1:other.flt"],
        "created"
    );
}

#[test]
fn cancel_ends_a_check_waiting_on_a_silent_server() {
    use openfiles_plugin_api::{CheckRequest, Plugin};
    let env = Env::new(
        json!({"servers": {"silent": {"command": "sleep", "args": ["1000"], "extensions": ["hang"]}}}),
    );
    let file = env.write("x.hang", "hello\n");
    let req = CheckRequest {
        trusted: true,
        id: 777_001,
        workspace: env.ws.clone(),
        files: vec![file],
        also_report: vec![],
        timeout_ms: 120_000,
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let result = std::thread::scope(|s| {
        let h = s.spawn(|| env.plugin.check(req));
        // Cancel until the check has seen it (it may not have registered yet).
        while !h.is_finished() && started.elapsed() < std::time::Duration::from_secs(60) {
            env.plugin.cancel(777_001);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        h.join().expect("check thread")
    });
    assert!(result
        .expect_err("cancelled checks answer an error")
        .is_cancelled());
}

#[test]
fn a_server_that_initializes_but_never_publishes_times_out_by_name() {
    let env = Env::new(json!({"servers": {"mute": fault_server("mute", "mut")}}));
    let file = env.write("x.mut", "hello\n");
    for _ in 0..2 {
        let items = env.check(&file, 1_500);
        assert_eq!(items.len(), 1, "{items:#?}");
        assert!(items[0].message.contains("mute timed out"), "{items:#?}");
    }
}
