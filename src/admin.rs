//! The small client commands: `status`, `add`, `forget`.

use std::path::Path;

pub fn status(_socket: Option<&Path>, _json: bool) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
pub fn add(_socket: Option<&Path>, _dir: &Path) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
pub fn forget(_socket: Option<&Path>, _dir: &Path) -> anyhow::Result<u8> {
    anyhow::bail!("not built yet")
}
