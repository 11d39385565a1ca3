//! Where the pyright plugin's warm language server stands in for the lsp plugin's
//! (`CheckRequest::served`): its hints (severity 4, which [`crate::report::lsp_found`] keeps)
//! stay only in the files named there ([`hints_for`]), whose items are then that server's,
//! hints included; elsewhere the plugin's items are the command line's, which prints none.

use std::collections::HashSet;
use std::path::Path;

use openfiles_plugin_api::{CheckRequest, Severity};

use crate::report::Found;
use crate::Checker;

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

#[cfg(test)]
mod tests {
    use super::*;
    use openfiles_plugin_api::tools::Column;
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
