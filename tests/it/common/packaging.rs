//! Helpers shared by the packaging tests: running commands with their output in the failure
//! message, a throw-away Nix store (the sandbox has no /nix and runs as root without the
//! `nixbld` group), and a copy of the repository's tracked files (so flakes never copy
//! `target/` into the store).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const BIN: &str = env!("CARGO_BIN_EXE_openfiles");

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run `cmd`, returning its output; panics with both streams when it cannot start.
pub fn output(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// Run `cmd` and require success; returns stdout.
pub fn ok(cmd: &mut Command) -> String {
    let out = output(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Is `prog` on PATH?
pub fn have(prog: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
        .unwrap_or(false)
}

/// A `nix`/`nix-instantiate` command that works here: a private chroot store under `store`,
/// no build users, no substituters, flakes enabled.
pub fn nix(prog: &str, store: &Path) -> Command {
    let mut c = Command::new(prog);
    c.arg("--store")
        .arg(store)
        .args(["--option", "build-users-group", ""])
        .args(["--option", "substituters", ""]);
    if prog == "nix" {
        c.args(["--extra-experimental-features", "nix-command flakes"]);
    }
    c
}

/// Copy the files git tracks (plus new, not ignored ones) into `dest`.
pub fn copy_repo(dest: &Path) {
    let list = ok(Command::new("git").current_dir(repo()).args([
        "ls-files",
        "--cached",
        "--others",
        "--exclude-standard",
        "-z",
    ]));
    for rel in list.split('\0').filter(|s| !s.is_empty()) {
        let from = repo().join(rel);
        if !from.is_file() {
            continue; // deleted in the work tree
        }
        let to = dest.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
}

/// Every `.nix` file in the repository (flake.nix and nix/**).
pub fn nix_files() -> Vec<PathBuf> {
    let mut out = vec![repo().join("flake.nix")];
    let mut stack = vec![repo().join("nix")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "nix") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `systemd-analyze --user verify` on `units`; returns everything it printed.
pub fn verify_units(units: &[PathBuf]) -> (bool, String) {
    let rt = tempfile::tempdir().unwrap();
    let out = output(
        Command::new("systemd-analyze")
            .env("XDG_RUNTIME_DIR", rt.path())
            .args(["--user", "verify"])
            .args(units),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Parse a plist with Python's plistlib and return it as JSON.
pub fn plist_json(path: &Path) -> serde_json::Value {
    let text = ok(Command::new("python3").arg("-c").arg(
        "import json,plistlib,sys\nwith open(sys.argv[1],'rb') as f: print(json.dumps(plistlib.load(f)))",
    ).arg(path));
    serde_json::from_str(&text).unwrap()
}

/// `[Section] key=value` pairs of a unit file, comments and blank lines dropped.
pub fn ini_pairs(text: &str) -> std::collections::BTreeSet<(String, String, String)> {
    let mut section = String::new();
    let mut out = std::collections::BTreeSet::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_owned();
        } else if let Some((k, v)) = line.split_once('=') {
            out.insert((section.clone(), k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    out
}

/// `systemd-analyze --user verify` on units (name, text) that run programs from the Nix
/// store, as on a machine without `/bin/kill` (NixOS): the units are rewritten to a scratch
/// store where every `/nix/store/…` program an `Exec…=` line names exists (a stand-in
/// script), and, where a mount namespace can be made (`unshare -m`, as root), `/bin/kill` is
/// masked, so a unit that still names it fails verification.
pub fn verify_store_units(units: &[(&str, &str)]) -> (bool, String) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let store = format!("{}/nix/store/", tmp.path().display());
    let mut files = Vec::new();
    for (name, text) in units {
        let text = text.replace("/nix/store/", &store);
        for (_, key, value) in ini_pairs(&text) {
            let prog = value.split_whitespace().next().unwrap_or_default();
            let prog = prog.trim_start_matches(['-', '@', ':', '+', '!']);
            if key.starts_with("Exec") && prog.starts_with(&store) {
                std::fs::create_dir_all(Path::new(prog).parent().unwrap()).unwrap();
                std::fs::write(prog, "#!/bin/sh\n").unwrap();
                std::fs::set_permissions(prog, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        let file = tmp.path().join(name);
        std::fs::write(&file, text).unwrap();
        files.push(file);
    }
    let can_mask = output(Command::new("unshare").args(["-m", "true"]))
        .status
        .success();
    if !can_mask {
        eprintln!("no mount namespace here: verifying with the host's /bin/kill in place");
        return verify_units(&files);
    }
    let rt = tempfile::tempdir().unwrap();
    let out = output(
        Command::new("unshare")
            .env("XDG_RUNTIME_DIR", rt.path())
            .args(["-m", "sh", "-ec"])
            .arg(
                "for k in /bin/kill /usr/bin/kill; do \
                   if [ -e \"$k\" ]; then mount --bind /dev/null \"$k\"; fi; \
                 done; exec systemd-analyze --user verify \"$@\"",
            )
            .arg("sh")
            .args(&files),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}
