//! The per-workspace pipeline actor: the one owner of a workspace's session.
//!
//! Everything that touches the session goes through its channel: edits (control socket,
//! queue lines, watcher), check results, waiters, status, config changes, stand-back. After
//! each burst of messages it dispatches what became dirty (one batch per source, project-wide
//! sources at most once in flight per project with one follow-up), answers satisfied waiters,
//! and starts a write when none is in flight — so the first change is written at once and
//! later ones coalesce, without ever delaying a waiter (waiters are answered from memory).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use openfiles_plugin_api::{CheckRequest, CheckResponse, Item, Severity};
use tokio::sync::{mpsc, oneshot};

use super::session::{self, Session};
use super::writer::Cursor;
use super::writer::{self, QueueState, Snapshot};
use super::{project_root, CheckError, Checker, SourceId, SourceInfo, StartError};
use super::{Rejected, WorkspaceEntries};
use crate::config::Config;
use crate::policy::{Policy, Verdict};
use crate::spec::{self, HookSettings};

/// One line taken from `queue.jsonl`: parsed, or why it was skipped (with an excerpt).
pub type QueueEntry = Result<spec::QueueLine, String>;

/// Where an edit came from (for logs and de-duplication with the watcher).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditOrigin {
    Control,
    Queue,
    Watch,
}

/// What became of an `edited` request's paths.
#[derive(Debug, Default)]
pub struct EditOutcome {
    pub accepted: Vec<PathBuf>,
    pub rejected: Vec<Rejected>,
}

/// Counters and state for `status`.
#[derive(Debug, Clone, Default)]
pub struct PipelineStatus {
    pub session_files: usize,
    pub pending: usize,
    pub queue_lines: u64,
    pub malformed_queue_lines: u64,
    pub standing_back: bool,
}

enum Msg {
    Edited {
        paths: Vec<PathBuf>,
        origin: EditOrigin,
        reply: Option<oneshot::Sender<EditOutcome>>,
    },
    Queue {
        lines: Vec<QueueEntry>,
        cursor: Cursor,
    },
    Wait {
        paths: Vec<PathBuf>,
        since: u64,
        /// `None`: the edit's time plus the workspace's `hooks.timeout_ms`.
        deadline: Option<Instant>,
        reply: oneshot::Sender<(bool, WorkspaceEntries)>,
    },
    Checked {
        source: SourceId,
        project: Option<PathBuf>,
        files: Vec<(PathBuf, u64)>,
        result: Result<CheckResponse, CheckError>,
    },
    Written {
        cursor: Cursor,
        result: std::io::Result<()>,
    },
    Status {
        reply: oneshot::Sender<PipelineStatus>,
    },
    Clear {
        reply: oneshot::Sender<usize>,
    },
    Config(Arc<Config>),
    StandBack(bool),
    AttachIntake(AckSender),
    Stop {
        reply: oneshot::Sender<()>,
    },
}

/// A cloneable handle to one workspace's pipeline.
#[derive(Clone)]
pub struct PipelineHandle {
    pub root: Arc<PathBuf>,
    tx: mpsc::UnboundedSender<Msg>,
}

impl PipelineHandle {
    fn send(&self, msg: Msg) {
        let _ = self.tx.send(msg);
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Msg) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).ok()?;
        rx.await.ok()
    }

    /// Report edited paths; they pass the path policy and get scheduled.
    pub async fn edited(&self, paths: Vec<PathBuf>, origin: EditOrigin) -> EditOutcome {
        self.ask(|reply| Msg::Edited {
            paths,
            origin,
            reply: Some(reply),
        })
        .await
        .unwrap_or_default()
    }

    /// Report edits without waiting for the verdict.
    pub fn edited_nowait(&self, paths: Vec<PathBuf>, origin: EditOrigin) {
        self.send(Msg::Edited {
            paths,
            origin,
            reply: None,
        });
    }

    /// Wait until every path has `checkedAt >= since` or `deadline` (`None`: `since` plus the
    /// workspace's `hooks.timeout_ms`); returns whether it was complete and the entries.
    pub async fn wait(
        &self,
        paths: Vec<PathBuf>,
        since: u64,
        deadline: Option<Instant>,
    ) -> (bool, WorkspaceEntries) {
        let root = self.root.clone();
        self.ask(|reply| Msg::Wait {
            paths,
            since,
            deadline,
            reply,
        })
        .await
        .unwrap_or_else(|| {
            (
                false,
                WorkspaceEntries {
                    root: (*root).clone(),
                    ..Default::default()
                },
            )
        })
    }

    pub async fn status(&self) -> PipelineStatus {
        self.ask(|reply| Msg::Status { reply })
            .await
            .unwrap_or_default()
    }

    /// Forget every session file; returns how many there were.
    pub async fn clear(&self) -> usize {
        self.ask(|reply| Msg::Clear { reply }).await.unwrap_or(0)
    }

    pub fn reload(&self, config: Arc<Config>) {
        self.send(Msg::Config(config));
    }

    /// Lines taken from `queue.jsonl` (parsed by the intake) and the cursor past them; the
    /// pipeline persists their effect and the cursor in one write, then acknowledges it.
    pub fn queue_lines(&self, lines: Vec<QueueEntry>, cursor: Cursor) {
        self.send(Msg::Queue { lines, cursor });
    }

    /// Connect the queue intake: persisted cursors are acknowledged on `ack`.
    pub(crate) fn attach_intake(&self, ack: AckSender) {
        self.send(Msg::AttachIntake(ack));
    }

    pub fn stand_back(&self, yes: bool) {
        self.send(Msg::StandBack(yes));
    }

    /// Flush pending writes and stop.
    pub async fn stop(&self) {
        let _ = self.ask(|reply| Msg::Stop { reply }).await;
    }
}

struct Waiter {
    paths: Vec<PathBuf>,
    since: u64,
    deadline: Instant,
    reply: oneshot::Sender<(bool, WorkspaceEntries)>,
}

/// Notified when the queue cursor is persisted.
pub type AckSender = mpsc::UnboundedSender<Cursor>;

/// The actor's state.
pub struct Pipeline {
    root: PathBuf,
    config: Arc<Config>,
    policy: Policy,
    checker: Arc<dyn Checker>,
    session: Session,
    sensitive: BTreeSet<PathBuf>,
    dirty: BTreeSet<PathBuf>,
    waiters: Vec<Waiter>,
    queue: QueueState,
    ack: Option<AckSender>,
    in_flight: BTreeSet<(SourceId, PathBuf)>,
    follow_up: BTreeMap<(SourceId, PathBuf), BTreeSet<PathBuf>>,
    next_check: u64,
    needs_write: bool,
    writing: bool,
    write_retry_at: Option<Instant>,
    standing_back: bool,
    state_path: PathBuf,
    tx: mpsc::UnboundedSender<Msg>,
}

impl Pipeline {
    /// Start the actor for `root`, restoring its persisted session. Returns the handle and
    /// the restored queue cursor (for the intake).
    pub fn start(
        root: &Path,
        config: Arc<Config>,
        checker: Arc<dyn Checker>,
        state_dir: &Path,
    ) -> Result<(PipelineHandle, Cursor), StartError> {
        let policy = Policy::new(root, &config.diagnostics)?;
        let state_path = writer::state_file(state_dir, root);
        let state = writer::load_state(&state_path);
        let queue = state.queue.clone();
        let (session, unchecked) = Session::restore(state.into_entries());
        let (tx, rx) = mpsc::unbounded_channel();
        let cursor = queue.cursor;
        let mut p = Pipeline {
            root: root.to_owned(),
            config,
            policy,
            checker,
            session,
            sensitive: BTreeSet::new(),
            dirty: unchecked.into_iter().collect(),
            waiters: Vec::new(),
            queue,
            ack: None,
            in_flight: BTreeSet::new(),
            follow_up: BTreeMap::new(),
            next_check: 1,
            needs_write: true,
            writing: false,
            write_retry_at: None,
            standing_back: false,
            state_path,
            tx: tx.clone(),
        };
        for path in p.dirty.clone() {
            p.session.edited(&path, 0);
        }
        let handle = PipelineHandle {
            root: Arc::new(root.to_owned()),
            tx,
        };
        tokio::spawn(async move { p.run(rx).await });
        Ok((handle, cursor))
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) {
        loop {
            let timer = self.next_timer();
            let mut stop = None;
            tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => stop = self.handle(m),
                    None => return,
                },
                _ = sleep_until(timer) => {}
            }
            while stop.is_none() {
                match rx.try_recv() {
                    Ok(m) => stop = self.handle(m),
                    Err(_) => break,
                }
            }
            self.dispatch();
            self.answer_waiters(false);
            self.maybe_write();
            if let Some(reply) = stop {
                self.answer_waiters(true);
                self.flush_now().await;
                let _ = reply.send(());
                return;
            }
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        let w = self.waiters.iter().map(|w| w.deadline).min();
        match (w, self.write_retry_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// PipelineHandle one message; `Some` means stop after this burst.
    fn handle(&mut self, msg: Msg) -> Option<oneshot::Sender<()>> {
        match msg {
            Msg::Edited {
                paths,
                origin,
                reply,
            } => {
                let out = self.edit(paths, origin);
                if let Some(r) = reply {
                    let _ = r.send(out);
                }
            }
            Msg::Queue { lines, cursor } => self.queue_lines(lines, cursor),
            Msg::Wait {
                paths,
                since,
                deadline,
                reply,
            } => {
                let paths = paths
                    .into_iter()
                    .map(|p| p.canonicalize().unwrap_or(p))
                    .collect();
                let deadline = deadline.unwrap_or_else(|| {
                    let end = since.saturating_add(self.config.hooks.timeout_ms);
                    Instant::now() + Duration::from_millis(end.saturating_sub(spec::now_ms()))
                });
                self.waiters.push(Waiter {
                    paths,
                    since,
                    deadline,
                    reply,
                });
            }
            Msg::Checked {
                source,
                project,
                files,
                result,
            } => self.checked(source, project, files, result),
            Msg::Written { cursor, result } => {
                self.writing = false;
                match result {
                    Ok(()) => {
                        if let Some(ack) = &self.ack {
                            let _ = ack.send(cursor);
                        }
                    }
                    Err(e) => {
                        tracing::error!(root = %self.root.display(), "cannot write diagnostics state: {e}; retrying in 1 s");
                        self.needs_write = true;
                        self.write_retry_at = Some(Instant::now() + Duration::from_secs(1));
                    }
                }
            }
            Msg::Status { reply } => {
                let pending = self.session.iter().filter(|(_, s)| !s.settled()).count();
                let _ = reply.send(PipelineStatus {
                    session_files: self.session.len(),
                    pending,
                    queue_lines: self.queue.lines,
                    malformed_queue_lines: self.queue.malformed,
                    standing_back: self.standing_back,
                });
            }
            Msg::Clear { reply } => {
                let n = self.session.len();
                self.session.clear();
                self.sensitive.clear();
                self.dirty.clear();
                self.needs_write = true;
                let _ = reply.send(n);
            }
            Msg::Config(cfg) => {
                match Policy::new(&self.root, &cfg.diagnostics) {
                    Ok(p) => self.policy = p,
                    Err(e) => {
                        tracing::error!(root = %self.root.display(), "{e}; keeping the old path policy")
                    }
                }
                self.config = cfg;
                self.needs_write = true;
            }
            Msg::StandBack(yes) => {
                if yes != self.standing_back {
                    tracing::info!(
                        root = %self.root.display(),
                        "{}",
                        if yes {
                            "the editor extension is serving this workspace; standing back"
                        } else {
                            "the editor extension is gone; serving this workspace again"
                        }
                    );
                    self.standing_back = yes;
                    self.needs_write = !yes;
                }
            }
            Msg::AttachIntake(ack) => self.ack = Some(ack),
            Msg::Stop { reply } => return Some(reply),
        }
        None
    }

    fn edit(&mut self, paths: Vec<PathBuf>, origin: EditOrigin) -> EditOutcome {
        let now = spec::now_ms();
        let mut out = EditOutcome::default();
        for path in paths {
            match self.policy.judge(&path) {
                Verdict::Check(p) => {
                    if origin == EditOrigin::Watch && self.is_echo(&p) {
                        continue;
                    }
                    self.session.edited(&p, now);
                    self.sensitive.remove(&p);
                    self.dirty.insert(p.clone());
                    out.accepted.push(p);
                }
                Verdict::Sensitive(p) => {
                    self.session.edited(&p, now);
                    self.sensitive.insert(p.clone());
                    self.dirty.insert(p.clone());
                    out.accepted.push(p);
                }
                Verdict::Deleted(p) => {
                    if self.session.remove(&p) {
                        self.needs_write = true;
                    }
                    self.dirty.remove(&p);
                    out.rejected.push(Rejected {
                        path: p,
                        reason: "deleted".into(),
                    });
                }
                Verdict::Skip { path, reason } => out.rejected.push(Rejected { path, reason }),
                Verdict::Outside { path, reason } => {
                    tracing::warn!(root = %self.root.display(), path = %path.display(), ?origin, "refused edit: {reason}");
                    out.rejected.push(Rejected { path, reason });
                }
            }
        }
        if !out.accepted.is_empty() {
            self.needs_write = true;
        }
        out
    }

    /// A watcher event for a file whose write an agent already reported.
    fn is_echo(&self, path: &Path) -> bool {
        let Some(reported) = self.session.get(path).map(|s| s.edited_at) else {
            return false;
        };
        let mtime = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64)
            .unwrap_or(u64::MAX);
        mtime <= reported
    }

    fn queue_lines(&mut self, lines: Vec<QueueEntry>, cursor: Cursor) {
        for line in lines {
            match line {
                Ok(q) => {
                    self.queue.lines += 1;
                    let paths = q
                        .paths
                        .into_iter()
                        .map(|p| {
                            if p.is_absolute() {
                                p
                            } else {
                                self.root.join(p)
                            }
                        })
                        .collect();
                    self.edit(paths, EditOrigin::Queue);
                }
                Err(why) => {
                    self.queue.malformed += 1;
                    tracing::warn!(root = %self.root.display(), "skipped malformed queue line ({why})");
                }
            }
        }
        self.queue.cursor = cursor;
        self.needs_write = true;
    }

    fn dispatch(&mut self) {
        if self.dirty.is_empty() {
            return;
        }
        let now = spec::now_ms();
        let mut per_source: BTreeMap<SourceId, (SourceInfo, Vec<PathBuf>)> = BTreeMap::new();
        for path in std::mem::take(&mut self.dirty) {
            if self.session.get(&path).is_none() {
                continue;
            }
            if self.sensitive.contains(&path) {
                self.session
                    .settle_with(&path, vec![session::sensitive_item()], now);
                continue;
            }
            if let Err(why) =
                crate::policy::checkable(&path, self.config.diagnostics.max_file_bytes)
            {
                self.session
                    .settle_with(&path, vec![session::refused_item(&why)], now);
                continue;
            }
            let sources = self.checker.sources_for(&path);
            if sources.is_empty() {
                self.session
                    .settle_with(&path, vec![session::unhandled_item(&path)], now);
                continue;
            }
            self.session
                .dispatched(&path, sources.iter().map(|s| s.id).collect());
            for s in sources {
                per_source
                    .entry(s.id)
                    .or_insert_with(|| (s, Vec::new()))
                    .1
                    .push(path.clone());
            }
        }
        self.needs_write = true;
        for (id, (info, files)) in per_source {
            if !info.project_wide {
                self.launch(&info, None, files);
                continue;
            }
            let mut by_project: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
            for f in files {
                let proj = project_root(&f, &self.root, &info.project_markers);
                by_project.entry(proj).or_default().push(f);
            }
            for (proj, files) in by_project {
                if self.in_flight.contains(&(id, proj.clone())) {
                    self.follow_up.entry((id, proj)).or_default().extend(files);
                } else {
                    self.launch(&info, Some(proj), files);
                }
            }
        }
    }

    fn launch(&mut self, info: &SourceInfo, project: Option<PathBuf>, files: Vec<PathBuf>) {
        let with_gen: Vec<(PathBuf, u64)> = files
            .iter()
            .filter_map(|f| self.session.get(f).map(|s| (f.clone(), s.gen)))
            .collect();
        if with_gen.is_empty() {
            return;
        }
        let also_report = match &project {
            Some(proj) => self
                .session
                .iter()
                .map(|(p, _)| p)
                .filter(|p| p.starts_with(proj) && !files.contains(p))
                .filter(|p| self.checker.sources_for(p).iter().any(|s| s.id == info.id))
                .cloned()
                .collect(),
            None => Vec::new(),
        };
        if let Some(proj) = &project {
            self.in_flight.insert((info.id, proj.clone()));
        }
        let timeout_ms = self.config.diagnostics.check_timeout_ms;
        let request = CheckRequest {
            id: self.next_check,
            workspace: self.root.clone(),
            files: with_gen.iter().map(|(p, _)| p.clone()).collect(),
            also_report,
            timeout_ms,
        };
        self.next_check += 1;
        let fut = self.checker.check(info.id, request);
        let tx = self.tx.clone();
        let (source, name) = (info.id, info.name.clone());
        tokio::spawn(async move {
            // The plugin host enforces the deadline; this bound only guards against a host bug.
            let limit = Duration::from_millis(timeout_ms + 10_000);
            let result = match tokio::time::timeout(limit, fut).await {
                Ok(r) => r,
                Err(_) => Err(CheckError::NoAnswer {
                    source_name: name,
                    after_ms: limit.as_millis() as u64,
                }),
            };

            let _ = tx.send(Msg::Checked {
                source,
                project,
                files: with_gen,
                result,
            });
        });
    }

    fn checked(
        &mut self,
        source: SourceId,
        project: Option<PathBuf>,
        files: Vec<(PathBuf, u64)>,
        result: Result<CheckResponse, CheckError>,
    ) {
        let now = spec::now_ms();
        match result {
            Ok(resp) => {
                let mut by_file: HashMap<PathBuf, Vec<Item>> = HashMap::new();
                for fr in resp.files {
                    by_file.entry(fr.path).or_default().extend(fr.items);
                }
                for (path, gen) in &files {
                    let items = by_file.remove(path).unwrap_or_default();
                    self.session.answered(path, *gen, source, items, now);
                }
                for (path, items) in by_file {
                    self.session.refreshed(&path, source, items, now);
                }
            }
            Err(why) => {
                tracing::warn!(root = %self.root.display(), "check failed: {why}");
                let item = Item::note(
                    Severity::Warning,
                    "openfiles",
                    format!("not checked: {why}"),
                );
                for (path, gen) in &files {
                    self.session
                        .answered(path, *gen, source, vec![item.clone()], now);
                }
            }
        }
        self.needs_write = true;
        if let Some(proj) = project {
            self.in_flight.remove(&(source, proj.clone()));
            if let Some(next) = self.follow_up.remove(&(source, proj.clone())) {
                let files: Vec<PathBuf> = next
                    .into_iter()
                    .filter(|p| {
                        self.session
                            .get(p)
                            .is_some_and(|s| s.waiting_on.contains(&source))
                    })
                    .collect();
                let info = files.first().and_then(|f| {
                    self.checker
                        .sources_for(f)
                        .into_iter()
                        .find(|s| s.id == source)
                });
                if let Some(info) = info {
                    self.launch(&info, Some(proj), files);
                }
            }
        }
    }

    fn hook(&self) -> HookSettings {
        HookSettings {
            feedback: self.config.hooks.feedback,
            timeout_ms: self.config.hooks.timeout_ms,
        }
    }

    fn entries(&self, paths: &[PathBuf]) -> WorkspaceEntries {
        WorkspaceEntries {
            root: self.root.clone(),
            hook: self.hook(),
            files: paths
                .iter()
                .filter_map(|p| {
                    self.session
                        .get(p)
                        .map(|s| (writer::key(&self.root, p), s.entry.clone()))
                })
                .collect(),
        }
    }

    fn answer_waiters(&mut self, all: bool) {
        let now = Instant::now();
        let mut keep = Vec::new();
        for w in std::mem::take(&mut self.waiters) {
            let complete = w.paths.iter().all(|p| {
                self.session
                    .get(p)
                    .is_none_or(|s| s.entry.checked_at >= w.since && s.settled())
            });
            if complete || all || now >= w.deadline || w.reply.is_closed() {
                let _ = w.reply.send((complete, self.entries(&w.paths)));
            } else {
                keep.push(w);
            }
        }
        self.waiters = keep;
    }

    fn snapshot(&self) -> Snapshot {
        let diag = (!self.standing_back).then(|| self.root.clone());
        Snapshot::new(
            &self.root,
            &self.hook(),
            &self.session,
            &self.queue,
            diag,
            self.state_path.clone(),
        )
    }

    fn maybe_write(&mut self) {
        if !self.needs_write || self.writing {
            return;
        }
        if let Some(at) = self.write_retry_at {
            if Instant::now() < at {
                return;
            }
            self.write_retry_at = None;
        }
        self.needs_write = false;
        self.writing = true;
        let snap = self.snapshot();
        let cursor = self.queue.cursor;
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let result = snap.write();
            let large = snap.size() > 1 << 20;
            drop(snap);
            if large {
                crate::memory::trim();
            }
            let _ = tx.send(Msg::Written { cursor, result });
        });
    }

    async fn flush_now(&mut self) {
        let snap = self.snapshot();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || snap.write()).await {
            tracing::error!(root = %self.root.display(), "final write failed: {e}");
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
