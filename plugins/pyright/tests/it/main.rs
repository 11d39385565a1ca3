//! The one integration-test binary of this crate: every file here is a module, so the
//! crate is linked once. Run one test with its name as the filter
//! (`cargo test -p openfiles-plugin-pyright --test it NAME`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod confined;
mod early_answer;
mod language_server;
mod monorepo;
mod real_other_checkers;
mod real_pyright;
mod ride;
mod support;
