//! Command history for `poll` and `exec`: every command the shell integration saw finish, in
//! any terminal, numbered by one `seq` across the workspace. Bounded by count; each output is
//! capped in bytes (on a character boundary).

use std::collections::VecDeque;
use std::sync::Mutex;

pub use openfiles_wire::claws::request::HistoryEvent;

#[derive(Debug)]
pub struct History {
    inner: Mutex<(u64, VecDeque<HistoryEvent>)>,
    keep: usize,
    output_cap: usize,
}

impl History {
    pub fn new(keep: usize, output_cap: usize) -> History {
        History {
            inner: Mutex::new((0, VecDeque::new())),
            keep: keep.max(1),
            output_cap,
        }
    }

    /// Number the event, cap its output, keep it.
    pub fn push(&self, mut ev: HistoryEvent) -> HistoryEvent {
        if ev.output.len() > self.output_cap {
            let mut cut = ev.output.len() - self.output_cap;
            while !ev.output.is_char_boundary(cut) {
                cut += 1;
            }
            ev.output.drain(..cut);
        }
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        ev.seq = g.0;
        g.1.push_back(ev.clone());
        while g.1.len() > self.keep {
            g.1.pop_front();
        }
        ev
    }

    /// Events with `seq > since`: at most `limit`, the newest ones when more matched.
    /// Returns (events, cursor, truncated).
    pub fn since(&self, since: u64, limit: usize) -> (Vec<HistoryEvent>, u64, bool) {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let matched: Vec<&HistoryEvent> = g.1.iter().filter(|e| e.seq > since).collect();
        let truncated = matched.len() > limit;
        let events: Vec<HistoryEvent> = matched[matched.len().saturating_sub(limit)..]
            .iter()
            .map(|e| (*e).clone())
            .collect();
        let cursor = events.last().map_or(since, |e| e.seq);
        (events, cursor, truncated)
    }
}
