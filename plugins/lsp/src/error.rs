//! Why one server gave no result for one file: the one error type of a check, shared by the
//! settle logic (`diagnose`) and the tsserver side channel (`tsserver`) so neither imports
//! the other for it.

use crate::transport::Error;

/// Why one server gave no result for one file.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{0} did not answer in time")]
    Timeout(String),
    #[error("{server} exited during the check{tail}")]
    Crashed { server: String, tail: String },
    #[error("cannot read the file: {0}")]
    Read(String),
    #[error("{0}")]
    Rpc(#[from] Error),
}
