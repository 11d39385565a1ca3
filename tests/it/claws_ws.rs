//! The WebSocket transport (issue 17): the same commands and pushes as the Unix socket over
//! `ws://` and `wss://`, and the refusal to listen beyond loopback without auth.

use crate::common;

use std::sync::Arc;

use common::claws::TestServer;
use futures_util::{SinkExt, StreamExt};
use openfiles::config::{ClawsConfig, ClawsWebSocketConfig};
use openfiles_claws::ClawsServer;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

fn ws_cfg(ws: ClawsWebSocketConfig) -> ClawsConfig {
    ClawsConfig {
        web_socket: ClawsWebSocketConfig {
            enabled: true,
            port: 0,
            ..ws
        },
        ..Default::default()
    }
}

/// Send one request, read messages until its answer (pushes are collected).
async fn call<S>(ws: &mut S, pushes: &mut Vec<Value>, req: Value) -> Value
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>>
        + SinkExt<Message>
        + Unpin,
    <S as futures_util::Sink<Message>>::Error: std::fmt::Debug,
{
    ws.send(Message::text(req.to_string())).await.unwrap();
    loop {
        let m = tokio::time::timeout(common::claws::BOUND, ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(m.to_text().unwrap()).unwrap();
        if v.get("push").is_some() {
            pushes.push(v);
        } else {
            return v;
        }
    }
}

async fn next_push<S>(ws: &mut S, pushes: &mut Vec<Value>) -> Value
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    if !pushes.is_empty() {
        return pushes.remove(0);
    }
    loop {
        let m = tokio::time::timeout(common::claws::BOUND, ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(m.to_text().unwrap()).unwrap();
        if v.get("push").is_some() {
            return v;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ws_speaks_the_same_protocol_as_the_socket() {
    let s = TestServer::with(ws_cfg(ClawsWebSocketConfig::default())).await;
    let addr = s.server.as_ref().unwrap().web_socket_addr().unwrap();
    assert!(addr.ip().is_loopback());
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}"))
        .await
        .unwrap();
    let mut pushes = Vec::new();
    let v = call(&mut ws, &mut pushes, json!({"id": 1, "cmd": "list"})).await;
    assert_eq!(
        (v["ok"].clone(), v["rid"].clone(), v["terminals"].clone()),
        (json!(true), json!(1), json!([]))
    );
    let v = call(
        &mut ws,
        &mut pushes,
        json!({"id": 2, "cmd": "hello", "protocol": "claws/2", "role": "observer"}),
    )
    .await;
    assert_eq!(v["protocol"], "claws/2");
    call(
        &mut ws,
        &mut pushes,
        json!({"id": 3, "cmd": "subscribe", "topic": "news.*"}),
    )
    .await;
    let (mut w, wid) = s.peer("worker", json!({})).await;
    w.ok(json!({"id": 1, "cmd": "publish", "topic": "news.today", "payload": {"n": 1}}))
        .await;
    let f = next_push(&mut ws, &mut pushes).await;
    assert_eq!(
        (
            f["topic"].as_str(),
            f["from"].as_str(),
            f["payload"]["n"].as_i64()
        ),
        (Some("news.today"), Some(wid.as_str()), Some(1))
    );
    // A terminal driven over WebSocket.
    let v = call(&mut ws, &mut pushes, json!({"id": 4, "cmd": "create", "wrapped": true, "shellPath": "/bin/bash", "env": s.env()})).await;
    let t = v["id"].as_str().unwrap().to_owned();
    let v = call(
        &mut ws,
        &mut pushes,
        json!({"id": 5, "cmd": "exec", "id": t, "command": "sh -c 'exit 4'", "timeoutMs": 60000}),
    )
    .await;
    assert_eq!(v["event"]["exitCode"], 4, "{v}");
    ws.close(None).await.unwrap();
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ws_refuses_non_loopback_without_auth() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ws_cfg(ClawsWebSocketConfig {
        host: "0.0.0.0".into(),
        ..Default::default()
    });
    let err = ClawsServer::start(dir.path(), &cfg, Default::default())
        .await
        .err()
        .expect("refused");
    assert!(err.to_string().contains("without [claws.auth]"), "{err}");
    assert!(
        !dir.path().join(".claws/claws.sock").exists(),
        "nothing left bound"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wss_with_a_certificate() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cp, kp) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cp, cert.cert.pem()).unwrap();
    std::fs::write(&kp, cert.key_pair.serialize_pem()).unwrap();
    let s = TestServer::with(ws_cfg(ClawsWebSocketConfig {
        cert_path: Some(cp),
        key_path: Some(kp),
        ..Default::default()
    }))
    .await;
    let port = s.server.as_ref().unwrap().web_socket_addr().unwrap().port();
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_tungstenite::Connector::Rustls(Arc::new(client));
    let (mut ws, _) = tokio_tungstenite::connect_async_tls_with_config(
        format!("wss://localhost:{port}"),
        None,
        false,
        Some(connector),
    )
    .await
    .unwrap();
    let mut pushes = Vec::new();
    let v = call(&mut ws, &mut pushes, json!({"id": 7, "cmd": "ping"})).await;
    assert_eq!((v["ok"].clone(), v["rid"].clone()), (json!(true), json!(7)));
    // Plain ws:// to a wss listener does not get through.
    assert!(
        tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}"))
            .await
            .is_err()
    );
    s.stop().await;
}
