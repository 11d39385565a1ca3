//! `openfiles serve`: activation, readiness, logging, signals and the one shutdown path.
//! (Being built: see issue 2.)

use std::path::PathBuf;

/// What `openfiles serve` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub socket: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub workspaces: Vec<PathBuf>,
    pub check_config: bool,
}

/// Run the service until it is told to stop.
pub fn run(_opts: Options) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
