//! The baselines the rides of a check answered (`server/ride.rs`): kept per check and
//! language server executable from the server's answer until the check's own answer takes
//! them as its files' baseline (`CheckResponse::baseline`), made as the check's items are.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use openfiles_plugin_api::gate::Scope;
use openfiles_plugin_api::{CheckRequest, FileResult};

use crate::report::{collect, under, Found};
use crate::served::hints_for;
use crate::{Checker, Run};

/// Per language server executable, the baseline a ride answered: its findings and the files
/// it checked.
type PerExe = HashMap<PathBuf, (Vec<Found>, Vec<PathBuf>)>;

/// Per check, what its rides answered.
#[derive(Default)]
pub struct RideBaselines(Mutex<HashMap<u64, PerExe>>);

impl RideBaselines {
    /// Keep what the ride of check `id` on the server `exe` answered: `found` over `files`.
    pub fn keep(&self, id: u64, exe: &Path, found: Vec<Found>, files: Vec<PathBuf>) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.entry(id)
            .or_default()
            .insert(exe.to_owned(), (found, files));
    }

    /// Check `id` failed: what its rides answered goes.
    pub fn forget(&self, id: u64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    /// `checker`'s baseline for its projects `groups` from the rides of `request`'s check
    /// (taken: asked once): every file a ride checked with the committed texts, as the
    /// check's own items are made (hints only where the server stands in for the lsp
    /// plugin's).
    pub fn take(
        &self,
        checker: Checker,
        groups: &[(Run, Vec<PathBuf>)],
        request: &CheckRequest,
        scope: &Scope,
    ) -> Vec<FileResult> {
        let stash: PerExe = {
            let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let Some(of_check) = all.get_mut(&request.id) else {
                return Vec::new();
            };
            let exes: HashSet<&PathBuf> = groups.iter().map(|((_, _, exe), _)| exe).collect();
            let ours = of_check.keys().filter(|e| exes.contains(e)).cloned();
            let ours: Vec<PathBuf> = ours.collect();
            let taken = ours
                .into_iter()
                .filter_map(|e| of_check.remove_entry(&e))
                .collect();
            if of_check.is_empty() {
                all.remove(&request.id);
            }
            taken
        };
        let workspace = scope.workspace_root().unwrap_or(&request.workspace);
        let mut out = Vec::new();
        for ((c, root, exe), _) in groups {
            let Some((found, files)) = stash.get(exe).filter(|_| *c == checker) else {
                continue;
            };
            let files: HashSet<&PathBuf> = files.iter().filter(|f| f.starts_with(root)).collect();
            let diags = hints_for(under(found, root), request, checker);
            let asked = |p: &Path| files.contains(&p.to_path_buf());
            let mut findings = collect(checker, root, workspace, diags, &asked);
            out.extend(files.into_iter().map(|path| {
                let mut items = findings.shared.clone();
                items.extend(findings.per_file.remove(path).unwrap_or_default());
                FileResult {
                    path: path.clone(),
                    items,
                }
            }));
        }
        out
    }
}
