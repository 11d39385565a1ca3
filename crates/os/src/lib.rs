//! openfiles-os: the leaves every other openfiles crate stands on, each about the operating
//! system and none about openfiles' protocols.
//!
//! - [`dirs`]: where the user's own openfiles folders are (the state folder);
//! - [`fsutil`]: atomic replacement of files others read, private folders that are really ours,
//!   writes reached from a workspace root by descriptor (no symlink followed);
//! - [`memory`]: glibc's arena cap and `trim`.
//!
//! Nothing here imports another openfiles crate.

pub mod dirs;
pub mod fsutil;
pub mod memory;
