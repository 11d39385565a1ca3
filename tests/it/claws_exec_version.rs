//! `clientVersion` drift: a client a minor release or more behind the version the server
//! claims (`introspect`'s `extensionVersion`) gets one warning in the server's log, however
//! many requests and connections it sends; malformed versions are ignored. In-process server
//! on its real socket, with a subscriber that captures the log.

use crate::common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::claws::TestServer;
use serde_json::json;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_client_is_warned_once_per_server() {
    let log = Captured::default();
    let w = log.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || w.clone())
        .init();
    let s = TestServer::start().await;
    let v = s.ok(json!({"id": 1, "cmd": "introspect"})).await;
    let ours = v["extensionVersion"].as_str().unwrap().to_owned();
    assert_eq!(ours, openfiles_claws::COMPATIBLE_EXTENSION_VERSION);
    assert_eq!(v["openfilesVersion"], env!("CARGO_PKG_VERSION"));
    // Current and malformed versions: no warning (malformed: a debug line only).
    for version in [ours.as_str(), "banana", "1.2"] {
        s.ok(json!({"id": 2, "cmd": "ping", "clientName": "t", "clientVersion": version}))
            .await;
    }
    assert!(
        !log.text().contains("minor release behind"),
        "{}",
        log.text()
    );
    assert!(
        log.text().contains("clientVersion is not SemVer"),
        "{}",
        log.text()
    );
    // A client behind, many times on several connections (and a second one behind too).
    for i in 0..20 {
        let name = if i % 2 == 0 { "claws-mcp" } else { "old-py" };
        s.ok(json!({"id": i, "cmd": "list", "clientName": name, "clientVersion": "0.0.9"}))
            .await;
    }
    let text = log.text();
    assert_eq!(text.matches("minor release behind").count(), 1, "{text}");
    assert!(
        text.contains("claws-mcp") && text.contains("0.0.9"),
        "{text}"
    );
    // Another server in the same process warns once on its own.
    let s2 = TestServer::start().await;
    s2.ok(json!({"id": 1, "cmd": "ping", "clientVersion": "0.0.1"}))
        .await;
    s2.ok(json!({"id": 2, "cmd": "ping", "clientVersion": "0.0.1"}))
        .await;
    assert_eq!(log.text().matches("minor release behind").count(), 2);
    s.stop().await;
    s2.stop().await;
}
