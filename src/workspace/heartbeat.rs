//! The heartbeat file `.openfiles/vscode/openfiles-<session>.json`: proof to hooks and agents
//! that someone serves this workspace. Readers judge it by mtime (fresh when < 60 s old) and
//! never by its content, which does not change while we serve (`updatedAt` says when it
//! was written). So it is written once, atomically, when the workspace starts, and then only
//! its timestamp is refreshed ([`refresh`]: `utimensat` relative to `O_PATH` descriptors of
//! its folders, no symlink followed; a rewrite when it is missing or not ours), and it is
//! deleted on clean shutdown.
//!
//! One [`Sweep`] for the whole service refreshes every workspace's heartbeat on one timer,
//! every `service.heartbeat_seconds` (default 30: half the readers' 60 s), in one blocking
//! task: 1 000 workspaces cost one wakeup per period, not one per workspace. The same sweep
//! answers the reverse question for each workspace: is another OpenFiles server (the editor
//! extension) live here? Its heartbeat is any fresh `*.json` in the same folder whose
//! `appName` is not ours; while one is, the workspace stands back (its pipeline and queue
//! intake are told only when that changes). It also notices a workspace folder that
//! disappeared and reports it for the registry to forget.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use openfiles_plugin_api::confine;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::diagnostics::pipeline::PipelineHandle;
use openfiles_os::fsutil;
use openfiles_wire::spec::{self, Heartbeat, MAX_HEARTBEAT_BYTES};

/// Path of our heartbeat file for `root`.
pub fn path(root: &Path, session_id: &str) -> PathBuf {
    root.join(relative(session_id))
}

/// Our heartbeat's file name.
fn file_name(session_id: &str) -> String {
    format!("openfiles-{session_id}.json")
}

/// Our heartbeat, relative to the workspace root.
fn relative(session_id: &str) -> PathBuf {
    Path::new(spec::DIR)
        .join(spec::HEARTBEAT_DIR)
        .join(file_name(session_id))
}

/// Keep the heartbeat fresh: a timestamp update when our file is there (its content never
/// changes while we serve), else a full atomic rewrite.
pub fn refresh(root: &Path, session_id: &str) -> std::io::Result<()> {
    match fsutil::touch_in(root, &relative(session_id)) {
        Ok(()) => Ok(()),
        Err(e) => {
            tracing::debug!(root = %root.display(), "heartbeat rewritten ({e})");
            write(root, session_id)
        }
    }
}

/// Write the heartbeat atomically.
pub fn write(root: &Path, session_id: &str) -> std::io::Result<()> {
    let beat = Heartbeat {
        version: 1,
        workspace_root: root.to_owned(),
        session_id: session_id.to_owned(),
        app_name: spec::APP_NAME.to_owned(),
        updated_at: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        files: Vec::new(),
    };
    let mut text = serde_json::to_vec_pretty(&beat).map_err(std::io::Error::other)?;
    text.push(b'\n');
    // Reached from the root by descriptor: a `.openfiles/` swapped for a symlink is refused.
    // No fsync: after a crash the heartbeat is stale anyway.
    fsutil::write_atomic_in_volatile(
        root,
        &relative(session_id),
        &text,
        fsutil::reader_mode(root),
        0o755,
    )
}

/// Remove our heartbeat (clean shutdown, or the workspace was forgotten).
pub fn remove(root: &Path, session_id: &str) {
    let _ = std::fs::remove_file(path(root, session_id));
}

/// True when a fresh heartbeat of another OpenFiles server (not this service, whose own
/// file is skipped unread) is present.
pub fn foreign_server_live(root: &Path, session_id: &str) -> bool {
    look(root, session_id).0
}

/// (a fresh foreign heartbeat is present, any heartbeat but ours is present).
fn look(root: &Path, session_id: &str) -> (bool, bool) {
    let own = file_name(session_id);
    let dir = root.join(spec::DIR).join(spec::HEARTBEAT_DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return (false, false);
    };
    let fresh = Duration::from_secs(spec::HEARTBEAT_FRESH_SECS);
    let mut others = false;
    let live = entries.flatten().any(|e| {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("json") || e.file_name() == *own {
            return false;
        }
        others = true;
        let is_fresh = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age < fresh);
        if !is_fresh {
            return false;
        }
        // Ours (any openfiles instance) do not count; unreadable or foreign ones do.
        match confine::read_regular(&p, confine::Last::NoFollow, MAX_HEARTBEAT_BYTES)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        {
            Some(v) => v.get("appName").and_then(|a| a.as_str()) != Some(spec::APP_NAME),
            None => true,
        }
    });
    (live, others)
}

/// The heartbeat folder's mtime (a `stat`: no open, so no event for our own watcher of
/// `.openfiles/`).
fn folder_mtime(root: &Path) -> Option<SystemTime> {
    std::fs::symlink_metadata(root.join(spec::DIR).join(spec::HEARTBEAT_DIR))
        .and_then(|m| m.modified())
        .ok()
}

/// Whether an editor is live at `root`, reading the heartbeat folder only when it may hold
/// news. `quiet` is the folder's mtime when a previous look found nothing but our own
/// heartbeat there: while the mtime stays the same, no other heartbeat has appeared (a
/// new file changes it), so the folder is not read again. Returns the answer and the new
/// `quiet`. An mtime younger than 2 s is not trusted (a change within the same clock tick).
fn editor_live(
    root: &Path,
    session_id: &str,
    quiet: Option<SystemTime>,
) -> (bool, Option<SystemTime>) {
    let now = folder_mtime(root);
    if quiet.is_some() && now == quiet {
        return (false, quiet);
    }
    let (live, others) = look(root, session_id);
    let settled = now.filter(|m| {
        !others
            && SystemTime::now()
                .duration_since(*m)
                .is_ok_and(|age| age > Duration::from_secs(2))
    });
    (live, settled)
}

/// What the sweep keeps per workspace.
struct Beat {
    pipeline: PipelineHandle,
    /// The queue intake's "leave the queue to the editor" switch.
    paused: watch::Sender<bool>,
    standing_back: bool,
    /// See [`editor_live`].
    quiet: Option<SystemTime>,
}

/// What a pass found for one workspace.
struct Looked {
    root: PathBuf,
    written: std::io::Result<()>,
    foreign: bool,
    quiet: Option<SystemTime>,
}

/// The heartbeats of every served workspace, refreshed together on one timer ([`run`]).
pub struct Sweep {
    session_id: String,
    beats: Mutex<BTreeMap<PathBuf, Beat>>,
}

impl Sweep {
    pub fn new(session_id: String) -> Arc<Sweep> {
        Arc::new(Sweep {
            session_id,
            beats: Mutex::new(BTreeMap::new()),
        })
    }

    fn beats(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Beat>> {
        self.beats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write `root`'s first heartbeat, look for a live editor there now (the pipeline and the
    /// queue intake start standing back if one is), and refresh it with the others from now on.
    pub fn add(
        &self,
        root: &Path,
        pipeline: PipelineHandle,
        paused: watch::Sender<bool>,
    ) -> std::io::Result<()> {
        write(root, &self.session_id)?;
        let standing_back = foreign_server_live(root, &self.session_id);
        if standing_back {
            pipeline.stand_back(true);
            paused.send_replace(true);
        }
        self.beats().insert(
            root.to_owned(),
            Beat {
                pipeline,
                paused,
                standing_back,
                quiet: None,
            },
        );
        Ok(())
    }

    /// Stop refreshing `root`'s heartbeat and remove the file.
    pub fn remove(&self, root: &Path) {
        self.beats().remove(root);
        remove(root, &self.session_id);
    }

    /// One pass over every workspace (blocking: file system calls only).
    fn pass(&self, beats: Vec<(PathBuf, Option<SystemTime>)>) -> Vec<Looked> {
        beats
            .into_iter()
            .map(|(root, quiet)| {
                let written = refresh(&root, &self.session_id);
                let (foreign, quiet) = match written {
                    Ok(()) => editor_live(&root, &self.session_id, quiet),
                    Err(_) => (false, None),
                };
                Looked {
                    root,
                    written,
                    foreign,
                    quiet,
                }
            })
            .collect()
    }

    /// Apply a pass: stand back or resume where that changed, report vanished folders.
    fn apply(&self, results: Vec<Looked>, gone: &mpsc::UnboundedSender<PathBuf>) {
        let mut beats = self.beats();
        for Looked {
            root,
            written,
            foreign,
            quiet,
        } in results
        {
            if let Err(e) = written {
                if !root.exists() {
                    tracing::warn!(root = %root.display(), "workspace folder disappeared; dropping it");
                    beats.remove(&root);
                    let _ = gone.send(root);
                } else {
                    tracing::error!(root = %root.display(), "heartbeat write failed: {e}");
                }
                continue;
            }
            let Some(beat) = beats.get_mut(&root) else {
                continue; // forgotten during the pass
            };
            beat.quiet = quiet;
            if beat.standing_back != foreign {
                beat.standing_back = foreign;
                beat.pipeline.stand_back(foreign);
                beat.paused.send_replace(foreign);
            }
        }
    }
}

/// Refresh every heartbeat each period (changeable through `every`, by a config reload)
/// until `token` is cancelled.
pub async fn run(
    sweep: Arc<Sweep>,
    mut every: watch::Receiver<Duration>,
    gone: mpsc::UnboundedSender<PathBuf>,
    token: CancellationToken,
) {
    let start = |period: Duration| {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick
    };
    let mut tick = start(*every.borrow_and_update());
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tick.tick() => {}
            Ok(()) = every.changed() => {
                // Refresh at once, then keep the new period.
                tick = start(*every.borrow_and_update());
            }
        }
        let beats: Vec<(PathBuf, Option<SystemTime>)> = sweep
            .beats()
            .iter()
            .map(|(root, b)| (root.clone(), b.quiet))
            .collect();
        if beats.is_empty() {
            continue;
        }
        let s = sweep.clone();
        let Ok(results) = tokio::task::spawn_blocking(move || s.pass(beats)).await else {
            return; // the runtime is shutting down
        };
        sweep.apply(results, &gone);
    }
}
