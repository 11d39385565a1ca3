//! The `nav` command of `openfiles/1` (issue 41): a code-navigation question about a
//! position (`path` + `line`/`column`, or `path` + a symbol name path such as
//! `Class/method`, resolved through the file's symbols) or a file, answered by the language
//! server a check of that file uses; and the answer, paths relative to the workspace (a file
//! outside it keeps its absolute path), each location with its line of code. Shared by
//! `openfiles nav` and the MCP tools, with the one short text both show ([`NavReply::render`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub use openfiles_plugin_api::query::{Location, QueryKind, Symbol};

/// Arguments of `nav`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Nav {
    pub kind: QueryKind,
    /// The file (absolute; the service confines it to its workspace).
    pub path: PathBuf,
    /// 1-based line and column (characters) of the position asked about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// Instead of a column (or a line): a symbol's name path in the file (`Class/method`,
    /// or a name alone), found among the file's symbols; with `line`, the one on that line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The search text of a workspace symbol search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// A rename's new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    /// Most locations or symbols in the answer, per page (default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Which page of a capped answer (1-based, `limit` per page; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// A location of an answer, with its line of code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavLocation {
    #[serde(flatten)]
    pub at: Location,
    /// The line's text (trimmed), when the file is in the workspace and readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// A caller (`from`) or callee (`to`) and where the calls are, each with its line of code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Symbol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Symbol>,
    pub locations: Vec<NavLocation>,
}

/// Reply to `nav`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NavReply {
    pub root: PathBuf,
    pub kind: QueryKind,
    /// The language server that answered; `None` when none could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The symbol a name path named (where the question was asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Symbol>,
    #[serde(default)]
    pub locations: Vec<NavLocation>,
    #[serde(default)]
    pub symbols: Vec<Symbol>,
    /// Incoming or outgoing calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<NavCall>,
    /// A rename's edits per file (`path` relative to the workspace, the `sha256` of the
    /// content they were made for), not applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edits: Vec<openfiles_plugin_api::FileEdits>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// How many the server gave; more than listed when `capped` or on a later page.
    #[serde(default)]
    pub total: usize,
    /// More follow this page: ask for `next_page`.
    #[serde(default)]
    pub capped: bool,
    /// How many come before this page.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: usize,
    /// The page to ask for the rest (when `capped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page: Option<usize>,
    /// Why the answer may be incomplete although not capped (the server knows only the
    /// files it has opened, or has not analysed the workspace yet); `None`: the server's
    /// whole answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    /// How long the server took to start for this question (0: it was running).
    #[serde(default)]
    pub started_ms: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl NavReply {
    /// The short text for a person or a model: locations grouped by file, each with its line
    /// of code; symbols by name path; the hover text; the notes; whether it was capped.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let by = self
            .server
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        if let Some(s) = &self.resolved {
            out.push_str(&format!(
                "{} {} at {}:{}:{}\n",
                s.kind,
                s.name_path(),
                s.path.display(),
                s.line,
                s.column
            ));
        }
        self.render_answer(&mut out, &by);
        if self.capped || self.offset > 0 {
            let shown = self
                .locations
                .len()
                .max(self.symbols.len())
                .max(self.calls.len());
            let (first, last) = (self.offset + 1, self.offset + shown);
            let range = match shown {
                0 => format!("none past {}", self.offset),
                _ => format!("{first}\u{2013}{last}"),
            };
            out.push_str(&format!("(showing {range} of {}", self.total));
            match self.next_page {
                Some(p) => out.push_str(&format!("; ask with page {p})\n")),
                None => out.push_str(")\n"),
            }
        }
        if let Some(why) = &self.partial {
            out.push_str(&format!("partial: {why}\n"));
        }
        if self.started_ms > 0 {
            out.push_str(&format!(
                "(the server started for this question: {} ms)\n",
                self.started_ms
            ));
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        out.trim_end().to_owned()
    }

    /// The answer proper (after the resolved symbol, before the notes).
    fn render_answer(&self, out: &mut String, by: &str) {
        match self.kind {
            QueryKind::Hover => match &self.text {
                Some(t) => out.push_str(&format!("{t}\n")),
                None => out.push_str(&format!("No hover information{by}.\n")),
            },
            QueryKind::DocumentSymbols | QueryKind::WorkspaceSymbols => {
                out.push_str(&format!("{} symbols{by}:\n", self.total));
                let mut files: BTreeMap<&PathBuf, Vec<&Symbol>> = BTreeMap::new();
                for s in &self.symbols {
                    files.entry(&s.path).or_default().push(s);
                }
                for (path, symbols) in files {
                    out.push_str(&format!("{}\n", path.display()));
                    for s in symbols {
                        let (kind, name) = (&s.kind, s.name_path());
                        out.push_str(&format!("  {}:{}  {kind} {name}\n", s.line, s.column));
                    }
                }
            }
            QueryKind::IncomingCalls | QueryKind::OutgoingCalls => self.render_calls(out, by),
            QueryKind::Rename => {
                let files = self.edits.len();
                out.push_str(&format!("{} edits in {files} files{by}:\n", self.total));
                for f in &self.edits {
                    out.push_str(&format!("{} (sha256 {})\n", f.path.display(), f.sha256));
                    for e in &f.edits {
                        let (l, c, el, ec) = (e.line, e.column, e.end_line, e.end_column);
                        out.push_str(&format!("  {l}:{c}-{el}:{ec}  {:?}\n", e.new_text));
                    }
                }
            }
            kind => {
                let what = match kind {
                    QueryKind::Definition => "definitions",
                    QueryKind::Implementation => "implementations",
                    _ => "references",
                };
                out.push_str(&format!("{} {what}{by}:\n", self.total));
                let mut files: BTreeMap<&PathBuf, Vec<&NavLocation>> = BTreeMap::new();
                for l in &self.locations {
                    files.entry(&l.at.path).or_default().push(l);
                }
                for (path, locations) in files {
                    out.push_str(&format!("{}\n", path.display()));
                    code_lines(out, locations);
                }
            }
        }
    }

    /// Callers or callees, each with the lines of its calls.
    fn render_calls(&self, out: &mut String, by: &str) {
        let what = if self.kind == QueryKind::IncomingCalls {
            "callers"
        } else {
            "callees"
        };
        out.push_str(&format!("{} {what}{by}:\n", self.total));
        for c in &self.calls {
            let Some(s) = c.from.as_ref().or(c.to.as_ref()) else {
                continue;
            };
            let at = format!("{}:{}:{}", s.path.display(), s.line, s.column);
            out.push_str(&format!("{} {} at {at}\n", s.kind, s.name));
            code_lines(out, c.locations.iter());
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `  line:column  code` per location.
fn code_lines<'a>(out: &mut String, locations: impl IntoIterator<Item = &'a NavLocation>) {
    for l in locations {
        let code = l.code.as_deref().unwrap_or("");
        out.push_str(&format!("  {}:{}  {code}\n", l.at.line, l.at.column));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_render_grouped_by_file_with_their_code() {
        let loc = |p: &str, line, code: &str| NavLocation {
            at: Location {
                path: p.into(),
                line,
                column: 5,
                end_line: line,
                end_column: 11,
            },
            code: Some(code.into()),
        };
        let reply = NavReply {
            root: "/w".into(),
            kind: QueryKind::References,
            server: Some("pyright".into()),
            resolved: None,
            locations: vec![loc("b.py", 3, "helper()"), loc("a.py", 7, "def helper():")],
            symbols: Vec::new(),
            calls: Vec::new(),
            edits: Vec::new(),
            text: None,
            total: 3,
            capped: true,
            offset: 0,
            next_page: Some(2),
            partial: None,
            started_ms: 0,
            notes: Vec::new(),
        };
        assert_eq!(
            reply.render(),
            "3 references (pyright):\na.py\n  7:5  def helper():\nb.py\n  3:5  helper()\n(showing 1\u{2013}2 of 3; ask with page 2)"
        );
        let last = NavReply {
            locations: vec![loc("c.py", 1, "helper()")],
            capped: false,
            offset: 2,
            next_page: None,
            partial: Some("clangd knows only the files it has opened".into()),
            ..reply.clone()
        };
        assert_eq!(
            last.render(),
            "3 references (pyright):\nc.py\n  1:5  helper()\n(showing 3\u{2013}3 of 3)\npartial: clangd knows only the files it has opened"
        );
        let json = serde_json::to_value(&reply).unwrap();
        assert_eq!(json["locations"][0]["endColumn"], 11);
        assert_eq!(json["locations"][0]["code"], "helper()");
    }
}
