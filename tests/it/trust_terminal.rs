//! Trust boundaries, the terminal: a file name (the repository's), an agent name (a queue
//! line's) and a checker's message can carry escape sequences — here OSC 52, which sets the
//! clipboard of the terminal that prints it. Every output for people shows them escaped
//! (`\e`, `\x07`); JSON outputs stay exact. The review's full-screen view is pinned by a unit
//! test in `src/review/tui.rs`.

use crate::common;
use crate::common::git;

use std::path::Path;
use std::process::Output;

use common::{diagnostics, wait_until, Env};
use openfiles_wire::control::{Edited, EditedReply};

/// OSC 52: "put `hi` on the clipboard".
const OSC52: &str = "\x1b]52;c;aGk=\x07";
const SHOWN: &str = r"\e]52;c;aGk=\x07";

fn run(env: &Env, args: &[&str], cwd: &Path) -> Output {
    let out = env.command(args).current_dir(cwd).output().unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "openfiles {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether `text` shows the planted sequence escaped (at least `times` times) and holds no
/// control character but line ends; the complaint otherwise.
fn escaped(what: &str, text: &str, times: usize) -> Option<String> {
    let raw: Vec<char> = text
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect();
    if !raw.is_empty() {
        return Some(format!("{what} printed raw {raw:?}:\n{text}"));
    }
    (text.matches(SHOWN).count() < times)
        .then(|| format!("{what} does not show the sequence {times} time(s):\n{text}"))
}

#[test]
fn names_agents_and_messages_reach_the_terminal_escaped() {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    let ws = env.workspace("ws");
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("a.txt"), "first line\n").unwrap();
    git(&ws, &["add", "a.txt"]);
    git(&ws, &["commit", "-q", "-m", "init"]);
    let name = format!("evil{OSC52}.txt");
    let file = ws.join(&name);
    std::fs::write(&file, format!("error: bad{OSC52}thing\n")).unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let agent = format!("claude{OSC52}");
    let _: EditedReply = env
        .client()
        .call(&Edited {
            paths: vec![file.clone()],
            agent: Some(agent.clone()),
            ..Default::default()
        })
        .unwrap();
    wait_until("the file is checked", || {
        diagnostics(&ws).is_some_and(|d| d.files.get(&name).is_some_and(|e| e.checked_at != 0))
    });
    wait_until("the summary names the agent", || {
        let out = run(&env, &["status", "--short"], &ws);
        !out.stdout.is_empty()
    });

    // Every output is looked at before failing, so one run names all that print raw.
    let mut wrong = Vec::new();
    let short = run(&env, &["status", "--short"], &ws);
    wrong.extend(escaped(
        "status --short",
        &String::from_utf8_lossy(&short.stdout),
        1,
    ));
    let json = run(&env, &["status", "--short", "--json"], &ws);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["lastAgent"], agent.as_str(), "JSON stays exact");

    // The agent, the name and the message.
    let list = run(&env, &["review", "--list"], &ws);
    wrong.extend(escaped(
        "review --list",
        &String::from_utf8_lossy(&list.stdout),
        3,
    ));
    let json = run(&env, &["review", "--json"], &ws);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["groups"][0]["agent"], agent.as_str(), "JSON stays exact");

    let fix = run(&env, &["prompt", "fix"], &ws);
    wrong.extend(escaped(
        "prompt fix",
        &String::from_utf8_lossy(&fix.stdout),
        2,
    ));

    // The name, the message and the file's own line under the message.
    let check = run(&env, &["check", file.to_str().unwrap()], &ws);
    wrong.extend(escaped("check", &String::from_utf8_lossy(&check.stdout), 3));
    let json = run(&env, &["check", "--json", file.to_str().unwrap()], &ws);
    assert!(
        String::from_utf8_lossy(&json.stdout).contains(r"\u001b]52;c;aGk=\u0007"),
        "JSON stays exact"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
