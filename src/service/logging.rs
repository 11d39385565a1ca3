//! Logging setup: journald when we run under systemd and journald answers, otherwise
//! human-readable lines on stderr. The level comes from `RUST_LOG` if set, else from the
//! config's `service.log_level`.

use tracing_subscriber::{layer::SubscriberExt, util::SubscriberInitExt, EnvFilter};

/// Install the global subscriber. Safe to call once per process; later calls are ignored.
pub fn init(level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let under_systemd =
        std::env::var_os("JOURNAL_STREAM").is_some() || std::env::var_os("INVOCATION_ID").is_some();
    if under_systemd {
        if let Ok(journald) = tracing_journald::layer() {
            let _ = tracing_subscriber::registry()
                .with(filter)
                .with(journald.with_syslog_identifier("openfiles".into()))
                .try_init();
            return;
        }
    }
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_target(false),
        )
        .try_init();
}
