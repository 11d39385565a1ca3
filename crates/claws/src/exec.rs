//! How an `exec` finds its own command among everything the shell runs. `exec` types the
//! command, a private key, a per-terminal token, a second key and Enter ([`exec_input`]); the
//! integration scripts (crates/claws/shell-integration/) bind the keys to move the token from the
//! line into the shell, which names it in an `X` mark just before the command's start mark,
//! or in an `R` mark when it refuses the line (syntax error, incomplete input). Waiters are
//! matched by token only: prompts, starts and ends of lines typed with `send` never touch
//! them, however many of those are still due. The waiter queue lives in the terminal's
//! state (terminal.rs); these are its types and rules.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::oneshot;

use super::history::HistoryEvent;

/// The reason bash's `R` mark gives when an `exec` line left it at its continuation prompt
/// (`PS2`), which the terminal then cancels with Ctrl-C (crates/claws/shell-integration/bashrc).
pub(super) const AT_CONTINUATION: &str = "incomplete command (continuation prompt)";
/// How long `exec` waits for a running command to come back to the prompt before it
/// answers `degraded` (a program in the foreground would read the typed command).
pub(super) const BUSY_WAIT: Duration = Duration::from_secs(3);
/// Ctrl-C tries (and the wait for a prompt after each) to leave bash's continuation prompt.
pub(super) const CANCEL_TRIES: u32 = 20;
pub(super) const CANCEL_RETRY: Duration = Duration::from_millis(250);

/// An `exec` waiting for its command. It is matched by its token, which the shell echoes in
/// the `X` mark before the command starts or the `R` mark when it refuses the line; prompts,
/// starts and ends of lines typed by `send` never touch it.
pub(super) struct Waiter {
    pub(super) token: u64,
    pub(super) command: String,
    /// Ring offset when the command was typed.
    pub(super) input_at: u64,
    /// The finished event, or the shell's words when it did not run the command.
    pub(super) tx: oneshot::Sender<Result<HistoryEvent, NotRun>>,
}

/// Why an `exec`'s command did not run: the shell's words when it refused the line, or that
/// a program in the foreground read it (the text `exec` answers with).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(super) struct NotRun(pub(super) String);

/// The keys `exec` types: the command (a bracketed paste when it has several lines, so the
/// line editor takes it whole), `ESC[9901~`, the token, `ESC[9902~`, Enter. The integration
/// binds the two keys to move the token from the line into the shell, which echoes it in
/// the `X` mark of the command it starts or the `R` mark of a line it refuses.
pub(super) fn exec_input(command: &str, token: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(command.len() + 40);
    let multi = command.contains(['\n', '\r']);
    if multi {
        b.extend_from_slice(b"\x1b[200~");
    }
    b.extend_from_slice(command.as_bytes());
    if multi {
        b.extend_from_slice(b"\x1b[201~");
    }
    b.extend_from_slice(format!("\x1b[9901~{token}\x1b[9902~\r").as_bytes());
    b
}

pub(super) fn take(waiters: &mut VecDeque<Waiter>, token: u64) -> Option<Waiter> {
    let i = waiters.iter().position(|w| w.token == token)?;
    waiters.remove(i)
}

/// Input reaches the shell in order: once the shell reports token `t`, the waiters typed
/// before it that it never reported will never be (a program read their keys instead).
pub(super) fn take_before(waiters: &mut VecDeque<Waiter>, token: u64) -> Vec<Waiter> {
    let mut lost = Vec::new();
    while waiters.front().is_some_and(|w| w.token < token) {
        lost.extend(waiters.pop_front());
    }
    lost
}

pub(super) fn fail_lost(lost: Vec<Waiter>) {
    for w in lost {
        let _ = w.tx.send(Err(NotRun(
            "the command did not reach the shell's prompt (a program read it)".into(),
        )));
    }
}

/// What the shell said about a line it refused, from its output since the line was typed:
/// the text after the last echo of the command's last line (the line editor redraws it).
pub(super) fn shell_words(said: &str, command: &str) -> String {
    let last = command.lines().last().unwrap_or(command).trim();
    let rest = match said.rfind(last) {
        Some(i) if !last.is_empty() => &said[i + last.len()..],
        _ => said,
    };
    rest.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(token: u64) -> (Waiter, oneshot::Receiver<Result<HistoryEvent, NotRun>>) {
        let (tx, rx) = oneshot::channel();
        let w = Waiter {
            token,
            command: format!("c{token}"),
            input_at: 0,
            tx,
        };
        (w, rx)
    }

    #[test]
    fn words_after_the_echo() {
        let said = "if then$ if then2$ if then\nbash: syntax error near unexpected token `then'\n";
        assert_eq!(
            shell_words(said, "if then"),
            "bash: syntax error near unexpected token `then'"
        );
        assert_eq!(shell_words("b\nnope", "a\nb"), "nope");
        assert_eq!(shell_words("other", "x"), "other");
    }

    #[test]
    fn exec_keys() {
        assert_eq!(
            exec_input("true", 7),
            b"true\x1b[9901~7\x1b[9902~\r".to_vec()
        );
        assert_eq!(
            exec_input("a\nb", 12),
            b"\x1b[200~a\nb\x1b[201~\x1b[9901~12\x1b[9902~\r".to_vec()
        );
    }

    #[test]
    fn a_later_token_fails_the_earlier_unreported_ones() {
        let mut q = VecDeque::new();
        let mut rxs = Vec::new();
        for t in [3, 4, 6] {
            let (w, rx) = waiter(t);
            q.push_back(w);
            rxs.push(rx);
        }
        let lost = take_before(&mut q, 6);
        assert_eq!(lost.iter().map(|w| w.token).collect::<Vec<_>>(), [3, 4]);
        fail_lost(lost);
        assert!(rxs[0].try_recv().unwrap().is_err());
        assert_eq!(take(&mut q, 6).map(|w| w.command), Some("c6".into()));
        assert!(take(&mut q, 6).is_none());
    }
}
