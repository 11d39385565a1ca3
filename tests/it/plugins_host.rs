//! The plugin host and its supervisor with real plugin libraries in real child processes:
//! bad libraries are refused with a clear reason, a panicking or aborting plugin never
//! takes down the manager or the other plugins, a host killed with SIGKILL mid-check ends
//! that check with an error and is restarted for the next one, deadlines cancel.

use crate::common;

#[allow(dead_code)]
use std::io::BufRead;
use std::path::{Path, PathBuf};

use common::plugins::{fixture, path_list};
use openfiles::config::Config;
use openfiles::diagnostics::Checker;
use openfiles::plugin_host::{CheckRequest, ManagerOptions, PluginError, PluginManager};
use openfiles::plugin_host::{PluginState, PluginStatus};
use openfiles_plugin_api::Severity;
use tokio_util::sync::CancellationToken;

struct Setup {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    manager: PluginManager,
    token: CancellationToken,
}

async fn start(libs: &[PathBuf], cfg: Config) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let token = CancellationToken::new();
    let opts = ManagerOptions {
        host_exe: PathBuf::from(env!("CARGO_BIN_EXE_openfiles")),
        env_path: Some(path_list(libs)),
        exe_dir: None,
    };
    let manager =
        PluginManager::start_with(&cfg, &tmp.path().join("state"), token.clone(), opts).await;
    Setup {
        _tmp: tmp,
        ws,
        manager,
        token,
    }
}

fn row<'a>(rows: &'a [PluginStatus], name: &str) -> &'a PluginStatus {
    rows.iter()
        .find(|r| r.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no {name} in {rows:#?}"))
}

fn id_of(m: &PluginManager, name: &str) -> openfiles::plugin_host::PluginId {
    m.ids()
        .into_iter()
        .find(|id| m.name(*id) == Some(name))
        .unwrap_or_else(|| panic!("{name} not loaded: {:#?}", m.status_rows()))
}

fn req(ws: &Path, files: &[&Path], timeout_ms: u64) -> CheckRequest {
    CheckRequest {
        trusted: true,
        id: 0,
        workspace: ws.to_owned(),
        files: files.iter().map(|p| p.to_path_buf()).collect(),
        also_report: Vec::new(),
        timeout_ms,
        ..Default::default()
    }
}

fn touch(ws: &Path, name: &str) -> PathBuf {
    let p = ws.join(name);
    std::fs::write(&p, "x\n").unwrap();
    p
}

async fn instant_works(s: &Setup) {
    let id = id_of(&s.manager, "instant");
    let f = touch(&s.ws, "ok.txt");
    let resp = s
        .manager
        .check(id, req(&s.ws, &[&f], 30_000))
        .await
        .unwrap();
    assert_eq!(resp.files.len(), 1);
    assert_eq!(resp.files[0].path, f);
    assert_eq!(resp.files[0].items[0].source, "instant");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_libraries_are_refused_with_distinct_reasons_and_good_ones_load() {
    let tmp = tempfile::tempdir().unwrap();
    let garbage = tmp
        .path()
        .join(format!("libgarbage.{}", std::env::consts::DLL_EXTENSION));
    std::fs::write(&garbage, b"this is not an ELF file").unwrap();
    let missing = tmp.path().join("nowhere");
    let s = start(
        &[
            fixture("instant"),
            fixture("bad_abi"),
            fixture("no_symbol"),
            garbage.clone(),
            missing.clone(),
        ],
        Config::default(),
    )
    .await;
    let rows = s.manager.status_rows();
    let by_path = |p: &Path| rows.iter().find(|r| r.path == p).unwrap();

    let bad_abi = by_path(&fixture("bad_abi"));
    assert_eq!(bad_abi.state, PluginState::Refused);
    assert_eq!(bad_abi.kind.as_deref(), Some("abi-mismatch"));
    assert!(
        bad_abi.reason.as_deref().unwrap().contains("ABI 999"),
        "{bad_abi:?}"
    );

    let no_symbol = by_path(&fixture("no_symbol"));
    assert_eq!(no_symbol.state, PluginState::Refused);
    assert_eq!(no_symbol.kind.as_deref(), Some("missing-symbol"));
    assert!(no_symbol
        .reason
        .as_deref()
        .unwrap()
        .contains("openfiles_plugin_v1"));

    let garbage_row = by_path(&garbage);
    assert_eq!(garbage_row.state, PluginState::Refused);
    assert_eq!(garbage_row.kind.as_deref(), Some("load-error"));

    assert_eq!(by_path(&missing).state, PluginState::Missing);

    let instant = row(&rows, "instant");
    assert_eq!(instant.state, PluginState::Loaded);
    assert_eq!(s.manager.ids().len(), 1);
    assert_eq!(
        s.manager.plugins_for(Path::new("/x/a.txt")),
        vec![id_of(&s.manager, "instant")]
    );
    assert!(s.manager.plugins_for(Path::new("/x/a.rs")).is_empty());
    instant_works(&s).await;
    s.token.cancel();
    s.manager.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_plugin_gives_an_error_and_its_host_lives_on() {
    let s = start(&[fixture("panic"), fixture("instant")], Config::default()).await;
    let panicky = id_of(&s.manager, "panicky");
    let f = touch(&s.ws, "a.txt");
    for _ in 0..2 {
        let err = s
            .manager
            .check(panicky, req(&s.ws, &[&f], 30_000))
            .await
            .unwrap_err();
        let PluginError::Failed { message, .. } = &err else {
            panic!("expected Failed, got {err:?}");
        };
        assert!(
            message.contains("panicked") && message.contains("fixture panic"),
            "{message}"
        );
        let item = err.item();
        assert_eq!(item.severity, Severity::Warning);
        assert!(item.message.contains("panicky"));
    }
    let rows = s.manager.status_rows();
    assert_eq!(
        row(&rows, "panicky").restarts,
        0,
        "a panic must not kill the host"
    );
    assert_eq!(row(&rows, "panicky").state, PluginState::Loaded);
    instant_works(&s).await;
    s.token.cancel();
    s.manager.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborting_plugin_kills_only_its_host_which_is_restarted() {
    let s = start(&[fixture("abort"), fixture("instant")], Config::default()).await;
    let aborter = id_of(&s.manager, "aborter");
    let f = touch(&s.ws, "a.txt");
    let first_pid = row(&s.manager.status_rows(), "aborter").pid.unwrap();
    for round in 1..=2u32 {
        let err = s
            .manager
            .check(aborter, req(&s.ws, &[&f], 60_000))
            .await
            .unwrap_err();
        let PluginError::HostDied { reason, .. } = &err else {
            panic!("expected HostDied, got {err:?}");
        };
        assert!(reason.contains("SIGABRT"), "{reason}");
        assert!(err.item().message.contains("restarted"));
        // The second round is served by a restarted host (not refused as broken).
        assert!(row(&s.manager.status_rows(), "aborter").restarts >= round);
    }
    instant_works(&s).await;
    let rows = s.manager.status_rows();
    assert_ne!(row(&rows, "aborter").pid, Some(first_pid));
    s.token.cancel();
    s.manager.wait_stopped().await;
}

/// Make `<file>.started` a FIFO; returns a task that resolves when the plugin opened it
/// (i.e. the check is running inside the plugin).
fn started_signal(file: &Path) -> tokio::task::JoinHandle<String> {
    let mut fifo = file.as_os_str().to_owned();
    fifo.push(".started");
    let fifo = PathBuf::from(fifo);
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    tokio::task::spawn_blocking(move || {
        let f = std::fs::File::open(&fifo).unwrap();
        let mut line = String::new();
        std::io::BufReader::new(f).read_line(&mut line).unwrap();
        line
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_killed_mid_check_fails_that_check_and_serves_the_next() {
    let s = start(&[fixture("instant")], Config::default()).await;
    let instant = id_of(&s.manager, "instant");
    let slow = touch(&s.ws, "big.slow");
    let started = started_signal(&slow);
    let manager = s.manager.clone();
    let m2 = s.manager.clone();
    let ws = s.ws.clone();
    let slow2 = slow.clone();
    let in_flight =
        tokio::spawn(async move { m2.check(instant, req(&ws, &[&slow2], 120_000)).await });
    let line = tokio::time::timeout(std::time::Duration::from_secs(60), started)
        .await
        .expect("plugin never started the check")
        .unwrap();
    assert!(line.starts_with("started"), "{line}");

    let pid = row(&manager.status_rows(), "instant").pid.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let err = in_flight.await.unwrap().unwrap_err();
    let PluginError::HostDied { reason, .. } = &err else {
        panic!("expected HostDied, got {err:?}");
    };
    assert!(reason.contains("SIGKILL"), "{reason}");

    // The next check waits for the restarted host and is answered by it.
    let f = touch(&s.ws, "next.txt");
    let resp = manager
        .check(instant, req(&s.ws, &[&f], 60_000))
        .await
        .unwrap();
    assert_eq!(resp.files[0].path, f);
    let rows = manager.status_rows();
    let r = row(&rows, "instant");
    assert_eq!(r.restarts, 1);
    assert_eq!(r.state, PluginState::Loaded);
    assert_ne!(r.pid, Some(pid));
    s.token.cancel();
    manager.wait_stopped().await;
}

/// A check that ignores cancellation (a blocking read of a FIFO, a hung tool) used to keep
/// the host busy for every later check; past its deadline and a grace period the host is
/// killed and replaced, and the plugin serves again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_stuck_past_its_deadline_is_replaced() {
    let s = start(&[fixture("instant")], Config::default()).await;
    let instant = id_of(&s.manager, "instant");
    let pid = row(&s.manager.status_rows(), "instant").pid.unwrap();
    let stuck = touch(&s.ws, "a.stuck");
    let err = s
        .manager
        .check(instant, req(&s.ws, &[&stuck], 300))
        .await
        .unwrap_err();
    assert!(matches!(err, PluginError::Timeout { .. }), "{err:?}");
    let start = std::time::Instant::now();
    loop {
        let rows = s.manager.status_rows();
        let r = row(&rows, "instant");
        if r.restarts == 1 && r.state == PluginState::Loaded && r.pid.is_some_and(|p| p != pid) {
            assert!(
                r.reason
                    .as_deref()
                    .unwrap_or_default()
                    .contains("after its deadline"),
                "{r:?}"
            );
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "never replaced: {r:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    instant_works(&s).await;
    s.token.cancel();
    s.manager.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_past_its_deadline_times_out_and_is_cancelled_in_the_plugin() {
    let s = start(&[fixture("instant")], Config::default()).await;
    let instant = id_of(&s.manager, "instant");
    let slow = touch(&s.ws, "a.slow");
    let err = s
        .manager
        .check(instant, req(&s.ws, &[&slow], 300))
        .await
        .unwrap_err();
    assert!(
        matches!(err, PluginError::Timeout { after_ms: 300, .. }),
        "{err:?}"
    );
    // The host is still the same process and still answers.
    instant_works(&s).await;
    assert_eq!(row(&s.manager.status_rows(), "instant").restarts, 0);
    // Shutdown finds no check left running: the plugin got the cancel and the host exits
    // at once (a stuck check would hold it for the drain period, then be killed anyway).
    let pid = row(&s.manager.status_rows(), "instant").pid.unwrap();
    s.token.cancel();
    s.manager.wait_stopped().await;
    let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None);
    assert!(alive.is_err(), "host {pid} still running after shutdown");
    assert_eq!(
        row(&s.manager.status_rows(), "instant").state,
        PluginState::Stopped
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_keep_requested_and_also_report_files_only_and_config_reaches_the_plugin() {
    let mut cfg = Config::default();
    cfg.plugin.insert(
        "instant".into(),
        toml::from_str("extensions = [\"md\"]").unwrap(),
    );
    let s = start(&[fixture("instant")], cfg).await;
    let instant = id_of(&s.manager, "instant");
    assert_eq!(
        s.manager.plugins_for(Path::new("/w/README.md")),
        vec![instant]
    );
    assert!(s.manager.plugins_for(Path::new("/w/a.txt")).is_empty());
    let a = touch(&s.ws, "a.md");
    let b = touch(&s.ws, "b.md");
    let mut r = req(&s.ws, &[&a], 30_000);
    r.also_report = vec![b.clone()];
    let resp = s.manager.check(instant, r).await.unwrap();
    let paths: Vec<_> = resp.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(paths, vec![a.clone(), b]);

    // The same through the pipeline's `Checker` view (an owned, 'static future).
    let checker: std::sync::Arc<dyn Checker> = std::sync::Arc::new(s.manager.clone());
    let sources = checker.sources_for(&a);
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].name, "instant");
    assert!(!sources[0].project_wide);
    let fut = checker.check(sources[0].id, req(&s.ws, &[&a], 30_000));
    let resp = tokio::spawn(fut).await.unwrap().unwrap();
    assert_eq!(resp.files[0].path, a);
    let err = checker
        .check(sources[0].id + 99, req(&s.ws, &[&a], 30_000))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no such plugin"), "{err}");
    s.token.cancel();
    s.manager.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_and_duplicate_plugins_are_not_loaded() {
    let mut cfg = Config::default();
    cfg.plugins.disabled = vec!["panicky".into()];
    // The same plugin twice under two file names: the second is a duplicate.
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp
        .path()
        .join(format!("libcopy.{}", std::env::consts::DLL_EXTENSION));
    std::fs::copy(fixture("instant"), &copy).unwrap();
    let s = start(&[fixture("instant"), copy.clone(), fixture("panic")], cfg).await;
    let rows = s.manager.status_rows();
    assert_eq!(row(&rows, "panicky").state, PluginState::Disabled);
    let dup = rows.iter().find(|r| r.path == copy).unwrap();
    assert_eq!(dup.state, PluginState::Refused);
    assert_eq!(dup.kind.as_deref(), Some("duplicate"));
    assert_eq!(s.manager.ids().len(), 1);
    s.token.cancel();
    s.manager.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_printing_to_stdout_does_not_disturb_the_protocol() {
    let s = start(&[fixture("instant")], Config::default()).await;
    let instant = id_of(&s.manager, "instant");
    let noisy = touch(&s.ws, "a.noisy");
    for _ in 0..3 {
        let resp = s
            .manager
            .check(instant, req(&s.ws, &[&noisy], 30_000))
            .await
            .unwrap();
        assert_eq!(resp.files[0].path, noisy);
    }
    assert_eq!(row(&s.manager.status_rows(), "instant").restarts, 0);
    s.token.cancel();
    s.manager.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_whose_create_fails_is_refused_with_its_message() {
    let mut cfg = Config::default();
    cfg.plugin.insert(
        "instant".into(),
        toml::from_str("extensions = \"txt\"").unwrap(),
    );
    let s = start(&[fixture("instant")], cfg).await;
    let rows = s.manager.status_rows();
    let r = row(&rows, "instant");
    assert_eq!(r.state, PluginState::Refused);
    assert_eq!(r.kind.as_deref(), Some("create-failed"));
    assert!(
        r.reason
            .as_deref()
            .unwrap()
            .contains("extensions must be a list"),
        "{r:?}"
    );
    assert!(s.manager.ids().is_empty());
    s.token.cancel();
    s.manager.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_cannot_be_restarted_is_broken_and_fails_checks_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join(format!(
        "libinstant-copy.{}",
        std::env::consts::DLL_EXTENSION
    ));
    std::fs::copy(fixture("instant"), &lib).unwrap();
    let s = start(std::slice::from_ref(&lib), Config::default()).await;
    let instant = id_of(&s.manager, "instant");
    // The library is replaced by garbage (a botched upgrade), then the host dies.
    let tmp_lib = tmp.path().join("garbage");
    std::fs::write(&tmp_lib, b"not a library").unwrap();
    std::fs::rename(&tmp_lib, &lib).unwrap();
    let pid = row(&s.manager.status_rows(), "instant").pid.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // A check sent before the actor noticed the death ends with HostDied; the next one
    // waits for the restart, which fails for good.
    let f = touch(&s.ws, "a.txt");
    let mut err = s
        .manager
        .check(instant, req(&s.ws, &[&f], 60_000))
        .await
        .unwrap_err();
    if matches!(err, PluginError::HostDied { .. }) {
        err = s
            .manager
            .check(instant, req(&s.ws, &[&f], 60_000))
            .await
            .unwrap_err();
    }
    let PluginError::Broken { reason, .. } = &err else {
        panic!("expected Broken, got {err:?}");
    };
    assert!(reason.contains("load error"), "{reason}");
    let rows = s.manager.status_rows();
    let r = row(&rows, "instant");
    assert_eq!(r.state, PluginState::Broken);
    assert_eq!(r.kind.as_deref(), Some("load-error"));
    // Later checks are refused at once with the same reason.
    let again = s
        .manager
        .check(instant, req(&s.ws, &[&f], 60_000))
        .await
        .unwrap_err();
    assert_eq!(again, err);
    s.token.cancel();
    s.manager.wait_stopped().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_on_one_host_run_concurrently() {
    let s = start(&[fixture("instant")], Config::default()).await;
    let instant = id_of(&s.manager, "instant");
    let slow = touch(&s.ws, "blocked.slow");
    let started = started_signal(&slow);
    let m = s.manager.clone();
    let ws = s.ws.clone();
    let blocked = tokio::spawn(async move { m.check(instant, req(&ws, &[&slow], 120_000)).await });
    tokio::time::timeout(std::time::Duration::from_secs(60), started)
        .await
        .expect("plugin never started the slow check")
        .unwrap();
    // While that check blocks inside the plugin, another is answered.
    instant_works(&s).await;
    assert!(!blocked.is_finished());
    blocked.abort();
    s.token.cancel();
    s.manager.wait_stopped().await;
}

/// The number of threads of process `pid`.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

/// A flood of checks at one host, spoken to in its own protocol: at most `MAX_CHECKS` run at
/// once (a thread each), the rest wait; a waiting check that is cancelled is answered at once
/// (without reaching the plugin), and as running checks end the waiting ones run.
#[test]
fn a_flood_of_checks_runs_a_bounded_number_at_once_and_answers_every_one() {
    use openfiles::plugin_host::child::MAX_CHECKS;
    use openfiles::plugin_host::protocol::{FromHost, ToHost};
    use std::io::Write;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_openfiles"))
        .arg("plugin-host")
        .arg(fixture("instant"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut input = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let output = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(output).lines() {
            let msg: FromHost = serde_json::from_str(&line.unwrap()).unwrap();
            if tx.send(msg).is_err() {
                return;
            }
        }
    });
    let mut send = |m: ToHost| {
        let mut line = serde_json::to_vec(&m).unwrap();
        line.push(b'\n');
        input.write_all(&line).unwrap();
    };
    let next = || rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(matches!(next(), FromHost::Hello { .. }));
    send(ToHost::Init {
        init: openfiles_plugin_api::Init {
            config: serde_json::Value::Null,
            state_dir: ws.join("state"),
            host_version: "test".into(),
        },
    });
    assert!(matches!(next(), FromHost::Ready { .. }));
    let idle = threads(pid);

    // Checks that block in the plugin until cancelled.
    let total = MAX_CHECKS + 8;
    for id in 1..=total as u64 {
        let slow = touch(&ws, &format!("{id}.slow"));
        send(ToHost::Check {
            request: CheckRequest {
                id,
                ..req(&ws, &[&slow], 120_000)
            },
        });
    }
    let start = Instant::now();
    while threads(pid) < idle + MAX_CHECKS {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "checks never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        threads(pid),
        idle + MAX_CHECKS,
        "{total} checks sent, at most {MAX_CHECKS} may run"
    );

    // A waiting check that is cancelled is answered at once, with the reason.
    send(ToHost::Cancel { id: total as u64 });
    match next() {
        FromHost::Result { id, error, .. } => {
            assert_eq!(id, total as u64);
            assert!(
                error.as_deref().unwrap_or_default().contains("cancelled"),
                "{error:?}"
            );
        }
        other => panic!("expected the cancelled check's result, got {other:?}"),
    }
    // Ending the running checks lets the waiting ones run; every check is answered once.
    let mut answered = std::collections::BTreeSet::from([total as u64]);
    for id in 1..total as u64 {
        send(ToHost::Cancel { id });
        let FromHost::Result { id, .. } = next() else {
            panic!("expected a result")
        };
        assert!(answered.insert(id), "{id} answered twice");
    }
    assert_eq!(answered.len(), total);
    send(ToHost::Shutdown);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// A program a plugin starts is recorded by the plugin's own copy of the gate, inside its
/// host; the check's answer carries it to the service, whose `status --json` lists it under
/// the workspace it ran for, with that workspace's trust.
#[test]
fn programs_a_plugin_starts_are_in_status() {
    let mut env = common::Env::new();
    env.plugin_path = Some(fixture("instant").into_os_string());
    std::fs::write(&env.config, "[plugin.instant]\nextensions = [\"spawn\"]\n").unwrap();
    let ws = env.workspace("ws");
    let file = ws.join("a.spawn");
    std::fs::write(&file, "x\n").unwrap();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let r = env.edited(&[&file]);
    assert!(env.wait(&[&file], r.ts, 60_000).complete);
    let st = env.status();
    let w = st.workspaces.iter().find(|w| w.root == ws).unwrap();
    let trust = if w.trusted { "trusted" } else { "untrusted" };
    assert!(
        w.ran.iter().any(|r| r.why == "fixture: spawn"
            && r.program.file_name().is_some_and(|n| n == "true")
            && r.args == ["spawned"]
            && r.trust == trust),
        "{:?}",
        w.ran
    );
    assert!(w.ran_total >= 1);
    // Not listed for no workspace: only the plugin host itself is.
    assert!(
        !st.ran.iter().any(|r| r.why == "fixture: spawn"),
        "{:?}",
        st.ran
    );
    svc.terminate();
}
