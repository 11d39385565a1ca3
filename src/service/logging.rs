//! Logging setup: journald when we run under systemd and journald answers, otherwise
//! human-readable lines on stderr (colours only on a terminal and without `NO_COLOR`) and in
//! the state dir's bounded `serve.log` (`super::logfile`, read by `openfiles logs`), so a
//! machine without journald still keeps what the service said. The level comes from
//! `RUST_LOG` if set, else from the config's `service.log_level`; a config reload can change
//! the latter ([`set_level`]).

use std::sync::OnceLock;

use tracing_subscriber::{
    layer::SubscriberExt, reload, util::SubscriberInitExt, EnvFilter, Registry,
};

/// Swaps the level filter at run time; absent when `RUST_LOG` fixed the filter.
static LEVEL: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();

/// Install the global subscriber. Safe to call once per process; later calls are ignored.
/// `state_dir` is where `serve.log` goes when journald is not used; `stderr: false` leaves
/// stderr out (an autostarted service's stderr is that file already).
pub fn init(level: &str, state_dir: &std::path::Path, stderr: bool) {
    let (filter, from_env) = match EnvFilter::try_from_default_env() {
        Ok(f) => (f, true),
        Err(_) => (
            EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("info")),
            false,
        ),
    };
    let (filter, handle) = reload::Layer::new(filter);
    if !from_env {
        let _ = LEVEL.set(handle);
    }
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
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let file = super::logfile::LogFile::open(state_dir)
        .map_err(|e| {
            eprintln!(
                "openfiles: cannot open the log file in {}: {e}",
                state_dir.display()
            )
        })
        .ok()
        .map(|f| {
            tracing_subscriber::fmt::layer()
                .with_writer(f)
                .with_ansi(false)
                .with_target(false)
        });
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(stderr.then(|| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(colour)
                .with_target(false)
        }))
        .with(file)
        .try_init();
}

/// Apply a reloaded `service.log_level` (ignored when `RUST_LOG` set the filter).
pub fn set_level(level: &str) {
    let Some(handle) = LEVEL.get() else { return };
    match EnvFilter::try_new(level) {
        Ok(filter) => {
            if let Err(e) = handle.reload(filter) {
                tracing::warn!("cannot change the log level: {e}");
            }
        }
        Err(e) => tracing::warn!("log_level {level:?} is not a valid filter: {e}"),
    }
}
