//! The files a warm server holds open (`textDocument/didOpen`): the users of recent edits
//! ([`crate::early::users`]), so that its next re-analysis checks them first. pyright checks
//! a program's open files before the rest of it and publishes them before going on; an
//! edit's early answer waits for its users, so it no longer waits for every importer listed
//! before them (click's `core.py` after a change to `utils.py`: 0.5–0.9 s after the change
//! instead of 0.7–1.3 s; `scripts/pyright-ls-timeline.py --open`).
//!
//! A file is opened with the text the server was told (so opening re-checks nothing) and only
//! when the file on disk still holds it, before the change is notified; the check's wait
//! counts its publishes only from after the one its opening causes. A file held open that
//! changes is closed before the change is notified: pyright then reads it from disk again
//! and re-checks its importers, as for any watched change (a `didChange` would hold its
//! analysis back 250 ms as typing).
//! At most [`MAX_OPEN`], the least recently used closed first (an unchanged file's close
//! re-checks nothing).

use crate::early::Texts;
use crate::rpc::Conn;
use openfiles_plugin_api::uri::path_to_uri;
use serde_json::json;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The most files held open per server.
pub const MAX_OPEN: usize = 16;

/// The files a server holds open, the most recently used last.
#[derive(Debug, Default)]
pub struct Opened {
    files: VecDeque<PathBuf>,
}

impl Opened {
    /// Close those of `changed` held open (before their change is notified).
    pub fn close_changed(&mut self, conn: &Conn, changed: &[PathBuf]) -> std::io::Result<()> {
        let (closing, kept): (Vec<PathBuf>, Vec<PathBuf>) =
            self.files.drain(..).partition(|f| changed.contains(f));
        self.files = kept.into();
        closing.iter().try_for_each(|f| close(conn, f))
    }

    /// Of `users`, those not open yet whose file holds the text the server was told (at most
    /// [`MAX_OPEN`]), with that text: what [`Opened::open`] opens.
    pub fn to_open(
        &self,
        texts: &Texts,
        workspace: &Path,
        users: &[PathBuf],
    ) -> Vec<(PathBuf, String)> {
        let new = users.iter().filter(|f| !self.holds(f)).take(MAX_OPEN);
        new.filter_map(|f| Some((f.clone(), texts.told_as_on_disk(workspace, f)?)))
            .collect()
    }

    /// Open `new` (from [`Opened::to_open`]; `users` held open already count as used now),
    /// close the least recently used beyond [`MAX_OPEN`], and wait (up to `wait_ms`) for
    /// each file opened to be published once: pyright publishes a file it opens at its next
    /// pass, re-checked or not, and that publish must not pass for the re-check a later
    /// change asks for. The files opened whose publish did not come (a later publish of
    /// theirs proves nothing). Takes the connection's lock only (never with the texts').
    pub fn open(
        &mut self,
        conn: &Conn,
        users: &[PathBuf],
        new: Vec<(PathBuf, String)>,
        wait_ms: u64,
    ) -> std::io::Result<Vec<PathBuf>> {
        for f in users {
            if let Some(at) = self.files.iter().position(|o| o == f) {
                if let Some(again) = self.files.remove(at) {
                    self.files.push_back(again);
                }
            }
        }
        let mut fresh: Vec<(PathBuf, String, u64)> = Vec::new();
        for (f, text) in new {
            let uri = path_to_uri(&f);
            let published = conn.pushed().published.get(&uri).copied().unwrap_or(0);
            conn.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "python",
                                        "version": 1, "text": text}}),
            )?;
            self.files.push_back(f.clone());
            fresh.push((f, uri, published));
        }
        while self.files.len() > MAX_OPEN {
            if let Some(old) = self.files.pop_front() {
                close(conn, &old)?;
            }
        }
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let until = Instant::now() + Duration::from_millis(wait_ms);
        loop {
            let p = conn.wait(10);
            fresh.retain(|(_, uri, n)| p.published.get(uri).is_none_or(|m| m <= n));
            if fresh.is_empty() || p.closed || Instant::now() >= until {
                return Ok(fresh.into_iter().map(|(f, _, _)| f).collect());
            }
        }
    }

    /// Hold `files`, opened by the caller, as the most recently used (closing the least
    /// recently used beyond [`MAX_OPEN`]).
    pub fn hold(
        &mut self,
        conn: &Conn,
        files: impl IntoIterator<Item = PathBuf>,
    ) -> std::io::Result<()> {
        self.files.extend(files);
        while self.files.len() > MAX_OPEN {
            if let Some(old) = self.files.pop_front() {
                close(conn, &old)?;
            }
        }
        Ok(())
    }

    /// Whether `file` is held open.
    pub fn holds(&self, file: &Path) -> bool {
        self.files.iter().any(|f| f == file)
    }
}

fn close(conn: &Conn, file: &Path) -> std::io::Result<()> {
    conn.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": path_to_uri(file)}}),
    )
}
