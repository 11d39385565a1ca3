//! What clangd sees of an untrusted workspace's compile flags: a `compile_commands.json` the
//! plugin writes, never the repository's own.
//!
//! clangd obeys its compile database: `-MJ <path>` appends to any file the user can write,
//! `-Xclang -load` loads a library, `-fplugin=` another. In a workspace the user has not
//! trusted, clangd is started with `--compile-commands-dir=<folder>` (a private folder of
//! the plugin's state dir, one per workspace), so it never looks for the repository's
//! `compile_commands.json` or `compile_flags.txt`; before each check the plugin finds the
//! checked file's database the way clangd does and rewrites it there, each unit's flags cut
//! to the allowlist the cc plugin reads them with
//! ([`openfiles_plugin_api::compile_db`]). The folder holds every database of the workspace
//! checked so far (one clangd serves them all); an empty folder means fallback flags.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use openfiles_plugin_api::compile_db::{self, Unit};
use openfiles_plugin_api::{private, PluginError};

/// A database as last read: its file's identity and its units (allowed flags only).
struct Loaded {
    stamp: (Option<SystemTime>, u64),
    units: Vec<Unit>,
}

/// The folders written, per workspace.
pub struct ClangdDbs {
    root: PathBuf,
    /// Per workspace, per database file, what was read.
    known: Mutex<HashMap<PathBuf, BTreeMap<PathBuf, Loaded>>>,
}

fn stamp(p: &Path) -> (Option<SystemTime>, u64) {
    std::fs::metadata(p)
        .map(|m| (m.modified().ok(), m.len()))
        .unwrap_or((None, 0))
}

impl ClangdDbs {
    /// Folders under `root` (the plugin's state dir's `clangd/`).
    pub fn new(root: PathBuf) -> ClangdDbs {
        ClangdDbs {
            root,
            known: Mutex::default(),
        }
    }

    /// The folder clangd is pointed at for `workspace`.
    pub fn folder(&self, workspace: &Path) -> PathBuf {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        workspace.hash(&mut h);
        let name = workspace
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .take(40)
            .collect();
        self.root.join(format!("{name}-{:016x}", h.finish()))
    }

    /// Make `workspace`'s folder (0700) hold the filtered database of `file` with the others
    /// read before; returns the folder.
    pub fn prepare(&self, workspace: &Path, file: &Path) -> Result<PathBuf, PluginError> {
        let dir = self.folder(workspace);
        private::create_dir(&dir).map_err(|e| PluginError::io(dir.display().to_string(), e))?;
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        let dbs = known.entry(workspace.to_owned()).or_default();
        let mut changed = false;
        if let Some(db) = compile_db::find(file, workspace) {
            let now = stamp(&db);
            if dbs.get(&db).is_none_or(|l| l.stamp != now) {
                let units = match compile_db::load(&db, None, workspace) {
                    Ok(d) => d
                        .units
                        .into_iter()
                        .filter(|u| u.file.starts_with(workspace))
                        .collect(),
                    Err(why) => {
                        tracing::info!("{why}; clangd gets no flags from it");
                        Vec::new()
                    }
                };
                dbs.insert(db, Loaded { stamp: now, units });
                changed = true;
            }
        }
        // A database that is gone leaves the folder.
        let before = dbs.len();
        dbs.retain(|db, _| db.is_file());
        changed |= dbs.len() != before;
        let target = dir.join("compile_commands.json");
        if changed || (!dbs.is_empty() && !target.is_file()) {
            let units: Vec<Unit> = dbs.values().flat_map(|l| l.units.iter().cloned()).collect();
            if units.is_empty() {
                let _ = std::fs::remove_file(&target);
            } else {
                let json = compile_db::clangd_database(&units);
                let bytes = serde_json::to_vec_pretty(&json)
                    .map_err(|e| PluginError::Request(e.to_string()))?;
                private::write(&target, &bytes)
                    .map_err(|e| PluginError::io(target.display().to_string(), e))?;
            }
        }
        Ok(dir)
    }
}
