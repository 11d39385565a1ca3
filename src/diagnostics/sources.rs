//! The plugin host supervisor seen as the pipeline's [`Checker`]: maps plugin ids to source
//! ids, capabilities to [`SourceInfo`], and plugin errors to the text of an explanatory item.

use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use openfiles_plugin_api::{CheckRequest, CheckResponse};

use super::{Checker, SourceId, SourceInfo};
use crate::plugin_host::{PluginId, PluginManager};

/// The loaded plugins as diagnostic sources.
pub struct PluginSources(pub Arc<PluginManager>);

impl Checker for PluginSources {
    fn sources_for(&self, path: &Path) -> Vec<SourceInfo> {
        self.0
            .plugins_for(path)
            .into_iter()
            .filter_map(|id| {
                let caps = self.0.capabilities(id)?;
                Some(SourceInfo {
                    id: id.0,
                    name: self.0.name(id).unwrap_or("plugin").to_owned(),
                    project_wide: caps.project_wide,
                    project_markers: caps.project_markers.clone(),
                })
            })
            .collect()
    }

    fn check(
        &self,
        source: SourceId,
        request: CheckRequest,
    ) -> BoxFuture<'static, Result<CheckResponse, String>> {
        let manager = self.0.clone();
        Box::pin(async move {
            manager
                .check(PluginId(source), request)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
