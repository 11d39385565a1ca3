//! Capture path of Claws terminals: the size cap and rotation of unwrapped terminals' log
//! files, the `opost` switch (bare `\n` output), and the reader thread ending on `close` (no
//! thread left behind) even when a process of the terminal survives it. Real bash in real
//! PTYs.

use crate::common;

use std::time::Duration;

use common::claws::{TestServer, BOUND};
use openfiles::config::ClawsConfig;
use serde_json::json;

/// The numbers in `text`'s lines, in order (other lines skipped).
fn numbers(text: &str) -> Vec<u64> {
    text.split("\r\n")
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unwrapped_log_is_capped_with_one_rotated_generation() {
    let cap = 64 << 10;
    let s = TestServer::with(ClawsConfig {
        terminal_log_bytes: cap,
        ..Default::default()
    })
    .await;
    let u = s
        .create(json!({"shellPath": "/bin/bash", "wrapped": false}))
        .await;
    let log = s.root().join(format!(".claws/terminals/{u}.log"));
    let old = s.root().join(format!(".claws/terminals/{u}.log.1"));
    // About 340 KB of output: five rotations.
    let ev = s.exec(&u, "seq 1 50000").await;
    assert_eq!(ev["exitCode"], 0);
    let newest = std::fs::read(&log).unwrap();
    let previous = std::fs::read(&old).unwrap();
    assert_eq!(
        previous.len() as u64,
        cap,
        "the rotated generation is cut at the cap"
    );
    assert!(newest.len() as u64 <= cap, "{}", newest.len());
    // Only one older generation is kept.
    let mut names: Vec<String> = std::fs::read_dir(s.root().join(".claws/terminals"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec![format!("{u}.log"), format!("{u}.log.1")]);
    // Together they are a gapless tail of the output: consecutive numbers up to 50000.
    let mut both = previous.clone();
    both.extend_from_slice(&newest);
    let text = String::from_utf8_lossy(&both);
    let nums = numbers(&text);
    assert_eq!(nums.last(), Some(&50000), "{}", &text[text.len() - 200..]);
    let first = nums[1]; // the very first line may be cut
    assert_eq!(nums[1..], (first..=50000).collect::<Vec<_>>()[..]);
    assert!(50000 - first > cap / 8, "kept too little: from {first}");
    // The newest output is always at logPath.
    let ev = s.exec(&u, "echo after-$((6*7))").await;
    assert_eq!(ev["output"], "after-42\n");
    let newest = std::fs::read(&log).unwrap();
    assert!(
        String::from_utf8_lossy(&newest).contains("after-42"),
        "{}",
        String::from_utf8_lossy(&newest)
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opost_off_keeps_bare_newlines() {
    let s = TestServer::with(ClawsConfig {
        opost: false,
        ..Default::default()
    })
    .await;
    let raw = s.create(json!({"shellPath": "/bin/bash"})).await;
    let cooked = s
        .create(json!({"shellPath": "/bin/bash", "opost": true}))
        .await;
    for (t, want) in [(&raw, "L1\nL2\n"), (&cooked, "L1\r\nL2\r\n")] {
        let ev = s.exec(t, "printf 'L%s\\n' 1 2").await;
        // exec output is the same either way.
        assert_eq!(ev["output"], "L1\nL2\n");
        assert_eq!(ev["exitCode"], 0);
        let v = s
            .ok(json!({"cmd": "readLog", "id": t, "offset": 0, "strip": false}))
            .await;
        let bytes = v["bytes"].as_str().unwrap();
        assert!(bytes.contains(want), "{t}: {bytes:?}");
    }
    // A failing command still reports its code with output processing off.
    let ev = s.exec(&raw, "echo no >&2; false").await;
    assert_eq!(ev["exitCode"], 1);
    assert_eq!(ev["output"], "no\n");
    // A full-screen program runs, and the mode is still off after it restored the tty.
    let f = s.root().join("tui.txt");
    std::fs::write(&f, "line-one\n").unwrap();
    s.ok(json!({"cmd": "send", "id": raw, "text": format!("vi {}", f.display())}))
        .await;
    s.wait_log(&raw, "line-one").await;
    s.ok(json!({"cmd": "send", "id": raw, "text": "\x1b:q!", "newline": true}))
        .await;
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let v = s.ok(json!({"cmd": "poll"})).await;
        let done = v["events"].as_array().unwrap().iter().any(|e| {
            e["terminalId"] == raw.as_str()
                && e["commandLine"].as_str().unwrap_or("").starts_with("vi ")
        });
        if done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "vi never ended: {v}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ev = s.exec(&raw, "stty -a | grep -o -- '-opost'").await;
    assert_eq!(ev["output"], "-opost\n");
    s.stop().await;
}

/// Names of this process's threads.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|s| s.trim().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn close_ends_the_reader_thread_even_with_a_process_left_behind() {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    let name = format!("claws-pty-{t}");
    // A background process that ignores the hang-up outlives the shell; the reader thread
    // must still go (the kernel hangs the tty up when the shell, its session leader, exits).
    let ev = s
        .exec(&t, "(trap '' HUP; exec sleep 300) & disown; echo STRAY=$!")
        .await;
    let out = ev["output"].as_str().unwrap();
    let stray: i32 = out[out.find("STRAY=").expect(out) + 6..]
        .trim()
        .parse()
        .expect(out);
    // The reader thread names itself once it runs; it has run, since exec answered.
    assert!(thread_names().contains(&name), "{:?}", thread_names());
    s.ok(json!({"cmd": "close", "id": t})).await;
    let deadline = tokio::time::Instant::now() + BOUND;
    while thread_names().contains(&name) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "reader thread outlived close"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(stray), None).is_ok(),
        "the stray process should still be there (else this test proves nothing)"
    );
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(stray),
        nix::sys::signal::Signal::SIGKILL,
    );
    s.stop().await;
}
