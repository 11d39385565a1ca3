//! The pipeline's handle and messages: what other rooms (control, workspace, intake, the
//! in-process `check`) send a workspace's pipeline actor, and the answers they get. The
//! handle is cheap to clone; every request is one message on the actor's bounded channel
//! (see the [module header](super) for the bound), so requests from one sender are handled
//! in order, and a sender waits while the channel is full. Only `stand_back`, which the
//! heartbeat sweep calls under its lock, goes on the actor's result channel instead (one
//! message per change of state, so it stays small).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};

use crate::config::Config;
use crate::diagnostics::baseline::git::GitError;
use crate::diagnostics::baseline::CommittedFiles;
use crate::diagnostics::review::WorkspaceReview;
use crate::diagnostics::schedule::Checked;
use crate::diagnostics::waiters::WaitOutcome;
use crate::diagnostics::writer::Cursor;
use crate::diagnostics::CheckError;
use crate::diagnostics::{Rejected, WorkspaceEntries};
use openfiles_wire::spec::{self, Item};

/// One line taken from `queue.jsonl`: parsed, or why it was skipped (with an excerpt).
pub type QueueEntry = Result<spec::QueueLine, String>;

/// Where an edit came from (for logs and de-duplication with the watcher).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditOrigin {
    Control,
    Queue,
    Watch,
    /// An explicit request of the user (`check`, `session add-git`): taken even while paused.
    Request,
}

/// What became of an `edited` request's paths.
#[derive(Debug, Default)]
pub struct EditOutcome {
    pub accepted: Vec<PathBuf>,
    pub rejected: Vec<Rejected>,
    /// Accepted paths whose edit the watcher had noticed first (the same content): the
    /// earliest time it did, from which a `wait` for them counts.
    pub since: Option<u64>,
    /// The workspace is paused: nothing was taken.
    pub paused: bool,
}

/// Counters and state for `status`.
#[derive(Debug, Clone, Default)]
pub struct PipelineStatus {
    pub session_files: usize,
    pub pending: usize,
    pub queue_lines: u64,
    pub malformed_queue_lines: u64,
    pub standing_back: bool,
    /// Edits are not noticed until `resume`.
    pub paused: bool,
    /// Session files not reviewed since their last edit.
    pub unreviewed: usize,
    /// Files told to a later hook of the session after their hook's deadline, ever.
    pub late_deliveries: u64,
    /// Hook waits that ended at their deadline with files still being checked, ever.
    pub deadline_notes: u64,
    /// Files owed to agent sessions now.
    pub owed: usize,
    /// The `silencing` source's items in the session's entries now.
    pub silenced: usize,
    /// The last warm-up (`warm`).
    pub warm: Option<openfiles_wire::control::WarmState>,
}

/// A file's committed text as line hashes, and what a source said about it.
pub(super) type Committed = (Vec<u64>, Vec<Item>);

/// Why a baseline job has no answer (the session's baseline keeps its text: a file or
/// project whose baseline failed is said so, its items are not classified against it).
#[derive(Debug, thiserror::Error)]
pub(super) enum JobError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error("the baseline job stopped: {0}")]
    Task(#[from] tokio::task::JoinError),
    #[error("the workspace's trust changed during its baseline run")]
    TrustChanged,
    /// The run several projects shared failed (each project's result says why).
    #[error(transparent)]
    Together(std::sync::Arc<JobError>),
}

/// A baseline job's result (see `base.rs`).
pub(super) enum BaseMsg {
    /// The commit `HEAD` named when the session's first edit arrived, or why there is none.
    Commit(Result<String, GitError>),
    /// A per-file source's answer for a file's committed text (`None`: the commit does not
    /// have the file), as (line hashes, items).
    File {
        path: PathBuf,
        source: String,
        result: Result<Option<Committed>, JobError>,
    },
    /// A project-wide source's run over the committed tree: per file with problems, its
    /// line hashes and items.
    Project {
        source: String,
        project: PathBuf,
        result: Result<CommittedFiles, JobError>,
    },
    /// A project-wide source's run over a project is kept at the session's commit: the job
    /// deferred for the session start's warm-up only reads it, so it starts now.
    Kept { source: String, project: PathBuf },
}

pub(super) enum Msg {
    Edited {
        paths: Vec<PathBuf>,
        origin: EditOrigin,
        agent: Option<String>,
        reply: Option<oneshot::Sender<EditOutcome>>,
    },
    Review {
        reply: oneshot::Sender<WorkspaceReview>,
    },
    Mark {
        paths: Vec<PathBuf>,
        reviewed: bool,
        reply: oneshot::Sender<Vec<PathBuf>>,
    },
    Pause {
        paused: bool,
        reply: oneshot::Sender<bool>,
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
        /// Answer early once the fast sources answered (after `hooks.partial_after_ms`).
        partial: bool,
        /// The agent session asking (see `diagnostics::late`).
        session: Option<String>,
        reply: oneshot::Sender<WaitOutcome>,
    },
    /// Start the checkers for an agent session; answers whether a warm-up was started.
    Warm {
        reply: oneshot::Sender<bool>,
    },
    Warmed(Warmed),
    /// The warm-up's per-file checks answered: the language servers are up (the analysis of
    /// a source that keeps a warm server may go on).
    ServersWarmed,
    /// A code-navigation question about one file (`nav.rs`).
    Query {
        request: openfiles_plugin_api::query::QueryRequest,
        reply: oneshot::Sender<
            Result<openfiles_plugin_api::query::QueryAnswer, super::nav::QueryError>,
        >,
    },
    Checked(Checked),
    /// The answer to a fix request (`CheckRequest::fixes_only`) for `files` at their
    /// generations, asked at `asked`; `None` when it failed or timed out.
    Fixes {
        source: crate::diagnostics::SourceId,
        files: Vec<(PathBuf, u64)>,
        result: Option<openfiles_plugin_api::CheckResponse>,
        asked: tokio::time::Instant,
    },
    /// Answered once no fix request is in flight.
    FixesIdle {
        reply: oneshot::Sender<()>,
    },
    Base(BaseMsg),
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

/// What one warm-up did (see `warm.rs`), sent back to the actor.
pub(super) struct Warmed {
    pub sources: Vec<String>,
    pub files: Vec<PathBuf>,
    pub failed: Vec<String>,
    /// Its project-wide answers over a clean tree: baselines at its commit (`seed.rs`).
    pub seeds: Vec<super::seed::Seed>,
}

/// A cloneable handle to one workspace's pipeline.
#[derive(Clone)]
pub struct PipelineHandle {
    pub root: Arc<PathBuf>,
    /// Requests: bounded, a sender waits while it is full.
    pub(super) tx: mpsc::Sender<Msg>,
    /// The actor's result channel (see [`Pipeline`](super::Pipeline)), for `stand_back`.
    pub(super) results: mpsc::UnboundedSender<Msg>,
}

impl PipelineHandle {
    async fn send(&self, msg: Msg) {
        let _ = self.tx.send(msg).await;
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Msg) -> Option<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).await.ok()?;
        rx.await.ok()
    }

    /// Report edited paths; they pass the path policy and get scheduled.
    pub async fn edited(&self, paths: Vec<PathBuf>, origin: EditOrigin) -> EditOutcome {
        self.edited_by(paths, origin, None).await
    }

    /// Report paths edited by `agent` (recorded for review; `None`: unknown).
    pub async fn edited_by(
        &self,
        paths: Vec<PathBuf>,
        origin: EditOrigin,
        agent: Option<String>,
    ) -> EditOutcome {
        self.ask(|reply| Msg::Edited {
            paths,
            origin,
            agent,
            reply: Some(reply),
        })
        .await
        .unwrap_or_default()
    }

    /// The session with its review data (agents, marks), for `openfiles review`.
    pub async fn review(&self) -> WorkspaceReview {
        let root = (*self.root).clone();
        self.ask(|reply| Msg::Review { reply })
            .await
            .unwrap_or(WorkspaceReview {
                root,
                ..Default::default()
            })
    }

    /// Mark session files reviewed (or not); returns those that are in the session.
    pub async fn mark(&self, paths: Vec<PathBuf>, reviewed: bool) -> Vec<PathBuf> {
        self.ask(|reply| Msg::Mark {
            paths,
            reviewed,
            reply,
        })
        .await
        .unwrap_or_default()
    }

    /// Pause (or resume) noticing edits; returns whether it was paused before.
    pub async fn pause(&self, paused: bool) -> bool {
        self.ask(|reply| Msg::Pause { paused, reply })
            .await
            .unwrap_or_default()
    }

    /// Report edits without waiting for the verdict (only for room in the channel).
    pub async fn edited_nowait(&self, paths: Vec<PathBuf>, origin: EditOrigin) {
        self.send(Msg::Edited {
            paths,
            origin,
            agent: None,
            reply: None,
        })
        .await;
    }

    /// Wait until every path has `checkedAt >= since` or `deadline` (`None`: `since` plus the
    /// workspace's `hooks.timeout_ms`); with `partial`, also answer once the grace
    /// `hooks.partial_after_ms` after `since` has passed and only project-wide sources still
    /// run (see [`waiters`](crate::diagnostics::waiters)).
    pub async fn wait(
        &self,
        paths: Vec<PathBuf>,
        since: u64,
        deadline: Option<Instant>,
        partial: bool,
    ) -> WaitOutcome {
        self.wait_for(paths, since, deadline, partial, None).await
    }

    /// [`wait`](Self::wait) for an agent `session`: at the deadline, paths still being
    /// checked are owed to it; results owed to it that are in come in `earlier`, once.
    pub async fn wait_for(
        &self,
        paths: Vec<PathBuf>,
        since: u64,
        deadline: Option<Instant>,
        partial: bool,
        session: Option<String>,
    ) -> WaitOutcome {
        let root = self.root.clone();
        self.ask(|reply| Msg::Wait {
            paths,
            since,
            deadline,
            partial,
            session,
            reply,
        })
        .await
        .unwrap_or_else(|| WaitOutcome {
            entries: WorkspaceEntries {
                root: (*root).clone(),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// Start the checkers in the background for an agent session (see `warm.rs`); returns
    /// whether a warm-up was started (false: one is running).
    pub async fn warm(&self) -> bool {
        self.ask(|reply| Msg::Warm { reply }).await.unwrap_or(false)
    }

    /// Ask the sources that handle `request.file` a code-navigation question (`nav.rs`).
    pub async fn query(
        &self,
        request: openfiles_plugin_api::query::QueryRequest,
    ) -> Result<openfiles_plugin_api::query::QueryAnswer, super::nav::QueryError> {
        self.ask(|reply| Msg::Query { request, reply })
            .await
            .unwrap_or(Err(super::nav::QueryError::Stopped))
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

    pub async fn reload(&self, config: Arc<Config>) {
        self.send(Msg::Config(config)).await;
    }

    /// Lines taken from `queue.jsonl` (parsed by the intake) and the cursor past them; the
    /// pipeline persists their effect and the cursor in one write, then acknowledges it.
    pub async fn queue_lines(&self, lines: Vec<QueueEntry>, cursor: Cursor) {
        self.send(Msg::Queue { lines, cursor }).await;
    }

    /// Connect the queue intake: persisted cursors are acknowledged on `ack`.
    pub(crate) async fn attach_intake(&self, ack: AckSender) {
        self.send(Msg::AttachIntake(ack)).await;
    }

    /// Stand back for an editor's server (or stop): never waits, it is called under the
    /// heartbeat sweep's lock; one message per change, on the result channel.
    pub fn stand_back(&self, yes: bool) {
        let _ = self.results.send(Msg::StandBack(yes));
    }

    /// Flush pending writes and stop.
    /// Wait until the fixes asked after the answers so far came in (each fix request is
    /// bounded by its budget): what `check` waits for before it reads the entries.
    pub async fn fixes_idle(&self) {
        let _ = self.ask(|reply| Msg::FixesIdle { reply }).await;
    }

    pub async fn stop(&self) {
        let _ = self.ask(|reply| Msg::Stop { reply }).await;
    }
}

/// Notified when the queue cursor is persisted.
pub type AckSender = mpsc::UnboundedSender<Cursor>;
