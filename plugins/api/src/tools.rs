//! For plugins that run command-line tools (compilers, linters): [`ToolRuns`] starts them
//! so that `cancel` can stop them, whole.
//!
//! Each tool runs in a process group of its own, and `cancel` signals the group (SIGTERM),
//! so helpers the tool started (rustc under cargo, workers under tsc) stop too. On Linux
//! the tool also gets SIGTERM if the thread that started it goes away (the host process
//! crashed). A cancel that arrives before the tool was started still counts: the tool is
//! stopped as soon as it starts, and [`ToolRuns::is_cancelled`] lets the plugin skip work.

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command};
use std::sync::Mutex;

#[derive(Default)]
struct State {
    pids: HashMap<u64, Vec<u32>>,
    cancelled: HashSet<u64>,
}

/// The tools running per check id, and the ids cancelled. One per plugin instance.
#[derive(Default)]
pub struct ToolRuns {
    state: Mutex<State>,
}

fn signal_group(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) on the process group of a child we started and have not reaped.
        unsafe { libc::kill(-pid, libc::SIGTERM) };
    }
}

impl ToolRuns {
    pub fn new() -> Self {
        Self::default()
    }

    /// Start `cmd` on behalf of check `id` (see the module docs). Call [`ToolRuns::finished`]
    /// once it has been waited for.
    pub fn spawn(&self, id: u64, cmd: &mut Command) -> std::io::Result<Child> {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.cancelled.contains(&id) {
            signal_group(child.id());
        }
        state.pids.entry(id).or_default().push(child.id());
        Ok(child)
    }

    /// The tools of check `id` have been waited for.
    pub fn finished(&self, id: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.pids.remove(&id);
    }

    /// Stop every tool of check `id`, now and any started later.
    pub fn cancel(&self, id: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.cancelled.insert(id);
        for pid in state.pids.get(&id).into_iter().flatten() {
            signal_group(*pid);
        }
    }

    /// Was check `id` cancelled?
    pub fn is_cancelled(&self, id: u64) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.cancelled.contains(&id)
    }

    /// Was check `id` cancelled? Forgets the id (call once, when the check ends).
    pub fn take_cancelled(&self, id: u64) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.cancelled.remove(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_stops_the_tool_and_its_children() {
        let runs = ToolRuns::new();
        // A shell whose child sleeps: both are in the group and must go.
        let mut child = runs
            .spawn(1, Command::new("sh").args(["-c", "sleep 600 & wait"]))
            .unwrap();
        runs.cancel(1);
        let status = child.wait().unwrap();
        assert!(!status.success());
        runs.finished(1);
        assert!(runs.take_cancelled(1));
        assert!(!runs.take_cancelled(1));
    }

    #[test]
    fn a_cancel_before_the_start_stops_the_tool_at_once() {
        let runs = ToolRuns::new();
        runs.cancel(2);
        assert!(runs.is_cancelled(2));
        let mut child = runs.spawn(2, Command::new("sleep").arg("600")).unwrap();
        assert!(!child.wait().unwrap().success());
    }
}
