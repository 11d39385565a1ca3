//! `exec` next to `send` input, and lines the shell refuses, in bash, zsh and fish (issue 6);
//! the order of input the PTY does not take at once, and bash's scratch file (issue 42).
//! Real shells in real PTYs behind the real socket.

use crate::common;

use std::time::Duration;

use common::claws::{TestServer, BOUND};
use serde_json::{json, Value};

const SHELLS: [&str; 3] = ["/bin/bash", "/usr/bin/zsh", "/usr/bin/fish"];

/// Wait until `poll` history holds a command line starting with each entry of `lines`.
async fn wait_history(s: &TestServer, shell: &str, lines: &[String]) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        let v = s
            .ok(json!({"cmd": "poll", "since": 0, "limit": 10000}))
            .await;
        let evs = v["events"].as_array().unwrap().clone();
        let missing: Vec<&String> = lines
            .iter()
            .filter(|l| {
                !evs.iter().any(|e| {
                    e["commandLine"]
                        .as_str()
                        .is_some_and(|c| c.starts_with(l.as_str()))
                })
            })
            .collect();
        if missing.is_empty() {
            return evs;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{shell}: never in poll history: {missing:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Keystrokes, a bracketed paste, a bare Enter and typed commands sent right before each
/// `exec`, on one connection, without waiting for their prompts: every `exec` must answer
/// with its own command's event. (The old rule counted prompts and took the lone prompt of
/// a pending comment line or bare Enter for the exec's "not run" answer.)
async fn interleaved(shell: &str) {
    let cfg = openfiles::config::ClawsConfig {
        history_events: 2000,
        poll_limit: 2000,
        ..Default::default()
    };
    let s = TestServer::with(cfg).await;
    let t = s.create(json!({"shellPath": shell})).await;
    // Wait for the integration before typing (the first prompt).
    s.exec(&t, "true").await;
    let mut c = s.conn().await;
    let mut typed = Vec::new();
    for i in 0..25 {
        let sends = [
            // A comment line: no command runs, a lone prompt follows (zsh runs it as a word).
            json!({"text": format!("#K{i}Z")}),
            // A bare Enter: a lone prompt.
            json!({"text": ""}),
            // Keystrokes in two pieces, then Enter.
            json!({"text": "ec", "newline": false}),
            json!({"text": format!("ho k{i}")}),
            // A bracketed paste of two lines, Enter sent apart.
            json!({"text": format!("echo p{i}\necho q{i}"), "paste": true}),
        ];
        for mut req in sends {
            req["cmd"] = json!("send");
            req["id"] = json!(t);
            let v = c.call(req).await;
            assert_eq!(v["ok"], true, "{shell}: {v}");
        }
        typed.push(format!("echo k{i}"));
        // (bash reports a pasted pair by its history entry, fish and zsh as typed.)
        typed.push(format!("echo p{i}"));
        let v = c
            .call(json!({"cmd": "exec", "id": t, "command": format!("echo x{i}"), "timeoutMs": 60000}))
            .await;
        assert_eq!(v["ok"], true, "{shell} round {i}: {v}");
        let ev = &v["event"];
        assert_eq!(ev["commandLine"], format!("echo x{i}"), "{shell}: {v}");
        assert_eq!(ev["output"], format!("x{i}\n"), "{shell}: {v}");
        assert_eq!(ev["exitCode"], 0, "{shell}: {v}");
        // And one that fails, right after a bare Enter.
        c.call(json!({"cmd": "send", "id": t, "text": ""})).await;
        let v = c
            .call(json!({"cmd": "exec", "id": t, "command": format!("sh -c 'exit {}'", i % 7 + 1), "timeoutMs": 60000}))
            .await;
        assert_eq!(v["event"]["exitCode"], i % 7 + 1, "{shell}: {v}");
    }
    // The typed commands are in history too, each once, with their own output.
    let evs = wait_history(&s, shell, &typed).await;
    for i in 0..25 {
        let k: Vec<&Value> = evs
            .iter()
            .filter(|e| e["commandLine"] == format!("echo k{i}"))
            .collect();
        assert_eq!(k.len(), 1, "{shell}: {k:?}");
        // (Keys typed ahead while it ran are echoed by the tty into its output.)
        let out = k[0]["output"].as_str().unwrap();
        assert!(out.contains(&format!("k{i}\n")), "{shell}: {out:?}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_between_sends_bash() {
    interleaved("/bin/bash").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_between_sends_zsh() {
    interleaved("/usr/bin/zsh").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_between_sends_fish() {
    interleaved("/usr/bin/fish").await;
}

/// Syntax errors and incomplete input answer at once (well inside the timeout) with the
/// shell's refusal, and the terminal stays usable.
async fn refused(shell: &str) {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": shell})).await;
    s.exec(&t, "true").await;
    for bad in ["if then", "echo )", "echo 'unclosed", "echo \"a\nb"] {
        let v = s
            .call(json!({"cmd": "exec", "id": t, "command": bad, "timeoutMs": 600000}))
            .await;
        let err = v["error"].as_str().unwrap_or_default();
        assert!(
            err.starts_with("the shell did not run the command: "),
            "{shell} {bad:?}: {v}"
        );
        // Only the shell's words, not the echo of the line.
        assert!(!err.contains(&format!("{bad}{bad}")), "{shell}: {err}");
        assert!(!err.contains("# "), "{shell}: no prompt in {err:?}");
        assert!(
            err.len() > "the shell did not run the command: ".len(),
            "{shell} {bad:?}: a reason is given: {v}"
        );
        // Usable right after: the refused line is gone (no continuation prompt, no
        // leftover text in the editor).
        let ev = s.exec(&t, "echo still-fine").await;
        assert_eq!(ev["output"], "still-fine\n", "{shell} after {bad:?}: {ev}");
        assert_eq!(ev["exitCode"], 0);
    }
    // A multi-line command that parses runs whole.
    let ev = s.exec(&t, "echo one\necho two").await;
    assert_eq!(ev["output"], "one\ntwo\n", "{shell}: {ev}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refused_lines_fail_fast_bash() {
    refused(SHELLS[0]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refused_lines_fail_fast_zsh() {
    refused(SHELLS[1]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refused_lines_fail_fast_fish() {
    refused(SHELLS[2]).await;
}

/// A login profile in HOME makes the shell a login shell: the terminal sees what the profile
/// exports, the user's rc still runs where the profile reads it, and `exec` still gets exit
/// codes (the integration survives the login files).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn login_profiles_are_read() {
    let s = TestServer::start().await;
    let home = s.home.path();
    // bash: ~/.profile (the usual Debian one reads ~/.bashrc).
    std::fs::write(
        home.join(".profile"),
        "export FROM_PROFILE=bash-profile\nif [ -n \"$BASH_VERSION\" ] && [ -f \"$HOME/.bashrc\" ]; then . \"$HOME/.bashrc\"; fi\n",
    )
    .unwrap();
    std::fs::write(home.join(".bashrc"), "myfn() { echo from-user-rc; }\n").unwrap();
    // zsh: .zprofile and .zlogin.
    std::fs::write(home.join(".zprofile"), "export FROM_PROFILE=zsh-zprofile\n").unwrap();
    std::fs::write(home.join(".zlogin"), "export FROM_ZLOGIN=yes\n").unwrap();
    std::fs::write(home.join(".zshrc"), "myfn() { echo from-user-rc }\n").unwrap();
    // fish: login-only settings live in `status is-login` blocks.
    std::fs::create_dir_all(home.join(".config/fish")).unwrap();
    std::fs::write(
        home.join(".config/fish/config.fish"),
        "if status is-login\n  set -gx FROM_PROFILE fish-login\nend\nfunction myfn; echo from-user-rc; end\n",
    )
    .unwrap();
    for (shell, want) in [
        ("/bin/bash", "bash-profile"),
        ("/usr/bin/zsh", "zsh-zprofile"),
        ("/usr/bin/fish", "fish-login"),
    ] {
        let t = s
            .create(json!({"shellPath": shell, "env": {"XDG_CONFIG_HOME": home.join(".config")}}))
            .await;
        let ev = s.exec(&t, "echo $FROM_PROFILE").await;
        assert_eq!(ev["output"], format!("{want}\n"), "{shell}: {ev}");
        let ev = s.exec(&t, "myfn").await;
        assert_eq!(ev["output"], "from-user-rc\n", "{shell}: {ev}");
        let ev = s.exec(&t, "sh -c 'exit 5'").await;
        assert_eq!(ev["exitCode"], 5, "{shell}: {ev}");
        let v = s
            .call(json!({"cmd": "exec", "id": t, "command": "echo )", "timeoutMs": 600000}))
            .await;
        assert!(
            v["error"]
                .as_str()
                .unwrap_or_default()
                .starts_with("the shell did not run the command"),
            "{shell}: {v}"
        );
        // The profile's variable is in the terminal itself, not only in `exec`.
        s.ok(json!({"cmd": "send", "id": t, "text": "echo seen-$FROM_PROFILE-here"}))
            .await;
        s.wait_log(&t, &format!("seen-{want}-here")).await;
    }
    let z = s.create(json!({"shellPath": "/usr/bin/zsh"})).await;
    assert_eq!(
        s.exec(&z, "echo $FROM_ZLOGIN ${ZDOTDIR:-unset}").await["output"],
        format!("yes {}\n", home.display()),
        "zsh: .zlogin read, ZDOTDIR restored"
    );
    // Without a profile bash stays a plain interactive shell reading ~/.bashrc.
    std::fs::remove_file(home.join(".profile")).unwrap();
    let b = s.create(json!({"shellPath": "/bin/bash"})).await;
    let ev = s.exec(&b, "echo ${FROM_PROFILE:-none}; myfn").await;
    assert_eq!(ev["output"], "none\nfrom-user-rc\n", "{ev}");
    s.stop().await;
}

/// `exec` right after a `send`-typed command that is still running: the exec's keys wait in
/// the tty (or the exec waits for the prompt) and it still answers with its own command.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_right_after_a_running_send() {
    let s = TestServer::start().await;
    for shell in SHELLS {
        let t = s.create(json!({"shellPath": shell})).await;
        s.exec(&t, "true").await;
        let mut c = s.conn().await;
        for i in 0..3 {
            let v = c
                .call(json!({"cmd": "send", "id": t, "text": format!("sleep 0.3; echo slept{i}")}))
                .await;
            assert_eq!(v["ok"], true);
            let v = c
                .call(json!({"cmd": "exec", "id": t, "command": format!("echo after{i}"), "timeoutMs": 60000}))
                .await;
            assert_eq!(v["event"]["output"], format!("after{i}\n"), "{shell}: {v}");
            assert_eq!(v["event"]["exitCode"], 0, "{shell}: {v}");
        }
        wait_history(
            &s,
            shell,
            &(0..3)
                .map(|i| format!("sleep 0.3; echo slept{i}"))
                .collect::<Vec<_>>(),
        )
        .await;
    }
    s.stop().await;
}

/// Several clients exec on one terminal at once: each gets its own command's event, with
/// only its own output.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_execs_take_turns() {
    let s = std::sync::Arc::new(TestServer::start().await);
    for shell in SHELLS {
        let t = s.create(json!({"shellPath": shell})).await;
        s.exec(&t, "true").await;
        let mut tasks = Vec::new();
        for i in 0..8 {
            let (s, t) = (s.clone(), t.clone());
            tasks.push(tokio::spawn(async move {
                let v = s
                    .call(json!({"cmd": "exec", "id": t, "command": format!("echo c{i}; sleep 0.05"), "timeoutMs": 60000}))
                    .await;
                (i, v)
            }));
        }
        for task in tasks {
            let (i, v) = task.await.unwrap();
            assert_eq!(v["event"]["output"], format!("c{i}\n"), "{shell}: {v}");
            assert_eq!(
                v["event"]["commandLine"],
                format!("echo c{i}; sleep 0.05"),
                "{shell}"
            );
        }
    }
    match std::sync::Arc::try_unwrap(s) {
        Ok(s) => {
            s.stop().await;
        }
        Err(_) => panic!("server still shared"),
    }
}

/// bash reads each command's line back through its scratch file (`.claws/shell/.hist.<pid>`),
/// which it keeps open and appends to instead of rewriting it per command (ext4 flushes a
/// rewritten file when it is closed: ~3 ms before every command's output). Every command
/// still reports its own line, and past the script's bound the file starts afresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bash_appends_command_lines_to_its_scratch_file() {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    let ev = s.exec(&t, "echo $$").await;
    let pid = ev["output"].as_str().unwrap().trim().to_owned();
    let scratch = s.root().join(".claws/shell").join(format!(".hist.{pid}"));
    for i in 0..5 {
        let line = format!("echo line{i} | tr l L");
        let ev = s.exec(&t, &line).await;
        assert_eq!(ev["commandLine"], line.as_str(), "{ev}");
        assert_eq!(ev["output"], format!("Line{i}\n"), "{ev}");
    }
    let kept = std::fs::read_to_string(&scratch).unwrap();
    for i in 0..5 {
        assert!(kept.contains(&format!("echo line{i} | tr l L")), "{kept}");
    }
    // The script's own count past its bound: the next prompt starts the file afresh.
    s.exec(&t, "__claws_hn=70000").await;
    let ev = s.exec(&t, "echo after").await;
    assert_eq!(ev["commandLine"], "echo after", "{ev}");
    assert_eq!(ev["output"], "after\n", "{ev}");
    let kept = std::fs::read_to_string(&scratch).unwrap();
    assert!(
        !kept.contains("line0") && kept.contains("echo after"),
        "{kept}"
    );
    s.stop().await;
}

/// Input the PTY does not take at once (150 KB: more than its 64 KiB of buffers hold) is finished by the
/// writer task, and sends behind it wait their turn: a program reading it all sees every
/// line once, in the order sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn input_larger_than_the_pty_takes_keeps_its_order() {
    let s = TestServer::start().await;
    let t = s.create(json!({"shellPath": "/bin/bash"})).await;
    s.exec(&t, "true").await;
    let out = s.root().join("got.txt");
    let mut c = s.conn().await;
    let v = c
        .call(
            json!({"cmd": "send", "id": t, "text": format!("stty -echo; cat > {}", out.display())}),
        )
        .await;
    assert_eq!(v["ok"], true, "{v}");
    let block: Vec<String> = (0..600)
        .map(|i| format!("{i:04} {}", "b".repeat(70)))
        .collect();
    let mut sent = block.clone();
    let v = c
        .call(json!({"cmd": "send", "id": t, "text": block.join("\n"), "paste": false}))
        .await;
    assert_eq!(v["ok"], true, "{v}");
    for i in 0..20 {
        let line = format!("tail {i}");
        let v = c.call(json!({"cmd": "send", "id": t, "text": line})).await;
        assert_eq!(v["ok"], true, "{v}");
        sent.push(format!("tail {i}"));
    }
    // Ctrl-D ends cat's input; the next command shows it finished.
    c.call(json!({"cmd": "send", "id": t, "text": "\u{4}", "newline": false}))
        .await;
    c.call(json!({"cmd": "send", "id": t, "text": "stty echo; echo CAT_$((1+1))"}))
        .await;
    s.wait_log(&t, "CAT_2").await;
    let got = std::fs::read_to_string(&out).unwrap();
    let got: Vec<&str> = got.lines().collect();
    assert_eq!(got, sent, "every line once, in order");
    s.stop().await;
}
