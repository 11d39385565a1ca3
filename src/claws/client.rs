//! `openfiles claws …`: a small blocking client for people and scripts. It finds the socket
//! (`--claws-socket`, else `<workspace>/.claws/claws.sock` walking up from `--workspace` or
//! the current directory), sends one request per call on its own connection as real clients
//! do, and prints the answer (JSON) or the useful part of it (`exec` output with the
//! command's exit code, `log` text). `subscribe` stays connected and prints push frames.
//! The hidden `serve` runs one Claws server in the foreground (for development and tests).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::proto::PROTOCOL_2;

#[derive(Debug, Args)]
pub struct ClawsArgs {
    /// Workspace folder whose `.claws/claws.sock` to use [default: nearest from the cwd up]
    #[arg(long, short = 'w', value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Talk to this socket directly.
    #[arg(long, value_name = "PATH")]
    pub claws_socket: Option<PathBuf>,
    #[command(subcommand)]
    pub cmd: ClawsCmd,
}

#[derive(Debug, Subcommand)]
pub enum ClawsCmd {
    /// List terminals. Example: openfiles claws list
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
    Raw { json: String },
    /// Serve one folder's Claws socket in the foreground (development).
    #[command(hide = true)]
    Serve { dir: PathBuf },
}

/// One connection to a Claws socket.
pub struct Client {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
}

impl Client {
    pub fn connect(path: &Path) -> anyhow::Result<Client> {
        let s = UnixStream::connect(path)
            .with_context(|| format!("cannot connect to {}", path.display()))?;
        Ok(Client {
            reader: BufReader::new(s.try_clone()?),
            writer: s,
        })
    }

    /// The next line from the server (`None` at end of stream).
    pub fn next_line(&mut self) -> anyhow::Result<Option<Value>> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        Ok(Some(
            serde_json::from_str(&line).context("bad answer from the Claws socket")?,
        ))
    }

    /// Send `req` and return its answer (skipping push frames).
    pub fn call(&mut self, req: &Value) -> anyhow::Result<Value> {
        let mut line = req.to_string();
        line.push('\n');
        // A refusing server answers and hangs up at once: read its answer even if the write failed.
        let wrote = self.writer.write_all(line.as_bytes());
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
}

/// The socket to use.
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
            return Ok(s);
        }
    }
    bail!(
        "no .claws/claws.sock in {} or above; is the service running (openfiles serve)?",
        start.display()
    )
}

fn one(sock: &Path, req: Value) -> anyhow::Result<Value> {
    let v = Client::connect(sock)?.call(&req)?;
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
pub fn run(args: ClawsArgs, config: Option<&Path>) -> anyhow::Result<u8> {
    if let ClawsCmd::Serve { dir } = &args.cmd {
        return serve(dir, config);
    }
    let sock = socket_for(&args)?;
    match args.cmd {
        ClawsCmd::List => println!("{}", one(&sock, json!({"id": 1, "cmd": "list"}))?),
        ClawsCmd::Create {
            name,
            cwd,
            wrapped,
            shell,
        } => {
            let v = one(
                &sock,
                json!({"id": 1, "cmd": "create", "name": name, "cwd": cwd,
                                      "wrapped": wrapped, "shellPath": shell}),
            )?;
            println!("{}", v["id"].as_str().unwrap_or_default());
        }
        ClawsCmd::Send {
            id,
            text,
            no_newline,
            paste,
        } => {
            one(
                &sock,
                json!({"cmd": "send", "id": id, "text": text, "newline": !no_newline,
                              "paste": paste}),
            )?;
        }
        ClawsCmd::Exec {
            id,
            command,
            timeout_ms,
        } => {
            let v = one(
                &sock,
                json!({"cmd": "exec", "id": id, "command": command,
                                      "timeoutMs": timeout_ms}),
            )?;
            if v.get("degraded") == Some(&Value::Bool(true)) {
                eprintln!("openfiles: terminal {id} has no shell integration; output not captured");
                return Ok(3);
            }
            let ev = &v["event"];
            print!("{}", ev["output"].as_str().unwrap_or_default());
            let code = ev["exitCode"].as_i64().unwrap_or(1);
            return Ok(u8::try_from(code).unwrap_or(1));
        }
        ClawsCmd::Log {
            id,
            offset,
            limit,
            raw,
        } => {
            let v = one(
                &sock,
                json!({"cmd": "readLog", "id": id, "offset": offset,
                                      "limit": limit, "strip": !raw}),
            )?;
            print!("{}", v["bytes"].as_str().unwrap_or_default());
        }
        ClawsCmd::Close { id } => println!("{}", one(&sock, json!({"cmd": "close", "id": id}))?),
        ClawsCmd::Subscribe {
            topic,
            from_cursor,
            count,
        } => {
            let mut c = Client::connect(&sock)?;
            let h = c.call(&json!({"id": 1, "cmd": "hello", "protocol": PROTOCOL_2,
                                   "role": "observer", "peerName": "openfiles-cli"}))?;
            if h["ok"] != Value::Bool(true) {
                bail!("{}", h["error"]);
            }
            let s = c.call(&json!({"id": 2, "cmd": "subscribe", "protocol": PROTOCOL_2,
                                   "topic": topic, "fromCursor": from_cursor}))?;
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
        }
        ClawsCmd::Publish { topic, payload } => {
            let payload: Value =
                serde_json::from_str(&payload).context("the payload is not JSON")?;
            let mut c = Client::connect(&sock)?;
            c.call(
                &json!({"id": 1, "cmd": "hello", "protocol": PROTOCOL_2, "role": "worker",
                           "peerName": "openfiles-cli"}),
            )?;
            let v = c.call(&json!({"id": 2, "cmd": "publish", "protocol": PROTOCOL_2,
                                   "topic": topic, "payload": payload}))?;
            println!("{v}");
            if v["ok"] != Value::Bool(true) {
                return Ok(1);
            }
        }
        ClawsCmd::Raw { json: text } => {
            let req: Value = serde_json::from_str(&text).context("not JSON")?;
            println!("{}", Client::connect(&sock)?.call(&req)?);
        }
        ClawsCmd::Serve { .. } => unreachable!("handled above"),
    }
    Ok(0)
}

fn serve(dir: &Path, config: Option<&Path>) -> anyhow::Result<u8> {
    let (cfg, _) = crate::config::Config::load(config)?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let token = tokio_util::sync::CancellationToken::new();
        let server = super::ClawsServer::start(dir, &cfg.claws, token.clone()).await?;
        println!("claws socket ready: {}", server.socket_path().display());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        server.stop().await;
        anyhow::Ok(0)
    })
}

/// The `token` of a `hello` when the server has `[claws.auth]` on: hex
/// HMAC-SHA256(secret, "<peerName>:<role>:<nonce>:<timestamp>") — what a client sends with
/// `nonce` (single use) and `timestamp` (its clock, ms since the epoch).
pub fn hello_token(
    secret: &str,
    peer_name: &str,
    role: &str,
    nonce: &str,
    timestamp: u64,
) -> String {
    let msg = format!("{peer_name}:{role}:{nonce}:{timestamp}");
    super::orch::peers::hex(&super::orch::peers::hmac_sha256(
        secret.trim().as_bytes(),
        msg.as_bytes(),
    ))
}
