//! The warm checker: pyright's (or basedpyright's) language server in workspace mode
//! (`python.analysis.diagnosticMode = "workspace"`), one per checker, executable, workspace
//! and trust level, with every project root of that workspace a checker ran on as a workspace
//! folder (the monorepo case: one server for all packages, each with its own config). A check
//! asks about one or more roots at once (the ones new to the server added in one
//! `workspace/didChangeWorkspaceFolders`, so their programs are analysed in one pass, not one
//! wait each), tells it which files changed (`workspace/didChangeWatchedFiles`: it reads them
//! from disk and re-checks them and their dependents), waits until the analysis settles and
//! takes every file's last pushed diagnostics under the check's roots.
//!
//! Settled: when [`crate::settle`] says (the changed files and their users re-checked, the
//! analysis quiet). A newer check's notification ends an older check's wait (not the
//! server): the newer one answers for both. Roots new to the server together whose
//! configurations can be one program are one folder of a combined configuration
//! (`combine.rs`).
//!
//! Early: a check answers before the analysis settled, with [`Answer::more`], as soon as the
//! changed files and their users ([`crate::early`]: the files that import a changed module
//! and mention a name its edit touched) were re-published after the notification — what the
//! edit broke in its callers is known then (a changed file's own diagnostics only once it was
//! re-published twice: the first publish repeats its old diagnostics); the rest of the analysis (every other
//! importer) is the follow-up check's, which the service runs at once: its files are not
//! notified again (the server was told their text), so it waits for the same analysis to
//! settle. Only files whose text differs from what the server was told are notified.
//!
//! Started through the gate like the command line (the same executable's directory, the same
//! [`Scope`]); stopped when unused for `idle_timeout_ms`, or after a check that leaves its
//! process tree above `max_memory_mib` (the next check starts it again); it dies with the
//! plugin (`PR_SET_PDEATHSIG` from a thread of the plugin's own, and the server watches the
//! `processId` it was given).
//!
//! Heap: the server is Node; left to itself, V8 sizes its heap against a limit of several
//! GiB and lets garbage grow up to 4× the live heap between full collections (the monorepo
//! bench's twelve programs: ~250 MiB live, a 508 MiB heap). The server is started with
//! `--max-old-space-size` at `heap_mib` of `max_memory_mib` (in `NODE_OPTIONS`, before the
//! user's own options, so a `--max-old-space-size` of theirs still wins): V8 then collects
//! sooner, and pyright's cache manager empties its type caches when the used heap nears that
//! bound (~86 % of it) instead of the server growing until the plugin stops it.

mod ride;
pub use ride::Riding;

use crate::early::{Known, Texts};
use crate::memory::{heap_mib, node_options, tree_rss};
use crate::opened::Opened;
use crate::rpc::Conn;
use crate::settle::{Start, FIRST_QUIET_MS, FIRST_SILENT_MS, NO_PROGRESS_QUIET_MS, SILENT_MS};
use crate::Checker;
use openfiles_plugin_api::gate::{Program, Scope};
use openfiles_plugin_api::uri::{path_to_uri, uri_to_path};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

/// What the gate is told the server is.
const WHAT: &str = "Python language server (pyright plugin)";
/// The longest a check waits for the publish that opening its users causes.
const OPEN_WAIT_MS: u64 = 1_000;
/// Time allowed for `initialize`.
const STARTUP_MS: u64 = 30_000;
/// Why the server gave no answer (the check then runs the command line).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot start {exe}: {why}")]
    Start { exe: String, why: String },
    #[error("the language server exited or broke its output")]
    Crashed,
    #[error("the language server did not settle within {0} ms")]
    Timeout(u64),
    #[error("cannot write to the language server: {0}")]
    Write(#[from] std::io::Error),
}

/// One running server.
pub struct Server {
    child: Mutex<Child>,
    pub(crate) conn: Conn,
    pub(crate) roots: Mutex<HashSet<PathBuf>>,
    /// When it began reading each root's files (its start, or the root's addition): a file
    /// unchanged since before then was read as it is ([`Texts::learn`]).
    reading_since: Mutex<HashMap<PathBuf, SystemTime>>,
    last_used: Mutex<Instant>,
    /// Checks waiting on it now (a busy server is never idle).
    busy: AtomicUsize,
    /// The texts it was told and its files' texts as seen (see [`crate::early`]).
    pub(crate) texts: Mutex<Texts>,
    /// The files it holds open (see [`crate::opened`]).
    pub(crate) opened: Mutex<Opened>,
}

/// A check's hold on a server marked busy (under the map's lock, so the idle reaper never
/// takes a server between its lookup and its use); released when dropped.
struct Busy<'a>(&'a Server);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        *self.0.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: kill(2) on the process group of a child we started and have not reaped.
            unsafe { libc::kill(-pid, libc::SIGTERM) };
        }
        let _ = child.wait();
    }
}

/// Checker, executable, workspace, trusted (a server serves one trust level: its
/// environment is its scope's).
type Key = (Checker, PathBuf, PathBuf, bool);
type Map = Mutex<HashMap<Key, Arc<Server>>>;

type SpawnReply = std::sync::mpsc::Sender<std::io::Result<Child>>;

/// The running servers of one plugin instance.
pub struct Servers {
    map: Arc<Map>,
    max_rss: u64,
    /// Each server's V8 heap bound, MiB ([`crate::memory::heap_mib`]).
    heap_mib: Option<u64>,
    /// Where the configurations of combined projects are written ([`crate::combine`]);
    /// `None`: each project root its own folder.
    state_dir: Option<PathBuf>,
    /// Servers are started on a thread of their own that lives as long as this: a child's
    /// `PR_SET_PDEATHSIG` fires when the *thread* that started it ends, and the plugin host's
    /// check threads come and go.
    spawner: Mutex<std::sync::mpsc::Sender<(Command, SpawnReply)>>,
}

/// One check's question to a server.
pub struct Ask<'a> {
    pub checker: Checker,
    /// The language server's executable.
    pub exe: &'a Path,
    /// The project roots asked about together (each a workspace folder of the server; one
    /// wait answers for all of them).
    pub roots: &'a [PathBuf],
    pub workspace: &'a Path,
    pub scope: &'a Scope,
    /// Files that may have changed on disk since the last check.
    pub changed: &'a [PathBuf],
    /// Their committed texts, while the project's baseline is still coming, and whether the
    /// service has that baseline already (`ride.rs`).
    pub ride: ride::Riding<'a>,
    pub timeout_ms: u64,
}

/// Every file's diagnostics under the asked roots, as the server pushed them.
pub type Pushes = Vec<(PathBuf, Vec<Value>)>;

/// A check's answer.
#[derive(Debug)]
pub struct Answer {
    pub pushes: Pushes,
    /// Early: the analysis goes on (a follow-up check waits for the rest).
    pub more: bool,
    /// The diagnostics of the files `ride.rs` checked with the changed files'
    /// committed texts: their baseline (every file it checked, with or without any).
    pub baseline: Option<Pushes>,
}

impl Servers {
    pub fn new(idle_timeout_ms: u64, max_memory_mib: u64, state_dir: Option<PathBuf>) -> Servers {
        let map: Arc<Map> = Arc::default();
        let weak = Arc::downgrade(&map);
        let idle = Duration::from_millis(idle_timeout_ms.max(1));
        let _ = std::thread::Builder::new()
            .name("pyright-ls-idle".into())
            .spawn(move || reap_idle(weak, idle));
        let (tx, rx) = std::sync::mpsc::channel::<(Command, SpawnReply)>();
        let _ = std::thread::Builder::new()
            .name("pyright-ls-spawn".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            });
        Servers {
            map,
            max_rss: max_memory_mib << 20,
            heap_mib: heap_mib(max_memory_mib),
            state_dir,
            spawner: Mutex::new(tx),
        }
    }

    /// Start `cmd` on the spawner thread.
    fn spawn(&self, cmd: Command) -> std::io::Result<Child> {
        let (tx, rx) = std::sync::mpsc::channel();
        let gone = || std::io::Error::other("the spawner thread is gone");
        self.spawner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send((cmd, tx))
            .map_err(|_| gone())?;
        rx.recv().map_err(|_| gone())?
    }

    /// The diagnostics after `ask.changed` changed, or `None` when `cancelled` ended the
    /// wait.
    pub fn check(
        &self,
        ask: &Ask,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Option<Answer>, ServerError> {
        let trusted = ask.scope.trust() == openfiles_plugin_api::gate::Trust::Trusted;
        let key = (
            ask.checker,
            ask.exe.to_owned(),
            ask.workspace.to_owned(),
            trusted,
        );
        let server = self.server(&key, ask)?;
        let busy = Busy(&server);
        let result = notify_and_wait(&server, ask, self.state_dir.as_deref(), cancelled);
        drop(busy);
        if result.is_err() {
            self.stop(&key, &server);
            return result;
        }
        let rss = tree_rss(server.child.lock().map(|c| c.id()).unwrap_or(0));
        if self.max_rss > 0 && rss > self.max_rss {
            eprintln!(
                "openfiles-plugin-pyright: {} language server stopped: {} MiB over max_memory_mib",
                ask.checker.name(),
                rss >> 20
            );
            self.stop(&key, &server);
        }
        result
    }

    /// Process ids of the running servers (for tests).
    pub fn pids(&self) -> Vec<u32> {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.values()
            .filter_map(|s| s.child.lock().ok().map(|c| c.id()))
            .collect()
    }

    fn stop(&self, key: &Key, server: &Arc<Server>) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.get(key).is_some_and(|s| Arc::ptr_eq(s, server)) {
            map.remove(key);
        }
    }

    /// The running server for `key`, started if there is none, marked busy (see [`Busy`]).
    fn server(&self, key: &Key, ask: &Ask) -> Result<Arc<Server>, ServerError> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = map.get(key) {
            if !s.conn.pushed().closed {
                s.busy.fetch_add(1, Ordering::SeqCst);
                return Ok(s.clone());
            }
            map.remove(key);
        }
        let server = Arc::new(start(
            ask,
            self.heap_mib,
            self.state_dir.as_deref(),
            &|cmd| self.spawn(cmd),
        )?);
        server.busy.fetch_add(1, Ordering::SeqCst);
        map.insert(key.clone(), server.clone());
        Ok(server)
    }
}

fn reap_idle(map: Weak<Map>, idle: Duration) {
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(10));
    loop {
        std::thread::sleep(tick);
        let Some(map) = map.upgrade() else { return };
        let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, s| {
            let used = *s.last_used.lock().unwrap_or_else(|e| e.into_inner());
            s.busy.load(Ordering::SeqCst) > 0 || used.elapsed() < idle
        });
    }
}

/// The `python.analysis` settings: workspace mode, and the command line's defaults for what
/// a client's section would otherwise turn off (without `autoSearchPaths` a `src/` layout's
/// imports resolve elsewhere, and the items differ from the command line's).
fn analysis() -> Value {
    json!({"diagnosticMode": "workspace", "autoSearchPaths": true, "useLibraryCodeForTypes": true})
}

/// What a server asks its client for: [`analysis`], for pyright and basedpyright.
fn settings(section: &str) -> Value {
    let analysis = analysis();
    match section {
        "python" | "basedpyright" => json!({"analysis": analysis}),
        "python.analysis" | "basedpyright.analysis" => analysis,
        _ => Value::Null,
    }
}

/// The command that starts `program` as the server for `ask`: over stdio, in its own process
/// group, ending with the plugin, its heap bounded by `heap_mib` (see the module's doc).
fn command(program: &Program, ask: &Ask, heap_mib: Option<u64>) -> Command {
    let mut cmd = program.command(["--stdio"]);
    cmd.current_dir(ask.roots.first().map_or(ask.workspace, |r| r.as_path()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(heap) = heap_mib {
        let user = std::env::var_os("NODE_OPTIONS");
        cmd.env("NODE_OPTIONS", node_options(heap, user.as_deref()));
    }
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
    }
    cmd
}

/// Start the server at the first of `ask.roots` (its workspace folders: [`folders_of`] them),
/// through the gate (`spawn` starts the command), its heap bounded by `heap_mib` (see the
/// module's doc), and initialize it.
fn start(
    ask: &Ask,
    heap_mib: Option<u64>,
    state_dir: Option<&Path>,
    spawn: &dyn Fn(Command) -> std::io::Result<Child>,
) -> Result<Server, ServerError> {
    let fail = |why: String| ServerError::Start {
        exe: ask.exe.display().to_string(),
        why,
    };
    let program = Program::at(ask.exe, ask.scope, WHAT).map_err(|e| fail(e.to_string()))?;
    let reading = SystemTime::now();
    let mut child = spawn(command(&program, ask, heap_mib)).map_err(|e| fail(e.to_string()))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(fail("no pipes".into()));
    };
    let conn = Conn::start(stdin, stdout, settings).map_err(|e| fail(e.to_string()))?;
    let server = Server {
        child: Mutex::new(child),
        conn,
        roots: Mutex::new(ask.roots.iter().cloned().collect()),
        reading_since: Mutex::new(ask.roots.iter().map(|r| (r.clone(), reading)).collect()),
        last_used: Mutex::new(Instant::now()),
        busy: AtomicUsize::new(0),
        texts: Mutex::default(),
        opened: Mutex::default(),
    };
    let new: Vec<&PathBuf> = ask.roots.iter().collect();
    let at = folders_of(ask.checker, &new, &HashSet::new(), state_dir);
    let root = at.first().map(|r| path_to_uri(r));
    server.conn.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": std::process::id(),
            "rootUri": root,
            "workspaceFolders": folders(at.iter()),
            "capabilities": {
                "window": {"workDoneProgress": true},
                "workspace": {"configuration": true, "workspaceFolders": true,
                              "didChangeWatchedFiles": {"dynamicRegistration": true}},
                // The tags as the lsp plugin's client declares them: pyright sends its
                // hints (unused, unreachable, deprecated code) only to a client that
                // supports them, and this server stands in for that one's
                // (`CheckRequest::served`).
                "textDocument": {"publishDiagnostics": {"tagSupport": {"valueSet": [1, 2]}}},
            },
        }}),
    )?;
    let until = Instant::now() + Duration::from_millis(STARTUP_MS);
    loop {
        let p = server.conn.wait(50);
        if p.closed {
            return Err(fail("it exited during initialize".into()));
        }
        if p.initialized {
            break;
        }
        if Instant::now() > until {
            return Err(fail(format!(
                "no answer to initialize within {STARTUP_MS} ms"
            )));
        }
    }
    server.conn.notify("initialized", json!({}))?;
    server.conn.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"python": {"analysis": analysis()},
                            "basedpyright": {"analysis": analysis()}}}),
    )?;
    Ok(server)
}

/// Tell `server` what changed (or add the roots as workspace folders), then wait: until
/// the analysis settled, or early (see the module docs).
fn notify_and_wait(
    server: &Server,
    ask: &Ask,
    state_dir: Option<&Path>,
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<Answer>, ServerError> {
    if let Some(answer) = ride::ride(server, ask, cancelled)? {
        return Ok(answer);
    }
    let (start, known) = notify(server, ask, state_dir)?;
    let until = start.since + Duration::from_millis(ask.timeout_ms.max(1_000));
    let watched = start.before.iter().chain(&start.users).cloned();
    let mut timeline = crate::timeline::Check::new(start.since, watched, || {
        format!(
            "notified {} files ({} published before), awaiting {} users, first {}",
            start.uris.len(),
            start.before.len(),
            start.users.len(),
            start.first
        )
    });
    loop {
        let p = server.conn.wait(25);
        if p.closed {
            return Err(ServerError::Crashed);
        }
        if cancelled() {
            drop(p);
            timeline.line("cancelled");
            // Not answered: the next check notifies these files again (see `Texts::undo`).
            let mut texts = server.texts.lock().unwrap_or_else(|e| e.into_inner());
            texts.undo(known);
            return Ok(None);
        }
        timeline.publishes(&p);
        let settled = start.settled(&p);
        if settled || start.early(&p) {
            let mut pushes = under(&p.diagnostics, ask.roots);
            if !settled {
                // A changed file's first publish after the notification is its old
                // diagnostics again (at the old text's lines): left to the follow-up.
                let stale = start.stale(&p);
                pushes.retain(|(f, _)| !stale.contains(&path_to_uri(f)));
            }
            let known: Vec<PathBuf> = p.published.keys().filter_map(|u| uri_to_path(u)).collect();
            drop(p);
            if settled {
                // What it analysed: the texts later edits are a diff against.
                let mut texts = server.texts.lock().unwrap_or_else(|e| e.into_inner());
                let since = server
                    .reading_since
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                let ours = known.iter().filter_map(|f| {
                    let root = ask
                        .roots
                        .iter()
                        .filter(|r| f.starts_with(r))
                        .max_by_key(|r| r.components().count())?;
                    Some((f, since.get(root).copied()))
                });
                texts.learn(ask.workspace, ours);
            }
            let more = !settled;
            timeline.line(if more { "answered early" } else { "settled" });
            return Ok(Some(Answer {
                pushes,
                more,
                baseline: None,
            }));
        }
        if Instant::now() > until {
            return Err(ServerError::Timeout(ask.timeout_ms));
        }
    }
}

/// Tell `server` which of `ask.changed` changed and the roots it does not serve yet (their
/// folders: [`folders_of`]); what was known of the notified files before (to undo it if the
/// check is cancelled).
fn notify(
    server: &Server,
    ask: &Ask,
    state_dir: Option<&Path>,
) -> Result<(Start, Vec<Known>), ServerError> {
    crate::timeline::trace(|| "asking the server".into());
    let changes = server
        .texts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .changes(ask.workspace, ask.changed);
    let mut opened = server.opened.lock().unwrap_or_else(|e| e.into_inner());
    let (analysed, unsettled) = open_users(server, &mut opened, ask.workspace, &changes.users)?;
    // The changed files the server has published before (its project's): each is
    // re-published once re-checked, which is awaited first; their users for an early answer
    // (not one whose opening's publish is still to come).
    let uris: Vec<String> = changes.notify.iter().map(|f| path_to_uri(f)).collect();
    let (events, ended, before, users) = {
        let p = server.conn.pushed();
        let count = |u: &String| Some((u.clone(), *p.published.get(u)?));
        let before: Vec<(String, u64)> = uris.iter().filter_map(count).collect();
        let users: Vec<(String, u64)> = analysed
            .iter()
            .filter(|f| !unsettled.contains(f))
            .map(|f| path_to_uri(f))
            .filter_map(|u| count(&u))
            .collect();
        (p.events, p.ended, before, users)
    };
    let new_roots = add_roots(server, ask, state_dir)?;
    let first = new_roots || ended == 0;
    let (pushes_quiet, silent) = if first {
        (FIRST_QUIET_MS, FIRST_SILENT_MS)
    } else {
        (NO_PROGRESS_QUIET_MS, SILENT_MS)
    };
    let events_of: Vec<Value> = changes
        .notify
        .iter()
        .zip(&uris)
        .map(|(f, u)| json!({"uri": u, "type": if f.exists() { 2 } else { 3 }}))
        .collect();
    // A changed file held open is closed first: pyright reads it from disk again.
    opened.close_changed(&server.conn, &changes.notify)?;
    drop(opened);
    if !events_of.is_empty() {
        server.conn.notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": events_of}),
        )?;
    }
    let tracked = if first {
        tracked_of(ask, &changes.notify)
    } else {
        Vec::new()
    };
    let start = Start {
        since: Instant::now(),
        events,
        ended,
        before,
        users,
        uris,
        tracked,
        first,
        pushes_quiet,
        silent,
    };
    Ok((start, changes.before))
}

/// Hold open the `users` the server has published (analysed), so they are re-checked first
/// ([`crate::opened`]): those users, and the ones just opened whose opening's publish did not
/// come.
fn open_users(
    server: &Server,
    opened: &mut Opened,
    workspace: &Path,
    users: &[PathBuf],
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), ServerError> {
    let analysed: Vec<PathBuf> = {
        let p = server.conn.pushed();
        let published = |f: &&PathBuf| p.published.contains_key(&path_to_uri(f));
        users.iter().filter(published).cloned().collect()
    };
    let new = {
        let texts = server.texts.lock().unwrap_or_else(|e| e.into_inner());
        opened.to_open(&texts, workspace, &analysed)
    };
    let unsettled = opened.open(&server.conn, &analysed, new, OPEN_WAIT_MS)?;
    Ok((analysed, unsettled))
}

/// Add the roots of `ask` new to `server` as its workspace folders (all of them at once: it
/// analyses the new programs in one pass; [`folders_of`] them), noting when it begins
/// reading them; whether there were any.
fn add_roots(server: &Server, ask: &Ask, state_dir: Option<&Path>) -> Result<bool, ServerError> {
    let added = {
        let mut roots = server.roots.lock().unwrap_or_else(|e| e.into_inner());
        let new: Vec<&PathBuf> = ask.roots.iter().filter(|r| !roots.contains(*r)).collect();
        if new.is_empty() {
            return Ok(false);
        }
        let added = folders_of(ask.checker, &new, &roots, state_dir);
        roots.extend(new.iter().map(|r| r.to_path_buf()));
        let now = SystemTime::now();
        let mut since = server
            .reading_since
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        since.extend(new.iter().map(|r| (r.to_path_buf(), now)));
        added
    };
    server.conn.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {"added": folders(added.iter()), "removed": []}}),
    )?;
    Ok(true)
}

/// The uris of `files` that a project of `ask` (one of its roots) reports on.
fn tracked_of(ask: &Ask, files: &[PathBuf]) -> Vec<String> {
    let name = ask.checker.name();
    files
        .iter()
        .filter(|f| {
            ask.roots
                .iter()
                .any(|r| f.starts_with(r) && openfiles_plugin_api::tracked::tracks(name, r, f))
        })
        .map(|f| path_to_uri(f))
        .collect()
}

/// The diagnostics of the files under one of `roots`.
fn under(diagnostics: &HashMap<String, Vec<Value>>, roots: &[PathBuf]) -> Pushes {
    diagnostics
        .iter()
        .filter_map(|(u, d)| Some((uri_to_path(u)?, d)))
        .filter(|(p, d)| roots.iter().any(|r| p.starts_with(r)) && !d.is_empty())
        .map(|(p, d)| (p, d.clone()))
        .collect()
}

/// The workspace folders that serve the roots `new` to a server that serves `served`: one
/// folder of a combined configuration when they can be one program ([`crate::combine`]; not
/// beside a root they nest in or hold), else each root.
fn folders_of(
    checker: Checker,
    new: &[&PathBuf],
    served: &HashSet<PathBuf>,
    state_dir: Option<&Path>,
) -> Vec<PathBuf> {
    let new: Vec<PathBuf> = new.iter().map(|r| r.to_path_buf()).collect();
    let apart = !served
        .iter()
        .any(|s| new.iter().any(|n| s.starts_with(n) || n.starts_with(s)));
    let combined = state_dir
        .filter(|_| apart)
        .and_then(|dir| crate::combine::combine(checker, &new, dir));
    match combined {
        Some(dir) => vec![dir],
        None => new,
    }
}

/// `roots` as LSP workspace folders.
fn folders<'a>(roots: impl Iterator<Item = &'a PathBuf>) -> Vec<Value> {
    roots
        .map(|r| json!({"uri": path_to_uri(r), "name": folder_name(r)}))
        .collect()
}

fn folder_name(root: &Path) -> String {
    root.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "/".into())
}
