//! The pyright plugin's warm language server's diagnostics as the plugin's findings: its
//! pushes read as the command line's report ([`lsp_found`]), cut to a project's files
//! ([`under`]), and its hints (severity 4) kept only in the files the plugin stands in for the
//! lsp plugin's server on ([`hints_for`], `CheckRequest::served`): there the plugin's items
//! are that server's, hints included; elsewhere the command line's, which prints none.

use std::collections::HashSet;
use std::path::Path;

use openfiles_plugin_api::tools::Column;
use openfiles_plugin_api::{CheckRequest, Severity};

use crate::{server, Checker, Found};

/// The language server's pushed diagnostics, hints (severity 4: unused names, unreachable
/// code, which the command line does not print) included; [`hints_for`] keeps those of the
/// files it stands in for the lsp plugin's server on.
pub(crate) fn lsp_found(pushes: server::Pushes) -> Vec<Found> {
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

/// The warm server's diagnostics as the command line's — no hints —, except in the files the
/// request says this plugin stands in for `checker`'s per-file language server on
/// ([`CheckRequest::served`]): there every item that server would give, hints included.
pub(crate) fn hints_for(found: Vec<Found>, request: &CheckRequest, checker: Checker) -> Vec<Found> {
    let ours: HashSet<&Path> = request
        .served
        .iter()
        .filter(|(_, names)| request.trusted && names.iter().any(|n| n == checker.name()))
        .map(|(file, _)| file.as_path())
        .collect();
    found
        .into_iter()
        .filter(|f| {
            f.severity != Severity::Hint
                || f.file.as_deref().is_some_and(|p| {
                    let p = Path::new(p);
                    ours.contains(p)
                        || std::fs::canonicalize(p).is_ok_and(|c| ours.contains(c.as_path()))
                })
        })
        .collect()
}

/// The diagnostics of `found` (the language server's: absolute paths) in files under `root`.
pub(crate) fn under(found: &[Found], root: &Path) -> Vec<Found> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn the_servers_hints_are_kept_only_where_it_stands_in_for_the_language_server() {
        let found = |file: &str, severity| Found {
            file: Some(file.into()),
            line: 1,
            column: Column::Utf16(1),
            severity,
            rule: None,
            message: "m".into(),
        };
        let all = vec![
            found("/w/a.py", Severity::Hint),
            found("/w/a.py", Severity::Error),
            found("/w/b.py", Severity::Hint),
            found("/w/b.py", Severity::Error),
        ];
        let kept = |request: &CheckRequest, checker| -> Vec<(String, Severity)> {
            hints_for(all.clone(), request, checker)
                .into_iter()
                .map(|f| (f.file.unwrap_or_default(), f.severity))
                .collect()
        };
        let mut request = CheckRequest {
            trusted: true,
            served: [(PathBuf::from("/w/a.py"), vec!["pyright".to_owned()])].into(),
            ..Default::default()
        };
        let errors_and_a = vec![
            ("/w/a.py".to_owned(), Severity::Hint),
            ("/w/a.py".to_owned(), Severity::Error),
            ("/w/b.py".to_owned(), Severity::Error),
        ];
        assert_eq!(kept(&request, Checker::Pyright), errors_and_a);
        // Another checker's server, or an untrusted request: the command line's items.
        let errors = vec![
            ("/w/a.py".to_owned(), Severity::Error),
            ("/w/b.py".to_owned(), Severity::Error),
        ];
        assert_eq!(kept(&request, Checker::Basedpyright), errors);
        request.trusted = false;
        assert_eq!(kept(&request, Checker::Pyright), errors);
    }
}
