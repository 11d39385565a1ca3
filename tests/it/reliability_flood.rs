//! `status` is not starved by a queue flood: a writer process (python3, one `O_APPEND`
//! write per line, as the hook appends) floods a workspace's `.openfiles/queue.jsonl` with
//! hundreds of thousands of lines while the test asks `status` on the control socket over
//! and over (a fresh connection each time, and one long-lived connection). Asserts: every
//! status asked is answered (each with a generous failure bound, nothing timed), and the
//! queue is fully ingested: every line taken exactly once, none malformed, the file gone.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use openfiles::control::client::Client;
use openfiles_wire::control::{Status, StatusReply};

/// Lines the writer appends.
const LINES: u64 = 300_000;
/// A failure bound only: the test fails if the taken count stops moving this long.
const STALL: Duration = Duration::from_secs(120);

/// One `status` on a fresh connection, or why it was not answered.
fn status_fresh(socket: &std::path::Path) -> Result<StatusReply, String> {
    Client::connect(socket, Some(PATIENCE))
        .map_err(|e| format!("connect: {e}"))?
        .call(&Status)
        .map_err(|e| format!("fresh connection: {e}"))
}

#[test]
fn status_is_answered_during_a_queue_flood_and_no_line_is_lost() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    let files: Vec<PathBuf> = (0..50).map(|i| ws.join(format!("f{i}.txt"))).collect();
    for f in &files {
        std::fs::write(f, "x").unwrap();
    }
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let queue = ws.join(".openfiles/queue.jsonl");

    let script = r#"
import json, os, sys
queue, lines, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for n in range(lines):
    line = json.dumps({"v": 1, "paths": [files[n % len(files)]], "agent": "flood"}) + "\n"
    fd = os.open(queue, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if n % 1000 == 0 else fd
    os.write(fd, line.encode())
    if n % 1000 == 999:
        os.close(fd)
print("written", lines)
"#;
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&queue)
        .arg(LINES.to_string())
        .args(&files)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("python3");
    let mut writer = Some(std::thread::spawn(move || child.wait()));

    let mut long = Client::connect(&env.socket, Some(PATIENCE)).unwrap();
    let (mut asked, mut answered) = (0u64, 0u64);
    let mut during_flood = 0u64;
    // Why the unanswered ones were not (a timeout on a loaded machine reads differently
    // from a refused or dropped connection).
    let mut why = Vec::new();
    let mut writer_done = false;
    let mut last = (0u64, Instant::now());
    loop {
        // A status on a fresh connection, then one on the long-lived connection.
        asked += 1;
        let fresh = status_fresh(&env.socket).map_err(|e| why.push(e)).ok();
        answered += u64::from(fresh.is_some());
        asked += 1;
        let kept = long
            .call(&Status)
            .map_err(|e| why.push(format!("long-lived connection: {e}")))
            .ok();
        answered += u64::from(kept.is_some());
        if !writer_done {
            during_flood += 2;
            if writer.as_ref().is_some_and(|w| w.is_finished()) {
                let status = writer.take().unwrap().join().unwrap().unwrap();
                assert!(status.success(), "writer failed: {status:?}");
                writer_done = true;
            }
        }
        let taken = fresh
            .or(kept)
            .map(|s| s.workspaces[0].queue_lines)
            .unwrap_or(last.0);
        if writer_done && taken >= LINES && !queue.exists() {
            break;
        }
        if taken > last.0 {
            last = (taken, Instant::now());
        }
        assert!(
            last.1.elapsed() < STALL,
            "intake stalled at {} of {LINES} lines",
            last.0
        );
    }
    let st = env.status();
    let w = &st.workspaces[0];
    println!(
        "flood: {LINES} lines written by one process; status answered {answered}/{asked} \
         ({during_flood} asked while the writer ran); queue lines in {LINES}, out {}, malformed {}",
        w.queue_lines, w.malformed_queue_lines
    );
    assert_eq!(
        answered, asked,
        "a status went unanswered during the flood: {why:?}"
    );
    assert!(during_flood > 0);
    assert_eq!(w.queue_lines, LINES, "lines lost or repeated");
    assert_eq!(w.malformed_queue_lines, 0);
    assert_eq!(w.session_files, files.len());
}
