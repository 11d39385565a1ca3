//! The per-check timeline: when `OPENFILES_PYRIGHT_LOG` is set (any value), each check's
//! steps — asked, the warm server notified, the publishes it awaits, its answer, the
//! findings collected — as lines on stderr, which the plugin host forwards to the service's
//! log (stamped there): where a warm check's time goes, beside the service's own debug lines
//! (`check sent`, `check answered`, `wait answered`). Off, it costs one cached look at the
//! environment.

use std::sync::OnceLock;

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
