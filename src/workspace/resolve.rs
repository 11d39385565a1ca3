//! Which workspace a path belongs to: the gate's rule (`openfiles_gate::resolve`), shared by
//! the service's registry, the in-process `check` and the clients; re-exported here for the
//! registry.

pub use openfiles_gate::resolve::*;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The policy of a workspace leaves the files of a repository nested in it to that
    /// repository (the watcher, the queue), which `workspace_for` resolves them to.
    #[test]
    fn the_policy_leaves_a_nested_repository_to_its_own_workspace() {
        let t = tempfile::tempdir().unwrap();
        let outer = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(outer.join(".git")).unwrap();
        std::fs::create_dir_all(outer.join("vendor/lib/.git")).unwrap();
        std::fs::create_dir_all(outer.join("vendor/lib/src")).unwrap();
        let nested = outer.join("vendor/lib");
        let roots: [PathBuf; 1] = [outer.clone()];
        assert_eq!(
            workspace_for(roots.iter(), &nested.join("src/a.py")).unwrap(),
            nested
        );
        let policy = crate::policy::Policy::new(&outer, &Default::default()).unwrap();
        std::fs::write(nested.join("src/a.py"), "x = 1\n").unwrap();
        assert!(matches!(
            policy.judge(&nested.join("src/a.py")),
            crate::policy::Verdict::Skip { .. }
        ));
    }
}
