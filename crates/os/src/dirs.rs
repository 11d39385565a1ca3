//! Where the user's own openfiles folders are: the state folder (`$OPENFILES_STATE_DIR`,
//! else `$XDG_STATE_HOME/openfiles`, `~/.local/state/openfiles`; on macOS
//! `~/Library/Application Support/openfiles`). One rule for every crate: the service's
//! session state and the Claws server's `[claws.auth]` secret live under the same folder, so
//! a client finds them where the service put them.

use std::path::PathBuf;

/// The state folder (not created here).
pub fn state_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("OPENFILES_STATE_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(d) = directories::ProjectDirs::from("", "", "openfiles") {
        if let Some(s) = d.state_dir() {
            return s.to_owned();
        }
        return d.data_local_dir().to_owned();
    }
    std::env::temp_dir().join(format!("openfiles-state-{}", nix::unistd::getuid()))
}
