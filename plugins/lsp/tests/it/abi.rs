//! The built cdylib through the C ABI, loaded the way the plugin host loads it.

use openfiles_plugin_api::host::PluginLibrary;
use serde_json::{json, Value};
use std::path::PathBuf;

/// `target/<profile>/deps/libopenfiles_plugin_lsp.so`: `cargo test` builds the library with all
/// its crate types, the cdylib included, next to this test binary. (The copy in
/// `target/<profile>` is refreshed only by `cargo build`.)
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let deps = exe.parent().expect("target/<profile>/deps");
    deps.join(format!(
        "{}openfiles_plugin_lsp{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ))
}

#[test]
fn the_cdylib_checks_a_file_through_the_c_abi() {
    let lib = PluginLibrary::load(&library()).expect("load the lsp plugin");
    assert_eq!(lib.name(), "lsp");
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().canonicalize().expect("canonical");
    let file = ws.join("m.py");
    std::fs::write(&file, "import os\n").expect("write");
    let init = json!({"config": {"disable": ["pyright", "basedpyright", "ty"]}, "stateDir": ws, "hostVersion": "t"});
    let (inst, caps) = lib.create(init.to_string().as_bytes()).expect("create");
    let caps: Value = serde_json::from_slice(&caps).expect("caps json");
    let exts = caps["extensions"].as_array().expect("extensions");
    assert!(
        exts.contains(&json!("py")) && exts.contains(&json!("ts")),
        "{caps}"
    );
    // Extensions of a server that is not installed are not claimed.
    if openfiles_plugin_lsp::config::on_path("gopls").is_none() {
        assert!(!exts.contains(&json!("go")), "{caps}");
    }
    let req = json!({"id": 1, "workspace": ws, "files": [file], "timeoutMs": 30000});
    let resp: Value =
        serde_json::from_slice(&inst.check(req.to_string().as_bytes()).expect("check"))
            .expect("json");
    let items = &resp["files"][0]["items"];
    assert_eq!(items[0]["code"], "F401", "{resp}");
    assert_eq!(
        (items[0]["line"].as_u64(), items[0]["source"].as_str()),
        (Some(1), Some("Ruff"))
    );
    drop(inst);
}
