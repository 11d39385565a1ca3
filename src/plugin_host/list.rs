//! `openfiles plugins [--json]`: discover and start every plugin the way the service
//! would, print what was found, loaded or refused (and why), then stop them.

use std::path::Path;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::PluginManager;
use openfiles_wire::control::{PluginState, PluginStatus};

/// Run the command; exit status 0 (problems are reported, not failures).
pub fn run(config: Option<&Path>, json: bool) -> anyhow::Result<u8> {
    let (cfg, _) = crate::config::Config::load(config)?;
    let state_dir = crate::paths::state_dir();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let rows = rt.block_on(async {
        let token = CancellationToken::new();
        let manager = PluginManager::start(&cfg, &state_dir, token.clone()).await;
        let rows = manager.status_rows();
        token.cancel();
        manager.wait_stopped().await;
        rows
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if rows.is_empty() {
        println!("no plugins found (search: config plugins.paths, OPENFILES_PLUGIN_PATH, ../lib/openfiles/plugins next to the executable; a folder contributes its libopenfiles_plugin_<name> libraries)");
    } else {
        for row in &rows {
            println!("{}", human(row));
        }
    }
    Ok(0)
}

fn human(row: &PluginStatus) -> String {
    let name = match (&row.name, &row.version) {
        (Some(n), Some(v)) => format!("{n} {v}"),
        (Some(n), None) => n.clone(),
        _ => "?".into(),
    };
    let what = match row.state {
        PluginState::Loaded => {
            let exts = row
                .capabilities
                .as_ref()
                .map(|c| c.extensions.join(","))
                .unwrap_or_default();
            format!("loaded (files: {exts})")
        }
        PluginState::Refused => format!(
            "refused [{}]: {}",
            row.kind.as_deref().unwrap_or("?"),
            row.reason.as_deref().unwrap_or("")
        ),
        other => format!(
            "{}: {}",
            serde_json::to_value(other)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            row.reason.as_deref().unwrap_or("")
        ),
    };
    let mut text = format!("{name:<24} {what}\n    {}", row.path.display());
    for note in row.capabilities.iter().flat_map(|c| &c.notes) {
        text.push_str(&format!("\n    note: {note}"));
    }
    text
}
