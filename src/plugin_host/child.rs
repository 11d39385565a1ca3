//! The `openfiles plugin-host <library>` child: loads one plugin library and serves the
//! daemon over stdio ([`super::protocol`]).
//!
//! Threads: the main thread reads stdin; each check runs on its own thread (plugins may
//! block); answers are written whole lines under one lock, so they never interleave.
//! On `shutdown` or EOF every in-flight check is cancelled, the host waits for them (a
//! bounded time), destroys the instance and exits. The process is the isolation boundary:
//! if the plugin crashes, only this process dies.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use openfiles_plugin_api::host::{Instance, PluginLibrary};
use openfiles_plugin_api::CheckResponse;

use super::protocol::{FromHost, ToHost, EXIT_CREATE_FAILED, EXIT_REFUSED};

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

#[derive(Default)]
struct InFlight {
    ids: Mutex<HashSet<u64>>,
    done: Condvar,
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
    // Checked again here (the file may have been swapped since discovery): loading runs
    // the library's constructors.
    if let Some(message) = super::discover::untrusted(library) {
        out.send(&FromHost::Refused {
            kind: "untrusted".into(),
            message,
        });
        return Ok(EXIT_REFUSED);
    }
    let lib = match PluginLibrary::load(library) {
        Ok(lib) => lib,
        Err(e) => {
            out.send(&FromHost::Refused {
                kind: e.kind().into(),
                message: e.to_string(),
            });
            return Ok(EXIT_REFUSED);
        }
    };
    out.send(&FromHost::Hello {
        name: lib.name().into(),
        version: lib.version().into(),
        pid: std::process::id(),
    });

    let lines = std::io::BufReader::new(input).lines();
    let mut instance: Option<Arc<Instance>> = None;
    let inflight = Arc::new(InFlight::default());
    for line in lines {
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
                let json = serde_json::to_vec(&init)?;
                match lib.create(&json).and_then(|(inst, caps)| {
                    serde_json::from_slice(&caps)
                        .map(|caps| (inst, caps))
                        .map_err(|e| {
                            openfiles_plugin_api::host::CallError::Failed(format!(
                                "create returned bad capabilities JSON: {e}"
                            ))
                        })
                }) {
                    Ok((inst, capabilities)) => {
                        instance = Some(Arc::new(inst));
                        out.send(&FromHost::Ready { capabilities });
                    }
                    Err(e) => {
                        out.send(&FromHost::Failed {
                            message: e.to_string(),
                        });
                        return Ok(EXIT_CREATE_FAILED);
                    }
                }
            }
            ToHost::Check { request } => {
                let id = request.id;
                let Some(inst) = instance.clone() else {
                    out.send(&FromHost::Result {
                        id,
                        response: None,
                        error: Some("plugin not initialised".into()),
                    });
                    continue;
                };
                if let Ok(mut ids) = inflight.ids.lock() {
                    ids.insert(id);
                }
                let (out, inflight) = (Arc::clone(&out), Arc::clone(&inflight));
                std::thread::Builder::new()
                    .name(format!("check-{id}"))
                    .spawn(move || {
                        let msg = answer(&inst, &request);
                        drop(inst);
                        out.send(&msg);
                        if let Ok(mut ids) = inflight.ids.lock() {
                            ids.remove(&id);
                        }
                        inflight.done.notify_all();
                    })?;
            }
            ToHost::Cancel { id } => {
                if let Some(inst) = &instance {
                    inst.cancel(id);
                }
            }
            ToHost::Shutdown => break,
        }
    }
    if let Some(inst) = instance {
        drain(&inst, &inflight);
        // Drop destroys the instance once no check thread holds it any more; if one is
        // stuck past the drain time, exiting the process is the cleanup.
        if let Ok(inst) = Arc::try_unwrap(inst) {
            drop(inst);
        }
    }
    Ok(0)
}

fn answer(inst: &Instance, request: &openfiles_plugin_api::CheckRequest) -> FromHost {
    let id = request.id;
    let result = serde_json::to_vec(request)
        .map_err(|e| e.to_string())
        .and_then(|json| inst.check(&json).map_err(|e| e.to_string()))
        .and_then(|bytes| {
            serde_json::from_slice::<CheckResponse>(&bytes)
                .map_err(|e| format!("plugin returned a bad check response: {e}"))
        });
    match result {
        Ok(response) => FromHost::Result {
            id,
            response: Some(response),
            error: None,
        },
        Err(error) => FromHost::Result {
            id,
            response: None,
            error: Some(error),
        },
    }
}

fn drain(inst: &Instance, inflight: &InFlight) {
    let Ok(ids) = inflight.ids.lock() else {
        return;
    };
    for id in ids.iter() {
        inst.cancel(*id);
    }
    let _ = inflight
        .done
        .wait_timeout_while(ids, DRAIN, |ids| !ids.is_empty());
}
