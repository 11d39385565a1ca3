//! `openfiles claws …`: a small blocking client for people and scripts. It finds the socket
//! (`--claws-socket`, else `<workspace>/.claws/claws.sock` walking up from `--workspace` or
//! the current directory), sends one request per call on its own connection as real clients
//! do, and prints the useful part of the answer for a person (`list` as a table, `exec`
//! output with the command's exit code, `log` text) or, with `--json`, the raw answer.
//! `exec` keeps its own failures apart from the command's: the command's exit code passes
//! through, [`EXEC_TIMEOUT`] and [`EXEC_OWN_ERROR`] (with `openfiles: …` on stderr) are
//! openfiles'. `subscribe` stays connected and prints push frames.
//! The hidden `serve` runs one Claws server in the foreground (for development and tests):
//! a server, not a client, so `cli` hands it to `crate::claws_serve`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde_json::Value;

use openfiles_claws::config::ClawsAuthConfig;
use openfiles_claws::secret;
use openfiles_wire::claws::request::{self as rq, Command, Target};
use openfiles_wire::claws::{error_code, ErrorCode, PROTOCOL_2};
use openfiles_wire::line::{Conn, LineError};

/// `claws exec`'s exit status when the command did not finish within the timeout (as
/// `timeout(1)`).
pub const EXEC_TIMEOUT: u8 = 124;
/// `claws exec`'s exit status when openfiles could not run the command or learn its exit
/// code (no socket, unknown terminal, no shell integration), as `env(1)` and `docker run`.
pub const EXEC_OWN_ERROR: u8 = 125;

#[derive(Debug, Args)]
pub struct ClawsArgs {
    /// Workspace folder whose `.claws/claws.sock` to use [default: nearest from the cwd up]
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Talk to this socket directly.
    #[arg(long, value_name = "PATH")]
    pub claws_socket: Option<PathBuf>,
    /// Print the server's raw answers (JSON) instead of tables and text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub cmd: ClawsCmd,
}

#[derive(Debug, Subcommand)]
pub enum ClawsCmd {
    /// List terminals (a table; `--json` for the raw answer). Example: openfiles claws list
    List,
    /// Open a terminal and print its id. Example: openfiles claws create --name build --wrapped
    Create {
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Keep output in memory for `log`.
        #[arg(long)]
        wrapped: bool,
        #[arg(long)]
        shell: Option<PathBuf>,
    },
    /// Type text into a terminal (Enter appended). Example: openfiles claws send 3 'make test'
    Send {
        id: String,
        text: String,
        #[arg(long)]
        no_newline: bool,
        #[arg(long)]
        paste: bool,
    },
    /// Run a command, print its output, exit with its exit code. Example: openfiles claws exec 3 'cargo test'
    ///
    /// Exit status: the command's own; 124 when it did not finish within the timeout; 125
    /// when openfiles could not run it or learn its exit code (no socket, unknown terminal, a
    /// shell without integration), with `openfiles: …` on stderr.
    Exec {
        id: String,
        command: String,
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
    },
    /// Print a wrapped terminal's output (the tail by default). Example: openfiles claws log 3
    Log {
        id: String,
        #[arg(long)]
        offset: Option<u64>,
        #[arg(long)]
        limit: Option<u64>,
        /// Keep escape sequences.
        #[arg(long)]
        raw: bool,
    },
    /// Close a terminal. Example: openfiles claws close 3
    Close { id: String },
    /// Print bus messages on TOPIC (`*`, `**` wildcards). Example: openfiles claws subscribe 'command.**'
    Subscribe {
        topic: String,
        /// Replay stored events from this cursor first (`0000:0` = everything kept).
        #[arg(long)]
        from_cursor: Option<String>,
        /// Exit after this many messages.
        #[arg(long)]
        count: Option<u64>,
    },
    /// Publish a JSON payload on TOPIC. Example: openfiles claws publish task.done '{"ok":true}'
    Publish { topic: String, payload: String },
    /// Send one raw JSON request and print the answer.
    /// Example: openfiles claws raw '{"id":1,"cmd":"list"}'
    Raw {
        /// The request (one JSON object). Named apart from the global `--json` flag.
        #[arg(value_name = "JSON")]
        request: String,
    },
    /// Print where the workspace's `[claws.auth]` secret lives (its path, never the secret).
    /// Example: openfiles claws token --workspace ~/src/app
    ///
    /// A Claws client signs its `hello` with that file's text (trimmed): HMAC-SHA256 over
    /// `peerName:role:nonce:timestamp`. `openfiles claws` and `openfiles mcp` do so on their
    /// own. The service makes the file (mode 0600, in your state folder) when it serves the
    /// workspace with `[claws.auth] enabled`; `token_path` in your config names another one.
    Token,
    /// Serve one folder's Claws socket in the foreground (development; `crate::claws_serve`).
    #[command(hide = true)]
    Serve { dir: PathBuf },
}

/// One connection to a Claws socket (the wire crate's line connection: answers capped, reads
/// bounded by the deadline a command gives).
pub struct Client {
    conn: Conn,
}

impl Client {
    pub fn connect(path: &Path) -> anyhow::Result<Client> {
        // The error names the socket, and why it is refused when it is not the user's.
        Ok(Client {
            conn: Conn::connect(path)?,
        })
    }

    /// The next line from the server (`None` at end of stream).
    pub fn next_line(&mut self) -> anyhow::Result<Option<Value>> {
        match self.conn.recv(None, None) {
            Ok(line) => Ok(Some(
                serde_json::from_slice(&line).context("bad answer from the Claws socket")?,
            )),
            Err(LineError::Closed) => Ok(None),
            Err(e) => Err(e).context("reading from the Claws socket"),
        }
    }

    /// Send `req` and return its answer (skipping push frames).
    pub fn call(&mut self, req: &Value) -> anyhow::Result<Value> {
        // A refusing server answers and hangs up at once: read its answer even if the write failed.
        let wrote = self.conn.send(req.to_string().as_bytes(), None);
        loop {
            match self.next_line()? {
                None => {
                    wrote?;
                    bail!("the Claws socket closed the connection")
                }
                Some(v) if v.get("push").is_some() => continue,
                Some(v) => return Ok(v),
            }
        }
    }

    /// Send a typed request and return its answer.
    pub fn request(&mut self, req: &Command) -> anyhow::Result<Value> {
        self.call(&req.to_value())
    }
}

/// The CLI's claws/2 `hello` in `role` to the socket `sock`, signed with the workspace's
/// `[claws.auth]` secret when there is one we may read (`openfiles_claws::secret`: the
/// user's state folder, or `token_path` from `auth`, the user's config); unsigned otherwise
/// (a server with auth off needs none, one with auth on says `auth:required`).
fn hello(role: &str, sock: &Path, auth: &ClawsAuthConfig) -> Command {
    let mut h = rq::Hello {
        protocol: Some(PROTOCOL_2.to_owned()),
        role: Some(role.into()),
        peer_name: Some("openfiles-cli".to_owned()),
        ..Default::default()
    };
    if let Some(root) = secret::root_of_socket(sock) {
        if let Err(e) = secret::sign_hello(&mut h, &root, auth) {
            if auth.enabled {
                eprintln!("openfiles: hello not signed: {e}");
            }
        }
    }
    Command::Hello(h)
}

/// The user's `[claws.auth]` (the defaults when the config cannot be read: the command's
/// own request shows what the server says).
fn user_auth(config: Option<&Path>) -> ClawsAuthConfig {
    crate::config::Config::load(config)
        .map(|(c, _)| c.claws.auth)
        .unwrap_or_default()
}

/// The socket to use: `--claws-socket` as given, else the nearest `.claws/claws.sock`.
///
/// A found `.claws` or `claws.sock` that is a symlink is refused, wherever it points: the
/// service never serves through one (it refuses a symlinked `.claws/`), so a link there was
/// planted — a repository can commit one — and not made by openfiles. Whatever the path,
/// the connection itself talks only to a socket of the user's (`openfiles_wire::line`).
pub fn socket_for(args: &ClawsArgs) -> anyhow::Result<PathBuf> {
    if let Some(s) = &args.claws_socket {
        return Ok(s.clone());
    }
    let start = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    for dir in start.ancestors() {
        let s = dir.join(".claws").join("claws.sock");
        if s.exists() {
            for p in [dir.join(".claws"), s.clone()] {
                if let Ok(target) = std::fs::read_link(&p) {
                    bail!(
                        "{} is a symlink (to {}); openfiles never serves a Claws socket through \
                         one, so it was not made by openfiles; refusing to talk to it \
                         (--claws-socket names a socket on purpose)",
                        p.display(),
                        target.display()
                    );
                }
            }
            return Ok(s);
        }
    }
    bail!(
        "no .claws/claws.sock in {} or above; is the service running (openfiles serve)?",
        start.display()
    )
}

/// [`socket_for`], and when no Claws server answers there (no `--claws-socket` given): start
/// the service on first use (`crate::autostart`, as the hook does) and, when it serves a
/// workspace holding the start folder, wait for that workspace's socket.
fn socket_or_start(args: &ClawsArgs, control: Option<&Path>) -> anyhow::Result<PathBuf> {
    let found = socket_for(args);
    if args.claws_socket.is_some() {
        return found;
    }
    match &found {
        Ok(s) if std::os::unix::net::UnixStream::connect(s).is_ok() => return found,
        Ok(_) => {}
        // Only "none there" is worth a start; a refused symlink stays refused.
        Err(e) if !e.to_string().starts_with("no .claws/claws.sock") => return found,
        Err(_) => {}
    }
    let Ok(control) = crate::paths::control_socket(control) else {
        return found;
    };
    let reply = crate::autostart::connect(&control, Some(std::time::Duration::from_secs(10)))
        .and_then(|mut c| c.call(&openfiles_wire::control::Workspaces));
    let Ok(reply) = reply else {
        return found;
    };
    let start = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let start = start.canonicalize().unwrap_or(start);
    let Some(root) = reply
        .workspaces
        .iter()
        .map(|w| &w.root)
        .filter(|r| start.starts_with(r))
        .max_by_key(|r| r.components().count())
    else {
        return found;
    };
    let sock = root.join(".claws").join("claws.sock");
    let deadline = std::time::Instant::now() + crate::autostart::LISTEN_BUDGET;
    while std::time::Instant::now() < deadline {
        if std::os::unix::net::UnixStream::connect(&sock).is_ok() {
            return socket_for(args);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    found
}

/// A successful answer read as the request's typed reply.
fn typed<T: serde::de::DeserializeOwned>(v: Value) -> anyhow::Result<T> {
    serde_json::from_value(v).context("unexpected answer from the Claws server")
}

fn one(sock: &Path, req: Command) -> anyhow::Result<Value> {
    let v = Client::connect(sock)?.request(&req)?;
    if v.get("ok") != Some(&Value::Bool(true)) {
        bail!(
            "{}",
            v.get("error")
                .and_then(Value::as_str)
                .unwrap_or("request failed")
        );
    }
    Ok(v)
}

/// Run `openfiles claws …`; the result is the exit code.
pub fn run(args: ClawsArgs, config: Option<&Path>, control: Option<&Path>) -> anyhow::Result<u8> {
    if let ClawsCmd::Token = &args.cmd {
        return token(&args, config);
    }
    let sock = match socket_or_start(&args, control) {
        Ok(sock) => sock,
        Err(e) if matches!(args.cmd, ClawsCmd::Exec { .. }) => {
            eprintln!("openfiles: {e:#}");
            return Ok(EXEC_OWN_ERROR);
        }
        Err(e) => return Err(e),
    };
    let json = args.json;
    match args.cmd {
        ClawsCmd::List => list(&sock, json),
        ClawsCmd::Create {
            name,
            cwd,
            wrapped,
            shell,
        } => create(&sock, name, cwd, wrapped, shell),
        ClawsCmd::Send {
            id,
            text,
            no_newline,
            paste,
        } => send(&sock, id, text, no_newline, paste),
        ClawsCmd::Exec {
            id,
            command,
            timeout_ms,
        } => Ok(exec(&sock, json, id, command, timeout_ms)),
        ClawsCmd::Log {
            id,
            offset,
            limit,
            raw,
        } => log(&sock, id, offset, limit, raw),
        ClawsCmd::Close { id } => close(&sock, json, &id),
        ClawsCmd::Subscribe {
            topic,
            from_cursor,
            count,
        } => subscribe(&sock, config, topic, from_cursor, count),
        ClawsCmd::Publish { topic, payload } => publish(&sock, config, topic, &payload),
        ClawsCmd::Raw { request: text } => {
            let req: Value = serde_json::from_str(&text).context("not JSON")?;
            println!("{}", Client::connect(&sock)?.call(&req)?);
            Ok(0)
        }
        // `serve` is not a client's: `cli` hands it to `crate::claws_serve`.
        ClawsCmd::Serve { .. } => bail!("`claws serve` runs a server, not a client"),
        ClawsCmd::Token => unreachable!("handled above"),
    }
}

/// `claws list`: a table, or the raw answer.
fn list(sock: &Path, json: bool) -> anyhow::Result<u8> {
    let v = one(sock, Command::List)?;
    if json {
        println!("{v}");
    } else {
        print!("{}", terminal_table(&v));
    }
    Ok(0)
}

/// `claws create`: prints the new terminal's id.
fn create(
    sock: &Path,
    name: Option<String>,
    cwd: Option<PathBuf>,
    wrapped: bool,
    shell: Option<PathBuf>,
) -> anyhow::Result<u8> {
    let v = one(
        sock,
        Command::Create(rq::Create {
            name,
            cwd: cwd.map(|c| c.display().to_string()),
            wrapped: Some(wrapped),
            shell_path: shell.map(|s| s.display().to_string()),
            ..Default::default()
        }),
    )?;
    println!("{}", typed::<rq::Created>(v)?.id);
    Ok(0)
}

/// `claws send`: type text into a terminal.
fn send(
    sock: &Path,
    id: String,
    text: String,
    no_newline: bool,
    paste: bool,
) -> anyhow::Result<u8> {
    one(
        sock,
        Command::Send(rq::Send {
            target: Target::id(id),
            text: Some(text),
            newline: Some(!no_newline),
            paste: Some(paste),
        }),
    )?;
    Ok(0)
}

/// `claws exec`: the command's output and its exit code, or openfiles' own code
/// ([`exec_status`]) with the reason on stderr.
fn exec(sock: &Path, json: bool, id: String, command: String, timeout_ms: Option<u64>) -> u8 {
    let req = Command::Exec(rq::Exec {
        target: Target::id(id),
        command: Some(command),
        timeout_ms,
    });
    let answer = Client::connect(sock).and_then(|mut c| c.request(&req));
    match answer {
        Ok(v) if json => {
            println!("{v}");
            exec_status(&v).unwrap_or_else(|(code, _)| code)
        }
        Ok(v) => match exec_status(&v) {
            Ok(code) => {
                let ran = typed::<rq::ExecReply>(v).ok().and_then(|r| r.event);
                print!("{}", ran.map(|e| e.output).unwrap_or_default());
                code
            }
            Err((code, why)) => {
                eprintln!("openfiles: {why}");
                code
            }
        },
        Err(e) => {
            eprintln!("openfiles: {e:#}");
            EXEC_OWN_ERROR
        }
    }
}

/// `claws log`: a wrapped terminal's output.
fn log(
    sock: &Path,
    id: String,
    offset: Option<u64>,
    limit: Option<u64>,
    raw: bool,
) -> anyhow::Result<u8> {
    let v = one(
        sock,
        Command::ReadLog(rq::ReadLog {
            target: Target::id(id),
            offset,
            limit,
            strip: Some(!raw),
        }),
    )?;
    print!("{}", typed::<rq::LogPage>(v)?.bytes);
    Ok(0)
}

/// `claws close`.
fn close(sock: &Path, json: bool, id: &str) -> anyhow::Result<u8> {
    let v = one(
        sock,
        Command::Close(rq::Close {
            target: Target::id(id),
            close_origin: None,
        }),
    )?;
    if json {
        println!("{v}");
    } else if typed::<rq::Closed>(v)?.already_closed {
        println!("terminal {id} was already closed (or never existed)");
    } else {
        println!("closed terminal {id}");
    }
    Ok(0)
}

/// A connection that said `hello` as `role`, signed with the user's `[claws.auth]` secret.
fn greeted(sock: &Path, config: Option<&Path>, role: &str) -> anyhow::Result<Client> {
    let mut c = Client::connect(sock)?;
    let h = c.request(&hello(role, sock, &user_auth(config)))?;
    if h["ok"] != Value::Bool(true) {
        bail!("{}", h["error"]);
    }
    Ok(c)
}

/// `claws subscribe`: print push frames until `count` messages (or the end).
fn subscribe(
    sock: &Path,
    config: Option<&Path>,
    topic: String,
    from_cursor: Option<String>,
    count: Option<u64>,
) -> anyhow::Result<u8> {
    let mut c = greeted(sock, config, "observer")?;
    let s = c.request(&Command::Subscribe(rq::Subscribe {
        topic: Some(topic),
        from_cursor: from_cursor.map(Value::from),
    }))?;
    if s["ok"] != Value::Bool(true) {
        bail!("{}", s["error"].as_str().unwrap_or("subscribe failed"));
    }
    let mut out = std::io::stdout().lock();
    let mut seen = 0;
    while !matches!(count, Some(n) if seen >= n) {
        let Some(v) = c.next_line()? else { break };
        writeln!(out, "{v}")?;
        out.flush()?;
        if v["push"] == "message" {
            seen += 1;
        }
    }
    Ok(0)
}

/// `claws publish`: exit 1 when the server refused it.
fn publish(sock: &Path, config: Option<&Path>, topic: String, payload: &str) -> anyhow::Result<u8> {
    let payload: Value = serde_json::from_str(payload).context("the payload is not JSON")?;
    let mut c = greeted(sock, config, "worker")?;
    let v = c.request(&Command::Publish(rq::Publish {
        topic: Some(topic),
        payload: Some(payload),
        echo: None,
    }))?;
    println!("{v}");
    Ok(if v["ok"] == Value::Bool(true) { 0 } else { 1 })
}

/// The exit status `claws exec` gives for an `exec` answer: the command's exit code, or
/// openfiles' own code with the reason.
pub fn exec_status(v: &Value) -> Result<u8, (u8, String)> {
    if v.get("ok") != Some(&Value::Bool(true)) {
        let error = v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("exec failed");
        // Our server says `code`; the editor extension's says only the words.
        let timeout = error_code(v) == Some(ErrorCode::ExecTimeout);
        let code = if timeout || error.starts_with("exec timeout") {
            EXEC_TIMEOUT
        } else {
            EXEC_OWN_ERROR
        };
        return Err((code, error.to_owned()));
    }
    let no_code = || {
        (
            EXEC_OWN_ERROR,
            "the server's answer carries no exit code".to_owned(),
        )
    };
    let reply = serde_json::from_value::<rq::ExecReply>(v.clone()).map_err(|_| no_code())?;
    if reply.degraded {
        return Err((
            EXEC_OWN_ERROR,
            "the terminal has no shell integration: neither output nor exit code was captured"
                .to_owned(),
        ));
    }
    match reply.event.map(|e| e.exit_code) {
        Some(code) => u8::try_from(code)
            .map_err(|_| (EXEC_OWN_ERROR, format!("exit code {code} is out of range"))),
        None => Err(no_code()),
    }
}

/// `list`'s answer as a table: one row per terminal.
pub fn terminal_table(v: &Value) -> String {
    let empty = Vec::new();
    let terms = v["terminals"].as_array().unwrap_or(&empty);
    if terms.is_empty() {
        return "no terminals\n".to_owned();
    }
    let text = |t: &Value, k: &str| match &t[k] {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    };
    let rows: Vec<[String; 6]> = terms
        .iter()
        .map(|t| {
            let status = match (&t["status"], &t["exitCode"]) {
                (Value::String(s), Value::Number(n)) if s == "exited" => format!("exited {n}"),
                _ => text(t, "status"),
            };
            [
                text(t, "id"),
                text(t, "name"),
                text(t, "pid"),
                status,
                text(t, "shellState"),
                match (t["wrapped"].as_bool(), t["hasShellIntegration"].as_bool()) {
                    (Some(true), Some(true)) => "wrapped, integrated".to_owned(),
                    (Some(true), _) => "wrapped".to_owned(),
                    (_, Some(true)) => "integrated".to_owned(),
                    _ => "-".to_owned(),
                },
            ]
        })
        .collect();
    let head = ["ID", "NAME", "PID", "STATUS", "SHELL", "CAPTURE"];
    let mut widths = head.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut l = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}  "));
            }
        }
        l.trim_end().to_owned() + "\n"
    };
    let mut out = line(&head.map(str::to_owned));
    for r in &rows {
        out.push_str(&line(r));
    }
    out
}

/// `claws token`: the path of the workspace's secret (the workspace of the nearest socket,
/// else `--workspace` or the current folder itself).
fn token(args: &ClawsArgs, config: Option<&Path>) -> anyhow::Result<u8> {
    let root = match socket_for(args)
        .ok()
        .and_then(|s| secret::root_of_socket(&s))
    {
        Some(root) => root,
        None => {
            let dir = match &args.workspace {
                Some(w) => w.clone(),
                None => std::env::current_dir()?,
            };
            std::fs::canonicalize(&dir).with_context(|| format!("{}", dir.display()))?
        }
    };
    let auth = crate::config::Config::load(config)?.0.claws.auth;
    let path = secret::token_path(&auth, &root);
    println!("{}", crate::visible::escape(&path.display().to_string()));
    if !auth.enabled {
        eprintln!("openfiles: [claws.auth] is off in your config: the server asks for no token");
    } else {
        match secret::read(&path, &[root]) {
            Ok(_) => {}
            Err(secret::SecretError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                eprintln!(
                    "openfiles: not made yet: the service makes it when it serves this \
                     workspace with [claws.auth] enabled"
                );
                return Ok(1);
            }
            Err(e) => {
                eprintln!("openfiles: {e}");
                return Ok(1);
            }
        }
    }
    Ok(0)
}

pub use openfiles_wire::claws::auth::hello_token;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exec_status_keeps_openfiles_errors_apart_from_the_command() {
        let ran = json!({"ok": true, "event": {"exitCode": 2, "output": "x"}});
        assert_eq!(exec_status(&ran), Ok(2));
        let unknown = json!({"ok": false, "error": "unknown terminal id 9"});
        assert_eq!(exec_status(&unknown).unwrap_err().0, EXEC_OWN_ERROR);
        let slow = json!({"ok": false, "error": "exec timeout after 100ms"});
        assert_eq!(exec_status(&slow).unwrap_err().0, EXEC_TIMEOUT);
        let coded = json!({"ok": false, "error": "took too long", "code": "exec-timeout"});
        assert_eq!(exec_status(&coded).unwrap_err().0, EXEC_TIMEOUT);
        let degraded = json!({"ok": true, "degraded": true});
        assert_eq!(exec_status(&degraded).unwrap_err().0, EXEC_OWN_ERROR);
        let no_code = json!({"ok": true, "event": {}});
        assert_eq!(exec_status(&no_code).unwrap_err().0, EXEC_OWN_ERROR);
    }

    #[test]
    fn list_prints_a_table() {
        let v = json!({"ok": true, "terminals": [
            {"id": "1", "name": "build", "pid": 42, "status": "running", "exitCode": null,
             "shellState": "idle", "wrapped": true, "hasShellIntegration": true},
            {"id": "12", "name": null, "pid": 7, "status": "exited", "exitCode": 1,
             "shellState": "exited", "wrapped": false, "hasShellIntegration": false},
        ]});
        let t = terminal_table(&v);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[0].starts_with("ID  NAME   PID  STATUS"), "{t}");
        assert!(lines[1].starts_with("1   build  42   running"), "{t}");
        assert!(lines[2].contains("exited 1"), "{t}");
        assert_eq!(terminal_table(&json!({"terminals": []})), "no terminals\n");
    }
}
