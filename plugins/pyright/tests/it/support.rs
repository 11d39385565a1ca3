//! What the plugin's tests share: a plugin instance, the check of an edited file, the items
//! per file of an answer, and a workspace's files written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, FileResult, Init, Item, Plugin};
use openfiles_plugin_pyright::Pyright;

/// The plugin with `config` (its `[plugin.pyright]` table).
pub fn plugin(config: serde_json::Value) -> Pyright {
    let state = tempfile::tempdir().unwrap();
    Pyright::create(Init {
        config,
        state_dir: state.path().to_owned(),
        host_version: "test".into(),
    })
    .unwrap()
    .0
}

/// Check `edited` in the trusted workspace `ws`, every file with a problem reported.
pub fn edit_request(ws: &Path, edited: &Path, id: u64) -> CheckRequest {
    CheckRequest {
        id,
        workspace: ws.to_owned(),
        files: vec![edited.to_owned()],
        report_all: true,
        trusted: true,
        timeout_ms: 120_000,
        ..Default::default()
    }
}

/// The items per file, sorted by position, files with none left out.
pub fn by_file(files: Vec<FileResult>) -> BTreeMap<PathBuf, Vec<Item>> {
    let mut out: BTreeMap<PathBuf, Vec<Item>> = BTreeMap::new();
    for f in files {
        let items = out.entry(f.path).or_default();
        items.extend(f.items);
        items.sort_by_key(|i| (i.line, i.column, i.message.clone()));
    }
    out.retain(|_, items| !items.is_empty());
    out
}

/// An empty workspace folder (canonical) and the guard that removes it.
pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    (tmp, ws)
}

/// Write `text` to `rel` in `ws`, its folders made.
pub fn write(ws: &Path, rel: &str, text: &str) {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}
