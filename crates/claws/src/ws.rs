//! The optional WebSocket transport (`[claws.web_socket]`, off by default): one listener per
//! address for the whole process ([`Shared`], kept by the `ClawsRegistry`), routing each
//! connection by its URL path to a workspace's connection handler — the same one the Unix
//! socket feeds. Each WebSocket text (or
//! binary) message is one request; each answer and push frame is one text message, without
//! the trailing newline. `ws://` by default, `wss://` when `cert_path` and `key_path` (PEM)
//! are both set (an empty string is unset; each file must be a regular file of at most
//! [`MAX_PEM_BYTES`], never a FIFO or a device). Messages are capped at [`MAX_LINE`].
//!
//! Trust: every handshake passes a [`Gate`] first — no browser `Origin` the user did not
//! allow, a `Host` header that names this listener (no DNS rebinding; none at all is
//! refused), and without `[claws.auth]` a
//! peer that is provably this user (its socket's owner, read from `/proc/net/tcp`). The
//! listener refuses to start on a non-loopback address unless `[claws.auth]` is on, and with
//! auth on a WebSocket connection is refused every command but `hello` (`auth:required`)
//! until a `hello` with a valid HMAC token is accepted: terminals included. Five refused
//! `hello`s close the connection (`conn.rs`).
//!
//! The listener is optional: when it cannot start, [`bind`]'s error is logged by the
//! caller and the Unix socket is served all the same.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

use super::{conn, Lazy};
use crate::config::ClawsConfig;
use openfiles_wire::claws::MAX_LINE;

/// Largest certificate chain or key file read.
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// Why the WebSocket listener did not start.
#[derive(Debug, thiserror::Error)]
pub enum WsError {
    #[error("refusing a WebSocket listener on non-loopback {0} without [claws.auth] enabled")]
    NoAuth(String),
    #[error("WebSocket address {0}: {1}")]
    Address(String, std::io::Error),
    #[error("WebSocket TLS: {0}")]
    Tls(String),
}

/// A bound listener, ready to serve.
pub struct Listener {
    tcp: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    pub addr: SocketAddr,
    gate: Arc<Gate>,
}

/// Who may open a WebSocket: what every handshake is held against before it is answered.
///
/// - A handshake with an `Origin` header comes from a browser (Claws's own clients send
///   none): refused unless the origin is in `[claws.web_socket] allowed_origins`, so no web
///   page the user visits can drive a terminal.
/// - The `Host` header must be there and name this listener (its address, or `localhost`
///   with its port): a page that rebinds its own DNS name to 127.0.0.1 sends its own name
///   and is refused, and a handshake without one is refused too.
/// - Without `[claws.auth]` there is no token to check, so the peer must provably be this
///   user: on Linux the connecting socket's owner is read from `/proc/net/tcp{,6}` (as
///   identd does); a peer of another uid, or one whose owner cannot be learned, is refused.
///   With auth on, every command waits for a `hello` with a valid token anyway.
#[derive(Debug)]
struct Gate {
    addr: SocketAddr,
    host: String,
    origins: Vec<String>,
    auth: bool,
}

impl Gate {
    /// Why the handshake `req` from `peer_is_us` is refused (`None`: admitted).
    fn refuse(&self, req: &Request, peer_is_us: bool) -> Option<String> {
        let header = |name: &str| {
            req.headers()
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        if let Some(origin) = header("origin") {
            if !self
                .origins
                .iter()
                .any(|o| o.eq_ignore_ascii_case(origin.trim()))
            {
                return Some(format!(
                    "WebSocket from origin {origin:?} refused (not in [claws.web_socket] allowed_origins)"
                ));
            }
        }
        // HTTP/1.1 requires `Host`, and every WebSocket client sends it; one without it
        // cannot be told from a rebound page's request, so it is refused like one.
        match header("host") {
            Some(host) if self.host_is_ours(host.trim()) => {}
            Some(host) => {
                return Some(format!(
                    "WebSocket for host {host:?} refused (not this listener)"
                ))
            }
            None => return Some("WebSocket handshake without a Host header refused".into()),
        }
        if !self.auth && !peer_is_us {
            return Some(
                "WebSocket peer is not this user (or cannot be told) and [claws.auth] is off: refused"
                    .into(),
            );
        }
        None
    }

    fn host_is_ours(&self, host: &str) -> bool {
        let port = self.addr.port();
        let mut names = vec![
            self.addr.to_string(),
            format!("{}:{port}", self.host),
            format!("[{}]:{port}", self.host),
        ];
        if self.addr.ip().is_loopback() {
            names.extend([
                format!("localhost:{port}"),
                format!("127.0.0.1:{port}"),
                format!("[::1]:{port}"),
            ]);
        }
        names.iter().any(|n| n.eq_ignore_ascii_case(host))
    }
}

/// The uid owning the TCP socket `peer` connected to `ours`, on this machine (Linux: from
/// `/proc/net/tcp` or `tcp6`); `None` when it cannot be learned.
fn peer_uid(ours: SocketAddr, peer: SocketAddr) -> Option<u32> {
    if !cfg!(target_os = "linux") || !peer.ip().is_loopback() {
        return None;
    }
    let (local, remote) = (proc_net_addr(peer), proc_net_addr(ours));
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 7 && f[1] == local && f[2] == remote {
                return f[7].parse().ok();
            }
        }
    }
    None
}

/// An address as `/proc/net/tcp{,6}` spells it: the address in host-order 32-bit words, in
/// hex, then the port in hex (`0100007F:1F90` for 127.0.0.1:8080 on little-endian).
fn proc_net_addr(a: SocketAddr) -> String {
    let words = match a.ip() {
        std::net::IpAddr::V4(v4) => vec![v4.octets()],
        std::net::IpAddr::V6(v6) => {
            let o = v6.octets();
            (0..4)
                .map(|i| [o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]])
                .collect()
        }
    };
    let ip: String = words
        .into_iter()
        .map(|w| format!("{:08X}", u32::from_ne_bytes(w)))
        .collect();
    format!("{ip}:{:04X}", a.port())
}

/// Bind the listener the settings ask for (None when disabled); its certificate and key
/// may not lie in any of `workspaces`.
pub fn bind(
    cfg: &ClawsConfig,
    workspaces: &[std::path::PathBuf],
) -> Result<Option<Listener>, WsError> {
    let ws = &cfg.web_socket;
    if !ws.enabled {
        return Ok(None);
    }
    let addr = format!("{}:{}", ws.host, ws.port);
    let tcp = std::net::TcpListener::bind(&addr)
        .and_then(|l| {
            l.set_nonblocking(true)?;
            TcpListener::from_std(l)
        })
        .map_err(|e| WsError::Address(addr.clone(), e))?;
    let local = tcp
        .local_addr()
        .map_err(|e| WsError::Address(addr.clone(), e))?;
    if !local.ip().is_loopback() && !cfg.auth.enabled {
        return Err(WsError::NoAuth(local.to_string()));
    }
    let tls = match (&ws.cert_path, &ws.key_path) {
        (Some(c), Some(k)) => Some(acceptor(c, k, workspaces)?),
        (None, None) => None,
        _ => return Err(WsError::Tls("cert_path and key_path go together".into())),
    };
    tracing::info!(addr = %local, tls = tls.is_some(), "claws WebSocket listener ready");
    let gate = Arc::new(Gate {
        addr: local,
        host: ws.host.clone(),
        origins: ws.allowed_origins.clone(),
        auth: cfg.auth.enabled,
    });
    Ok(Some(Listener {
        tcp,
        tls,
        addr: local,
        gate,
    }))
}

/// The TLS acceptor of `cert` and `key`, files the user's config names: absolute, outside
/// every one of `workspaces`, the key private (`crate::secret::Kind::TlsKey`).
fn acceptor(
    cert: &Path,
    key: &Path,
    workspaces: &[std::path::PathBuf],
) -> Result<tokio_rustls::TlsAcceptor, WsError> {
    use crate::secret::{read_file, Kind};
    let tls = |m: String| WsError::Tls(m);
    let read = |p: &Path, kind| {
        read_file(p, workspaces, kind, MAX_PEM_BYTES).map_err(|e| tls(e.to_string()))
    };
    let (cert_pem, key_pem) = (read(cert, Kind::TlsCert)?, read(key, Kind::TlsKey)?);
    let certs = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls(format!("{}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(tls(format!("{}: no certificate", cert.display())));
    }
    let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| tls(format!("{}: {e}", key.display())))?
        .ok_or_else(|| tls(format!("{}: no private key", key.display())))?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| tls(e.to_string()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// One WebSocket listener shared by every workspace served on its address: a connection is
/// routed by its URL path to the workspace whose root that path names
/// (`ws://127.0.0.1:9876/home/me/app`); `/` is the first workspace that joined (the only one,
/// in a single-workspace setup — what Claws's own clients expect). It listens while a
/// workspace uses it ([`Member`]s) and stops with the last.
pub struct Shared {
    pub addr: SocketAddr,
    gate: Arc<Gate>,
    /// In joining order.
    routes: std::sync::Mutex<Vec<(std::path::PathBuf, std::sync::Weak<Lazy>)>>,
    stop: CancellationToken,
}

/// A workspace's place on a [`Shared`] listener; dropping it leaves.
pub struct Member {
    shared: Arc<Shared>,
    root: std::path::PathBuf,
}

impl Member {
    /// The address of the listener this workspace is served on.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("addr", &self.addr).finish()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.shared
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(r, _)| r != &self.root);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Shared {
    /// Serve `l` until the last member leaves.
    pub fn start(l: Listener) -> Arc<Shared> {
        let shared = Arc::new(Shared {
            addr: l.addr,
            gate: l.gate.clone(),
            routes: std::sync::Mutex::new(Vec::new()),
            stop: CancellationToken::new(),
        });
        tokio::spawn(accept_loop(
            l.tcp,
            l.tls,
            Arc::downgrade(&shared),
            shared.stop.clone(),
        ));
        shared
    }

    /// Route this listener's connections for `root` to `lazy`.
    pub fn join(self: &Arc<Self>, root: &std::path::Path, lazy: &Arc<Lazy>) -> Member {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((root.to_owned(), Arc::downgrade(lazy)));
        Member {
            shared: self.clone(),
            root: root.to_owned(),
        }
    }

    /// The workspace a request for URL `path` goes to.
    fn route(&self, path: &str) -> Option<Arc<Lazy>> {
        let routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = percent_decode(path);
        let wanted = wanted.trim_end_matches('/');
        let found = if wanted.is_empty() {
            routes.first()
        } else {
            routes
                .iter()
                .find(|(root, _)| root.as_os_str().as_encoded_bytes() == wanted.as_bytes())
        };
        found.and_then(|(_, lazy)| lazy.upgrade())
    }
}

/// `%XX` escapes of a URL path decoded (anything malformed is kept as written).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Accept until `stop` (the last member left); each connection is routed and served.
async fn accept_loop(
    tcp: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: std::sync::Weak<Shared>,
    stop: CancellationToken,
) {
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.cancelled() => return,
            r = tcp.accept() => match r {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "claws WebSocket accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let _ = stream.set_nodelay(true);
        let tls = tls.clone();
        tokio::spawn(async move {
            // The owner of the peer's socket, read while it is connected.
            let ours = shared.addr;
            let peer_is_us = tokio::task::spawn_blocking(move || peer_uid(ours, peer))
                .await
                .ok()
                .flatten()
                == Some(nix::unistd::getuid().as_raw());
            match tls {
                Some(a) => match a.accept(stream).await {
                    Ok(s) => serve(s, &shared, peer_is_us).await,
                    Err(e) => tracing::debug!(error = %e, "claws wss handshake failed"),
                },
                None => serve(stream, &shared, peer_is_us).await,
            }
        });
    }
}

/// Bridge one WebSocket to the line-based connection handler through an in-memory pipe.
async fn serve<S>(stream: S, listener: &Shared, peer_is_us: bool)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if let Some((ws, lazy)) = handshake(stream, listener, peer_is_us).await {
        bridge(ws, lazy).await;
    }
}

/// The WebSocket handshake behind the gate (Origin, Host, peer), routed by its URL path to
/// a workspace's server; `None` (logged) when it is refused or fails.
async fn handshake<S>(
    stream: S,
    listener: &Shared,
    peer_is_us: bool,
) -> Option<(WebSocketStream<S>, Arc<Lazy>)>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let gate = &listener.gate;
    let mut config = WebSocketConfig::default();
    config.max_message_size = Some(MAX_LINE);
    config.max_frame_size = Some(MAX_LINE);
    // The callback's signature is tungstenite's (its error is a whole HTTP response).
    let mut routed: Option<Arc<Lazy>> = None;
    #[allow(clippy::result_large_err)]
    let check = |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        let refuse = |status: StatusCode, why: String| {
            tracing::warn!("{why}");
            let mut refusal = ErrorResponse::new(Some(why));
            *refusal.status_mut() = status;
            Err(refusal)
        };
        if let Some(why) = gate.refuse(req, peer_is_us) {
            return refuse(StatusCode::FORBIDDEN, why);
        }
        match listener.route(req.uri().path()) {
            Some(lazy) => {
                routed = Some(lazy);
                Ok(resp)
            }
            None => refuse(
                StatusCode::NOT_FOUND,
                format!(
                    "no workspace served at WebSocket path {:?} (use the workspace's folder as \
                     the path, or / for the first)",
                    req.uri().path()
                ),
            ),
        }
    };
    let ws =
        match tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)).await {
            Ok(ws) => ws,
            Err(e) => {
                tracing::debug!(error = %e, "claws WebSocket handshake failed");
                return None;
            }
        };
    Some((ws, routed?))
}

/// One accepted WebSocket: its messages become request lines of the workspace's
/// connection handler, its answers and pushes become messages.
async fn bridge<S>(ws: WebSocketStream<S>, lazy: Arc<Lazy>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let stop = lazy.stop.clone();
    let (mut ws_tx, mut ws_rx) = ws.split();
    let (ours, theirs) = tokio::io::duplex(256 << 10);
    let (rd, mut wr) = tokio::io::split(theirs);
    let (pipe_rd, mut pipe_wr) = tokio::io::split(ours);
    // Without the state, the client reads why and the bridge closes (its messages are not
    // forwarded yet: the refusal answers without waiting for one).
    let shared = conn::state_or_refuse(&lazy, &mut tokio::io::empty(), &mut wr).await;
    let conn_stop = stop.clone();
    // Cancelled when the handler ends (e.g. after refused hellos): the bridge stops reading.
    let handler_done = CancellationToken::new();
    let done = handler_done.clone();
    let handler = tokio::spawn(async move {
        let _done = done.drop_guard();
        if let Some(shared) = shared {
            conn::serve_io(rd, wr, shared, conn_stop, conn::Transport::WebSocket).await;
        }
    });
    let outgoing = tokio::spawn(async move {
        let mut lines = BufReader::new(pipe_rd).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if ws_tx.send(Message::text(line)).await.is_err() {
                break;
            }
        }
        let _ = ws_tx.close().await;
    });
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = handler_done.cancelled() => {}
        _ = incoming(&mut ws_rx, &mut pipe_wr) => {}
    }
    drop(pipe_wr);
    let _ = handler.await;
    let _ = outgoing.await;
}

/// Each message to the handler as one request line, until the socket or the pipe closes.
async fn incoming<R, W>(ws_rx: &mut R, pipe_wr: &mut W)
where
    R: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let data = match ws_rx.next().await {
            Some(Ok(Message::Text(t))) => t.as_bytes().to_vec(),
            Some(Ok(Message::Binary(b))) => b.to_vec(),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
            _ => return,
        };
        // One message is one request; a newline inside would split it.
        let mut line: Vec<u8> = data.into_iter().filter(|b| *b != b'\n').collect();
        line.push(b'\n');
        if pipe_wr.write_all(&line).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(auth: bool, origins: &[&str]) -> Gate {
        Gate {
            addr: "127.0.0.1:9876".parse().unwrap(),
            host: "127.0.0.1".into(),
            origins: origins.iter().map(|o| (*o).to_owned()).collect(),
            auth,
        }
    }

    fn req(headers: &[(&str, &str)]) -> Request {
        let mut b = Request::builder().uri("/");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn url_paths_are_percent_decoded() {
        assert_eq!(percent_decode("/home/me/my%20app"), "/home/me/my app");
        assert_eq!(percent_decode("/a%2"), "/a%2");
        assert_eq!(percent_decode("/%zz"), "/%zz");
    }

    #[test]
    fn the_kernel_spells_addresses_in_host_order_hex() {
        let v4: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let want = if cfg!(target_endian = "little") {
            "0100007F:1F90"
        } else {
            "7F000001:1F90"
        };
        assert_eq!(proc_net_addr(v4), want);
        let v6: SocketAddr = "[::1]:443".parse().unwrap();
        assert!(proc_net_addr(v6).ends_with(":01BB"));
        assert_eq!(proc_net_addr(v6).len(), 32 + 5);
    }

    #[test]
    fn web_pages_rebound_names_and_other_users_are_refused() {
        let g = gate(false, &["http://localhost:3000"]);
        let host = ("Host", "127.0.0.1:9876");
        assert_eq!(
            g.refuse(&req(&[host]), true),
            None,
            "a Claws client: no Origin"
        );
        assert_eq!(g.refuse(&req(&[("Host", "localhost:9876")]), true), None);
        assert!(g
            .refuse(&req(&[host, ("Origin", "https://evil.example")]), true)
            .is_some());
        assert_eq!(
            g.refuse(&req(&[host, ("Origin", "http://localhost:3000")]), true),
            None
        );
        assert!(g
            .refuse(&req(&[("Host", "evil.example:9876")]), true)
            .is_some());
        assert!(
            g.refuse(&req(&[host]), false).is_some(),
            "another uid without auth"
        );
        assert!(g.refuse(&req(&[]), true).is_some(), "no Host header");
        assert!(
            gate(true, &[]).refuse(&req(&[]), false).is_some(),
            "no Host header, auth on"
        );
        assert_eq!(
            gate(true, &[]).refuse(&req(&[host]), false),
            None,
            "auth decides"
        );
    }

    /// The status line a raw handshake (`host`: its `Host` header, if any) gets from a real
    /// listener with no workspace joined: 403 at the gate, else 404 at the router.
    async fn raw_handshake(addr: SocketAddr, host: Option<&str>) -> String {
        use tokio::io::AsyncReadExt;
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let host = host.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
        let req = format!(
            "GET / HTTP/1.1\r\n{host}Upgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    /// A handshake without `Host` is refused at the gate (before, it passed it).
    #[tokio::test]
    async fn a_handshake_without_a_host_header_is_refused() {
        let cfg = ClawsConfig {
            web_socket: crate::config::ClawsWebSocketConfig {
                enabled: true,
                port: 0,
                ..Default::default()
            },
            ..Default::default()
        };
        let listener = bind(&cfg, &[]).unwrap().unwrap();
        let addr = listener.addr;
        let shared = Shared::start(listener);
        let none = raw_handshake(addr, None).await;
        assert!(none.starts_with("HTTP/1.1 403"), "no Host: {none}");
        let ours = raw_handshake(addr, Some(&addr.to_string())).await;
        assert!(ours.starts_with("HTTP/1.1 404"), "through the gate: {ours}");
        drop(shared);
    }
}
