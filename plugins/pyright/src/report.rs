//! What a checker reported, as the plugin's findings: its command line's output
//! ([`cli_found`]), the language server's pushes in the command line's shape
//! ([`lsp_found`]), the diagnostics of the files a run was asked about placed per file —
//! each file placed once, however many diagnostics it has — or shared ([`collect`]), and
//! those under one project root ([`under`]).

use crate::{parse, server, ty, Checker, EXTENSIONS};
use openfiles_plugin_api::tools::{Collect, Column, Findings, ToolOutput};
use openfiles_plugin_api::{Item, PluginError, Severity};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The diagnostics `checker` printed at `root`, or why its run failed as a whole.
pub fn cli_found(
    checker: Checker,
    root: &Path,
    out: ToolOutput,
) -> Result<Vec<Found>, PluginError> {
    let ToolOutput {
        stdout,
        stderr,
        status,
    } = out;
    let failed = |why: String| {
        let text = if stderr.trim().is_empty() {
            &stdout
        } else {
            &stderr
        };
        let tail: Vec<&str> = text.lines().take(12).collect();
        PluginError::Tool(format!(
            "{} failed ({status}{}) in {}:\n{}",
            checker.name(),
            if why.is_empty() {
                String::new()
            } else {
                format!(", {why}")
            },
            root.display(),
            tail.join("\n")
        ))
    };
    // Exit 0: no error, 1: errors found; anything else is the checker failing.
    let exited_well = matches!(status.code(), Some(0 | 1));
    match checker {
        Checker::Ty => {
            let d = ty::parse(&stdout);
            if !exited_well && d.is_empty() {
                return Err(failed(String::new()));
            }
            Ok(d.into_iter()
                .map(|d| Found {
                    file: d.file,
                    line: d.line,
                    column: Column::Chars(d.column),
                    severity: d.severity,
                    rule: Some(d.rule),
                    message: d.message,
                })
                .collect())
        }
        _ => match parse::parse(&stdout) {
            Ok(d) if exited_well || !d.is_empty() => Ok(d
                .into_iter()
                .map(|d| Found {
                    file: d.file,
                    line: d.line + 1,
                    column: Column::Utf16(d.character + 1), // 0-based there
                    severity: d.severity,
                    rule: d.rule,
                    message: d.message,
                })
                .collect()),
            Ok(_) => Err(failed(String::new())),
            Err(e) => Err(failed(e.to_string())),
        },
    }
}

/// The language server's pushed diagnostics in the command line's shape, hints (severity 4:
/// unused names, unreachable code, which the command line does not print) included:
/// [`crate::served::hints_for`] keeps them only where the server stands in for the lsp
/// plugin's.
pub fn lsp_found(pushes: server::Pushes) -> Vec<Found> {
    let mut found = Vec::new();
    for (path, diags) in pushes {
        for d in diags {
            let severity = match d.get("severity").and_then(|s| s.as_u64()) {
                Some(2) => Severity::Warning,
                Some(3) => Severity::Info,
                Some(4) => Severity::Hint,
                _ => Severity::Error,
            };
            let at = |k: &str| {
                d.pointer(&format!("/range/start/{k}"))
                    .and_then(|v| v.as_u64())
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(0)
            };
            found.push(Found {
                file: Some(path.to_string_lossy().into_owned()),
                line: at("line") + 1,
                column: Column::Utf16(at("character") + 1),
                severity,
                rule: d.get("code").and_then(|c| c.as_str()).map(str::to_owned),
                message: d
                    .get("message")
                    .and_then(|m| m.as_str())
                    .unwrap_or("")
                    .to_owned(),
            });
        }
    }
    found
}

/// Where a reported file's diagnostics go (see [`collect`]).
enum Place {
    /// To every file of the run (a problem of no Python file).
    Shared,
    /// Nowhere (not asked for).
    Skip,
    /// To this file.
    File(PathBuf),
}

/// Where the diagnostics of `file` (relative to `root`, or absolute) go.
fn place(root: &Path, file: &str, asked: &dyn Fn(&Path) -> bool) -> Place {
    let p = root.join(file);
    let p = std::fs::canonicalize(&p).unwrap_or(p);
    let python = p
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e));
    if !python {
        // ty about its own configuration (`ty.toml`, `pyproject.toml`): the project's.
        Place::Shared
    } else if !asked(&p) {
        Place::Skip // another file of the project not asked for, or another project's
    } else {
        Place::File(p)
    }
}

/// `diags` (of `checker`, paths relative to `root`) as findings: those of the files `asked`
/// for per file, those of no Python file shared. Each file is placed once, however many
/// diagnostics it has (`asked` may choose its checker: a look at the disk).
pub fn collect(
    checker: Checker,
    root: &Path,
    workspace: &Path,
    diags: Vec<Found>,
    asked: &dyn Fn(&Path) -> bool,
) -> Findings {
    let mut found = Collect::new(workspace);
    let mut places: HashMap<String, Place> = HashMap::new();
    for d in diags {
        let item = |line: u32, column: u32| Item {
            introduced: None,
            fixes: Vec::new(),
            line,
            column,
            severity: d.severity,
            source: checker.source().into(),
            code: d.rule.clone(),
            message: d.message.clone(),
        };
        let Some(file) = &d.file else {
            found.shared(item(1, 1));
            continue;
        };
        let place = places
            .entry(file.clone())
            .or_insert_with(|| place(root, file, asked));
        match place {
            Place::Shared => found.shared(item(1, 1)),
            Place::Skip => {}
            Place::File(p) => {
                let column = found.column(p, d.line, d.column);
                found.add(p.clone(), item(d.line, column));
            }
        }
    }
    found.finish()
}

/// The diagnostics of `found` (the language server's: absolute paths) in files under `root`.
pub fn under(found: &[Found], root: &Path) -> Vec<Found> {
    found
        .iter()
        .filter(|f| {
            f.file
                .as_ref()
                .is_none_or(|p| Path::new(p).starts_with(root))
        })
        .cloned()
        .collect()
}

/// One diagnostic of either report, lines 1-based.
#[derive(Clone)]
pub struct Found {
    pub file: Option<String>,
    pub line: u32,
    pub column: Column,
    pub severity: Severity,
    pub rule: Option<String>,
    pub message: String,
}
