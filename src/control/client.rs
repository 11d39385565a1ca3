//! How the CLI reaches the control socket: the socket a command was given (`--socket`, else
//! the default place) and what a person is told when no service answers. The client itself
//! is the wire crate's ([`openfiles_wire::control::Client`]).

use std::path::Path;
use std::time::Duration;

pub use openfiles_wire::control::{Client, ClientError};

/// What a person is told when a command finds no service.
pub const START_HINT: &str = "is the service running? start it with `openfiles serve`, or enable it with `systemctl --user enable --now openfiles.socket`";

/// Connect to the control socket a command was given (`--socket`, else the default), with
/// the usual 10 s bound on each write and each wait for an answer.
pub fn connect_default(socket: Option<&Path>) -> Result<Client, ClientError> {
    Client::connect(
        &crate::paths::control_socket(socket),
        Some(Duration::from_secs(10)),
    )
}
