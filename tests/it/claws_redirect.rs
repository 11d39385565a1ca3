//! Shell-integration marks go to the terminal, never to a command's redirected output
//! (issue 30 item 1): a redirected group and a redirected function write exactly their own
//! output in bash, zsh and fish, and the wrapper Claws's Python client types for `exec`
//! (`{ cmd; } > FILE 2>&1; echo $? > DONE`, read back from FILE) gives exactly `EXEC_3\n`
//! in bash and zsh. Real shells in real PTYs behind the real socket; the exec machinery
//! (tokens, exit codes) still works around those lines, and after the shell's own stdout is
//! sent elsewhere (`exec >/dev/null`).

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::claws::{TestServer, BOUND};
use serde_json::json;

/// The file's bytes once `done` holds a line (the command wrote it last).
async fn wait_done(done: &Path, out: &Path) -> (String, Vec<u8>) {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        if let Ok(d) = std::fs::read_to_string(done) {
            if d.ends_with('\n') {
                return (d, std::fs::read(out).unwrap_or_default());
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} never written",
            done.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// bash and zsh: Claws's Python client's wrapper typed with `send`, a redirected group and
/// a redirected function through `exec`.
async fn posix(shell: &str) {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let f = |n: &str| dir.path().join(n);
    let t = s.create(json!({"shellPath": shell})).await;
    // The first prompt: the integration is loaded.
    assert_eq!(s.exec(&t, "true").await["exitCode"], 0);

    // The Python client's `exec`: `{ cmd; } > FILE 2>&1; echo $? > DONE`, typed with `send`.
    let (out, done) = (f("py.out"), f("py.done"));
    let wrapper = format!(
        "{{ echo EXEC_$((1+2)); }} > {} 2>&1; echo $? > {}",
        out.display(),
        done.display()
    );
    s.ok(json!({"cmd": "send", "id": t, "text": wrapper})).await;
    let (code, bytes) = wait_done(&done, &out).await;
    assert_eq!(code, "0\n", "{shell}");
    assert_eq!(String::from_utf8_lossy(&bytes), "EXEC_3\n", "{shell}");

    // The same wrapper run by `exec`, whose own token marks come from the same traps.
    let (out, done) = (f("ex.out"), f("ex.done"));
    let cmd = format!(
        "{{ echo EXEC_$((1+2)); sh -c 'exit 4'; }} > {} 2>&1; echo $? > {}",
        out.display(),
        done.display()
    );
    let ev = s.exec(&t, &cmd).await;
    assert_eq!(ev["exitCode"], 0, "{shell}: {ev}");
    assert_eq!(std::fs::read_to_string(&done).unwrap(), "4\n", "{shell}");
    assert_eq!(std::fs::read(&out).unwrap(), b"EXEC_3\n", "{shell}");

    // A redirected group, its exit code kept.
    let g = f("group.out");
    let ev = s
        .exec(
            &t,
            &format!(
                "{{ echo one; echo two >&2; false; }} > {} 2>&1",
                g.display()
            ),
        )
        .await;
    assert_eq!(ev["exitCode"], 1, "{shell}: {ev}");
    assert_eq!(std::fs::read(&g).unwrap(), b"one\ntwo\n", "{shell}");

    // A function, defined and called redirected on one line (bash runs nothing for a line
    // that only defines one, which `exec` reports as not run).
    let fo = f("fn.out");
    let ev = s
        .exec(
            &t,
            &format!(
                "claws_fn() {{ echo in-fn; printf 'x%s\\n' \"$@\"; }}; claws_fn a b > {}",
                fo.display()
            ),
        )
        .await;
    assert_eq!(ev["exitCode"], 0, "{shell}: {ev}");
    assert_eq!(std::fs::read(&fo).unwrap(), b"in-fn\nxa\nxb\n", "{shell}");

    // The shell's own stdout sent away for good: the marks still reach the terminal, so
    // `exec` still sees its commands start and end.
    s.exec(&t, "exec >/dev/null").await;
    let ev = s.exec(&t, "echo gone; sh -c 'exit 6'").await;
    assert_eq!(ev["exitCode"], 6, "{shell}: {ev}");
    assert_eq!(ev["output"], "", "{shell}: {ev}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redirected_output_is_exact_bash() {
    posix("/bin/bash").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redirected_output_is_exact_zsh() {
    posix("/usr/bin/zsh").await;
}

/// fish: `begin …; end > f` and a redirected function (the Python client's `{ …; }` wrapper
/// is not fish syntax).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redirected_output_is_exact_fish() {
    let s = TestServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let f = |n: &str| dir.path().join(n);
    let t = s.create(json!({"shellPath": "/usr/bin/fish"})).await;
    assert_eq!(s.exec(&t, "true").await["exitCode"], 0);

    let g = f("group.out");
    let ev = s
        .exec(
            &t,
            &format!(
                "begin; echo one; echo two >&2; false; end > {} 2>&1",
                g.display()
            ),
        )
        .await;
    assert_eq!(ev["exitCode"], 1, "{ev}");
    assert_eq!(std::fs::read(&g).unwrap(), b"one\ntwo\n");

    // Typed with `send` and followed by a done file, as an agent would.
    let (out, done) = (f("send.out"), f("send.done"));
    let line = format!(
        "begin; echo EXEC_(math 1 + 2); end > {} 2>&1; echo $status > {}",
        out.display(),
        done.display()
    );
    s.ok(json!({"cmd": "send", "id": t, "text": line})).await;
    let (code, bytes) = wait_done(&done, &out).await;
    assert_eq!(code, "0\n");
    assert_eq!(String::from_utf8_lossy(&bytes), "EXEC_3\n");

    s.exec(
        &t,
        "function claws_fn; echo in-fn; printf 'x%s\\n' $argv; end",
    )
    .await;
    let fo = f("fn.out");
    let ev = s
        .exec(&t, &format!("claws_fn a b > {}", fo.display()))
        .await;
    assert_eq!(ev["exitCode"], 0, "{ev}");
    assert_eq!(std::fs::read(&fo).unwrap(), b"in-fn\nxa\nxb\n");
    s.stop().await;
}
