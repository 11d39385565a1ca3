//! openfiles-gate: the trust boundary, one gate for everything openfiles runs or reads.
//!
//! A repository's files are data. Whatever a workspace supplies — its config, binaries, git
//! config, compile flags, agents' settings, queue lines, file names — may not make openfiles
//! run a program, open a listener, write outside the workspace, supply a secret or speak to
//! the agent in openfiles's voice unless the user trusts that workspace. Two doors, one
//! owner each:
//!
//! - [`spawn`]: the one way to start a process ([`spawn::Program`]): resolution of the
//!   executable and the child's environment by the workspace's trust, and a record of what ran;
//! - [`confine`]: the one way to read a file a workspace supplies: bounded, regular files
//!   only, no symlink followed;
//! - [`child_env`]: the variables no child inherits;
//! - [`resolve`]: which workspace a path belongs to (a repository nested in another is its
//!   own, with its own trust), one rule for the service and its clients;
//! - [`trust`]: whom the user trusts — the one answer to "is this workspace trusted",
//!   keyed to what a re-clone at the same path cannot reuse.
//!
//! Every other crate — the service, the Claws server, the plugin API and through it every
//! plugin — goes through these; `tests/it/house.rs` fails the build when a process is
//! started anywhere else. A leaf: it imports no other openfiles crate.

pub mod child_env;
pub mod confine;
pub mod resolve;
pub mod spawn;
pub mod trust;

pub use spawn::{Program, Refused, Scope, Trust};
