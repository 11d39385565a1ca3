//! The claws/2 orchestration layer over real sockets and real shells (issue 17): peers and
//! identity, the publish rules and envelope, the command channel, role broadcast with
//! injection, `introspect`'s types, the `[claws]` settings, tasks, lifecycle with the plan
//! gate, monitors, waves, pipelines, RPC and schemas.

use crate::common;

use common::claws::TestServer;
use openfiles::config::ClawsConfig;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn peers_roles_and_the_command_channel_subscription() {
    let s = TestServer::start().await;
    let mut obs = s.conn().await;
    let v = obs
        .ok(json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "observer", "peerName": "o"}))
        .await;
    assert_eq!(v["protocol"], "claws/2");
    assert_eq!(
        (v["orchestratorPresent"].clone(), v["restored"].clone()),
        (json!(false), json!(false))
    );
    let oid = v["peerId"].as_str().unwrap().to_owned();
    obs.subscribe("system.peer.*").await;
    let (mut orch, orch_id) = s.peer("orchestrator", json!({"peerName": "boss"})).await;
    let j = obs.until("system.peer.joined").await;
    assert_eq!(
        (
            j["payload"]["peerId"].as_str(),
            j["payload"]["role"].as_str()
        ),
        (Some(orch_id.as_str()), Some("orchestrator"))
    );
    assert!(j["payload"]["ts"].as_str().unwrap().ends_with('Z'), "{j}");
    // One root orchestrator.
    let mut second = s.conn().await;
    let e = second
        .err(json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "orchestrator"}))
        .await;
    assert_eq!(e, "root orchestrator already registered");
    // A wave's lead registers as orchestrator with its waveId: admitted (the extension scopes
    // the single orchestrator to root peers); the root one is still reported present.
    let mut lead = s.conn().await;
    let v = lead
        .ok(
            json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "orchestrator",
                   "peerName": "lead", "waveId": "w-1"}),
        )
        .await;
    assert_eq!(v["rootOrchestratorPresent"], true, "{v}");
    // Workers hear their command channel without subscribing; observers do not.
    let (mut w, wid) = s
        .peer(
            "worker",
            json!({"peerName": "w1", "capabilities": ["shell"]}),
        )
        .await;
    let v = w
        .ok(json!({"id": 2, "cmd": "hello", "protocol": "claws/2", "role": "worker"}))
        .await;
    assert_eq!(
        (
            v["peerId"].as_str(),
            v["idempotent"].as_bool(),
            v["rootOrchestratorPresent"].as_bool()
        ),
        (Some(wid.as_str()), Some(true), Some(true))
    );
    let v = orch
        .ok(json!({"id": 3, "cmd": "publish", "topic": format!("cmd.{wid}.pause"), "payload": {}}))
        .await;
    assert_eq!(v["deliveredTo"], 1, "{v}");
    let f = w.until(&format!("cmd.{wid}.pause")).await;
    assert_eq!(f["from"], orch_id.as_str());
    let v = orch
        .ok(json!({"id": 4, "cmd": "publish", "topic": format!("cmd.{oid}.pause"), "payload": {}}))
        .await;
    assert_eq!(v["deliveredTo"], 0, "observers are not subscribed: {v}");
    let v = w.ok(json!({"id": 5, "cmd": "ping"})).await;
    assert!(v["serverTime"].as_u64().unwrap() > 0);
    drop(w);
    let l = obs.until("system.peer.left").await;
    assert_eq!(
        (
            l["payload"]["peerId"].as_str(),
            l["payload"]["reason"].as_str()
        ),
        (Some(wid.as_str()), Some("clean"))
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn publish_rules_envelope_and_schema_validation() {
    // The ownership rules are a setting (the extension has none): on here.
    let s = TestServer::with(openfiles::config::ClawsConfig {
        strict_topics: true,
        ..Default::default()
    })
    .await;
    let (mut w, wid) = s.peer("worker", json!({"peerName": "w1"})).await;
    let (mut obs, _) = s.peer("observer", json!({})).await;
    obs.subscribe("worker.**").await;
    obs.subscribe("system.malformed.received").await;
    for (topic, want) in [
        ("worker.p_other.boot", "publish forbidden — not your topic"),
        (
            "system.peer.joined",
            "publish forbidden — system.* is server-only",
        ),
        (
            "cmd.p_x.abort",
            "publish forbidden — cmd.* is orchestrator-only",
        ),
    ] {
        let e = w
            .err(json!({"id": 1, "cmd": "publish", "topic": topic, "payload": {}}))
            .await;
        assert_eq!(e, want, "{topic}");
    }
    // An envelope is stamped: ts_server added, from_peer filled in; a foreign one refused.
    let env = json!({"v": 1, "id": "123e4567-e89b-12d3-a456-426614174000", "from_name": "w1",
                     "ts_published": "2026-01-01T00:00:00.000Z", "schema": "note-v1", "data": {"x": 1}});
    w.ok(json!({"id": 2, "cmd": "publish", "topic": format!("worker.{wid}.note"), "payload": env}))
        .await;
    let f = obs.until(&format!("worker.{wid}.note")).await;
    assert_eq!(f["payload"]["from_peer"], wid.as_str());
    assert!(
        f["payload"]["ts_server"].as_str().unwrap().ends_with('Z'),
        "{f}"
    );
    let mut forged = env.clone();
    forged["from_peer"] = json!("p_someone");
    let e = w
        .err(json!({"id": 3, "cmd": "publish", "topic": format!("worker.{wid}.note"), "payload": forged}))
        .await;
    assert_eq!(
        e,
        "publish forbidden — from_peer does not match the publisher"
    );
    // A known topic with bad data: announced as malformed, still delivered (not strict),
    // wrapped in an envelope.
    w.ok(json!({"id": 4, "cmd": "publish", "topic": format!("worker.{wid}.boot"), "payload": {"model": ""}}))
        .await;
    let m = obs.until("system.malformed.received").await;
    assert_eq!(m["payload"]["from"], wid.as_str());
    assert!(m["payload"]["error"].as_array().unwrap().len() >= 5, "{m}");
    let f = obs.until(&format!("worker.{wid}.boot")).await;
    assert_eq!(
        (
            f["payload"]["v"].clone(),
            f["payload"]["data"]["model"].clone()
        ),
        (json!(1), json!(""))
    );
    s.stop().await;

    // Strict validation refuses with the issues.
    let s = TestServer::with(ClawsConfig {
        strict_event_validation: true,
        ..Default::default()
    })
    .await;
    let (mut w, wid) = s.peer("worker", json!({})).await;
    let v = w
        .call(json!({"id": 5, "cmd": "publish", "topic": format!("worker.{wid}.heartbeat"), "payload": {"current_phase": "NOPE"}}))
        .await;
    assert_eq!(
        (v["ok"].clone(), v["error"].clone()),
        (json!(false), json!("payload:invalid")),
        "{v}"
    );
    assert!(
        v["details"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["path"] == json!(["current_phase"])),
        "{v}"
    );
    s.stop().await;
}

/// By default topics belong to no one, as in the editor extension: Claws's own MCP server
/// publishes `worker.mcp.test.publish` and `tool.<name>.invoked` from its orchestrator
/// connection (`mcp-publish-flow` was refused `not your topic` before).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn by_default_any_peer_publishes_on_any_topic_as_the_extension_does() {
    let s = TestServer::start().await;
    let (mut w, _) = s.peer("worker", json!({"peerName": "w1"})).await;
    for topic in [
        "worker.mcp.test.publish",
        "worker.p_other.boot",
        "tool.claws_list.invoked",
    ] {
        w.ok(json!({"id": 1, "cmd": "publish", "topic": topic, "payload": {}}))
            .await;
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deliver_cmd_numbers_per_worker_and_acks_reach_the_orchestrator() {
    let s = TestServer::start().await;
    let (mut orch, oid) = s.peer("orchestrator", json!({})).await;
    let (mut w1, w1id) = s.peer("worker", json!({})).await;
    let (mut w2, w2id) = s.peer("worker", json!({})).await;
    orch.subscribe("cmd.*.ack").await;
    let deliver = |target: &str, key: &str| {
        json!({"id": key, "cmd": "deliver-cmd", "targetPeerId": target, "cmdTopic": format!("cmd.{target}.abort"),
               "payload": {"reason": key}, "idempotencyKey": key})
    };
    assert_eq!(orch.ok(deliver(&w1id, "k1")).await["seq"], 1);
    assert_eq!(orch.ok(deliver(&w1id, "k2")).await["seq"], 2);
    let dup = orch.ok(deliver(&w1id, "k1")).await;
    assert_eq!(
        (dup["duplicate"].clone(), dup["seq"].clone()),
        (json!(true), json!(1))
    );
    assert_eq!(
        orch.ok(deliver(&w2id, "k3")).await["seq"],
        1,
        "numbers are per worker"
    );
    for (seq, reason) in [(1, "k1"), (2, "k2")] {
        let f = w1.until(&format!("cmd.{w1id}.abort")).await;
        assert_eq!(
            (
                f["sequence"].clone(),
                f["payload"]["reason"].clone(),
                f["from"].clone()
            ),
            (json!(seq), json!(reason), json!(oid))
        );
    }
    assert_eq!(w2.until(&format!("cmd.{w2id}.abort")).await["sequence"], 1);
    // The duplicate pushed nothing: the next frame w1 sees is a new delivery.
    orch.ok(deliver(&w1id, "k4")).await;
    assert_eq!(
        w1.until(&format!("cmd.{w1id}.abort")).await["payload"]["reason"],
        "k4"
    );
    // Acks fan out on cmd.<worker>.ack.
    w1.ok(
        json!({"id": 9, "cmd": "cmd.ack", "seq": 2, "status": "executed", "correlation_id": "c-1"}),
    )
    .await;
    let a = orch.until(&format!("cmd.{w1id}.ack")).await;
    assert_eq!(
        a["payload"],
        json!({"seq": 2, "status": "executed", "workerPeerId": w1id, "correlation_id": "c-1"})
    );
    // Errors and roles.
    let e = orch
        .err(json!({"id": 1, "cmd": "deliver-cmd", "cmdTopic": "x", "idempotencyKey": "k"}))
        .await;
    assert_eq!(e, "deliver-cmd:missing-targetPeerId");
    let e = orch.err(json!({"id": 1, "cmd": "deliver-cmd", "targetPeerId": "p_nobody", "cmdTopic": "x", "idempotencyKey": "k9"})).await;
    assert_eq!(e, "deliver-cmd:target-not-found:p_nobody");
    assert_eq!(
        w1.err(deliver(&w2id, "k5")).await,
        "requires role: orchestrator"
    );
    assert_eq!(
        orch.err(json!({"id": 1, "cmd": "cmd.ack", "seq": 1, "status": "executed"}))
            .await,
        "requires role: worker"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn broadcast_inject_types_numbered_commands_into_worker_terminals() {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    let (mut orch, _) = s.peer("orchestrator", json!({})).await;
    let (mut w, _) = s.peer("worker", json!({"terminalId": t})).await;
    let (mut o, _) = s.peer("observer", json!({})).await;
    for n in 1..=2 {
        let v = orch
            .ok(json!({"id": n, "cmd": "broadcast", "text": "[CLAWS_CMD r=go] true", "targetRole": "worker", "inject": true}))
            .await;
        assert_eq!(v["deliveredTo"], 1);
        let f = w.until("system.broadcast").await;
        assert_eq!(
            f["payload"]["text"],
            format!("[CLAWS_CMD seq={n} r=go] true")
        );
        s.wait_log(&t, &format!("[CLAWS_CMD seq={n} r=go]")).await;
    }
    // Without inject the text is not numbered.
    orch.ok(
        json!({"id": 3, "cmd": "broadcast", "text": "[CLAWS_CMD r=x] y", "targetRole": "observer"}),
    )
    .await;
    assert_eq!(
        o.until("system.broadcast").await["payload"]["text"],
        "[CLAWS_CMD r=x] y"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn introspect_has_the_seed_fields_with_the_seed_types() {
    let s = TestServer::start().await;
    let v = s.ok(json!({"id": 1, "cmd": "introspect"})).await;
    assert!(
        v["extensionVersion"].is_string() && v["nodeVersion"].is_string(),
        "{v}"
    );
    assert!(v["nodeVersion"].as_str().unwrap().contains("openfiles"));
    assert!(v["electronAbi"].is_number(), "clients check its type: {v}");
    assert!(v["nodePty"].is_object() && v["nodePty"]["loaded"].is_boolean());
    assert!(v["platform"].is_string() && v["servers"].is_array());
    assert!(v["terminals"].is_u64() && v["uptime_ms"].is_u64());
    s.stop().await;
}

#[test]
fn every_extension_setting_is_accepted_in_snake_case() {
    let text = r#"
[claws]
exec_timeout_ms = 1000
poll_limit = 10
strict_event_validation = true
heartbeat_interval_ms = 5000
max_publish_rate_hz = 50
max_queue_depth = 7
socket_path = ".claws/claws.sock"
log_directory = ".claws/terminals"
default_wrapped = true
max_output_bytes = 1024
max_history = 9
max_capture_bytes = 4096
enable_web_socket = true
web_socket_port = 9000
[claws.event_log]
retention_days = 3
compact = false
[claws.auth]
enabled = true
token_path = "/tmp/secret"
[claws.web_socket]
enabled = false
port = 9100
cert_path = "/tmp/c.pem"
key_path = "/tmp/k.pem"
[claws.lifecycle]
require_plan = true
"#;
    let cfg = openfiles::config::Config::parse(text, std::path::Path::new("c.toml")).unwrap();
    let c = cfg.claws.effective();
    assert_eq!(
        (
            c.max_publish_rate_hz,
            c.max_queue_depth,
            c.heartbeat_interval_ms
        ),
        (50, 7, 5000)
    );
    assert_eq!(
        (c.history_output_bytes, c.history_events, c.ring_bytes),
        (1024, 9, 4096)
    );
    assert_eq!(
        (c.web_socket.enabled, c.web_socket.port),
        (true, 9000),
        "the flat names win"
    );
    assert!(
        c.auth.enabled && c.lifecycle.require_plan && c.default_wrapped && !c.event_log.compact
    );
    assert_eq!(c.event_log.retention_days, 3);
    let d = ClawsConfig::default();
    assert_eq!(
        (
            d.max_publish_rate_hz,
            d.max_queue_depth,
            d.heartbeat_interval_ms,
            d.web_socket.port
        ),
        (10_000, 500, 60_000, 9876)
    );
    assert!(
        !d.lifecycle.require_plan
            && !d.auth.enabled
            && !d.web_socket.enabled
            && !d.strict_event_validation
    );
    let e = openfiles::config::Config::parse(
        "[claws.auth]\ntokenPath = \"x\"\n",
        std::path::Path::new("c.toml"),
    );
    assert!(e.is_err(), "camelCase is not the TOML spelling");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_round_trip_persist_and_fail_when_the_assignee_leaves() {
    let s = TestServer::start().await;
    let (mut orch, _) = s.peer("orchestrator", json!({})).await;
    let (mut w, wid) = s.peer("worker", json!({})).await;
    let (mut other, _) = s.peer("worker", json!({})).await;
    orch.subscribe("task.**").await;
    w.subscribe(&format!("task.assigned.{wid}")).await;
    let e = orch
        .err(json!({"id": 1, "cmd": "task.assign", "title": "t"}))
        .await;
    assert_eq!(e, "title, assignee, and prompt are required");
    let e = orch
        .err(json!({"id": 1, "cmd": "task.assign", "title": "t", "assignee": "p_x", "prompt": "p"}))
        .await;
    assert_eq!(e, "assignee peer not found: p_x");
    let v = orch
        .ok(json!({"id": 2, "cmd": "task.assign", "title": "audit", "assignee": wid, "prompt": "audit src/"}))
        .await;
    let tid = v["taskId"].as_str().unwrap().to_owned();
    assert_eq!(tid, "t_001");
    let a = w.until(&format!("task.assigned.{wid}")).await;
    assert_eq!(
        (
            a["payload"]["taskId"].as_str(),
            a["payload"]["status"].as_str(),
            a["payload"]["prompt"].as_str()
        ),
        (Some("t_001"), Some("pending"), Some("audit src/"))
    );
    assert_eq!(
        other
            .err(json!({"id": 3, "cmd": "task.update", "taskId": tid, "status": "running"}))
            .await,
        "not your task"
    );
    w.ok(json!({"id": 4, "cmd": "task.update", "taskId": tid, "status": "running", "progressPct": 40, "note": "half"}))
        .await;
    let st = orch.until("task.status").await;
    assert_eq!(
        (
            st["payload"]["status"].as_str(),
            st["payload"]["progressPct"].as_u64()
        ),
        (Some("running"), Some(40))
    );
    w.ok(json!({"id": 5, "cmd": "task.complete", "taskId": tid, "status": "succeeded", "result": {"files": 3}}))
        .await;
    let c = orch.until("task.completed").await;
    assert_eq!(
        c["payload"],
        json!({"taskId": tid, "status": "succeeded", "result": {"files": 3}, "artifacts": null})
    );
    w.ok(json!({"id": 6, "cmd": "task.complete", "taskId": tid, "status": "failed"}))
        .await; // idempotent
    assert_eq!(
        w.err(json!({"id": 7, "cmd": "task.update", "taskId": tid, "status": "running"}))
            .await,
        "task already completed"
    );
    let l = orch
        .ok(json!({"id": 8, "cmd": "task.list", "status": "succeeded"}))
        .await;
    assert_eq!(l["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(l["tasks"][0]["result"], json!({"files": 3}));
    // Cancel, then the assignee leaves: its open task fails.
    let t2 = orch
        .ok(json!({"id": 9, "cmd": "task.assign", "title": "b", "assignee": wid, "prompt": "b"}))
        .await["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    orch.ok(json!({"id": 10, "cmd": "task.cancel", "taskId": t2, "reason": "enough"}))
        .await;
    let c = orch.until(&format!("task.cancel_requested.{wid}")).await;
    assert_eq!(c["payload"]["reason"], "enough");
    drop(w);
    let f = orch.until("task.completed").await;
    assert_eq!(
        (
            f["payload"]["taskId"].as_str(),
            f["payload"]["status"].as_str()
        ),
        (Some(t2.as_str()), Some("failed"))
    );
    let l = orch
        .ok(json!({"id": 11, "cmd": "task.list", "assignee": wid}))
        .await;
    assert_eq!(l["tasks"][1]["note"], "assignee disconnected");
    // The task events are in the event log: a replay from the start sees them.
    let mut r = s.conn().await;
    r.ok(json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "observer"}))
        .await;
    r.ok(json!({"id": 2, "cmd": "subscribe", "topic": "task.completed", "fromCursor": "0001:0"}))
        .await;
    let mut replayed = Vec::new();
    loop {
        let f = r.push().await;
        if f["push"] == "caught-up" {
            break;
        }
        replayed.push(f["payload"]["taskId"].as_str().unwrap().to_owned());
    }
    assert_eq!(replayed, vec![tid, t2]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lifecycle_phases_gates_and_the_plan_gate_setting() {
    let cfg = ClawsConfig {
        lifecycle: openfiles::config::ClawsLifecycleConfig { require_plan: true },
        ..Default::default()
    };
    let s = TestServer::with(cfg).await;
    let v = s
        .call(json!({"id": 1, "cmd": "create", "env": s.env()}))
        .await;
    assert_eq!(
        (v["ok"].clone(), v["error"].clone()),
        (json!(false), json!("lifecycle:plan-required")),
        "{v}"
    );
    assert!(v["message"].as_str().unwrap().contains("No PLAN logged"));
    let snap = s.ok(json!({"id": 2, "cmd": "lifecycle.snapshot"})).await;
    assert!(snap["state"].is_null());
    for (req, want) in [
        (json!({"plan": " "}), "lifecycle:plan-empty"),
        (json!({"plan": "p"}), "lifecycle:worker-mode-required"),
        (
            json!({"plan": "p", "workerMode": "single", "expectedWorkers": 0}),
            "lifecycle:expected-workers-required",
        ),
        (
            json!({"plan": "p", "workerMode": "swarm", "expectedWorkers": 1}),
            "lifecycle:invalid-worker-mode",
        ),
    ] {
        let mut r = req.clone();
        r["cmd"] = json!("lifecycle.plan");
        let v = s.call(r).await;
        assert_eq!(v["error"], want, "{req} -> {v}");
    }
    let (mut o, _) = s.peer("observer", json!({})).await;
    o.subscribe("lifecycle.phase-changed").await;
    let v = s
        .ok(json!({"id": 3, "cmd": "lifecycle.plan", "plan": "fix the bug", "workerMode": "single", "expectedWorkers": 1}))
        .await;
    assert_eq!(
        (
            v["state"]["phase"].as_str(),
            v["state"]["v"].as_u64(),
            v["idempotent"].as_bool()
        ),
        (Some("PLAN"), Some(3), Some(false))
    );
    let again = s
        .ok(json!({"id": 4, "cmd": "lifecycle.plan", "plan": "other", "workerMode": "fleet", "expectedWorkers": 2}))
        .await;
    assert_eq!(
        (
            again["idempotent"].as_bool(),
            again["state"]["plan"].as_str()
        ),
        (Some(true), Some("fix the bug"))
    );
    let v = s
        .call(json!({"id": 5, "cmd": "lifecycle.advance", "to": "OBSERVE"}))
        .await;
    assert_eq!(v["error"], "lifecycle:invalid-transition");
    assert_eq!(
        v["message"],
        "cannot go from PLAN to OBSERVE; allowed: SPAWN, FAILED"
    );
    s.ok(json!({"id": 6, "cmd": "lifecycle.advance", "to": "SPAWN"}))
        .await;
    // With a plan, create passes the gate.
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    let v = s
        .call(json!({"id": 7, "cmd": "lifecycle.register-spawn", "terminalId": t}))
        .await;
    assert_eq!(v["error"], "lifecycle:register-spawn-args");
    s.ok(json!({"id": 8, "cmd": "lifecycle.register-spawn", "terminalId": t, "correlationId": "c1", "name": "w"})).await;
    let v = s.call(json!({"id": 9, "cmd": "lifecycle.register-spawn", "terminalId": t, "correlationId": "c2", "name": "w"})).await;
    assert_eq!(v["error"], "lifecycle:correlation-id-conflict");
    s.ok(json!({"id": 10, "cmd": "lifecycle.register-monitor", "terminalId": t, "correlationId": "c1", "command": "watch"})).await;
    assert_eq!(
        o.until("lifecycle.phase-changed").await["payload"]["to"],
        "DEPLOY"
    );
    // A completed worker carries the single-worker mission to CLEANUP; closing its terminal
    // passes the REFLECT gate.
    let v = s.ok(json!({"id": 11, "cmd": "lifecycle.mark-worker-status", "terminalId": t, "status": "completed"})).await;
    assert_eq!(v["worker"]["status"], "completed");
    let mut seen = Vec::new();
    while seen.last().map(String::as_str) != Some("CLEANUP") {
        seen.push(
            o.until("lifecycle.phase-changed").await["payload"]["to"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(seen, ["OBSERVE", "HARVEST", "CLEANUP"]);
    let v = s
        .call(json!({"id": 12, "cmd": "lifecycle.reflect", "reflect": "went well"}))
        .await;
    assert_eq!(v["error"], "lifecycle:reflect-gate", "{v}");
    s.ok(json!({"id": 13, "cmd": "close", "id": t})).await;
    assert_eq!(
        o.until("lifecycle.phase-changed").await["payload"]["to"],
        "REFLECT"
    );
    let v = s
        .ok(json!({"id": 14, "cmd": "lifecycle.reflect", "reflect": "went well"}))
        .await;
    assert_eq!(
        (v["state"]["phase"].as_str(), v["state"]["reflect"].as_str()),
        (Some("REFLECT"), Some("went well"))
    );
    // Outside a mission the gate is shut again; the state file is the extension's.
    let v = s
        .call(json!({"id": 15, "cmd": "create", "env": s.env()}))
        .await;
    assert_eq!(v["error"], "lifecycle:plan-required");
    let root = s.root();
    let file: Value =
        serde_json::from_slice(&std::fs::read(root.join(".claws/lifecycle-state.json")).unwrap())
            .unwrap();
    assert_eq!(
        (
            file["v"].as_u64(),
            file["phase"].as_str(),
            file["workers"][0]["closed"].as_bool()
        ),
        (Some(3), Some("REFLECT"), Some(true))
    );
    s.stop().await;
}

async fn armed(s: &TestServer, c: &str) -> (bool, bool, bool, Value) {
    let v = s
        .ok(json!({"id": 1, "cmd": "monitors.is-corr-armed", "correlation_id": c}))
        .await;
    (
        v["armed"].as_bool().unwrap(),
        v["pending"].as_bool().unwrap(),
        v["claimed"].as_bool().unwrap(),
        v["peerId"].clone(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn monitors_intent_claim_and_release() {
    let s = TestServer::start().await;
    assert_eq!(armed(&s, "c1").await, (false, false, false, Value::Null));
    s.ok(json!({"id": 2, "cmd": "monitors.register-intent", "correlation_id": "c1"}))
        .await;
    assert_eq!(armed(&s, "c1").await, (true, true, false, Value::Null));
    let (m, mid) = s
        .peer("observer", json!({"monitorCorrelationId": "c1"}))
        .await;
    assert_eq!(armed(&s, "c1").await, (true, false, true, json!(mid)));
    drop(m);
    let mut released = false;
    for _ in 0..500 {
        if armed(&s, "c1").await == (false, false, false, Value::Null) {
            released = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(released, "the claim ends with the monitor's connection");
    let v = s
        .call(json!({"id": 3, "cmd": "monitors.is-corr-armed"}))
        .await;
    assert_eq!(v["ok"], false);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn waves_boot_status_and_harvest() {
    let s = TestServer::start().await;
    let (mut lead, lead_id) = s.peer("worker", json!({"peerName": "lead-1"})).await;
    let (mut o, _) = s.peer("observer", json!({})).await;
    o.subscribe("wave.**").await;
    assert_eq!(
        lead.err(json!({"id": 1, "cmd": "wave.create", "waveId": "w1"}))
            .await,
        "wave.create:missing-manifest"
    );
    let v = lead
        .ok(json!({"id": 2, "cmd": "wave.create", "waveId": "w1", "layers": ["L1"], "manifest": ["tester", "doc"]}))
        .await;
    assert!(v["createdAt"].as_u64().unwrap() > 0);
    let boot = o.until("wave.w1.lead.boot").await;
    assert_eq!(
        (
            boot["payload"]["peerName"].as_str(),
            boot["payload"]["manifest"].clone()
        ),
        (Some("lead-1"), json!(["tester", "doc"]))
    );
    // A sub-worker of the wave says hello and creates a terminal: the wave tracks it.
    let (mut tester, tid) = s
        .peer("worker", json!({"waveId": "w1", "subWorkerRole": "tester"}))
        .await;
    let term = tester
        .ok(json!({"id": 3, "cmd": "create", "wrapped": true, "shellPath": "/bin/bash", "env": s.env()}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let st = lead
        .ok(json!({"id": 4, "cmd": "wave.status", "waveId": "w1"}))
        .await;
    assert_eq!(
        (st["leadPeerId"].as_str(), st["complete"].as_bool()),
        (Some(lead_id.as_str()), Some(false))
    );
    assert_eq!(st["subWorkerTerminals"], json!([term]));
    let sub = st["subWorkers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["role"] == "tester")
        .unwrap()
        .clone();
    assert_eq!(
        (sub["peerId"].as_str(), sub["terminalId"].as_str()),
        (Some(tid.as_str()), Some(term.as_str()))
    );
    assert_eq!(
        tester
            .err(json!({"id": 5, "cmd": "wave.complete", "waveId": "w1"}))
            .await,
        "wave.complete:not-lead — only the LEAD peer may complete a wave"
    );
    let v = lead
        .ok(json!({"id": 6, "cmd": "wave.complete", "waveId": "w1", "summary": "done", "commits": ["abc"], "regressionClean": true}))
        .await;
    assert_eq!(v["harvested"], 1);
    let c = o.until("wave.w1.complete").await;
    assert_eq!(
        (
            c["payload"]["commits"].clone(),
            c["payload"]["regression_clean"].clone()
        ),
        (json!(["abc"]), json!(true))
    );
    let h = o.until("wave.w1.harvested").await;
    assert_eq!(h["payload"]["closed_terminals"], json!([term]));
    let list = s.ok(json!({"id": 7, "cmd": "list"})).await;
    assert!(
        list["terminals"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["id"] != term.as_str()),
        "harvest closed it"
    );
    assert_eq!(
        lead.err(json!({"id": 8, "cmd": "wave.complete", "waveId": "w1"}))
            .await,
        "wave.complete:already-complete:w1"
    );
    assert_eq!(
        lead.err(json!({"id": 9, "cmd": "wave.status", "waveId": "nope"}))
            .await,
        "wave.status:not-found:nope"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pipelines_route_source_output_into_the_sink_terminal() {
    let s = TestServer::start().await;
    let src = s.create(json!({"shellPath": "/bin/bash"})).await;
    let sink = s.create(json!({"shellPath": "/bin/bash"})).await;
    let (mut orch, _) = s.peer("orchestrator", json!({})).await;
    let (mut w, _) = s.peer("worker", json!({})).await;
    orch.subscribe("pipeline.**").await;
    assert_eq!(
        orch.err(json!({"id": 1, "cmd": "pipeline.create", "steps": [{"role": "source", "terminalId": src}]})).await,
        "pipeline.create:steps-required (min 2 steps)"
    );
    assert_eq!(
        w.err(json!({"id": 1, "cmd": "pipeline.create", "steps": []}))
            .await,
        "requires role: orchestrator"
    );
    let v = orch
        .ok(json!({"id": 2, "cmd": "pipeline.create", "name": "p", "steps": [{"role": "source", "terminalId": src}, {"role": "sink", "terminalId": sink}]}))
        .await;
    let pid = v["pipelineId"].as_str().unwrap().to_owned();
    assert_eq!(pid, "pipe_0001");
    assert_eq!(v["pipeline"]["steps"][1]["stepId"], "pipe_0001_step_1");
    orch.until(&format!("pipeline.{pid}.created")).await;
    w.ok(json!({"id": 3, "cmd": "publish", "topic": format!("output.{src}.line"), "payload": {"text": "echo PIPED_$((40+2))"}}))
        .await;
    s.wait_log(&sink, "PIPED_42").await;
    let step = orch
        .until(&format!("pipeline.{pid}.step.pipe_0001_step_0"))
        .await;
    assert_eq!(
        (
            step["payload"]["role"].as_str(),
            step["payload"]["state"].as_str()
        ),
        (Some("source"), Some("active"))
    );
    orch.ok(json!({"id": 4, "cmd": "pipeline.close", "pipelineId": pid}))
        .await;
    let c = orch.until(&format!("pipeline.{pid}.closed")).await;
    assert_eq!(c["payload"]["state"], "closed");
    let l = orch.ok(json!({"id": 5, "cmd": "pipeline.list"})).await;
    assert_eq!(l["pipelines"][0]["state"], "closed");
    assert_eq!(
        orch.err(json!({"id": 6, "cmd": "pipeline.close", "pipelineId": "pipe_9"}))
            .await,
        "pipeline.close:not-found:pipe_9"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rpc_call_is_answered_by_the_target_or_times_out() {
    let s = TestServer::start().await;
    let (mut caller, cid) = s.peer("observer", json!({})).await;
    let (mut target, tid) = s.peer("worker", json!({})).await;
    let req = json!({"id": 1, "cmd": "rpc.call", "targetPeerId": tid, "method": "sum", "params": {"a": 2, "b": 3}});
    let pending = tokio::spawn(async move {
        let v = caller.call(req).await;
        (caller, v)
    });
    let f = target.until(&format!("rpc.{tid}.request")).await;
    let p = &f["payload"];
    assert_eq!(
        (
            p["method"].as_str(),
            p["params"].clone(),
            p["callerPeerId"].as_str()
        ),
        (Some("sum"), json!({"a": 2, "b": 3}), Some(cid.as_str()))
    );
    let rid = p["requestId"].as_str().unwrap().to_owned();
    target
        .ok(json!({"id": 2, "cmd": "publish", "topic": format!("rpc.response.{cid}.{rid}"), "payload": {"sum": 5}}))
        .await;
    let (mut caller, v) = pending.await.unwrap();
    assert_eq!(
        (
            v["ok"].clone(),
            v["requestId"].as_str(),
            v["result"].clone()
        ),
        (json!(true), Some(rid.as_str()), json!({"sum": 5}))
    );
    let v = caller
        .call(json!({"id": 3, "cmd": "rpc.call", "targetPeerId": tid, "method": "slow", "timeoutMs": 50}))
        .await;
    assert_eq!(
        (v["ok"].clone(), v["error"].clone()),
        (json!(false), json!("rpc.call:timeout"))
    );
    assert!(v["requestId"].is_string());
    assert_eq!(
        caller
            .err(json!({"id": 4, "cmd": "rpc.call", "targetPeerId": "p_no", "method": "m"}))
            .await,
        "rpc.call:target-not-found:p_no"
    );
    assert_eq!(
        caller
            .err(json!({"id": 5, "cmd": "rpc.call", "targetPeerId": tid}))
            .await,
        "rpc.call:missing-method"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn schema_registry_lists_and_renders() {
    let s = TestServer::start().await;
    let v = s.ok(json!({"id": 1, "cmd": "schema.list"})).await;
    let names: Vec<&str> = v["schemas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"worker-boot-v1")
            && names.contains(&"cmd-ack-v1")
            && names.contains(&"rpc-response-v1")
    );
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    let v = s
        .ok(json!({"id": 2, "cmd": "schema.get", "name": "cmd-ack-v1"}))
        .await;
    assert_eq!(
        v["schema"],
        json!({"type": "object", "fields": {
            "seq": {"type": "number"},
            "status": {"type": "enum", "values": ["executed", "rejected", "duplicate"]},
            "correlation_id": {"type": "string", "optional": true}}})
    );
    assert_eq!(
        s.call(json!({"id": 3, "cmd": "schema.get", "name": "x"}))
            .await["error"],
        "schema.get:not-found:x"
    );
    assert_eq!(
        s.call(json!({"id": 4, "cmd": "schema.get"})).await["error"],
        "schema.get:missing-name"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn terminal_facts_on_the_bus() {
    let s = TestServer::with(ClawsConfig {
        heartbeat_interval_ms: 200,
        ..Default::default()
    })
    .await;
    let (mut o, _) = s.peer("observer", json!({})).await;
    for t in [
        "system.terminal.*.alive",
        "vehicle.*.content",
        "command.*.*",
        "system.metrics",
        "system.heartbeat",
    ] {
        o.subscribe(t).await;
    }
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    let alive = o.until(&format!("system.terminal.{t}.alive")).await;
    assert_eq!(
        (
            alive["payload"]["terminalId"].as_str(),
            alive["payload"]["alive"].as_bool()
        ),
        (Some(t.as_str()), Some(true))
    );
    let pid = alive["payload"]["pid"].as_i64().unwrap();
    // The shell's prompt: content from the shell itself.
    let c = o.until(&format!("vehicle.{t}.content")).await;
    let p = &c["payload"];
    assert_eq!(
        (
            p["terminalId"].as_str(),
            p["contentType"].as_str(),
            p["foregroundPid"].as_i64()
        ),
        (Some(t.as_str()), Some("shell"), Some(pid))
    );
    assert!(
        p["detectedAt"].as_str().unwrap().ends_with('Z')
            && p["termId"] == t.as_str()
            && p["size"].is_u64(),
        "{c}"
    );
    let ev = s.exec(&t, "sh -c 'exit 3'").await;
    assert_eq!(ev["exitCode"], 3);
    let end = o.until(&format!("command.{t}.end")).await;
    assert_eq!(
        (
            end["payload"]["command"].as_str(),
            end["payload"]["exitCode"].as_i64()
        ),
        (Some("sh -c 'exit 3'"), Some(3))
    );
    assert!(end["payload"]["durationMs"].is_u64());
    // A foreground program is seen as what it is.
    s.ok(json!({"cmd": "send", "id": t, "text": "python3 -c 'import time; print(\"PY_UP\"); time.sleep(60)'"}))
        .await;
    loop {
        let c = o.until(&format!("vehicle.{t}.content")).await;
        if c["payload"]["contentType"] == "python" {
            assert_ne!(c["payload"]["foregroundPid"].as_i64(), Some(pid));
            break;
        }
    }
    let m = o.until("system.metrics").await;
    for k in [
        "publishRate_per_sec",
        "queueDepth",
        "peerCount",
        "eventLogLastSeq",
        "uptimeMs",
    ] {
        assert!(m["payload"][k].is_number(), "{k}: {m}");
    }
    let h = o.until("system.heartbeat").await;
    assert_eq!(h["payload"]["terminals"], 1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn publish_rate_limit_spares_the_orchestrator() {
    let s = TestServer::with(ClawsConfig {
        max_publish_rate_hz: 5,
        ..Default::default()
    })
    .await;
    let (mut w, _) = s.peer("worker", json!({})).await;
    let (mut orch, _) = s.peer("orchestrator", json!({})).await;
    let t0 = std::time::Instant::now();
    let (mut ok, mut limited) = (0u64, 0u64);
    for i in 0..200 {
        let v = w
            .call(json!({"id": i, "cmd": "publish", "topic": "load.x", "payload": {}}))
            .await;
        match v["error"].as_str() {
            None => ok += 1,
            Some("rate-limit-exceeded") => limited += 1,
            Some(e) => panic!("{e}"),
        }
    }
    let windows = t0.elapsed().as_secs() + 1;
    assert!(
        limited > 0 && ok <= 5 * windows,
        "ok {ok}, limited {limited} in {windows} window(s)"
    );
    for i in 0..200 {
        orch.ok(json!({"id": i, "cmd": "publish", "topic": "load.x", "payload": {}}))
            .await;
    }
    s.stop().await;
}

/// A token with its first hex digit changed.
fn flip_first(mut t: String) -> String {
    let first = if t.starts_with('0') { "1" } else { "0" };
    t.replace_range(0..1, first);
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hmac_auth_on_hello() {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("auth.token");
    common::claws::write_secret(&secret, "s3cret\n");
    let cfg = ClawsConfig {
        auth: openfiles::config::ClawsAuthConfig {
            enabled: true,
            token_path: Some(secret.clone()),
        },
        ..Default::default()
    };
    let s = TestServer::with(cfg).await;
    let hello = |nonce: &str, ts: u64, token: String| {
        json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "worker", "peerName": "w",
               "nonce": nonce, "timestamp": ts, "token": token})
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let tok = |nonce: &str, ts: u64| {
        openfiles::claws_client::hello_token("s3cret", "w", "worker", nonce, ts)
    };
    let v = s
        .call(json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "worker"}))
        .await;
    assert_eq!(v["error"], "auth:required");
    let mut c = s.conn().await;
    let v = c.ok(hello("n1", now, tok("n1", now))).await;
    assert!(v["peerId"].is_string());
    // The same nonce again, a stale or future timestamp, a wrong token: refused.
    for (n, ts, token) in [
        ("n1", now, tok("n1", now)),
        ("n2", now - 6 * 60 * 1000, tok("n2", now - 6 * 60 * 1000)),
        ("n3", now + 60_000, tok("n3", now + 60_000)),
        ("n4", now, flip_first(tok("n4", now))),
        ("n5", now, "zz".to_owned()),
    ] {
        let v = s.call(hello(n, ts, token)).await;
        assert_eq!(v["error"], "auth:invalid", "{n}");
    }
    // Rotating the secret needs no restart.
    common::claws::write_secret(&secret, "other");
    let v = s.call(hello("n6", now, tok("n6", now))).await;
    assert_eq!(v["error"], "auth:invalid");
    s.stop().await;
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn auth_cfg(token_path: std::path::PathBuf) -> ClawsConfig {
    ClawsConfig {
        auth: openfiles::config::ClawsAuthConfig {
            enabled: true,
            token_path: Some(token_path),
        },
        ..Default::default()
    }
}

/// A worker's `hello` named `w` signed with `secret`.
fn signed_hello(secret: &str, nonce: &str, ts: u64) -> Value {
    let token = openfiles::claws_client::hello_token(secret, "w", "worker", nonce, ts);
    json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "worker", "peerName": "w",
           "nonce": nonce, "timestamp": ts, "token": token})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn auth_refuses_an_empty_or_blank_secret() {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("auth.token");
    common::claws::write_secret(&secret, "");
    let s = TestServer::with(auth_cfg(secret.clone())).await;
    let now = now_ms();
    // Signed with the empty key the file holds: never a success.
    let v = s.call(signed_hello("", "e1", now)).await;
    assert_eq!(v["error"], "auth:invalid", "{v}");
    common::claws::write_secret(&secret, " \n\t\n");
    let v = s.call(signed_hello("", "e2", now)).await;
    assert_eq!(v["error"], "auth:invalid", "{v}");
    // A real secret again works (rotation needs no restart).
    common::claws::write_secret(&secret, "s3cret\n");
    s.ok(signed_hello("s3cret", "e3", now)).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn auth_secret_files_are_read_bounded_and_regular_only() {
    // `/dev/zero` used to be read to the end of memory (the service aborted) and a FIFO
    // blocked the hello forever; both are refused at once.
    let s = TestServer::with(auth_cfg("/dev/zero".into())).await;
    let v = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        s.call(signed_hello("", "z1", now_ms())),
    )
    .await
    .expect("hello answered");
    assert_eq!(v["error"], "auth:invalid", "{v}");
    s.stop().await;
    let secret_dir = tempfile::tempdir().unwrap();
    let fifo = secret_dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let s = TestServer::with(auth_cfg(fifo)).await;
    let v = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        s.call(signed_hello("", "f1", now_ms())),
    )
    .await
    .expect("hello answered");
    assert_eq!(v["error"], "auth:invalid", "{v}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn used_nonces_stay_refused_after_a_restart() {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("auth.token");
    common::claws::write_secret(&secret, "s3cret");
    let cfg = auth_cfg(secret);
    let s = TestServer::with(cfg.clone()).await;
    let now = now_ms();
    let hello = signed_hello("s3cret", "once", now);
    s.ok(hello.clone()).await;
    let home = tempfile::tempdir().unwrap();
    let dir = s.stop().await;
    let token = tokio_util::sync::CancellationToken::new();
    let server = openfiles_claws::ClawsServer::start(dir.path(), &cfg, token.clone())
        .await
        .unwrap();
    let s = TestServer {
        dir,
        home,
        server: Some(server),
        token,
    };
    // The captured hello, replayed within its window after the restart: refused.
    let v = s.call(hello).await;
    assert_eq!(v["error"], "auth:invalid", "{v}");
    // A fresh nonce is fine; the record is private.
    s.ok(signed_hello("s3cret", "fresh", now_ms())).await;
    let file = std::fs::read_dir(s.root().join(".claws"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().contains("nonce"))
        .expect("used nonces are persisted under .claws/");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(file.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn repeated_failed_hellos_close_the_connection() {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("auth.token");
    common::claws::write_secret(&secret, "s3cret");
    let s = TestServer::with(auth_cfg(secret)).await;
    let mut c = s.conn().await;
    for i in 0..5 {
        let v = c
            .call(signed_hello("guess", &format!("g{i}"), now_ms()))
            .await;
        assert_eq!(v["error"], "auth:invalid", "{v}");
    }
    // The fifth failure was the last one this connection gets.
    // (The write may already fail: the server hung up.)
    let late = format!("{}\n", signed_hello("s3cret", "late", now_ms()));
    let _ = tokio::io::AsyncWriteExt::write_all(&mut c.wr, late.as_bytes()).await;
    assert!(
        c.line().await.is_none(),
        "connection closed after 5 failures"
    );
    // Other connections are unaffected.
    s.ok(signed_hello("s3cret", "other", now_ms())).await;
    s.stop().await;
}
