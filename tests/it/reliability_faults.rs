//! Fault injection against the real binary: `kill -9` of the service during a
//! `diagnostics.json` rewrite storm with queue intake, a plugin host killed mid-check through
//! `openfiles serve`, a workspace folder deleted while registered, and a full disk (a small
//! tmpfs) under a workspace.

use crate::common;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use openfiles_wire::control::{Edited, Request};
use openfiles_wire::spec::DiagnosticsFile;

/// Edit `files` round-robin through the control socket until `stop` (or the service goes).
fn control_storm(
    socket: PathBuf,
    files: Vec<PathBuf>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let Ok(mut c) = openfiles::control::client::Client::connect(&socket, Some(PATIENCE)) else {
            return 0;
        };
        let mut n = 0usize;
        while !stop.load(Ordering::Relaxed) {
            let f = files[n % files.len()].clone();
            if c.send(&Request::Edited(Edited {
                paths: vec![f],
                ..Default::default()
            }))
            .is_err()
            {
                break;
            }
            n += 1;
        }
        n
    })
}

/// Append `total` queue lines (one `write(2)` each on a fresh `O_APPEND` fd, as the hook
/// does): the first half at once, the second half once `go` says so. Counts the lines
/// written so far in `count`.
fn queue_storm(
    queue: PathBuf,
    files: Vec<PathBuf>,
    total: usize,
    count: Arc<AtomicUsize>,
    go: std::sync::mpsc::Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for n in 0..total {
            if n == total / 2 {
                let _ = go.recv();
            }
            let f = &files[n % files.len()];
            let line = format!(
                "{}\n",
                serde_json::json!({"v": 1, "paths": [f], "agent": "storm"})
            );
            let mut q = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&queue)
                .unwrap();
            q.write_all(line.as_bytes()).unwrap();
            count.store(n + 1, Ordering::Relaxed);
        }
    })
}

/// Queue lines appended during the kill test (the intake must take each exactly once).
const LINES: usize = 10_000;
/// Lines already queued when the service starts, so the kill lands during intake.
const PREFILL: usize = 60_000;

#[test]
fn kill_9_during_a_rewrite_storm_keeps_the_file_valid_and_loses_no_line() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let files: Vec<PathBuf> = (0..40).map(|i| ws.join(format!("f{i}.txt"))).collect();
    for f in &files {
        std::fs::write(f, "x").unwrap();
    }
    let queue = ws.join(".openfiles/queue.jsonl");
    // Served first: lines a queue held before openfiles first served the folder are
    // history, never requests; the backlog arrives once it is served.
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let mut backlog = String::new();
    for n in 0..PREFILL {
        backlog.push_str(
            &serde_json::json!({"v": 1, "paths": [&files[n % files.len()]], "agent": "backlog"})
                .to_string(),
        );
        backlog.push('\n');
    }
    std::fs::write(&queue, backlog).unwrap();
    let path = ws.join(".openfiles/diagnostics.json");

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let editor = control_storm(env.socket.clone(), files.clone(), stop.clone());
    let (go, gate) = std::sync::mpsc::channel();
    let writer = queue_storm(queue.clone(), files.clone(), LINES, written.clone(), gate);
    // Kill as soon as the file has been replaced a few times (each rewrite is a new
    // version): with the backlog, while intake has read lines it has not yet acknowledged
    // (the figure printed below says how many were acknowledged at the kill).
    let mut versions = std::collections::HashSet::new();
    let mut listed = 0;
    wait_until("diagnostics.json is rewritten several times", || {
        if let Ok(m) = std::fs::metadata(&path) {
            use std::os::unix::fs::MetadataExt;
            versions.insert((m.ino(), m.mtime(), m.mtime_nsec(), m.size()));
        }
        if let Some(d) = diagnostics(&ws) {
            listed = d.files.len();
        }
        versions.len() >= 3 && listed > 0
    });
    let taken_at_kill = env.status().workspaces[0].queue_lines;
    svc.kill9();
    // The file left by the killed process is whole, and no older than what we saw.
    let bytes = std::fs::read(&path).unwrap();
    let doc: DiagnosticsFile = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("torn diagnostics.json after kill -9 ({e})"));
    assert!(doc.files.len() >= listed, "{} < {listed}", doc.files.len());
    // The second half of the lines arrives while nothing runs.
    stop.store(true, Ordering::Relaxed);
    let edits = editor.join().unwrap();
    let at_kill = written.load(Ordering::Relaxed);
    go.send(()).unwrap();
    writer.join().unwrap();
    let mut q = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&queue)
        .unwrap();
    writeln!(q, "{}", serde_json::json!({"v": 1, "paths": [&files[0]]})).unwrap();
    drop(q);
    let total = (PREFILL + LINES) as u64 + 1;

    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    wait_until("every queued line is taken after the restart", || {
        env.status().workspaces[0].queue_lines >= total
    });
    wait_until("the queue is drained", || !queue.exists());
    let st = env.status();
    let taken = st.workspaces[0].queue_lines;
    println!(
        "kill -9 storm: {edits} control edits, {total} queue lines written ({PREFILL} queued before the start, {at_kill} more before the kill; {taken_at_kill} taken at the kill), {taken} taken, lost {}",
        total.saturating_sub(taken)
    );
    assert_eq!(taken, total, "lines lost or repeated");
    assert_eq!(st.workspaces[0].malformed_queue_lines, 0);
    // The session survived: every file is still listed, in a valid file.
    assert_eq!(st.workspaces[0].session_files, files.len());
    wait_until("diagnostics.json is rewritten after the restart", || {
        diagnostics(&ws).is_some_and(|d| d.files.len() == files.len())
    });
}

/// Make `<file>.started` a FIFO the instant fixture writes to once the check runs in it.
fn started_signal(file: &Path) -> std::thread::JoinHandle<String> {
    let mut fifo = file.as_os_str().to_owned();
    fifo.push(".started");
    let fifo = PathBuf::from(fifo);
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    std::thread::spawn(move || {
        let f = std::fs::File::open(&fifo).unwrap();
        let mut line = String::new();
        std::io::BufReader::new(f).read_line(&mut line).unwrap();
        line
    })
}

fn plugin_pid(env: &Env, name: &str) -> Option<u64> {
    env.status().plugins.iter().find_map(|p| {
        (p.name.as_deref()? == name)
            .then_some(p.pid.map(u64::from))
            .flatten()
    })
}

#[test]
fn a_plugin_host_killed_mid_check_through_the_service() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::path_list(&[
        common::plugins::fixture("instant"),
        common::plugins::plugin("cargo_check"),
    ]));
    std::fs::write(
        &env.config,
        "[plugin.instant]\nextensions = [\"txt\", \"slow\"]\n",
    )
    .unwrap();
    let ws = env.workspace("crate");
    let main = rust_crate_with_type_error(&ws);
    let slow = ws.join("big.slow");
    std::fs::write(&slow, "x").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    wait_until("both plugin hosts run", || {
        plugin_pid(&env, "instant").is_some() && plugin_pid(&env, "cargo-check").is_some()
            || plugin_pid(&env, "instant").is_some() && plugin_pid(&env, "cargo_check").is_some()
    });
    let cargo_name = if plugin_pid(&env, "cargo-check").is_some() {
        "cargo-check"
    } else {
        "cargo_check"
    };
    let cargo_pid = plugin_pid(&env, cargo_name).unwrap();

    let started = started_signal(&slow);
    let r = env.edited(&[&slow, &main]);
    let waiter = {
        let socket = env.socket.clone();
        let (slow, main) = (slow.clone(), main.clone());
        std::thread::spawn(move || {
            openfiles::control::client::Client::connect(&socket, Some(PATIENCE))
                .unwrap()
                .call(&openfiles_wire::control::Wait {
                    paths: vec![slow, main],
                    since: r.ts,
                    timeout_ms: Some(240_000),
                    partial: false,
                    session: None,
                    fixes: false,
                })
                .unwrap()
        })
    };
    let line = started.join().unwrap();
    assert!(line.starts_with("started"), "{line}");
    let host = plugin_pid(&env, "instant").unwrap();
    signal(host as i32, libc::SIGKILL);

    let w = waiter.join().unwrap();
    assert!(w.complete, "{w:?}");
    let files = &w.workspaces[0].files;
    let slow_items = &files["big.slow"].items;
    assert!(
        slow_items
            .iter()
            .any(|i| i.message.contains("instant") && i.message.to_lowercase().contains("host")),
        "no explanatory item for the killed host: {slow_items:?}"
    );
    // The other plugin's file got its real result, from the same host as before.
    assert!(
        files["src/main.rs"]
            .items
            .iter()
            .any(|i| i.code.as_deref() == Some("E0308")),
        "{:?}",
        files["src/main.rs"]
    );
    assert_eq!(plugin_pid(&env, cargo_name), Some(cargo_pid));

    // The next check is answered by the restarted host.
    let next = ws.join("next.txt");
    std::fs::write(&next, "x").unwrap();
    let r = env.edited(&[&next]);
    let w = env.wait(&[&next], r.ts, 60_000);
    assert!(w.complete, "{w:?}");
    assert_eq!(w.workspaces[0].files["next.txt"].items[0].source, "instant");
    let new_host = plugin_pid(&env, "instant").unwrap();
    assert_ne!(new_host, host);
}

#[test]
fn a_deleted_workspace_is_dropped_and_the_others_keep_working() {
    let env = Env::new();
    std::fs::write(&env.config, "[service]\nheartbeat_seconds = 2\n").unwrap();
    let gone = env.workspace("gone");
    let kept = env.workspace("kept");
    std::fs::write(kept.join("a.txt"), "x").unwrap();
    let _svc = env.serve(&["-w", gone.to_str().unwrap(), "-w", kept.to_str().unwrap()]);
    assert_eq!(env.status().workspaces.len(), 2);

    std::fs::remove_dir_all(&gone).unwrap();
    wait_until("the deleted workspace is dropped", || {
        env.status().workspaces.iter().all(|w| w.root != gone)
    });
    let st = env.status();
    assert_eq!(st.workspaces.len(), 1);
    assert_eq!(st.workspaces[0].root, kept);
    // Nothing was re-created where the folder was.
    assert!(!gone.exists());
    let r = env.edited(&[&kept.join("a.txt")]);
    let w = env.wait(&[&kept.join("a.txt")], r.ts, 60_000);
    assert!(w.complete);
    wait_until("the kept workspace's file is written", || {
        diagnostics(&kept).is_some_and(|d| d.files.contains_key("a.txt"))
    });
}

/// A tmpfs mounted for one test, detached on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(at)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mounting a tmpfs needs root: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(at.to_owned())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Write to `path` until the filesystem is full.
fn fill(path: &Path) {
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0u8; 4096];
    loop {
        match f.write_all(&block) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling the tmpfs: {e}"),
        }
    }
    let _ = f.sync_all();
}

#[test]
fn a_full_disk_never_corrupts_diagnostics_json_and_recovers() {
    let env = Env::new();
    let mount = env.dir.path().join("small");
    let _tmpfs = Tmpfs::mount(&mount, "1m");
    let ws = mount.canonicalize().unwrap();
    let files: Vec<PathBuf> = (0..20).map(|i| ws.join(format!("f{i}.txt"))).collect();
    for f in &files {
        std::fs::write(f, "x").unwrap();
    }
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let r = env.edited(&[&files[0]]);
    assert!(env.wait(&[&files[0]], r.ts, 60_000).complete);
    let path = ws.join(".openfiles/diagnostics.json");
    // The settled file (an earlier write lists the file still unchecked, the baseline pending).
    wait_until("diagnostics.json shows the first file checked", || {
        diagnostics(&ws)
            .is_some_and(|d| d.files.get("f0.txt").is_some_and(|e| e.checked_at >= r.ts))
    });
    let old = std::fs::read(&path).unwrap();

    fill(&ws.join("filler"));
    let paths: Vec<&Path> = files[1..].iter().map(PathBuf::as_path).collect();
    env.edited(&paths);
    wait_until("the failed write is logged", || {
        svc.log_text().contains("cannot write diagnostics state")
    });
    // Still the old, valid file: a failed rewrite never truncates it.
    let now = std::fs::read(&path).unwrap();
    assert_eq!(now, old, "diagnostics.json changed while the disk was full");
    serde_json::from_slice::<DiagnosticsFile>(&now).unwrap();

    std::fs::remove_file(ws.join("filler")).unwrap();
    wait_until("the pending write lands once space returns", || {
        diagnostics(&ws).is_some_and(|d| d.files.len() == files.len())
    });
    // And the next edit is written too.
    let r = env.edited(&[&files[0]]);
    assert!(env.wait(&[&files[0]], r.ts, 60_000).complete);
    drop(svc);
}
