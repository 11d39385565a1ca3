//! The one integration-test binary of this crate: every file here is a module, so the
//! crate is linked once. Run one test with its name as the filter
//! (`cargo test -p openfiles-plugin-tests --test it NAME`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on a broken fixture

mod js;
mod real;
mod support;
