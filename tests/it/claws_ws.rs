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

/// The listener refuses a non-loopback address without auth; the refusal, like any
/// WebSocket listener that cannot start, costs only the listener: the Unix socket is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ws_refuses_non_loopback_without_auth() {
    let s = TestServer::with(ws_cfg(ClawsWebSocketConfig {
        host: "0.0.0.0".into(),
        ..Default::default()
    }))
    .await;
    let server = s.server.as_ref().unwrap();
    assert_eq!(server.web_socket_addr(), None);
    let err = server.web_socket_error().expect("why it is off");
    assert!(err.contains("without [claws.auth]"), "{err}");
    s.ok(json!({"id": 1, "cmd": "ping"})).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ws_that_cannot_start_leaves_the_unix_socket_served() {
    // The port is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ws_cfg(ClawsWebSocketConfig::default());
    cfg.web_socket.port = port;
    let server = ClawsServer::start(dir.path(), &cfg, Default::default())
        .await
        .expect("the Unix socket starts without the WebSocket listener");
    assert_eq!(server.web_socket_addr(), None);
    assert!(server.web_socket_error().is_some());
    let mut c = common::claws::Conn::open(server.socket_path()).await;
    c.ok(json!({"id": 1, "cmd": "ping"})).await;
    drop(c);
    server.stop().await;
    // A certificate and key that are devices (read to the end of memory before: the
    // service aborted), and a FIFO (blocked the start): the listener stays off, said why.
    let elsewhere = tempfile::tempdir().unwrap();
    let fifo = elsewhere.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    for (cert, key, why) in [
        ("/dev/zero".into(), "/dev/zero".into(), "a device"),
        (fifo.clone(), fifo.clone(), "a FIFO"),
    ] {
        let cfg = ws_cfg(ClawsWebSocketConfig {
            cert_path: Some(cert),
            key_path: Some(key),
            ..Default::default()
        });
        let server = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            ClawsServer::start(dir.path(), &cfg, Default::default()),
        )
        .await
        .expect("start does not block")
        .expect("the Unix socket starts without the WebSocket listener");
        assert_eq!(server.web_socket_addr(), None);
        let err = server.web_socket_error().unwrap_or_default().to_owned();
        assert!(err.contains(why), "{err}");
        let mut c = common::claws::Conn::open(server.socket_path()).await;
        c.ok(json!({"id": 1, "cmd": "ping"})).await;
        drop(c);
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ws_empty_certificate_paths_mean_plain_ws() {
    // Claws's suites write `certPath: ""`: unset, not TLS with a file named "".
    let s = TestServer::with(ws_cfg(ClawsWebSocketConfig {
        cert_path: Some("".into()),
        key_path: Some("".into()),
        ..Default::default()
    }))
    .await;
    let addr = s.server.as_ref().unwrap().web_socket_addr().expect("ws on");
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}"))
        .await
        .unwrap();
    let v = call(&mut ws, &mut Vec::new(), json!({"id": 1, "cmd": "ping"})).await;
    assert_eq!(v["ok"], true, "{v}");
    s.stop().await;
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// With `[claws.auth]` on, a WebSocket connection gets nothing but `auth:required` until its
/// `hello` is accepted: terminals included. The Unix socket (same uid only) is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ws_with_auth_refuses_every_command_before_hello() {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("auth.token");
    common::claws::write_secret(&secret, "s3cret\n");
    let mut cfg = ws_cfg(ClawsWebSocketConfig::default());
    cfg.auth = openfiles::config::ClawsAuthConfig {
        enabled: true,
        token_path: Some(secret),
    };
    let s = TestServer::with(cfg).await;
    let addr = s.server.as_ref().unwrap().web_socket_addr().unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}"))
        .await
        .unwrap();
    let mut pushes = Vec::new();
    let env = s.env();
    for req in [
        json!({"cmd": "list"}),
        json!({"cmd": "create", "wrapped": true, "env": env}),
        json!({"cmd": "send", "id": "1", "text": "id"}),
        json!({"cmd": "exec", "id": "1", "command": "id"}),
        json!({"cmd": "readLog", "id": "1"}),
        json!({"cmd": "poll"}),
        json!({"cmd": "introspect"}),
        json!({"cmd": "ping"}),
        json!({"cmd": "subscribe", "topic": "**"}),
        json!({"cmd": "peers"}),
        json!({"cmd": "nonsense"}),
    ] {
        let v = call(&mut ws, &mut pushes, req.clone()).await;
        assert_eq!(
            (v["ok"].clone(), v["error"].clone()),
            (json!(false), json!("auth:required")),
            "{req} -> {v}"
        );
    }
    assert!(pushes.is_empty());
    // A hello without a token does not open the door either.
    let v = call(
        &mut ws,
        &mut pushes,
        json!({"id": 1, "cmd": "hello", "protocol": "claws/2", "role": "worker"}),
    )
    .await;
    assert_eq!(v["error"], "auth:required");
    let v = call(&mut ws, &mut pushes, json!({"id": 2, "cmd": "list"})).await;
    assert_eq!(v["error"], "auth:required");
    let ts = now_ms();
    let token = openfiles::claws_client::hello_token("s3cret", "w", "worker", "n1", ts);
    let v = call(
        &mut ws,
        &mut pushes,
        json!({"id": 3, "cmd": "hello", "protocol": "claws/2", "role": "worker",
               "peerName": "w", "nonce": "n1", "timestamp": ts, "token": token}),
    )
    .await;
    assert_eq!(v["ok"], true, "{v}");
    let v = call(&mut ws, &mut pushes, json!({"id": 4, "cmd": "list"})).await;
    assert_eq!(v["ok"], true, "{v}");
    ws.close(None).await.unwrap();
    // The Unix socket: claws/1 clients send no hello, and need none.
    s.ok(json!({"id": 5, "cmd": "list"})).await;
    // Guessing: five refused hellos, then the connection is closed.
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}"))
        .await
        .unwrap();
    for i in 0..5 {
        let nonce = format!("g{i}");
        let token = openfiles::claws_client::hello_token("guess", "w", "worker", &nonce, ts);
        let v = call(
            &mut ws,
            &mut pushes,
            json!({"id": i, "cmd": "hello", "protocol": "claws/2", "role": "worker",
                   "peerName": "w", "nonce": nonce, "timestamp": ts, "token": token}),
        )
        .await;
        assert_eq!(v["error"], "auth:invalid", "{v}");
    }
    let _ = ws
        .send(Message::text(json!({"cmd": "list"}).to_string()))
        .await;
    let end = tokio::time::timeout(common::claws::BOUND, ws.next())
        .await
        .expect("closed within the bound");
    assert!(
        matches!(end, None | Some(Err(_)) | Some(Ok(Message::Close(_)))),
        "{end:?}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wss_with_a_certificate() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cp, kp) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cp, cert.cert.pem()).unwrap();
    common::claws::write_secret(&kp, &cert.key_pair.serialize_pem());
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

/// The status line a raw WebSocket handshake to `addr` gets from a Python client run as this
/// user, or as `nobody` through `setpriv`, with `Host: host` and `extra` header lines.
fn handshake_status(
    addr: std::net::SocketAddr,
    host: &str,
    extra: &str,
    as_nobody: bool,
) -> String {
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    );
    let script = format!(
        "import socket,sys\ns=socket.create_connection(('{}',{}))\ns.sendall(sys.stdin.buffer.read())\n\
         print(s.makefile('rb').readline().decode().strip())\n",
        addr.ip(),
        addr.port()
    );
    let mut cmd = if as_nobody {
        let mut c = std::process::Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
        ]);
        c
    } else {
        let mut c = std::process::Command::new("/usr/bin/python3");
        c.arg("-c");
        c
    };
    use std::io::Write;
    let mut child = cmd
        .arg(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A web page (any `Origin`), a page that rebinds its DNS name to 127.0.0.1 (its own `Host`)
/// and another local user (no auth to tell them apart) are refused at the handshake; Claws's
/// own clients (no `Origin`, this user) and an origin the user allowed are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ws_refuses_web_pages_rebound_hosts_and_other_users() {
    let s = TestServer::with(ws_cfg(ClawsWebSocketConfig {
        allowed_origins: vec!["http://localhost:3000".into()],
        ..Default::default()
    }))
    .await;
    let addr = s.server.as_ref().unwrap().web_socket_addr().expect("ws on");
    let host = format!("127.0.0.1:{}", addr.port());
    let status = |host: String, extra: &'static str, nobody: bool| {
        tokio::task::spawn_blocking(move || handshake_status(addr, &host, extra, nobody))
    };
    let ok = status(host.clone(), "", false).await.unwrap();
    assert!(ok.starts_with("HTTP/1.1 101"), "{ok}");
    let page = status(host.clone(), "Origin: https://evil.example\r\n", false)
        .await
        .unwrap();
    assert!(page.starts_with("HTTP/1.1 403"), "a web page: {page}");
    let allowed = status(host.clone(), "Origin: http://localhost:3000\r\n", false)
        .await
        .unwrap();
    assert!(
        allowed.starts_with("HTTP/1.1 101"),
        "an allowed origin: {allowed}"
    );
    let rebound = status(format!("evil.example:{}", addr.port()), "", false)
        .await
        .unwrap();
    assert!(
        rebound.starts_with("HTTP/1.1 403"),
        "a rebound name: {rebound}"
    );
    let other = status(host.clone(), "", true).await.unwrap();
    assert!(other.starts_with("HTTP/1.1 403"), "another uid: {other}");
    s.stop().await;
}

/// Every workspace gets a WebSocket: one listener per address for the whole service, routed
/// by path — `/` is the first workspace (Claws's own single-workspace clients), the
/// workspace's folder is that workspace. (Before, every workspace after the first failed with
/// "Address already in use" and had none.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ws_one_listener_serves_every_workspace_by_path() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = ClawsConfig {
        web_socket: ClawsWebSocketConfig {
            enabled: true,
            port,
            ..Default::default()
        },
        ..Default::default()
    };
    let registry = openfiles_claws::ClawsRegistry::new();
    let token = tokio_util::sync::CancellationToken::new();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = ClawsServer::start_with(a.path(), &cfg, registry.clone(), token.clone())
        .await
        .unwrap();
    let second = ClawsServer::start_with(b.path(), &cfg, registry.clone(), token.clone())
        .await
        .unwrap();
    assert_eq!(
        second.web_socket_error(),
        None,
        "the second workspace has a WebSocket too"
    );
    assert_eq!(first.web_socket_addr(), second.web_socket_addr());
    // Which workspace answers: its terminal's name, made over its Unix socket.
    for (dir, name) in [(&a, "in-a"), (&b, "in-b")] {
        let mut c = common::claws::Conn::open(&dir.path().join(".claws/claws.sock")).await;
        c.ok(json!({"id": 1, "cmd": "create", "name": name, "wrapped": true}))
            .await;
    }
    let names = |path: String| async move {
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}{path}"))
            .await
            .unwrap();
        let v = call(&mut ws, &mut Vec::new(), json!({"id": 1, "cmd": "list"})).await;
        v["terminals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let root_b = b.path().canonicalize().unwrap();
    assert_eq!(
        names(String::new()).await,
        ["in-a"],
        "/ is the first workspace"
    );
    assert_eq!(names(root_b.display().to_string()).await, ["in-b"]);
    let unknown = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/nowhere")).await;
    assert!(unknown.is_err(), "a path no workspace has is refused");
    // The first leaves: the other keeps the listener, and `/` is now it.
    first.stop().await;
    assert_eq!(names(root_b.display().to_string()).await, ["in-b"]);
    assert_eq!(names(String::new()).await, ["in-b"]);
    second.stop().await;
}
