//! Code-navigation questions a plugin may answer (issue 41): definition, references, hover,
//! a file's symbols and a workspace symbol search, asked of the same language server a check
//! of the file would use. The JSON shapes that cross the plugin boundary for
//! [`crate::Plugin::query`], positions as an [`crate::Item`]'s (1-based lines, columns in
//! characters), paths absolute.
//!
//! A plugin that does not answer (an older library, a source without a server) says so with
//! [`QueryAnswer::unsupported`]; the host then asks the next source that handles the file.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What is asked about a position or a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum QueryKind {
    /// `textDocument/definition`.
    Definition,
    /// `textDocument/references` (the declaration included).
    References,
    /// `textDocument/hover`.
    Hover,
    /// `textDocument/documentSymbol`: the file's outline.
    DocumentSymbols,
    /// `workspace/symbol` with [`QueryRequest::query`].
    WorkspaceSymbols,
    /// `textDocument/implementation`.
    Implementation,
    /// Who calls the function at the position (`callHierarchy/incomingCalls`).
    IncomingCalls,
    /// What the function at the position calls (`callHierarchy/outgoingCalls`).
    OutgoingCalls,
    /// Rename the symbol at the position to [`QueryRequest::new_name`]
    /// (`textDocument/rename`): the edits, never applied by the plugin.
    Rename,
}

/// One question about one file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryRequest {
    /// Unique per host process.
    #[serde(default)]
    pub id: u64,
    pub kind: QueryKind,
    /// The workspace root (absolute, canonical).
    pub workspace: PathBuf,
    /// The file asked about (absolute, canonical, inside `workspace`, never a sensitive file).
    pub file: PathBuf,
    /// 1-based line (position questions).
    #[serde(default)]
    pub line: u32,
    /// 1-based column in characters (position questions).
    #[serde(default)]
    pub column: u32,
    /// The search text of [`QueryKind::WorkspaceSymbols`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The new name of [`QueryKind::Rename`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    /// Most locations or symbols to answer with (0: the plugin's own cap).
    #[serde(default)]
    pub limit: usize,
    /// How many of the (sorted) locations, symbols or calls to skip first: a later page of
    /// a capped answer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: usize,
    /// Milliseconds the host waits for the answer.
    #[serde(default)]
    pub timeout_ms: u64,
    /// As [`crate::CheckRequest::trusted`]: nothing starts for a question that a check of
    /// this workspace would not start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trusted: bool,
}

/// A range in a file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    pub path: PathBuf,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// One symbol of a file's outline or of a workspace search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Symbol {
    pub name: String,
    /// The LSP symbol kind in words (`class`, `method`, `function`…).
    pub kind: String,
    pub path: PathBuf,
    /// Where the name is (its selection range's start).
    pub line: u32,
    pub column: u32,
    /// The name path of the enclosing symbols (`Class` for `Class/method`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
}

impl Symbol {
    /// `container/name`, or the name alone.
    pub fn name_path(&self) -> String {
        match &self.container {
            Some(c) if !c.is_empty() => format!("{c}/{}", self.name),
            _ => self.name.clone(),
        }
    }
}

/// One edge of a call hierarchy: the caller (`from`, incoming calls) or the callee (`to`,
/// outgoing calls), and where the calls are (in the caller's file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Symbol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Symbol>,
    pub locations: Vec<Location>,
}

/// The answer to one question.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryAnswer {
    /// The plugin does not answer this kind of question for this file: ask another source.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsupported: bool,
    /// The server that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Location>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<Symbol>,
    /// Incoming or outgoing calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<Call>,
    /// A rename's edits, per file, each for the content its `sha256` names (the same shape
    /// as a checker's fixes). None when the server proposed an edit outside the workspace
    /// (a note says which).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<crate::FileEdits>,
    /// Hover text (markdown or plain, as the server gave it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// How many locations or symbols the server gave (more than answered when capped).
    #[serde(default)]
    pub total: usize,
    /// More follow the ones answered (past the request's offset and limit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
    /// The offset the answer starts at (the request's).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: usize,
    /// Why the answer may be incomplete although not capped: the server knows only the files
    /// it has opened (clangd without a compile database, a file in no TypeScript project…),
    /// or has not analysed the workspace yet. `None`: the server's whole answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// Milliseconds spent waiting for the server to start (0 when it was running).
    #[serde(default)]
    pub started_ms: u64,
    /// Things the asker should know (a server not started in an untrusted workspace…).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl QueryAnswer {
    /// The answer of a plugin that does not answer questions.
    pub fn unsupported() -> QueryAnswer {
        QueryAnswer {
            unsupported: true,
            ..QueryAnswer::default()
        }
    }
}

/// The default cap on locations and symbols in one answer.
pub const DEFAULT_LIMIT: usize = 200;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The page of `items` a request asks for (`offset`, then at most `limit`, 0 meaning
/// [`DEFAULT_LIMIT`]): sets `answer`'s `total`, `capped` and `offset`.
pub fn page<T>(answer: &mut QueryAnswer, req: &QueryRequest, mut items: Vec<T>) -> Vec<T> {
    let limit = match req.limit {
        0 => DEFAULT_LIMIT,
        n => n,
    };
    answer.total = items.len();
    answer.offset = req.offset;
    answer.capped = items.len() > req.offset.saturating_add(limit);
    items.drain(..req.offset.min(items.len()));
    items.truncate(limit);
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_one_another_and_say_when_more_follow() {
        let req = |offset, limit| QueryRequest {
            id: 0,
            kind: QueryKind::References,
            workspace: "/w".into(),
            file: "/w/a".into(),
            line: 1,
            column: 1,
            query: None,
            new_name: None,
            limit,
            offset,
            timeout_ms: 0,
            trusted: false,
        };
        let mut a = QueryAnswer::default();
        let items: Vec<u32> = (0..450).collect();
        assert_eq!(page(&mut a, &req(0, 0), items.clone()).len(), DEFAULT_LIMIT);
        assert!(a.capped && a.total == 450 && a.offset == 0);
        assert_eq!(
            page(&mut a, &req(400, 200), items.clone()),
            (400..450).collect::<Vec<_>>()
        );
        assert!(!a.capped && a.offset == 400);
        assert!(page(&mut a, &req(600, 200), items).is_empty());
        assert!(!a.capped && a.total == 450);
    }
}
