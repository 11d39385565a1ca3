//! Claws's `[claws.auth]` secret comes from the user, never from a workspace (issue: "the
//! Claws auth secret is the repository's file"): through the real binary (`claws serve`), a
//! repository's `.claws/auth.token` signs no `hello` for another local uid over the
//! WebSocket, the default secret in the user's state folder signs `openfiles claws`'s own,
//! and a `token_path` inside the workspace is refused with where the secret must live.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_openfiles");

/// A foreground Claws server (`openfiles claws serve DIR`) with its own config and state.
struct Served {
    ws: tempfile::TempDir,
    home: tempfile::TempDir,
    child: Child,
}

impl Served {
    /// Serve a fresh workspace with the user's config.toml `config` makes for its canonical
    /// folder; `plant` runs on the workspace folder first.
    fn start(config: impl FnOnce(&Path) -> String, plant: impl FnOnce(&Path)) -> Served {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        plant(ws.path());
        let root = ws.path().canonicalize().unwrap();
        std::fs::write(home.path().join("config.toml"), config(&root)).unwrap();
        let mut child = Command::new(BIN)
            .envs(Self::env_of(home.path()))
            .args(["claws", "serve"])
            .arg(ws.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert!(ready.starts_with("claws socket ready: "), "{ready}");
        Served { ws, home, child }
    }

    fn env_of(home: &Path) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", home.to_owned()),
            ("OPENFILES_CONFIG", home.join("config.toml")),
            ("OPENFILES_STATE_DIR", home.join("state")),
            ("OPENFILES_AUTOSTART", "0".into()),
        ]
    }

    fn root(&self) -> PathBuf {
        self.ws.path().canonicalize().unwrap()
    }

    /// `openfiles claws ARGS` as this user, in the workspace.
    fn claws(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .envs(Self::env_of(self.home.path()))
            .arg("claws")
            .args(args)
            .current_dir(self.ws.path())
            .output()
            .unwrap()
    }

    /// Stop the server; what it logged.
    fn stop(self) -> String {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let out = self.child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A WebSocket client in Python (no library): handshake with `Host`, then each request line
/// of stdin as one masked text frame, signing `hello`s with argv[2] (HMAC-SHA256 over
/// `peerName:role:nonce:timestamp`, as Claws's clients do); prints each answer on a line.
const WS_CLIENT: &str = r#"
import hashlib, hmac, json, os, socket, struct, sys, time
port, secret = int(sys.argv[1]), sys.argv[2].encode()
s = socket.create_connection(('127.0.0.1', port))
s.sendall(('GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
           'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' % port).encode())
f = s.makefile('rb')
status = f.readline().decode().strip()
print(json.dumps({'status': status}), flush=True)
while f.readline() not in (b'\r\n', b''):
    pass
def send(obj):
    data = json.dumps(obj).encode()
    mask = os.urandom(4)
    head = bytes([0x81])
    n = len(data)
    head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack('>H', n)
    s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
def recv():
    b0, b1 = f.read(2)
    n = b1 & 0x7f
    if n == 126: n = struct.unpack('>H', f.read(2))[0]
    elif n == 127: n = struct.unpack('>Q', f.read(8))[0]
    return json.loads(f.read(n))
for line in sys.stdin:
    req = json.loads(line)
    if req.get('cmd') == 'hello':
        req['nonce'], req['timestamp'] = os.urandom(8).hex(), int(time.time() * 1000)
        msg = '%s:%s:%s:%d' % (req['peerName'], req['role'], req['nonce'], req['timestamp'])
        req['token'] = hmac.new(secret, msg.encode(), hashlib.sha256).hexdigest()
    send(req)
    print(json.dumps(recv()), flush=True)
"#;

/// Run [`WS_CLIENT`] as `nobody` (uid 65534, through `setpriv`) against `port`, signing
/// with `secret`; its output lines as JSON.
fn ws_as_nobody(port: u16, secret: &str, requests: &[Value]) -> Vec<Value> {
    use std::io::Write;
    let mut child = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
            WS_CLIENT,
            &port.to_string(),
            secret,
        ])
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn can_become_nobody() -> bool {
    nix::unistd::getuid().is_root()
        && Command::new("setpriv").arg("--version").output().is_ok()
        && Path::new("/usr/bin/python3").exists()
}

/// A cloned repository ships `.claws/auth.token`; with `[claws.auth]` on (what a listener
/// beyond loopback requires) another local uid signs a `hello` with that file's text over
/// the WebSocket. It is refused (`auth:invalid`: the secret is the user's, not the
/// repository's), every further command gets `auth:required`, and no terminal is created.
/// Before, the repository's file was the secret: the `hello` was accepted and the terminal
/// made, a shell of this user's driven by another uid.
#[test]
fn a_repository_token_signs_no_hello_for_another_uid() {
    if !can_become_nobody() {
        eprintln!("SKIPPED: needs root, setpriv and python3 to act as another uid");
        return;
    }
    let port = free_port();
    let config = format!(
        "[claws.auth]\nenabled = true\n[claws.web_socket]\nenabled = true\nport = {port}\n"
    );
    let s = Served::start(
        |_| config,
        |ws| {
            std::fs::create_dir_all(ws.join(".claws")).unwrap();
            std::fs::write(ws.join(".claws/auth.token"), "repo-secret\n").unwrap();
        },
    );
    let create = serde_json::json!({"id": 2, "cmd": "create", "name": "theirs", "wrapped": true});
    let hello = serde_json::json!({"id": 1, "cmd": "hello", "protocol": "claws/2",
                                   "role": "orchestrator", "peerName": "intruder"});
    let answers = ws_as_nobody(port, "repo-secret", &[hello, create]);
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(
        answers[0]["status"]
            .as_str()
            .unwrap()
            .starts_with("HTTP/1.1 101"),
        "the handshake itself is admitted (auth on decides): {answers:?}"
    );
    assert_eq!(answers[1]["error"], "auth:invalid", "{answers:?}");
    assert_eq!(answers[2]["error"], "auth:required", "{answers:?}");
    let list = s.claws(&["--json", "list"]);
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(v["terminals"], serde_json::json!([]), "no terminal: {v}");
    let log = s.stop();
    assert!(
        log.contains(".claws/auth.token is not read"),
        "the planted file is named in the log: {log}"
    );
}

/// With `[claws.auth]` on and no `token_path`, the service makes the workspace's secret in
/// the user's state folder (0600 in 0700 folders); `openfiles claws token` prints its path
/// (never the secret) and `openfiles claws publish` signs its `hello` with it on its own.
#[test]
fn the_default_secret_lives_in_the_state_folder_and_signs_the_cli() {
    let s = Served::start(|_| "[claws.auth]\nenabled = true\n".into(), |_| {});
    let o = s.claws(&["token"]);
    assert!(o.status.success(), "{o:?}");
    let path = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    let state = s.home.path().join("state");
    assert!(path.starts_with(state.join("claws")), "{path:?}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    let secret = std::fs::read_to_string(&path).unwrap();
    assert_eq!(secret.trim().len(), 64, "32 random bytes as hex");
    assert!(!String::from_utf8_lossy(&o.stdout).contains(secret.trim()));
    let o = s.claws(&["publish", "task.note", "{\"n\":1}"]);
    assert!(o.status.success(), "{o:?}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    // A hello signed with something else is refused.
    let wrong = s.claws(&[
        "raw",
        r#"{"id":1,"cmd":"hello","protocol":"claws/2","role":"worker","peerName":"w","nonce":"n","timestamp":1,"token":"00"}"#,
    ]);
    assert!(String::from_utf8_lossy(&wrong.stdout).contains("auth:invalid"));
    assert!(s.root().join(".claws").exists());
    s.stop();
}

/// A `token_path` in the user's config that lies inside the workspace (the extension's own
/// `.claws/auth.token`, spelled absolute) is refused: the CLI says where the secret must
/// live and sends its `hello` unsigned, which the server refuses.
#[test]
fn a_token_path_inside_the_workspace_is_refused() {
    let config = |root: &Path| {
        format!(
            "[claws.auth]\nenabled = true\ntoken_path = \"{}\"\n",
            root.join(".claws/auth.token").display()
        )
    };
    let s = Served::start(config, |dir| {
        std::fs::create_dir_all(dir.join(".claws")).unwrap();
        let t = dir.join(".claws/auth.token");
        std::fs::write(&t, "in-the-repo\n").unwrap();
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o600)).unwrap();
    });
    let o = s.claws(&["token"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(err.contains("inside the workspace"), "{err}");
    assert!(
        err.contains("state folder"),
        "says where it must live: {err}"
    );
    let o = s.claws(&["publish", "task.note", "{}"]);
    assert!(!o.status.success(), "{o:?}");
    // Signed with the file's text by hand: the server refuses it too.
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let token = openfiles::claws_client::hello_token("in-the-repo", "w", "worker", "n1", ts);
    let hello = serde_json::json!({"id": 1, "cmd": "hello", "protocol": "claws/2",
        "role": "worker", "peerName": "w", "nonce": "n1", "timestamp": ts, "token": token});
    let o = s.claws(&["raw", &hello.to_string()]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"], "auth:invalid", "{v}");
    let log = s.stop();
    assert!(log.contains("inside the workspace"), "logged: {log}");
}

/// `openfiles mcp` signs its bus `hello` with the workspace's secret from the user's state
/// folder on its own: with `[claws.auth]` on, the Claws bus tools work through a real
/// service (before, its `hello` carried no token and every bus tool failed `auth:required`).
#[test]
fn the_mcp_server_signs_its_hello_with_the_default_secret() {
    let env = crate::common::Env::new();
    std::fs::write(&env.config, "[claws.auth]\nenabled = true\n").unwrap();
    let ws = env.workspace("ws");
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut mcp = crate::common::mcp::Mcp::start(&env, &ws);
    let init = mcp.ask(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}}),
    );
    assert!(init["result"].is_object(), "{init}");
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let (failed, text) = mcp.tool(
        "claws_publish",
        serde_json::json!({"topic": "task.note", "payload": {"n": 1}}),
    );
    assert!(!failed, "{text}");
    let (failed, text) = mcp.tool("claws_peers", serde_json::json!({}));
    assert!(!failed && text.contains("openfiles-mcp"), "{text}");
}
