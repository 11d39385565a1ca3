//! Running one test runner for a check: in its own process group (so a cancel or the
//! budget stops it and everything it started), at a lower CPU priority, its output read
//! whole, stopped at the run's deadline.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use openfiles_plugin_api::gate::spawn::lower_priority;
use openfiles_plugin_api::tools::ToolRuns;
use openfiles_plugin_api::PluginError;

/// What a runner printed and how it ended.
pub struct Ran {
    pub stdout: String,
    pub stderr: String,
    /// `None` when the deadline stopped it.
    pub status: Option<ExitStatus>,
}

impl Ran {
    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// Run `cmd` for check `id` until it ends or `deadline` passes (then its group is killed).
/// `Err(Cancelled)` when the check was cancelled meanwhile.
pub fn run(
    runs: &ToolRuns,
    id: u64,
    cmd: &mut Command,
    nice: i32,
    deadline: Instant,
) -> Result<Ran, PluginError> {
    if runs.is_cancelled(id) {
        return Err(PluginError::Cancelled);
    }
    lower_priority(cmd, nice);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = runs
        .spawn(id, cmd)
        .map_err(|e| PluginError::io("cannot start the test runner", e))?;
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                kill_group(child.id());
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(25)),
            Err(e) => {
                kill_group(child.id());
                let _ = child.wait();
                runs.finished(id);
                return Err(PluginError::io("waiting for the test runner", e));
            }
        }
    };
    // A runner's children may hold the pipes open after it ended: end them too.
    kill_group(child.id());
    runs.finished(id);
    let (stdout, stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    if runs.is_cancelled(id) {
        return Err(PluginError::Cancelled);
    }
    Ok(Ran {
        stdout,
        stderr,
        status,
    })
}

fn kill_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) on the process group of a child this run started (ToolRuns puts
        // each tool in a group of its own, led by it).
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
}

/// The last `n` lines of a runner's error output (why a run failed as a whole).
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
