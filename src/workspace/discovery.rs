//! Discovering workspaces under the configured `service.roots`: a folder directly inside a
//! root (or the root itself) that holds `.openfiles/` or `.claws/` is a workspace. Roots are
//! scanned by the registry once `READY=1` is sent (what the scan finds is started in
//! batches, see `super::pending`) and, once those are served, watched (non-recursively, the
//! root and its direct children) so a marker created later registers its folder.

use std::path::{Path, PathBuf};

use crate::fswatch::FsWatch;
use tokio_util::sync::CancellationToken;

use super::{RegistryHandle, Source};

const MARKERS: &[&str] = &[openfiles_wire::spec::DIR, ".claws"];

fn is_workspace(dir: &Path) -> bool {
    MARKERS.iter().any(|m| dir.join(m).is_dir())
}

/// The root and its direct sub-folders (hidden ones aside), sorted: the registry starts
/// discovered workspaces in this order.
fn candidates(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_owned()];
    if let Ok(rd) = std::fs::read_dir(root) {
        out.extend(
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path()),
        );
        out[1..].sort();
    }
    out
}

/// Folders under `roots` that carry a workspace marker, under each root's canonical path
/// (as the registry serves them: a request naming a file inside one finds it while it is
/// still waiting to be started).
pub fn scan(roots: &[PathBuf]) -> Vec<PathBuf> {
    roots
        .iter()
        .flat_map(|r| candidates(&r.canonicalize().unwrap_or_else(|_| r.clone())))
        .filter(|d| is_workspace(d))
        .collect()
}

/// Watch `roots` for new markers and register their folders, until `shutdown`.
pub fn watch(
    roots: Vec<PathBuf>,
    registry: RegistryHandle,
    fs: &FsWatch,
    shutdown: CancellationToken,
) {
    if roots.is_empty() {
        return;
    }
    let (tx, mut ev_rx) = crate::fswatch::channel();
    let (fs, id) = (fs.clone(), fs.subscriber());
    for root in &roots {
        for dir in candidates(root) {
            if let Err(e) = fs.watch(&dir, id, tx.clone()) {
                tracing::warn!("cannot watch {}: {e}", dir.display());
            }
        }
    }
    let (path_tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<PathBuf>();
    tokio::spawn(async move {
        while let Some(d) = ev_rx.recv().await {
            // A rescan (a burst overflowed the channel) looks at the folder's entries.
            let paths = match d {
                crate::fswatch::Delivery::Event(ev) => ev.paths,
                crate::fswatch::Delivery::Rescan { dir, .. } => candidates(&dir),
            };
            for p in paths {
                let _ = path_tx.send(p);
            }
        }
    });
    tokio::spawn(async move {
        loop {
            let path = tokio::select! {
                _ = shutdown.cancelled() => {
                    fs.unwatch_all(id);
                    return;
                }
                p = rx.recv() => match p { Some(p) => p, None => return },
            };
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let found = if path.is_dir() && roots.iter().any(|r| path.parent() == Some(r.as_path()))
            {
                // A new folder directly in a root: watch it for markers, and look now in case
                // its marker came before the watch.
                let _ = fs.watch(&path, id, tx.clone());
                is_workspace(&path).then(|| path.clone())
            } else if MARKERS.contains(&name) {
                path.parent().map(Path::to_owned)
            } else {
                None
            };
            if let Some(dir) = found {
                if let Err(e) = registry.add(dir.clone(), Source::Discovered).await {
                    tracing::warn!("discovered {}: {e}", dir.display());
                }
            }
        }
    });
}
