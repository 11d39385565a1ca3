//! Confinement of the plugin's reads (issue 16, item 1): a session file swapped for a
//! symlink to a file outside the workspace after it was reported is never read through the
//! link, neither when it is checked nor when it is refreshed as another open document.

use crate::support;
use openfiles_plugin_api::{CheckRequest, Plugin};
use serde_json::json;
use support::{all, Env};

const MARK: &str = "undefined_secret_9f2";

fn swap_for_symlink(path: &std::path::Path, target: &std::path::Path) {
    std::fs::remove_file(path).unwrap();
    std::os::unix::fs::symlink(target, path).unwrap();
}

#[test]
fn a_file_swapped_for_a_symlink_is_never_read_through_it() {
    let env = Env::new(json!({"disable": ["pyright", "basedpyright", "ty"]}));
    let secret = env.ws.parent().unwrap().join("secret.py");
    std::fs::write(&secret, format!("token = {MARK}\n")).unwrap();
    let a = env.write("pkg/a.py", "import os\n");
    let b = env.write("pkg/b.py", "import sys\n");
    assert_eq!(all(&env.check(&a, 30_000)), vec![(1, "F401".to_string())]);

    // Checked through the link: refused with an explanation, the secret never sent.
    swap_for_symlink(&a, &secret);
    let items = env.check(&a, 30_000);
    assert!(
        items.iter().all(|i| !i.message.contains(MARK)),
        "the secret was read through the symlink: {items:#?}"
    );
    assert!(
        items.iter().any(|i| i.message.contains("symlink")),
        "{items:#?}"
    );

    // Refreshed as another open document while `b` is checked: closed, not re-read.
    env.write("pkg/a.py", "import os\n");
    assert_eq!(all(&env.check(&a, 30_000)), vec![(1, "F401".to_string())]);
    swap_for_symlink(&a, &secret);
    let resp = env
        .plugin
        .check(CheckRequest {
            trusted: true,
            id: 99,
            workspace: env.ws.clone(),
            files: vec![b.clone()],
            also_report: vec![a.clone()],
            timeout_ms: 30_000,
            ..Default::default()
        })
        .unwrap();
    for f in &resp.files {
        assert!(
            f.items.iter().all(|i| !i.message.contains(MARK)),
            "the secret reached {}: {:#?}",
            f.path.display(),
            f.items
        );
    }
    let b_items: Vec<_> = resp
        .files
        .iter()
        .filter(|f| f.path == b)
        .flat_map(|f| f.items.clone())
        .collect();
    assert_eq!(all(&b_items), vec![(1, "F401".to_string())]);
}

/// A FIFO named like a source file neither blocks the plugin nor is read.
#[test]
fn a_fifo_is_refused_without_blocking() {
    let env = Env::new(json!({"disable": ["pyright", "basedpyright", "ty"]}));
    let fifo = env.ws.join("pipe.py");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let items = env.check(&fifo, 30_000);
    assert!(
        items
            .iter()
            .any(|i| i.message.contains("not a regular file")),
        "{items:#?}"
    );
    // The plugin still serves other files.
    let ok = env.write("ok.py", "import os\n");
    assert_eq!(all(&env.check(&ok, 30_000)), vec![(1, "F401".to_string())]);
}
