//! openfiles: the headless replacement for the OpenFiles and Claws editor extensions.
//!
//! See `ARCHITECTURE.md` at the repository root for the map of modules.

pub mod admin;
pub mod autostart;
pub mod check;
pub mod claws_client;
pub mod claws_serve;
pub mod cli;
pub mod config;
pub mod control;
pub mod diagnostics;
pub mod fswatch;
pub mod gitcmd;
pub mod hook;
pub mod in_process;
pub mod intake;
pub mod logs;
pub mod mcp;
pub mod nav;
pub mod paths;
pub mod plugin_host;
pub mod policy;
pub mod review;
pub mod service;
pub mod setup;
pub mod visible;
pub mod workspace;
