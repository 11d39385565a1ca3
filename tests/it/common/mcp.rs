//! A raw stdio session with `openfiles mcp --workspace WS` (no SDK): JSON-RPC lines in and
//! out, for the cases an SDK never sends and for calling one tool.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;

use serde_json::{json, Value};

use super::Env;

pub struct Mcp {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Mcp {
    pub fn start(env: &Env, ws: &Path) -> Mcp {
        let mut child = env
            .command(&["mcp", "--workspace", ws.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Mcp { child, out, id: 0 }
    }

    /// Send one line as it is.
    pub fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message the server sends.
    pub fn recv(&mut self) -> Value {
        let mut line = String::new();
        assert!(self.out.read_line(&mut line).unwrap() > 0, "mcp exited");
        serde_json::from_str(&line).unwrap()
    }

    pub fn ask(&mut self, msg: Value) -> Value {
        self.send(&msg.to_string());
        self.recv()
    }

    /// Call a tool: (is_error, its first text).
    pub fn tool(&mut self, name: &str, args: Value) -> (bool, String) {
        let r = self.tool_result(name, args);
        let text = r["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (r["isError"] == true, text)
    }

    /// Call a tool: its whole `result` (content, `structuredContent`, `isError`).
    pub fn tool_result(&mut self, name: &str, args: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": args}})
            .to_string(),
        );
        loop {
            let v = self.recv();
            if v["id"] == id {
                return v["result"].clone();
            }
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
