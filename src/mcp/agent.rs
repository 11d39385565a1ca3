//! Which agent CLI workers start (`.claws/claude-bin`, then `CLAWS_CLAUDE_BIN`, then
//! `claude`), and the marker that always ends a worker. Shared by the worker tools and
//! `claws_get_bin` / `claws_set_bin` / `claws_done`.

use std::path::Path;

/// The completion marker that always counts.
pub const DONE_MARKER: &str = "__CLAWS_DONE__";
/// The agent CLI workers start, and where that choice comes from.
pub fn agent_bin(root: &Path) -> (String, &'static str) {
    let from_file = std::fs::read_to_string(root.join(".claws").join("claude-bin"))
        .ok()
        .and_then(|t| t.lines().next().map(|l| l.trim().to_owned()))
        .filter(|l| !l.is_empty());
    if let Some(b) = from_file {
        return (b, "file");
    }
    match std::env::var("CLAWS_CLAUDE_BIN")
        .ok()
        .filter(|v| !v.is_empty())
    {
        Some(b) => (b, "env"),
        None => ("claude".into(), "default"),
    }
}
