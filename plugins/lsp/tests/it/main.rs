//! The one integration-test binary of this crate: every file here is a module, so the
//! crate is linked once. Run one test with its name as the filter, as before
//! (`cargo test -p CRATE --test it NAME`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod abi;
mod bash;
mod clangd;
mod confined;
mod dockerfile;
mod eslint;
mod faults;
mod fixes;
mod gopls;
mod json;
mod lifecycle;
mod monorepo;
mod nav;
mod nav_partial;
mod php;
mod pyright;
mod python_types;
mod ruff;
mod rust_analyzer;
mod support;
mod toml;
mod tsgo;
mod typescript;
mod untrusted;
mod yaml;
