//! Whether a server's answer about other files is the whole of them (issue 41.4): a server
//! that knows only the files it has opened answers references, implementations, callers,
//! workspace symbols and renames from those alone, and the answer says so (`partial`)
//! rather than passing for the whole list.
//!
//! Owns the per-server facts, each one the plugin has or asks for, never a guess:
//! - any server still indexing (a work-done progress titled with "index" — clangd's
//!   background index, rust-analyzer's — or its own indexing notifications): files not yet
//!   indexed are missing;
//! - clangd with no compile database for the file, or (trusted, so clangd reads it itself)
//!   only `compile_flags.txt`, which lists no files: clangd indexes only what it opened;
//! - typescript-language-server: tsserver's `projectInfo` for the file — an inferred
//!   project (the file is in no `tsconfig.json`/`jsconfig.json`), or TypeScript files under
//!   the project's folder that its configuration leaves out (tests a `tsconfig.json`
//!   excludes): tsserver searches only the projects it loaded;
//! - pyright (and basedpyright) enumerate the workspace in the background after they start:
//!   asked at once, a cold pyright knew 1 of 121 uses (benches/nav.rs). A cross-file
//!   question first waits, bounded, until pyright analysed the asked file (its diagnostics
//!   pulled, or its first push); if it did not, the answer is partial;
//! - rust-analyzer answers references with nothing while it loads the workspace (measured on
//!   walkdir: 0 uses of `WalkDir::min_depth` asked 2 s after it started, 7 after it loaded).
//!   A cross-file question waits, bounded as pyright's, until it has loaded the workspace,
//!   and is partial without it. Loaded is: it says it is quiescent
//!   (`experimental/serverStatus`, a client capability the plugin announces), or all it
//!   still does is prime its caches. Since rust-analyzer 2024-08 (its PR 17886) `quiescent`
//!   stays false until that priming (a progress titled "Indexing") has ended, which on a busy
//!   2-core machine is past the wait's bound; the priming starts only once the workspace is
//!   loaded and warms what a request computes on demand anyway, so an answer during it is
//!   slower but whole, and it is not an index in progress either.

use crate::client::{Client, State};
use crate::convert::path_to_uri;
use crate::Job;
use openfiles_plugin_api::compile_db;
use openfiles_plugin_api::query::{QueryKind, QueryRequest};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::Instant;

/// Longest a cross-file question waits for pyright's first analysis of the asked file.
const SETTLE: Duration = Duration::from_secs(15);

/// Most directory entries looked at for TypeScript files a project leaves out.
const MAX_WALK: usize = 20_000;

/// TypeScript source extensions a `tsconfig.json` may leave out.
const TS_EXTENSIONS: [&str; 4] = ["ts", "tsx", "mts", "cts"];

/// Whether the answer to `kind` spans files (and may miss some).
pub(crate) fn spans_files(kind: QueryKind) -> bool {
    matches!(
        kind,
        QueryKind::References
            | QueryKind::Implementation
            | QueryKind::IncomingCalls
            | QueryKind::WorkspaceSymbols
            | QueryKind::Rename
    )
}

/// Whether `server` enumerates the workspace in the background after it starts.
fn analyses_in_background(server: &str) -> bool {
    matches!(server, "pyright" | "basedpyright")
}

/// What [`settle`] learned before the question.
#[derive(Default)]
pub(crate) struct Settled {
    /// The server had analysed the file (or needs not).
    analysed: bool,
    /// tsserver's `projectInfo` for the file.
    ts_project: Option<Value>,
}

/// Before a cross-file question: tsserver is asked which project holds the file (which also
/// has it load that project: asked at once after opening the file, its references missed
/// the project's other files); a server that finds the workspace's files in the background
/// is given until it analysed `path` (at most [`SETTLE`], within `deadline`).
pub(crate) async fn settle(client: &Client, req: &QueryRequest, deadline: Instant) -> Settled {
    if !spans_files(req.kind) {
        return Settled {
            analysed: true,
            ts_project: None,
        };
    }
    Settled {
        analysed: analysed(client, &req.file, deadline).await,
        ts_project: match client.spec.name.as_str() {
            "typescript-language-server" => ts_project(client, &req.file, deadline).await,
            _ => None,
        },
    }
}

/// Whether a server that finds the workspace's files in the background analysed `path`:
/// its answer to a diagnostics pull, else its first push; rust-analyzer, once it has loaded
/// the workspace ([`loaded`]).
async fn analysed(client: &Client, path: &Path, deadline: Instant) -> bool {
    let until = deadline.min(Instant::now() + SETTLE);
    if reports_status(&client.spec.name) {
        return workspace_loaded(client, until).await;
    }
    if !analyses_in_background(&client.spec.name) {
        return true;
    }
    // A server that is asked for diagnostics answers once it analysed the file.
    let registered = {
        let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
        s.pull_registrations.values().next().cloned()
    };
    if let Some(identifier) = client.caps.pull.clone().or(registered) {
        let uri = path_to_uri(path);
        return crate::diagnose::pull(client, &uri, identifier, until)
            .await
            .is_ok();
    }
    let mut changed = client.changed.clone();
    loop {
        let pushed = client
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pushes
            .contains_key(path);
        if pushed {
            return true;
        }
        if tokio::time::timeout_at(until, changed.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            return false;
        }
    }
}

/// Whether `server` says when it has loaded the workspace (`experimental/serverStatus`'s
/// `quiescent`, and its progress): asked before, rust-analyzer answers references with
/// nothing, as if there were none.
fn reports_status(server: &str) -> bool {
    server == "rust-analyzer"
}

/// The token of rust-analyzer's cache priming (its progress titled "Indexing").
const CACHE_PRIMING: &str = "rustAnalyzer/cachePriming";

/// Whether rust-analyzer has loaded the workspace: it said it is quiescent, or it is priming
/// its caches (it starts that only once loaded) and loads nothing else (no other progress but
/// its cargo check, which answers do not wait for) — `quiescent` stays false until the
/// priming has ended.
fn loaded(s: &State) -> bool {
    s.quiescent == Some(true)
        || (s.progress_active.contains(CACHE_PRIMING)
            && s.progress_active
                .iter()
                .all(|t| t == CACHE_PRIMING || s.waited_active.contains_key(t)))
}

/// Until `until`, whether rust-analyzer has loaded the workspace ([`loaded`]).
async fn workspace_loaded(client: &Client, until: Instant) -> bool {
    let mut changed = client.changed.clone();
    loop {
        if loaded(&client.state.lock().unwrap_or_else(|e| e.into_inner())) {
            return true;
        }
        if tokio::time::timeout_at(until, changed.changed())
            .await
            .map_or(true, |r| r.is_err())
        {
            return false;
        }
    }
}

/// Why `client`'s answer to `req` may miss uses in files it has not opened; `None` when it
/// is the whole (as far as the plugin can tell).
pub(crate) fn partial(
    client: &Client,
    job: &Job,
    req: &QueryRequest,
    settled: &Settled,
) -> Option<String> {
    if !spans_files(req.kind) {
        return None;
    }
    let name = &client.spec.name;
    if !settled.analysed && reports_status(name) {
        return Some(format!(
            "{name} had not loaded the workspace yet when asked (not within {} s): \
             uses in files it has not loaded are missing; ask again",
            SETTLE.as_secs()
        ));
    }
    if !settled.analysed {
        return Some(format!(
            "{name} had not analysed {} yet when asked (no result for it within {} s): it may \
             not know every file of the workspace; ask again",
            rel(&req.file, &req.workspace),
            SETTLE.as_secs()
        ));
    }
    if let Some(why) = indexing(client) {
        return Some(why);
    }
    let open = client.docs.lock().unwrap_or_else(|e| e.into_inner()).len();
    match name.as_str() {
        "clangd" => clangd(req, job.trusted, open),
        "typescript-language-server" => typescript(settled.ts_project.as_ref()?, req),
        _ => None,
    }
}

/// The server says it is indexing.
fn indexing(client: &Client) -> Option<String> {
    let s = client.state.lock().unwrap_or_else(|e| e.into_inner());
    still_indexing(&s, &client.spec.name)
}

/// Why `server`, in state `s`, is still indexing (rust-analyzer's cache priming is no index:
/// see the module's comment).
fn still_indexing(s: &State, server: &str) -> Option<String> {
    let index = s
        .index_progress
        .iter()
        .filter(|(token, _)| token.as_str() != CACHE_PRIMING);
    let mut what: Vec<&str> = index.map(|(_, title)| title.as_str()).collect();
    if what.is_empty() && !s.indexing {
        return None;
    }
    what.sort_unstable();
    let what = match what.is_empty() {
        true => String::new(),
        false => format!(": {}", what.join(", ")),
    };
    Some(format!(
        "{server} is still indexing the workspace{what}; uses in files it has not indexed yet \
         are missing: ask again when it is done"
    ))
}

/// clangd knows only its opened files without a database that lists the project's files.
fn clangd(req: &QueryRequest, trusted: bool, open: usize) -> Option<String> {
    let file = rel(&req.file, &req.workspace);
    let opened =
        format!("it knows only the {open} files it has opened, so uses in other files are missing");
    match compile_db::find(&req.file, &req.workspace) {
        None => Some(format!(
            "clangd has no compile database for {file} (no compile_commands.json): {opened}"
        )),
        // Untrusted, the plugin hands clangd the units as a compile_commands.json.
        Some(db) if trusted && db.file_name().is_some_and(|n| n == "compile_flags.txt") => {
            Some(format!(
                "clangd reads {} (flags, no list of files) for {file}: {opened}",
                rel(&db, &req.workspace)
            ))
        }
        Some(_) => None,
    }
}

/// tsserver's `projectInfo` for `path`, with the project's file names.
async fn ts_project(client: &Client, path: &Path, deadline: Instant) -> Option<Value> {
    let params = json!({"command": crate::tsserver::COMMAND, "arguments": ["projectInfo",
        {"file": path_to_uri(path), "needFileNameList": true}]});
    let left = deadline.saturating_duration_since(Instant::now());
    let r = client
        .transport
        .request("workspace/executeCommand", params, left)
        .await
        .ok()?;
    r.get("body").cloned()
}

/// tsserver searches the projects it loaded: say when the file is in none (an inferred
/// project), or when the project leaves out TypeScript files under its folder.
fn typescript(body: &Value, req: &QueryRequest) -> Option<String> {
    let config = body.get("configFileName")?.as_str()?;
    let file = rel(&req.file, &req.workspace);
    let name = Path::new(config)
        .file_name()?
        .to_string_lossy()
        .into_owned();
    if !name.ends_with(".json") {
        return Some(format!(
            "{file} is in no tsconfig.json or jsconfig.json project (tsserver's inferred \
             project): tsserver knows only the files it has opened and what they import, so \
             uses elsewhere are missing"
        ));
    }
    let listed: std::collections::HashSet<PathBuf> = body
        .get("fileNames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(PathBuf::from)
        .collect();
    let dir = Path::new(config).parent()?;
    let left_out = left_out(dir, &listed);
    let first = left_out.first()?;
    Some(format!(
        "{} TypeScript files under {} are not in {} (e.g. {}): tsserver searches only the \
         projects it loaded, so uses there are missing",
        left_out.len(),
        rel(dir, &req.workspace),
        rel(Path::new(config), &req.workspace),
        rel(first, &req.workspace)
    ))
}

/// TypeScript sources under `dir` (not in `node_modules` or a dot folder, not `.d.ts`)
/// that `listed` lacks, in path order; at most [`MAX_WALK`] entries are looked at.
fn left_out(dir: &Path, listed: &std::collections::HashSet<PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    let mut seen = 0;
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK {
                break;
            }
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if !name.starts_with('.') && name != "node_modules" {
                    todo.push(e.path());
                }
                continue;
            }
            let ext = Path::new(&*name).extension().and_then(|x| x.to_str());
            let ts = ext.is_some_and(|x| TS_EXTENSIONS.contains(&x)) && !name.ends_with(".d.ts");
            if kind.is_file() && ts && !listed.contains(&e.path()) {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// `path` relative to `workspace` when inside it, for a message.
fn rel(path: &Path, workspace: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(r) if r.as_os_str().is_empty() => ".".into(),
        Ok(r) => r.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rust-analyzer's state with `quiescent` and these progresses active (the cargo check's
    /// waited for, as its spec says).
    fn state(quiescent: Option<bool>, active: &[&str]) -> State {
        let mut s = State {
            quiescent,
            ..State::default()
        };
        for token in active {
            s.progress_active.insert((*token).to_owned());
            if token.contains("flycheck") {
                s.waited_active.insert((*token).to_owned(), ());
            }
        }
        s
    }

    #[test]
    fn rust_analyzer_is_loaded_once_quiescent_or_only_priming_its_caches() {
        let flycheck = "rust-analyzer/flycheck/0";
        // Starting, and loading (cargo metadata, the crate graph, the files).
        assert!(!loaded(&state(None, &[])));
        assert!(!loaded(&state(Some(false), &[])));
        assert!(!loaded(&state(Some(false), &["rustAnalyzer/Fetching"])));
        assert!(!loaded(&state(
            Some(false),
            &["rustAnalyzer/Roots Scanned"]
        )));
        // A reload beside a priming restarted after its cancellation: not loaded.
        let reload = ["rustAnalyzer/Fetching", CACHE_PRIMING];
        assert!(!loaded(&state(Some(false), &reload)));
        // Loaded: priming its caches (with or without its cargo check), or quiescent.
        assert!(loaded(&state(Some(false), &[CACHE_PRIMING])));
        assert!(loaded(&state(Some(false), &[CACHE_PRIMING, flycheck])));
        assert!(loaded(&state(Some(true), &[])));
        assert!(loaded(&state(Some(true), &[flycheck])));
        // The cargo check alone, not quiescent: still loading between two steps.
        assert!(!loaded(&state(Some(false), &[flycheck])));
    }

    #[test]
    fn rust_analyzers_cache_priming_is_no_index_in_progress() {
        let mut s = state(Some(false), &[CACHE_PRIMING]);
        s.index_progress
            .insert(CACHE_PRIMING.into(), "Indexing (4/21 (core))".into());
        assert_eq!(still_indexing(&s, "rust-analyzer"), None);
        // clangd's background index is one.
        s.index_progress
            .insert("backgroundIndexProgress".into(), "indexing (1/77)".into());
        let why = still_indexing(&s, "clangd").unwrap_or_default();
        assert!(why.starts_with("clangd is still indexing the workspace: indexing (1/77);"));
    }
}
