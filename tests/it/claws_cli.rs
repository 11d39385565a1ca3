//! `openfiles claws …` end to end through the real binary: the hidden foreground server
//! (`claws serve DIR`) and the client subcommands.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_openfiles");

fn claws(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .env("OPENFILES_AUTOSTART", "0")
        .arg("claws")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn client_commands_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let home = tempfile::tempdir().unwrap();
    let mut server = Command::new(BIN)
        .env("HOME", home.path())
        .args(["claws", "serve"])
        .arg(root)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert!(ready.starts_with("claws socket ready: "), "{ready}");
    let sock = root.join(".claws/claws.sock");
    assert!(sock.exists());

    let o = claws(
        root,
        &[
            "create",
            "--wrapped",
            "--shell",
            "/bin/bash",
            "--name",
            "cli",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    let id = text(&o).trim().to_owned();
    assert!(id.parse::<u64>().is_ok(), "{id}");

    let o = claws(root, &["exec", &id, "sh -c 'echo from-cli; exit 5'"]);
    assert_eq!(
        o.status.code(),
        Some(5),
        "exec exits with the command's code: {o:?}"
    );
    assert_eq!(text(&o), "from-cli\n");

    let o = claws(root, &["send", &id, "echo sent-$((1+1))"]);
    assert!(o.status.success(), "{o:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = claws(root, &["log", &id]);
        if text(&o).contains("sent-2") {
            break;
        }
        assert!(Instant::now() < deadline, "{o:?}");
        std::thread::sleep(Duration::from_millis(10));
    }

    // From a sub-folder the client finds the socket by walking up.
    let sub = root.join("deep/er");
    std::fs::create_dir_all(&sub).unwrap();
    let o = claws(&sub, &["list", "--json"]);
    assert!(text(&o).contains("\"name\":\"cli\""), "{o:?}");
    // For a person: a table, no JSON.
    let o = claws(&sub, &["list"]);
    let table = text(&o);
    assert!(table.starts_with("ID "), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&format!("{id} ")) && l.contains("cli")),
        "{table}"
    );
    assert!(!table.contains('{'), "{table}");

    let o = claws(root, &["publish", "job.done", "{\"ok\":true}"]);
    assert!(text(&o).contains("\"ok\":true"), "{o:?}");
    let o = claws(
        root,
        &[
            "subscribe",
            "job.*",
            "--from-cursor",
            "0000:0",
            "--count",
            "1",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert!(text(&o).contains("\"topic\":\"job.done\""), "{o:?}");
    assert!(text(&o).contains("\"replayed\":true"), "{o:?}");
    let o = claws(root, &["publish", "job.done", "not json"]);
    assert!(!o.status.success());

    // The command's own exit code 125 passes through too; openfiles' errors are told apart
    // by the `openfiles:` line on stderr.
    let o = claws(root, &["exec", &id, "sh -c 'exit 2'"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(o.stderr.is_empty(), "{o:?}");

    let o = claws(root, &["close", &id]);
    assert_eq!(text(&o), format!("closed terminal {id}\n"), "{o:?}");
    let o = claws(root, &["close", &id, "--json"]);
    assert!(text(&o).contains("\"alreadyClosed\":true"), "{o:?}");
    let o = claws(root, &["exec", &id, "true"]);
    assert_eq!(
        o.status.code(),
        Some(125),
        "openfiles' own error, not a command's exit code: {o:?}"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .starts_with(&format!("openfiles: unknown terminal id {id}")),
        "{o:?}"
    );

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(server.wait().unwrap().success());
    assert!(!sock.exists(), "the socket is removed on shutdown");

    // No server at all: still openfiles' own error.
    let o = claws(root, &["exec", "1", "true"]);
    assert_eq!(o.status.code(), Some(125), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with("openfiles: "),
        "{o:?}"
    );
}
