//! openfiles-os: the leaves every other openfiles crate stands on, each about the operating
//! system and none about openfiles' protocols.
//!
//! - [`fsutil`]: atomic replacement of files others read, private folders that are really ours,
//!   writes reached from a workspace root by descriptor (no symlink followed);
//! - [`child_env`]: the variables no child of the service inherits;
//! - [`memory`]: glibc's arena cap and `trim`.
//!
//! Nothing here imports another openfiles crate.

pub mod child_env;
pub mod fsutil;
pub mod memory;
