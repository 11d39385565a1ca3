//! One terminal: a shell in a PTY plus three tasks that own its moving parts — the reader
//! (a thread, `reader.rs`: PTY output → capture ring, log file, shell-integration marks →
//! history, `exec` answers, bus events), the input path (`input.rs`: written at once when
//! nothing is queued ahead, else by the writer task; ordered input, bracketed paste) and the
//! reaper (exit status).
//! The terminal's mutable state sits behind one short-lived `std::sync::Mutex`, never held
//! across an `.await`. The PTY exists before `create` answers, so early input is queued in
//! the kernel and never lost.

use std::collections::{BTreeMap, VecDeque};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::io::unix::AsyncFd;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::exec::{
    exec_input, fail_lost, shell_words, take, take_before, NotRun, Waiter, AT_CONTINUATION,
    BUSY_WAIT, CANCEL_RETRY, CANCEL_TRIES,
};
use super::history::HistoryEvent;
use super::ring::Ring;
use super::strip::{plain_output, Mark, MarkKind};
use super::{now_ms, pty, shell, ServerState};

mod input;
mod reader;
mod vehicle;

use input::{writer, Input};

pub use vehicle::Vehicle;

/// Grace between SIGHUP and SIGKILL when a terminal is closed.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Where the shell is, as the integration marks tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No prompt seen yet.
    Starting,
    /// At a prompt (idle).
    Prompt,
    /// A command runs in the foreground.
    Running,
    /// The shell process is gone.
    Exited,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Prompt => "idle",
            Phase::Running => "busy",
            Phase::Exited => "exited",
        }
    }
}

/// What `create` asks for.
pub struct CreateOpts {
    pub name: String,
    pub cwd: PathBuf,
    pub wrapped: bool,
    pub shell: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    pub cols: u16,
    pub rows: u16,
    pub correlation_id: Option<String>,
    /// Keep the tty's output post-processing (`\n` → `\r\n`); see `pty::Spawn::opost`.
    pub opost: bool,
}

/// Input bytes a terminal holds for a program that has not read them yet: past this a
/// `send` is refused (a flood to a program that does not read stdin would grow memory
/// without limit).
pub const MAX_QUEUED_INPUT: usize = 16 << 20;

/// Why input was not queued.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SendError {
    #[error("terminal {0} has exited")]
    Exited(u64),
    #[error("terminal {0} has {1} bytes of input its program has not read yet; refusing more")]
    Full(u64, usize),
}

struct Running {
    out_start: u64,
    started_at: u64,
    command_line: String,
    /// The `exec` token of this command, when an `exec` typed it.
    token: Option<u64>,
}

struct State {
    ring: Ring,
    integrated: bool,
    command_line: Option<String>,
    /// The token of the `X` mark just seen (its `C` mark follows).
    exec_start: Option<u64>,
    running: Option<Running>,
    waiters: VecDeque<Waiter>,
    next_token: u64,
    /// An `exec` refused at bash's continuation prompt, answered once the Ctrl-C that
    /// cancels the line has brought the prompt back (keys typed before that are lost).
    refusal_due: Option<(Waiter, String)>,
    exit_code: Option<i32>,
}

/// A live (or exited but not yet closed) terminal.
pub struct Terminal {
    /// Bytes queued for the PTY and not written yet (bounded by [`MAX_QUEUED_INPUT`]).
    queued_input: std::sync::atomic::AtomicUsize,
    pub id: u64,
    pub name: String,
    pub pid: u32,
    pub wrapped: bool,
    pub log_path: Option<PathBuf>,
    pub integrable: bool,
    pub correlation_id: Option<String>,
    master: Arc<AsyncFd<OwnedFd>>,
    input: mpsc::UnboundedSender<Input>,
    /// Held while input is written at once or queued, so it reaches the PTY in order.
    input_turn: Mutex<()>,
    state: Mutex<State>,
    phase: watch::Sender<Phase>,
    /// The extension's vehicle state; its changes are published while this is held, so
    /// they reach the bus in the order they happened.
    vehicle: Mutex<Vehicle>,
    /// Counts prompt marks (what the continuation cancel waits for).
    prompts: watch::Sender<u64>,
    /// One `exec` types at a time (the next waits for its answer), so an exec's keys are not
    /// typed ahead into, and echoed in, another exec's output.
    exec_turn: tokio::sync::Semaphore,
    closed: CancellationToken,
    /// The file whose presence tells the integration that a SIGHUP is the real hang-up
    /// (`close`, shutdown), not a stray one to the service's cgroup (which it survives).
    hangup_marker: Option<PathBuf>,
}

/// How an `exec` ended.
pub enum ExecOutcome {
    Finished(HistoryEvent),
    /// The shell came back to its prompt without running it (a syntax error, say).
    NotRun(String),
    Degraded,
    Timeout,
    Exited,
}

impl Terminal {
    /// Spawn the shell in a new PTY and start the terminal's tasks.
    pub fn spawn(
        shared: &Arc<ServerState>,
        id: u64,
        o: CreateOpts,
    ) -> std::io::Result<Arc<Terminal>> {
        let program = o.shell.clone().unwrap_or_else(shell::default_shell);
        let kind = shell::kind_of(&program);
        let nonce = shell::nonce()?;
        let mut env = shell::base_env(id, o.wrapped, &o.env);
        let args = shell::args_for(&program, kind, &shared.shell_dir, &nonce, &mut env)?;
        let (log_path, log_file) = if o.wrapped {
            (None, None)
        } else {
            let dir = shared.claws_dir.join("terminals");
            openfiles_os::fsutil::ensure_own_dir(&dir, 0o700)?;
            // `.claws/` itself may have been swapped for a symlink since the server started.
            openfiles_os::fsutil::verify_own_dirs(&dir, 2)?;
            let path = dir.join(format!("{id}.log"));
            let file = reader::LogFile::create(path.clone(), shared.cfg.terminal_log_bytes)?;
            (Some(path), Some(file))
        };
        let child = pty::spawn(&pty::Spawn {
            program: &program,
            args: &args,
            cwd: &o.cwd,
            env: &env,
            cols: o.cols,
            rows: o.rows,
            opost: o.opost,
        })?;
        let (tx, rx) = mpsc::unbounded_channel();
        let master = Arc::new(child.master);
        let term = Arc::new(Terminal {
            queued_input: std::sync::atomic::AtomicUsize::new(0),
            id,
            name: o.name,
            pid: child.pid,
            wrapped: o.wrapped,
            log_path,
            integrable: kind.is_some(),
            correlation_id: o.correlation_id,
            master: master.clone(),
            input: tx,
            input_turn: Mutex::new(()),
            state: Mutex::new(State {
                ring: Ring::new(shared.cfg.ring_bytes),
                integrated: false,
                command_line: None,
                exec_start: None,
                running: None,
                waiters: VecDeque::new(),
                next_token: 0,
                refusal_due: None,
                exit_code: None,
            }),
            phase: watch::channel(Phase::Starting).0,
            vehicle: Mutex::new(Vehicle::Provisioning),
            prompts: watch::channel(0).0,
            exec_turn: tokio::sync::Semaphore::new(1),
            closed: CancellationToken::new(),
            hangup_marker: shell::hangup_marker(&env),
        });
        // PROVISIONING, then BOOTING, before anything the shell does can move it on.
        term.publish_vehicle(shared, None, Vehicle::Provisioning);
        term.to_vehicle(shared, Vehicle::Booting);
        tokio::spawn(writer(shared.clone(), term.clone(), rx));
        tokio::spawn(reaper(shared.clone(), term.clone(), child.child));
        if let Err(e) = reader::start(shared.clone(), term.clone(), nonce, log_file) {
            // No reader, no terminal: the shell goes (the reaper collects it).
            term.closed.cancel();
            let pg = nix::unistd::Pid::from_raw(term.pid as i32);
            let _ = nix::sys::signal::killpg(pg, nix::sys::signal::Signal::SIGKILL);
            term.to_vehicle(shared, Vehicle::Closing);
            return Err(e);
        }
        Ok(term)
    }
}

impl Terminal {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    pub fn vehicle(&self) -> Vehicle {
        *self.vehicle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Move the vehicle state to `to` if the extension's table allows it, and publish
    /// `vehicle.<id>.state` (the extension's `{terminalId, from, to, ts}`, plus our
    /// `shellState`).
    pub(crate) fn to_vehicle(&self, shared: &ServerState, to: Vehicle) {
        let mut v = self.vehicle.lock().unwrap_or_else(|e| e.into_inner());
        if !v.allows(to) {
            return;
        }
        let from = std::mem::replace(&mut *v, to);
        self.publish_vehicle(shared, Some(from), to);
    }

    fn publish_vehicle(&self, shared: &ServerState, from: Option<Vehicle>, to: Vehicle) {
        shared.bus.publish_server(
            &format!("vehicle.{}.state", self.id),
            json!({"terminalId": self.id.to_string(), "from": from.map(Vehicle::name),
                   "to": to.name(), "ts": super::iso_now(), "shellState": self.phase().name()}),
        );
    }

    pub fn has_integration(&self) -> bool {
        self.lock().integrated
    }

    pub fn exit_code(&self) -> Option<i32> {
        self.lock().exit_code
    }

    /// The shell process is still running (what `list` reports as `status`).
    pub fn is_live(&self) -> bool {
        self.lock().exit_code.is_none()
    }

    /// (ring start, ring end).
    pub fn extent(&self) -> (u64, u64) {
        let st = self.lock();
        (st.ring.start(), st.ring.end())
    }

    /// A page of raw output starting at `offset` (the tail when `None`), at most `limit` bytes,
    /// on character boundaries: (from, to, bytes, total).
    pub fn read(&self, offset: Option<u64>, limit: u64) -> (u64, u64, Vec<u8>, u64) {
        let st = self.lock();
        let end = st.ring.end();
        let from = offset.unwrap_or_else(|| end.saturating_sub(limit));
        let (a, b) = st.ring.page(from, limit);
        (a, b, st.ring.slice(a, b), end)
    }

    /// Queue input; bytes reach the PTY in the order they were queued. Refused when the
    /// program has not read [`MAX_QUEUED_INPUT`] bytes queued before.
    pub fn send(&self, text: &str, newline: bool, paste: bool) -> Result<(), SendError> {
        let msg = if paste {
            Input::Paste {
                text: text.as_bytes().to_vec(),
                enter: newline,
            }
        } else {
            let mut b = text.as_bytes().to_vec();
            if newline {
                b.push(b'\r');
            }
            Input::Bytes(b)
        };
        self.queue(msg)
    }

    pub fn resize(&self, cols: u16, rows: u16) -> std::io::Result<()> {
        pty::resize(self.master.get_ref(), cols, rows)
    }

    /// Run `command` at the prompt and wait for its end mark.
    pub async fn exec(&self, command: &str, timeout: Duration) -> ExecOutcome {
        if !self.integrable {
            return ExecOutcome::Degraded;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        // Another exec's turn: wait for it like for a command typed by `send` (below).
        let busy = tokio::time::Instant::now() + timeout.min(BUSY_WAIT);
        let Ok(Ok(_turn)) = tokio::time::timeout_at(busy, self.exec_turn.acquire()).await else {
            return if timeout <= BUSY_WAIT {
                ExecOutcome::Timeout
            } else {
                ExecOutcome::Degraded
            };
        };
        // A fresh shell gets until its first prompt (bounded) before we call it degraded.
        let mut rx = self.phase.subscribe();
        let first = tokio::time::Instant::now() + timeout.min(Duration::from_secs(10));
        let _ = tokio::time::timeout_at(first, rx.wait_for(|p| *p != Phase::Starting)).await;
        // A command typed by `send` just before may still be finishing: give it a moment to
        // come back to the prompt; a program that stays in the foreground gets `degraded`.
        if *rx.borrow() == Phase::Running {
            let busy = tokio::time::Instant::now() + timeout.min(BUSY_WAIT);
            let _ = tokio::time::timeout_at(busy, rx.wait_for(|p| *p != Phase::Running)).await;
        }
        let (token, done) = {
            let mut st = self.lock();
            let phase = *self.phase.borrow();
            if !st.integrated || phase != Phase::Prompt {
                return if phase == Phase::Exited {
                    ExecOutcome::Exited
                } else {
                    ExecOutcome::Degraded
                };
            }
            let (tx, done) = oneshot::channel();
            st.next_token += 1;
            let token = st.next_token;
            let input_at = st.ring.end();
            st.waiters.push_back(Waiter {
                token,
                command: command.to_owned(),
                input_at,
                tx,
            });
            (token, done)
        };
        let _ = self.queue(Input::Bytes(exec_input(command, token)));
        match tokio::time::timeout_at(deadline, done).await {
            Ok(Ok(Ok(ev))) => ExecOutcome::Finished(ev),
            Ok(Ok(Err(NotRun(said)))) => ExecOutcome::NotRun(said),
            Ok(Err(_)) => ExecOutcome::Exited,
            Err(_) => {
                self.lock().waiters.retain(|w| w.token != token);
                ExecOutcome::Timeout
            }
        }
    }

    /// Ctrl-C until bash is back at its prompt: a Ctrl-C that lands while bash is between
    /// printing `PS2` and reading the line is swallowed, and nothing shows when; each try
    /// waits for a prompt mark, bounded.
    async fn cancel_continuation(self: Arc<Self>) {
        let mut rx = self.prompts.subscribe();
        for _ in 0..CANCEL_TRIES {
            rx.mark_unchanged();
            if self.queue(Input::Bytes(vec![0x03])).is_err() {
                return;
            }
            let _ = tokio::time::timeout(CANCEL_RETRY, rx.changed()).await;
            if self.lock().refusal_due.is_none() {
                return;
            }
        }
    }

    /// Hang up the process group; SIGKILL after the grace period if it is still there.
    /// Resolves when the shell is gone (or killed).
    pub async fn hang_up(self: &Arc<Self>, grace: Duration) {
        let pg = nix::unistd::Pid::from_raw(self.pid as i32);
        let mut rx = self.phase.subscribe();
        if *rx.borrow() != Phase::Exited {
            if let Some(m) = &self.hangup_marker {
                // The integration exits on a SIGHUP only when this file is there.
                let _ = openfiles_os::fsutil::write_atomic(m, b"", 0o600);
            }
            let _ = nix::sys::signal::killpg(pg, nix::sys::signal::Signal::SIGHUP);
            let _ = nix::sys::signal::killpg(pg, nix::sys::signal::Signal::SIGCONT);
            let gone = tokio::time::timeout(grace, rx.wait_for(|p| *p == Phase::Exited))
                .await
                .is_ok_and(|r| r.is_ok());
            if !gone {
                let _ = nix::sys::signal::killpg(pg, nix::sys::signal::Signal::SIGKILL);
                let _ = tokio::time::timeout(grace, rx.wait_for(|p| *p == Phase::Exited)).await;
            }
        }
        if let Some(m) = &self.hangup_marker {
            let _ = std::fs::remove_file(m);
        }
        self.closed.cancel();
    }

    /// Where the shell is now, and the vehicle state that follows from it: the first prompt
    /// makes it READY, a command BUSY, the prompt after one IDLE, the exit CLOSING then
    /// CLOSED.
    fn set_phase(&self, shared: &ServerState, to: Phase) {
        let from = self.phase.send_replace(to);
        if from == to {
            return;
        }
        match (to, self.vehicle()) {
            (Phase::Prompt, Vehicle::Booting) => self.to_vehicle(shared, Vehicle::Ready),
            (Phase::Prompt, Vehicle::Busy) => self.to_vehicle(shared, Vehicle::Idle),
            (Phase::Running, _) => self.to_vehicle(shared, Vehicle::Busy),
            (Phase::Exited, _) => {
                self.to_vehicle(shared, Vehicle::Closing);
                self.to_vehicle(shared, Vehicle::Closed);
            }
            _ => {}
        }
    }

    fn on_mark(self: &Arc<Self>, shared: &ServerState, mark: Mark) {
        tracing::trace!(terminal = self.id, mark = ?mark.kind, "shell mark");
        match mark.kind {
            MarkKind::Prompt => self.on_prompt(shared),
            MarkKind::CommandLine(line) => self.lock().command_line = Some(line),
            MarkKind::ExecStart(token) => self.lock().exec_start = Some(token),
            MarkKind::Refused(token, why) => self.on_refused(mark.start, token, why),
            MarkKind::Start => self.on_start(shared, mark.end),
            MarkKind::End(code) => self.on_end(shared, mark.start, code),
        }
    }

    /// The shell is at its prompt: an `exec` refused at a continuation prompt is answered.
    fn on_prompt(self: &Arc<Self>, shared: &ServerState) {
        let due = {
            let mut st = self.lock();
            st.integrated = true;
            st.exec_start = None;
            st.refusal_due.take()
        };
        self.set_phase(shared, Phase::Prompt);
        self.prompts.send_modify(|n| *n += 1);
        if let Some((w, why)) = due {
            let _ = w.tx.send(Err(NotRun(why)));
        }
    }

    /// The shell refused the line of the `exec` with `token` (the `R` mark at `at`).
    fn on_refused(self: &Arc<Self>, at: u64, token: u64, why: String) {
        let at_continuation = why == AT_CONTINUATION;
        let (waiter, lost) = {
            let mut st = self.lock();
            st.integrated = true;
            let lost = take_before(&mut st.waiters, token);
            let waiter = take(&mut st.waiters, token).map(|w| {
                let why = if why.trim().is_empty() {
                    let said = plain_output(&st.ring.slice(w.input_at, at));
                    shell_words(&said, &w.command)
                } else {
                    why
                };
                (w, why)
            });
            (waiter, lost)
        };
        fail_lost(lost);
        if at_continuation {
            // bash waits at its continuation prompt: cancel the line, answer at the
            // prompt that follows.
            self.lock().refusal_due = waiter;
            tokio::spawn(self.clone().cancel_continuation());
        } else if let Some((w, why)) = waiter {
            let _ = w.tx.send(Err(NotRun(why)));
        }
    }

    /// A command starts; its output begins at `out_start`.
    fn on_start(self: &Arc<Self>, shared: &ServerState, out_start: u64) {
        let (command_line, lost) = {
            let mut st = self.lock();
            st.integrated = true;
            let line = st.command_line.take().unwrap_or_default();
            let token = st.exec_start.take();
            let lost = token
                .map(|t| take_before(&mut st.waiters, t))
                .unwrap_or_default();
            // An `exec` reports the command as it was asked for.
            let line = token
                .and_then(|t| st.waiters.iter().find(|w| w.token == t))
                .map(|w| w.command.clone())
                .unwrap_or(line);
            st.running = Some(Running {
                out_start,
                started_at: now_ms(),
                command_line: line.clone(),
                token,
            });
            (line, lost)
        };
        fail_lost(lost);
        self.set_phase(shared, Phase::Running);
        shared.bus.publish_server(
            &format!("command.{}.start", self.id),
            json!({"terminalId": self.id.to_string(), "commandLine": command_line,
                   "command": command_line, "startedAt": now_ms()}),
        );
    }

    /// A command ended with `code` (the `D` mark at `at`): history, bus, and its `exec`.
    fn on_end(self: &Arc<Self>, shared: &ServerState, at: u64, code: i32) {
        let (ev, waiter) = {
            let mut st = self.lock();
            let Some(run) = st.running.take() else {
                return;
            };
            // History keeps the tail of the output; strip only what can be kept
            // (escape-heavy output shrinks, hence the margin).
            let keep = shared.cfg.history_output_bytes as u64 * 4;
            let from = run.out_start.max(at.saturating_sub(keep));
            let (from, _) = st.ring.page(from, 0);
            let raw = st.ring.slice(from, at);
            let waiter = run.token.and_then(|t| take(&mut st.waiters, t));
            let ev = HistoryEvent {
                seq: 0,
                terminal_id: self.id.to_string(),
                terminal_name: self.name.clone(),
                command_line: run.command_line,
                output: plain_output(trim_prompt_sp(&raw)),
                exit_code: code,
                started_at: run.started_at,
                ended_at: now_ms(),
            };
            (ev, waiter)
        };
        // The shell prints its next prompt at once; input queued now is read there.
        self.set_phase(shared, Phase::Prompt);
        let ev = shared.history.push(ev);
        shared.bus.publish_server(
            &format!("command.{}.end", self.id),
            json!({"terminalId": ev.terminal_id, "seq": ev.seq, "commandLine": ev.command_line,
                   "command": ev.command_line, "exitCode": ev.exit_code,
                   "durationMs": ev.ended_at.saturating_sub(ev.started_at),
                   "startedAt": ev.started_at, "endedAt": ev.ended_at}),
        );
        if let Some(w) = waiter {
            let _ = w.tx.send(Ok(ev));
        }
    }
}

async fn reaper(shared: Arc<ServerState>, term: Arc<Terminal>, mut child: tokio::process::Child) {
    use std::os::unix::process::ExitStatusExt;
    let code = match child.wait().await {
        Ok(st) => st.code().unwrap_or_else(|| 128 + st.signal().unwrap_or(0)),
        Err(_) => -1,
    };
    {
        let mut st = term.lock();
        st.exit_code = Some(code);
        st.waiters.clear();
        st.refusal_due = None;
        st.running = None;
    }
    term.set_phase(&shared, Phase::Exited);
    shared.bus.publish_server(
        "system.worker.process_exited",
        json!({"terminal_id": term.id.to_string(), "correlation_id": term.correlation_id,
               "exit_code": code, "exited_at": now_ms()}),
    );
}

/// zsh's PROMPT_SP (`%`/`#` mark, a line of spaces, `\r \r`) is drawn before `precmd`, so it
/// lands before the end mark; drop it from the command's output.
fn trim_prompt_sp(raw: &[u8]) -> &[u8] {
    let Some(mut r) = raw.strip_suffix(b"\r \r") else {
        return raw;
    };
    let spaces = r.iter().rev().take_while(|&&b| b == b' ').count();
    if spaces < 8 {
        return raw;
    }
    r = &r[..r.len() - spaces];
    // Drop trailing SGR sequences (`ESC [ … m`).
    let strip_sgr = |mut r: &[u8]| -> usize {
        while r.last() == Some(&b'm') {
            match r.iter().rposition(|&b| b == 0x1b) {
                Some(i) if r[i..].get(1) == Some(&b'[') => r = &r[..i],
                _ => break,
            }
        }
        r.len()
    };
    r = &r[..strip_sgr(r)];
    if matches!(r.last(), Some(b'%' | b'#')) {
        r = &r[..r.len() - 1];
        r = &r[..strip_sgr(r)];
        return r;
    }
    raw
}
