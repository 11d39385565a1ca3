//! An edit that comes while the warm server is still in its first analysis (the session
//! start's warm-up started it a moment before): its check rides on the server instead of
//! waiting for that analysis to end. So does one after it that the service has no baseline
//! for yet (a tree the commit does not match: the service sends the committed texts only
//! then, `schedule/ride.rs`), instead of waiting for the baseline's run over the commit.
//! The edit's users ([`crate::early::users`]) are opened
//! and their diagnostics pulled (`textDocument/diagnostic`: pyright checks the file on its
//! request thread, beside the analysis, and answers with what it found — no guess at which
//! publish is a checked one; a publish of a file just opened can be its bound-only, empty
//! list), twice:
//!
//! 1. with each changed file opened with its committed text (`CheckRequest::committed`,
//!    which also holds the other files the tree changed since the commit, opened at it too):
//!    what the users and the changed files say there is their baseline at the commit (the
//!    service sends the texts only when the tree changed nothing but files' contents since
//!    `HEAD`; a user the tree changed, or a configuration, and there is no ride);
//! 2. the changed files closed (pyright reads them from disk again): what the users say now
//!    is what the edit did to them.
//!
//! The answer is early (`more`): the users' items now, and their and the changed files'
//! baseline ([`Answer::baseline`]); the rest comes with the follow-up check, once the first
//! analysis settled. On click, an edit made a second after the server started had the
//! caller it broke pulled 3.5–4.2 s after it, against ~7 s for the first analysis to end
//! and 12–14 s with the baseline's command-line run beside it. When the service already has
//! the baseline at the commit ([`Riding::baseline_known`]: the session holds it, or an
//! earlier session or another worktree kept it), only the second pull is made ([`once`]):
//! 2.2–2.4 s against 3.6–3.8 s (a bare server, the edit 1 s after its start). An edit whose
//! changed files have no users answers at once with nothing (the follow-up waits for the
//! analysis): its hook is not held.

use super::{Answer, Ask, Pushes, Server, ServerError};
use crate::early::{changed_names, read, users};
use openfiles_plugin_api::uri::path_to_uri;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The most Python files a ride scans for users (past it, no ride).
const MAX_SCANNED: usize = 5_000;
/// The longest each of the two pulls takes.
const WAIT_MS: u64 = 15_000;
/// The configuration files pyright reads: one the tree changed since the commit leaves no
/// baseline to ride for.
const CONFIGS: &[&str] = &["pyrightconfig.json", "pyproject.toml"];
/// Folders never scanned for users.
const SKIPPED: &[&str] = &["node_modules", "__pycache__", "site-packages", "venv"];

/// What a check riding the first analysis is given (`CheckRequest::committed`,
/// `CheckRequest::baseline_known`).
#[derive(Debug, Clone, Copy)]
pub struct Riding<'a> {
    /// The changed files' committed texts: empty when the check does not ride.
    pub committed: &'a BTreeMap<PathBuf, String>,
    /// The service has the baseline already: no pull with the committed texts.
    pub baseline_known: bool,
}

/// Answer `ask` by riding the first analysis (see the module's doc): `Some` of the check's
/// answer (`None` when it was cancelled), or `None` when it cannot: no committed texts, a
/// root new to the server, a changed file without its committed text or gone from disk, a
/// file to open already open, a user or pyright's configuration the tree changed since the
/// commit, too many files.
pub fn ride(
    server: &Server,
    ask: &Ask,
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<Option<Answer>>, ServerError> {
    let Some(plan) = plan(server, ask) else {
        // Asked to ride (the service's partial answer waits for this one) and cannot: no
        // answer to wait the first analysis out for — the follow-up check waits for it.
        let first = !ask.ride.committed.is_empty() && server.conn.pushed().ended == 0;
        return Ok(first.then(|| nothing(false)));
    };
    if plan.users.is_empty() {
        crate::timeline::trace(|| "ride: no users, the follow-up waits".into());
        return Ok(Some(nothing(false)));
    }
    let started = Instant::now();
    let at_commit: Vec<&PathBuf> = plan.committed.iter().map(|(f, _)| f).collect();
    let users: Vec<&PathBuf> = plan.users.iter().map(|(f, _)| f).collect();
    let known = ask.ride.baseline_known;
    crate::timeline::trace(|| {
        let (c, u) = (ask.changed.len(), users.len());
        let o = at_commit.len().saturating_sub(c);
        format!(
            "ride: {c} changed files ({o} others), opening {u} users (the baseline known: {known})"
        )
    });
    if known {
        return once(server, ask, &plan, started, cancelled);
    }
    open(server, plan.committed.iter().chain(&plan.users))?;
    // The baseline of the users and the changed files (not of the tree's other changed
    // files: the session did not edit them).
    let checked: Vec<&PathBuf> = users.iter().copied().chain(ask.changed).collect();
    let baseline = pull(server, &checked, cancelled)?;
    crate::timeline::trace(|| {
        let ms = started.elapsed().as_millis();
        format!("ride: baseline pulled in {ms} ms: {}", baseline.is_some())
    });
    // The changed files read from disk again.
    let known = {
        let mut texts = server.texts.lock().unwrap_or_else(|e| e.into_inner());
        texts.changes(ask.workspace, ask.changed).before
    };
    for f in &at_commit {
        server.conn.notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": path_to_uri(f)}}),
        )?;
    }
    server
        .opened
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .hold(&server.conn, users.iter().map(|f| (*f).clone()))?;
    let Some(baseline) = baseline else {
        // Cancelled or unanswered: the follow-up answers; the next check notifies.
        server
            .texts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .undo(known);
        return Ok(Some(nothing(cancelled())));
    };
    edited(server, &users, started, Some(baseline), cancelled)
}

/// The ride when the service has the baseline already: one pull, the edit's — the changed
/// files read from disk (told as a check tells them), the users opened.
fn once(
    server: &Server,
    ask: &Ask,
    plan: &Plan,
    started: Instant,
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<Option<Answer>>, ServerError> {
    let users: Vec<&PathBuf> = plan.users.iter().map(|(f, _)| f).collect();
    let told = {
        let mut texts = server.texts.lock().unwrap_or_else(|e| e.into_inner());
        texts.changes(ask.workspace, ask.changed).before
    };
    let events: Vec<Value> = ask
        .changed
        .iter()
        .map(|f| json!({"uri": path_to_uri(f), "type": 2}))
        .collect();
    server.conn.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": events}),
    )?;
    open(server, plan.users.iter())?;
    server
        .opened
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .hold(&server.conn, users.iter().map(|f| (*f).clone()))?;
    let answer = edited(server, &users, started, None, cancelled)?;
    // Cancelled or unanswered (a pull answers each user): the next check notifies.
    if !matches!(&answer, Some(Some(a)) if !a.pushes.is_empty()) {
        server
            .texts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .undo(told);
    }
    Ok(answer)
}

/// Open `files` with their texts.
fn open<'a>(
    server: &Server,
    files: impl Iterator<Item = &'a (PathBuf, String)>,
) -> Result<(), ServerError> {
    for (f, text) in files {
        server.conn.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": path_to_uri(f), "languageId": "python",
                                    "version": 1, "text": text}}),
        )?;
    }
    Ok(())
}

/// The ride's answer: `users` pulled with the changed files as they are on disk (the edit's
/// knock-on), beside `baseline`.
fn edited(
    server: &Server,
    users: &[&PathBuf],
    started: Instant,
    baseline: Option<Pushes>,
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<Option<Answer>>, ServerError> {
    let Some(pushes) = pull(server, users, cancelled)? else {
        return Ok(Some(nothing(cancelled())));
    };
    crate::timeline::trace(|| {
        let ms = started.elapsed().as_millis();
        format!("ride: users pulled with the edit {ms} ms after the ride began")
    });
    Ok(Some(Some(Answer {
        pushes,
        more: true,
        baseline,
    })))
}

/// Pull the diagnostics of `files` (open) from the server, asked together: `None` when the
/// check was cancelled, [`WAIT_MS`] passed or the server refused one.
fn pull(
    server: &Server,
    files: &[&PathBuf],
    cancelled: &dyn Fn() -> bool,
) -> Result<Option<Pushes>, ServerError> {
    let mut asked = Vec::new();
    for f in files {
        let params = json!({"textDocument": {"uri": path_to_uri(f)}});
        asked.push((
            (*f).clone(),
            server.conn.request("textDocument/diagnostic", params)?,
        ));
    }
    let until = Instant::now() + Duration::from_millis(WAIT_MS);
    let mut got: HashMap<u64, Result<Value, Value>> = HashMap::new();
    while got.len() < asked.len() {
        let mut p = server.conn.wait(25);
        if p.closed {
            return Err(ServerError::Crashed);
        }
        for (_, id) in &asked {
            if let Some(answer) = p.take_answer(*id) {
                got.insert(*id, answer);
            }
        }
        drop(p);
        if got.len() < asked.len() && (cancelled() || Instant::now() > until) {
            for (_, id) in &asked {
                server.conn.forget(*id);
            }
            return Ok(None);
        }
    }
    let mut out = Vec::new();
    for (f, id) in asked {
        let items = match got.remove(&id) {
            Some(Ok(result)) if result.get("kind") == Some(&json!("full")) => {
                result.get("items").and_then(Value::as_array).cloned()
            }
            _ => None,
        };
        let Some(items) = items else {
            crate::timeline::trace(|| format!("ride: no diagnostics pulled for {}", f.display()));
            return Ok(None);
        };
        out.push((f, items));
    }
    Ok(Some(out))
}

/// No answer yet: `None` when the check was cancelled (its answer is dropped), else an early
/// answer with nothing (the follow-up check waits for the analysis).
fn nothing(cancelled: bool) -> Option<Answer> {
    (!cancelled).then_some(Answer {
        pushes: Vec::new(),
        more: true,
        baseline: None,
    })
}

/// What a ride pins and opens.
struct Plan {
    /// The changed files and the tree's other changed files, with their committed text.
    committed: Vec<(PathBuf, String)>,
    /// Their users with their text on disk (at most [`crate::opened::MAX_OPEN`]).
    users: Vec<(PathBuf, String)>,
}

/// The ride for `ask`, when one is possible (see [`ride`]).
fn plan(server: &Server, ask: &Ask) -> Option<Plan> {
    if ask.ride.committed.is_empty() {
        return None;
    }
    {
        let roots = server.roots.lock().unwrap_or_else(|e| e.into_inner());
        if !ask.roots.iter().all(|r| roots.contains(r)) {
            return None;
        }
    }
    let mut committed = Vec::new();
    let mut names = Vec::new();
    for f in ask.changed {
        let old = ask.ride.committed.get(f)?;
        let new = read(ask.workspace, f)?;
        names.push((f, changed_names(old, &new)));
        committed.push((f.clone(), old.clone()));
    }
    for (f, old) in ask.ride.committed {
        if ask.changed.contains(f) {
            continue;
        }
        // The tree's other changes: modules opened at their commit too; a configuration
        // pyright reads changed since the commit makes the baseline something else.
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
        match f.extension().and_then(|e| e.to_str()) {
            Some("py" | "pyi") => committed.push((f.clone(), old.clone())),
            _ if name.is_some_and(|n| CONFIGS.contains(&n.as_str())) => return None,
            _ => {}
        }
    }
    let texts = scan(ask.workspace, ask.roots)?;
    let mut found: Vec<PathBuf> = Vec::new();
    for (f, touched) in &names {
        for u in users(f, Some(touched), texts.iter().map(|(p, t)| (p, t.as_str()))) {
            // A user the tree changed since the commit: its baseline is another text than
            // the one the service would map its lines with.
            if ask.ride.committed.contains_key(&u) && !ask.changed.contains(&u) {
                return None;
            }
            if !ask.changed.contains(&u) && !found.contains(&u) {
                found.push(u);
            }
        }
    }
    let opened = server.opened.lock().unwrap_or_else(|e| e.into_inner());
    let at_commit = committed.iter().map(|(f, _)| f);
    if found.iter().chain(at_commit).any(|f| opened.holds(f)) {
        return None; // opened already: not again
    }
    found.truncate(crate::opened::MAX_OPEN);
    let users = found
        .into_iter()
        .filter_map(|f| Some((f.clone(), texts.get(&f)?.clone())))
        .collect();
    Some(Plan { committed, users })
}

/// The Python files under `roots` with their text (read confined), skipping hidden folders
/// and environments; `None` past [`MAX_SCANNED`].
fn scan(workspace: &Path, roots: &[PathBuf]) -> Option<HashMap<PathBuf, String>> {
    let mut out = HashMap::new();
    let mut dirs: Vec<PathBuf> = roots.to_vec();
    let mut seen = 0usize;
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !name.starts_with('.') && !SKIPPED.contains(&name.as_ref()) {
                    dirs.push(e.path());
                }
            } else if kind.is_file() && (name.ends_with(".py") || name.ends_with(".pyi")) {
                seen += 1;
                if seen > MAX_SCANNED {
                    return None;
                }
                let path = e.path();
                if let Some(text) = read(workspace, &path) {
                    out.insert(path, text);
                }
            }
        }
    }
    Some(out)
}
