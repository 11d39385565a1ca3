//! The `openfiles plugin-host <library>` child: loads one plugin library and serves the
//! daemon over stdio ([`super::protocol`]).
//!
//! Threads: the main thread reads stdin; checks run on worker threads (plugins may block),
//! at most [`MAX_CHECKS`] at once: a check past that bound waits, in the order checks came,
//! for a worker to finish one (the daemon's deadline for it keeps running, so a check that
//! waits too long ends as a timeout item, as a slow one does). A `cancel` for a waiting check
//! answers it at once ("cancelled before it started") without reaching the plugin; for a
//! running one it goes to the plugin. Workers are started as checks arrive and end when
//! none waits, so an idle host has no thread but its main one. Answers are written whole
//! lines under one lock, so they never interleave. On `shutdown` or EOF the waiting checks
//! are dropped, every running one is cancelled, the host waits for them (a bounded time),
//! destroys the instance and exits. The process is the isolation boundary: if the plugin
//! crashes, only this process dies. A `query` (a code-navigation question) runs on a thread
//! of its own, at most [`MAX_QUERIES`] at once (one more is refused at once), never waiting
//! behind the checks.

use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};

use openfiles_plugin_api::host::{Instance, PluginLibrary};
use openfiles_plugin_api::query::{QueryAnswer, QueryRequest};
use openfiles_plugin_api::{CheckRequest, CheckResponse};

use super::protocol::{FromHost, ToHost, EXIT_CREATE_FAILED, EXIT_REFUSED};

/// How many checks run at once (one worker thread each); later ones wait in order.
pub const MAX_CHECKS: usize = 16;

/// How long shutdown waits for cancelled checks to return.
const DRAIN: Duration = Duration::from_secs(5);

struct Output(Mutex<std::fs::File>);

impl Output {
    fn send(&self, msg: &FromHost) {
        let Ok(mut line) = serde_json::to_vec(msg) else {
            return;
        };
        line.push(b'\n');
        if let Ok(mut out) = self.0.lock() {
            // A closed stdout means the daemon is gone; the stdin EOF ends us.
            let _ = out.write_all(&line).and_then(|()| out.flush());
        }
    }
}

/// The checks a host was sent: at most [`MAX_CHECKS`] running, each on a worker thread,
/// the rest waiting in the order they came.
#[derive(Default)]
struct Checks {
    state: Mutex<CheckState>,
    changed: Condvar,
}

#[derive(Default)]
struct CheckState {
    waiting: VecDeque<CheckRequest>,
    running: HashSet<u64>,
    /// Workers that still take waiting checks.
    workers: usize,
    /// Worker threads alive (a worker stops taking checks, then lets the instance go).
    threads: usize,
}

impl Checks {
    fn lock(&self) -> MutexGuard<'_, CheckState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue `request`; start a worker for it while fewer than [`MAX_CHECKS`] work.
    fn submit(self: &Arc<Self>, request: CheckRequest, inst: &Arc<Instance>, out: &Arc<Output>) {
        let mut st = self.lock();
        st.waiting.push_back(request);
        if st.workers >= MAX_CHECKS {
            return;
        }
        st.workers += 1;
        st.threads += 1;
        drop(st);
        let (checks, inst, worker_out) = (Arc::clone(self), Arc::clone(inst), Arc::clone(out));
        let spawned = std::thread::Builder::new()
            .name("check".into())
            .spawn(move || checks.work(inst, &worker_out));
        if let Err(e) = spawned {
            let mut st = self.lock();
            st.workers -= 1;
            st.threads -= 1;
            // With no worker left, nothing would ever take the waiting checks.
            let orphans: Vec<CheckRequest> = if st.workers == 0 {
                st.waiting.drain(..).collect()
            } else {
                Vec::new()
            };
            drop(st);
            self.changed.notify_all();
            for r in orphans {
                out.send(&FromHost::Result {
                    id: r.id,
                    response: None,
                    error: Some(format!(
                        "the plugin host cannot start a thread for the check: {e}"
                    )),
                    ran: Vec::new(),
                });
            }
        }
    }

    /// A worker: run waiting checks, oldest first, until none waits.
    fn work(&self, inst: Arc<Instance>, out: &Output) {
        loop {
            let request = {
                let mut st = self.lock();
                let Some(request) = st.waiting.pop_front() else {
                    st.workers -= 1;
                    break;
                };
                st.running.insert(request.id);
                request
            };
            let msg = answer(&inst, &request);
            out.send(&msg);
            self.lock().running.remove(&request.id);
            self.changed.notify_all();
        }
        drop(inst);
        self.lock().threads -= 1;
        self.changed.notify_all();
    }

    /// Cancel check `id`: a waiting one is answered at once, a running one is told to the
    /// plugin.
    fn cancel(&self, id: u64, inst: &Instance, out: &Output) {
        let mut st = self.lock();
        let Some(at) = st.waiting.iter().position(|r| r.id == id) else {
            drop(st);
            inst.cancel(id);
            return;
        };
        st.waiting.remove(at);
        drop(st);
        out.send(&FromHost::Result {
            id,
            response: None,
            error: Some(format!(
                "cancelled before it started (it was waiting for one of the plugin host's \
                 {MAX_CHECKS} check threads)"
            )),
            ran: Vec::new(),
        });
    }

    /// At shutdown: drop the waiting checks, cancel the running ones and wait (a bounded
    /// time) until every worker has let the instance go.
    fn drain(&self, inst: &Instance) {
        let mut st = self.lock();
        st.waiting.clear();
        for id in st.running.iter() {
            inst.cancel(*id);
        }
        let _ = self
            .changed
            .wait_timeout_while(st, DRAIN, |st| st.threads > 0);
    }
}

/// Move the protocol off fds 0 and 1: the plugin (and any tool it spawns) must not read
/// our input or write into our output. Returns (input, output) as close-on-exec files;
/// fd 0 becomes `/dev/null` and fd 1 a copy of stderr.
fn take_stdio() -> anyhow::Result<(std::fs::File, std::fs::File)> {
    use nix::fcntl::{fcntl, FcntlArg};
    use std::os::fd::{AsFd, FromRawFd};
    let dup = |fd: std::os::fd::BorrowedFd<'_>| -> anyhow::Result<std::fs::File> {
        let raw = fcntl(fd, FcntlArg::F_DUPFD_CLOEXEC(3))?;
        // SAFETY: `raw` is a fresh descriptor we own.
        Ok(unsafe { std::fs::File::from_raw_fd(raw) })
    };
    let input = dup(std::io::stdin().as_fd())?;
    let output = dup(std::io::stdout().as_fd())?;
    let null = std::fs::File::open("/dev/null")?;
    nix::unistd::dup2_stdin(&null)?;
    nix::unistd::dup2_stdout(std::io::stderr())?;
    Ok((input, output))
}

/// Run the host; returns the process exit status.
pub fn run(library: &Path) -> anyhow::Result<u8> {
    // A stray SIGHUP to the service's whole cgroup (`systemctl kill -s HUP`) is the
    // service's reload signal, not a reason for the host (and the servers and tools it
    // starts, which inherit this) to die. It ends when its stdin closes or it is killed.
    // SAFETY: setting a signal to be ignored has no preconditions.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let (input, output) = take_stdio()?;
    let out = Arc::new(Output(Mutex::new(output)));
    let lib = match load(library) {
        Ok(lib) => lib,
        Err(refused) => {
            out.send(&refused);
            return Ok(EXIT_REFUSED);
        }
    };
    out.send(&FromHost::Hello {
        name: lib.name().into(),
        version: lib.version().into(),
        pid: std::process::id(),
    });
    let mut host = Serving {
        lib,
        out,
        instance: None,
        checks: Arc::new(Checks::default()),
    };
    for line in std::io::BufReader::new(input).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let msg: ToHost = match serde_json::from_str(&line) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("plugin-host: ignoring bad line from daemon: {e}");
                continue;
            }
        };
        match msg {
            ToHost::Init { init } => {
                if let Some(exit) = host.init(&init)? {
                    return Ok(exit);
                }
            }
            ToHost::Check { request } => host.check(request),
            ToHost::Cancel { id } => host.cancel(id),
            ToHost::Query { request } => query(request, host.instance.clone(), &host.out),
            ToHost::Shutdown => break,
        }
    }
    host.shut_down();
    Ok(0)
}

/// Load the library, the `refused` answer if it may not or cannot be.
fn load(library: &Path) -> Result<Arc<PluginLibrary>, FromHost> {
    // Checked again here (the file may have been swapped since discovery): loading runs
    // the library's constructors.
    if let Some(message) = super::discover::untrusted(library) {
        return Err(FromHost::Refused {
            kind: "untrusted".into(),
            message,
        });
    }
    PluginLibrary::load(library).map_err(|e| FromHost::Refused {
        kind: e.kind().into(),
        message: e.to_string(),
    })
}

/// A host whose library is loaded: one handler per message from the daemon.
struct Serving {
    lib: Arc<PluginLibrary>,
    out: Arc<Output>,
    instance: Option<Arc<Instance>>,
    checks: Arc<Checks>,
}

impl Serving {
    /// `init`: create the instance and answer `ready`; on failure answer `failed` and
    /// return the exit status to end with.
    fn init(&mut self, init: &openfiles_plugin_api::Init) -> anyhow::Result<Option<u8>> {
        let json = serde_json::to_vec(init)?;
        let created = self.lib.create(&json).and_then(|(inst, caps)| {
            serde_json::from_slice(&caps)
                .map(|caps| (inst, caps))
                .map_err(|e| {
                    openfiles_plugin_api::host::CallError::Failed(format!(
                        "create returned bad capabilities JSON: {e}"
                    ))
                })
        });
        match created {
            Ok((inst, capabilities)) => {
                self.instance = Some(Arc::new(inst));
                self.out.send(&FromHost::Ready {
                    capabilities: Box::new(capabilities),
                });
                Ok(None)
            }
            Err(e) => {
                self.out.send(&FromHost::Failed {
                    message: e.to_string(),
                });
                Ok(Some(EXIT_CREATE_FAILED))
            }
        }
    }

    /// `check`: queue it for a worker (answered at once if there is no instance yet).
    fn check(&self, request: CheckRequest) {
        let Some(inst) = &self.instance else {
            self.out.send(&FromHost::Result {
                id: request.id,
                response: None,
                error: Some("plugin not initialised".into()),
                ran: Vec::new(),
            });
            return;
        };
        self.checks.submit(request, inst, &self.out);
    }

    /// `cancel`: a waiting check is answered, a running one told to the plugin.
    fn cancel(&self, id: u64) {
        if let Some(inst) = &self.instance {
            self.checks.cancel(id, inst, &self.out);
        }
    }

    /// `shutdown` or EOF: drain the checks, then destroy the instance.
    fn shut_down(self) {
        if let Some(inst) = self.instance {
            self.checks.drain(&inst);
            // Drop destroys the instance once no check thread holds it any more; if one is
            // stuck past the drain time, exiting the process is the cleanup.
            if let Ok(inst) = Arc::try_unwrap(inst) {
                drop(inst);
            }
        }
    }
}

/// Questions a plugin host answers at once; one more is refused (the asker may ask again).
pub const MAX_QUERIES: usize = 8;

static QUERIES_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Answer a code-navigation question on a thread of its own (a library without the
/// `query` entry answers [`QueryAnswer::unsupported`]).
fn query(request: QueryRequest, inst: Option<Arc<Instance>>, out: &Arc<Output>) {
    let id = request.id;
    let refuse = |error: String| {
        out.send(&FromHost::Answer {
            id,
            answer: None,
            error: Some(error),
        })
    };
    let Some(inst) = inst else {
        return refuse("plugin not initialised".into());
    };
    if QUERIES_RUNNING.fetch_add(1, Ordering::SeqCst) >= MAX_QUERIES {
        QUERIES_RUNNING.fetch_sub(1, Ordering::SeqCst);
        return refuse(format!(
            "the plugin is answering {MAX_QUERIES} questions already; ask again"
        ));
    }
    let worker_out = Arc::clone(out);
    let spawned = std::thread::Builder::new()
        .name("query".into())
        .spawn(move || {
            let msg = answer_query(&inst, &request);
            worker_out.send(&msg);
            QUERIES_RUNNING.fetch_sub(1, Ordering::SeqCst);
        });
    if let Err(e) = spawned {
        QUERIES_RUNNING.fetch_sub(1, Ordering::SeqCst);
        refuse(format!(
            "the plugin host cannot start a thread for the question: {e}"
        ));
    }
}

fn answer_query(inst: &Instance, request: &QueryRequest) -> FromHost {
    let id = request.id;
    let result = serde_json::to_vec(request)
        .map_err(|e| e.to_string())
        .and_then(|json| match inst.query(&json) {
            None => Ok(QueryAnswer::unsupported()),
            Some(r) => r.map_err(|e| e.to_string()).and_then(|bytes| {
                serde_json::from_slice::<QueryAnswer>(&bytes)
                    .map_err(|e| format!("plugin returned a bad answer: {e}"))
            }),
        });
    match result {
        Ok(answer) => FromHost::Answer {
            id,
            answer: Some(Box::new(answer)),
            error: None,
        },
        Err(error) => FromHost::Answer {
            id,
            answer: None,
            error: Some(error),
        },
    }
}

fn answer(inst: &Instance, request: &openfiles_plugin_api::CheckRequest) -> FromHost {
    let id = request.id;
    let result = serde_json::to_vec(request)
        .map_err(|e| e.to_string())
        .and_then(|json| inst.check(&json).map_err(|e| e.to_string()))
        .and_then(|bytes| {
            serde_json::from_slice::<CheckResponse>(&bytes)
                .map(|response| (response, started(&bytes)))
                .map_err(|e| format!("plugin returned a bad check response: {e}"))
        });
    match result {
        Ok((response, ran)) => FromHost::Result {
            id,
            response: Some(response),
            error: None,
            ran,
        },
        Err(error) => FromHost::Result {
            id,
            response: None,
            error: Some(error),
            ran: Vec::new(),
        },
    }
}

/// The programs a check's answer says the plugin started
/// ([`openfiles_plugin_api::abi::RAN_KEY`]); an entry that does not read as one is dropped
/// (the answer itself stands).
fn started(answer: &[u8]) -> Vec<openfiles_gate::spawn::Ran> {
    #[derive(serde::Deserialize)]
    struct Started {
        #[serde(default)]
        ran: Vec<serde_json::Value>,
    }
    serde_json::from_slice::<Started>(answer)
        .map(|s| {
            s.ran
                .into_iter()
                .filter_map(|r| serde_json::from_value(r).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_s_programs_are_read_and_a_bad_entry_is_dropped() {
        let key = openfiles_plugin_api::abi::RAN_KEY;
        let answer = format!(
            r#"{{"files":[],"{key}":[
                {{"atMs":1,"program":"/usr/bin/gopls","args":["serve"],"workspace":"/w","trust":"untrusted","why":"language server"}},
                {{"atMs":2,"program":"/usr/bin/x","trust":"sometimes","why":"?"}}
            ]}}"#
        );
        let ran = started(answer.as_bytes());
        assert_eq!(ran.len(), 1, "{ran:?}");
        assert_eq!(ran[0].program, Path::new("/usr/bin/gopls"));
        assert_eq!(ran[0].trust, openfiles_gate::Trust::Untrusted);
        assert_eq!(ran[0].workspace.as_deref(), Some(Path::new("/w")));
        // An answer without the key (an older plugin) has none.
        assert!(started(br#"{"files":[]}"#).is_empty());
    }
}
