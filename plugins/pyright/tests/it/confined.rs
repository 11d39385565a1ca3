//! What the pyright plugin reads itself: a file a checker reported, to turn its UTF-16
//! columns into characters — read the confined way, so a FIFO planted at that name (or a
//! symlink to a file outside) neither blocks the check nor is read. The checker here is a
//! script outside the workspace that reports a problem in such a file.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use openfiles_plugin_api::{CheckRequest, Init, Plugin};
use openfiles_plugin_pyright::Pyright;

fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Open `fifo` for writing without blocking, once a reader holds it open; true if one did.
fn release(fifo: &Path) -> bool {
    let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path string; the descriptor is closed at once.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK) };
    if fd >= 0 {
        // SAFETY: the descriptor just opened.
        unsafe { libc::close(fd) };
        true
    } else {
        false
    }
}

#[test]
fn a_fifo_where_a_reported_file_is_does_not_hang_the_check() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("pyrightconfig.json"), "{}").unwrap();
    let fifo = ws.join("f.py");
    mkfifo(&fifo);
    let report = serde_json::json!({"generalDiagnostics": [{
        "file": fifo.display().to_string(),
        "severity": "error",
        "message": "boom",
        "rule": "reportX",
        "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 5}},
    }]});
    let fake = root.join("bin/fake-pyright");
    std::fs::create_dir_all(fake.parent().unwrap()).unwrap();
    std::fs::write(
        &fake,
        format!("#!/bin/sh\ncat <<'EOF'\n{report}\nEOF\nexit 1\n"),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (p, _) = Pyright::create(Init {
        config: serde_json::json!({"pyright": fake}),
        state_dir: root.join("state"),
        host_version: "test".into(),
    })
    .unwrap();
    // A watchdog that unblocks a reader stuck in the FIFO, so a failure ends.
    let (done, wait) = mpsc::channel::<()>();
    let stuck = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (stuck, fifo) = (stuck.clone(), fifo.clone());
        std::thread::spawn(move || {
            if wait.recv_timeout(Duration::from_secs(120)).is_ok() {
                return;
            }
            while wait.try_recv().is_err() {
                if release(&fifo) {
                    stuck.store(true, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let resp = p
        .check(CheckRequest {
            id: 1,
            workspace: ws.clone(),
            files: vec![fifo.clone()],
            timeout_ms: 120_000,
            ..Default::default()
        })
        .unwrap();
    done.send(()).unwrap();
    watchdog.join().unwrap();
    assert!(
        !stuck.load(Ordering::SeqCst),
        "the check blocked on the FIFO"
    );
    // The item is kept, at the checker's own column (the file could not be read).
    let items: Vec<_> = resp
        .files
        .iter()
        .filter(|f| f.path == fifo)
        .flat_map(|f| f.items.iter())
        .collect();
    assert_eq!(items.len(), 1, "{resp:?}");
    assert_eq!((items[0].line, items[0].column), (1, 5));
    assert_eq!(items[0].message, "boom");
}
