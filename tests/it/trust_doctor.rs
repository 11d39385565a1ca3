//! `openfiles doctor` run inside a hostile repository — what a user does when something
//! does not work — runs nothing the repository names: no hook command from its agents'
//! settings (each would `touch` a marker), no `node_modules/.bin` tool through the running
//! service's `tools` request, and no read that blocks (a FIFO where a settings file should
//! be) or never ends (a symlink to `/dev/zero`, a 1 GiB file).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

/// Run `cmd`, giving up after a generous bound (a hang guard, not a timing assertion):
/// `None` when it had not finished by then (it is killed).
fn output_within(cmd: &mut Command, bound: Duration) -> Option<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while start.elapsed() < bound {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn doctor(env: &common::Env, ws: &Path) -> Value {
    let out = output_within(
        env.command(&["doctor", "--json", "--workspace"])
            .arg(ws)
            .current_dir(ws)
            .env("HOME", env.dir.path())
            .env("XDG_CONFIG_HOME", env.dir.path().join("config-home")),
        Duration::from_secs(300),
    )
    .expect("doctor finished (it hung on something the repository planted)");
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{e}: {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn lines<'a>(report: &'a Value, section: &str) -> Vec<&'a Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["section"] == section)
        .collect()
}

fn line_of<'a>(report: &'a Value, agent: &str) -> &'a Value {
    lines(report, "hooks")
        .into_iter()
        .find(|c| {
            c["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{agent}: "))
        })
        .unwrap_or_else(|| panic!("no {agent} line: {report:#}"))
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The hostile repository: each agent's settings run `openfiles hook …; touch MARKER`, and
/// `node_modules/.bin/rust-analyzer` touches one too. Returns the markers.
fn hostile_repo(ws: &Path, marks: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join("lib.rs"), "pub fn f() {}\n").unwrap();
    let mut markers = Vec::new();
    for (file, agent, event) in [
        (".claude/settings.json", "claude", "PostToolUse"),
        (".codex/hooks.json", "codex", "PostToolUse"),
        (".gemini/settings.json", "gemini", "AfterTool"),
    ] {
        let marker = marks.join(format!("ran-{agent}"));
        let command = format!("openfiles hook --agent {agent}; touch {}", marker.display());
        let doc = serde_json::json!({
            "hooks": { event: [{ "hooks": [{ "type": "command", "command": command }] }] }
        });
        write(&ws.join(file), &doc.to_string());
        markers.push(marker);
    }
    let marker = marks.join("ran-rust-analyzer");
    let tool = ws.join("node_modules/.bin/rust-analyzer");
    write(
        &tool,
        &format!("#!/bin/sh\ntouch {}\nexit 0\n", marker.display()),
    );
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    markers.push(marker);
    markers
}

#[test]
fn doctor_runs_no_command_a_hostile_repository_names() {
    let env = common::Env::new();
    let ws = env.workspace("hostile");
    let marks = env.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let markers = hostile_repo(&ws, &marks);
    // A real service, which has not registered (nor trusted) the repository.
    let svc = env.serve(&[]);

    let report = doctor(&env, &ws);
    for m in &markers {
        assert!(!m.exists(), "{} ran: {report:#}", m.display());
    }
    // Each agent's hook is named as not what `hooks install` writes, with what differs.
    for agent in ["claude", "codex", "gemini"] {
        let line = line_of(&report, agent);
        let msg = line["message"].as_str().unwrap();
        assert_eq!(line["level"], "warn", "{line}");
        assert!(
            msg.contains("is not what `hooks install` writes")
                && msg.contains(&format!(
                    "after `openfiles hook --agent {agent}` the file has `; touch "
                )),
            "{msg}"
        );
    }
    // The service saw the repository's rust-analyzer and left it alone.
    let held = lines(&report, "languages")
        .into_iter()
        .find(|c| {
            c["message"]
                .as_str()
                .unwrap()
                .contains("rust-analyzer is present in the workspace")
        })
        .unwrap_or_else(|| panic!("{report:#}"));
    assert!(
        held["message"]
            .as_str()
            .unwrap()
            .contains("not used until `openfiles trust`"),
        "{held}"
    );
    svc.terminate();
}

#[test]
fn doctor_reads_no_fifo_device_or_huge_file_for_settings_and_says_why() {
    let env = common::Env::new();
    let ws = env.workspace("planted");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    for d in [".claude", ".gemini", ".codex"] {
        std::fs::create_dir_all(ws.join(d)).unwrap();
    }
    nix::unistd::mkfifo(
        &ws.join(".claude/settings.json"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", ws.join(".gemini/settings.json")).unwrap();
    std::fs::File::create(ws.join(".codex/hooks.json"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();

    let report = doctor(&env, &ws);
    let why = |agent: &str| {
        line_of(&report, agent)["message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let claude = why("claude");
    assert!(
        claude.contains("not read") && claude.contains("FIFO"),
        "{claude}"
    );
    let gemini = why("gemini");
    assert!(
        gemini.contains("not read") && gemini.contains("symlink"),
        "{gemini}"
    );
    let codex = why("codex");
    assert!(
        codex.contains("not read") && codex.contains("larger"),
        "{codex}"
    );
}
