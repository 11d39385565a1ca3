//! Writing what the pipeline knows: `.openfiles/diagnostics.json` for agents, and the
//! session state (entries + queue cursor + review marks + results owed to agent sessions) in the state dir for restarts, with
//! its one-line summary (`status.json`, read by `openfiles status --short`) beside it.
//!
//! Both are replaced atomically (temp file + rename). The session state and the queue cursor
//! live in one file so that, after a crash, the lines re-read from the queue are exactly those
//! whose effect was not persisted: no line is lost and none counts twice.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::baseline::{Baseline, Coverage};
use super::late::Late;
use super::review::{Review, Summary, SUMMARY_FILE};
use super::session::Session;
use openfiles_os::fsutil;
use openfiles_wire::spec::{self, BaselineInfo, DiagnosticsFile, FileEntry, HookSettings};

/// Position in one queue file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePos {
    pub dev: u64,
    pub ino: u64,
    /// Birth time in ns where the filesystem records it (0 otherwise): inode numbers are
    /// reused, so a replaced file can carry its predecessor's inode.
    #[serde(default)]
    pub born: u64,
    pub offset: u64,
}

/// Where reading stands, in `queue.jsonl` and in the file being drained. Persisted here, in
/// one write with the effect of the lines before it; the queue intake (`intake::queue`) moves it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    #[serde(default)]
    pub main: Option<FilePos>,
    #[serde(default)]
    pub draining: Option<FilePos>,
}

/// The workspace-relative key of `path` in `diagnostics.json` (`/`-separated).
pub fn key(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// `diagnostics.json` as a borrowed view of the session: serialized without copying entries.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DocumentView<'a> {
    version: u32,
    updated_at: u64,
    hook: &'a HookSettings,
    files: FilesView<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline: Option<&'a BaselineInfo>,
}

struct FilesView<'a> {
    root: &'a Path,
    session: &'a Session,
}

impl Serialize for FilesView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.session.len()))?;
        for (path, st) in self.session.iter() {
            map.serialize_entry(&key(self.root, path), &st.entry)?;
        }
        map.end()
    }
}

/// What is persisted per workspace in the state dir: the queue cursor and, verbatim, the
/// `diagnostics.json` document of the same moment.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    pub version: u32,
    #[serde(default)]
    pub queue: QueueState,
    #[serde(default)]
    pub diagnostics: Option<DiagnosticsFile>,
    /// Agents per file, reviewed marks, paused (absent in states written before review).
    #[serde(default)]
    pub review: Review,
    /// Results owed to agent sessions (absent in states written before them).
    #[serde(default)]
    pub late: Late,
}

impl SessionState {
    /// The persisted entries.
    pub fn into_entries(self) -> impl Iterator<Item = FileEntry> {
        self.diagnostics
            .into_iter()
            .flat_map(|d| d.files.into_values())
    }
}

/// The queue's persisted position and counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueState {
    #[serde(default)]
    pub cursor: Cursor,
    /// Valid lines taken from the queue, ever.
    #[serde(default)]
    pub lines: u64,
    /// Malformed lines skipped, ever.
    #[serde(default)]
    pub malformed: u64,
}

/// Where a workspace's session state lives.
pub fn state_file(state_dir: &Path, root: &Path) -> PathBuf {
    openfiles_wire::summary::workspace_state_dir(state_dir, root).join("session.json")
}

/// Where a workspace's baseline lives (beside its session state).
pub fn baseline_file(state_path: &Path) -> PathBuf {
    state_path.with_file_name("baseline.json")
}

/// Load a session's baseline; missing or corrupt means none yet (taken again). Runs that were
/// in flight when the service stopped are forgotten, so they run again.
pub fn load_baseline(path: &Path) -> Baseline {
    let mut b: Baseline = load_or_set_aside(path, "taking the baseline again").unwrap_or_default();
    for projects in b.projects.values_mut() {
        projects.retain(|_, c| *c != Coverage::Running);
    }
    for f in b.files.values_mut() {
        f.covered.retain(|_, c| *c != Coverage::Running);
    }
    b
}

/// Load a workspace's session state; missing or corrupt means a fresh session (logged, the
/// corrupt file kept aside as `session.json.corrupt`).
pub fn load_state(path: &Path) -> SessionState {
    load_or_set_aside(path, "starting a fresh session").unwrap_or_default()
}

/// Largest session state or baseline read: the diagnostics document in the state is capped
/// at [`spec::MAX_DIAGNOSTICS_BYTES`], the rest is small beside it.
pub const MAX_STATE_BYTES: u64 = 2 * spec::MAX_DIAGNOSTICS_BYTES;

/// Read and parse one of our state files; a missing one is `None`, quietly. One that cannot
/// be loaded — not a regular file (a FIFO would hang the workspace's start, a device be read
/// until memory runs out), larger than [`MAX_STATE_BYTES`], not valid — is logged with
/// `then` (what happens instead) and moved aside to `<name>.corrupt` (replacing an older
/// one), so what it held can still be recovered by hand; then `None`.
fn load_or_set_aside<T: serde::de::DeserializeOwned>(path: &Path, then: &str) -> Option<T> {
    use openfiles_plugin_api::confine::{self, Last};
    let why = match confine::read_regular(path, Last::NoFollow, MAX_STATE_BYTES) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(v) => return Some(v),
            Err(e) => e.to_string(),
        },
        Err(e) if e.is_not_found() => return None,
        Err(e) => e.to_string(),
    };
    let mut aside = path.as_os_str().to_owned();
    aside.push(".corrupt");
    let aside = PathBuf::from(aside);
    match std::fs::rename(path, &aside) {
        Ok(()) => tracing::error!(
            "{} cannot be loaded ({why}); moved to {} and {then}",
            path.display(),
            aside.display()
        ),
        Err(e) => tracing::error!(
            "{} cannot be loaded ({why}) nor moved to {} ({e}); {then}",
            path.display(),
            aside.display()
        ),
    }
    None
}

/// One write job: both files' bytes, produced by the pipeline, written on a blocking thread.
pub struct Snapshot {
    /// The workspace whose `.openfiles/diagnostics.json` to write.
    pub diagnostics_root: Option<PathBuf>,
    pub diagnostics: Vec<u8>,
    pub state_path: PathBuf,
    pub state: Vec<u8>,
    /// The baseline's bytes, when it changed since the last write.
    pub baseline: Option<Vec<u8>>,
    /// `status.json`, written beside the state.
    pub summary: Vec<u8>,
}

impl Snapshot {
    /// Serialize the current state: the session, with the queue cursor and the review data
    /// that go into the state file beside it. `diagnostics_root` is `None` while the service
    /// stands back for an editor (the file is theirs then).
    pub fn new(
        root: &Path,
        hook: &HookSettings,
        session: &Session,
        (queue, review, late): (&QueueState, &Review, &Late),
        diagnostics_root: Option<PathBuf>,
        state_path: PathBuf,
        baseline: (&BaselineInfo, Option<&Baseline>),
    ) -> Snapshot {
        let view = DocumentView {
            version: 1,
            updated_at: spec::now_ms(),
            hook,
            files: FilesView { root, session },
            baseline: Some(baseline.0),
        };
        let mut diagnostics = serde_json::to_vec_pretty(&view).unwrap_or_default();
        diagnostics.push(b'\n');
        // {"version":1,"queue":…,"diagnostics":<the same bytes>}: no second serialization.
        let mut state = br#"{"version":1,"queue":"#.to_vec();
        state.extend(serde_json::to_vec(queue).unwrap_or_default());
        state.extend_from_slice(br#","diagnostics":"#);
        state.extend_from_slice(&diagnostics);
        state.extend_from_slice(br#","review":"#);
        state.extend(serde_json::to_vec(review).unwrap_or_else(|_| b"{}".to_vec()));
        state.extend_from_slice(br#","late":"#);
        state.extend(serde_json::to_vec(late).unwrap_or_else(|_| b"{}".to_vec()));
        state.push(b'}');
        let summary = serde_json::to_vec(&summary(root, session, review)).unwrap_or_default();
        Snapshot {
            diagnostics_root,
            diagnostics,
            state_path,
            state,
            baseline: baseline.1.and_then(|b| serde_json::to_vec(b).ok()),
            summary,
        }
    }

    /// Write both files atomically: the state first (it carries the queue cursor), then
    /// `diagnostics.json`. A failed state write (a full state disk) does not keep agents
    /// from fresh results: `diagnostics.json` is still written, then the state's error is
    /// returned (the pipeline retries). `diagnostics.json` is reached from the workspace
    /// root by descriptor (`fsutil::write_atomic_in`): never through a swapped symlink.
    pub fn write(&self) -> std::io::Result<()> {
        let state = match self.state_path.parent() {
            Some(dir) => fsutil::ensure_private_dir(dir, 0o700),
            None => Ok(()),
        }
        .and_then(|()| fsutil::write_atomic(&self.state_path, &self.state, 0o600))
        .and_then(|()| match &self.baseline {
            Some(bytes) => fsutil::write_atomic(&baseline_file(&self.state_path), bytes, 0o600),
            None => Ok(()),
        })
        .and_then(|()| {
            let path = self.state_path.with_file_name(SUMMARY_FILE);
            fsutil::write_atomic(&path, &self.summary, 0o600)
        });
        if let Some(root) = &self.diagnostics_root {
            let rel = Path::new(spec::DIR).join(spec::DIAGNOSTICS_FILE);
            let mode = fsutil::reader_mode(root);
            fsutil::write_atomic_in(root, &rel, &self.diagnostics, mode, 0o755)?;
        }
        state
    }

    /// Size of the serialized state, to decide whether freeing it is worth a trim.
    pub fn size(&self) -> usize {
        self.diagnostics.len() + self.state.len() + self.baseline.as_ref().map_or(0, Vec::len)
    }
}

/// The one-line summary of a session and its review marks.
pub fn summary(root: &Path, session: &Session, review: &Review) -> Summary {
    let mut s = Summary {
        version: 1,
        root: root.to_owned(),
        files: session.len(),
        last_agent: review.last_agent.clone(),
        paused: review.paused,
        updated_at: spec::now_ms(),
        ..Default::default()
    };
    for (path, st) in session.iter() {
        s.errors += u64::from(st.entry.errors);
        s.warnings += u64::from(st.entry.warnings);
        if !st.settled() {
            s.pending += 1;
        }
        if !review.get(path).is_some_and(|m| m.reviewed()) {
            s.unreviewed += 1;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::baseline::Taken;
    use crate::diagnostics::testing::{error, per_file};
    use openfiles_wire::spec::{Item, Severity};

    /// A session under `root`: `a.rs` checked with an error and a warning, `sub/b.rs` edited
    /// and not checked yet.
    fn session(root: &Path) -> Session {
        let (a, b) = (root.join("a.rs"), root.join("sub/b.rs"));
        let mut s = Session::default();
        let g = s.edited(&a, 1);
        s.dispatched(&a, &[per_file(0, "lsp")], 1);
        let warning = Item {
            severity: Severity::Warning,
            ..error(2, "lsp", "unused variable")
        };
        s.answered(
            &a,
            g,
            0,
            vec![error(1, "lsp", "mismatched types"), warning],
            5,
        );
        s.edited(&b, 6);
        s
    }

    #[test]
    fn the_state_carries_the_queue_and_the_written_document_and_restores_the_session() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let session = session(&root);
        let queue = QueueState {
            cursor: Cursor {
                main: Some(FilePos {
                    dev: 1,
                    ino: 2,
                    born: 3,
                    offset: 420,
                }),
                draining: None,
            },
            lines: 7,
            malformed: 1,
        };
        let state_path = dir.path().join("state/workspaces/ws-1/session.json");
        let info = BaselineInfo::default();
        let mut owed = Late::default();
        owed.owe(
            "claude/s1",
            &[root.join("src/a.rs")],
            5,
            false,
            &[7, 9].into(),
        );
        let snap = Snapshot::new(
            &root,
            &HookSettings::default(),
            &session,
            (&queue, &Review::default(), &owed),
            Some(root.clone()),
            state_path.clone(),
            (&info, None),
        );
        snap.write().unwrap();

        let written = std::fs::read(root.join(spec::DIR).join(spec::DIAGNOSTICS_FILE)).unwrap();
        assert_eq!(written, snap.diagnostics);
        let state: SessionState =
            serde_json::from_slice(&std::fs::read(&state_path).unwrap()).unwrap();
        assert_eq!(state.queue, queue);
        assert_eq!(
            state.late, owed,
            "what sessions are owed survives a restart"
        );
        let doc: DiagnosticsFile = serde_json::from_slice(&written).unwrap();
        assert_eq!(state.diagnostics.as_ref(), Some(&doc), "the same document");
        let keys: Vec<&str> = doc.files.keys().map(String::as_str).collect();
        assert_eq!(keys, vec!["a.rs", "sub/b.rs"]);
        let a = &doc.files["a.rs"];
        assert_eq!((a.errors, a.warnings, a.checked_at), (1, 1, 5));
        assert!(
            !baseline_file(&state_path).exists(),
            "no baseline handed over"
        );
        assert!(state_path.with_file_name(SUMMARY_FILE).exists());

        // After a restart the checked file stands as written; the other is checked again.
        let (restored, unchecked) = Session::restore(state.into_entries());
        assert_eq!(unchecked, vec![root.join("sub/b.rs")]);
        assert_eq!(restored.get(&root.join("a.rs")).unwrap().entry, *a);
    }

    #[test]
    fn the_summary_counts_problems_pending_files_and_unreviewed_ones() {
        let root = Path::new("/w");
        let session = session(root);
        let mut review = Review::default();
        review.edited(&root.join("a.rs"), Some("claude"), 1);
        review.edited(&root.join("sub/b.rs"), Some("codex"), 6);
        let s = summary(root, &session, &review);
        let counts = (s.files, s.errors, s.warnings, s.pending, s.unreviewed);
        assert_eq!(counts, (2, 1, 1, 1, 2));
        assert_eq!(s.last_agent.as_deref(), Some("codex"));
        review.mark(&[root.join("a.rs")], true, 7);
        assert_eq!(summary(root, &session, &review).unreviewed, 1);
    }

    #[test]
    fn keys_are_slash_separated_inside_the_root_and_absolute_outside() {
        let root = Path::new("/w/proj");
        assert_eq!(key(root, Path::new("/w/proj/src/lib.rs")), "src/lib.rs");
        assert_eq!(key(root, Path::new("/w/other/x.rs")), "/w/other/x.rs");
    }

    #[test]
    fn loading_forgets_runs_in_flight_and_survives_a_corrupt_state() {
        let dir = tempfile::tempdir().unwrap();
        let (proj, file) = (Path::new("/w"), Path::new("/w/a.rs"));
        let mut b = Baseline {
            taken: Taken::Head {
                commit: "abc".into(),
            },
            ..Baseline::default()
        };
        b.set_project("tsc", proj, Coverage::Running);
        b.set_project("cargo", proj, Coverage::Ready);
        b.set_file_coverage("lsp", file, Coverage::Running);
        b.set_file_coverage("ruff", file, Coverage::Ready);
        let path = dir.path().join("baseline.json");
        std::fs::write(&path, serde_json::to_vec(&b).unwrap()).unwrap();
        let loaded = load_baseline(&path);
        assert_eq!(loaded.commit(), Some("abc"));
        assert_eq!(loaded.project("tsc", proj), None, "run again");
        assert_eq!(loaded.project("cargo", proj), Some(&Coverage::Ready));
        assert_eq!(loaded.file_coverage("lsp", file), None, "run again");
        assert_eq!(loaded.file_coverage("ruff", file), Some(&Coverage::Ready));

        let state = dir.path().join("session.json");
        std::fs::write(&state, b"{\"version\":1,\"queue\":").unwrap();
        let fresh = load_state(&state);
        assert!(fresh.diagnostics.is_none() && fresh.queue == QueueState::default());
    }

    /// A corrupt `session.json` was silently replaced by an empty session (its 201 files
    /// lost); it is kept aside now, byte for byte, as `workspaces.json` already was.
    #[test]
    fn a_corrupt_session_state_is_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("session.json");
        let bytes = b"{\"version\":1,\"queue\":{\"lines\":201},\"diagnostics\":{\"fil".to_vec();
        std::fs::write(&state, &bytes).unwrap();
        let fresh = load_state(&state);
        assert_eq!(fresh.queue, QueueState::default());
        assert_eq!(
            std::fs::read(dir.path().join("session.json.corrupt")).unwrap(),
            bytes
        );
        assert!(!state.exists());
        // Missing: a fresh session, nothing set aside.
        std::fs::remove_file(dir.path().join("session.json.corrupt")).unwrap();
        let _ = load_state(&state);
        assert!(!dir.path().join("session.json.corrupt").exists());
    }

    /// `session.json` (or `baseline.json`) as a FIFO hung the workspace's start; linked to
    /// `/dev/zero` it was read until allocation failed. Both are refused at once and set
    /// aside.
    #[test]
    fn state_files_that_are_fifos_or_devices_are_refused_promptly() {
        fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(f());
            });
            rx.recv_timeout(std::time::Duration::from_secs(10))
                .expect("loading the state hung")
        }
        let dir = tempfile::tempdir().unwrap();
        for name in ["session.json", "baseline.json"] {
            let path = dir.path().join(name);
            let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        }
        let state = dir.path().join("session.json");
        let base = dir.path().join("baseline.json");
        let (s, b) = (state.clone(), base.clone());
        let fresh = within(move || load_state(&s));
        assert!(fresh.diagnostics.is_none());
        let loaded = within(move || load_baseline(&b));
        assert_eq!(loaded.commit(), None);
        assert!(dir.path().join("session.json.corrupt").exists());
        assert!(dir.path().join("baseline.json.corrupt").exists());
        std::os::unix::fs::symlink("/dev/zero", &state).unwrap();
        let s = state.clone();
        let fresh = within(move || load_state(&s));
        assert!(fresh.diagnostics.is_none());
    }
}
