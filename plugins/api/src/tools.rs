//! For plugins that run command-line tools (compilers, linters): [`ToolRuns`] starts them
//! so that `cancel` can stop them, whole.
//!
//! Each tool runs in a process group of its own, and `cancel` signals the group (SIGTERM),
//! so helpers the tool started (rustc under cargo, workers under tsc) stop too. On Linux
//! the tool also gets SIGTERM if the thread that started it goes away (the host process
//! crashed). A cancel that arrives before the tool was started still counts: the tool is
//! stopped as soon as it starts, and [`ToolRuns::is_cancelled`] lets the plugin skip work.
//! [`ToolRuns::run_groups`] is the whole loop of a project-wide plugin: one tool run per
//! project, its findings spread over the project's files, a failed run explained on each;
//! [`Collect`] turns one run's diagnostics into those findings.
//! [`on_path`] finds a tool the way a shell would, less `PATH`'s relative entries; a tool
//! run for a check is a [`gate::Program`](crate::gate::Program) of the check's [`scope`]
//! (its [`Command`] comes from the gate, with the environment of the workspace's trust), and
//! [`source_lines`] reads a file the tool reported the confined way (to turn its columns into
//! characters).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Mutex;

pub use crate::columns::Column;
use crate::types::{FileResult, Item, Severity};
use crate::PluginError;

/// `name` found on `PATH`'s absolute entries as an executable file (the gate's rule: a
/// relative entry such as `.` is never searched). For a tool run for a workspace, use
/// [`gate::Program::find`](crate::gate::Program::find) with the check's scope instead.
pub fn on_path(name: &str) -> Option<std::path::PathBuf> {
    crate::gate::spawn::search(name, &crate::gate::Scope::user())
}

pub use crate::gate::spawn::is_executable;

/// The scope of the tools a check runs: its workspace, trusted or not.
pub fn scope(request: &crate::CheckRequest) -> crate::gate::Scope {
    crate::gate::Scope::workspace(&request.workspace, request.trusted)
}

/// The largest file [`source_lines`] reads.
pub const MAX_SOURCE_BYTES: u64 = 16 << 20;

/// The lines of `path`, a file inside `workspace` a tool reported a problem in, read the
/// confined way ([`crate::confine::read_workspace_file`]: no symlink followed, a regular file
/// only, never blocking on a FIFO, at most [`MAX_SOURCE_BYTES`]); outside the workspace, a
/// regular file reached without blocking. Empty when it cannot be read (the caller keeps the
/// tool's own column).
pub fn source_lines(workspace: &std::path::Path, path: &std::path::Path) -> Vec<String> {
    use crate::confine::{read_regular, read_workspace_file, Last};
    let bytes = if path.starts_with(workspace) {
        read_workspace_file(workspace, path, MAX_SOURCE_BYTES)
    } else {
        read_regular(path, Last::Follow, MAX_SOURCE_BYTES)
    };
    bytes
        .map(|b| {
            String::from_utf8_lossy(&b)
                .lines()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// What one tool run found: items per file, and items about the project as a whole
/// (a broken config file, say), which every file of the run reports.
#[derive(Debug, Default)]
pub struct Findings {
    pub per_file: HashMap<PathBuf, Vec<Item>>,
    pub shared: Vec<Item>,
}

#[derive(Default)]
struct State {
    pids: HashMap<u64, Vec<u32>>,
    cancelled: HashSet<u64>,
}

/// What a tool run by [`ToolRuns::output`] printed, and how it ended.
pub struct ToolOutput {
    pub stdout: String,
    pub stderr: String,
    pub status: std::process::ExitStatus,
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

    /// Run `cmd` on behalf of check `id` to its end (stdin closed) and collect what it
    /// printed: stdout and stderr read at once (stderr on a thread of its own, so neither pipe
    /// can fill and stall the tool), then [`ToolRuns::finished`].
    pub fn output(&self, id: u64, cmd: &mut Command) -> std::io::Result<ToolOutput> {
        use std::io::Read;
        use std::process::Stdio;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self.spawn(id, cmd)?;
        let mut stderr = child.stderr.take();
        let err_thread = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_string(&mut text);
            }
            text
        });
        let mut stdout = String::new();
        if let Some(mut s) = child.stdout.take() {
            let _ = s.read_to_string(&mut stdout);
        }
        let status = child.wait();
        self.forget(id, child.id());
        let stderr = err_thread.join().unwrap_or_default();
        Ok(ToolOutput {
            stdout,
            stderr,
            status: status?,
        })
    }

    /// The tools of check `id` have been waited for.
    pub fn finished(&self, id: u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.pids.remove(&id);
    }

    /// The tool `pid` of check `id` has been waited for (the check's other tools, run in
    /// parallel, are still stopped by a cancel).
    fn forget(&self, id: u64, pid: u32) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pids) = state.pids.get_mut(&id) {
            pids.retain(|p| *p != pid);
            if pids.is_empty() {
                state.pids.remove(&id);
            }
        }
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

    /// For check `id`, run the tool once per group (a project and the files wanted from
    /// it) with `run`, and give every wanted file its findings; a run that fails gives each
    /// of its files an error item from `source` with the message. With `report_all` (see
    /// [`CheckRequest::report_all`](crate::CheckRequest::report_all)), the files a run found
    /// problems in that were not wanted are reported too. Stops with
    /// [`PluginError::Cancelled`] as soon as the check is cancelled.
    pub fn run_groups<G, E: std::fmt::Display>(
        &self,
        id: u64,
        source: &str,
        report_all: bool,
        groups: impl IntoIterator<Item = (G, Vec<PathBuf>)>,
        mut run: impl FnMut(&G, &[PathBuf]) -> Result<Findings, E>,
    ) -> Result<Vec<FileResult>, PluginError> {
        let mut files = Vec::new();
        for (group, wanted) in groups {
            if self.take_cancelled(id) {
                return Err(PluginError::Cancelled);
            }
            let outcome = run(&group, &wanted);
            if self.take_cancelled(id) {
                return Err(PluginError::Cancelled);
            }
            match outcome {
                Ok(mut found) => {
                    files.extend(wanted.into_iter().map(|path| {
                        let mut items = found.shared.clone();
                        items.extend(found.per_file.remove(&path).unwrap_or_default());
                        FileResult { path, items }
                    }));
                    if report_all {
                        let mut rest: Vec<FileResult> = found
                            .per_file
                            .into_iter()
                            .filter(|(_, items)| !items.is_empty())
                            .map(|(path, items)| FileResult { path, items })
                            .collect();
                        rest.sort_by(|a, b| a.path.cmp(&b.path));
                        files.extend(rest);
                    }
                }
                Err(message) => files.extend(wanted.into_iter().map(|path| FileResult {
                    path,
                    items: vec![Item::note(Severity::Error, source, message.to_string())],
                })),
            }
        }
        Ok(files)
    }
}

/// A tool's findings being turned into [`Findings`]: the steps every project-wide plugin takes
/// (go, pyright, cc): a file's column converted on the file's own text (read once, the confined
/// way, see [`source_lines`]), each item once per file, problems of no file shared by all.
pub struct Collect<'a> {
    workspace: &'a std::path::Path,
    lines: HashMap<PathBuf, Vec<String>>,
    findings: Findings,
}

impl<'a> Collect<'a> {
    /// Collect for a check of `workspace` (the files a tool reports are read from it).
    pub fn new(workspace: &'a std::path::Path) -> Self {
        Collect {
            workspace,
            lines: HashMap::new(),
            findings: Findings::default(),
        }
    }

    /// The 1-based character column of `column` on line `line` (1-based) of `path`.
    pub fn column(&mut self, path: &std::path::Path, line: u32, column: Column) -> u32 {
        if let Column::Chars(c) = column {
            return c.max(1);
        }
        let workspace = self.workspace;
        let text = self
            .lines
            .entry(path.to_owned())
            .or_insert_with(|| source_lines(workspace, path));
        column.to_chars(
            text.get(line.saturating_sub(1) as usize)
                .map(String::as_str),
        )
    }

    /// `item` for `path`, unless the file has it already (a package and its test variants,
    /// a header read through several units: the same problem once).
    pub fn add(&mut self, path: PathBuf, item: Item) {
        let items = self.findings.per_file.entry(path).or_default();
        if !items.contains(&item) {
            items.push(item);
        }
    }

    /// `item` for every file of the run (a problem of no file, or of the project's config).
    pub fn shared(&mut self, item: Item) {
        self.findings.shared.push(item);
    }

    pub fn finish(self) -> Findings {
        self.findings
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
    fn run_groups_spreads_findings_and_explains_failures() {
        let runs = ToolRuns::new();
        let (a, b, c) = (
            PathBuf::from("/p/a"),
            PathBuf::from("/p/b"),
            PathBuf::from("/q/c"),
        );
        let groups = vec![("p", vec![a.clone(), b.clone()]), ("q", vec![c.clone()])];
        let files = runs
            .run_groups(3, "tool", false, groups, |group, _| match *group {
                "p" => Ok(Findings {
                    per_file: HashMap::from([(
                        a.clone(),
                        vec![Item::note(Severity::Warning, "tool", "in a")],
                    )]),
                    shared: vec![Item::note(Severity::Error, "tool", "bad config")],
                }),
                _ => Err("tool crashed"),
            })
            .unwrap();
        let messages: Vec<(PathBuf, Vec<String>)> = files
            .into_iter()
            .map(|f| (f.path, f.items.into_iter().map(|i| i.message).collect()))
            .collect();
        assert_eq!(
            messages,
            vec![
                (a, vec!["bad config".to_string(), "in a".to_string()]),
                (b, vec!["bad config".to_string()]),
                (c, vec!["tool crashed".to_string()]),
            ]
        );
        runs.cancel(4);
        let r = runs.run_groups(
            4,
            "tool",
            false,
            vec![((), vec![PathBuf::from("/x")])],
            |_, _| -> Result<Findings, String> { panic!("a cancelled check runs no tool") },
        );
        assert!(matches!(r, Err(PluginError::Cancelled)));
    }

    #[test]
    fn collect_converts_columns_on_the_file_and_keeps_each_item_once() {
        let t = tempfile::tempdir().unwrap();
        let ws = t.path().canonicalize().unwrap();
        let a = ws.join("a.c");
        std::fs::write(&a, "int x;\nchar *s = \"é\"; x\n").unwrap();
        let mut c = Collect::new(&ws);
        assert_eq!(c.column(&a, 2, Column::Bytes(17)), 16);
        assert_eq!(c.column(&a, 2, Column::Utf16(16)), 16);
        assert_eq!(c.column(&a, 9, Column::Bytes(17)), 17); // no such line: as printed
        assert_eq!(c.column(&ws.join("gone.c"), 1, Column::Bytes(0)), 1);
        let item = Item::note(Severity::Error, "cc", "twice");
        c.add(a.clone(), item.clone());
        c.add(a.clone(), item.clone());
        c.shared(Item::note(Severity::Error, "cc", "config"));
        let found = c.finish();
        assert_eq!(found.per_file[&a], vec![item]);
        assert_eq!(found.shared.len(), 1);
    }

    #[test]
    fn source_lines_never_block_on_a_fifo() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let ws = t.path().canonicalize().unwrap();
        std::fs::write(ws.join("a.go"), "package a\nvar x = 1\n").unwrap();
        assert_eq!(
            source_lines(&ws, &ws.join("a.go")),
            ["package a", "var x = 1"]
        );
        let fifo = ws.join("b.go");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(source_lines(&ws, &fifo).is_empty());
        std::os::unix::fs::symlink("/etc/passwd", ws.join("c.go")).unwrap();
        assert!(source_lines(&ws, &ws.join("c.go")).is_empty());
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
