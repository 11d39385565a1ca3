//! Hostile workspaces (issue 16): files a repository can plant or swap while the service
//! serves it. Each test reproduces one attack against the real service and asserts what
//! openfiles promises instead (RELIABILITY.md, "Hostile workspaces").
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

mod common;

use std::path::Path;
use std::time::Duration;

use common::{wait_until, Env};

/// CPU time (user + system, in clock ticks) the process has used so far.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no side effects.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as u64
}

/// An empty regular `queue.jsonl` (a `touch`, or one the editor extension truncated after
/// reading) used to keep the intake at ~90 % of a core: its own opens of the file woke it.
/// The service now stays idle.
#[test]
fn an_empty_queue_file_leaves_the_service_idle() {
    let env = Env::new();
    let ws = env.workspace("ws");
    std::fs::create_dir_all(ws.join(".openfiles")).unwrap();
    std::fs::write(ws.join(".openfiles/queue.jsonl"), "").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    // Let start-up work finish (first heartbeat, first diagnostics write).
    wait_until("diagnostics.json is written", || {
        ws.join(".openfiles/diagnostics.json").exists()
    });
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(svc.pid());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(svc.pid()) - before;
    // A quarter core-second in 3 s (under 10 % of a core); idle it is a tick or two, the
    // old loop took a core's worth of whatever the machine had free.
    let budget = clock_ticks_per_second() / 4;
    assert!(
        used < budget,
        "the service used {used} ticks in 3 s with an empty queue.jsonl (budget {budget})"
    );
    // And a line appended later is still taken.
    let f = ws.join("src.py");
    std::fs::write(&f, "x = 1\n").unwrap();
    append(
        &ws.join(".openfiles/queue.jsonl"),
        &format!("{{\"v\":1,\"ts\":1,\"paths\":[\"{}\"]}}\n", f.display()),
    );
    wait_until("the queued file joins the session", || {
        common::diagnostics(&ws).is_some_and(|d| d.files.contains_key("src.py"))
    });
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}
