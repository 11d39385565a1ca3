//! Replaying the event log to a new subscription (`subscribe` with `fromCursor`): the stored
//! events between its cursor and the log's end when it subscribed, then `caught-up`.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::log::{self, Cursor};
use super::topic;
use super::writer::Progress;
use openfiles_wire::claws::PROTOCOL_2;

/// Stored events to stream to one new subscription, then its `caught-up` frame.
pub struct Replay {
    pub(super) dir: PathBuf,
    pub(super) written: Arc<Progress>,
    pub(super) sub_id: String,
    pub(super) segs: Vec<String>,
    pub(super) from: Cursor,
    pub(super) until: Cursor,
}

impl Replay {
    /// Hand every frame line to `send`, in log order, ending with `caught-up` (blocking file
    /// reads). Frames are read from disk as they are sent, never gathered in memory: with a
    /// bounded channel behind `send`, a subscriber that does not read holds a few frames,
    /// not the whole log. Stops early (returning false) when `send` does.
    pub fn stream(self, mut send: impl FnMut(String) -> bool) -> bool {
        // Events placed before `until` may still be on their way to the disk.
        self.written.wait_written(self.until);
        let mut count = 0u64;
        let mut open = true;
        let segments = log::segments(&self.dir);
        for n in segments {
            if !open {
                break;
            }
            if n < self.from.segment || n > self.until.segment {
                continue;
            }
            let from = if n == self.from.segment {
                self.from.offset
            } else {
                0
            };
            let until = if n == self.until.segment {
                self.until.offset
            } else {
                u64::MAX
            };
            let _ = log::for_each_event(&self.dir, n, from, until, |cur, head, line| {
                if !open {
                    return;
                }
                let ts: Vec<&str> = head.topic.split('.').collect();
                if !topic::matches(&self.segs, &ts) {
                    return;
                }
                // Splice the stored object into a frame instead of re-serializing it.
                let rest = String::from_utf8_lossy(&line[1..]);
                count += 1;
                open = send(format!(
                    "{{\"push\":\"message\",\"protocol\":\"{PROTOCOL_2}\",\"replayed\":true,\"subscriptionId\":\"{}\",\"cursor\":\"{cur}\",{rest}\n",
                    self.sub_id
                ));
            });
        }
        if !open {
            return false;
        }
        let mut s =
            json!({"push": "caught-up", "protocol": PROTOCOL_2, "subscriptionId": self.sub_id,
                           "replayedCount": count, "resumeCursor": self.until.to_string()})
            .to_string();
        s.push('\n');
        send(s)
    }
}
