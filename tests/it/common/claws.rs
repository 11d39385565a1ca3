//! Helpers for the Claws integration tests: an in-process server on a temp folder and
//! small async clients that talk to its real socket.

use std::path::{Path, PathBuf};
use std::time::Duration;

use openfiles::config::ClawsConfig;
use openfiles_claws::ClawsServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

/// Failure bound for anything a test waits on.
pub const BOUND: Duration = Duration::from_secs(60);

pub struct TestServer {
    pub dir: tempfile::TempDir,
    /// `$HOME` of the test's shells, so the machine's rc files stay out of the tests.
    pub home: tempfile::TempDir,
    pub server: Option<ClawsServer>,
    pub token: CancellationToken,
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::with(ClawsConfig::default()).await
    }

    pub async fn with(cfg: ClawsConfig) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let token = CancellationToken::new();
        let server = ClawsServer::start(dir.path(), &cfg, token.clone())
            .await
            .unwrap();
        TestServer {
            dir,
            home: tempfile::tempdir().unwrap(),
            server: Some(server),
            token,
        }
    }

    /// The `env` for a create request: `$HOME` pointing at the test's home.
    pub fn env(&self) -> Value {
        json!({"HOME": self.home.path()})
    }

    pub fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }

    pub fn sock(&self) -> PathBuf {
        self.server.as_ref().unwrap().socket_path().to_owned()
    }

    pub async fn conn(&self) -> Conn {
        Conn::open(&self.sock()).await
    }

    /// One request on its own connection (how claws/1 clients call).
    pub async fn call(&self, req: Value) -> Value {
        self.conn().await.call(req).await
    }

    pub async fn ok(&self, req: Value) -> Value {
        let v = self.call(req.clone()).await;
        assert_eq!(v["ok"], true, "{req} -> {v}");
        v
    }

    pub async fn create(&self, extra: Value) -> String {
        let mut req = json!({"id": 1, "cmd": "create", "wrapped": true, "env": self.env()});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                if let (Value::Object(e), "env") = (&v, k.as_str()) {
                    for (ek, ev) in e {
                        req["env"][ek] = ev.clone();
                    }
                } else {
                    req[k] = v;
                }
            }
        }
        let v = self.ok(req).await;
        v["id"].as_str().unwrap().to_owned()
    }

    pub async fn exec(&self, term: &str, command: &str) -> Value {
        let v = self
            .ok(json!({"cmd": "exec", "id": term, "command": command, "timeoutMs": 60000}))
            .await;
        assert!(v.get("degraded").is_none(), "degraded: {v}");
        v["event"].clone()
    }

    /// Poll `readLog` (stripped) until it contains `needle`; panics past the bound.
    pub async fn wait_log(&self, term: &str, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + BOUND;
        loop {
            let v = self.ok(json!({"cmd": "readLog", "id": term})).await;
            let text = v["bytes"].as_str().unwrap().to_owned();
            if text.contains(needle) {
                return text;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{needle:?} never appeared in:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub async fn stop(mut self) -> tempfile::TempDir {
        self.server.take().unwrap().stop().await;
        self.dir
    }
}

pub struct Conn {
    pub rd: BufReader<tokio::net::unix::OwnedReadHalf>,
    pub wr: tokio::net::unix::OwnedWriteHalf,
    /// Push frames read while looking for an answer (a push may arrive before the answer
    /// of the request that caused it, e.g. `publish` with `echo`), for [`Conn::push`].
    pushes: std::collections::VecDeque<Value>,
}

impl Conn {
    pub async fn open(sock: &Path) -> Conn {
        let s = UnixStream::connect(sock).await.unwrap();
        let (r, w) = s.into_split();
        Conn {
            rd: BufReader::new(r),
            wr: w,
            pushes: Default::default(),
        }
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.wr.write_all(bytes).await.unwrap();
    }

    pub async fn send(&mut self, req: &Value) {
        let mut s = req.to_string();
        s.push('\n');
        self.send_raw(s.as_bytes()).await;
    }

    /// The next line, or None at end of stream.
    pub async fn line(&mut self) -> Option<Value> {
        let mut s = String::new();
        let n = tokio::time::timeout(BOUND, self.rd.read_line(&mut s))
            .await
            .expect("no line from the server within the bound")
            .ok()?;
        if n == 0 {
            return None;
        }
        Some(serde_json::from_str(&s).unwrap_or_else(|e| panic!("bad line {s:?}: {e}")))
    }

    /// The next non-push line.
    pub async fn answer(&mut self) -> Value {
        loop {
            let v = self.line().await.expect("connection closed");
            if v.get("push").is_none() {
                return v;
            }
            self.pushes.push_back(v);
        }
    }

    pub async fn call(&mut self, req: Value) -> Value {
        self.send(&req).await;
        self.answer().await
    }

    /// The next push frame (skipping answers).
    pub async fn push(&mut self) -> Value {
        if let Some(v) = self.pushes.pop_front() {
            return v;
        }
        loop {
            let v = self.line().await.expect("connection closed");
            if v.get("push").is_some() {
                return v;
            }
        }
    }
}

impl TestServer {
    /// A claws/2 peer on its own connection: `hello` with `role` and `extra` fields.
    pub async fn peer(&self, role: &str, extra: Value) -> (Conn, String) {
        let mut c = self.conn().await;
        let mut req = json!({"id": "h", "cmd": "hello", "protocol": "claws/2", "role": role});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                req[k] = v;
            }
        }
        let v = c.call(req).await;
        assert_eq!(v["ok"], true, "{v}");
        let id = v["peerId"].as_str().unwrap().to_owned();
        (c, id)
    }
}

impl Conn {
    /// A request that must succeed.
    pub async fn ok(&mut self, req: Value) -> Value {
        let v = self.call(req.clone()).await;
        assert_eq!(v["ok"], true, "{req} -> {v}");
        v
    }

    /// The error string of a request that must fail.
    pub async fn err(&mut self, req: Value) -> String {
        let v = self.call(req.clone()).await;
        assert_eq!(v["ok"], false, "{req} -> {v}");
        v["error"].as_str().unwrap_or_default().to_owned()
    }

    pub async fn subscribe(&mut self, topic: &str) {
        self.ok(json!({"id": "s", "cmd": "subscribe", "topic": topic}))
            .await;
    }

    /// Push frames until one on `topic`.
    pub async fn until(&mut self, topic: &str) -> Value {
        loop {
            let f = self.push().await;
            if f["topic"] == topic {
                return f;
            }
        }
    }
}

/// Write a `[claws.auth]` secret as a user keeps one: a regular file of mode 0600 (the server
/// refuses one the group or others may read).
pub fn write_secret(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}
