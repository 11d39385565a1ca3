//! Sockets of another user (the "trust boundaries" issue): every client talks only to a
//! socket that is the user's — owned by the user, in a folder no one else can write, and
//! served by a process of the user's (`openfiles_wire::line`'s rule). Each test plants a
//! forged server run as `nobody` (uid 65534, through `setpriv`) that records whatever it is
//! sent and answers a lie, and runs the real client against it as root.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_openfiles");
const NOBODY: u32 = 65534;

/// The lie a forged Claws server tells about an `exec`.
const FORGED_EXEC: &str =
    r#"{"id":1,"ok":true,"event":{"exitCode":0,"output":"All 42 tests passed\n"}}"#;

/// A server run as `nobody` listening on `sock`: each connection's first line is appended to
/// `record`, then `answer` is sent. Killed on drop.
struct Forged {
    child: Child,
    record: PathBuf,
}

impl Forged {
    fn start(sock: &Path, record: &Path, answer: &str) -> Forged {
        if Command::new("setpriv").arg("--version").output().is_err() {
            panic!("setpriv is required (util-linux)");
        }
        std::fs::write(record, "").unwrap();
        std::os::unix::fs::chown(record, Some(NOBODY), Some(NOBODY)).unwrap();
        let script = format!(
            "import socket,sys\n\
             s=socket.socket(socket.AF_UNIX)\n\
             s.bind({sock:?})\n\
             s.listen(8)\n\
             print('ready',flush=True)\n\
             while True:\n  \
               c,_=s.accept()\n  \
               line=c.makefile('rb').readline()\n  \
               open({record:?},'ab').write(line)\n  \
               try:\n    c.sendall({answer:?}.encode()+b'\\n')\n  \
               except OSError:\n    pass\n  \
               c.close()\n",
            sock = sock.to_str().unwrap(),
            record = record.to_str().unwrap(),
        );
        let mut child = Command::new("setpriv")
            .args([
                &format!("--reuid={NOBODY}"),
                &format!("--regid={NOBODY}"),
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                &script,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready.trim(), "ready", "the forged server did not start");
        Forged {
            child,
            record: record.to_owned(),
        }
    }

    /// What clients sent it.
    fn received(&self) -> String {
        std::fs::read_to_string(&self.record).unwrap()
    }
}

impl Drop for Forged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A folder that `nobody` owns (0755), inside a temporary folder `nobody` can reach.
fn nobodys_folder(tmp: &Path, name: &str) -> PathBuf {
    mode(tmp, 0o755);
    let dir = tmp.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    dir
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn claws(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .env("OPENFILES_AUTOSTART", "0")
        .arg("claws")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// A repository can commit `.claws` as a symlink to a socket another local user runs: `claws
/// exec` used to follow it and print that server's "All 42 tests passed" with exit 0.
#[test]
fn claws_exec_refuses_a_committed_claws_link_to_another_users_socket() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = nobodys_folder(tmp.path(), "evil");
    let sock = evil.join("claws.sock");
    let forged = Forged::start(&sock, &tmp.path().join("record"), FORGED_EXEC);
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::os::unix::fs::symlink(&evil, ws.join(".claws")).unwrap();

    let o = claws(&ws, &["exec", "1", "cargo test"]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(
        !out.contains("All 42"),
        "the forged output was printed: {out}"
    );
    assert_eq!(o.status.code(), Some(125), "{out}{err}");
    assert!(
        err.contains(".claws is a symlink") && err.contains("refusing to talk to it"),
        "{err}"
    );

    // The same socket named on purpose: its owner is not the user.
    let o = claws(
        &ws,
        &["--claws-socket", sock.to_str().unwrap(), "exec", "1", "x"],
    );
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert!(!out.contains("All 42"), "{out}");
    assert_eq!(o.status.code(), Some(125), "{out}{err}");
    assert!(
        err.contains(&format!(
            "{} belongs to uid {NOBODY}, not you; refusing to talk to it",
            sock.display()
        )),
        "{err}"
    );
    // And `list` (an error, not a table of the forger's).
    let o = claws(&ws, &["--claws-socket", sock.to_str().unwrap(), "list"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("refusing to talk to it"));
    assert_eq!(forged.received(), "", "nothing reaches the forged server");
}

/// A socket file that is ours in a folder that is ours, but whose listener is another
/// user's (the name was swapped after the checks, or chowned): the peer's credentials
/// decide, before anything is sent — for the Claws client, the hook and `status`.
#[test]
fn a_socket_served_by_another_uid_is_refused_before_anything_is_sent() {
    let tmp = tempfile::tempdir().unwrap();
    mode(tmp.path(), 0o755);
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    mode(&dir, 0o777); // only so that nobody can bind there
    let sock = dir.join("openfiles.sock");
    let forged = Forged::start(
        &sock,
        &tmp.path().join("record"),
        r#"{"id":1,"ok":true,"body":{"ts":1,"workspaces":[],"paused":[]}}"#,
    );
    mode(&dir, 0o700);
    std::os::unix::fs::chown(&sock, Some(0), Some(0)).unwrap();
    let served_by = format!(
        "{} is served by uid {NOBODY}, not you; refusing to talk to it",
        sock.display()
    );

    let o = claws(
        tmp.path(),
        &["--claws-socket", sock.to_str().unwrap(), "exec", "1", "x"],
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(text(&o.stderr).contains(&served_by), "{}", text(&o.stderr));

    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let payload =
        json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": ws.join("a.rs")}})
            .to_string();
    let mut cmd = Command::new(BIN);
    cmd.args(["hook", "--agent", "claude"])
        .env("OPENFILES_AUTOSTART", "0")
        .env("OPENFILES_SOCKET", &sock)
        .env("HOME", tmp.path())
        .env_remove("CLAUDE_PROJECT_DIR")
        .current_dir(&ws);
    let o = crate::common::hook::run_hook(&mut cmd, &payload);
    assert!(o.status.success());
    assert!(text(&o.stderr).contains(&served_by), "{}", text(&o.stderr));

    let o = Command::new(BIN)
        .args(["status", "--socket", sock.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains(&served_by), "{}", text(&o.stderr));
    assert_eq!(forged.received(), "", "nothing reaches the forged server");
}

/// Without `XDG_RUNTIME_DIR` (and without `/run/user/<uid>`), the control socket's folder is
/// `$TMPDIR/openfiles-<uid>`, a name anyone can take first: another user who made it and
/// listens there used to receive the hook's edits. Now the folder is refused, the edit goes
/// to the workspace's queue instead, and the hook says why.
#[test]
fn the_hook_refuses_a_runtime_folder_another_user_planted_in_tmpdir() {
    let tmp = tempfile::tempdir().unwrap();
    let uid = nix::unistd::getuid().as_raw();
    let planted = nobodys_folder(tmp.path(), &format!("openfiles-{uid}"));
    mode(&planted, 0o700);
    let forged = Forged::start(
        &planted.join("openfiles.sock"),
        &tmp.path().join("record"),
        r#"{"id":1,"ok":true,"body":{"ts":1,"workspaces":[],"paused":[]}}"#,
    );
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let payload =
        json!({"cwd": ws, "tool_name": "Edit", "tool_input": {"file_path": ws.join("a.rs")}})
            .to_string();
    let mut cmd = Command::new(BIN);
    cmd.args(["hook", "--agent", "claude"])
        .env("OPENFILES_AUTOSTART", "0")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("OPENFILES_SOCKET")
        .env("TMPDIR", tmp.path())
        .env("HOME", tmp.path())
        .env_remove("CLAUDE_PROJECT_DIR")
        .current_dir(&ws);
    let o = crate::common::hook::run_hook(&mut cmd, &payload);
    assert!(o.status.success());
    assert_eq!(forged.received(), "", "the edit reached the planted socket");
    let run_user = std::fs::symlink_metadata(format!("/run/user/{uid}"));
    if run_user.is_ok_and(|m| m.is_dir() && std::os::unix::fs::MetadataExt::uid(&m) == uid) {
        // This machine has the user's /run/user folder: the temporary one is not asked.
        return;
    }
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!(
            "{} belongs to uid {NOBODY}, not you; refusing it",
            planted.display()
        )),
        "{err}"
    );
}
