//! `check` without a service: the one entry through which a client runs the service's rooms
//! in its own process (ARCHITECTURE.md, "Clients speak the wire").
//!
//! For one run it starts the plugin host, resolves each path to the workspace the service
//! would give it (the registered workspace holding it — config, `openfiles add` —, or the
//! repository nested in it, or the folder an edit would register), asks the trust question
//! the service would ask (`openfiles trust`, or named by the user: the gate's one answer),
//! and sends the paths through an ephemeral pipeline actor (`Pipeline::start_ephemeral`,
//! nothing persisted; the project's tests only when asked for): the same scheduling and merging as the service, so both give the same
//! answer. What it returns are the wire crate's types, as the service's `check` reply.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::config::Config;
use crate::diagnostics::pipeline::{EditOrigin, Pipeline, PipelineHandle};
use crate::diagnostics::Checker;
use crate::plugin_host::PluginManager;
use crate::workspace::trust;
use openfiles_wire::control::Rejected;
use openfiles_wire::spec::{self, FileEntry};

/// What an in-process check found: the entries of the checked files, and the paths not
/// checked (outside every workspace, ignored, missing) with the reason.
pub struct Checked {
    pub entries: Vec<FileEntry>,
    pub rejected: Vec<Rejected>,
}

/// Check `paths` (canonical) in this process with the config at `config` (default: the
/// user's), each check bounded by `timeout`; `progress` hears what is going on.
pub fn check(
    config: Option<&Path>,
    paths: Vec<PathBuf>,
    timeout: Duration,
    tests: bool,
    progress: &dyn Fn(&str),
) -> anyhow::Result<Checked> {
    let (mut config, _) = Config::load(config)?;
    config.diagnostics.check_timeout_ms = timeout.as_millis() as u64;
    let config = Arc::new(config);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let shutdown = tokio_util::sync::CancellationToken::new();
        let state = crate::paths::state_dir();
        let manager = PluginManager::start(&config, &state, shutdown.clone()).await;
        let mut checker: Arc<dyn Checker> = Arc::new(manager.clone());
        if !tests {
            checker = Arc::new(WithoutTests(checker));
        }
        // The same sources as the service's (what hides a problem is named against a baseline).
        let checker = crate::diagnostics::silencing::Silencing::wrap(checker);
        progress(&format!("checking {} file(s)…", paths.len()));
        let by_root = by_workspace(&config, &state, paths);
        let since = spec::now_ms();
        let (pipelines, rejected) = start_pipelines(&config, &state, &checker, by_root).await?;
        let entries = wait_all(&pipelines, since, timeout).await;
        for (h, _) in &pipelines {
            h.stop().await;
        }
        shutdown.cancel();
        manager.wait_stopped().await;
        Ok(Checked { entries, rejected })
    })
}

/// The plugin that runs the project's tests.
pub const TESTS_SOURCE: &str = "tests";

/// The checker without the project's tests (`check` without `--tests`): the `tests` source
/// handles no file.
struct WithoutTests(Arc<dyn Checker>);

impl Checker for WithoutTests {
    fn sources_for(&self, path: &Path) -> Vec<crate::diagnostics::SourceInfo> {
        let mut sources = self.0.sources_for(path);
        sources.retain(|s| s.name != TESTS_SOURCE);
        sources
    }

    fn check(
        &self,
        source: crate::diagnostics::SourceId,
        request: openfiles_plugin_api::CheckRequest,
    ) -> futures_util::future::BoxFuture<
        'static,
        Result<openfiles_plugin_api::CheckResponse, crate::diagnostics::CheckError>,
    > {
        self.0.check(source, request)
    }

    fn query(
        &self,
        source: crate::diagnostics::SourceId,
        request: openfiles_plugin_api::query::QueryRequest,
    ) -> futures_util::future::BoxFuture<
        'static,
        Result<openfiles_plugin_api::query::QueryAnswer, crate::diagnostics::CheckError>,
    > {
        self.0.query(source, request)
    }
}

/// The paths grouped by the workspace the service would give each.
fn by_workspace(
    config: &Config,
    state: &Path,
    paths: Vec<PathBuf>,
) -> BTreeMap<PathBuf, Vec<PathBuf>> {
    let registered: Vec<PathBuf> = config
        .service
        .workspaces
        .iter()
        .filter_map(|w| w.canonicalize().ok())
        .chain(
            crate::workspace::store::load(state)
                .into_iter()
                .map(|w| w.root),
        )
        .collect();
    let mut by_root: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for path in paths {
        let root = crate::workspace::resolve::workspace_for(registered.iter(), &path)
            .unwrap_or_else(|_| path.parent().unwrap_or(&path).to_owned());
        by_root.entry(root).or_default().push(path);
    }
    by_root
}

type Started = Vec<(PipelineHandle, Vec<PathBuf>)>;

/// One ephemeral pipeline per workspace, with that workspace's trust, given its paths as
/// edits; returns the pipelines with the paths each accepted, and the paths refused.
async fn start_pipelines(
    config: &Arc<Config>,
    state: &Path,
    checker: &Arc<dyn Checker>,
    by_root: BTreeMap<PathBuf, Vec<PathBuf>>,
) -> anyhow::Result<(Started, Vec<Rejected>)> {
    let store = trust::load(state);
    let mut rejected = Vec::new();
    let mut pipelines = Vec::new();
    for (root, paths) in by_root {
        let named = trust::named_offline(&root, config, state);
        let trusted = trust::is_trusted(&root, &store, named);
        let checker = trust::Trusting::wrap(checker.clone(), trust::TrustFlag::new(&root, trusted));
        let handle = Pipeline::start_ephemeral(&root, config.clone(), checker)?;
        let out = handle.edited(paths, EditOrigin::Control).await;
        rejected.extend(out.rejected);
        pipelines.push((handle, out.accepted));
    }
    Ok((pipelines, rejected))
}

/// Every pipeline's entries once complete, then with the fixes asked after the answers (a
/// plugin's second step), or what there is at the deadline.
async fn wait_all(pipelines: &Started, since: u64, timeout: Duration) -> Vec<FileEntry> {
    // Each check is bounded by `timeout` in its plugin host; this only guards a host bug.
    let deadline = Instant::now() + timeout + Duration::from_secs(10);
    let waits = pipelines.iter().map(|(h, paths)| async move {
        let r = h.wait(paths.clone(), since, Some(deadline), false).await;
        if !r.complete {
            return r;
        }
        h.fixes_idle().await;
        h.wait(paths.clone(), since, Some(deadline), false).await
    });
    futures_util::future::join_all(waits)
        .await
        .into_iter()
        .flat_map(|o| o.entries.files.into_values())
        .collect()
}
