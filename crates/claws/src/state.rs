//! What the Claws server keeps across restarts in `<root>/.claws/state.json`: the next
//! terminal id, so ids are never reused within a workspace. Written atomically (temp file +
//! rename, so a pre-existing symlink is replaced, never followed) before `create` answers.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Persisted {
    next_terminal_id: u64,
}

/// The terminal id allocator.
#[derive(Debug)]
pub struct IdCounter {
    path: PathBuf,
    next: Mutex<u64>,
}

impl IdCounter {
    pub fn load(claws_dir: &Path) -> io::Result<IdCounter> {
        let path = claws_dir.join("state.json");
        let next = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(io::Error::other(format!(
                    "{} is a symlink; refusing to read it",
                    path.display()
                )))
            }
            Ok(_) => {
                let text = std::fs::read_to_string(&path)?;
                serde_json::from_str::<Persisted>(&text)
                    .map(|p| p.next_terminal_id)
                    .unwrap_or_else(|e| {
                        tracing::warn!(path = %path.display(), error = %e, "unreadable Claws state; ids restart above the terminal logs");
                        0
                    })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        // Never go below an id that has a log file already (state lost or corrupt).
        let from_logs = std::fs::read_dir(claws_dir.join("terminals"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(".log")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .map_or(0, |m| m + 1);
        Ok(IdCounter {
            path,
            next: Mutex::new(next.max(from_logs).max(1)),
        })
    }

    /// A fresh id, persisted before it is handed out.
    pub fn allocate(&self) -> io::Result<u64> {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let id = *next;
        let text = serde_json::to_vec(&Persisted {
            next_terminal_id: id + 1,
        })
        .map_err(io::Error::other)?;
        if let Some(dir) = self.path.parent() {
            openfiles_os::fsutil::verify_own_dirs(dir, 1)?; // `.claws/`, swapped for a symlink?
        }
        openfiles_os::fsutil::write_atomic(&self.path, &text, 0o600)?;
        *next = id + 1;
        Ok(id)
    }
}
