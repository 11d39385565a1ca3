//! What an idle service costs as the number of workspaces grows (issue 22), measured on the
//! real release binary: for 1, 100 and 1 000 workspaces discovered under `service.roots`
//! (folders holding `.openfiles/`, in a temp dir),
//!
//! - start → `READY=1` on a real `NOTIFY_SOCKET` datagram socket (ms): the control socket
//!   answers and explicitly named workspaces are served; discovered ones (and restored ones
//!   past the first 64) are started after READY, in batches;
//! - start → all served (ms): the answer to a `workspaces` request sent at READY, which
//!   waits until every pending workspace is started (so READY is not the whole story);
//! - RSS (MiB) and open files at the end of the idle period;
//! - wakeups per second: voluntary context switches of every thread
//!   (`/proc/PID/task/*/status`, threads that exit during the period included);
//! - CPU % of one core (`/proc/PID/stat` utime + stime).
//!
//! The idle period starts 3 s after READY (start-up writes settle) and lasts 60 s; it
//! includes the first heartbeat sweep, which reads every heartbeat folder once (later
//! sweeps only touch the heartbeats). Environment: `OPENFILES_IDLE_SECONDS` (a shorter
//! period for quick runs), `OPENFILES_IDLE_SETTLE` (seconds from READY to the period;
//! 35 measures the steady state after the first sweep),
//! `OPENFILES_IDLE_COUNTS` (e.g. `1,100`), `OPENFILES_IDLE_BIN` (measure another build of
//! `openfiles`, e.g. one built from `main`, for before/after figures).
//!
//! Run: `cargo bench --bench idle`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests and benchmarks may panic on a broken fixture

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Env, NotifySocket};
use openfiles_wire::control::Workspaces;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Voluntary context switches per live thread.
fn switches(pid: u32) -> HashMap<u32, u64> {
    let mut out = HashMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(n) = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|n| n.trim().parse().ok())
        {
            out.insert(tid, n);
        }
    }
    out
}

/// utime + stime of the whole process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the `(comm)`, which may contain spaces: state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

struct Figures {
    ready_ms: f64,
    all_served_ms: f64,
    listed: usize,
    rss_mib: f64,
    open_files: usize,
    wakeups_per_s: f64,
    cpu_pct: f64,
    served: usize,
}

fn measure(program: &Path, count: usize, settle: Duration, idle: Duration) -> Figures {
    let env = Env::new();
    let roots = env.dir.path().join("src");
    for i in 0..count {
        std::fs::create_dir_all(roots.join(format!("project-{i:04}/.openfiles"))).unwrap();
    }
    std::fs::write(
        &env.config,
        format!("[service]\nroots = [{:?}]\n", roots.to_str().unwrap()),
    )
    .unwrap();
    let notify = NotifySocket::bind(env.dir.path());
    notify.set_patience(Duration::from_secs(600));
    let start = Instant::now();
    let mut child = env
        .command_of(program, &["serve"])
        .env("NOTIFY_SOCKET", &notify.path)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    notify.expect("READY=1");
    let ready_ms = start.elapsed().as_secs_f64() * 1000.0;
    notify.drain_in_background();
    let listed = env.client().call(&Workspaces).unwrap().workspaces.len();
    let all_served_ms = start.elapsed().as_secs_f64() * 1000.0;
    let pid = child.id();
    std::thread::sleep(settle);

    // Sample once a second (reading /proc does not wake the service): a thread that exits
    // during the period keeps the last count it was seen with.
    let first = switches(pid);
    let ticks0 = cpu_ticks(pid);
    let t0 = Instant::now();
    let mut last = first.clone();
    while t0.elapsed() < idle {
        std::thread::sleep(Duration::from_secs(1).min(idle.saturating_sub(t0.elapsed())));
        last.extend(switches(pid));
    }
    let secs = t0.elapsed().as_secs_f64();
    let ticks = cpu_ticks(pid) - ticks0;
    let woke: u64 = last
        .iter()
        .map(|(tid, n)| n - first.get(tid).copied().unwrap_or(0))
        .sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let figures = Figures {
        ready_ms,
        all_served_ms,
        listed,
        rss_mib: rss_kib(pid) as f64 / 1024.0,
        open_files: open_files(pid),
        wakeups_per_s: woke as f64 / secs,
        cpu_pct: ticks as f64 / hz / secs * 100.0,
        served: env.status().workspaces.len(),
    };
    let _ = child.kill();
    let _ = child.wait();
    figures
}

fn main() {
    let idle = Duration::from_secs(env_or("OPENFILES_IDLE_SECONDS", 60u64).max(1));
    let settle = Duration::from_secs(env_or("OPENFILES_IDLE_SETTLE", 3u64));
    let counts: Vec<usize> = std::env::var("OPENFILES_IDLE_COUNTS")
        .unwrap_or_else(|_| "1,100,1000".into())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect();
    let program = std::env::var_os("OPENFILES_IDLE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(common::bin()));
    println!(
        "idle service, {} s after a {} s settle ({})",
        idle.as_secs(),
        settle.as_secs(),
        program.display()
    );
    println!(
        "{:>10} {:>10} {:>14} {:>9} {:>10} {:>10} {:>7}",
        "workspaces", "READY ms", "all served ms", "RSS MiB", "open files", "wakeups/s", "CPU %"
    );
    for n in counts {
        let f = measure(&program, n, settle, idle);
        assert_eq!(
            (f.listed, f.served),
            (n, n),
            "the service should serve every discovered workspace"
        );
        println!(
            "{:>10} {:>10.1} {:>14.1} {:>9.1} {:>10} {:>10.2} {:>7.3}",
            n, f.ready_ms, f.all_served_ms, f.rss_mib, f.open_files, f.wakeups_per_s, f.cpu_pct
        );
    }
    println!("goal at 1 000: READY ≤ 200 ms, RSS ≤ 40 MiB, ≤ 1 wakeup/s, CPU ≤ 0.1 %");
    println!("all served: start until a `workspaces` request sent at READY is answered (it waits for every pending start)");
}
