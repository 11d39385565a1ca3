//! Claws claws/1 over the real socket with real shells in real PTYs (issue 6).

use crate::common;

use std::time::Duration;

use common::claws::{Conn, TestServer, BOUND};
use openfiles::config::ClawsConfig;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn envelope_and_error_strings() {
    let s = TestServer::start().await;
    let v = s.ok(json!({"id": 1, "cmd": "ping"})).await;
    assert!(v["serverTime"].as_u64().unwrap() > 0);
    assert_eq!(
        (v["id"].clone(), v["rid"].clone(), v["protocol"].clone()),
        (json!(1), json!(1), json!("claws/1"))
    );
    // No id in the request: none in the answer.
    let v = s.call(json!({"cmd": "ping"})).await;
    assert!(v.get("id").is_none() && v.get("rid").is_none(), "{v}");
    let v = s.call(json!({"id": "a", "cmd": "xyz"})).await;
    assert_eq!(v["error"], "unknown cmd: xyz");
    assert_eq!(v["rid"], "a");
    let v = s
        .call(json!({"id": 2, "cmd": "list", "protocol": "claws/9"}))
        .await;
    assert_eq!(
        v["error"],
        "incompatible protocol version (server: claws/1, client: claws/9)"
    );
    // The last `id` wins, echoed as id and rid.
    let mut c = s.conn().await;
    c.send_raw(b"{\"id\":7,\"cmd\":\"show\",\"id\":\"99\"}\n")
        .await;
    let v = c.answer().await;
    assert_eq!(v["error"], "unknown terminal id 99");
    assert_eq!(v["rid"], "99");
    // bad json keeps the connection.
    c.send_raw(b"{nope\n").await;
    let v = c.answer().await;
    assert_eq!(v["error"], "bad json");
    assert!(v.get("rid").is_none());
    assert_eq!(c.call(json!({"id": 3, "cmd": "ping"})).await["ok"], true);
    for cmd in ["show", "send", "exec", "readLog", "resize"] {
        let v = s
            .call(json!({"id": "42", "cmd": cmd, "command": "true"}))
            .await;
        assert_eq!(v["error"], "unknown terminal id 42", "{cmd}");
    }
    let v = s.ok(json!({"id": 4, "cmd": "close", "id": "42"})).await;
    assert_eq!(v["alreadyClosed"], true);
    // readLog on an unwrapped terminal.
    let t = s.create(json!({"wrapped": false})).await;
    let v = s.call(json!({"cmd": "readLog", "id": t})).await;
    assert_eq!(
        v["error"],
        format!("terminal {t} is not wrapped (no log available)")
    );
    let v = s.ok(json!({"id": 5, "cmd": "show", "id": t})).await;
    assert_eq!(v["rid"], t);
    let v = s.ok(json!({"cmd": "introspect"})).await;
    assert_eq!(v["nodePty"]["loaded"], true);
    assert_eq!(v["terminals"], 1);
    assert_eq!(v["servers"][0]["socket"], s.sock().to_str().unwrap());
    assert_eq!(v["servers"][0]["workspace"], s.root().to_str().unwrap());
    assert!(v["uptime_ms"].is_u64());
    // create answers with the new terminal id in `id` and the request's in `rid`.
    let v = s
        .ok(json!({"id": 77, "cmd": "create", "wrapped": true, "env": s.env()}))
        .await;
    assert_eq!(v["rid"], 77);
    assert!(v["id"].is_string());
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn answers_come_in_request_order() {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    let mut c = s.conn().await;
    // A slow exec first, then quick requests: answers must still come in order.
    c.send(&json!({"id": 0, "cmd": "exec", "terminalId": t, "command": "sleep 0.3; echo slow", "timeoutMs": 60000})).await;
    for i in 1..50 {
        c.send(&json!({"id": i, "cmd": if i % 2 == 0 { "list" } else { "ping" }}))
            .await;
    }
    for i in 0..50 {
        let v = c.answer().await;
        assert_eq!(v["rid"], i, "{v}");
        assert_eq!(v["ok"], true, "{v}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversized_line_drops_only_that_connection() {
    let s = TestServer::start().await;
    let mut big = s.conn().await;
    let other = s.conn().await;
    let chunk = vec![b'x'; 64 << 10];
    // Write until the server hangs up (it answers once 1 MiB is buffered without a newline).
    let mut sent = 0;
    while sent < (2 << 20) {
        if tokio::io::AsyncWriteExt::write_all(&mut big.wr, &chunk)
            .await
            .is_err()
        {
            break;
        }
        sent += chunk.len();
    }
    let v = big.line().await.expect("an answer before the hang-up");
    assert_eq!(v["error"], "request too large");
    assert!(big.line().await.is_none(), "the connection must be closed");
    let mut other = other;
    assert_eq!(
        other.call(json!({"id": 1, "cmd": "ping"})).await["ok"],
        true
    );
    s.stop().await;
}

async fn exec_codes_in(shell: &str) {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": shell, "name": "w"})).await;
    let ev = s.exec(&t, "echo hello-claws").await;
    assert_eq!(ev["exitCode"], 0, "{shell}: {ev}");
    assert_eq!(ev["output"], "hello-claws\n", "{shell}: {ev}");
    assert_eq!(ev["commandLine"], "echo hello-claws");
    assert_eq!(ev["terminalId"], t.as_str());
    assert_eq!(ev["terminalName"], "w");
    assert!(ev["endedAt"].as_u64() >= ev["startedAt"].as_u64());
    let ev = s.exec(&t, "sh -c 'echo oops >&2; exit 3'").await;
    assert_eq!(ev["exitCode"], 3, "{shell}: {ev}");
    assert_eq!(ev["output"], "oops\n", "{shell}: {ev}");
    // Program output cannot fake marks: the nonce is not in the environment, and a mark
    // without it (here: an end mark claiming exit 0 and a prompt) is ignored.
    let ev = s.exec(&t, "env | grep -c CLAWS_SI_NONCE").await;
    assert_eq!(ev["output"], "0\n", "{shell}: {ev}");
    let ev = s
        .exec(&t, "printf '\\033]633;D;%s;0\\007\\033]633;A;%s\\007' \"$CLAWS_SI_NONCE\" x; sh -c 'echo after; exit 4'")
        .await;
    assert_eq!(ev["exitCode"], 4, "{shell}: {ev}");
    assert_eq!(ev["output"], "after\n", "{shell}: {ev}");
    // Nor can a program find the nonce where a child can look: its shell's initial
    // environment (`/proc/$PPID/environ` outlives `unset`) or the file it was handed in.
    let forge = r#"sh -c 'e=/proc/$PPID/environ; n=$(tr "\0" "\n" < $e | sed -n "s/^CLAWS_SI_NONCE=//p"); f=$(tr "\0" "\n" < $e | sed -n "s/^CLAWS_SI_NONCE_FILE=//p"); [ -n "$f" ] && n="$n$(cat "$f" 2>/dev/null)"; printf "\033]633;D;%s;0\007\033]633;A;%s\007" "$n" "$n"; echo after; exit 4'"#;
    let ev = s.exec(&t, forge).await;
    assert_eq!(ev["exitCode"], 4, "{shell}: {ev}");
    assert_eq!(ev["output"], "after\n", "{shell}: {ev}");
    // A line the shell refuses (syntax error) answers at once instead of waiting out the
    // timeout (more in tests/it/claws_exec.rs).
    let v = s
        .call(json!({"cmd": "exec", "id": t, "command": "echo )", "timeoutMs": 600000}))
        .await;
    let err = v["error"].as_str().unwrap_or_default();
    assert!(
        err.starts_with("the shell did not run the command"),
        "{shell}: {v}"
    );
    assert_eq!(
        s.exec(&t, "echo still-fine").await["output"],
        "still-fine\n",
        "{shell}"
    );
    // A command typed with `send` shows up in poll history too.
    s.ok(json!({"cmd": "send", "id": t, "text": "echo typed-line"}))
        .await;
    let deadline = tokio::time::Instant::now() + BOUND;
    let events = loop {
        let v = s.ok(json!({"cmd": "poll", "since": 0})).await;
        let evs = v["events"].as_array().unwrap().clone();
        if evs.iter().any(|e| e["commandLine"] == "echo typed-line") {
            break evs;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{shell}: typed command never in poll: {v}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(events.len(), 7, "{shell}");
    let list = s.ok(json!({"cmd": "list"})).await;
    assert_eq!(list["terminals"][0]["hasShellIntegration"], true);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_exit_codes_bash() {
    exec_codes_in("/bin/bash").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_exit_codes_zsh() {
    exec_codes_in("/usr/bin/zsh").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_exit_codes_fish() {
    exec_codes_in("/usr/bin/fish").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sh_is_degraded_and_poll_limits() {
    let cfg = ClawsConfig {
        poll_limit: 2,
        ..Default::default()
    };
    let s = TestServer::with(cfg).await;
    let t = s.create(json!({"shellPath": "/bin/sh"})).await;
    let v = s
        .ok(json!({"cmd": "exec", "id": t, "command": "true", "timeoutMs": 3000}))
        .await;
    assert_eq!(v["degraded"], true);
    assert!(v["note"].as_str().unwrap().contains("no shell integration"));
    let b = s.create(json!({"shellPath": "/bin/bash"})).await;
    for i in 0..3 {
        s.exec(&b, &format!("echo {i}")).await;
    }
    let v = s.ok(json!({"cmd": "poll", "since": 0, "limit": 50})).await;
    assert_eq!(v["limit"], 2);
    assert_eq!(v["truncated"], true);
    assert_eq!(v["events"].as_array().unwrap().len(), 2);
    assert_eq!(v["events"][1]["output"], "2\n");
    assert_eq!(v["cursor"], v["events"][1]["seq"]);
    let v = s.ok(json!({"cmd": "poll", "since": v["cursor"]})).await;
    assert_eq!(v["events"].as_array().unwrap().len(), 0);
    assert_eq!(v["truncated"], false);
    // The timeout answer.
    let v = s
        .call(json!({"cmd": "exec", "id": b, "command": "sleep 5", "timeoutMs": 200}))
        .await;
    assert_eq!(v["error"], "exec timeout after 200ms");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn input_sent_right_after_create_arrives() {
    let s = TestServer::start().await;
    for shell in ["/bin/bash", "/usr/bin/zsh", "/usr/bin/fish", "/bin/sh"] {
        let mut c = s.conn().await;
        c.send(
            &json!({"id": 1, "cmd": "create", "wrapped": true, "shellPath": shell, "env": s.env()}),
        )
        .await;
        let v = c.answer().await;
        let t = v["id"].as_str().unwrap().to_owned();
        c.send(&json!({"id": 2, "cmd": "send", "id": t, "text": "echo early-\"4\"\"2\"-out"}))
            .await;
        assert_eq!(c.answer().await["ok"], true);
        s.wait_log(&t, "early-42-out").await;
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tui_runs_and_exec_is_degraded_meanwhile() {
    let s = TestServer::start().await;
    let t = s
        .create(json!({"shellPath": "/bin/bash", "cols": 100, "rows": 30}))
        .await;
    let ev = s.exec(&t, "stty size").await;
    assert_eq!(ev["output"], "30 100\n");
    let f = s.root().join("tui.txt");
    std::fs::write(&f, "line-one\n").unwrap();
    s.ok(json!({"cmd": "send", "id": t, "text": format!("vi {}", f.display())}))
        .await;
    s.wait_log(&t, "line-one").await;
    // vi is in the foreground: exec must not type into it.
    let v = s
        .ok(json!({"cmd": "exec", "id": t, "command": "true", "timeoutMs": 2000}))
        .await;
    assert_eq!(v["degraded"], true, "{v}");
    s.ok(json!({"cmd": "send", "id": t, "text": "\x1b:q!", "newline": true}))
        .await;
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let v = s.ok(json!({"cmd": "poll"})).await;
        if v["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["commandLine"].as_str().unwrap_or("").starts_with("vi "))
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "vi never ended: {v}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let raw = s
        .ok(json!({"cmd": "readLog", "id": t, "strip": false, "offset": 0}))
        .await;
    assert!(
        raw["bytes"].as_str().unwrap().contains("\x1b[?1049h"),
        "vi switched to the alternate screen"
    );
    assert_eq!(s.exec(&t, "echo back").await["output"], "back\n");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forty_megabytes_with_offsets_and_front_drop() {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    // 400 000 lines of 100 characters; the PTY turns \n into \r\n: 102 bytes each.
    let ev = s
        .exec(
            &t,
            "awk 'BEGIN{for(i=0;i<400000;i++) printf \"%09d%091d\\n\", i, 0}'",
        )
        .await;
    assert_eq!(ev["exitCode"], 0);
    let v = s
        .ok(json!({"cmd": "readLog", "id": t, "offset": 0, "limit": 4096, "strip": false}))
        .await;
    let total = v["totalSize"].as_u64().unwrap();
    let start = v["bufferStart"].as_u64().unwrap();
    assert!(total > 40_800_000, "{total}");
    assert_eq!(
        v["offset"].as_u64().unwrap(),
        start,
        "reading before the ring start starts at it"
    );
    assert!(
        total - start <= 8 << 20 && total - start > (8 << 20) - 4096,
        "ring keeps 8 MiB: {start} {total}"
    );
    // Line k sits at base + 102*k: every page agrees on the same base.
    let mut bases = Vec::new();
    for off in [start, start + 1_000_003, total - 3_000_000, total - 300_000] {
        let v = s
            .ok(json!({"cmd": "readLog", "id": t, "offset": off, "limit": 1024, "strip": false}))
            .await;
        assert_eq!(v["offset"].as_u64().unwrap(), off);
        let text = v["bytes"].as_str().unwrap();
        let nl = text.find("\r\n").unwrap() + 2;
        let k: u64 = text[nl..nl + 9].parse().unwrap();
        bases.push(off + nl as u64 - 102 * k);
    }
    assert!(bases.windows(2).all(|w| w[0] == w[1]), "{bases:?}");
    // Paging by nextOffset walks without gaps.
    let v = s
        .ok(json!({"cmd": "readLog", "id": t, "offset": total - 2_000_000, "strip": false}))
        .await;
    assert_eq!(
        v["nextOffset"].as_u64().unwrap() - v["offset"].as_u64().unwrap(),
        512 << 10
    );
    assert_eq!(v["truncated"], true);
    // Tail without an offset ends at totalSize.
    let v = s.ok(json!({"cmd": "readLog", "id": t, "limit": 100})).await;
    assert_eq!(v["nextOffset"], v["totalSize"]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn utf8_never_split_at_page_edges() {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    let ev = s
        .exec(&t, "for i in $(seq 1 300); do printf 'a€😀é'; done; echo")
        .await;
    let want: String = "a€😀é".repeat(300);
    assert_eq!(ev["output"].as_str().unwrap().trim_end(), want);
    let total = s.ok(json!({"cmd": "readLog", "id": t})).await["totalSize"]
        .as_u64()
        .unwrap();
    for limit in [4u64, 5, 6, 7, 9] {
        let mut off = 0;
        let mut all = String::new();
        while off < total {
            let v = s.ok(json!({"cmd": "readLog", "id": t, "offset": off, "limit": limit, "strip": false})).await;
            let b = v["bytes"].as_str().unwrap();
            assert!(!b.contains('\u{fffd}'), "split character at {off}/{limit}");
            assert_eq!(
                v["offset"].as_u64().unwrap(),
                off,
                "pages follow each other"
            );
            let next = v["nextOffset"].as_u64().unwrap();
            assert!(next > off);
            assert_eq!(b.len() as u64, next - off);
            all.push_str(b);
            off = next;
        }
        assert!(all.contains(&want), "limit {limit}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hundred_clients_at_once() {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    let sock = s.sock();
    let mut tasks = Vec::new();
    for i in 0..100 {
        let sock = sock.clone();
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::open(&sock).await;
            for j in 0..10 {
                let v = c.call(json!({"id": j, "cmd": "list"})).await;
                assert_eq!(v["rid"], j);
                assert_eq!(v["terminals"].as_array().unwrap().len(), 1);
            }
            let v = c.call(json!({"id": "s", "cmd": "send", "id": t, "text": format!("# client-{i}"), "newline": false})).await;
            assert_eq!(v["ok"], true);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_uid_is_refused() {
    let s = TestServer::start().await;
    let bin = env!("CARGO_BIN_EXE_openfiles");
    let sock = s.sock();
    let ping = r#"{"id":1,"cmd":"ping"}"#;
    // Open the filesystem path wide so only the peer-credential check stands in the way.
    use std::os::unix::fs::PermissionsExt;
    for p in [s.dir.path().to_owned(), s.root().join(".claws")] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
    // The server's check: a raw client of another uid (the openfiles client refuses a socket
    // of another uid by itself, below).
    let raw = format!(
        "import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect({:?})\ntry:\n  s.sendall(b'{ping}\\n')\nexcept OSError:\n  pass\nprint(s.makefile().readline())",
        sock.to_str().unwrap()
    );
    let run = move |as_nobody: bool| {
        let command = || {
            if as_nobody {
                let mut c = std::process::Command::new("setpriv");
                c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
                c
            } else {
                std::process::Command::new("env")
            }
        };
        let raw_out = command()
            .args(["/usr/bin/python3", "-c", &raw])
            .output()
            .unwrap();
        let cli = command()
            .args([
                bin,
                "claws",
                "--claws-socket",
                sock.to_str().unwrap(),
                "raw",
                ping,
            ])
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&raw_out.stdout).into_owned(),
            String::from_utf8_lossy(&cli.stdout).into_owned(),
            String::from_utf8_lossy(&cli.stderr).into_owned(),
        )
    };
    let (ours, other) = tokio::task::spawn_blocking(move || (run(false), run(true)))
        .await
        .unwrap();
    assert!(ours.0.contains("\"ok\":true"), "same uid works: {ours:?}");
    assert!(ours.1.contains("\"ok\":true"), "same uid works: {ours:?}");
    assert!(other.0.contains("refused"), "other uid refused: {other:?}");
    assert!(!other.0.contains("\"ok\":true"), "{other:?}");
    assert!(
        other
            .2
            .contains("belongs to uid 0, not you; refusing to talk to it"),
        "{other:?}"
    );
    assert!(other.1.is_empty(), "{other:?}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_keeps_ids_unique_and_socket_rules() {
    let s = TestServer::start().await;
    let a = s.create(json!({})).await;
    let b = s.create(json!({"wrapped": false})).await;
    // A second server on the same folder refuses while the first answers.
    let cfg = ClawsConfig::default();
    let err = openfiles_claws::ClawsServer::start(s.dir.path(), &cfg, Default::default())
        .await
        .err()
        .expect("second server must refuse");
    assert!(err.to_string().contains("already answers"), "{err}");
    let sock = s.sock();
    let s_home = tempfile::tempdir().unwrap();
    let dir = s.stop().await;
    assert!(!sock.exists(), "stop removes the socket");
    // A stale socket file (nobody listening) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let token = tokio_util::sync::CancellationToken::new();
    let server = openfiles_claws::ClawsServer::start(dir.path(), &cfg, token.clone())
        .await
        .unwrap();
    let s2 = TestServer {
        home: s_home,
        dir,
        server: Some(server),
        token,
    };
    let c = s2.create(json!({})).await;
    let ids: Vec<u64> = [&a, &b, &c].iter().map(|x| x.parse().unwrap()).collect();
    assert!(ids[2] > ids[1] && ids[1] > ids[0], "{ids:?}");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&s2.sock()), 0o600);
    assert_eq!(mode(&s2.root().join(".claws")), 0o700);
    assert_eq!(
        std::fs::read_to_string(s2.root().join(".claws/.gitignore")).unwrap(),
        "*\n"
    );
    s2.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn close_exit_limit_env_and_unwrapped_log() {
    let cfg = ClawsConfig {
        max_terminals: 2,
        ..Default::default()
    };
    let s = TestServer::with(cfg).await;
    let t = s
        .create(json!({"shellPath": "/bin/bash", "env": {"FOO": "bar"}}))
        .await;
    let ev = s
        .exec(&t, "echo $TERM $CLAWS_TERMINAL_ID $CLAWS_WRAPPED $FOO $PWD")
        .await;
    assert_eq!(
        ev["output"],
        format!("xterm-256color {t} 1 bar {}\n", s.root().display())
    );
    let u = s
        .create(json!({"shellPath": "/bin/bash", "wrapped": false}))
        .await;
    let v = s.call(json!({"cmd": "create"})).await;
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("terminal limit reached"),
        "{v}"
    );
    let ev = s
        .exec(&u, "echo to-the-log; echo ${CLAWS_WRAPPED-none}")
        .await;
    assert_eq!(ev["output"], "to-the-log\nnone\n");
    let list = s.ok(json!({"cmd": "list"})).await;
    let log = list["terminals"][1]["logPath"].as_str().unwrap().to_owned();
    assert_eq!(
        log,
        s.root()
            .join(format!(".claws/terminals/{u}.log"))
            .to_str()
            .unwrap()
    );
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("to-the-log"));
    // A shell that exits on its own is reported and stays readable until closed.
    s.ok(json!({"cmd": "send", "id": t, "text": "echo bye-now; exit 3"}))
        .await;
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let list = s.ok(json!({"cmd": "list"})).await;
        let e = &list["terminals"][0];
        if e["status"] == "exited" {
            assert_eq!(e["exitCode"], 3);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{list}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.wait_log(&t, "bye-now").await;
    let v = s.call(json!({"cmd": "send", "id": t, "text": "x"})).await;
    assert!(v["error"].as_str().unwrap().contains("exited"), "{v}");
    // Exited terminals do not count against the limit.
    let w = s.create(json!({"shellPath": "/bin/bash"})).await;
    // close hangs up the process group.
    let pid = s.ok(json!({"cmd": "list"})).await["terminals"][2]["pid"]
        .as_i64()
        .unwrap() as i32;
    assert_eq!(
        s.ok(json!({"cmd": "close", "id": w})).await["alreadyClosed"],
        false
    );
    assert_eq!(
        s.ok(json!({"cmd": "close", "id": w})).await["alreadyClosed"],
        true
    );
    let deadline = tokio::time::Instant::now() + BOUND;
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "shell {pid} survived close"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn users_rc_files_keep_working() {
    let s = TestServer::start().await;
    let home = s.home.path();
    std::fs::write(
        home.join(".bashrc"),
        "myfn() { echo from-user-rc; }\nPROMPT_COMMAND='USER_PC=ran'\n",
    )
    .unwrap();
    std::fs::write(home.join(".zshenv"), "export ZSHENV_SEEN=yes\n").unwrap();
    std::fs::write(home.join(".zshrc"), "myfn() { echo from-user-rc }\n").unwrap();
    std::fs::create_dir_all(home.join(".config/fish")).unwrap();
    std::fs::write(
        home.join(".config/fish/config.fish"),
        "function myfn; echo from-user-rc; end\n",
    )
    .unwrap();
    for shell in ["/bin/bash", "/usr/bin/zsh", "/usr/bin/fish"] {
        let t = s
            .create(json!({"shellPath": shell, "env": {"XDG_CONFIG_HOME": home.join(".config")}}))
            .await;
        let ev = s.exec(&t, "myfn").await;
        assert_eq!(
            (ev["output"].as_str(), ev["exitCode"].as_i64()),
            (Some("from-user-rc\n"), Some(0)),
            "{shell}"
        );
    }
    let b = s.create(json!({"shellPath": "/bin/bash"})).await;
    s.exec(&b, "true").await;
    assert_eq!(
        s.exec(&b, "echo $USER_PC").await["output"],
        "ran\n",
        "the user's PROMPT_COMMAND still runs"
    );
    let z = s.create(json!({"shellPath": "/usr/bin/zsh"})).await;
    let ev = s.exec(&z, "echo $ZSHENV_SEEN ${ZDOTDIR:-unset}").await;
    assert_eq!(
        ev["output"],
        format!("yes {}\n", home.display()),
        "zsh: .zshenv read, ZDOTDIR restored"
    );
    s.stop().await;
}

/// Input for a program that does not read it stays bounded: past
/// `openfiles_claws::MAX_QUEUED_INPUT` queued bytes a `send` is refused with the reason (it
/// was an unbounded queue: a flood grew memory without limit), and the server serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_input_nobody_reads_is_refused_not_buffered() {
    let s = TestServer::start().await;
    let t = s.create(json!({"wrapped": true})).await;
    // Raw mode: the kernel then holds what the program does not read instead of dropping it
    // (canonical mode discards past its 4 KiB line), so the writes block and input queues.
    s.ok(json!({"cmd": "send", "id": t, "text": "stty raw -echo; echo RAW_$((6*7)); sleep 600"}))
        .await;
    s.wait_log(&t, "RAW_42").await;
    let chunk = "x".repeat(900_000);
    let (mut accepted, mut refused) = (0usize, None);
    for _ in 0..60 {
        let v = s
            .call(json!({"cmd": "send", "id": t, "text": chunk, "newline": false, "paste": false}))
            .await;
        if v["ok"] == true {
            accepted += 1;
        } else {
            refused = v["error"].as_str().map(str::to_owned);
            break;
        }
    }
    let why = refused.expect("the flood was never refused");
    assert!(why.contains("has not read"), "{why}");
    assert!(
        accepted * chunk.len() <= openfiles_claws::MAX_QUEUED_INPUT + 2 * chunk.len(),
        "{accepted} chunks accepted"
    );
    s.ok(json!({"cmd": "list"})).await;
    s.ok(json!({"cmd": "close", "id": t})).await;
    s.stop().await;
}
