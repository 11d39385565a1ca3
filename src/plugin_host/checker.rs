//! The plugin manager as the diagnostics pipeline's [`Checker`]: sources are loaded
//! plugins (source id = [`PluginId`] index), and a failed check becomes a
//! [`CheckError::Source`] carrying the [`super::PluginError`], which the pipeline turns into
//! an explanatory item.

use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use openfiles_plugin_api::{CheckRequest, CheckResponse};

use super::{PluginId, PluginManager};
use crate::diagnostics::{CheckError, Checker, SourceId, SourceInfo};

impl Checker for PluginManager {
    fn sources_for(&self, path: &Path) -> Vec<SourceInfo> {
        self.plugins_for(path)
            .into_iter()
            .filter_map(|id| {
                let caps = self.capabilities(id)?;
                Some(SourceInfo {
                    id: id.0,
                    name: self.name(id)?.to_owned(),
                    project_wide: caps.project_wide,
                    project_markers: caps.project_markers.clone(),
                    needs_project: caps.needs_project,
                    checks_texts: caps.checks_texts,
                    late_fixes: caps.late_fixes,
                    warm: caps.warm,
                    superseded: caps.superseded,
                    serves: caps.serves.clone(),
                })
            })
            .collect()
    }

    fn run_bound(&self) -> Option<Arc<crate::diagnostics::bound::RunBound>> {
        Some(PluginManager::run_bound(self))
    }

    fn check(
        &self,
        source: SourceId,
        request: CheckRequest,
    ) -> BoxFuture<'static, Result<CheckResponse, CheckError>> {
        let manager = self.clone();
        Box::pin(async move {
            PluginManager::check(&manager, PluginId(source), request)
                .await
                .map_err(|e| CheckError::Source(Box::new(e)))
        })
    }

    fn query(
        &self,
        source: SourceId,
        request: openfiles_plugin_api::query::QueryRequest,
    ) -> BoxFuture<'static, Result<openfiles_plugin_api::query::QueryAnswer, CheckError>> {
        let manager = self.clone();
        Box::pin(async move {
            PluginManager::query(&manager, PluginId(source), request)
                .await
                .map_err(|e| CheckError::Source(Box::new(e)))
        })
    }
}
