//! The socket: binding `.claws/claws.sock` safely (live-server check, stale-file removal,
//! mode 0600 inside a 0700 directory), accepting, refusing peers of another uid
//! (SO_PEERCRED), and serving one connection. A connection's requests are handled one after
//! another, so its answers come in request order; bus push frames travel through a bounded
//! per-peer queue written by the same writer task, which never lets a slow reader delay
//! anyone else (overflow is dropped, counted, and announced once the queue drains).
//!
//! Trust: with `[claws.auth]` on, a WebSocket connection gets `auth:required` for every
//! command but `hello` until one is accepted ([`Transport::WebSocket`]). A Unix-socket
//! connection does not: only our own uid reaches it (0600 socket, peer check), and that uid
//! can read the secret anyway, so a `hello` would prove nothing; claws/1 clients (the
//! extension's, `openfiles claws`) never send one, as in the extension, which checks tokens
//! on `hello` only. On any transport, a connection whose `hello` was refused
//! [`MAX_FAILED_HELLOS`] times is closed after that answer.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bus::Outbox;
use super::commands::dispatch;
use super::orch::peers::MAX_FAILED_HELLOS;
use super::{ClawsError, Connection, Lazy, ServerState};
use openfiles_wire::claws::{self as proto, Request, MAX_LINE};

static NEXT_CONN: AtomicU64 = AtomicU64::new(1);

/// Which listener a connection came through (what it must prove before it is served).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `.claws/claws.sock`: our uid only; no `hello` needed.
    Unix,
    /// The WebSocket listener: with `[claws.auth]` on, `hello` first.
    WebSocket,
}

/// Bind `socket`; refuses when a live server answers there, removes a stale socket file.
pub async fn bind(socket: &Path) -> Result<UnixListener, ClawsError> {
    let io_err = |source: io::Error| ClawsError::Io {
        path: socket.to_owned(),
        source,
    };
    match std::fs::symlink_metadata(socket) {
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(socket).await.is_ok() {
                return Err(ClawsError::AlreadyServed(socket.to_owned()));
            }
            std::fs::remove_file(socket).map_err(io_err)?;
        }
        Ok(_) => return Err(ClawsError::NotASocket(socket.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(e)),
    }
    let listener = UnixListener::bind(socket).map_err(io_err)?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600)).map_err(io_err)?;
    Ok(listener)
}

/// Accept until `stop`; the server's state is made for the first client that passes the
/// peer check.
pub async fn accept_loop(listener: UnixListener, lazy: Arc<Lazy>, stop: CancellationToken) {
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "claws accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        tokio::spawn(serve(stream, lazy.clone(), stop.clone()));
    }
}

async fn serve(mut stream: UnixStream, lazy: Arc<Lazy>, stop: CancellationToken) {
    let me = nix::unistd::getuid().as_raw();
    match stream.peer_cred() {
        Ok(c) if c.uid() == me => {}
        Ok(c) => {
            tracing::warn!(uid = c.uid(), "claws peer of another uid refused");
            let msg = proto::answer(
                None,
                proto::PROTOCOL,
                Err(format!(
                    "peer uid {} refused: only uid {me} may use this socket",
                    c.uid()
                )
                .into()),
            );
            let _ = stream.write_all(msg.as_bytes()).await;
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, "claws peer credentials unavailable; refused");
            return;
        }
    }
    let (mut rd, mut wr) = stream.into_split();
    let Some(shared) = state_or_refuse(&lazy, &mut rd, &mut wr).await else {
        return;
    };
    serve_io(rd, wr, shared, stop, Transport::Unix).await;
}

/// The server's state for a new client; when it cannot be made, the client is told why, in
/// answer to its first request (read first, within a second: a client writing its request
/// gets the answer with its `id`, not a closed socket under its write).
pub async fn state_or_refuse<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    lazy: &Lazy,
    input: &mut R,
    out: &mut W,
) -> Option<Arc<ServerState>> {
    match lazy.get().await {
        Ok(shared) => Some(shared),
        Err(e) => {
            tracing::error!("claws: cannot serve a client: {e}");
            let mut first = Vec::new();
            let mut line = tokio::io::BufReader::new(input.take(MAX_LINE as u64));
            let read = tokio::io::AsyncBufReadExt::read_until(&mut line, b'\n', &mut first);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), read).await;
            let id = serde_json::from_slice::<serde_json::Value>(&first)
                .ok()
                .and_then(|v| v.get("id").cloned());
            let msg = proto::answer(
                id.as_ref(),
                proto::PROTOCOL,
                Err(format!("claws unavailable: {e}").into()),
            );
            let _ = out.write_all(msg.as_bytes()).await;
            None
        }
    }
}

/// Serve one connection over any byte stream (the Unix socket, the WebSocket bridge): one
/// JSON request per line in, answers and push frames out, one line each.
pub async fn serve_io<R, W>(
    mut rd: R,
    wr: W,
    shared: Arc<ServerState>,
    stop: CancellationToken,
    transport: Transport,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let _counted = shared.registry.client();
    // Few answers in flight: a replay streams through here, so this bounds its memory too.
    let (resp_tx, resp_rx) = mpsc::channel::<String>(8);
    let (push_tx, push_rx) = mpsc::channel(shared.cfg.peer_queue_frames.max(1));
    let outbox = Arc::new(Outbox::new(
        push_tx,
        shared.cfg.peer_queue_bytes.max(1),
        shared.registry.queued_bytes.clone(),
        shared.cfg.total_queue_bytes.max(1),
    ));
    let conn = Connection::new(
        NEXT_CONN.fetch_add(1, Ordering::Relaxed),
        outbox.clone(),
        transport == Transport::WebSocket && shared.cfg.auth.enabled,
    );
    let writer = tokio::spawn(write_loop(wr, resp_rx, push_rx, outbox));
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut scan_from = 0;
    'conn: loop {
        // Answer every complete line already buffered.
        while let Some(nl) = buf[scan_from..].iter().position(|&b| b == b'\n') {
            let end = scan_from + nl;
            let line = &buf[..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if !line.iter().all(u8::is_ascii_whitespace) {
                let ok = handle_line(&shared, &conn, line, &resp_tx).await;
                if !ok {
                    break 'conn;
                }
            }
            buf.drain(..=end);
            scan_from = 0;
        }
        scan_from = buf.len();
        if buf.len() > MAX_LINE {
            let _ = resp_tx.send(proto::too_large()).await;
            break;
        }
        let mut chunk = [0u8; 64 << 10];
        let n = tokio::select! {
            _ = stop.cancelled() => break,
            r = rd.read(&mut chunk) => match r { Ok(0) | Err(_) => break, Ok(n) => n },
        };
        buf.extend_from_slice(&chunk[..n]);
    }
    super::orch::disconnected(&shared, &conn);
    drop(resp_tx);
    drop(conn);
    let _ = writer.await;
}

/// Handle one request line; false when the connection should end (its writer is gone, or
/// it has used up its `hello` attempts: the refusal is sent first).
async fn handle_line(
    shared: &Arc<ServerState>,
    conn: &Connection,
    line: &[u8],
    out: &mpsc::Sender<String>,
) -> bool {
    let Some(req) = Request::parse(line) else {
        return out.send(proto::bad_json()).await.is_ok();
    };
    let ans = dispatch(shared, conn, &req).await;
    let text = proto::answer(req.id(), ans.protocol, ans.body);
    if out.send(text).await.is_err() {
        return false;
    }
    if conn.out_of_hellos() {
        tracing::warn!(
            conn = conn.conn_id,
            "claws connection closed after {MAX_FAILED_HELLOS} refused hellos"
        );
        return false;
    }
    if let Some(replay) = ans.replay {
        // Streamed from disk through the bounded answer channel (see `Replay::stream`).
        let out = out.clone();
        let streamed =
            tokio::task::spawn_blocking(move || replay.stream(|f| out.blocking_send(f).is_ok()))
                .await;
        if !matches!(streamed, Ok(true)) {
            return false;
        }
    }
    true
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut resp: mpsc::Receiver<String>,
    mut push: mpsc::Receiver<Arc<str>>,
    outbox: Arc<Outbox>,
) {
    let mut batch = Vec::with_capacity(64 << 10);
    loop {
        tokio::select! {
            biased;
            r = resp.recv() => match r {
                Some(s) => {
                    batch.extend_from_slice(s.as_bytes());
                    while batch.len() < (64 << 10) {
                        match resp.try_recv() {
                            Ok(s) => batch.extend_from_slice(s.as_bytes()),
                            Err(_) => break,
                        }
                    }
                }
                None => break,
            },
            Some(p) = push.recv() => {
                batch.extend_from_slice(p.as_bytes());
                outbox.sent(p.len());
                while batch.len() < (64 << 10) {
                    match push.try_recv() {
                        Ok(p) => {
                            batch.extend_from_slice(p.as_bytes());
                            outbox.sent(p.len());
                        }
                        Err(_) => break,
                    }
                }
                if push.is_empty() {
                    if let Some(frame) = outbox.take_dropped_notice() {
                        batch.extend_from_slice(frame.as_bytes());
                    }
                }
            }
        }
        if wr.write_all(&batch).await.is_err() {
            return;
        }
        batch.clear();
    }
    // Flush answers queued before the reader ended (e.g. `request too large`).
    let _ = wr.shutdown().await;
}
