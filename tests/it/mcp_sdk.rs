//! `openfiles mcp` against a real `openfiles serve`, driven by the official MCP Python SDK
//! (`tests/mcp_support/client.py`: initialize, tool schemas, terminals, exec, logs,
//! workers, bus events, bad arguments, cancellation, fresh diagnostics from real
//! `cargo check`), and the JSON-RPC edge cases spoken raw over stdio.

use crate::common;

use std::process::Command;

use common::*;
use serde_json::{json, Value};

/// Python with the `mcp` SDK and `jsonschema`, installing them with pip when missing.
fn python_with_sdk() -> &'static str {
    let has = || {
        Command::new("python3")
            .args(["-c", "import mcp, jsonschema, anyio"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has() {
        let st = Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "mcp",
                "jsonschema",
            ])
            .status()
            .expect("run pip");
        assert!(st.success(), "pip install mcp failed");
        assert!(has(), "the mcp SDK is still missing after pip install");
    }
    "python3"
}

#[test]
fn the_python_sdk_drives_terminals_workers_and_diagnostics() {
    let python = python_with_sdk();
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("cargo_check").into_os_string());
    let home = env.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    env.extra_env.push(("HOME".into(), home.into_os_string()));
    env.extra_env.push(("SHELL".into(), "/bin/bash".into()));
    let ws = env.workspace("crate");
    let broken = rust_crate_with_type_error(&ws);
    let _svc = env.serve(&[]);

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_support/client.py");
    let mut cmd = Command::new(python);
    cmd.arg(script)
        .env("OPENFILES_BIN", bin())
        .env("WORKSPACE", &ws)
        .env("BROKEN_FILE", &broken)
        .env("AGENT_DIR", env.dir.path())
        .env("OPENFILES_SOCKET", &env.socket)
        .env("OPENFILES_STATE_DIR", &env.state)
        .env("OPENFILES_CONFIG", &env.config)
        .envs(env.extra_env.iter().map(|(k, v)| (k, v)));
    let out = cmd.output().expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("no report ({e}):\n{stdout}\n{stderr}"));
    assert_eq!(report["serverName"], "openfiles");
    assert_eq!(report["protocolVersion"], "2025-11-25");
    assert_eq!(report["tools"], 52, "41 Claws tools and 11 OpenFiles tools");
    assert!(
        report["exec"].as_str().unwrap().starts_with("exit 3\n"),
        "{report}"
    );
    assert_eq!(report["worker"], "worker 'w1' COMPLETED");
    assert!(report["progress"].as_u64().unwrap() >= 1);
    assert_eq!(report["workers_wait"], "completed");
    assert_eq!(report["fleet_complete"], 2);
    assert_eq!(report["agent_worker"], "worker 'agent' COMPLETED");
    assert_eq!(report["drained_pings"], 1);
    assert_eq!(report["lifecycle_plan_phase"], "PLAN");
    assert_eq!(report["bad_arguments_rejected"], 4);
    let diag = report["diagnostics"].as_str().unwrap();
    assert!(
        diag.starts_with("- src/main.rs:2:18 error E0308 (rustc)"),
        "{diag}"
    );
    let events: Vec<&str> = report["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(events.contains(&"system.worker.spawned"), "{events:?}");
    assert!(events.contains(&"system.worker.completed"), "{events:?}");
}

#[test]
fn versions_are_negotiated_and_bad_messages_get_errors_not_crashes() {
    let env = Env::new();
    let ws = env.workspace("ws");
    // No service runs: the protocol still works, and tools say what is missing.
    let mut mcp = common::mcp::Mcp::start(&env, &ws);
    let init = mcp.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "openfiles");
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    let again = mcp.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "initialize",
        "params": {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
    assert_eq!(again["result"]["protocolVersion"], "2025-11-25", "{again}");

    mcp.send("{not json");
    let parse = mcp.recv();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    let unknown = mcp.ask(json!({"jsonrpc": "2.0", "id": "x", "method": "resources/list"}));
    assert_eq!(unknown["id"], "x");
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    let bad = mcp.ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "claws_read_log", "arguments": {"id": "1", "lines": "ten"}}}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`lines` must be an integer"),
        "{bad}"
    );

    let no_service = mcp.ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "openfiles_status", "arguments": {}}}));
    assert_eq!(no_service["result"]["isError"], true, "{no_service}");
    assert!(
        no_service["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("no openfiles service"),
        "{no_service}"
    );

    let list = mcp.ask(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}));
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 52);
    assert!(
        tools.iter().all(|t| t.get("forward").is_none()),
        "internal rules leak"
    );
    let pong = mcp.ask(json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}));
    assert_eq!(pong["result"], json!({}));
}
