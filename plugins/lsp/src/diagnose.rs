//! Fresh diagnostics for one file from one server (DESIGN §4 "settling").
//!
//! 1. Send the file's current text: `didOpen` the first time, else `didChange` (full text,
//!    next version), then `didSave`. Versions are allocated and the messages queued under one
//!    short lock, so concurrent checks reach the server in version order.
//! 2. If the server offers pull diagnostics (statically or by dynamic registration), ask
//!    `textDocument/diagnostic` for every identifier: the answer is computed on the text just
//!    sent, so it is fresh by construction.
//! 3. Otherwise wait for a push that is fresh: one carrying our version or a newer one, or —
//!    for servers that do not version their pushes — one received after our change. Never an
//!    older one. Unversioned pushes are followed by a quiet window (`quiet_ms`) during which a
//!    further push replaces the result (servers like typescript-language-server publish
//!    syntactic and semantic results separately).
//!    A server that announces its indexing (intelephense) is waited for: a push counts only
//!    once indexing is over and after it ended.
//! 4. Servers with `wait_for_progress` (rust-analyzer's flycheck) are final only once such a
//!    progress has begun after our save and none is active.
//!
//! Everything is bounded by the check's deadline: no fixed sleeps.

use crate::client::Client;
use crate::config::DiagnosticsMode;
use crate::convert::{inline_fixes, path_to_uri, to_item, Doc};
use crate::error::CheckError;
use crate::transport::Error;
use crate::tsserver;
use lsp_types::{Diagnostic, DocumentDiagnosticReportResult};
use openfiles_plugin_api::{confine, content_hash, Item};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Fresh diagnostics of `path` from `client`. The file is read when its text is sent, unless
/// `given` is the text to check (`CheckRequest::texts`: its committed content, for the
/// service's baseline); the next check sends the file's real text as a newer version.
pub async fn diagnose(
    client: &Client,
    path: &Path,
    also: &[PathBuf],
    language_id: &str,
    deadline: Instant,
    quiet: Duration,
    given: Option<Arc<str>>,
) -> Result<Vec<Item>, CheckError> {
    let closed = client.closed();
    let crashed = || CheckError::Crashed {
        server: client.name.clone(),
        tail: match client.transport.stderr_tail() {
            t if t.is_empty() => String::new(),
            t => format!(" (stderr: {t})"),
        },
    };
    tokio::select! {
        r = run(client, path, also, language_id, deadline, quiet, given) => match r {
            Err(CheckError::Rpc(Error::StreamClosed)) => Err(crashed()),
            r => r,
        },
        _ = closed.cancelled() => Err(crashed()),
    }
}

async fn run(
    client: &Client,
    path: &Path,
    also: &[PathBuf],
    language_id: &str,
    deadline: Instant,
    quiet: Duration,
    given: Option<Arc<str>>,
) -> Result<Vec<Item>, CheckError> {
    let uri = path_to_uri(path);
    refresh_others(client, path);
    report_watched(client, also);
    // Fixes only for the file's own text, not for a given one (the baseline's).
    let fixes = given.is_none();
    let tsserver = client.spec.diagnostics == DiagnosticsMode::Tsserver
        && client.caps.commands.iter().any(|c| c == tsserver::COMMAND);
    // A server answers for the newest text it has: a check of a given text runs alone, no
    // other check of the file in between its text and its answer.
    let turn = client.turn(path);
    let (_shared, _alone) = if given.is_some() {
        let alone = tokio::time::timeout_at(deadline, turn.write_owned()).await;
        let alone = alone.map_err(|_| CheckError::Timeout(client.name.clone()))?;
        (None, Some(alone))
    } else {
        let shared = tokio::time::timeout_at(deadline, turn.read_owned()).await;
        let shared = shared.map_err(|_| CheckError::Timeout(client.name.clone()))?;
        (Some(shared), None)
    };
    let mut round = 0;
    loop {
        round += 1;
        let sent = sync(client, path, &uri, language_id, given.clone())?;
        let conv = Convert {
            client,
            path,
            uri: &uri,
            sent: &sent.text,
            fixes,
        };
        let found = if tsserver {
            via_tsserver(&conv, deadline).await?
        } else {
            settle(&conv, &sent, deadline, quiet).await?
        };
        if !answered_for_ours(client, path, sent.version, given.is_some()) && round < MAX_ROUNDS {
            continue;
        }
        if fixes {
            crate::fixes::remember(client, path, conv.text(), found.raw);
        }
        return Ok(found.items);
    }
}

/// Most times a check sends its text again because a concurrent check sent another one.
const MAX_ROUNDS: u32 = 4;

/// Whether the answer just taken can be for the text this check needs. A server answers
/// for the newest text it has, and another check may have sent the file another one
/// meanwhile (turns keep a given text's check apart from the file's other checks, but a
/// check of another file sends the file's new text from disk, [`refresh_others`]): a newer
/// text of the file is fine for a check of the file's own text (it is its newer content),
/// a text the service gave (a committed one, for the baseline) is not, and a check of a
/// given text needs exactly its own. (At a session's first edit the session start's
/// warm-up opened the edited file with its new text while the baseline's check sent the
/// committed one: the new error was taken for an old one.)
fn answered_for_ours(client: &Client, path: &Path, version: i32, given: bool) -> bool {
    let docs = client.docs.lock().unwrap_or_else(|e| e.into_inner());
    docs.get(path).is_some_and(|d| {
        if given {
            d.version == version
        } else {
            !d.given
        }
    })
}

/// Turns one file's diagnostics into items.
struct Convert<'a> {
    client: &'a Client,
    path: &'a Path,
    uri: &'a str,
    /// The text [`sync`] sent.
    sent: &'a Arc<str>,
    /// Whether items carry the fixes inlined in their diagnostics.
    fixes: bool,
}

impl Convert<'_> {
    /// The newest text sent (a concurrent check may have sent a newer one than ours):
    /// positions refer to it.
    fn text(&self) -> Arc<str> {
        current_text(self.client, self.path).unwrap_or_else(|| self.sent.clone())
    }

    fn items(&self, ds: &[Diagnostic]) -> Vec<Item> {
        let text = self.text();
        let enc = self.client.caps.encoding;
        let mut hash = None;
        ds.iter()
            .map(|d| {
                let mut item = to_item(d, &text, enc, &self.client.name);
                if self.fixes && d.data.is_some() {
                    let sha256 = hash.get_or_insert_with(|| content_hash(text.as_bytes()));
                    let doc = Doc {
                        path: self.path,
                        uri: self.uri,
                        text: &text,
                        sha256,
                        enc,
                    };
                    item.fixes = inline_fixes(d, &doc);
                }
                item
            })
            .collect()
    }
}

/// typescript-language-server's results through `typescript.tsserverRequest`; tsserver
/// answers for the newest text it has, which may be a concurrent check's.
async fn via_tsserver(conv: &Convert<'_>, deadline: Instant) -> Result<Found, CheckError> {
    let items = tsserver::diagnostics(conv.client, conv.uri, deadline).await?;
    let raw = if conv.fixes {
        items
            .iter()
            .filter_map(crate::fixes::from_tsserver)
            .collect()
    } else {
        Vec::new()
    };
    Ok(Found {
        items: tsserver::to_items(&items, &conv.text()),
        raw,
    })
}

/// Items of a check, and the raw diagnostics behind them (for their fixes, `crate::fixes`).
#[derive(Default)]
struct Found {
    items: Vec<Item>,
    raw: Vec<Diagnostic>,
}

impl Found {
    fn add(&mut self, conv: &Convert<'_>, ds: Vec<Diagnostic>) {
        self.items.extend(conv.items(&ds));
        self.raw.extend(ds);
    }
}

/// Steps 2 to 4 of the module docs: pull, else wait for a fresh push (switching to pulls
/// when the server registers them meanwhile), then for the waited-for progress; asked again
/// when a concurrent check sent a newer text.
async fn settle(
    conv: &Convert<'_>,
    sent: &Sent,
    deadline: Instant,
    quiet: Duration,
) -> Result<Found, CheckError> {
    let (client, path) = (conv.client, conv.path);
    let mode = client.spec.diagnostics;
    let progress = !client.spec.wait_for_progress.is_empty();
    let mut version = sent.version;
    loop {
        let mut found = Found::default();
        let pulls = if mode == DiagnosticsMode::Push {
            Vec::new()
        } else {
            pull_identifiers(client)
        };
        for identifier in &pulls {
            found.add(
                conv,
                pull(client, conv.uri, identifier.clone(), deadline).await?,
            );
        }
        // A newer text sent meanwhile (a concurrent check) may have interrupted the server's
        // computation (pyright then answers an empty list): ask again for the newer text.
        if let Some(newer) = current_version(client, path).filter(|v| *v > version) {
            version = newer;
            continue;
        }
        if !pulls.is_empty() && !progress {
            return Ok(found);
        }
        if pulls.is_empty() {
            // A server may register pull diagnostics only after `initialized` (pyright
            // does): while waiting for a push, switch to pulling as soon as it does.
            let watch_pull = mode == DiagnosticsMode::Auto;
            let waited = wait_push(
                client,
                path,
                version,
                sent.seq_mark,
                deadline,
                quiet,
                watch_pull,
            );
            if let Waited::PullRegistered = waited.await? {
                continue;
            }
        }
        if progress {
            wait_progress(client, sent.progress_mark, deadline).await?;
        }
        found.add(conv, pushed(client, path, !pulls.is_empty(), sent.seq_mark));
        return Ok(found);
    }
}

/// The last push for `path`; with pulls, only one that came after our change (rust-analyzer
/// pushes its cargo-check results even to pulling clients).
fn pushed(client: &Client, path: &Path, pulled: bool, seq_mark: u64) -> Vec<Diagnostic> {
    let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
    s.pushes
        .get(path)
        .filter(|p| !pulled || p.seq > seq_mark)
        .map(|p| p.diagnostics.clone())
        .unwrap_or_default()
}

/// What [`sync`] sent.
pub(crate) struct Sent {
    pub(crate) text: Arc<str>,
    version: i32,
    /// Push sequence number before sending.
    seq_mark: u64,
    /// Waited-for progresses begun before sending.
    progress_mark: u64,
}

/// Other open documents whose file changed on disk get their new text (so the server never
/// checks against an old copy of an imported module); deleted ones are closed.
pub(crate) fn refresh_others(client: &Client, except: &Path) {
    let mut docs = client.docs.lock().unwrap_or_else(|e| e.into_inner());
    let mut gone = Vec::new();
    for (path, doc) in docs.iter_mut().filter(|(p, _)| p.as_path() != except) {
        let uri = path_to_uri(path);
        match read_text(&client.root_for(path), path) {
            Ok(text) if *text == *doc.text => {}
            Ok(text) => {
                let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
                (doc.seq_mark, doc.progress_mark) = (s.seq, s.waited_begun);
                drop(s);
                doc.world = bump_world(client);
                doc.version += 1;
                doc.text = Arc::from(text);
                doc.given = false;
                client.transport.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": uri, "version": doc.version}, "contentChanges": [{"text": &*doc.text}]}),
                );
            }
            Err(_) => {
                client.transport.notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": uri}}),
                );
                bump_world(client);
                gone.push(path.clone());
            }
        }
    }
    for p in gone {
        docs.remove(&p);
    }
}

/// Other session files the server has not opened: when it watches files, tell it which of
/// them changed (or disappeared) since last reported, as an editor's file watcher would.
fn report_watched(client: &Client, also: &[PathBuf]) {
    if also.is_empty()
        || client
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .watchers
            == 0
    {
        return;
    }
    let docs: Vec<PathBuf> = client
        .docs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .keys()
        .cloned()
        .collect();
    let mut watched = client.watched.lock().unwrap_or_else(|e| e.into_inner());
    let mut changes = Vec::new();
    for p in also.iter().filter(|p| !docs.contains(p)) {
        let mtime = std::fs::metadata(p).and_then(|m| m.modified()).ok();
        let seen = watched.insert(p.clone(), mtime);
        let kind = match (seen, mtime) {
            (Some(a), b) if a == b => continue,
            (None | Some(None), None) => continue,
            // First seen: "created", so a server that has not indexed it yet adds it.
            (None | Some(None), Some(_)) => 1,
            (Some(Some(_)), Some(_)) => 2, // changed
            (Some(Some(_)), None) => 3,    // deleted
        };
        changes.push(json!({"uri": path_to_uri(p), "type": kind}));
    }
    if !changes.is_empty() {
        client.transport.notify(
            "workspace/didChangeWatchedFiles",
            json!({"changes": changes}),
        );
        bump_world(client);
    }
}

/// Largest file whose text is sent to a server (the service applies its own, configurable,
/// `diagnostics.max_file_bytes` first; this bounds the plugin whatever it is asked).
pub const MAX_TEXT_BYTES: u64 = 32 << 20;

/// A file's text, read the one confined way (`openfiles_plugin_api::confine`): no symlink
/// followed below the server's root, a regular file, at most [`MAX_TEXT_BYTES`], UTF-8.
fn read_text(root: &Path, path: &Path) -> std::io::Result<String> {
    let bytes = confine::read_workspace_file(root, path, MAX_TEXT_BYTES).map_err(|e| match e {
        confine::ConfineError::Io(io) => io,
        other => std::io::Error::other(other.to_string()),
    })?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// Read the file (or take the `given` text) and send it, under the documents lock: the order
/// of versions is the order of reads, so the server always ends up with the newest text.
pub(crate) fn sync(
    client: &Client,
    path: &Path,
    uri: &str,
    language_id: &str,
    given: Option<Arc<str>>,
) -> Result<Sent, CheckError> {
    let mut docs = client.docs.lock().unwrap_or_else(|e| e.into_inner());
    let given_text = given.is_some();
    let text = read_or_close(client, &mut docs, path, uri, given)?;
    let (seq_mark, progress_mark) = {
        let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
        (s.seq, s.waited_begun)
    };
    // The server already has exactly this text: it may publish nothing for a change that
    // changes nothing (clangd does not). When nothing else changed since (no other document,
    // no watched file), the last fresh result for this text is still fresh: nothing is sent
    // and the waits below accept what answered the earlier send. When something else
    // changed, the text is sent again as a new version asking for a rebuild (clangd's
    // `forceRebuild`/`wantDiagnostics`; other servers ignore the fields).
    let world = client.world.load(Ordering::SeqCst);
    if let Some(d) = docs.get_mut(path).filter(|d| *d.text == *text) {
        // The same text: the file's own as well, when this check's is.
        d.given &= given_text;
    }
    let unchanged = docs.get(path).filter(|d| *d.text == *text);
    if let Some(d) = unchanged.filter(|d| d.world == world) {
        return Ok(Sent {
            text: d.text.clone(),
            version: d.version,
            seq_mark: d.seq_mark,
            progress_mark: d.progress_mark,
        });
    }
    let force = unchanged.is_some();
    let previous = docs.get(path).map(|d| d.version);
    let version = send_text(client, uri, language_id, &text, previous, force);
    // A resend of the same text changes nothing the server knows.
    let world = if force { world } else { bump_world(client) };
    send_save(client, uri, &text);
    docs.insert(
        path.to_path_buf(),
        crate::client::Doc {
            version,
            text: text.clone(),
            seq_mark,
            progress_mark,
            world,
            given: given_text,
        },
    );
    Ok(Sent {
        text,
        version,
        seq_mark,
        progress_mark,
    })
}

/// The text to send: `given`, else the file's; a file that cannot be read is closed (the
/// server forgets its last text) and the check fails.
fn read_or_close(
    client: &Client,
    docs: &mut HashMap<PathBuf, crate::client::Doc>,
    path: &Path,
    uri: &str,
    given: Option<Arc<str>>,
) -> Result<Arc<str>, CheckError> {
    let read = match given {
        Some(text) => Ok(text),
        None => read_text(&client.root_for(path), path).map(Arc::from),
    };
    read.map_err(|e| {
        if docs.remove(path).is_some() {
            client.transport.notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": uri}}),
            );
            bump_world(client);
        }
        CheckError::Read(e.to_string())
    })
}

/// `didOpen` (version 1) for a document the server does not have, else `didChange` with the
/// full text as the next version (`force`: asking for a rebuild of an unchanged text);
/// returns the version sent.
fn send_text(
    client: &Client,
    uri: &str,
    language_id: &str,
    text: &str,
    previous: Option<i32>,
    force: bool,
) -> i32 {
    let t = &client.transport;
    let Some(previous) = previous else {
        t.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": language_id, "version": 1, "text": text}}),
        );
        return 1;
    };
    let v = previous + 1;
    let mut p =
        json!({"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": text}]});
    if force {
        p["forceRebuild"] = Value::Bool(true);
        p["wantDiagnostics"] = Value::Bool(true);
    }
    t.notify("textDocument/didChange", p);
    v
}

/// `didSave`, with the text if the server asked for it, to servers that want saves.
fn send_save(client: &Client, uri: &str, text: &str) {
    if client.caps.save {
        let mut p = json!({"textDocument": {"uri": uri}});
        if client.caps.save_include_text {
            p["text"] = Value::from(text);
        }
        client.transport.notify("textDocument/didSave", p);
    }
}

/// Record that what the server knows changed; returns the new value.
fn bump_world(client: &Client) -> u64 {
    client.world.fetch_add(1, Ordering::SeqCst) + 1
}

fn pull_identifiers(client: &Client) -> Vec<Option<String>> {
    let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
    let mut p: Vec<_> = s.pull_registrations.values().cloned().collect();
    p.extend(client.caps.pull.clone());
    p.sort();
    p.dedup();
    p
}

enum Waited {
    Fresh,
    PullRegistered,
}

fn current_version(client: &Client, path: &Path) -> Option<i32> {
    let docs = client.docs.lock().unwrap_or_else(|e| e.into_inner());
    docs.get(path).map(|d| d.version)
}

fn current_text(client: &Client, path: &Path) -> Option<Arc<str>> {
    client
        .docs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(path)
        .map(|d| d.text.clone())
}

fn remaining(client: &Client, deadline: Instant) -> Result<Duration, CheckError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(CheckError::Timeout(client.name.clone()));
    }
    Ok(left)
}

/// `textDocument/diagnostic`, retried while the server says the content moved under it.
pub(crate) async fn pull(
    client: &Client,
    uri: &str,
    identifier: Option<String>,
    deadline: Instant,
) -> Result<Vec<Diagnostic>, CheckError> {
    let params = json!({"textDocument": {"uri": uri}, "identifier": identifier});
    let mut changed = client.changed.clone();
    loop {
        let left = remaining(client, deadline)?;
        let r = client
            .transport
            .request("textDocument/diagnostic", params.clone(), left)
            .await;
        match r {
            Ok(v) => {
                let report: DocumentDiagnosticReportResult =
                    serde_json::from_value(v).map_err(|source| Error::Decode {
                        method: "textDocument/diagnostic".into(),
                        source,
                    })?;
                return Ok(match report {
                    DocumentDiagnosticReportResult::Report(
                        lsp_types::DocumentDiagnosticReport::Full(f),
                    ) => f.full_document_diagnostic_report.items,
                    // We never send a previousResultId, so "unchanged" cannot refer to a result we hold.
                    _ => Vec::new(),
                });
            }
            // ServerCancelled / ContentModified: ask again once the server moves on.
            Err(Error::Rpc {
                code: -32802 | -32801,
                ..
            }) => {
                let _ =
                    tokio::time::timeout(Duration::from_millis(50).min(left), changed.changed())
                        .await;
            }
            Err(Error::Timeout { .. }) => return Err(CheckError::Timeout(client.name.clone())),
            Err(e) => return Err(e.into()),
        }
    }
}

async fn wait_push(
    client: &Client,
    path: &Path,
    version: i32,
    mark: u64,
    deadline: Instant,
    quiet: Duration,
    watch_pull: bool,
) -> Result<Waited, CheckError> {
    let mut changed = client.changed.clone();
    // First a fresh push.
    let (mut last_seq, versioned) = loop {
        changed.borrow_and_update();
        let fresh = {
            let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
            if watch_pull && !s.pull_registrations.is_empty() {
                return Ok(Waited::PullRegistered);
            }
            // While the server indexes (intelephense), its pushes lack what the index
            // brings: only a push after indexing ended is complete.
            let indexed = !s.indexing;
            s.pushes
                .get(path)
                .filter(|p| indexed && p.seq > s.indexed_at)
                .and_then(|p| match p.version {
                    Some(v) if v >= version => Some((p.seq, true)),
                    None if p.seq > mark => Some((p.seq, false)),
                    _ => None,
                })
        };
        if let Some(f) = fresh {
            break f;
        }
        let left = remaining(client, deadline)?;
        if tokio::time::timeout(left, changed.changed()).await.is_err() {
            return Err(CheckError::Timeout(client.name.clone()));
        }
    };
    if versioned {
        return Ok(Waited::Fresh);
    }
    // Then quiet: no further push for this file for `quiet`.
    let mut until = Instant::now() + quiet;
    loop {
        let now = Instant::now();
        if now >= until || now >= deadline {
            return Ok(Waited::Fresh);
        }
        let _ = tokio::time::timeout_at(until.min(deadline), changed.changed()).await;
        let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = s.pushes.get(path) {
            if p.seq != last_seq {
                last_seq = p.seq;
                until = Instant::now() + quiet;
            }
        }
    }
}

async fn wait_progress(client: &Client, mark: u64, deadline: Instant) -> Result<(), CheckError> {
    let mut changed = client.changed.clone();
    loop {
        changed.borrow_and_update();
        let done = {
            let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
            s.waited_begun > mark && s.waited_active.is_empty()
        };
        if done {
            return Ok(());
        }
        let left = remaining(client, deadline)?;
        if tokio::time::timeout(left, changed.changed()).await.is_err() {
            return Err(CheckError::Timeout(client.name.clone()));
        }
    }
}
