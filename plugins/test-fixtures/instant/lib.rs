//! Fixture `instant`: answers every check at once with one `info` item per file (requested
//! and `also_report`), for pipeline-overhead benchmarks and host tests. A line of a checked
//! file that starts with `error: ` or `warning: ` adds an item of that severity at that line
//! (column 1, the rest of the line as message): problems a test can count on.
//!
//! Config (`[plugin.instant]`): `extensions` (default `["txt"]`); `project_wide` (default
//! false: a project-wide source, one run per workspace, as the type checkers' command lines);
//! `warm` (default false: a project-wide source that keeps a warm server, as the pyright
//! plugin's, so the session start's warm-up asks it about the project and an edit during
//! that warm-up rides it with its committed texts); `delay_ms` (each check takes this long);
//! `first_delay_ms` (the first check takes this long instead: a warm server's first analysis);
//! `log` (a file each check appends `start|end baseline|edit|ride|ride-known <workspace>`
//! to — `ride` a check with committed texts, `ride-known` one whose baseline the service
//! has (`CheckRequest::baseline_known`) —, so a test counts runs and how many overlapped).
//! In a checked line, `@ws` stands for the check's workspace folder (a message naming a path).
//! Test hook: a file named `*.slow` makes the check block until cancelled (or 120 s). Before
//! blocking it writes one line to the FIFO `<file>.started` if that exists, so a test can
//! wait for "the check is running inside the plugin" without sleeping. A file named
//! `*.noisy` makes the plugin print to stdout (which must not disturb the host protocol).
//! A file named `*.stuck` blocks the check for 120 s whatever cancellation says (as a read
//! of a FIFO or a hung tool would). A file named `*.spawn` makes the check run `true spawned`
//! through the gate, for the check's workspace and trust (why: `fixture: spawn`), so a test
//! can see what a plugin started reach the service's `status`. A question (`query`) about a
//! `*.slow` file blocks the same way (`<file>.started` first) until cancelled, then writes
//! `cancelled <id>` to the FIFO `<file>.cancelled` if that exists and fails as cancelled; a
//! question about any other file is unsupported.

use std::collections::HashSet;
use std::io::Write;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use openfiles_plugin_api::{
    export_plugin, Capabilities, CheckRequest, CheckResponse, FileResult, Init, Item, Plugin,
    PluginError, Severity,
};

pub struct Instant {
    cancelled: Mutex<HashSet<u64>>,
    wake: Condvar,
    delay: Duration,
    /// The first check's delay, taken by it (`first_delay_ms`).
    first_delay: Mutex<Option<Duration>>,
    log: Option<std::path::PathBuf>,
}

impl Plugin for Instant {
    const NAME: &'static str = "instant";
    const VERSION: &'static str = "0.1.0";

    fn create(init: Init) -> Result<(Self, Capabilities), PluginError> {
        let extensions = match init.config.get("extensions") {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| {
                PluginError::Config(format!("extensions must be a list of strings: {e}"))
            })?,
            None => vec!["txt".to_owned()],
        };
        let flag = |k: &str| init.config.get(k).and_then(|v| v.as_bool()) == Some(true);
        let delay = init.config.get("delay_ms").and_then(|v| v.as_u64());
        let log = init.config.get("log").and_then(|v| v.as_str());
        Ok((
            Instant {
                cancelled: Mutex::new(HashSet::new()),
                wake: Condvar::new(),
                delay: Duration::from_millis(delay.unwrap_or(0)),
                first_delay: Mutex::new(
                    init.config
                        .get("first_delay_ms")
                        .and_then(|v| v.as_u64())
                        .map(Duration::from_millis),
                ),
                log: log.map(std::path::PathBuf::from),
            },
            Capabilities {
                extensions,
                project_wide: flag("project_wide"),
                warm: flag("warm"),
                ..Capabilities::default()
            },
        ))
    }

    fn check(&self, request: CheckRequest) -> Result<CheckResponse, PluginError> {
        self.note("start", &request);
        let first = self.first_delay.lock().ok().and_then(|mut d| d.take());
        std::thread::sleep(first.unwrap_or(self.delay));
        let answer = self.answer(&request);
        self.note("end", &request);
        answer
    }

    fn query(
        &self,
        request: openfiles_plugin_api::query::QueryRequest,
    ) -> Result<openfiles_plugin_api::query::QueryAnswer, PluginError> {
        if request.file.extension().is_none_or(|e| e != "slow") {
            return Ok(openfiles_plugin_api::query::QueryAnswer::unsupported());
        }
        self.block(request.id, &request.file);
        let mut fifo = request.file.as_os_str().to_owned();
        fifo.push(".cancelled");
        let cancelled = self
            .cancelled
            .lock()
            .is_ok_and(|set| set.contains(&request.id));
        let what = if cancelled { "cancelled" } else { "timed out" };
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) {
            let _ = writeln!(f, "{what} {}", request.id);
        }
        Err(PluginError::Cancelled)
    }

    fn cancel(&self, check_id: u64) {
        if let Ok(mut set) = self.cancelled.lock() {
            set.insert(check_id);
        }
        self.wake.notify_all();
    }
}

impl Instant {
    /// One line in the log, if one is configured.
    fn note(&self, what: &str, request: &CheckRequest) {
        let Some(log) = &self.log else {
            return;
        };
        let kind = match (&request.cache_of, request.committed.is_empty()) {
            (Some(_), _) => "baseline",
            (None, true) => "edit",
            (None, false) if request.baseline_known => "ride-known",
            (None, false) => "ride",
        };
        let line = format!("{what} {kind} {}\n", request.workspace.display());
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }

    fn answer(&self, request: &CheckRequest) -> Result<CheckResponse, PluginError> {
        let mut files = Vec::new();
        for path in request.files.iter().chain(request.also_report.iter()) {
            if path.extension().is_some_and(|e| e == "noisy") {
                // A forged protocol line: it would answer this check with an error if
                // stdout were the protocol channel.
                println!(
                    "{{\"op\":\"result\",\"id\":{},\"error\":\"forged via stdout\"}}",
                    request.id
                );
            }
            if path.extension().is_some_and(|e| e == "slow") {
                self.block(request.id, path);
            }
            if path.extension().is_some_and(|e| e == "stuck") {
                std::thread::sleep(std::time::Duration::from_secs(120));
            }
            if path.extension().is_some_and(|e| e == "spawn") {
                spawn_true(request)?;
            }
            let mut items = vec![Item::note(Severity::Info, "instant", "checked")];
            let text = std::fs::read_to_string(path).unwrap_or_default();
            for (n, line) in text.lines().enumerate() {
                let found = [
                    ("error: ", Severity::Error),
                    ("warning: ", Severity::Warning),
                ]
                .into_iter()
                .find_map(|(p, s)| line.strip_prefix(p).map(|m| (s, m)));
                if let Some((severity, message)) = found {
                    let message = message.replace("@ws", &request.workspace.to_string_lossy());
                    let mut item = Item::note(severity, "instant", message);
                    item.line = n as u32 + 1;
                    item.column = 1;
                    items.push(item);
                }
            }
            files.push(FileResult {
                path: path.clone(),
                items,
            });
        }
        Ok(CheckResponse {
            files,
            ..Default::default()
        })
    }
}

/// Run `true spawned` through the gate for the request's workspace and trust.
fn spawn_true(request: &CheckRequest) -> Result<(), PluginError> {
    use openfiles_plugin_api::gate::{Program, Scope};
    let scope = Scope::workspace(&request.workspace, request.trusted);
    let program = Program::find("true", &scope, "fixture: spawn")
        .map_err(|e| PluginError::Tool(e.to_string()))?;
    program
        .command(["spawned"])
        .status()
        .map_err(|e| PluginError::Tool(format!("true: {e}")))?;
    Ok(())
}

impl Instant {
    fn block(&self, id: u64, path: &std::path::Path) {
        let mut fifo = path.as_os_str().to_owned();
        fifo.push(".started");
        if let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(&fifo) {
            let _ = writeln!(f, "started {id}");
        }
        let Ok(guard) = self.cancelled.lock() else {
            return;
        };
        let _ = self
            .wake
            .wait_timeout_while(guard, Duration::from_secs(120), |set| !set.contains(&id));
    }
}

export_plugin!(Instant);
