//! How the CLI reaches the control socket: the socket a command was given (`--socket`, else
//! the default place) and what a person is told when no service answers. The client itself
//! is the wire crate's ([`openfiles_wire::control::Client`]).

use std::path::Path;
use std::time::Duration;

pub use openfiles_wire::control::{Client, ClientError};

/// What a person is told when a command finds no service.
pub const START_HINT: &str = "is the service running? start it with `openfiles serve`, or enable it with `systemctl --user enable --now openfiles.socket`";

/// Connect to the control socket a command was given (`--socket`, else the default), with
/// the usual 10 s bound on each write and each wait for an answer. No service there gets
/// [`START_HINT`]; a socket or runtime folder that is not the user's says why it is refused.
///
/// Where no service answers and nothing would socket-activate one, one is started
/// (`crate::autostart`); [`connect_existing`] never starts one.
pub fn connect_default(socket: Option<&Path>) -> anyhow::Result<Client> {
    connect_with(socket, true)
}

/// [`connect_default`] without autostart, for commands that report (`status`).
pub fn connect_existing(socket: Option<&Path>) -> anyhow::Result<Client> {
    connect_with(socket, false)
}

fn connect_with(socket: Option<&Path>, autostart: bool) -> anyhow::Result<Client> {
    let path = crate::paths::control_socket(socket)?;
    let timeout = Some(Duration::from_secs(10));
    let connected = if autostart {
        crate::autostart::connect(&path, timeout)
    } else {
        Client::connect(&path, timeout)
    };
    match connected {
        Ok(c) => Ok(c),
        Err(e @ ClientError::Unreachable { .. }) => Err(anyhow::Error::new(e).context(START_HINT)),
        Err(e) => Err(e.into()),
    }
}
