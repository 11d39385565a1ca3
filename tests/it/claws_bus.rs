//! The claws/2 bus over real sockets (issue 7): peers, wildcards, replay across restarts,
//! stable peers, backpressure, server topics and fan-out.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::claws::{Conn, TestServer};
use openfiles::config::ClawsConfig;
use serde_json::{json, Value};

async fn peer(s: &TestServer, role: &str, extra: Value) -> (Conn, String) {
    let mut c = s.conn().await;
    let mut req = json!({"id": "h", "cmd": "hello", "protocol": "claws/2", "role": role});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            req[k] = v;
        }
    }
    let v = c.call(req).await;
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["protocol"], "claws/2");
    let id = v["peerId"].as_str().unwrap().to_owned();
    (c, id)
}

async fn sub(c: &mut Conn, topic: &str) -> Value {
    let v = c
        .call(json!({"id": "s", "cmd": "subscribe", "protocol": "claws/2", "topic": topic}))
        .await;
    assert_eq!(v["ok"], true, "{v}");
    v
}

async fn publish(c: &mut Conn, topic: &str, payload: Value) -> Value {
    let v = c.call(json!({"id": "p", "cmd": "publish", "protocol": "claws/2", "topic": topic, "payload": payload})).await;
    assert_eq!(v["ok"], true, "{v}");
    v
}

/// Push frames until one on `topic`.
async fn until(c: &mut Conn, topic: &str) -> Value {
    loop {
        let f = c.push().await;
        if f["topic"] == topic {
            return f;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commands_and_error_strings() {
    let s = TestServer::start().await;
    let mut c = s.conn().await;
    for cmd in ["subscribe", "unsubscribe", "publish", "broadcast"] {
        let v = c
            .call(json!({"id": 1, "cmd": cmd, "topic": "a.b", "protocol": "claws/2"}))
            .await;
        assert_eq!(v["error"], "call hello first", "{cmd}");
    }
    let v = c
        .call(json!({"id": 1, "cmd": "hello", "role": "worker"}))
        .await;
    assert!(v["error"].as_str().unwrap().contains("claws/2"), "{v}");
    let v = c.call(json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "worker", "peerName": "w1"})).await;
    let pid = v["peerId"].as_str().unwrap().to_owned();
    assert!(pid.starts_with("p_") && pid.len() == 8, "{pid}");
    assert!(v["serverCapabilities"]
        .as_array()
        .unwrap()
        .contains(&json!("push")));
    let v = c
        .call(json!({"id": 2, "cmd": "hello", "protocol": "claws/2", "role": "worker"}))
        .await;
    assert_eq!(
        (v["peerId"].as_str(), v["idempotent"].as_bool()),
        (Some(pid.as_str()), Some(true))
    );
    let v = c
        .call(json!({"id": 3, "cmd": "subscribe", "topic": "a.*", "fromCursor": "nope"}))
        .await;
    assert_eq!(v["error"], "invalid cursor format");
    let v = c
        .call(json!({"id": 4, "cmd": "unsubscribe", "subscriptionId": "s_9999"}))
        .await;
    assert_eq!(v["error"], "subscription not found");
    let v = c
        .call(json!({"id": 5, "cmd": "broadcast", "text": "hi"}))
        .await;
    assert_eq!(v["error"], "requires role: orchestrator");
    // Subscription ids, echo, deliveredTo, unsubscribe.
    let v = sub(&mut c, "a.*").await;
    let sid = v["subscriptionId"].as_str().unwrap().to_owned();
    assert!(sid.starts_with("s_") && sid.len() == 6, "{sid}");
    let (mut o, _) = peer(&s, "observer", json!({})).await;
    sub(&mut o, "a.**").await;
    let v = publish(&mut c, "a.b", json!({"n": 1})).await;
    assert_eq!(v["deliveredTo"], 1, "the publisher is skipped without echo");
    let f = until(&mut o, "a.b").await;
    assert_eq!(
        (f["push"].clone(), f["protocol"].clone(), f["from"].clone()),
        (json!("message"), json!("claws/2"), json!(pid))
    );
    assert_eq!(f["payload"], json!({"n": 1}));
    assert!(f["sequence"].as_u64().unwrap() > 0 && f["sentAt"].as_u64().unwrap() > 0);
    assert!(f.get("rid").is_none());
    let v = c
        .call(json!({"id": 6, "cmd": "publish", "topic": "a.c", "payload": {}, "echo": true}))
        .await;
    assert_eq!(v["deliveredTo"], 2);
    assert_eq!(until(&mut c, "a.c").await["from"], pid);
    let v = c
        .call(json!({"id": 7, "cmd": "unsubscribe", "subscriptionId": sid}))
        .await;
    assert_eq!(v["ok"], true);
    let v = c
        .call(json!({"id": 8, "cmd": "publish", "topic": "a.d", "payload": {}, "echo": true}))
        .await;
    assert_eq!(v["deliveredTo"], 1);
    // One orchestrator per server (the extension's rule); broadcast reaches one role
    // (default: workers), subscribed or not, or every other peer with `targetRole: "all"`.
    let (mut orch, oid) = peer(&s, "orchestrator", json!({})).await;
    let v = s
        .call(json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "orchestrator"}))
        .await;
    assert_eq!(v["error"], "root orchestrator already registered");
    let v = orch
        .call(json!({"id": 9, "cmd": "broadcast", "text": "stop now"}))
        .await;
    assert_eq!(v["deliveredTo"], 1, "the one worker: {v}");
    let f = until(&mut c, "system.broadcast").await;
    assert_eq!(
        (f["from"].as_str(), f["payload"]["text"].as_str()),
        (Some(oid.as_str()), Some("stop now"))
    );
    let v = orch
        .call(json!({"id": 9, "cmd": "broadcast", "text": "all hands", "targetRole": "all"}))
        .await;
    assert_eq!(v["deliveredTo"], 2, "{v}");
    for p in [&mut c, &mut o] {
        let f = until(p, "system.broadcast").await;
        assert_eq!(f["payload"]["text"], "all hands");
    }
    let v = c
        .call(json!({"id": 10, "cmd": "publish", "topic": "bad topic"}))
        .await;
    assert!(
        v["error"].as_str().unwrap().starts_with("invalid topic"),
        "{v}"
    );
    // ping needs no hello
    assert_eq!(s.call(json!({"id": 11, "cmd": "ping"})).await["ok"], true);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wildcard_matching_table() {
    let s = TestServer::start().await;
    let table: &[(&str, &[&str])] = &[
        ("a.b", &["a.b"]),
        ("a.*", &["a.b", "a.c"]),
        ("a.**", &["a.b", "a.c", "a.b.c", "a.b.c.d"]),
        ("*.b", &["a.b", "x.b"]),
        ("*.*.c", &["a.b.c"]),
        ("a.**.d", &["a.b.c.d"]),
        ("**", &["a.b", "a.c", "a.b.c", "a.b.c.d", "x.b", "a"]),
        ("a", &["a"]),
    ];
    let topics = ["a.b", "a.c", "a.b.c", "a.b.c.d", "x.b", "a"];
    let mut subs = Vec::new();
    for (pattern, _) in table {
        let (mut c, _) = peer(&s, "observer", json!({})).await;
        sub(&mut c, pattern).await;
        sub(&mut c, "zz.end").await;
        subs.push(c);
    }
    let (mut p, _) = peer(&s, "worker", json!({})).await;
    for t in topics {
        publish(&mut p, t, json!({})).await;
    }
    publish(&mut p, "zz.end", json!({})).await;
    for ((pattern, want), c) in table.iter().zip(subs.iter_mut()) {
        let mut got = Vec::new();
        loop {
            let f = c.push().await;
            let t = f["topic"].as_str().unwrap().to_owned();
            if t == "zz.end" {
                if *pattern == "**" {
                    continue; // `**` also matches the sentinel; the second copy ends it
                }
                break;
            }
            if t.starts_with("system.") {
                continue;
            }
            got.push(t);
            if *pattern == "**" && got.len() == want.len() {
                break;
            }
        }
        assert_eq!(got, *want, "pattern {pattern}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replay_survives_restart_and_torn_lines() {
    let s = TestServer::start().await;
    let (mut p, _) = peer(&s, "worker", json!({})).await;
    let mut seqs = Vec::new();
    for i in 0..50 {
        seqs.push(
            publish(&mut p, &format!("job.{}", i % 3), json!({"i": i})).await["sequence"]
                .as_u64()
                .unwrap(),
        );
    }
    let mid = sub(&mut p, "nothing.here").await["resumeCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 50..60 {
        publish(&mut p, "job.0", json!({"i": i})).await;
    }
    drop(p);
    let dir = s.stop().await;
    // A crash mid-write leaves a torn last line.
    // The extension's layout: `.claws/events/default/NNNN-<hour>.jsonl`.
    let events = dir.path().join(".claws/events/default");
    let mut segs: Vec<_> = std::fs::read_dir(&events)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segs.sort();
    let last = segs.last().unwrap().clone();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&last)
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"sequence\":99999,\"topic\":\"job.0\",\"pay").unwrap();
    drop(f);

    let token = tokio_util::sync::CancellationToken::new();
    let server =
        openfiles_claws::ClawsServer::start(dir.path(), &ClawsConfig::default(), token.clone())
            .await
            .unwrap();
    let s = TestServer {
        home: tempfile::tempdir().unwrap(),
        dir,
        server: Some(server),
        token,
    };
    for from in ["0000:0", "0001:0"] {
        let (mut c, _) = peer(&s, "observer", json!({})).await;
        let v = c
            .call(json!({"id": 1, "cmd": "subscribe", "topic": "job.*", "fromCursor": from}))
            .await;
        assert_eq!(v["ok"], true);
        let resume = v["resumeCursor"].as_str().unwrap().to_owned();
        let mut got = Vec::new();
        let caught = loop {
            let f = c.push().await;
            if f["push"] == "caught-up" {
                break f;
            }
            assert_eq!(f["replayed"], true);
            got.push(f["payload"]["i"].as_u64().unwrap());
        };
        assert_eq!(
            got,
            (0..60).collect::<Vec<u64>>(),
            "every stored event, in order"
        );
        assert_eq!(caught["replayedCount"], 60);
        assert_eq!(caught["resumeCursor"], resume.as_str());
        assert_eq!(caught["subscriptionId"], v["subscriptionId"]);
    }
    // A cursor taken before the restart still means the same place.
    let (mut c, _) = peer(&s, "observer", json!({})).await;
    c.send(&json!({"id": 1, "cmd": "subscribe", "topic": "job.*", "fromCursor": mid}))
        .await;
    c.answer().await;
    let mut got = Vec::new();
    loop {
        let f = c.push().await;
        if f["push"] == "caught-up" {
            break;
        }
        got.push(f["payload"]["i"].as_u64().unwrap());
    }
    assert_eq!(got, (50..60).collect::<Vec<u64>>());
    // Numbering continues after the restart; live events follow the replay.
    let (mut p, _) = peer(&s, "worker", json!({})).await;
    let seq = publish(&mut p, "job.1", json!({"i": 60})).await["sequence"]
        .as_u64()
        .unwrap();
    assert!(seq > *seqs.last().unwrap(), "{seq}");
    let f = until(&mut c, "job.1").await;
    assert_eq!(f["payload"]["i"], 60);
    assert!(f.get("replayed").is_none());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reconnect_with_same_nonce_restores_subscriptions() {
    let s = TestServer::start().await;
    let who = json!({"peerName": "sidecar", "instanceNonce": "n-123"});
    let (mut a, id1) = peer(&s, "observer", who.clone()).await;
    assert!(id1.starts_with("fp_") && id1.len() == 15, "{id1}");
    sub(&mut a, "task.**").await;
    drop(a);
    let (mut w, _) = peer(&s, "worker", json!({})).await;
    let (mut b, id2) = peer(&s, "observer", who).await;
    assert_eq!(id1, id2);
    let v = publish(&mut w, "task.x.done", json!({"ok": true})).await;
    assert_eq!(v["deliveredTo"], 1);
    assert_eq!(until(&mut b, "task.x.done").await["payload"]["ok"], true);
    // Another name or nonce is another peer.
    let (_c, id3) = peer(
        &s,
        "observer",
        json!({"peerName": "sidecar", "instanceNonce": "n-124"}),
    )
    .await;
    assert_ne!(id3, id1);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stuck_subscriber_does_not_slow_a_fast_one() {
    let cfg = ClawsConfig {
        peer_queue_frames: 64,
        ..Default::default()
    };
    let s = TestServer::with(cfg).await;
    let (mut slow, _) = peer(&s, "observer", json!({})).await;
    sub(&mut slow, "load.*").await;
    let (mut fast, _) = peer(&s, "observer", json!({})).await;
    sub(&mut fast, "load.*").await;
    let (mut p, _) = peer(&s, "worker", json!({})).await;
    let n = 5000u64;
    let pad = "x".repeat(1000);
    let reader = tokio::spawn(async move {
        let mut seen = 0;
        while seen < n {
            if fast.push().await["topic"] == "load.x" {
                seen += 1;
            }
        }
        seen
    });
    for i in 0..n {
        publish(&mut p, "load.x", json!({"i": i, "pad": pad})).await;
    }
    assert_eq!(
        reader.await.unwrap(),
        n,
        "the fast subscriber got everything"
    );
    // Now the stuck one reads: its queued frames, then the count of what was dropped.
    let mut got = 0;
    let dropped = loop {
        let f = slow.push().await;
        match (f["push"].as_str(), f["topic"].as_str()) {
            (Some("dropped"), _) => break f["count"].as_u64().unwrap(),
            (_, Some("load.x")) => got += 1,
            _ => {}
        }
    };
    // Delivery resumes once it has caught up.
    publish(&mut p, "load.end", json!({})).await;
    loop {
        let f = slow.push().await;
        match f["topic"].as_str() {
            Some("load.x") => got += 1,
            Some("load.end") => break,
            _ => {}
        }
    }
    assert!(dropped > 0, "the stuck subscriber's queue overflowed");
    assert_eq!(got + dropped, n, "got {got} dropped {dropped}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_topics_for_terminals() {
    let s = TestServer::start().await;
    let (mut o, _) = peer(&s, "observer", json!({})).await;
    sub(&mut o, "system.**").await;
    sub(&mut o, "command.*.*").await;
    sub(&mut o, "vehicle.*.state").await;
    let (_w, wid) = peer(&s, "worker", json!({"peerName": "w"})).await;
    let f = until(&mut o, "system.peer.connected").await;
    assert_eq!(
        (f["from"].as_str(), f["payload"]["peerId"].as_str()),
        (Some("server"), Some(wid.as_str()))
    );
    let t = s
        .create(json!({"shellPath": "/bin/bash", "correlationId": "corr-1"}))
        .await;
    let ev = s.exec(&t, "sh -c 'exit 2'").await;
    let start = until(&mut o, &format!("command.{t}.start")).await;
    assert_eq!(start["payload"]["commandLine"], "sh -c 'exit 2'");
    let end = until(&mut o, &format!("command.{t}.end")).await;
    assert_eq!(end["payload"]["exitCode"], 2);
    assert_eq!(end["payload"]["seq"], ev["seq"]);
    s.ok(json!({"cmd": "send", "id": t, "text": "exit 7"}))
        .await;
    // The state change comes first, then the exit event.
    while until(&mut o, &format!("vehicle.{t}.state")).await["payload"]["to"] != "CLOSED" {}
    let f = until(&mut o, "system.worker.process_exited").await;
    assert_eq!(f["payload"]["exit_code"], 7);
    assert_eq!(f["payload"]["terminal_id"], t.as_str());
    assert_eq!(f["payload"]["correlation_id"], "corr-1");
    s.ok(json!({"cmd": "close", "id": t})).await;
    let f = until(&mut o, "system.terminal.closed").await;
    assert_eq!(
        (
            f["payload"]["terminal_id"].as_str(),
            f["payload"]["close_origin"].as_str()
        ),
        (Some(t.as_str()), Some("client"))
    );
    let f = until(&mut o, "system.worker.terminated").await;
    assert_eq!(f["payload"]["correlation_id"], "corr-1");
    // paste_complete after a bracketed paste
    let t2 = s.create(json!({"shellPath": "/bin/bash"})).await;
    s.ok(json!({"cmd": "send", "id": t2, "text": "echo a\necho b", "paste": true}))
        .await;
    let f = until(&mut o, "system.terminal.paste_complete").await;
    assert_eq!(f["payload"]["terminalId"], t2.as_str());
    drop(_w);
    let f = until(&mut o, "system.peer.disconnected").await;
    assert_eq!(f["payload"]["peerId"], wid.as_str());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hundred_peers_thousand_messages_exactly_once() {
    let s = TestServer::start().await;
    let mut readers = Vec::new();
    for _ in 0..100 {
        let (mut c, _) = peer(&s, "observer", json!({})).await;
        sub(&mut c, "fan.*").await;
        readers.push(tokio::spawn(async move {
            let mut seen: BTreeMap<u64, u32> = BTreeMap::new();
            while seen.len() < 1000 {
                let f = c.push().await;
                if f["topic"] == "fan.out" {
                    *seen.entry(f["payload"]["i"].as_u64().unwrap()).or_default() += 1;
                }
            }
            // One more sentinel proves nothing extra was queued behind.
            until(&mut c, "fan.end").await;
            seen
        }));
    }
    let (mut p, _) = peer(&s, "worker", json!({})).await;
    for i in 0..1000 {
        let v = publish(&mut p, "fan.out", json!({"i": i})).await;
        assert_eq!(v["deliveredTo"], 100);
    }
    publish(&mut p, "fan.end", json!({})).await;
    let want: BTreeSet<u64> = (0..1000).collect();
    for r in readers {
        let seen = r.await.unwrap();
        assert_eq!(seen.keys().copied().collect::<BTreeSet<_>>(), want);
        assert!(seen.values().all(|&n| n == 1), "exactly once");
    }
    s.stop().await;
}

/// The extension's vehicle states (issue 30 item 6): PROVISIONING and BOOTING at `create`,
/// READY at the first prompt, BUSY/IDLE around each command, CLOSING at `close`, CLOSED once
/// the shell is gone; each `{terminalId, from, to, ts}` (ISO) plus our `shellState`, in
/// order, and `list` answers with `vehicleState`. A shell without integration is READY at
/// its first output; one that exits by itself goes CLOSING then CLOSED.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vehicle_states_as_the_extension_publishes_them() {
    let s = TestServer::start().await;
    let (mut o, _) = peer(&s, "observer", json!({})).await;
    sub(&mut o, "vehicle.**.state").await;
    let list_state = |v: &Value, t: &str| {
        v["terminals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == t)
            .map(|d| d["vehicleState"].as_str().unwrap().to_owned())
            .unwrap()
    };
    // One state frame of terminal `t`: (from, to).
    async fn next(o: &mut Conn, t: &str) -> (Value, String) {
        let f = until(o, &format!("vehicle.{t}.state")).await;
        let p = &f["payload"];
        assert_eq!(p["terminalId"], t, "{f}");
        let ts = p["ts"].as_str().unwrap();
        assert!(
            ts.len() >= 20 && ts.as_bytes()[10] == b'T' && ts.ends_with('Z'),
            "{f}"
        );
        assert!(p["shellState"].is_string(), "{f}");
        (p["from"].clone(), p["to"].as_str().unwrap().to_owned())
    }
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    assert_eq!(next(&mut o, &t).await, (Value::Null, "PROVISIONING".into()));
    assert_eq!(
        next(&mut o, &t).await,
        (json!("PROVISIONING"), "BOOTING".into())
    );
    assert_eq!(next(&mut o, &t).await, (json!("BOOTING"), "READY".into()));
    let v = s.ok(json!({"cmd": "list"})).await;
    assert_eq!(list_state(&v, &t), "READY");
    s.exec(&t, "true").await;
    assert_eq!(next(&mut o, &t).await, (json!("READY"), "BUSY".into()));
    assert_eq!(next(&mut o, &t).await, (json!("BUSY"), "IDLE".into()));
    let v = s.ok(json!({"cmd": "list"})).await;
    assert_eq!(list_state(&v, &t), "IDLE");
    s.exec(&t, "sh -c 'exit 3'").await;
    assert_eq!(next(&mut o, &t).await, (json!("IDLE"), "BUSY".into()));
    assert_eq!(next(&mut o, &t).await, (json!("BUSY"), "IDLE".into()));
    s.ok(json!({"cmd": "close", "id": t})).await;
    assert_eq!(next(&mut o, &t).await, (json!("IDLE"), "CLOSING".into()));
    assert_eq!(next(&mut o, &t).await, (json!("CLOSING"), "CLOSED".into()));

    // No integration: READY at the first output; `exit` by itself: CLOSING, CLOSED, and
    // `list` keeps the exited terminal as CLOSED.
    let t = s
        .create(json!({"shellPath": "/bin/sh", "env": {"PS1": "sh-prompt$ "}}))
        .await;
    assert_eq!(next(&mut o, &t).await.1, "PROVISIONING");
    assert_eq!(next(&mut o, &t).await.1, "BOOTING");
    assert_eq!(next(&mut o, &t).await, (json!("BOOTING"), "READY".into()));
    s.ok(json!({"cmd": "send", "id": t, "text": "exit 0"}))
        .await;
    assert_eq!(next(&mut o, &t).await, (json!("READY"), "CLOSING".into()));
    assert_eq!(next(&mut o, &t).await, (json!("CLOSING"), "CLOSED".into()));
    let v = s.ok(json!({"cmd": "list"})).await;
    assert_eq!(list_state(&v, &t), "CLOSED");
    s.stop().await;
}

/// The log is written by its own thread (issue 30 item 8), and nothing acknowledged is lost
/// or reordered: 3000 publishes over small segments (many rotations, pruning off), a replay
/// from the start asked for at once (it waits for the writer), then every event on disk
/// after `stop`, in sequence order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_publishes_are_in_the_log_in_order_after_stop() {
    let cfg = ClawsConfig {
        event_segment_bytes: 16 << 10,
        ..Default::default()
    };
    let s = TestServer::with(cfg).await;
    let (mut p, _) = peer(&s, "worker", json!({})).await;
    let n = 3000u64;
    let mut seqs = Vec::new();
    for i in 0..n {
        let v = publish(&mut p, "flood.x", json!({"i": i, "pad": "p".repeat(64)})).await;
        seqs.push(v["sequence"].as_u64().unwrap());
    }
    let (mut c, _) = peer(&s, "observer", json!({})).await;
    c.ok(json!({"id": 1, "cmd": "subscribe", "topic": "flood.*", "fromCursor": "0001:0"}))
        .await;
    let mut got = Vec::new();
    loop {
        let f = c.push().await;
        if f["push"] == "caught-up" {
            break;
        }
        got.push(f["payload"]["i"].as_u64().unwrap());
    }
    assert_eq!(
        got,
        (0..n).collect::<Vec<u64>>(),
        "replayed at once, in order"
    );
    drop((p, c));
    let dir = s.stop().await;
    let events = dir.path().join(".claws/events/default");
    let mut segs: Vec<_> = std::fs::read_dir(&events)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segs.sort();
    assert!(segs.len() > 10, "rotated: {}", segs.len());
    let mut stored = Vec::new();
    for seg in segs {
        for line in std::fs::read_to_string(seg).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["topic"] == "flood.x" {
                stored.push(v["sequence"].as_u64().unwrap());
            }
        }
    }
    assert_eq!(stored, seqs, "every acknowledged publish, in order");
}
