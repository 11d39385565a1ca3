//! The per-workspace pipeline actor: the one owner of a workspace's session.
//!
//! Everything that touches the session goes through its channel: edits (control socket,
//! queue lines, watcher), check results, waiters, status, config changes, stand-back. After
//! each burst of messages it dispatches what became dirty ([`schedule`](super::schedule)),
//! answers satisfied waiters ([`waiters`](super::waiters)), and starts a write when none is in
//! flight — so the first change is written at once and later ones coalesce, without ever
//! delaying a waiter (waiters are answered from memory).
//!
//! Bounded: requests (edits from the control socket, the queue intake and the watcher,
//! waits, status…) come on a channel of [`CHANNEL`] messages; a sender past that waits
//! (every sender is async: a control connection, the intake's task), so a flood of edits
//! holds its senders back instead of growing the actor's queue. Each message is itself
//! bounded (a control request by the line cap, a queue batch by the intake's one batch in
//! flight). Results of the work the actor started — check answers, baseline jobs, finished
//! writes — come on a second, unbounded channel: the actor never waits to send on it (so it
//! never waits on itself, however full the request channel is), and it holds at most one
//! message per job in flight, which the scheduler bounds. Each burst takes every result but
//! at most [`CHANNEL`] requests, so a flood cannot hold off dispatching and writing.
//!
//! The same actor serves `openfiles check` without a service ([`Pipeline::start_ephemeral`]:
//! nothing persisted), so both give the same answer: the same scheduling (one project-wide
//! run per project) and the same merging.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use openfiles_plugin_api::{Item, Severity};
use tokio::sync::{mpsc, oneshot};
// Tokio's clock (the same as std's outside tests): timers follow paused test time.
use tokio::time::Instant;

mod base;
mod base_jobs;
mod handle;
mod nav;
mod seed;
#[cfg(test)]
mod tests;
mod warm;

use base::BaseState;
use handle::Msg;
pub use handle::{AckSender, EditOrigin, EditOutcome, PipelineHandle, PipelineStatus, QueueEntry};
pub use nav::QueryError;

use super::late::Late;
use super::review::{Review, ReviewFile, WorkspaceReview};
use super::schedule::{Checked, Ended, Scheduler};
use super::session::Session;
use super::waiters::{Waiter, Waiters};
use super::writer::Cursor;
use super::writer::{self, QueueState, Snapshot};
use super::{Checker, StartError};
use super::{Rejected, WorkspaceEntries};
use crate::config::Config;
use crate::policy::{Policy, Verdict};
use openfiles_wire::spec::{self, HookSettings};

/// How many requests wait in front of the actor before a sender waits.
pub const CHANNEL: usize = 64;

/// The actor's state.
pub struct Pipeline {
    root: PathBuf,
    config: Arc<Config>,
    policy: Policy,
    scheduler: Scheduler,
    session: Session,
    /// Agents per file, reviewed marks, paused: persisted with the session.
    review: Review,
    /// Results owed to agent sessions (a hook's deadline passed first): persisted too.
    late: Late,
    /// The last warm-up an agent's session start asked for.
    warm: Option<openfiles_wire::control::WarmState>,
    /// The warm-up's per-file checks are still out: language servers are loading their
    /// projects (`warm.rs`).
    servers_warming: bool,
    sensitive: BTreeSet<PathBuf>,
    dirty: BTreeSet<PathBuf>,
    /// Files whose last edit the watcher noticed, and when (see [`Pipeline::noticed`]).
    watched: HashMap<PathBuf, u64>,
    waiters: Waiters,
    queue: QueueState,
    ack: Option<AckSender>,
    /// False for `openfiles check` without a service: nothing is written.
    persist: bool,
    needs_write: bool,
    /// The write in flight, if any: the final write at a stop waits for it, so an older
    /// snapshot can never land after the last one.
    writing: Option<tokio::task::JoinHandle<()>>,
    write_retry_at: Option<Instant>,
    standing_back: bool,
    state_path: PathBuf,
    /// The session's baseline and the jobs taking it.
    base: BaseState,
    /// The result channel: what the actor's own jobs send back (never the request channel).
    tx: mpsc::UnboundedSender<Msg>,
    /// Fix requests (`CheckRequest::fixes_only`) in flight, and who waits for none to be.
    fixes_in_flight: usize,
    fixes_idle: Vec<oneshot::Sender<()>>,
}

/// The folder of the state dir where the baselines of commits are kept, shared by the
/// worktrees of a repository (`baseline::shared`).
pub const BASELINES: &str = "baselines";

/// How long a plugin may take to fetch the fixes of one answer (its second step).
pub const FIX_BUDGET_MS: u64 = 3_000;

impl Pipeline {
    /// Start the actor for `root`, restoring its persisted session. Returns the handle and
    /// the restored queue cursor (for the intake).
    pub fn start(
        root: &Path,
        config: Arc<Config>,
        checker: Arc<dyn Checker>,
        state_dir: &Path,
    ) -> Result<(PipelineHandle, Cursor), StartError> {
        let state_path = writer::state_file(state_dir, root);
        let state = writer::load_state(&state_path);
        let store = state_dir.join(BASELINES);
        Self::spawn(root, config, checker, state, Some((state_path, store)))
    }

    /// Start an actor for `root` that persists nothing and starts from an empty session:
    /// `openfiles check` without a service, through the same scheduling and merging.
    pub fn start_ephemeral(
        root: &Path,
        config: Arc<Config>,
        checker: Arc<dyn Checker>,
    ) -> Result<PipelineHandle, StartError> {
        let state = writer::SessionState::default();
        Ok(Self::spawn(root, config, checker, state, None)?.0)
    }

    fn spawn(
        root: &Path,
        config: Arc<Config>,
        checker: Arc<dyn Checker>,
        mut state: writer::SessionState,
        places: Option<(PathBuf, PathBuf)>,
    ) -> Result<(PipelineHandle, Cursor), StartError> {
        let (state_path, store) = places.unzip();
        let policy = Policy::new(root, &config.diagnostics)?;
        let queue = state.queue.clone();
        let mut review = std::mem::take(&mut state.review);
        let mut late = std::mem::take(&mut state.late);
        let (session, unchecked) = Session::restore(state.into_entries());
        review.retain(|p| session.get(p).is_some());
        late.retain(|p| session.get(p).is_some());
        let (tx, rx) = mpsc::channel(CHANNEL);
        let (results, results_rx) = mpsc::unbounded_channel();
        let cursor = queue.cursor;
        let done_tx = results.clone();
        let done = Arc::new(move |c: Checked| {
            let _ = done_tx.send(Msg::Checked(c));
        });
        let persist = state_path.is_some();
        let base = BaseState::load(state_path.as_deref(), store);
        // A workspace nobody edited yet (no session, no diagnostics.json) writes nothing
        // until its first edit; an existing diagnostics.json is brought up to date at once.
        let needs_write = persist
            && (!session.is_empty() || root.join(spec::DIR).join(spec::DIAGNOSTICS_FILE).exists());
        let mut p = Pipeline {
            root: root.to_owned(),
            config,
            policy,
            scheduler: Scheduler::new(root, checker, done),
            session,
            review,
            late,
            warm: None,
            servers_warming: false,
            sensitive: BTreeSet::new(),
            dirty: unchecked.into_iter().collect(),
            watched: HashMap::new(),
            waiters: Waiters::default(),
            queue,
            ack: None,
            persist,
            needs_write,
            writing: None,
            write_retry_at: None,
            standing_back: false,
            state_path: state_path.unwrap_or_default(),
            base,
            tx: results.clone(),
            fixes_in_flight: 0,
            fixes_idle: Vec::new(),
        };
        for path in p.dirty.clone() {
            p.session.edited(&path, 0);
        }
        let handle = PipelineHandle {
            root: Arc::new(root.to_owned()),
            tx,
            results,
        };
        tokio::spawn(async move { p.run(rx, results_rx).await });
        Ok((handle, cursor))
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Msg>, mut results: mpsc::UnboundedReceiver<Msg>) {
        loop {
            let timer = self.next_timer();
            let mut stop = None;
            // Every handle is gone: nobody can ask any more; finish like a stop.
            let mut closed = false;
            tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => stop = self.handle(m),
                    None => closed = true,
                },
                Some(m) = results.recv() => stop = self.handle(m),
                _ = sleep_until(timer) => {}
            }
            // The rest of the burst: every result, at most a channel's worth of requests.
            let mut requests = 0;
            while stop.is_none() {
                if let Ok(m) = results.try_recv() {
                    stop = self.handle(m);
                } else if requests < CHANNEL {
                    match rx.try_recv() {
                        Ok(m) => {
                            requests += 1;
                            stop = self.handle(m);
                        }
                        Err(_) => break,
                    }
                } else {
                    break;
                }
            }
            self.dispatch();
            self.answer_waiters(false);
            self.maybe_write();
            if stop.is_some() || closed {
                self.answer_waiters(true);
                self.flush_now().await;
                if let Some(reply) = stop {
                    let _ = reply.send(());
                }
                return;
            }
        }
    }

    fn next_timer(&self) -> Option<Instant> {
        let w = self.waiters.next_timer();
        match (w, self.write_retry_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handle one message from a `PipelineHandle`; `Some` means stop after this burst.
    fn handle(&mut self, msg: Msg) -> Option<oneshot::Sender<()>> {
        match msg {
            Msg::Edited {
                paths,
                origin,
                agent,
                reply,
            } => {
                let out = self.edit(paths, origin, agent.as_deref());
                if let Some(r) = reply {
                    let _ = r.send(out);
                }
            }
            Msg::Queue { lines, cursor } => self.queue_lines(lines, cursor),
            Msg::Wait {
                paths,
                since,
                deadline,
                partial,
                session,
                reply,
            } => {
                let paths = paths
                    .into_iter()
                    .map(|p| p.canonicalize().unwrap_or(p))
                    .collect();
                let after = |ms: u64| {
                    let end = since.saturating_add(ms);
                    Instant::now() + Duration::from_millis(end.saturating_sub(spec::now_ms()))
                };
                let deadline = deadline
                    .map(Instant::from_std)
                    .unwrap_or_else(|| after(self.config.hooks.timeout_ms));
                let partial_at = partial.then(|| after(self.config.hooks.partial_after_ms));
                let knock_on_until = partial.then(|| after(self.config.hooks.knock_on_wait_ms));
                self.waiters.push(Waiter {
                    paths,
                    since,
                    deadline,
                    partial_at,
                    knock_on_until,
                    session,
                    reply,
                });
            }
            Msg::Checked(c) => self.checked(c),
            Msg::Warm { reply } => {
                let _ = reply.send(self.warm());
            }
            Msg::Warmed(w) => self.warmed(w),
            Msg::ServersWarmed => self.servers_warmed(),
            Msg::Query { request, reply } => self.query(request, reply),
            Msg::Fixes {
                source,
                files,
                result,
                asked,
            } => {
                self.fixes_in_flight = self.fixes_in_flight.saturating_sub(1);
                let mut n = 0;
                for fr in result.map(|r| r.files).unwrap_or_default() {
                    if let Some((_, gen)) = files.iter().find(|(p, _)| *p == fr.path) {
                        n += self.session.add_fixes(&fr.path, *gen, source, &fr.items);
                    }
                }
                let ms = asked.elapsed().as_millis() as u64;
                tracing::debug!(root = %self.root.display(), source, n, ms, "late fixes");
                self.needs_write |= n > 0;
                if self.fixes_in_flight == 0 {
                    for w in self.fixes_idle.drain(..) {
                        let _ = w.send(());
                    }
                }
            }
            Msg::FixesIdle { reply } => {
                if self.fixes_in_flight == 0 {
                    let _ = reply.send(());
                } else {
                    self.fixes_idle.push(reply);
                }
            }
            Msg::Base(m) => self.base_msg(m),
            Msg::Written { cursor, result } => {
                self.writing = None;
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
                    paused: self.review.paused,
                    unreviewed: self
                        .session
                        .iter()
                        .filter(|(p, _)| !self.review.get(p).is_some_and(|m| m.reviewed()))
                        .count(),
                    late_deliveries: self.late.delivered,
                    deadline_notes: self.late.notes,
                    owed: self.owed_now(),
                    silenced: self
                        .session
                        .iter()
                        .flat_map(|(_, f)| f.entry.items.iter())
                        .filter(|i| crate::diagnostics::silencing::is_silencing(i))
                        .count(),
                    warm: self.warm.clone(),
                });
            }
            Msg::Clear { reply } => {
                let n = self.session.len();
                self.session.clear();
                self.review.clear();
                self.late.clear();
                self.sensitive.clear();
                self.dirty.clear();
                self.base.clear();
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
            Msg::Review { reply } => {
                let _ = reply.send(self.review_data());
            }
            Msg::Mark {
                paths,
                reviewed,
                reply,
            } => {
                let paths: Vec<PathBuf> = paths
                    .into_iter()
                    .map(|p| p.canonicalize().unwrap_or(p))
                    .collect();
                let done = self.review.mark(&paths, reviewed, spec::now_ms());
                self.needs_write |= !done.is_empty();
                let _ = reply.send(done);
            }
            Msg::Pause { paused, reply } => {
                let was = std::mem::replace(&mut self.review.paused, paused);
                if was != paused {
                    tracing::info!(root = %self.root.display(), "{}", if paused { "paused: edits are not noticed until `openfiles resume`" } else { "resumed: noticing edits again" });
                    self.needs_write = true;
                }
                let _ = reply.send(was);
            }
            Msg::AttachIntake(ack) => self.ack = Some(ack),
            Msg::Stop { reply } => return Some(reply),
        }
        None
    }

    fn edit(
        &mut self,
        paths: Vec<PathBuf>,
        origin: EditOrigin,
        agent: Option<&str>,
    ) -> EditOutcome {
        let now = spec::now_ms();
        let mut out = EditOutcome::default();
        if self.review.paused && origin != EditOrigin::Request {
            out.paused = true;
            out.rejected = paths
                .into_iter()
                .map(|path| Rejected {
                    path,
                    reason:
                        "paused: edits in this workspace are not noticed until `openfiles resume`"
                            .into(),
                })
                .collect();
            return out;
        }
        for path in paths {
            match self.policy.judge(&path) {
                Verdict::Check(p) => {
                    if origin == EditOrigin::Watch && self.is_echo(&p) {
                        continue;
                    }
                    if let Some(at) = self.noticed(&p, origin) {
                        // The same content as the watcher's edit: that edit, not another.
                        self.review.edited(&p, agent, now);
                        out.since = Some(out.since.map_or(at, |s: u64| s.min(at)));
                        out.accepted.push(p);
                        continue;
                    }
                    if origin == EditOrigin::Watch {
                        self.watched.insert(p.clone(), now);
                    } else {
                        self.watched.remove(&p);
                    }
                    let gen = self.session.edited(&p, now);
                    tracing::debug!(path = %p.display(), gen, ?origin, "edit");
                    self.review.edited(&p, agent, now);
                    self.sensitive.remove(&p);
                    self.dirty.insert(p.clone());
                    out.accepted.push(p);
                }
                Verdict::Sensitive(p) => {
                    self.session.edited(&p, now);
                    self.review.edited(&p, agent, now);
                    self.sensitive.insert(p.clone());
                    self.dirty.insert(p.clone());
                    out.accepted.push(p);
                }
                Verdict::Deleted(p) => {
                    if self.session.remove(&p) {
                        self.needs_write = true;
                    }
                    self.late.retain(|o| o != p);
                    self.review.remove(&p);
                    self.watched.remove(&p);
                    self.dirty.remove(&p);
                    out.rejected.push(Rejected {
                        path: p,
                        reason: "deleted".into(),
                    });
                }
                Verdict::Skip { path, reason } => out.rejected.push(Rejected {
                    reason: self.policy.tell_once(&path, reason),
                    path,
                }),
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

    /// When the watcher noticed the edit a hook reports for `path` (`origin` `Control`): the
    /// file's last edit came from the watcher and it was not written since. The hook's edit is
    /// then that one — no new generation, no second dispatch of the same content (the
    /// watcher's batch often comes before the agent's hook), and the hook waits from then.
    fn noticed(&self, path: &Path, origin: EditOrigin) -> Option<u64> {
        if origin != EditOrigin::Control {
            return None;
        }
        let at = *self.watched.get(path)?;
        let same = self.session.get(path).is_some_and(|s| s.edited_at == at);
        (same && self.is_echo(path)).then_some(at)
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
                    self.edit(paths, EditOrigin::Queue, q.agent.as_deref());
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
        let dirty = std::mem::take(&mut self.dirty);
        let dirty = self.base_prepare(dirty);
        let timeout_ms = self.config.diagnostics.check_timeout_ms;
        let max_file_bytes = self.config.diagnostics.max_file_bytes;
        let at = self.base.at_commit(self.scheduler.checker().trusted());
        self.scheduler.set_baseline(at);
        self.scheduler.dispatch(
            &mut self.session,
            dirty,
            &self.sensitive,
            timeout_ms,
            max_file_bytes,
            self.config.hooks.knock_on_wait_ms,
        );
        // After the scheduler's: a check riding the warm server defers them.
        self.start_project_jobs();
        self.needs_write = true;
    }

    /// Merge a finished check into the session. A project-wide source's report on files it
    /// was not asked about refreshes them; a file whose items that changed is asked of its
    /// other sources again (no stale item beside a fresh one).
    fn checked(&mut self, c: Checked) {
        let now = spec::now_ms();
        let Checked {
            check,
            source,
            project,
            files,
            result,
            took,
        } = c;
        let ran = result.is_ok().then_some(took);
        let stale = files
            .iter()
            .filter(|(p, gen)| self.session.get(p).is_some_and(|s| s.gen != *gen))
            .count();
        tracing::debug!(check, source, files = files.len(), stale, "check merged");
        let mut more = false;
        match result {
            Ok(mut resp) => {
                // An early answer of a project-wide run: the rest is owed (its follow-up).
                more = resp.more && project.is_some();
                if let Some(proj) = project.as_ref().filter(|_| !resp.baseline.is_empty()) {
                    let ahead = std::mem::take(&mut resp.baseline);
                    let name = self.source_name(source, ahead.iter().map(|f| &f.path));
                    self.base_ahead(&name, proj, ahead);
                }
                let mut by_file: HashMap<PathBuf, Vec<Item>> = HashMap::new();
                for fr in resp.files {
                    by_file.entry(fr.path).or_default().extend(fr.items);
                }
                let late = project.is_none()
                    && files.first().is_some_and(|(f, _)| {
                        self.scheduler
                            .sources_for(f)
                            .iter()
                            .any(|s| s.id == source && s.late_fixes)
                    });
                let mut want_fixes = Vec::new();
                for (path, gen) in &files {
                    let items = by_file.remove(path).unwrap_or_default();
                    let wants = late && items.iter().any(wants_fix);
                    if self.session.answered(path, *gen, source, items, now) && wants {
                        want_fixes.push((path.clone(), *gen));
                    }
                    if more {
                        self.session.owes_more(path, *gen, source, now);
                    }
                }
                if !want_fixes.is_empty() {
                    self.ask_fixes(source, want_fixes);
                }
                let name = self.source_name(source, by_file.keys());
                let by: Vec<String> = files
                    .iter()
                    .map(|(p, _)| writer::key(&self.root, p))
                    .collect();
                let reported: BTreeSet<PathBuf> = by_file.keys().cloned().collect();
                for (path, items) in by_file {
                    let edited =
                        self.session.get(&path).is_some() && !self.session.is_affected(&path);
                    if edited {
                        if self.session.refreshed(&path, source, &name, items, now) {
                            self.dirty.insert(path);
                        }
                    } else if let Some(proj) = &project {
                        self.knock_on_report(source, &name, proj, path, items, by.clone());
                    }
                }
                if let Some(proj) = &project {
                    if !name.is_empty() {
                        self.knock_on_cleared(&name, proj, &reported);
                    }
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
            let timeout_ms = self.config.diagnostics.check_timeout_ms;
            let quick = self.config.hooks.knock_on_wait_ms;
            let ended = Ended {
                check,
                source,
                project: proj,
                ran,
                more,
            };
            self.scheduler
                .finished(&mut self.session, ended, timeout_ms, quick);
            if !self.base.deferred.is_empty() {
                self.base_warmed(); // a ride's answer: the baseline runs it deferred
            }
        }
    }

    /// Ask `source` for the fixes of its answer for `files` (their generations): off the
    /// answer's path, within [`FIX_BUDGET_MS`]; what comes back joins the items if the files
    /// did not change meanwhile (`Session::add_fixes`).
    fn ask_fixes(&mut self, source: super::SourceId, files: Vec<(PathBuf, u64)>) {
        let request = openfiles_plugin_api::CheckRequest {
            workspace: self.root.clone(),
            files: files.iter().map(|(p, _)| p.clone()).collect(),
            timeout_ms: FIX_BUDGET_MS,
            fixes_only: true,
            ..Default::default()
        };
        let fut = self.scheduler.checker().check(source, request);
        let tx = self.tx.clone();
        let asked = Instant::now();
        self.fixes_in_flight += 1;
        tokio::spawn(async move {
            // The host enforces the budget; this bound only guards against a host bug.
            let limit = Duration::from_millis(FIX_BUDGET_MS + 2_000);
            let result = tokio::time::timeout(limit, fut)
                .await
                .ok()
                .and_then(Result::ok);
            let _ = tx.send(Msg::Fixes {
                source,
                files,
                result,
                asked,
            });
        });
    }

    /// The name of `source`, from a file it handles.
    fn source_name<'a>(
        &self,
        source: super::SourceId,
        mut files: impl Iterator<Item = &'a PathBuf>,
    ) -> String {
        files
            .find_map(|f| {
                self.scheduler
                    .sources_for(f)
                    .into_iter()
                    .find(|s| s.id == source)
            })
            .map(|s| s.name)
            .unwrap_or_default()
    }

    fn hook(&self) -> HookSettings {
        HookSettings {
            feedback: self.config.hooks.feedback,
            timeout_ms: self.config.hooks.timeout_ms,
            feedback_scope: self.config.hooks.feedback_scope,
        }
    }

    /// Answer the waiters that can be: each gets its paths' entries and, so the feedback can
    /// name what the edits broke elsewhere, every entry of a file the session broke.
    fn answer_waiters(&mut self, all: bool) {
        let (session, root, hook) = (&self.session, &self.root, self.hook());
        let baseline = self.base.info();
        // With `hooks.feedback = off` the hook tells nothing: nothing is owed or counted.
        let mut silent = Late::default();
        let late = if self.config.hooks.feedback == spec::Feedback::Off {
            &mut silent
        } else {
            &mut self.late
        };
        let key = |p: &Path| writer::key(root, p);
        let changed = self
            .waiters
            .answer(session, late, all, &key, |paths, broken| {
                let mut files: std::collections::BTreeMap<String, spec::FileEntry> = paths
                    .iter()
                    .filter_map(|p| {
                        session
                            .get(p)
                            .map(|s| (writer::key(root, p), s.entry.clone()))
                    })
                    .collect();
                // Files the edits broke, unless the source that found them is checking an edited
                // file again: what it found predates that edit (an agent that reverted must not
                // be told to fix them); they come with a later answer if they are still broken.
                for (p, s) in session.iter().filter(|_| broken) {
                    if !s.entry.affected_by.is_empty() && !session.rechecking(s) {
                        files.insert(writer::key(root, p), s.entry.clone());
                    }
                }
                WorkspaceEntries {
                    root: root.clone(),
                    hook: hook.clone(),
                    files,
                    baseline: Some(baseline.clone()),
                }
            });
        self.needs_write |= changed;
    }

    /// How many files are owed to agent sessions now (`status`).
    fn owed_now(&self) -> usize {
        let (root, hook) = (&self.root, self.hook());
        let key = |p: &Path| writer::key(root, p);
        let how = super::late::Reading {
            hook: &hook,
            key: &key,
        };
        self.late.count(&self.session, &how)
    }

    /// The session with its review data, in `diagnostics.json` order.
    fn review_data(&self) -> WorkspaceReview {
        WorkspaceReview {
            root: self.root.clone(),
            paused: self.review.paused,
            last_agent: self.review.last_agent.clone(),
            files: self
                .session
                .iter()
                .map(|(path, st)| ReviewFile {
                    key: writer::key(&self.root, path),
                    mark: self.review.get(path).cloned().unwrap_or_default(),
                    entry: st.entry.clone(),
                })
                .collect(),
        }
    }

    /// What to write now; the baseline goes along when it changed since the last write.
    fn snapshot(&mut self) -> Snapshot {
        let diag = (!self.standing_back).then(|| self.root.clone());
        let info = self.base.info();
        let baseline = std::mem::take(&mut self.base.changed).then_some(&self.base.baseline);
        Snapshot::new(
            &self.root,
            &self.hook(),
            &self.session,
            (&self.queue, &self.review, &self.late),
            diag,
            self.state_path.clone(),
            (&info, baseline),
        )
    }

    fn maybe_write(&mut self) {
        if !self.persist || !self.needs_write || self.writing.is_some() {
            return;
        }
        if let Some(at) = self.write_retry_at {
            if Instant::now() < at {
                return;
            }
            self.write_retry_at = None;
        }
        self.needs_write = false;
        let snap = self.snapshot();
        let cursor = self.queue.cursor;
        let tx = self.tx.clone();
        self.writing = Some(tokio::task::spawn_blocking(move || {
            let result = snap.write();
            let large = snap.size() > 1 << 20;
            drop(snap);
            if large {
                openfiles_os::memory::trim();
            }
            let _ = tx.send(Msg::Written { cursor, result });
        }));
    }

    /// The final write at a stop: only when something is not on disk yet (a workspace
    /// refused or stopped before its first edit leaves nothing behind).
    async fn flush_now(&mut self) {
        let in_flight = self.writing.take();
        if !self.persist || !(self.needs_write || in_flight.is_some() || self.base.changed) {
            return;
        }
        // Let the write in flight land first: it holds an older snapshot, and renamed after
        // this one it would undo it (a restart would then see checked files as unchecked).
        if let Some(write) = in_flight {
            let _ = write.await;
        }
        let snap = self.snapshot();
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || snap.write()).await {
            tracing::error!(root = %self.root.display(), "final write failed: {e}");
        }
    }
}

/// An item worth asking a fix for: a problem the feedback lists (error or warning) that came
/// without one, not one of openfiles' own notes.
fn wants_fix(i: &Item) -> bool {
    i.fixes.is_empty()
        && matches!(i.severity, Severity::Error | Severity::Warning)
        && i.source != "openfiles"
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
