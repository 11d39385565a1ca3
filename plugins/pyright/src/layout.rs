//! Where a file's project is for each checker and which checkers its folders ask for: read
//! from the configuration files between the file's folder and the workspace root
//! (`pyproject.toml`'s tables, `pyrightconfig.json`, `ty.toml` — a TOML parse each, tens of
//! milliseconds per file in a debug build, on every check's path before the server is
//! told anything), so kept per folder while none of those files changed (each one's
//! presence, size, inode and modification time, looked at again on every use).

use crate::Checker;
use openfiles_plugin_api::markers::{self, project_root};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The files whose tables or presence decide a layout.
const CONFIG_FILES: [&str; 3] = ["pyproject.toml", "pyrightconfig.json", "ty.toml"];
/// The most folders remembered (a workspace's Python folders; past that, forgotten).
const MAX_FOLDERS: usize = 4_096;

/// One folder's layout, per checker in [`Checker::ALL`]'s order.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Its project root.
    pub roots: [PathBuf; 3],
    /// Whether a folder from the file's up to the workspace asks for it.
    pub claims: [bool; 3],
}

/// What a configuration file looked like: absent, or its size, inode and modification time.
type Stamp = Option<(u64, u64, Option<SystemTime>)>;

/// A folder and its workspace.
type Folder = (PathBuf, PathBuf);

/// The layouts of the folders seen, with the stamps they were read under.
#[derive(Default)]
pub struct Layouts(Mutex<HashMap<Folder, (Vec<Stamp>, Layout)>>);

impl Layouts {
    /// The layout of `file`'s folder in `workspace`: remembered if its configuration files
    /// are as they were, else read again.
    pub fn of(&self, file: &Path, workspace: &Path) -> Layout {
        let dir = file.parent().unwrap_or(file).to_owned();
        let key = (dir, workspace.to_owned());
        let now = stamps(&key.0, workspace);
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((then, layout)) = map.get(&key) {
            if *then == now {
                return layout.clone();
            }
        }
        let layout = read(file, workspace);
        if map.len() >= MAX_FOLDERS {
            map.clear();
        }
        map.insert(key, (now, layout.clone()));
        layout
    }
}

/// The layout as the configuration files say now.
fn read(file: &Path, workspace: &Path) -> Layout {
    let root = |c: Checker| {
        let m: Vec<String> = c.root_markers().iter().map(|m| m.to_string()).collect();
        project_root(file, workspace, &m)
    };
    let claims = |c: Checker| {
        let claims = markers::python_type_checker_claims(c.name());
        !claims.is_empty() && markers::near(claims, file, workspace)
    };
    let [a, b, c] = Checker::ALL;
    Layout {
        roots: [root(a), root(b), root(c)],
        claims: [claims(a), claims(b), claims(c)],
    }
}

/// The stamps of the configuration files in `dir` and each folder above it inside
/// `workspace` (where the markers are looked for).
fn stamps(dir: &Path, workspace: &Path) -> Vec<Stamp> {
    use std::os::unix::fs::MetadataExt;
    dir.ancestors()
        .take_while(|d| d.starts_with(workspace))
        .flat_map(|d| CONFIG_FILES.iter().map(move |f| d.join(f)))
        .map(|p| {
            let m = std::fs::symlink_metadata(p).ok()?;
            Some((m.len(), m.ino(), m.modified().ok()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_is_kept_until_a_configuration_file_changes() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let app = ws.join("app");
        std::fs::create_dir_all(&app).unwrap();
        let file = app.join("m.py");
        let layouts = Layouts::default();
        let first = layouts.of(&file, &ws);
        assert_eq!(first.roots, [ws.clone(), ws.clone(), ws.clone()]);
        assert_eq!(first.claims, [false, false, false]);
        assert_eq!(layouts.of(&file, &ws), first);
        // A table added: read again, for the folder and the ones below.
        std::fs::write(app.join("pyproject.toml"), "[tool.basedpyright]\n").unwrap();
        let now = layouts.of(&file, &ws);
        assert_eq!(now.roots[1], app);
        assert_eq!(now.claims, [false, true, false]);
        std::fs::write(ws.join("ty.toml"), "").unwrap();
        assert_eq!(layouts.of(&file, &ws).claims, [false, true, true]);
        std::fs::remove_file(app.join("pyproject.toml")).unwrap();
        let gone = layouts.of(&file, &ws);
        assert_eq!(gone.roots[1], ws);
        assert_eq!(gone.claims, [false, false, true]);
    }
}
