//! The service side of the control socket: accept connections, refuse other users, read
//! request lines under the size cap, dispatch each to its handler, and write replies in
//! request order.
//!
//! A connection is served by one task; requests on it are handled one after another, so
//! replies keep their order (clients that want concurrency open more connections, which is
//! cheap). A slow `wait` holds only its own connection.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use crate::diagnostics::pipeline::{EditOrigin, PipelineHandle};
use crate::workspace::{RegistryHandle, Source, WorkspaceError};
use openfiles_wire::control::{
    self, Check, Edited, EditedReply, HelloReply, PauseReply, Request, ReviewMark, ReviewMarked,
    StatusReply, Wait, WaitReply, WorkspacePaths, WorkspacesReply, MAX_LINE,
};
use openfiles_wire::spec;

/// What the handlers need from the service.
pub struct Context {
    /// The binary this service runs and its mtime at start (see `StatusReply::outdated`).
    pub binary: Option<(PathBuf, u64)>,
    /// The last config reload's error (cleared by a good reload), for `status`.
    pub reload_error: Arc<std::sync::Mutex<Option<String>>>,
    pub registry: RegistryHandle,
    pub shutdown: CancellationToken,
    pub started: Instant,
    pub activation: openfiles_wire::control::Activation,
    pub socket: PathBuf,
    /// Requests and open connections, for an autostarted service's idle exit.
    pub activity: Arc<super::activity::Activity>,
    /// Plugin state for `status`.
    pub plugins: Box<dyn Fn() -> Vec<openfiles_wire::control::PluginStatus> + Send + Sync>,
}

/// Accept connections until `shutdown`.
pub async fn serve(listener: UnixListener, ctx: Arc<Context>) {
    let me = nix::unistd::getuid().as_raw();
    loop {
        let stream = tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!("control socket accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        match stream.peer_cred() {
            Ok(cred) if cred.uid() == me => {}
            Ok(cred) => {
                tracing::warn!(uid = cred.uid(), pid = ?cred.pid(), "refused a control connection from another user");
                refuse(stream).await;
                continue;
            }
            Err(e) => {
                tracing::warn!("cannot read peer credentials, refusing: {e}");
                continue;
            }
        }
        tokio::spawn(connection(stream, ctx.clone()));
    }
}

async fn refuse(mut stream: UnixStream) {
    let mut line = control::error_reply(
        None,
        "permission denied: this openfiles service belongs to another user",
    );
    line.push(b'\n');
    let _ = tokio::time::timeout(Duration::from_millis(100), stream.write_all(&line)).await;
}

async fn connection(stream: UnixStream, ctx: Arc<Context>) {
    let _open = ctx.activity.connection();
    let (rd, mut wr) = stream.into_split();
    let mut reader = BufReader::new(rd);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut limited = tokio::io::AsyncReadExt::take(&mut reader, MAX_LINE as u64 + 1);
        let read = tokio::select! {
            _ = ctx.shutdown.cancelled() => return,
            r = limited.read_until(b'\n', &mut buf) => r,
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // (A last line without its newline, at EOF, is answered like any other.)
        if buf.last() != Some(&b'\n') && buf.len() > MAX_LINE {
            tracing::warn!("control request over {MAX_LINE} bytes; dropping that connection");
            let mut line = control::error_reply(None, "request too large");
            line.push(b'\n');
            let _ = wr.write_all(&line).await;
            return;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        ctx.activity.touch();
        let incoming = control::decode(line);
        let mut reply = match incoming.request {
            // A question is dropped when its client hangs up (an MCP call cancelled, `nav`
            // interrupted): that cancels it down to the language server.
            Ok(req @ Request::Nav(_)) => tokio::select! {
                r = handle(req, &ctx, incoming.id.as_ref()) => r,
                () = hung_up(&mut reader) => return,
            },
            Ok(req) => handle(req, &ctx, incoming.id.as_ref()).await,
            Err(e) => control::error_reply(incoming.id.as_ref(), e),
        };
        reply.push(b'\n');
        let large = reply.len() > 1 << 20;
        if wr.write_all(&reply).await.is_err() {
            return;
        }
        if large {
            drop(reply);
            openfiles_os::memory::trim();
        }
    }
}

/// Resolves when the client closed its side (or the connection broke); a client that sends
/// more meanwhile is still there (what it sent stays buffered for the next request).
async fn hung_up<R: tokio::io::AsyncRead + Unpin>(reader: &mut BufReader<R>) {
    match reader.fill_buf().await {
        Ok([]) | Err(_) => {}
        Ok(_) => std::future::pending().await,
    }
}

/// The one dispatch: each request kind to its handler, each answer to its reply line.
async fn handle(req: Request, ctx: &Context, id: Option<&serde_json::Value>) -> Vec<u8> {
    tracing::trace!(cmd = req.name(), "control request");
    match req {
        Request::Hello(_) => control::ok_reply(id, hello()),
        Request::Status => control::ok_reply(id, status(ctx).await),
        Request::Workspaces => control::ok_reply(
            id,
            WorkspacesReply {
                workspaces: ctx.registry.list().await,
            },
        ),
        Request::Add(a) => reply(id, add(ctx, a).await),
        Request::Forget(a) => reply(id, forget(ctx, a.path).await),
        Request::Trust(a) => reply(id, ctx.registry.trust(a.path, a.trusted).await),
        Request::Shutdown => control::ok_reply(id, shutdown(ctx)),
        Request::Edited(e) => control::ok_reply(id, edited(ctx, e, EditOrigin::Control).await),
        Request::Wait(w) => {
            let fixes = w.fixes;
            control::ok_reply(id, wait(ctx, w, fixes).await)
        }
        Request::Check(c) => control::ok_reply(id, check(ctx, c).await),
        Request::SessionClear(a) => reply(id, session_clear(ctx, a.path).await),
        Request::Tools(q) => reply(id, tools(ctx, q).await),
        Request::Review(a) => reply(id, review(ctx, a.path).await),
        Request::ReviewMark(m) => control::ok_reply(id, review_mark(ctx, m).await),
        Request::Warm(a) => reply(id, warm(ctx, a.path).await),
        Request::Nav(q) => reply(id, super::nav::answer(&ctx.registry, q).await),
        Request::Pause(a) => reply(id, pause(ctx, a.path, true).await),
        Request::Resume(a) => reply(id, pause(ctx, a.path, false).await),
    }
}

/// A handler's answer as a reply line: its body, or its error's text.
fn reply(
    id: Option<&serde_json::Value>,
    answer: Result<impl serde::Serialize, impl std::fmt::Display>,
) -> Vec<u8> {
    match answer {
        Ok(body) => control::ok_reply(id, body),
        Err(e) => control::error_reply(id, e),
    }
}

fn hello() -> HelloReply {
    HelloReply {
        server: "openfiles".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        pid: std::process::id(),
    }
}

/// `shutdown`: the one shutdown path's token.
fn shutdown(ctx: &Context) -> serde_json::Value {
    tracing::info!("shutdown requested over the control socket");
    ctx.shutdown.cancel();
    serde_json::json!({})
}

/// `add` (`--force` registers a folder discovery would not).
async fn add(
    ctx: &Context,
    a: openfiles_wire::control::PathArg,
) -> Result<WorkspacesReply, WorkspaceError> {
    let source = if a.force {
        Source::AddedForce
    } else {
        Source::Added
    };
    let info = ctx.registry.add(a.path, source).await?;
    Ok(WorkspacesReply {
        workspaces: vec![info],
    })
}

async fn forget(ctx: &Context, path: PathBuf) -> Result<WorkspacesReply, WorkspaceError> {
    let info = ctx.registry.forget(path).await?;
    Ok(WorkspacesReply {
        workspaces: vec![info],
    })
}

async fn session_clear(
    ctx: &Context,
    path: PathBuf,
) -> Result<control::SessionCleared, WorkspaceError> {
    let h = ctx.registry.lookup(path, false).await?;
    let cleared = h.clear().await;
    Ok(control::SessionCleared {
        root: (*h.root).clone(),
        cleared,
    })
}

/// `tools`; a bad request's error says `invalid tools request: …`.
async fn tools(
    ctx: &Context,
    q: openfiles_wire::control::ToolsQuery,
) -> Result<openfiles_wire::control::ToolsReply, InvalidTools> {
    let trusted = tools_trust(ctx, &q).await;
    super::tools::answer(q, trusted).await.map_err(InvalidTools)
}

#[derive(Debug, thiserror::Error)]
#[error("invalid tools request: {0}")]
struct InvalidTools(super::tools::QueryError);

async fn review(
    ctx: &Context,
    path: PathBuf,
) -> Result<openfiles_wire::control::WorkspaceReview, WorkspaceError> {
    Ok(ctx.registry.lookup(path, false).await?.review().await)
}

/// `warm`: an agent's session starts (registers the workspace if needed).
async fn warm(ctx: &Context, path: PathBuf) -> Result<control::WarmReply, WorkspaceError> {
    let h = ctx.registry.lookup(path, true).await?;
    let started = h.warm().await;
    Ok(control::WarmReply {
        root: (*h.root).clone(),
        started,
    })
}

/// Whether the service trusts the workspace a `tools` request asks about: the trust of the
/// registered workspace at that folder; an unregistered folder is not trusted.
async fn tools_trust(ctx: &Context, q: &openfiles_wire::control::ToolsQuery) -> bool {
    let Some(root) = q.root.as_deref() else {
        return false;
    };
    let root = tokio::fs::canonicalize(root)
        .await
        .unwrap_or_else(|_| root.to_owned());
    ctx.registry
        .status()
        .await
        .iter()
        .any(|w| w.root == root && w.trusted)
}

/// `pause` and `resume`.
async fn pause(ctx: &Context, path: PathBuf, paused: bool) -> Result<PauseReply, WorkspaceError> {
    let h = ctx.registry.lookup(path, false).await?;
    Ok(PauseReply {
        root: (*h.root).clone(),
        paused,
        was_paused: h.pause(paused).await,
    })
}

async fn review_mark(ctx: &Context, m: ReviewMark) -> ReviewMarked {
    let (groups, mut rejected) = group(ctx, m.paths, false).await;
    let mut marked = Vec::new();
    for (handle, paths) in groups {
        let done = handle.mark(paths.clone(), m.reviewed).await;
        for p in paths {
            let canonical = p.canonicalize().unwrap_or_else(|_| p.clone());
            if !done.contains(&canonical) {
                rejected.push(control::Rejected {
                    path: p,
                    reason: "not a session file".into(),
                });
            }
        }
        marked.extend(done);
    }
    ReviewMarked { marked, rejected }
}

async fn status(ctx: &Context) -> StatusReply {
    let workspaces = ctx.registry.status().await;
    let (ran, ran_total) = crate::workspace::instance::ran_for(None);
    StatusReply {
        ran,
        ran_total,
        version: env!("CARGO_PKG_VERSION").into(),
        pid: std::process::id(),
        uptime_ms: ctx.started.elapsed().as_millis() as u64,
        activation: ctx.activation,
        socket: ctx.socket.clone(),
        terminals: workspaces.iter().map(|w| w.terminals).sum(),
        workspaces,
        plugins: (ctx.plugins)(),
        binary: ctx.binary.as_ref().map(|b| b.0.clone()),
        binary_mtime_ms: ctx.binary.as_ref().map(|b| b.1),
        last_reload_error: ctx
            .reload_error
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default(),
    }
}

/// Group absolute paths by the workspace that serves them (registering workspaces as needed).
async fn group(
    ctx: &Context,
    paths: Vec<PathBuf>,
    register: bool,
) -> (Vec<(PipelineHandle, Vec<PathBuf>)>, Vec<control::Rejected>) {
    let mut groups: Vec<(PipelineHandle, Vec<PathBuf>)> = Vec::new();
    let mut rejected = Vec::new();
    for path in paths {
        if !path.is_absolute() {
            rejected.push(control::Rejected {
                path,
                reason: "not an absolute path".into(),
            });
            continue;
        }
        // Resolve the folder, not the file: a symlinked file is judged (and refused) by the
        // policy of the workspace it appears in, not by where it points.
        let lookup_path = match (
            path.parent().and_then(|p| p.canonicalize().ok()),
            path.file_name(),
        ) {
            (Some(dir), Some(name)) => dir.join(name),
            _ => path.clone(),
        };
        match ctx.registry.lookup(lookup_path, register).await {
            Ok(h) => match groups.iter_mut().find(|(g, _)| g.root == h.root) {
                Some((_, v)) => v.push(path),
                None => groups.push((h, vec![path])),
            },
            Err(e) => rejected.push(control::Rejected {
                path,
                reason: e.to_string(),
            }),
        }
    }
    (groups, rejected)
}

async fn edited(ctx: &Context, e: Edited, origin: EditOrigin) -> EditedReply {
    let mut ts = spec::now_ms();
    let (groups, mut rejected) = group(ctx, e.paths, true).await;
    let mut workspaces = Vec::new();
    let mut paused = Vec::new();
    for (handle, paths) in groups {
        let out = handle.edited_by(paths, origin, e.agent.clone()).await;
        if out.paused {
            paused.push((*handle.root).clone());
        }
        rejected.extend(out.rejected);
        // An edit the watcher noticed first is waited for from then.
        ts = out.since.map_or(ts, |s| s.min(ts));
        if !out.accepted.is_empty() {
            workspaces.push(WorkspacePaths {
                root: (*handle.root).clone(),
                paths: out.accepted,
            });
        }
    }
    tracing::debug!(agent = ?e.agent, tool = ?e.tool, files = workspaces.iter().map(|w| w.paths.len()).sum::<usize>(), "edited");
    EditedReply {
        ts,
        workspaces,
        rejected,
        paused,
    }
}

/// `fixes`: once complete, also wait for the fixes asked after the answers (a plugin's
/// second step, bounded by its budget) and answer with the entries that carry them.
async fn wait(ctx: &Context, w: Wait, fixes: bool) -> WaitReply {
    let (groups, _) = group(ctx, w.paths, false).await;
    // An explicit timeout counts from now; without one, each workspace waits until the
    // edit's time plus its own `hooks.timeout_ms` (what `hook.timeoutMs` promises agents).
    let deadline = w
        .timeout_ms
        .map(|t| Instant::now() + Duration::from_millis(t.min(600_000)));
    let session = w.session.as_ref();
    let waits = groups.into_iter().map(|(h, paths)| async move {
        let r = h
            .wait_for(
                paths.clone(),
                w.since,
                deadline,
                w.partial,
                session.cloned(),
            )
            .await;
        if !(fixes && r.complete) {
            return r;
        }
        // The same entries, now with the fixes asked after the answers.
        h.fixes_idle().await;
        let again = h.wait_for(paths, w.since, deadline, w.partial, None).await;
        crate::diagnostics::waiters::WaitOutcome {
            entries: again.entries,
            ..r
        }
    });
    let results = futures_util::future::join_all(waits).await;
    let complete = results.iter().all(|r| r.complete);
    let partial = !complete && results.iter().all(|r| r.complete || r.partial);
    let mut workspaces = Vec::new();
    let mut earlier = Vec::new();
    for r in results {
        workspaces.push(r.entries);
        earlier.extend(r.earlier);
    }
    WaitReply {
        complete,
        partial,
        workspaces,
        earlier,
        rejected: Vec::new(),
    }
}

async fn check(ctx: &Context, c: Check) -> WaitReply {
    let reply = edited(
        ctx,
        Edited {
            paths: c.paths,
            agent: c.agent,
            ..Default::default()
        },
        EditOrigin::Request,
    )
    .await;
    let paths = reply.workspaces.into_iter().flat_map(|w| w.paths).collect();
    let timeout_ms = c.timeout_ms.or(Some(120_000));
    let mut answer = wait(
        ctx,
        Wait {
            paths,
            since: reply.ts,
            timeout_ms,
            partial: false,
            session: None,
            fixes: false,
        },
        true,
    )
    .await;
    answer.rejected = reply.rejected;
    answer
}
