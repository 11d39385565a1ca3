//! Small projects written by the tests, and the plugin driven directly.

use std::path::{Path, PathBuf};

use openfiles_plugin_api::{CheckRequest, CheckResponse, Init, Item, Plugin};
use openfiles_plugin_tests::Tests;

pub fn plugin(state: &Path, config: serde_json::Value) -> Tests {
    let (p, caps) = Tests::create(Init {
        config,
        state_dir: state.to_owned(),
        host_version: "test".into(),
    })
    .unwrap();
    assert!(caps.project_wide);
    p
}

pub fn request(ws: &Path, files: Vec<PathBuf>, trusted: bool) -> CheckRequest {
    CheckRequest {
        id: 1,
        workspace: ws.to_owned(),
        files,
        report_all: true,
        trusted,
        timeout_ms: 300_000,
        ..Default::default()
    }
}

/// Every item of the answer: (file relative to `ws`, line, source, code, severity).
pub fn items(resp: &CheckResponse, ws: &Path) -> Vec<(String, u32, String, String, String)> {
    let mut out: Vec<_> = resp
        .files
        .iter()
        .flat_map(|f| f.items.iter().map(move |i| (f.path.clone(), i)))
        .map(|(p, i): (PathBuf, &Item)| {
            (
                p.strip_prefix(ws).unwrap_or(&p).display().to_string(),
                i.line,
                i.source.clone(),
                i.code.clone().unwrap_or_default(),
                format!("{:?}", i.severity),
            )
        })
        .collect();
    out.sort();
    out
}

pub fn write(ws: &Path, rel: &str, text: &str) -> PathBuf {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let ws = t.path().canonicalize().unwrap();
    (t, ws)
}
