//! A blocking client for the control socket, used by every short-lived command
//! (`hook`, `status`, `add`, `forget`, `check`).
//!
//! Blocking on purpose: these commands make one or two calls and exit, and the hook's
//! budget (a few ms, a few MiB) leaves no room for starting a runtime. Connecting is what
//! wakes a socket-activated service: systemd/launchd hold the listening socket and start
//! `openfiles serve` on the first connection, so `connect` succeeds before the service runs
//! and the first reply simply takes longer.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::protocol::{encode_request, Reply, Request, MAX_LINE};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no openfiles service at {path}: {source}")]
    Unreachable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("control socket I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("the service closed the connection")]
    Closed,
    #[error("unexpected reply from the service: {0}")]
    Protocol(String),
    #[error("{0}")]
    Server(String),
}

/// What a person is told when a command finds no service.
pub const START_HINT: &str = "is the service running? start it with `openfiles serve`, or enable it with `systemctl --user enable --now openfiles.socket`";

/// Connect to the control socket a command was given (`--socket`, else the default), with
/// the usual 10 s bound on each read and write.
pub fn connect_default(socket: Option<&Path>) -> Result<Client, ClientError> {
    Client::connect(
        &crate::paths::control_socket(socket),
        Some(Duration::from_secs(10)),
    )
}

/// One connection to the service.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
}

impl Client {
    /// Connect to the control socket at `path`; `timeout` bounds every read and write.
    pub fn connect(path: &Path, timeout: Option<Duration>) -> Result<Client, ClientError> {
        let stream = UnixStream::connect(path).map_err(|source| ClientError::Unreachable {
            path: path.to_owned(),
            source,
        })?;
        stream.set_read_timeout(timeout)?;
        stream.set_write_timeout(timeout)?;
        let writer = stream.try_clone()?;
        Ok(Client {
            reader: BufReader::new(stream),
            writer,
            next_id: 1,
        })
    }

    /// Change the read timeout (e.g. for a `wait` that may take seconds).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) -> Result<(), ClientError> {
        self.reader.get_ref().set_read_timeout(timeout)?;
        Ok(())
    }

    /// Send one request and read its reply, whatever `ok` says.
    pub fn call(&mut self, request: &Request) -> Result<Reply, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = encode_request(id, request);
        line.push(b'\n');
        self.writer.write_all(&line)?;
        let mut buf = Vec::new();
        let n = Read::take(&mut self.reader, MAX_LINE as u64 * 64).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Err(ClientError::Closed);
        }
        Reply::parse(&buf).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// Send one request; an `ok:false` reply becomes [`ClientError::Server`], a success body
    /// is deserialized into `T`.
    pub fn call_as<T: DeserializeOwned>(&mut self, request: &Request) -> Result<T, ClientError> {
        let reply = self.call(request)?;
        if !reply.ok {
            return Err(ClientError::Server(
                reply.error.unwrap_or_else(|| "unknown error".into()),
            ));
        }
        reply
            .into_body()
            .map_err(|e| ClientError::Protocol(e.to_string()))
    }
}
