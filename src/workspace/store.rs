//! The persisted list of workspaces registered with `openfiles add` or by an edit, in
//! `<state dir>/workspaces.json`, so a restart restores them. Written atomically.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use openfiles_os::fsutil;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Stored {
    pub version: u32,
    pub workspaces: Vec<StoredWorkspace>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredWorkspace {
    pub root: PathBuf,
    pub source: String,
}

fn file(state_dir: &Path) -> PathBuf {
    state_dir.join("workspaces.json")
}

/// Load the list; a missing file is an empty list, a corrupt one is logged and kept aside.
pub fn load(state_dir: &Path) -> Vec<StoredWorkspace> {
    let path = file(state_dir);
    match std::fs::read(&path) {
        Ok(bytes) => match serde_json::from_slice::<Stored>(&bytes) {
            Ok(s) => s.workspaces,
            Err(e) => {
                let aside = path.with_extension("json.corrupt");
                tracing::error!(
                    "{} is not valid ({e}); moved to {} and starting with no persisted workspaces",
                    path.display(),
                    aside.display()
                );
                let _ = std::fs::rename(&path, aside);
                Vec::new()
            }
        },
        Err(_) => Vec::new(),
    }
}

/// Save the list atomically.
pub fn save(state_dir: &Path, workspaces: &[StoredWorkspace]) -> std::io::Result<()> {
    fsutil::ensure_private_dir(state_dir, 0o700)?;
    let stored = Stored {
        version: 1,
        workspaces: workspaces.to_vec(),
    };
    let text = serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?;
    fsutil::write_atomic(&file(state_dir), &text, 0o600)
}
