//! The per-check timeline: when `OPENFILES_PYRIGHT_LOG` is set (any value), each check's
//! steps — asked, the warm server notified, the publishes it awaits, its answer, the
//! findings collected — as lines on stderr, which the plugin host forwards to the service's
//! log (stamped there): where a warm check's time goes, beside the service's own debug lines
//! (`check sent`, `check answered`, `wait answered`); [`Check`], one warm-server check's
//! lines. Off, it costs one cached look at the environment.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

/// Whether `OPENFILES_PYRIGHT_LOG` asks for the timeline.
pub fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("OPENFILES_PYRIGHT_LOG").is_some_and(|v| !v.is_empty()))
}

/// One line of the timeline (`what` is only built when it is on).
pub fn trace(what: impl FnOnce() -> String) {
    if on() {
        eprintln!("openfiles-plugin-pyright: {}", what());
    }
}

/// One warm-server check's timeline: the notification, each publish of a watched file (the
/// changed files and their users), the answer, in ms since the notification — where a warm
/// check's time goes.
pub struct Check {
    on: bool,
    since: Instant,
    /// Each watched document's publish count as last seen.
    seen: HashMap<String, u64>,
}

impl Check {
    /// A check notified at `since`, watching `watched` (uri, publishes so far); its first
    /// line is `header`.
    pub fn new(
        since: Instant,
        watched: impl Iterator<Item = (String, u64)>,
        header: impl FnOnce() -> String,
    ) -> Check {
        let on = on();
        let seen = if on {
            watched.collect()
        } else {
            HashMap::new()
        };
        let c = Check { on, since, seen };
        if on {
            c.line(&header());
        }
        c
    }

    /// One line, stamped with the time since the notification.
    pub fn line(&self, what: &str) {
        if self.on {
            let ms = self.since.elapsed().as_millis();
            trace(|| format!("timeline +{ms} ms: {what}"));
        }
    }

    /// Note each new publish of a watched document.
    pub fn publishes(&mut self, p: &crate::rpc::Pushed) {
        if !self.on {
            return;
        }
        let mut news = Vec::new();
        for (u, n) in self.seen.iter_mut() {
            let now = p.published.get(u).copied().unwrap_or(0);
            if now > *n {
                *n = now;
                let errors = p.diagnostics.get(u).map_or(0, Vec::len);
                news.push(format!("published {u} ({errors} diagnostics)"));
            }
        }
        for n in news {
            self.line(&n);
        }
    }
}
