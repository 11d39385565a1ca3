//! Hostile workspaces (issue 16): files a repository can plant or swap while the service
//! serves it. Each test reproduces one attack against the real service and asserts what
//! openfiles promises instead (RELIABILITY.md, "Hostile workspaces").

use crate::common;

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

fn heartbeat_written(ws: &Path) -> bool {
    std::fs::read_dir(ws.join(".openfiles/vscode")).is_ok_and(|mut d| d.next().is_some())
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
    // Let start-up work finish (first heartbeat; diagnostics.json waits for an edit).
    wait_until("the heartbeat is written", || heartbeat_written(&ws));
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

/// Resident memory of a process, in KiB.
fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// A workspace whose `.openfiles/config.toml` is `/dev/zero` (it took the service to
/// out-of-memory) or a FIFO (it hung the whole service): the workspace is refused with a
/// clear error, the service keeps answering `status` and stays small, and a sane workspace
/// beside them is served.
#[test]
fn planted_config_files_neither_hang_nor_flood_the_service() {
    let env = Env::new();
    let zero = env.workspace("zero");
    std::fs::create_dir_all(zero.join(".openfiles")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero.join(".openfiles/config.toml")).unwrap();
    let fifo = env.workspace("fifo");
    std::fs::create_dir_all(fifo.join(".openfiles")).unwrap();
    mkfifo(&fifo.join(".openfiles/config.toml"));
    let sane = env.workspace("sane");
    let svc = env.serve(&[
        "-w",
        zero.to_str().unwrap(),
        "-w",
        fifo.to_str().unwrap(),
        "-w",
        sane.to_str().unwrap(),
    ]);
    let status = env.status();
    let served: Vec<_> = status.workspaces.iter().map(|w| w.root.clone()).collect();
    assert!(served.contains(&sane), "{served:?}");
    assert!(
        !served.contains(&zero) && !served.contains(&fifo),
        "{served:?}"
    );
    let log = svc.log_text();
    assert!(log.contains("symlink"), "{log}");
    assert!(log.contains("not a regular file"), "{log}");
    let rss = rss_kib(svc.pid());
    eprintln!("service RSS with planted config files: {rss} KiB");
    assert!(rss < 100 * 1024, "service RSS {rss} KiB");
}

/// The hook's fallback (no service, an editor's heartbeat) reads `diagnostics.json`; one
/// planted as a symlink to `/dev/zero` was read until the kernel killed the hook (24 GB).
/// Now it is refused: the hook exits 0 promptly with no feedback.
#[test]
fn the_hook_fallback_refuses_a_planted_diagnostics_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    common::hook::heartbeat(&root);
    std::os::unix::fs::symlink("/dev/zero", root.join(".openfiles/diagnostics.json")).unwrap();
    let payload = serde_json::json!({"cwd": root, "tool_name": "Edit",
        "tool_input": {"file_path": root.join("src/main.rs")}, "hook_event_name": "PostToolUse"})
    .to_string();
    let mut cmd = common::hook::openfiles(tmp.path(), &["hook", "--agent", "claude"]);
    // A short hook deadline: the fallback polls diagnostics.json until then.
    let mut child = common::hook::spawn_hook(cmd.current_dir(&root), &payload);
    let pid = child.id() as i32;
    let mut peak = 0;
    let out = loop {
        if let Some(_st) = child.try_wait().unwrap() {
            break child.wait_with_output().unwrap();
        }
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            if let Some(v) = s.lines().find_map(|l| l.strip_prefix("VmRSS:")) {
                peak = peak.max(v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(out.status.success(), "{out:?}");
    assert!(peak < 100 * 1024, "the hook grew to {peak} KiB");
}

/// `queue.jsonl` planted as a symlink to `/dev/zero` looped at 60–90 % of a core forever
/// ("file shrank" reset the offset). It is refused once, with a warning, and the service
/// stays idle.
#[test]
fn a_queue_file_linked_to_a_device_is_refused_and_the_service_stays_idle() {
    let env = Env::new();
    let ws = env.workspace("ws");
    std::fs::create_dir_all(ws.join(".openfiles")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", ws.join(".openfiles/queue.jsonl")).unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    wait_until("the refusal is logged", || {
        svc.log_text()
            .contains("ignored until it is replaced by a regular file")
    });
    std::thread::sleep(Duration::from_millis(500));
    let before = cpu_ticks(svc.pid());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_ticks(svc.pid()) - before;
    let budget = clock_ticks_per_second() / 4;
    assert!(used < budget, "{used} ticks in 3 s (budget {budget})");
    assert_eq!(env.status().workspaces.len(), 1);
    assert_eq!(
        svc.log_text()
            .matches("ignored until it is replaced by a regular file")
            .count(),
        1,
        "warned once"
    );
}

/// `.openfiles/` swapped for a symlink to another folder while the service serves the
/// workspace: the next `diagnostics.json` and heartbeat writes are refused (logged), never
/// written through the link into the other folder; its own files are untouched.
#[test]
fn an_openfiles_dir_swapped_for_a_symlink_while_serving_is_never_written_through() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let other = env.workspace("other");
    let stash = other.join("stash");
    std::fs::create_dir_all(&stash).unwrap();
    std::fs::write(stash.join("diagnostics.json"), "theirs\n").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    wait_until("the heartbeat is written", || heartbeat_written(&ws));
    std::fs::rename(ws.join(".openfiles"), ws.join(".openfiles-old")).unwrap();
    std::os::unix::fs::symlink(&stash, ws.join(".openfiles")).unwrap();
    let f = ws.join("a.txt");
    std::fs::write(&f, "x\n").unwrap();
    env.edited(&[&f]);
    wait_until("the refused write is logged", || {
        svc.log_text().contains("refusing to write through it")
    });
    assert_eq!(
        std::fs::read_to_string(stash.join("diagnostics.json")).unwrap(),
        "theirs\n"
    );
    assert!(
        !stash.join("vscode").exists(),
        "a heartbeat went through the link"
    );
    let names: Vec<_> = std::fs::read_dir(&stash)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

/// A library whose constructor writes `marker` when it is loaded (a real `dlopen` side
/// effect, as a planted plugin would have).
fn library_with_constructor(dir: &Path, marker: &Path) -> std::path::PathBuf {
    let src = dir.join("evil.c");
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void run(void) {{\n  FILE *f = fopen(\"{}\", \"w\");\n  if (f) {{ fputs(\"ran\", f); fclose(f); }}\n}}\n",
            marker.display()
        ),
    )
    .unwrap();
    // Named by the plugin naming rule, so a folder scan tries it.
    let lib = dir.join(format!(
        "{}openfiles_plugin_evil.{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_EXTENSION
    ));
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "cc failed");
    lib
}

/// A `.so` dropped into a plugin folder others can write was loaded (its constructor ran
/// as the service's user) although listed as refused. Now it is refused before any
/// `dlopen`, in `openfiles plugins` and in the service; the same library in a private
/// folder is loaded (its constructor runs: the test's marker can appear).
#[test]
fn plugins_in_folders_others_can_write_are_refused_before_loading() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let shared = env.dir.path().join("shared-plugins");
    std::fs::create_dir_all(&shared).unwrap();
    let marker = env.dir.path().join("constructor-ran");
    library_with_constructor(&shared, &marker);
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();

    let out = env
        .command(&["plugins", "--json"])
        .env("OPENFILES_PLUGIN_PATH", &shared)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("writable by others"), "{text}");
    assert!(
        !marker.exists(),
        "the constructor ran in `openfiles plugins`"
    );

    let mut env2 = Env::new();
    env2.plugin_path = Some(shared.clone().into_os_string());
    let ws = env2.workspace("ws");
    let svc = env2.serve(&["-w", ws.to_str().unwrap()]);
    let status = env2.status();
    assert!(
        serde_json::to_string(&status.plugins)
            .unwrap()
            .contains("writable by others"),
        "{:?}",
        status.plugins
    );
    drop(svc);
    assert!(!marker.exists(), "the constructor ran in the service");

    // Control: from a private folder the library is loaded (and refused afterwards for its
    // missing plugin symbol), so its constructor does run.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _ = env
        .command(&["plugins"])
        .env("OPENFILES_PLUGIN_PATH", &shared)
        .output()
        .unwrap();
    assert!(
        marker.exists(),
        "control: the library was not loaded at all"
    );
}

/// A blocking line client of a Claws socket.
struct Line {
    rd: std::io::BufReader<std::os::unix::net::UnixStream>,
    wr: std::os::unix::net::UnixStream,
}

impl Line {
    fn connect(sock: &Path) -> Line {
        let s = std::os::unix::net::UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(common::PATIENCE)).unwrap();
        Line {
            rd: std::io::BufReader::new(s.try_clone().unwrap()),
            wr: s,
        }
    }
    fn send(&mut self, v: &serde_json::Value) {
        use std::io::Write;
        let mut t = v.to_string();
        t.push('\n');
        self.wr.write_all(t.as_bytes()).unwrap();
    }
    /// The answer to request `id` (push frames before it are skipped).
    fn answer(&mut self, id: u64) -> serde_json::Value {
        use std::io::BufRead;
        loop {
            let mut l = String::new();
            assert!(self.rd.read_line(&mut l).unwrap() > 0, "socket closed");
            let v: serde_json::Value = serde_json::from_str(&l).unwrap();
            if v["rid"] == id {
                return v;
            }
        }
    }
    fn call(&mut self, v: serde_json::Value) -> serde_json::Value {
        let id = v["id"].as_u64().unwrap();
        self.send(&v);
        self.answer(id)
    }
}

/// A subscriber that never reads, fed 1 MiB publishes, grew the service by 1.2 GB (4096
/// frames × 1 MiB per peer), and a replaying subscriber that never reads held the whole
/// event log in memory. Queues are bounded in bytes and replays stream from disk: the
/// service stays under 100 MiB and keeps answering `status`.
#[test]
fn stuck_bus_subscribers_cost_bounded_memory() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let sock = ws.join(".claws/claws.sock");
    let hello = |c: &mut Line, role: &str| {
        let v = c.call(
            serde_json::json!({"id": 1, "cmd": "hello", "protocol": "claws/2",
            "role": role, "peerName": role}),
        );
        assert_eq!(v["ok"], true, "{v}");
    };
    // The stuck live subscriber: subscribes, then never reads again.
    let mut stuck = Line::connect(&sock);
    hello(&mut stuck, "observer");
    let v = stuck.call(
        serde_json::json!({"id": 2, "cmd": "subscribe", "protocol": "claws/2", "topic": "big.**"}),
    );
    assert_eq!(v["ok"], true, "{v}");
    let mut publisher = Line::connect(&sock);
    hello(&mut publisher, "worker");
    let blob = "x".repeat(1 << 20);
    let mut peak = 0;
    for i in 0..120u64 {
        let v = publisher.call(serde_json::json!({"id": 10 + i, "cmd": "publish",
            "protocol": "claws/2", "topic": "big.data", "payload": {"blob": blob}}));
        assert_eq!(v["ok"], true);
        if i % 20 == 0 {
            peak = peak.max(rss_kib(svc.pid()));
        }
    }
    // A replaying subscriber that never reads: 120 MiB of stored events behind it.
    let mut replayer = Line::connect(&sock);
    hello(&mut replayer, "observer");
    replayer.send(
        &serde_json::json!({"id": 3, "cmd": "subscribe", "protocol": "claws/2",
        "topic": "big.**", "fromCursor": "0000:0"}),
    );
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(100));
        peak = peak.max(rss_kib(svc.pid()));
    }
    assert_eq!(env.status().workspaces.len(), 1);
    peak = peak.max(rss_kib(svc.pid()));
    eprintln!("peak RSS {peak} KiB");
    assert!(peak < 100 * 1024, "service peaked at {peak} KiB");
    drop((stuck, replayer));
}

/// `openfiles check` of a FIFO blocked forever, and `check … | head` panicked with a
/// backtrace. A FIFO is refused at once with an explanation, and a reader that stops early
/// ends the output quietly.
#[test]
fn check_refuses_special_files_and_survives_a_closed_pipe() {
    let env = Env::new();
    let ws = env.workspace("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    let fifo = ws.join("pipe.py");
    mkfifo(&fifo);
    let out = env
        .command(&["check", "--json", fifo.to_str().unwrap()])
        .current_dir(&ws)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not a regular file"), "{text}\n{out:?}");

    let mut files = Vec::new();
    for i in 0..700 {
        let f = ws.join(format!("f{i}.unknownext"));
        std::fs::write(&f, "x\n").unwrap();
        files.push(f.to_string_lossy().into_owned());
    }
    let bin = common::bin();
    let script = format!(
        "'{bin}' check {} 2>'{}' | head -c 1 >/dev/null",
        files.join(" "),
        ws.join("stderr.txt").display()
    );
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .envs(
            env.command(&[])
                .get_envs()
                .filter_map(|(k, v)| Some((k, v?))),
        )
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(status.success());
    let stderr = std::fs::read_to_string(ws.join("stderr.txt")).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A deleted `.openfiles/` was never recreated (errors every second forever). The next
/// write recreates it: `diagnostics.json` comes back with the new edit.
#[test]
fn a_deleted_openfiles_dir_is_recreated() {
    let env = Env::new();
    let ws = env.workspace("ws");
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let a = ws.join("a.txt");
    std::fs::write(&a, "x\n").unwrap();
    env.edited(&[&a]);
    wait_until("diagnostics.json is written", || {
        ws.join(".openfiles/diagnostics.json").exists()
    });
    // The service may write into the folder while it is being removed (ENOTEMPTY): retry.
    wait_until(".openfiles is removed", || {
        std::fs::remove_dir_all(ws.join(".openfiles")).is_ok()
    });
    let f = ws.join("b.txt");
    std::fs::write(&f, "x\n").unwrap();
    env.edited(&[&f]);
    wait_until("diagnostics.json names the new edit", || {
        common::diagnostics(&ws).is_some_and(|d| d.files.contains_key("b.txt"))
    });
}

/// `add /`, `/etc` and the temporary folder were accepted as workspaces; the home folder
/// needs `--force`.
#[test]
fn system_folders_are_refused_as_workspaces() {
    let mut env = Env::new();
    let home = env.workspace("home");
    env.extra_env
        .push(("HOME".into(), home.clone().into_os_string()));
    let _svc = env.serve(&[]);
    for dir in ["/", "/etc", &std::env::temp_dir().to_string_lossy()] {
        let out = env.command(&["add", dir]).output().unwrap();
        assert!(!out.status.success(), "{dir} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("system folder"), "{dir}: {err}");
    }
    let out = env
        .command(&["add", home.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    let out = env
        .command(&["add", "--force", home.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// `.claws/` swapped for a symlink to another folder while the service serves the
/// workspace: a new terminal's log and the id counter are refused, never written through
/// the link; the other folder stays as it was.
#[test]
fn a_claws_dir_swapped_for_a_symlink_while_serving_is_never_written_through() {
    let mut env = Env::new();
    let ws = env.workspace("ws");
    let home = env.workspace("home");
    env.extra_env.push(("HOME".into(), home.into_os_string()));
    let other = env.workspace("other");
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    // The listening socket keeps working after the swap (it is bound already).
    std::fs::rename(ws.join(".claws"), ws.join(".claws-old")).unwrap();
    std::os::unix::fs::symlink(&other, ws.join(".claws")).unwrap();
    let v = common::json_call(
        &ws.join(".claws-old/claws.sock"),
        r#"{"id":1,"cmd":"create","name":"t"}"#,
    );
    assert_eq!(v["ok"], false, "{v}");
    assert!(
        v["error"].as_str().unwrap_or_default().contains("refusing"),
        "{v}"
    );
    assert_eq!(
        std::fs::read_dir(&other).unwrap().count(),
        0,
        "written through the link"
    );
}

/// A repository that brings its own `node_modules/.bin/ruff` and `pyright-langserver` and a
/// `queue.jsonl` line, dropped into a `service.roots` folder: discovery serves it, but the
/// queued line is history (never acted on) and an edit is checked with the tools installed
/// outside it, never the repository's own — until the user trusts it with `openfiles trust`.
#[test]
fn a_discovered_repository_runs_none_of_its_own_executables_until_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::plugin("lsp").into_os_string());
    let roots = env.workspace("src");
    let repo = roots.join("cloned");
    let marker = env.dir.path().join("repository-code-ran");
    std::fs::create_dir_all(repo.join("node_modules/.bin")).unwrap();
    for tool in ["ruff", "pyright-langserver"] {
        let exe = repo.join("node_modules/.bin").join(tool);
        std::fs::write(
            &exe,
            format!("#!/bin/sh\necho {tool} >> {}\nexit 1\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let app = repo.join("app.py");
    std::fs::write(&app, "print(undefined_name)\n").unwrap();
    std::fs::create_dir_all(repo.join(".openfiles")).unwrap();
    std::fs::write(
        repo.join(".openfiles/queue.jsonl"),
        format!(
            "{}\n",
            serde_json::json!({"v": 1, "paths": [&app], "agent": "planted"})
        ),
    )
    .unwrap();
    std::fs::write(
        &env.config,
        format!("[service]\nroots = [{:?}]\n", roots.to_str().unwrap()),
    )
    .unwrap();
    let svc = env.serve(&[]);
    wait_until("the repository is discovered", || {
        env.status().workspaces.iter().any(|w| w.root == repo)
    });
    // After a restart the planted line is still history (the cursor past it was persisted).
    drop(svc);
    let _svc = env.serve(&[]);
    wait_until("the repository is served again", || {
        env.status().workspaces.iter().any(|w| w.root == repo)
    });
    let st = env.status();
    let w = st.workspaces.iter().find(|w| w.root == repo).unwrap();
    assert!(!w.trusted, "a discovered folder is not trusted");
    // An edit is checked, with the tools from PATH (or not at all), never the repository's.
    let r = env.edited(&[&app]);
    assert!(env.wait(&[&app], r.ts, 60_000).complete);
    // The planted line is history: by the time the edit is checked (the intake reads what a
    // queue holds when it starts), nothing was taken from the queue.
    assert_eq!(env.status().workspaces[0].queue_lines, 0);
    assert!(
        !marker.exists(),
        "the repository's own executables ran: {:?}",
        std::fs::read_to_string(&marker)
    );
    // Control: trusted by the user, the repository's own tools are what runs.
    let out = env
        .command(&["trust", repo.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(env
        .status()
        .workspaces
        .iter()
        .any(|w| w.root == repo && w.trusted));
    std::fs::write(&app, "print(other_name)\n").unwrap();
    let r = env.edited(&[&app]);
    env.wait(&[&app], r.ts, 60_000);
    wait_until("the trusted repository's own tool runs", || marker.exists());
}

/// A cloned repository that commits `[claws.web_socket] enabled = true` (or the extension's
/// flat `enable_web_socket`) in `.openfiles/config.toml` had the first edit open a loopback
/// WebSocket any web page could reach. A workspace's own config may not open listeners:
/// the workspace is refused, no port is listened on, and the refusal, naming the key, is in
/// the edit's answer and the log.
#[test]
fn a_workspace_config_cannot_open_a_web_socket() {
    let env = Env::new();
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (nested, flat) = (free(), free());
    let svc = env.serve(&[]);
    for (name, text, key, port) in [
        (
            "nested",
            format!("[claws.web_socket]\nenabled = true\nport = {nested}\n"),
            "claws.web_socket.enabled",
            nested,
        ),
        (
            "flat",
            format!("[claws]\nenable_web_socket = true\nweb_socket_port = {flat}\n"),
            "claws.enable_web_socket",
            flat,
        ),
    ] {
        let ws = env.workspace(name);
        std::fs::create_dir_all(ws.join(".openfiles")).unwrap();
        std::fs::write(ws.join(".openfiles/config.toml"), text).unwrap();
        let file = ws.join("a.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        let r = env.edited(&[&file]);
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "{name}: something listens on {port}"
        );
        assert!(r.workspaces.is_empty(), "{r:?}");
        assert!(
            r.rejected.iter().any(|x| x.reason.contains(key)),
            "{:?}",
            r.rejected
        );
        assert!(!ws.join(".claws").exists(), "{name}: Claws started");
        let log = svc.log_text();
        assert!(log.contains(key), "{log}");
    }
    assert!(env.status().workspaces.is_empty());
}
