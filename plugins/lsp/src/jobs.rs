//! Which servers check which file: the (file, server) pairs of a check.
//!
//! A server is for a file by extension or exact file name; one that runs project code is
//! left out of an untrusted workspace, one that needs a project (ESLint) out of files under
//! none of its markers; of a group (the Python type checkers) one member per file. Each
//! pair gets its executable ([`config::Resolver`]), the gate's [`Program`] for the check's
//! scope and the spec as started there ([`config::for_untrusted`]); a server that cannot be
//! started becomes a note on the file.

use crate::config::{self, ServerSpec};
use crate::{Inner, SOURCE};
use openfiles_plugin_api::gate::{Program, Scope};
use openfiles_plugin_api::{Item, PluginError, Severity};
use std::path::{Path, PathBuf};

/// One (file, server) pair to check.
pub(crate) struct Job {
    pub(crate) file: usize,
    pub(crate) spec: ServerSpec,
    pub(crate) exe: PathBuf,
    /// `exe`, allowed by the gate for the check's workspace and trust.
    pub(crate) program: Program,
    pub(crate) root: PathBuf,
    pub(crate) workspace: PathBuf,
    pub(crate) trusted: bool,
}

/// Whether `spec` is for this file (by extension or exact file name).
fn handles(spec: &ServerSpec, ext: &str, name: &str) -> bool {
    (!ext.is_empty() && spec.extensions.iter().any(|e| e == ext))
        || spec.file_names.iter().any(|n| n == name)
}

/// Whether `spec` checks `file` of a check: it handles the file, runs no project code in an
/// untrusted workspace, and finds the project it needs.
fn applies(spec: &ServerSpec, file: &Path, workspace: &Path, trusted: bool) -> bool {
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    handles(spec, ext, name)
        && (trusted || !spec.runs_project_code)
        && (!spec.needs_project || in_project(spec, file, workspace))
}

/// Whether one of `spec`'s root markers is in a folder from `file`'s up to the workspace.
fn in_project(spec: &ServerSpec, file: &Path, workspace: &Path) -> bool {
    has_marker(&spec.root_markers, file, workspace)
}

fn has_marker(markers: &[String], file: &Path, workspace: &Path) -> bool {
    openfiles_plugin_api::markers::near(markers, file, workspace)
}

/// One server per group for a file: the first (in table order) whose `claims` the project
/// makes (`[tool.ty]` asks for ty), else the first found
/// ([`openfiles_plugin_api::markers::pick_one`], the pyright plugin's rule too). pyright,
/// basedpyright and ty would report the same type errors in different words.
fn pick_per_group(grouped: Vec<Job>, file: &Path, workspace: &Path) -> Vec<Job> {
    let mut groups: Vec<&Option<String>> = Vec::new();
    for j in &grouped {
        if !groups.contains(&&j.spec.group) {
            groups.push(&j.spec.group);
        }
    }
    let mut chosen: Vec<usize> = Vec::new();
    for g in groups {
        let members: Vec<usize> = (0..grouped.len())
            .filter(|&k| &grouped[k].spec.group == g)
            .collect();
        let pick = openfiles_plugin_api::markers::pick_one(&members, |&k| {
            let claims = &grouped[k].spec.claims;
            !claims.is_empty() && has_marker(claims, file, workspace)
        });
        chosen.extend(pick.map(|i| members[i]));
    }
    grouped
        .into_iter()
        .enumerate()
        .filter(|(i, _)| chosen.contains(i))
        .map(|(_, j)| j)
        .collect()
}

impl Inner {
    /// The (file, server) pairs of a check, and notes on files a server could not be started
    /// for (by file index).
    pub(crate) fn jobs(
        &self,
        workspace: &Path,
        files: &[PathBuf],
        trusted: bool,
    ) -> (Vec<Job>, Vec<(usize, Item)>) {
        let scope = Scope::workspace(workspace, trusted);
        let mut jobs = Vec::new();
        let mut notes = Vec::new();
        for (i, f) in files.iter().enumerate() {
            // Servers of a group (the Python type checkers) found for this file, in order.
            let mut grouped: Vec<Job> = Vec::new();
            let applies = |s: &&ServerSpec| applies(s, f, workspace, trusted);
            for spec in self.servers.iter().filter(applies) {
                match self.job(i, f, spec, workspace, &scope) {
                    None => {}
                    Some(Err(note)) => notes.push((i, note)),
                    Some(Ok(job)) if job.spec.group.is_some() => grouped.push(job),
                    Some(Ok(job)) => jobs.push(job),
                }
            }
            jobs.extend(pick_per_group(grouped, f, workspace));
        }
        (jobs, notes)
    }

    /// `spec`'s job for file `i` (`file`) when its executable is found, or the note saying
    /// why it cannot be started.
    fn job(
        &self,
        i: usize,
        file: &Path,
        spec: &ServerSpec,
        workspace: &Path,
        scope: &Scope,
    ) -> Option<Result<Job, Item>> {
        let root = config::project_root(spec, file, workspace);
        let exe = self.resolver.find(spec, &root, scope)?;
        let (spec, program) = match self.started_as(spec, &exe, file, scope) {
            Ok(s) => s,
            Err(why) => {
                let why = format!("{} not started: {why}", spec.name);
                tracing::info!(file = %file.display(), "{why}");
                return Some(Err(Item::note(Severity::Info, SOURCE, why)));
            }
        };
        // A server that finds each file's project itself is rooted at the workspace, as in
        // an editor window (and so takes the TypeScript the workspace resolves) — unless the
        // project brings its own server.
        let root = if spec.finds_projects && self.config.share_servers && !exe.starts_with(&root) {
            workspace.to_path_buf()
        } else {
            root
        };
        Some(Ok(Job {
            file: i,
            spec,
            exe,
            program,
            root,
            workspace: workspace.to_path_buf(),
            trusted: !scope.untrusted(),
        }))
    }

    /// `spec` as started for `scope` (see [`config::for_untrusted`]) and its program; for
    /// clangd in an untrusted workspace, the filtered database of `file` written first.
    fn started_as(
        &self,
        spec: &ServerSpec,
        exe: &Path,
        file: &Path,
        scope: &Scope,
    ) -> Result<(ServerSpec, Program), PluginError> {
        let program = Program::at(exe, scope, "language server")
            .map_err(|e| PluginError::Tool(e.to_string()))?;
        if !scope.untrusted() {
            return Ok((spec.clone(), program));
        }
        let workspace = scope.workspace_root().unwrap_or(Path::new("/"));
        let dir = if spec.filtered_compile_db {
            Some(self.clangd_dbs.prepare(workspace, file)?)
        } else {
            None
        };
        let spec = config::for_untrusted(spec, exe, dir.as_deref(), workspace)?;
        Ok((spec, program))
    }
}
