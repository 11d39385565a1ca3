//! Fuzz target: the path policy (`policy::Policy::judge`, `policy::checkable`) and the
//! confined reader (`confine::read_workspace_file`) on arbitrary paths against a small real
//! workspace with a symlink pointing out of it. Invariants: a path judged `Check` lies
//! inside the workspace, and a confined read never returns a file outside it.
#![no_main]
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use openfiles::config::DiagnosticsConfig;
use openfiles::policy::{checkable, Policy, Verdict};
use openfiles_plugin_api::confine::read_workspace_file;

struct Ws {
    root: PathBuf,
    policy: Policy,
}

fn ws() -> &'static Ws {
    static WS: OnceLock<Ws> = OnceLock::new();
    WS.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("of-fuzz-policy-{}", std::process::id()));
        let root = base.join("ws");
        let _ = std::fs::create_dir_all(root.join("src/deep"));
        let _ = std::fs::write(root.join("src/a.py"), "x = 1\n");
        let _ = std::fs::write(root.join(".env"), "SECRET=1\n");
        let _ = std::fs::write(base.join("outside.txt"), "outside\n");
        let _ = std::os::unix::fs::symlink(base.join("outside.txt"), root.join("src/out.py"));
        let root = root.canonicalize().unwrap_or(root);
        let policy = Policy::new(&root, &DiagnosticsConfig::default()).expect("default policy");
        Ws { root, policy }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.contains('\0') {
        return;
    }
    let w = ws();
    for candidate in [PathBuf::from(text), w.root.join(text)] {
        if let Verdict::Check(p) = w.policy.judge(&candidate) {
            assert!(p.starts_with(&w.root), "{p:?} judged checkable outside the workspace");
            let _ = checkable(&p, 1 << 20);
        }
        if let Ok(bytes) = read_workspace_file(&w.root, &candidate, 1 << 20) {
            assert_ne!(bytes, b"outside\n", "{candidate:?} read through a symlink");
        }
    }
    let _ = Path::new(text);
});
