//! Where a service manager looks for a user's own units: which manager this platform has
//! ([`Platform`]), the systemd user unit folder and the LaunchAgent path. Read by both
//! `service install` ([`super::install`]) and the read-only report ([`super::installed`]).

use std::path::PathBuf;

use anyhow::Context as _;

use super::units::LAUNCHD_LABEL;

/// Which service manager to write for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Platform {
    Systemd,
    Launchd,
}

impl Platform {
    /// The service manager of the platform we were built for.
    pub fn native() -> Platform {
        match crate::paths::Os::native() {
            crate::paths::Os::MacOs => Platform::Launchd,
            crate::paths::Os::Unix => Platform::Systemd,
        }
    }
}

pub fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_owned()))
        .context("cannot tell the home directory (HOME is not set)")
}

/// `$XDG_CONFIG_HOME/systemd/user` (else `~/.config/systemd/user`), where systemd looks
/// for a user's own units.
pub fn systemd_unit_dir() -> anyhow::Result<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => home()?.join(".config"),
    };
    Ok(base.join("systemd/user"))
}

/// `~/Library/LaunchAgents/org.openfiles.openfiles.plist`.
pub fn launchd_plist_path() -> anyhow::Result<PathBuf> {
    Ok(home()?
        .join("Library/LaunchAgents")
        .join(format!("{LAUNCHD_LABEL}.plist")))
}
