//! The plugins room: which plugin libraries the service loaded or refused (its `status`),
//! or, without a service, which ones plugin hosts started here load — gathered in
//! [`PluginFacts`], judged by [`judge_plugins`].

use std::path::Path;

use super::{check, Check, Level};
use openfiles_wire::control::{PluginState, PluginStatus, StatusReply};

/// The plugin rows and whose view they are.
#[derive(Debug)]
pub struct PluginFacts {
    /// Why the config did not load (its defaults are used then).
    pub config_error: Option<String>,
    /// The rows and who loaded them (`service`, `doctor`), or why plugin hosts could not
    /// be started here.
    pub rows: Result<(Vec<PluginStatus>, &'static str), HostsError>,
}

/// Why doctor could not start plugin hosts itself.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// The async runtime the hosts are supervised on.
    #[error("{0}")]
    Runtime(std::io::Error),
}

impl PluginFacts {
    pub fn gather(config: Option<&Path>, status: Option<&StatusReply>) -> PluginFacts {
        let (cfg, config_error) = match crate::config::Config::load(config) {
            Ok((cfg, _)) => (cfg, None),
            Err(e) => (crate::config::Config::default(), Some(e.to_string())),
        };
        // The running service's view when it has one, else start them here as it would.
        let rows = match status.filter(|s| !s.plugins.is_empty()) {
            Some(st) => Ok((st.plugins.clone(), "service")),
            None => local_plugin_rows(&cfg).map(|rows| (rows, "doctor")),
        };
        PluginFacts { config_error, rows }
    }
}

/// The `config` and `plugins` lines.
pub fn judge_plugins(f: &PluginFacts) -> Vec<Check> {
    const S: &str = "plugins";
    let mut out = Vec::new();
    if let Some(e) = &f.config_error {
        out.push(check("config", Level::Fail, e.clone()));
    }
    let (rows, whose) = match &f.rows {
        Ok(r) => r,
        Err(e) => {
            out.push(check(
                S,
                Level::Fail,
                format!("cannot start plugin hosts: {e}"),
            ));
            return out;
        }
    };
    if rows.is_empty() {
        out.push(
            check(S, Level::Fail, "no plugin libraries found (searched config plugins.paths, OPENFILES_PLUGIN_PATH, ../lib/openfiles/plugins next to the binary)")
                .hint("set plugins.paths in config.toml or OPENFILES_PLUGIN_PATH"),
        );
        return out;
    }
    out.extend(rows.iter().map(|row| row_check(row, whose)));
    out
}

fn local_plugin_rows(cfg: &crate::config::Config) -> Result<Vec<PluginStatus>, HostsError> {
    use crate::plugin_host::PluginManager;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(HostsError::Runtime)?;
    let rows = rt.block_on(async {
        let token = tokio_util::sync::CancellationToken::new();
        let manager = PluginManager::start(cfg, &crate::paths::state_dir(), token.clone()).await;
        let rows = manager.status_rows();
        token.cancel();
        manager.wait_stopped().await;
        rows
    });
    Ok(rows)
}

/// One plugin row as a check; `whose` says who loaded it.
pub fn row_check(row: &PluginStatus, whose: &str) -> Check {
    const S: &str = "plugins";
    let path = row.path.display().to_string();
    let name = match (row.name.as_deref(), row.version.as_deref()) {
        (None | Some(""), _) => path.clone(),
        (Some(n), None | Some("")) => n.to_owned(),
        (Some(n), Some(v)) => format!("{n} {v}"),
    };
    let text = |o: &Option<String>| o.clone().unwrap_or_default();
    match row.state {
        PluginState::Loaded => {
            let caps = row.capabilities.clone().unwrap_or_default();
            let exts = caps.extensions.join(",");
            if caps.notes.is_empty() {
                check(
                    S,
                    Level::Ok,
                    format!("{name}: loaded by {whose} (files: {exts}) from {path}"),
                )
            } else {
                check(
                    S,
                    Level::Warn,
                    format!(
                        "{name}: loaded by {whose} (files: {exts}) from {path}; {}",
                        caps.notes.join("; ")
                    ),
                )
            }
        }
        PluginState::Disabled => check(
            S,
            Level::Info,
            format!("{name}: disabled in config ({path})"),
        ),
        PluginState::Missing => check(
            S,
            Level::Warn,
            format!("{path}: listed but missing ({})", text(&row.reason)),
        )
        .hint("fix plugins.paths or OPENFILES_PLUGIN_PATH"),
        PluginState::Restarting => check(
            S,
            Level::Warn,
            format!("{name}: its host died and is restarting"),
        ),
        state => check(
            S,
            Level::Fail,
            format!(
                "{name}: {} [{}]: {} ({path})",
                state.as_str(),
                text(&row.kind),
                text(&row.reason)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rows_fail_and_a_bad_config_is_said() {
        let f = PluginFacts {
            config_error: Some("config.toml: expected a table".into()),
            rows: Ok((vec![], "doctor")),
        };
        let out = judge_plugins(&f);
        assert_eq!((out[0].section, out[0].level), ("config", Level::Fail));
        assert_eq!(out[1].level, Level::Fail);
        assert!(out[1].message.contains("no plugin libraries found"));
        let f = PluginFacts {
            config_error: None,
            rows: Err(HostsError::Runtime(std::io::Error::other("no runtime"))),
        };
        assert!(judge_plugins(&f)[0]
            .message
            .contains("cannot start plugin hosts: no runtime"));
    }
}
