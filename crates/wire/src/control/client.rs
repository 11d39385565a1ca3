//! The blocking client of the control socket, used by every short-lived command (`hook`,
//! `status`, `add`, `check`, `review`, `doctor`) and by the MCP server.
//!
//! Blocking on purpose: these commands make one or two calls and exit, and the hook's budget
//! (a few ms, a few MiB) leaves no room for starting a runtime. Connecting is what wakes a
//! socket-activated service: systemd/launchd hold the listening socket and start
//! `openfiles serve` on the first connection, so `connect` succeeds before the service runs
//! and the first reply simply takes longer.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use super::{encode_request, Call, Reply, Request};
use crate::line::{Conn, ConnectError, Keep, LineError};

/// Why a call got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no openfiles service at {path}: {source}")]
    Unreachable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The socket is someone else's (see [`crate::line`]'s rule): nothing was sent.
    #[error(transparent)]
    Refused(ConnectError),
    #[error("control socket I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the service closed the connection")]
    Closed,
    #[error("the service did not answer in time")]
    Timeout,
    /// The caller's interruption check stopped the wait.
    #[error("interrupted")]
    Interrupted,
    #[error("unexpected reply from the service: {0}")]
    Protocol(String),
    /// The service answered `ok: false` with this error.
    #[error("{0}")]
    Server(String),
}

impl From<LineError> for ClientError {
    fn from(e: LineError) -> Self {
        match e {
            LineError::Closed => ClientError::Closed,
            LineError::Timeout => ClientError::Timeout,
            LineError::Interrupted => ClientError::Interrupted,
            LineError::TooLong(n) => ClientError::Protocol(format!("answer longer than {n} bytes")),
            LineError::Io(e) => ClientError::Io(e),
        }
    }
}

/// One connection to the service.
pub struct Client {
    conn: Conn,
    /// Bound on each write and on each call's wait (`None`: none).
    timeout: Option<Duration>,
    next_id: u64,
}

impl Client {
    /// Connect to the control socket at `path` if it is the user's own (the rule of
    /// [`crate::line`]); `timeout` bounds every write and every wait for an answer.
    pub fn connect(path: &Path, timeout: Option<Duration>) -> Result<Client, ClientError> {
        let conn = Conn::connect(path).map_err(|e| match e {
            ConnectError::Io { path, source } => ClientError::Unreachable { path, source },
            refused => ClientError::Refused(refused),
        })?;
        Ok(Client {
            conn,
            timeout,
            next_id: 1,
        })
    }

    /// Change the bound on waiting for answers (e.g. for a `wait` that may take seconds).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) -> Result<(), ClientError> {
        self.timeout = timeout;
        Ok(())
    }

    /// Send one request and read its typed reply: an `ok:false` answer becomes
    /// [`ClientError::Server`], a success body is read as the command's [`Call::Reply`].
    pub fn call<R: Call>(&mut self, request: &R) -> Result<R::Reply, ClientError> {
        self.call_with(request, None)
    }

    /// [`Client::call`] with an interruption check while waiting (see [`Keep`]).
    pub fn call_with<R: Call>(
        &mut self,
        request: &R,
        keep: Option<Keep<'_>>,
    ) -> Result<R::Reply, ClientError> {
        self.send_with(&request.request(), keep)?.into_result()
    }

    /// Send one request and read its reply envelope, whatever `ok` says (for callers that
    /// relay a reply rather than read it).
    pub fn send(&mut self, request: &Request) -> Result<Reply, ClientError> {
        self.send_with(request, None)
    }

    /// [`Client::send`] with an interruption check while waiting (see [`Keep`]).
    pub fn send_with(
        &mut self,
        request: &Request,
        keep: Option<Keep<'_>>,
    ) -> Result<Reply, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        self.conn.send(&encode_request(id, request), self.timeout)?;
        let deadline = self.timeout.map(|t| Instant::now() + t);
        let line = self.conn.recv(deadline, keep)?;
        Reply::parse(&line).map_err(|e| ClientError::Protocol(e.to_string()))
    }
}

impl Reply {
    /// The body as `T` when `ok`, else the service's error as [`ClientError::Server`].
    pub fn into_result<T: DeserializeOwned>(self) -> Result<T, ClientError> {
        if !self.ok {
            return Err(ClientError::Server(
                self.error.unwrap_or_else(|| "unknown error".into()),
            ));
        }
        self.into_body()
            .map_err(|e| ClientError::Protocol(e.to_string()))
    }
}
