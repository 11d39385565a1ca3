//! The one integration-test binary of this crate: every file here is a module, so the
//! crate is linked once. Run one test with its name as the filter, as before
//! (`cargo test -p CRATE --test it NAME`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod agents_real;
mod autostart;
mod baseline;
mod claws_bus;
mod claws_capture;
mod claws_cli;
mod claws_exec;
mod claws_exec_version;
mod claws_orch;
mod claws_redirect;
mod claws_service;
mod claws_terminals;
mod claws_ws;
mod common;
mod contrib_ci;
mod fixes;
mod hook_contrib;
mod hook_fallback;
mod hook_install;
mod hook_late;
mod hook_output;
mod hook_payload;
mod hook_service;
mod hook_warm;
mod hostile;
mod hostile_sockets;
mod house;
mod mcp_install;
mod mcp_robust;
mod mcp_sdk;
mod packaging_doctor;
mod packaging_nix;
mod packaging_nix_switch;
mod packaging_systemd;
mod packaging_units;
mod pipeline;
mod pipeline_session;
mod pipeline_sources;
mod plugins_host;
mod plugins_real;
mod plugins_tsgo;
mod reliability_corpus;
mod reliability_faults;
mod reliability_flood;
mod reliability_lsp_crash;
mod reliability_security;
mod reliability_soak;
mod review;
mod service_core;
mod service_reload;
mod trust_git;
mod trust_identity;
mod trust_terminal;
