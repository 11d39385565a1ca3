//! The optional WebSocket transport (`[claws.web_socket]`, off by default): another
//! listener feeding the same connection handler as the Unix socket. Each WebSocket text (or
//! binary) message is one request; each answer and push frame is one text message, without
//! the trailing newline. `ws://` by default, `wss://` when `cert_path` and `key_path` (PEM)
//! are both set (an empty string is unset; each file must be a regular file of at most
//! [`MAX_PEM_BYTES`], never a FIFO or a device). Messages are capped at [`MAX_LINE`].
//!
//! Trust: there is no peer-uid check on TCP, so loopback plus auth are the boundary. The
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
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
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
}

/// Bind the listener the settings ask for (None when disabled).
pub async fn bind(cfg: &ClawsConfig) -> Result<Option<Listener>, WsError> {
    let ws = &cfg.web_socket;
    if !ws.enabled {
        return Ok(None);
    }
    let addr = format!("{}:{}", ws.host, ws.port);
    let tcp = TcpListener::bind(&addr)
        .await
        .map_err(|e| WsError::Address(addr.clone(), e))?;
    let local = tcp
        .local_addr()
        .map_err(|e| WsError::Address(addr.clone(), e))?;
    if !local.ip().is_loopback() && !cfg.auth.enabled {
        return Err(WsError::NoAuth(local.to_string()));
    }
    let tls = match (&ws.cert_path, &ws.key_path) {
        (Some(c), Some(k)) => Some(acceptor(c, k)?),
        (None, None) => None,
        _ => return Err(WsError::Tls("cert_path and key_path go together".into())),
    };
    tracing::info!(addr = %local, tls = tls.is_some(), "claws WebSocket listener ready");
    Ok(Some(Listener {
        tcp,
        tls,
        addr: local,
    }))
}

fn acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, WsError> {
    let tls = |m: String| WsError::Tls(m);
    let read = |p: &Path| {
        openfiles_os::fsutil::read_regular_capped(p, MAX_PEM_BYTES).map_err(|e| tls(e.to_string()))
    };
    let (cert_pem, key_pem) = (read(cert)?, read(key)?);
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

/// Accept until `stop`; each connection is served by [`conn::serve_io`].
pub async fn accept_loop(l: Listener, lazy: Arc<Lazy>, stop: CancellationToken) {
    loop {
        let tcp = tokio::select! {
            _ = stop.cancelled() => return,
            r = l.tcp.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "claws WebSocket accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let (lazy, stop, tls) = (lazy.clone(), stop.clone(), l.tls.clone());
        tokio::spawn(async move {
            match tls {
                Some(a) => match a.accept(tcp).await {
                    Ok(s) => serve(s, lazy, stop).await,
                    Err(e) => tracing::debug!(error = %e, "claws wss handshake failed"),
                },
                None => serve(tcp, lazy, stop).await,
            }
        });
    }
}

/// Bridge one WebSocket to the line-based connection handler through an in-memory pipe.
async fn serve<S>(stream: S, lazy: Arc<Lazy>, stop: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut config = WebSocketConfig::default();
    config.max_message_size = Some(MAX_LINE);
    config.max_frame_size = Some(MAX_LINE);
    let ws = match tokio_tungstenite::accept_async_with_config(stream, Some(config)).await {
        Ok(ws) => ws,
        Err(e) => {
            tracing::debug!(error = %e, "claws WebSocket handshake failed");
            return;
        }
    };
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
    loop {
        let msg = tokio::select! {
            _ = stop.cancelled() => break,
            _ = handler_done.cancelled() => break,
            m = ws_rx.next() => m,
        };
        let data = match msg {
            Some(Ok(Message::Text(t))) => t.as_bytes().to_vec(),
            Some(Ok(Message::Binary(b))) => b.to_vec(),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
            _ => break,
        };
        // One message is one request; a newline inside would split it.
        let mut line: Vec<u8> = data.into_iter().filter(|b| *b != b'\n').collect();
        line.push(b'\n');
        if pipe_wr.write_all(&line).await.is_err() {
            break;
        }
    }
    drop(pipe_wr);
    let _ = handler.await;
    let _ = outgoing.await;
}
