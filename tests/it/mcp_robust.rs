//! `openfiles mcp` against a client that sends garbage: every message gets the JSON-RPC
//! answer it deserves and the server keeps serving (before: a byte that is not UTF-8 ended
//! it silently with exit 0, `[]` got no answer, and a huge line was held whole in memory).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use common::Env;
use serde_json::Value;

#[test]
fn garbage_gets_its_error_and_the_server_keeps_serving() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut child = env
        .command(&["mcp", "--workspace", ws.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };

    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"\xff}\n")
        .unwrap();
    let v = next();
    assert_eq!(v["error"]["code"], -32700, "not UTF-8: a parse error, {v}");
    stdin.write_all(b"[]\n").unwrap();
    let v = next();
    assert_eq!(
        v["error"]["code"], -32600,
        "an empty batch: invalid request, {v}"
    );
    stdin.write_all(b"42\n").unwrap();
    assert_eq!(next()["error"]["code"], -32600, "not an object");
    // A line past the cap (16 MiB) is skipped without being held, and answered.
    let big = vec![b'x'; openfiles::mcp::server::MAX_MESSAGE + 1024];
    stdin.write_all(&big).unwrap();
    stdin.write_all(b"\n").unwrap();
    let v = next();
    assert_eq!(v["error"]["code"], -32600, "too long: {v}");
    // Still serving.
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
        .unwrap();
    let v = next();
    assert_eq!(v["id"], 7, "{v}");
    assert!(v.get("result").is_some(), "{v}");
    // A file of another repository is refused, not registered as a new workspace.
    let other = env.workspace("other");
    let file = other.join("x.py");
    std::fs::write(&file, "x = 1\n").unwrap();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "openfiles_check", "arguments": {"paths": [file]}}});
    stdin.write_all(format!("{call}\n").as_bytes()).unwrap();
    let v = next();
    assert!(v.to_string().contains("outside the workspace"), "{v}");
    assert!(!other.join(".openfiles").exists() && !other.join(".claws").exists());
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
