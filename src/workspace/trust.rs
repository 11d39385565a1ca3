//! Which workspaces the user trusts to run their own code, and the checker every pipeline
//! sees with that decision on each request.
//!
//! The rule (RELIABILITY.md, "Trust"): a repository's files are data. In a workspace the
//! user has not trusted, the plugins run only tools installed outside it and nothing that
//! runs the project's code — no `node_modules/.bin` server, no project `tsc`/`tsgo`, no
//! `cargo check` (build scripts, proc macros), no rust-analyzer. A workspace is trusted when
//! the user named it: `serve --workspace`, `service.workspaces` in their config, `openfiles
//! add`, or `openfiles trust DIR`. An agent's edit does not trust a folder (an agent works in
//! freshly cloned repositories all day, and asks its own user before it runs their code),
//! nor does discovery under `service.roots`.
//!
//! `openfiles trust` is kept in `trust.json` in the state folder (0600), owned by the
//! registry actor. An entry is keyed to the folder itself — its path, device and inode — so
//! a folder deleted and cloned anew at the same path (a different repository) does not ride
//! on the old trust; like VS Code's workspace trust, changes to a trusted repository's
//! contents keep it trusted.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::Source;
use crate::diagnostics::{CheckError, Checker, SourceId, SourceInfo};
use openfiles_os::fsutil;
use openfiles_plugin_api::{CheckRequest, CheckResponse};

/// The store's file name in the state folder.
pub const FILE: &str = "trust.json";
/// Largest trust file read.
const MAX_BYTES: u64 = 4 << 20;

/// Whether registering a workspace this way trusts it by itself.
pub fn by_source(source: Source) -> bool {
    matches!(
        source,
        Source::Cli | Source::Config | Source::Added | Source::AddedForce
    )
}

/// What identifies a trusted folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Key {
    dev: u64,
    ino: u64,
    /// When the user trusted it (ms since the epoch).
    at_ms: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    version: u32,
    #[serde(default)]
    trusted: BTreeMap<PathBuf, Key>,
}

/// `openfiles trust` decisions (one owner: the registry actor).
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    file: File,
}

impl TrustStore {
    /// Load the store of `state_dir`; a missing file is empty, an unreadable or corrupt one
    /// is kept beside as `trust.json.corrupt` and counts as empty (nothing is trusted by
    /// accident).
    pub fn load(state_dir: &Path) -> TrustStore {
        let path = state_dir.join(FILE);
        let file = match fsutil::read_regular_capped_nofollow(&path, MAX_BYTES) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File::default(),
            Ok(bytes) => match serde_json::from_slice::<File>(&bytes) {
                Ok(f) => f,
                Err(e) => {
                    let keep = path.with_extension("json.corrupt");
                    tracing::error!(
                        "{}: {e}; kept as {} and starting with no trusted workspace",
                        path.display(),
                        keep.display()
                    );
                    let _ = std::fs::rename(&path, &keep);
                    File::default()
                }
            },
            Err(e) => {
                tracing::error!("{e}; no workspace is trusted by it");
                File::default()
            }
        };
        TrustStore { path, file }
    }

    /// Whether the user trusted `root` with `openfiles trust` (the same folder, not a new
    /// one at the same path).
    pub fn trusts(&self, root: &Path) -> bool {
        let Some(k) = self.file.trusted.get(root) else {
            return false;
        };
        std::fs::metadata(root).is_ok_and(|m| m.dev() == k.dev && m.ino() == k.ino)
    }

    /// Record (or, with `trusted: false`, drop) the user's trust in `root`, and save.
    pub fn set(&mut self, root: &Path, trusted: bool) -> std::io::Result<()> {
        if trusted {
            let m = std::fs::metadata(root)?;
            self.file.trusted.insert(
                root.to_owned(),
                Key {
                    dev: m.dev(),
                    ino: m.ino(),
                    at_ms: openfiles_wire::spec::now_ms(),
                },
            );
        } else {
            self.file.trusted.remove(root);
        }
        self.file.version = 1;
        let bytes = serde_json::to_vec_pretty(&self.file).map_err(std::io::Error::other)?;
        if let Some(dir) = self.path.parent() {
            fsutil::ensure_private_dir(dir, 0o700)?;
        }
        fsutil::write_atomic(&self.path, &bytes, 0o600)
    }
}

/// The checker a workspace's pipeline sees: the plugin manager, with the workspace's trust
/// set on every request (so no request of an untrusted workspace can claim it).
pub struct Trusting {
    inner: Arc<dyn Checker>,
    trusted: Arc<AtomicBool>,
}

impl Trusting {
    pub fn wrap(inner: Arc<dyn Checker>, trusted: Arc<AtomicBool>) -> Arc<dyn Checker> {
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
        request.trusted = self.trusted.load(Ordering::Relaxed);
        self.inner.check(source, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_kept_for_the_same_folder_only() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let mut store = TrustStore::load(&state);
        assert!(!store.trusts(&ws));
        store.set(&ws, true).unwrap();
        assert!(store.trusts(&ws));
        // Survives a restart, private.
        let again = TrustStore::load(&state);
        assert!(again.trusts(&ws));
        let mode = std::fs::metadata(state.join(FILE)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A different repository cloned at the same path is not trusted. (A placeholder
        // folder is made first so the new one cannot reuse the freed inode.)
        std::fs::remove_dir(&ws).unwrap();
        let hold = dir.path().join("hold");
        std::fs::create_dir(&hold).unwrap();
        std::fs::create_dir(&ws).unwrap();
        assert!(!again.trusts(&ws));
        // Revoked: gone.
        let mut store = TrustStore::load(&state);
        store.set(&ws, true).unwrap();
        store.set(&ws, false).unwrap();
        assert!(!TrustStore::load(&state).trusts(&ws));
    }

    #[test]
    fn a_corrupt_store_trusts_nothing_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        let store = TrustStore::load(dir.path());
        assert!(!store.trusts(dir.path()));
        assert!(dir.path().join("trust.json.corrupt").exists());
    }

    #[test]
    fn only_what_the_user_names_is_trusted_by_its_source() {
        assert!(by_source(Source::Cli) && by_source(Source::Config) && by_source(Source::Added));
        assert!(!by_source(Source::Edit) && !by_source(Source::Discovered));
    }
}
