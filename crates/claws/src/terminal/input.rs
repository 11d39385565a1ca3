//! The terminal's input path: what `send` and `exec` queue ([`Input`]), in the order they
//! queued it. Input that finds nothing queued ahead of it is written to the PTY at once, on
//! the caller's thread (the master is non-blocking), so a keystroke reaches the shell with
//! no task hand-off or wake-up in between; what the kernel does not take at once, and
//! anything queued behind it, goes through the writer task, which waits while the PTY's
//! input queue is full. A bracketed paste always goes through the writer (its Enter follows
//! after a pause).

use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::super::{now_ms, pty, ServerState};
use super::{SendError, Terminal, MAX_QUEUED_INPUT};

/// Pause between a bracketed paste and its Enter, so TUIs see them apart.
const PASTE_ENTER_DELAY: Duration = Duration::from_millis(30);

pub(super) enum Input {
    Bytes(Vec<u8>),
    Paste { text: Vec<u8>, enter: bool },
}

impl Input {
    /// What it counts against [`MAX_QUEUED_INPUT`] while queued: its bytes; a paste at least
    /// one, so that input queued behind an empty paste's Enter never overtakes it.
    fn len(&self) -> usize {
        match self {
            Input::Bytes(b) => b.len(),
            Input::Paste { text, .. } => text.len().max(1),
        }
    }
}

impl Terminal {
    /// Write `msg` now or queue it; refused when the program has not read
    /// [`MAX_QUEUED_INPUT`] bytes queued before.
    pub(super) fn queue(&self, msg: Input) -> Result<(), SendError> {
        let len = msg.len();
        // One caller at a time decides between writing at once and queueing.
        let _turn = self
            .input_turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = self.queued_input.fetch_add(len, Ordering::AcqRel);
        if before > 0 && before + len > MAX_QUEUED_INPUT {
            self.queued_input.fetch_sub(len, Ordering::AcqRel);
            return Err(SendError::Full(self.id, before));
        }
        let msg = match msg {
            // Nothing queued or being written ahead (the writer counts its input down only
            // once written): this input may go first.
            Input::Bytes(b) if before == 0 => {
                let n = pty::write_now(self.master.get_ref().as_fd(), &b);
                self.queued_input.fetch_sub(n, Ordering::AcqRel);
                if n == b.len() {
                    return Ok(());
                }
                Input::Bytes(b[n..].to_vec())
            }
            msg => msg,
        };
        let left = msg.len();
        self.input.send(msg).map_err(|_| {
            self.queued_input.fetch_sub(left, Ordering::AcqRel);
            SendError::Exited(self.id)
        })
    }
}

/// The writer task: queued input, in order, waiting while the PTY's input queue is full.
pub(super) async fn writer(
    shared: Arc<ServerState>,
    term: Arc<Terminal>,
    mut rx: mpsc::UnboundedReceiver<Input>,
) {
    loop {
        let input = tokio::select! {
            _ = term.closed.cancelled() => return,
            i = rx.recv() => match i { Some(i) => i, None => return },
        };
        let len = input.len();
        let ok = match input {
            Input::Bytes(b) => pty::write_all(&term.master, &b).await.is_ok(),
            Input::Paste { text, enter } => {
                let mut b = Vec::with_capacity(text.len() + 12);
                b.extend_from_slice(b"\x1b[200~");
                b.extend_from_slice(&text);
                b.extend_from_slice(b"\x1b[201~");
                let ok = pty::write_all(&term.master, &b).await.is_ok();
                shared.bus.publish_server(
                    "system.terminal.paste_complete",
                    json!({"terminalId": term.id.to_string(), "totalSize": b.len(), "ts": now_ms()}),
                );
                if ok && enter {
                    tokio::time::sleep(PASTE_ENTER_DELAY).await;
                    pty::write_all(&term.master, b"\r").await.is_ok()
                } else {
                    ok
                }
            }
        };
        term.queued_input.fetch_sub(len, Ordering::AcqRel);
        if !ok {
            tracing::debug!(terminal = term.id, "PTY write failed; writer stops");
            return;
        }
    }
}
