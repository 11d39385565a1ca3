//! Which workspaces the user trusts to run their own code, as the service sees it: whether
//! a registration names a workspace ([`by_source`]), and the checker every pipeline sees
//! with that decision on each request ([`Trusting`]).
//!
//! The rule (RELIABILITY.md, "Trust"): a repository's files are data. In a workspace the
//! user has not trusted, the plugins run only tools installed outside it and nothing that
//! runs the project's code — no `node_modules/.bin` server, no project `tsc`/`tsgo`, no
//! `cargo check` (build scripts, proc macros), no rust-analyzer. A workspace is trusted when
//! the user named it: `serve --workspace`, `service.workspaces` in their config, `openfiles
//! add`, or `openfiles trust DIR`. An agent's edit does not trust a folder (an agent works in
//! freshly cloned repositories all day, and asks its own user before it runs their code),
//! nor does discovery under `service.roots`, nor lying inside a trusted workspace: a nested
//! repository is its own workspace (`resolve::workspace_for`).
//!
//! The store of `openfiles trust` and the one answer to "is this trusted" are the gate's
//! (`openfiles_gate::trust`: keyed to device, inode, birth time and a mark, so a re-clone at
//! the same path is not trusted), asked alike by the service and the in-process `check`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;

use super::Source;
use crate::diagnostics::{CheckError, Checker, SourceId, SourceInfo};
pub use openfiles_gate::trust::{is_trusted, Keyed, Pin, TrustStore, FILE};
use openfiles_plugin_api::{CheckRequest, CheckResponse};

/// Whether registering a workspace this way trusts it by itself.
pub fn by_source(source: Source) -> bool {
    matches!(
        source,
        Source::Cli | Source::Config | Source::Added | Source::AddedForce
    )
}

/// Whether the user named `root` (canonical) as a workspace, read the way a process without
/// the service can: listed in `service.workspaces` of `config`, or added with `openfiles add`
/// (the registry's saved list in `state_dir`). What the registry knows as [`by_source`].
pub fn named_offline(root: &Path, config: &crate::config::Config, state_dir: &Path) -> bool {
    config
        .service
        .workspaces
        .iter()
        .any(|w| w.canonicalize().is_ok_and(|w| w == root))
        || super::store::load(state_dir)
            .iter()
            .any(|w| w.root == root && by_source(Source::parse(&w.source)))
}

/// Load the trust store of `state_dir`, logging once what it does not trust and why.
pub fn load(state_dir: &Path) -> TrustStore {
    let store = TrustStore::load(state_dir);
    if let Some(p) = store.problem() {
        tracing::error!("{p}");
    }
    if !store.outdated().is_empty() {
        let list: Vec<String> = store
            .outdated()
            .iter()
            .map(|r| crate::visible::escape(&r.display().to_string()).into_owned())
            .collect();
        tracing::warn!(
            "trust.json is from an older openfiles that keyed trust to the inode only, which a              folder re-cloned at the same path can reuse: these are not trusted until you run              `openfiles trust` on them again: {}",
            list.join(", ")
        );
    }
    store
}

/// A served workspace's trust: the decision (shared by the registry, which changes it, and
/// the workspace's checker, which reads it on every request) and the folder it was made for.
/// The decision holds only while the folder at the root is that folder: one removed and
/// re-cloned at the same path while the service runs is not trusted, whatever inode it got.
#[derive(Debug)]
pub struct TrustFlag {
    root: PathBuf,
    trusted: AtomicBool,
    pin: Mutex<Option<Pin>>,
}

impl TrustFlag {
    pub fn new(root: &Path, trusted: bool) -> Arc<TrustFlag> {
        Arc::new(TrustFlag {
            root: root.to_owned(),
            trusted: AtomicBool::new(trusted),
            pin: Mutex::new(Pin::of(root)),
        })
    }

    /// Trust the workspace, or stop trusting it, as the folder is now.
    pub fn set(&self, trusted: bool) {
        *self.pin.lock().unwrap_or_else(|e| e.into_inner()) = Pin::of(&self.root);
        self.trusted.store(trusted, Ordering::Relaxed);
    }

    /// Whether the workspace is trusted now: decided so, for this very folder.
    pub fn get(&self) -> bool {
        self.trusted.load(Ordering::Relaxed)
            && self
                .pin
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_some_and(|p| p.holds(&self.root))
    }
}

/// The checker a workspace's pipeline sees: the plugin manager, with the workspace's trust
/// set on every request (so no request of an untrusted workspace can claim it).
pub struct Trusting {
    inner: Arc<dyn Checker>,
    trusted: Arc<TrustFlag>,
}

impl Trusting {
    pub fn wrap(inner: Arc<dyn Checker>, trusted: Arc<TrustFlag>) -> Arc<dyn Checker> {
        Arc::new(Trusting { inner, trusted })
    }
}

impl Checker for Trusting {
    fn sources_for(&self, path: &Path) -> Vec<SourceInfo> {
        self.inner.sources_for(path)
    }

    fn check(
        &self,
        source: SourceId,
        mut request: CheckRequest,
    ) -> BoxFuture<'static, Result<CheckResponse, CheckError>> {
        request.trusted = self.trusted.get();
        if !request.trusted {
            // A language server is left out of a check only where the user trusts the
            // workspace (`diagnostics::served`): never for an untrusted one's request.
            request.served.clear();
        }
        self.inner.check(source, request)
    }

    fn trusted(&self) -> bool {
        self.trusted.get()
    }

    fn run_bound(&self) -> Option<Arc<crate::diagnostics::bound::RunBound>> {
        self.inner.run_bound()
    }

    fn query(
        &self,
        source: SourceId,
        mut request: openfiles_plugin_api::query::QueryRequest,
    ) -> BoxFuture<'static, Result<openfiles_plugin_api::query::QueryAnswer, CheckError>> {
        request.trusted = self.trusted.get();
        self.inner.query(source, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_user_names_is_trusted_by_its_source() {
        assert!(by_source(Source::Cli) && by_source(Source::Config) && by_source(Source::Added));
        assert!(!by_source(Source::Edit) && !by_source(Source::Discovered));
    }
}
