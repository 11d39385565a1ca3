//! A stand-in [`Checker`] for unit tests of the pipeline: the one seam where a stand-in is
//! right (behind it are plugin hosts, processes and language servers).
//!
//! Sources are declared by the extension they handle. Every `check` is recorded as a [`Call`]
//! on a channel and stays unanswered until the test answers it ([`Call::answer`],
//! [`Call::fail`]), so the order of answers — and which generation each is for — is the
//! test's to choose, without timing. [`settle`] lets every task run until the runtime is idle
//! (the tests run on tokio's paused clock), after which [`Calls::take`] returns exactly the
//! checks asked for so far.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use openfiles_plugin_api::{CheckRequest, CheckResponse, FileResult, Item, Severity};
use tokio::sync::{mpsc, oneshot};

use super::{CheckError, Checker, SourceId, SourceInfo};

/// Let every task run until the runtime is idle (on a paused clock: then 1 ms passes).
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// An error item as a source reports it.
pub fn error(line: u32, source: &str, message: &str) -> Item {
    Item {
        introduced: None,
        fixes: Vec::new(),
        line,
        column: 1,
        severity: Severity::Error,
        source: source.into(),
        code: None,
        message: message.into(),
    }
}

/// The stand-in: sources by extension, each check recorded as a [`Call`].
pub struct StandIn {
    sources: Vec<(SourceInfo, String)>,
    calls: mpsc::UnboundedSender<Call>,
}

impl StandIn {
    /// A checker with `sources` (each with the extension it handles, without the dot) and
    /// the receiving end of its calls.
    pub fn start(sources: Vec<(SourceInfo, &str)>) -> (Arc<dyn Checker>, Calls) {
        let (tx, rx) = mpsc::unbounded_channel();
        let sources = sources
            .into_iter()
            .map(|(s, ext)| (s, ext.to_owned()))
            .collect();
        let checker = StandIn { sources, calls: tx };
        (Arc::new(checker), Calls(rx))
    }
}

/// A source that checks one file at a time (a language server).
pub fn per_file(id: SourceId, name: &str) -> SourceInfo {
    SourceInfo {
        id,
        name: name.into(),
        project_wide: false,
        project_markers: Vec::new(),
        needs_project: false,
        checks_texts: false,
        late_fixes: false,
        warm: false,
        superseded: false,
        serves: Vec::new(),
    }
}

/// A source whose one run checks a project (`tsc`), projects marked by `markers`.
pub fn project_wide(id: SourceId, name: &str, markers: &[&str]) -> SourceInfo {
    SourceInfo {
        id,
        name: name.into(),
        project_wide: true,
        project_markers: markers.iter().map(|m| (*m).to_owned()).collect(),
        needs_project: false,
        checks_texts: false,
        late_fixes: false,
        warm: false,
        superseded: false,
        serves: Vec::new(),
    }
}

impl Checker for StandIn {
    fn sources_for(&self, path: &Path) -> Vec<SourceInfo> {
        let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
        self.sources
            .iter()
            .filter(|(_, e)| ext.as_deref() == Some(e.as_str()))
            .map(|(s, _)| s.clone())
            .collect()
    }

    fn check(
        &self,
        source: SourceId,
        request: CheckRequest,
    ) -> BoxFuture<'static, Result<CheckResponse, CheckError>> {
        let (reply, answer) = oneshot::channel();
        let _ = self.calls.send(Call {
            source,
            request,
            reply,
        });
        Box::pin(async move {
            answer
                .await
                .unwrap_or_else(|_| Err(CheckError::Source("the test dropped the call".into())))
        })
    }
}

/// One check the pipeline asked for, waiting for the test's answer.
#[derive(Debug)]
pub struct Call {
    pub source: SourceId,
    pub request: CheckRequest,
    reply: oneshot::Sender<Result<CheckResponse, CheckError>>,
}

impl Call {
    /// The requested files' names (the last component), in request order.
    pub fn names(&self) -> Vec<String> {
        names(&self.request.files)
    }

    /// Answer with these items per file (files not named: checked, nothing found).
    pub fn answer(self, results: Vec<(&Path, Vec<Item>)>) {
        self.respond(results, false);
    }

    /// Answer early: these items, and the source goes on (`CheckResponse::more`).
    pub fn answer_more(self, results: Vec<(&Path, Vec<Item>)>) {
        self.respond(results, true);
    }

    fn respond(self, results: Vec<(&Path, Vec<Item>)>, more: bool) {
        let files = results
            .into_iter()
            .map(|(path, items)| FileResult {
                path: path.to_owned(),
                items,
            })
            .collect();
        let _ = self.reply.send(Ok(CheckResponse {
            files,
            more,
            ..Default::default()
        }));
    }

    /// Answer: nothing found in any file.
    pub fn clean(self) {
        self.answer(Vec::new());
    }

    /// Whether the pipeline gave up on this check (its future dropped: cancelled).
    pub fn is_cancelled(&self) -> bool {
        self.reply.is_closed()
    }

    /// Answer with a failure of the source.
    pub fn fail(self, why: &str) {
        let _ = self.reply.send(Err(CheckError::Source(why.into())));
    }
}

/// The last components of `paths`.
pub fn names(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect()
}

/// The calls the stand-in received.
pub struct Calls(mpsc::UnboundedReceiver<Call>);

impl Calls {
    /// Every call received so far, in order ([`settle`] first to let the pipeline run).
    pub fn take(&mut self) -> Vec<Call> {
        let mut out = Vec::new();
        while let Ok(c) = self.0.try_recv() {
            out.push(c);
        }
        out
    }

    /// The `n` calls received since the last look (after letting the pipeline run), by
    /// source.
    pub async fn take_n(&mut self, n: usize) -> Vec<Call> {
        settle().await;
        let mut calls = self.take();
        assert_eq!(calls.len(), n, "expected {n} checks, got {calls:?}");
        calls.sort_by_key(|c| c.source);
        calls
    }

    /// The one call received since the last look (after letting the pipeline run).
    pub async fn one(&mut self) -> Call {
        settle().await;
        let mut calls = self.take();
        assert_eq!(calls.len(), 1, "expected one check, got {calls:?}");
        calls.remove(0)
    }
}
