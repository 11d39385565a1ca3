//! The real plugin cdylibs (cargo-check, tsc, lsp) loaded by `openfiles plugin-host` children and
//! driven through the manager, and `openfiles plugins` listing what it found.

use crate::common;

#[allow(dead_code)]
use std::path::{Path, PathBuf};

use common::plugins::{fixture, path_list, plugin};
use openfiles::config::Config;
use openfiles::plugin_host::{CheckRequest, ManagerOptions, PluginManager};
use tokio_util::sync::CancellationToken;

async fn manager(libs: &[PathBuf], state: &Path) -> (PluginManager, CancellationToken) {
    let token = CancellationToken::new();
    let opts = ManagerOptions {
        host_exe: PathBuf::from(env!("CARGO_BIN_EXE_openfiles")),
        env_path: Some(path_list(libs)),
        exe_dir: None,
    };
    let m = PluginManager::start_with(&Config::default(), state, token.clone(), opts).await;
    (m, token)
}

fn request(ws: &Path, file: &Path) -> CheckRequest {
    CheckRequest {
        trusted: true,
        id: 0,
        workspace: ws.to_owned(),
        files: vec![file.to_owned()],
        also_report: Vec::new(),
        timeout_ms: 300_000,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cargo_check_and_tsc_through_the_host_find_type_errors_and_clear_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let rs = common::rust_crate_with_type_error(&ws);
    std::fs::write(
        ws.join("tsconfig.json"),
        r#"{"compilerOptions":{"strict":true},"include":["web"]}"#,
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("web")).unwrap();
    let ts = ws.join("web/a.ts");
    std::fs::write(&ts, "let n: number = 1;\nn = \"one\";\nexport {};\n").unwrap();

    let (m, token) = manager(&[plugin("cargo_check"), plugin("tsc")], &root.join("state")).await;
    let cargo = m.plugins_for(&rs);
    let tsc = m.plugins_for(&ts);
    assert_eq!(cargo.len(), 1, "{:#?}", m.status_rows());
    assert_eq!(tsc.len(), 1, "{:#?}", m.status_rows());
    assert!(m.capabilities(cargo[0]).unwrap().project_wide);

    let (r, t) = tokio::join!(
        m.check(cargo[0], request(&ws, &rs)),
        m.check(tsc[0], request(&ws, &ts))
    );
    let r = r.unwrap();
    let item = r.files[0]
        .items
        .iter()
        .find(|i| i.code.as_deref() == Some("E0308"))
        .unwrap_or_else(|| panic!("{r:?}"));
    assert_eq!((item.line, item.column), (2, 18));
    let t = t.unwrap();
    let item = t.files[0]
        .items
        .iter()
        .find(|i| i.code.as_deref() == Some("2322"))
        .unwrap_or_else(|| panic!("{t:?}"));
    assert_eq!((item.line, item.column), (2, 1));
    // The plugins' state went where the manager said.
    assert!(root.join("state/plugins/cargo-check/target").is_dir());

    std::fs::write(&rs, "fn main() {\n    let x: u8 = 1;\n    let _ = x;\n}\n").unwrap();
    std::fs::write(&ts, "let n: number = 1;\nn = 2;\nexport {};\n").unwrap();
    let (r, t) = tokio::join!(
        m.check(cargo[0], request(&ws, &rs)),
        m.check(tsc[0], request(&ws, &ts))
    );
    assert!(r.unwrap().files[0].items.is_empty());
    assert!(t.unwrap().files[0].items.is_empty());
    token.cancel();
    m.wait_stopped().await;
}

#[test]
fn openfiles_plugins_lists_loaded_and_refused_libraries() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(&config, "[plugins]\ndisabled = [\"aborter\"]\n").unwrap();
    let libs = path_list(&[
        fixture("instant"),
        fixture("bad_abi"),
        fixture("no_symbol"),
        fixture("abort"),
    ]);
    let run = |json: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_openfiles"));
        cmd.arg("plugins")
            .env("OPENFILES_PLUGIN_PATH", &libs)
            .env("OPENFILES_CONFIG", &config)
            .env("OPENFILES_STATE_DIR", tmp.path().join("state"));
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let rows: Vec<serde_json::Value> = serde_json::from_str(&run(true)).unwrap();
    let state_of = |stem: &str| {
        rows.iter()
            .find(|r| r["path"].as_str().unwrap().contains(stem))
            .map(|r| {
                (
                    r["state"].as_str().unwrap().to_owned(),
                    r["kind"].as_str().map(str::to_owned),
                )
            })
            .unwrap()
    };
    assert_eq!(state_of("fixture_instant"), ("loaded".into(), None));
    assert_eq!(
        state_of("fixture_bad_abi"),
        ("refused".into(), Some("abi-mismatch".into()))
    );
    assert_eq!(
        state_of("fixture_no_symbol"),
        ("refused".into(), Some("missing-symbol".into()))
    );
    assert_eq!(state_of("fixture_abort"), ("disabled".into(), None));
    let human = run(false);
    assert!(
        human.contains("instant 0.1.0") && human.contains("loaded"),
        "{human}"
    );
    assert!(human.contains("refused [abi-mismatch]"), "{human}");
    assert!(human.contains("refused [missing-symbol]"), "{human}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_tsc_times_out_and_is_killed_with_its_children() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("tsconfig.json"), "{}").unwrap();
    let ts = ws.join("a.ts");
    std::fs::write(&ts, "export const a = 1;\n").unwrap();
    // A "tsc" that never answers; its child `sleep` holds the FIFO open, so EOF on the FIFO
    // proves the whole process group is gone.
    let fifo = root.join("alive.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let script = root.join("hanging-tsc");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec 3>'{}'\nsleep 600\n", fifo.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let mut cfg = Config::default();
    cfg.plugin.insert(
        "tsc".into(),
        toml::from_str(&format!("tsc = '{}'", script.display())).unwrap(),
    );
    let token = CancellationToken::new();
    let opts = ManagerOptions {
        host_exe: PathBuf::from(env!("CARGO_BIN_EXE_openfiles")),
        env_path: Some(path_list(&[plugin("tsc")])),
        exe_dir: None,
    };
    let m = PluginManager::start_with(&cfg, &root.join("state"), token.clone(), opts).await;
    let id = m.plugins_for(&ts)[0];

    let alive = {
        let fifo = fifo.clone();
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            // Opens once the script runs; read_to_end returns when every writer is gone.
            let mut f = std::fs::File::open(&fifo).unwrap();
            let mut buf = Vec::new();
            f.read_to_end(&mut buf).unwrap();
        })
    };
    let mut r = request(&ws, &ts);
    r.timeout_ms = 500;
    let err = m.check(id, r).await.unwrap_err();
    assert!(
        matches!(
            err,
            openfiles::plugin_host::PluginError::Timeout { after_ms: 500, .. }
        ),
        "{err:?}"
    );
    assert!(err.item().message.contains("tsc"), "{err}");
    tokio::time::timeout(std::time::Duration::from_secs(60), alive)
        .await
        .expect("the hanging tool (or its child) was not killed after the cancel")
        .unwrap();
    token.cancel();
    m.wait_stopped().await;
}

/// The lsp plugin through the host claims files by name (`Dockerfile`, which has no
/// extension) as well as by extension, and the languages of issue 33 answer through it: a
/// Dockerfile, a YAML file against its schema file, a PHP script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_through_the_host_checks_dockerfiles_yaml_and_php() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(ws.join("deploy")).unwrap();
    let docker = ws.join("Dockerfile");
    std::fs::write(&docker, "FROM alpine\nMAINTAINER me\nWORKDIR app\n").unwrap();
    std::fs::write(
        ws.join("deploy/schema.json"),
        r#"{"type":"object","properties":{"replicas":{"type":"integer"}}}"#,
    )
    .unwrap();
    let yaml = ws.join("deploy/app.yaml");
    std::fs::write(
        &yaml,
        "# yaml-language-server: $schema=./schema.json\nreplicas: two\n",
    )
    .unwrap();
    let php = ws.join("index.php");
    std::fs::write(&php, "<?php\necho undefined_fn(1);\n").unwrap();

    let (m, token) = manager(&[plugin("lsp")], &root.join("state")).await;
    let codes = |r: &openfiles::plugin_host::CheckResponse| -> Vec<(u32, String)> {
        r.files[0]
            .items
            .iter()
            .map(|i| (i.line, i.message.clone()))
            .collect()
    };
    for (file, line, words) in [
        (&docker, 2, "MAINTAINER has been deprecated"),
        (&yaml, 2, "Incorrect type. Expected \"integer\""),
        (&php, 2, "Undefined function 'undefined_fn'"),
    ] {
        let lsp = m.plugins_for(file);
        assert_eq!(lsp.len(), 1, "{file:?}: {:#?}", m.status_rows());
        let r = m.check(lsp[0], request(&ws, file)).await.unwrap();
        assert!(
            codes(&r)
                .iter()
                .any(|(l, msg)| *l == line && msg.contains(words)),
            "{file:?}: {r:#?}"
        );
    }
    token.cancel();
    m.wait_stopped().await;
}
