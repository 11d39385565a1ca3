//! The human side, headless (issue #21): `openfiles review` driven in a real terminal (tmux)
//! against a running service with a real plugin host (the `instant` fixture reports an error
//! or a warning for each line starting `error: ` / `warning: `), plus `pause`/`resume`,
//! `session add-git`, `status --short` and `prompt`.

use crate::common;
use crate::common::git;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::tmux::Tmux;
use common::{diagnostics, wait_until, Env};
use openfiles_wire::control::{Edited, EditedReply};

fn run(env: &Env, args: &[&str], cwd: &Path) -> Output {
    let out = env.command(args).current_dir(cwd).output().unwrap();
    assert!(
        out.status.success(),
        "openfiles {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `edited` by `agent`.
fn edited_by(env: &Env, agent: &str, paths: &[&Path]) -> EditedReply {
    env.client()
        .call(&Edited {
            paths: paths.iter().map(|p| p.to_path_buf()).collect(),
            agent: Some(agent.into()),
            ..Default::default()
        })
        .unwrap()
}

/// Wait until every one of `keys` is in `diagnostics.json` and checked.
fn wait_checked(ws: &Path, keys: &[&str]) {
    wait_until("the files are checked", || {
        diagnostics(ws).is_some_and(|d| {
            keys.iter()
                .all(|k| d.files.get(*k).is_some_and(|e| e.checked_at != 0))
        })
    });
}

/// An environment whose service loads the `instant` fixture (it handles `.txt`).
fn env_with_plugin() -> Env {
    let mut env = Env::new();
    env.plugin_path = Some(common::plugins::fixture("instant").into_os_string());
    env
}

/// A git repository with `a.txt` committed; then `a.txt` gains two errors and a warning,
/// `b.txt` is new and clean, `c.txt` has one warning.
fn repo(env: &Env) -> PathBuf {
    let ws = env.workspace("ws");
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("a.txt"), "first line\n").unwrap();
    git(&ws, &["add", "a.txt"]);
    git(&ws, &["commit", "-q", "-m", "init"]);
    std::fs::write(
        ws.join("a.txt"),
        "first line\nerror: bad thing one\nwarning: odd thing\nerror: bad thing two\n",
    )
    .unwrap();
    std::fs::write(ws.join("b.txt"), "all good\n").unwrap();
    std::fs::write(ws.join("c.txt"), "warning: c is odd\n").unwrap();
    ws
}

/// A script for tmux: the test's environment, then `openfiles review DIR`.
fn review_script(env: &Env, ws: &Path, extra: &[(&str, &str)]) -> PathBuf {
    let script = env.dir.path().join("review.sh");
    let mut text = String::from("#!/bin/sh\n");
    let mut vars = vec![
        ("OPENFILES_SOCKET", env.socket.to_str().unwrap().to_owned()),
        (
            "OPENFILES_STATE_DIR",
            env.state.to_str().unwrap().to_owned(),
        ),
        ("OPENFILES_CONFIG", env.config.to_str().unwrap().to_owned()),
        ("GIT_PAGER", "cat".to_owned()),
        ("TERM", "xterm-256color".to_owned()),
    ];
    vars.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    for (k, v) in vars {
        text.push_str(&format!("export {k}='{v}'\n"));
    }
    text.push_str("unset NO_COLOR\n");
    text.push_str(&format!(
        "exec '{}' review '{}'\n",
        common::bin(),
        ws.display()
    ));
    std::fs::write(&script, text).unwrap();
    script
}

/// The screen row showing `key`.
fn row<'a>(screen: &'a str, key: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(&format!(" {key} ")) || l.trim_end().ends_with(key))
        .unwrap_or_else(|| panic!("no row for {key} in:\n{screen}"))
}

#[test]
fn the_review_groups_by_agent_keeps_marks_across_a_restart_and_a_new_edit_clears_one() {
    let env = env_with_plugin();
    let ws = repo(&env);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    edited_by(&env, "claude", &[&ws.join("a.txt"), &ws.join("b.txt")]);
    // codex reports through the queue file, as the editor extension's hook script does.
    let mut q = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(ws.join(".openfiles/queue.jsonl"))
        .unwrap();
    writeln!(
        q,
        r#"{{"v":1,"ts":{},"agent":"codex","tool":"Edit","paths":["c.txt"]}}"#,
        openfiles_wire::spec::now_ms()
    )
    .unwrap();
    wait_checked(&ws, &["a.txt", "b.txt", "c.txt"]);

    let editor_log = env.dir.path().join("editor.log");
    let editor = env.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        format!("#!/bin/sh\necho \"$@\" > '{}'\n", editor_log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = review_script(&env, &ws, &[("EDITOR", editor.to_str().unwrap())]);
    let tmux = Tmux::start(&script, 120, 40);

    // Grouping by agent, counts, errors first (the first selection is the file with errors).
    let s = tmux.wait_text("claude");
    assert!(
        s.contains("3 files · 3 unreviewed · 2 errors · 2 warnings"),
        "{s}"
    );
    assert!(
        row(&s, "claude").contains("2 files, 2 unreviewed, 2E 1W"),
        "{s}"
    );
    assert!(
        row(&s, "codex").contains("1 file, 1 unreviewed, 0E 1W"),
        "{s}"
    );
    let lines: Vec<&str> = s.lines().collect();
    let pos = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap();
    assert!(pos("claude") < pos("a.txt") && pos("a.txt") < pos("b.txt"));
    assert!(pos("b.txt") < pos("codex") && pos("codex") < pos("c.txt"));
    assert!(row(&s, "a.txt").contains("2E 1W  2:1 bad thing one"), "{s}");
    assert!(row(&s, "a.txt").starts_with("> "), "a.txt is selected: {s}");
    assert!(row(&s, "c.txt").contains("0E 1W"), "{s}");

    // Mark a.txt reviewed.
    tmux.keys(&["Space"]);
    let s = tmux.wait_text("[x] a.txt");
    assert!(s.contains("2 unreviewed"), "{s}");

    // The next unreviewed file with a problem: c.txt (a warning) before the clean b.txt.
    tmux.keys(&["n"]);
    let s = tmux.wait_for("c.txt selected", |s| row(s, "c.txt").starts_with("> "));
    assert!(row(&s, "b.txt").contains("[ ]"));

    // The diff against HEAD, through git (GIT_PAGER=cat here), then back.
    tmux.keys(&["g", "d"]);
    let s = tmux.wait_text("press any key to return");
    assert!(s.contains("diff --git a/a.txt b/a.txt"), "{s}");
    assert!(s.contains("+error: bad thing one"), "{s}");
    tmux.keys(&["x"]);
    tmux.wait_text("[x] a.txt");

    // The editor at the first problem (`+LINE`).
    tmux.keys(&["e"]);
    let args = common::hook::wait_for_file(&editor_log, |t| !t.is_empty());
    assert_eq!(args.trim(), format!("+2 {}", ws.join("a.txt").display()));
    tmux.wait_text("[x] a.txt");

    // The mark survives a restart of the service (the view reconnects by itself).
    svc.terminate();
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    let list = stdout(&run(&env, &["review", "--list"], &ws));
    assert!(list.contains("[x] a.txt"), "{list}");
    assert!(list.contains("[ ] b.txt"), "{list}");
    tmux.keys(&["r"]);
    tmux.wait_text("reloaded");
    assert!(tmux.screen().contains("[x] a.txt"));

    // A new edit of a.txt clears its mark; the open view shows it on its next reload.
    edited_by(&env, "gemini", &[&ws.join("a.txt")]);
    let s = tmux.wait_text("[ ] a.txt");
    assert!(row(&s, "gemini").contains("1 file, 1 unreviewed"), "{s}");

    // A resize redraws the view at the new size.
    tmux.resize(80, 20);
    tmux.wait_for("the narrower view", |s| {
        s.lines().all(|l| l.chars().count() <= 80) && s.contains("[ ] a.txt")
    });

    tmux.keys(&["q"]);
    drop(tmux);
    drop(svc);
}

#[test]
fn review_list_json_prompt_fix_and_status_short_show_the_same_session() {
    let env = env_with_plugin();
    let ws = repo(&env);
    let svc = env.serve(&["-w", ws.to_str().unwrap()]);
    edited_by(&env, "claude", &[&ws.join("a.txt"), &ws.join("b.txt")]);
    edited_by(&env, "codex", &[&ws.join("c.txt")]);
    wait_checked(&ws, &["a.txt", "b.txt", "c.txt"]);

    let json: serde_json::Value =
        serde_json::from_slice(&run(&env, &["review", "--json"], &ws).stdout).unwrap();
    assert_eq!(json["totals"]["errors"], 2);
    assert_eq!(json["totals"]["unreviewed"], 3);
    assert_eq!(json["groups"][0]["agent"], "claude");
    assert_eq!(json["groups"][0]["files"][0]["key"], "a.txt");
    assert_eq!(json["groups"][0]["files"][0]["agents"][0], "claude");
    assert_eq!(json["groups"][1]["agent"], "codex");

    // Mark through the protocol (as the view does) and read it back.
    let marked: serde_json::Value = common::json_call(
        &env.socket,
        &format!(
            r#"{{"cmd":"reviewMark","paths":["{}","{}"]}}"#,
            ws.join("b.txt").display(),
            ws.join("nope.txt").display()
        ),
    );
    assert_eq!(marked["marked"][0], ws.join("b.txt").to_str().unwrap());
    assert_eq!(marked["rejected"][0]["reason"], "not a session file");
    let list = stdout(&run(&env, &["review", "--list"], &ws));
    assert!(
        list.contains("claude (2 file(s), 1 unreviewed, 2E 1W)"),
        "{list}"
    );
    assert!(list.contains("[x] b.txt  ok"), "{list}");
    assert!(
        list.contains("[ ] a.txt  2E 1W  2:1 bad thing one"),
        "{list}"
    );

    // Colours, unless NO_COLOR is set (the selection stays visible, reversed).
    let script = review_script(&env, &ws, &[]);
    let tmux = Tmux::start(&script, 100, 30);
    tmux.wait_text("[ ] a.txt");
    let coloured = tmux.screen_with_escapes();
    assert!(
        coloured.contains("\x1b[38;5;1m"),
        "errors in red: {coloured:?}"
    );
    drop(tmux);
    let script = review_script(&env, &ws, &[("NO_COLOR", "1")]);
    std::fs::write(
        &script,
        std::fs::read_to_string(&script)
            .unwrap()
            .replace("unset NO_COLOR\n", ""),
    )
    .unwrap();
    let tmux = Tmux::start(&script, 100, 30);
    tmux.wait_text("[ ] a.txt");
    let plain = tmux.screen_with_escapes();
    assert!(
        !plain.contains("\x1b[38;5;"),
        "no colour with NO_COLOR: {plain:?}"
    );
    assert!(
        plain.contains("\x1b[7m"),
        "the selection is reversed: {plain:?}"
    );
    drop(tmux);

    // Without a terminal the view refuses and says what to use instead.
    let out = env
        .command(&["review"])
        .current_dir(&ws)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--list"));

    let fix = stdout(&run(&env, &["prompt", "fix"], &ws));
    assert!(
        fix.contains("- a.txt:2:1: error: bad thing one [instant]"),
        "{fix}"
    );
    assert!(
        fix.contains("- a.txt:4:1: error: bad thing two [instant]"),
        "{fix}"
    );
    assert!(
        fix.contains("- c.txt:1:1: warning: c is odd [instant]"),
        "{fix}"
    );
    assert!(!fix.contains("checked"), "no note items: {fix}");
    let pr = stdout(&run(&env, &["prompt", "pr-description"], &ws));
    assert!(
        pr.contains("claude:\n- a.txt (2 errors, 1 warnings)\n- b.txt\n"),
        "{pr}"
    );

    // status --short, from a subfolder, reads the summary file: no socket involved.
    let sub = ws.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let line = stdout(&run(&env, &["status", "--short"], &sub));
    assert_eq!(line, "2 unreviewed · 2E 2W · codex\n");
    svc.terminate();
    let line = stdout(&run(&env, &["status", "--short"], &sub));
    assert_eq!(
        line, "2 unreviewed · 2E 2W · codex\n",
        "the service is stopped"
    );
    let elsewhere = env.workspace("elsewhere");
    let line = stdout(&run(&env, &["status", "--short"], &elsewhere));
    assert_eq!(line, "", "outside a session a prompt shows nothing");
}

#[test]
fn pause_stops_noticing_edits_keeps_the_session_and_the_hook_says_so() {
    let env = env_with_plugin();
    let ws = repo(&env);
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    edited_by(&env, "claude", &[&ws.join("a.txt")]);
    wait_checked(&ws, &["a.txt"]);

    let out = stdout(&run(&env, &["pause"], &ws));
    assert!(out.contains(&format!("paused {}", ws.display())), "{out}");
    assert!(stdout(&run(&env, &["pause"], &ws)).contains("already paused"));

    let r = edited_by(&env, "claude", &[&ws.join("b.txt")]);
    assert!(r.workspaces.is_empty());
    assert_eq!(r.paused, vec![ws.clone()]);
    assert!(r.rejected[0].reason.starts_with("paused"));

    // The hook tells the agent.
    let payload = format!(
        r#"{{"tool_name":"Edit","tool_input":{{"file_path":"{}"}}}}"#,
        ws.join("b.txt").display()
    );
    let out = common::hook::run_hook(
        env.command(&["hook", "--agent", "claude"]).current_dir(&ws),
        &payload,
    );
    let text = stdout(&out);
    assert!(text.contains("checking is paused in"), "{text}");
    assert!(text.contains("openfiles resume"), "{text}");

    // A queue line is not noticed either; the session keeps a.txt; status says paused.
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(ws.join(".openfiles/queue.jsonl"))
        .unwrap()
        .write_all(b"{\"v\":1,\"agent\":\"codex\",\"paths\":[\"c.txt\"]}\n")
        .unwrap();
    wait_until("the queue line is taken", || {
        env.status().workspaces[0].queue_lines >= 1
    });
    let st = env.status();
    assert!(st.workspaces[0].paused);
    assert_eq!(st.workspaces[0].session_files, 1);
    let d = diagnostics(&ws).unwrap();
    assert_eq!(d.files.keys().collect::<Vec<_>>(), vec!["a.txt"]);
    let line = stdout(&run(&env, &["status", "--short"], &ws));
    assert!(line.trim_end().ends_with("· paused"), "{line}");

    // Resume: edits count again.
    assert!(stdout(&run(&env, &["resume"], &ws)).contains("resumed"));
    let r = edited_by(&env, "claude", &[&ws.join("b.txt")]);
    assert_eq!(r.workspaces[0].paths, vec![ws.join("b.txt")]);
    wait_checked(&ws, &["a.txt", "b.txt"]);
    assert!(!env.status().workspaces[0].paused);
}

#[test]
fn add_git_adds_uncommitted_and_untracked_files_respecting_ignores_even_when_paused() {
    let env = env_with_plugin();
    let ws = repo(&env);
    std::fs::write(ws.join("u.txt"), "unchanged\n").unwrap();
    std::fs::write(ws.join(".gitignore"), "ignored.txt\n.openfiles/\n").unwrap();
    git(&ws, &["add", "u.txt", ".gitignore"]);
    git(&ws, &["commit", "-q", "-m", "more"]);
    std::fs::write(ws.join("ignored.txt"), "error: never looked at\n").unwrap();
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);
    run(&env, &["pause"], &ws);

    let out = stdout(&run(&env, &["session", "add-git"], &ws));
    assert!(
        out.contains(&format!(
            "added 3 file(s) to the session of {}: 2 error(s), 2 warning(s)",
            ws.display()
        )),
        "{out}"
    );
    // (`check` answers from memory; diagnostics.json is written right after.)
    wait_until("diagnostics.json lists exactly the changed files", || {
        diagnostics(&ws).is_some_and(|d| {
            d.files.keys().map(String::as_str).collect::<Vec<_>>() == ["a.txt", "b.txt", "c.txt"]
        })
    });
    let list = stdout(&run(&env, &["review", "--list"], &ws));
    assert!(
        list.contains("git (3 file(s), 3 unreviewed, 2E 2W)"),
        "{list}"
    );

    // Outside a repository: a clear error.
    let plain = env.workspace("plain");
    let out = env
        .command(&["session", "add-git"])
        .current_dir(&plain)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not in a git repository"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// More changed files than one control request can name (1 MiB of JSON): `add-git` sends
/// them in several requests, well under the cap, and reports them as one.
#[test]
fn add_git_with_more_paths_than_one_request_holds_adds_every_file() {
    const FILES: usize = 12_000;
    let env = env_with_plugin();
    let ws = env.workspace("ws");
    git(&ws, &["init", "-q"]);
    let dir = ws.join("d".repeat(40));
    std::fs::create_dir(&dir).unwrap();
    // Names of 100 characters: with the folders, far past 1 MiB in one request.
    for i in 0..FILES {
        std::fs::write(dir.join(format!("{i:0>96}.txt")), "fine\n").unwrap();
    }
    std::fs::write(dir.join(format!("{:0>96}.txt", "e")), "error: one\n").unwrap();
    let named: usize = (0..=FILES).map(|_| dir.as_os_str().len() + 101 + 3).sum();
    assert!(named > openfiles_wire::line::MAX_LINE, "{named}");
    let _svc = env.serve(&["-w", ws.to_str().unwrap()]);

    let out = stdout(&run(&env, &["session", "add-git"], &ws));
    assert_eq!(out.matches("added ").count(), 1, "{out}");
    assert!(
        out.contains(&format!(
            "added {} file(s) to the session of {}: 1 error(s), 0 warning(s)\n",
            FILES + 1,
            ws.display()
        )),
        "{out}"
    );
    wait_until("diagnostics.json lists every file", || {
        diagnostics(&ws).is_some_and(|d| d.files.len() == FILES + 1)
    });
}

#[test]
fn prompt_agents_md_install_is_idempotent_and_uninstall_restores_byte_for_byte() {
    let env = Env::new();
    let ws = env.workspace("proj");
    let agents = b"# Rules\r\n\r\nBe nice.".to_vec(); // CRLF, no final newline
    std::fs::write(ws.join("AGENTS.md"), &agents).unwrap();
    std::os::unix::fs::symlink("AGENTS.md", ws.join("CLAUDE.md")).unwrap();
    let gemini = b"Gemini notes\n".to_vec();
    std::fs::write(ws.join("GEMINI.md"), &gemini).unwrap();

    let out = stdout(&run(&env, &["prompt", "agents-md", "--install"], &ws));
    assert!(out.contains("AGENTS.md: installed"), "{out}");
    assert!(out.contains("CLAUDE.md: same file as one above"), "{out}");
    assert!(out.contains("GEMINI.md: installed"), "{out}");
    let text = std::fs::read_to_string(ws.join("AGENTS.md")).unwrap();
    assert!(text.starts_with("# Rules\r\n\r\nBe nice.\n\n<!-- openfiles:begin"));
    assert_eq!(text.matches("<!-- openfiles:end -->").count(), 1);
    assert!(text.contains(".openfiles/diagnostics.json"));
    assert!(std::fs::symlink_metadata(ws.join("CLAUDE.md"))
        .unwrap()
        .file_type()
        .is_symlink());

    let again = stdout(&run(&env, &["prompt", "agents-md", "--install"], &ws));
    assert!(again.contains("AGENTS.md: already up to date"), "{again}");
    assert_eq!(std::fs::read_to_string(ws.join("AGENTS.md")).unwrap(), text);

    let out = stdout(&run(&env, &["prompt", "agents-md", "--uninstall"], &ws));
    assert!(out.contains("AGENTS.md: removed"), "{out}");
    assert_eq!(std::fs::read(ws.join("AGENTS.md")).unwrap(), agents);
    assert_eq!(std::fs::read(ws.join("GEMINI.md")).unwrap(), gemini);
    let out = stdout(&run(&env, &["prompt", "agents-md", "--uninstall"], &ws));
    assert!(out.contains("nothing to remove"), "{out}");

    // With no instruction file, --install creates AGENTS.md and --uninstall removes it.
    let empty = env.workspace("empty");
    run(&env, &["prompt", "agents-md", "--install"], &empty);
    assert!(empty.join("AGENTS.md").is_file());
    run(&env, &["prompt", "agents-md", "--uninstall"], &empty);
    assert!(!empty.join("AGENTS.md").exists());

    // The prompt itself, and small-steps, print without a service.
    let p = stdout(&run(&env, &["prompt", "agents-md"], &ws));
    assert!(
        p.starts_with("## Diagnostics for the files you edit (openfiles)"),
        "{p}"
    );
    let p = stdout(&run(&env, &["prompt", "small-steps"], &ws));
    assert!(p.contains("small steps"), "{p}");
}
