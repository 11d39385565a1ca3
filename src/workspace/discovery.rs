//! Discovering workspaces under the configured `service.roots`: a folder directly inside a
//! root (or the root itself) that holds `.openfiles/` or `.claws/` is a workspace. Roots are
//! scanned at start and watched (non-recursively, the root and its direct children) so a
//! marker created later registers its folder.

use std::path::{Path, PathBuf};

use notify::{RecursiveMode, Watcher};
use tokio_util::sync::CancellationToken;

use super::{RegistryHandle, Source};

const MARKERS: &[&str] = &[crate::spec::DIR, ".claws"];

fn is_workspace(dir: &Path) -> bool {
    MARKERS.iter().any(|m| dir.join(m).is_dir())
}

fn candidates(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_owned()];
    if let Ok(rd) = std::fs::read_dir(root) {
        out.extend(
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path()),
        );
    }
    out
}

/// Folders under `roots` that carry a workspace marker.
pub fn scan(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .flat_map(|r| candidates(r))
        .filter(|d| is_workspace(d))
        .collect()
}

/// Watch `roots` for new markers and register their folders, until `shutdown`.
pub fn watch(roots: Vec<PathBuf>, registry: RegistryHandle, shutdown: CancellationToken) {
    if roots.is_empty() {
        return;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PathBuf>();
    let mut watcher =
        match notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res {
                for p in ev.paths {
                    let _ = tx.send(p);
                }
            }
        }) {
            Ok(w) => w,
            Err(e) => {
                tracing::error!("cannot watch workspace roots: {e}");
                return;
            }
        };
    for root in &roots {
        for dir in candidates(root) {
            if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
                tracing::warn!("cannot watch {}: {e}", dir.display());
            }
        }
    }
    tokio::spawn(async move {
        loop {
            let path = tokio::select! {
                _ = shutdown.cancelled() => return,
                p = rx.recv() => match p { Some(p) => p, None => return },
            };
            // A new folder directly in a root: watch it for markers too.
            if path.is_dir() && roots.iter().any(|r| path.parent() == Some(r.as_path())) {
                let _ = watcher.watch(&path, RecursiveMode::NonRecursive);
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if MARKERS.contains(&name) {
                if let Some(dir) = path.parent() {
                    if let Err(e) = registry.add(dir.to_owned(), Source::Discovered).await {
                        tracing::warn!("discovered {}: {e}", dir.display());
                    }
                }
            }
        }
    });
}
