//! A real terminal for terminal-UI tests: a tmux server of the test's own (`-L`), one session
//! of a fixed size running a command, keys sent with `send-keys`, the screen read with
//! `capture-pane -p`. The server is killed on drop.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::PATIENCE;

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Start `script` (run by `sh`) in a `width`×`height` terminal.
    pub fn start(script: &Path, width: u16, height: u16) -> Tmux {
        let socket = format!(
            "of-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let t = Tmux { socket };
        t.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "sh",
            script.to_str().unwrap(),
        ]);
        // Keep the pane (and its last screen) when the program exits.
        t.run(&["set-option", "-g", "remain-on-exit", "on"]);
        t
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .output()
            .expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The visible screen, one line per row.
    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p"])
    }

    /// The visible screen with its colours and attributes (SGR escapes).
    pub fn screen_with_escapes(&self) -> String {
        self.run(&["capture-pane", "-p", "-e"])
    }

    /// Type keys (tmux key names: `Space`, `Enter`, `Down`, or literal text).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Resize the terminal.
    pub fn resize(&self, width: u16, height: u16) {
        self.run(&[
            "resize-window",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
        ]);
    }

    /// Wait until the screen satisfies `pred`; returns that screen (fails the test after
    /// [`PATIENCE`], printing the last screen).
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            assert!(
                start.elapsed() < PATIENCE,
                "timed out waiting for {what}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait until the screen shows `text`.
    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?} on screen"), |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
