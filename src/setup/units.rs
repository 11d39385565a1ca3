//! The unit files `openfiles service install` writes, rendered from the templates under
//! `packaging/` (compiled in, so the binary and the packaged files never disagree), and the
//! choice of the binary path those units run.
//!
//! Pure functions only: nothing here touches the filesystem except [`stable_exe`], which
//! reads symlinks to find the profile path a Nix-installed binary was started through.
//! The path matters because `systemctl enable` of a unit whose `ExecStart` is a resolved
//! `/nix/store/…` path keeps running that exact build until garbage collection deletes it;
//! a profile path (`~/.nix-profile/bin/openfiles`) follows upgrades.

use std::path::{Path, PathBuf};

/// The socket unit, verbatim from `packaging/systemd/openfiles.socket`.
pub const SOCKET_TEMPLATE: &str = include_str!("../../packaging/systemd/openfiles.socket");
/// The service unit template; `ExecStart` names [`TEMPLATE_EXE`].
pub const SERVICE_TEMPLATE: &str = include_str!("../../packaging/systemd/openfiles.service");
/// The LaunchAgent template with `@OPENFILES@`, `@SOCKET@` and `@LOG@` placeholders.
pub const PLIST_TEMPLATE: &str =
    include_str!("../../packaging/launchd/org.openfiles.openfiles.plist");

/// The binary path the packaged service unit names, replaced on install.
pub const TEMPLATE_EXE: &str = "/usr/bin/openfiles";
/// Unit names, and the LaunchAgent label (and plist file stem): the socket unit's and the
/// label are the ones a client looks for before it autostarts a service.
pub use crate::autostart::{LAUNCHD_LABEL, SOCKET_UNIT};
pub const SERVICE_UNIT: &str = "openfiles.service";
/// First line of every file `service install` writes; `uninstall` removes only files
/// that carry it.
pub const MARKER: &str = "Installed by `openfiles service install`";

/// Quote one word for a systemd `ExecStart=` line: `%` is doubled (specifier escape), `$`
/// too (variable expansion), and a word holding whitespace, quotes or backslashes is put in
/// double quotes with C-style escapes, as systemd.syntax(7) reads them.
pub fn systemd_quote(word: &str) -> String {
    quote(word, true)
}

/// Like [`systemd_quote`] for an `Environment=` assignment, where `$` is not expanded.
pub fn systemd_quote_env(word: &str) -> String {
    quote(word, false)
}

fn quote(word: &str, exec: bool) -> String {
    let escaped = word.replace('%', "%%");
    let needs_quotes = escaped.is_empty()
        || escaped
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | ';' | '$'));
    if !needs_quotes {
        return escaped;
    }
    let mut out = String::with_capacity(escaped.len() + 2);
    out.push('"');
    for c in escaped.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '$' if exec => out.push_str("$$"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The socket unit as installed: the template with the install marker on top.
pub fn render_socket() -> String {
    format!("# {MARKER}\n{SOCKET_TEMPLATE}")
}

/// The service unit as installed: `ExecStart` runs `exe`; `path`, when given, becomes the
/// service's `PATH` (the user manager's default `PATH` rarely holds the language servers a
/// user installed under `~/.local/bin`, npm or a Nix profile).
pub fn render_service(exe: &Path, path: Option<&str>) -> String {
    let mut out = format!("# {MARKER}\n");
    for line in SERVICE_TEMPLATE.lines() {
        if let Some(rest) = line.strip_prefix("ExecStart=") {
            let args = rest.strip_prefix(TEMPLATE_EXE).unwrap_or(rest);
            out.push_str("ExecStart=");
            out.push_str(&systemd_quote(&exe.to_string_lossy()));
            out.push_str(args);
            out.push('\n');
            if let Some(p) = path.filter(|p| !p.is_empty()) {
                out.push_str("Environment=");
                out.push_str(&systemd_quote_env(&format!("PATH={p}")));
                out.push('\n');
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Escape text for an XML string node.
fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The LaunchAgent plist: `exe serve`, the socket `Listeners` at `socket` (0600), logging to
/// `log`.
pub fn render_plist(exe: &Path, socket: &Path, log: &Path) -> String {
    let body = PLIST_TEMPLATE
        .replace("@OPENFILES@", &xml_escape(&exe.to_string_lossy()))
        .replace("@SOCKET@", &xml_escape(&socket.to_string_lossy()))
        .replace("@LOG@", &xml_escape(&log.to_string_lossy()));
    // The marker goes in a comment after the XML declaration (which must stay first).
    match body.split_once('\n') {
        Some((decl, rest)) => format!("{decl}\n<!-- {MARKER} -->\n{rest}"),
        None => body,
    }
}

/// The Nix store directory (`NIX_STORE_DIR`, as Nix itself reads it, else `/nix/store`).
pub fn nix_store_dir() -> PathBuf {
    std::env::var_os("NIX_STORE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/nix/store"))
}

/// Where Nix profiles put a user's binaries, most specific first.
pub fn profile_candidates(home: Option<&Path>, user: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(h) = home {
        out.push(h.join(".nix-profile/bin/openfiles"));
        let state = std::env::var_os("XDG_STATE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| h.join(".local/state"));
        out.push(state.join("nix/profile/bin/openfiles"));
    }
    if let Some(u) = user {
        out.push(PathBuf::from(format!(
            "/etc/profiles/per-user/{u}/bin/openfiles"
        )));
    }
    out.push(PathBuf::from("/run/current-system/sw/bin/openfiles"));
    out.push(PathBuf::from("/nix/var/nix/profiles/default/bin/openfiles"));
    out
}

/// The binary path a unit should run, and a warning when that path will not survive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExeChoice {
    pub path: PathBuf,
    pub warning: Option<String>,
}

/// Choose the stable path of the running binary `exe` (already canonical, as
/// `std::env::current_exe` gives it on Linux). Outside the Nix store that is `exe` itself.
/// Inside it, the first of `PATH`'s entries (outside the store) and then `candidates` that
/// resolves to the same file wins; with none, `exe` is kept with a warning.
pub fn stable_exe(
    exe: &Path,
    store: &Path,
    search_path: Option<&std::ffi::OsStr>,
    candidates: &[PathBuf],
) -> ExeChoice {
    let canonical = exe.canonicalize().unwrap_or_else(|_| exe.to_owned());
    let store = store.canonicalize().unwrap_or_else(|_| store.to_owned());
    if !canonical.starts_with(&store) {
        return ExeChoice {
            path: canonical,
            warning: None,
        };
    }
    let from_path = search_path
        .map(|p| {
            std::env::split_paths(p)
                .filter(|d| d.is_absolute() && !d.starts_with(&store))
                .map(|d| d.join("openfiles"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for candidate in from_path.iter().chain(candidates) {
        if candidate.canonicalize().ok().as_deref() == Some(canonical.as_path()) {
            return ExeChoice {
                path: candidate.clone(),
                warning: None,
            };
        }
    }
    ExeChoice {
        warning: Some(format!(
            "{} is in the Nix store and no profile links to it: the unit will stop working \
             once this build is garbage-collected (install with `nix profile install` and run \
             `openfiles service install` again from the profile)",
            canonical.display()
        )),
        path: canonical,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_leaves_plain_paths_alone_and_escapes_the_rest() {
        assert_eq!(systemd_quote("/usr/bin/openfiles"), "/usr/bin/openfiles");
        assert_eq!(systemd_quote("/a b/open%files"), "\"/a b/open%%files\"");
        assert_eq!(systemd_quote("PATH=/x\"y"), "\"PATH=/x\\\"y\"");
    }

    #[test]
    fn service_runs_the_given_binary_with_serve() {
        let unit = render_service(Path::new("/opt/of/bin/openfiles"), Some("/a:/b"));
        assert!(unit.starts_with(&format!("# {MARKER}\n")));
        assert!(
            unit.contains("\nExecStart=/opt/of/bin/openfiles serve\n"),
            "{unit}"
        );
        assert!(unit.contains("\nEnvironment=PATH=/a:/b\n"), "{unit}");
        assert!(unit.contains("\nType=notify\n"));
        assert!(unit.contains("\nAlso=openfiles.socket\n"));
        assert!(!unit.contains(TEMPLATE_EXE));
    }

    #[test]
    fn plist_keeps_the_xml_declaration_first_and_escapes_paths() {
        let p = render_plist(
            Path::new("/Users/a&b/bin/openfiles"),
            Path::new("/tmp/s.sock"),
            Path::new("/tmp/l.log"),
        );
        assert!(p.starts_with("<?xml"));
        assert!(p.contains("<string>/Users/a&amp;b/bin/openfiles</string>"));
        assert!(!p.contains('@'), "placeholder left: {p}");
    }

    #[test]
    fn store_binary_prefers_a_profile_link() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let bin = store.join("abc-openfiles/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("openfiles"), b"x").unwrap();
        let profile = dir.path().join("home/.nix-profile/bin");
        std::fs::create_dir_all(&profile).unwrap();
        std::os::unix::fs::symlink(bin.join("openfiles"), profile.join("openfiles")).unwrap();
        let exe = bin.join("openfiles");

        let cands = profile_candidates(Some(&dir.path().join("home")), None);
        let got = stable_exe(&exe, &store, None, &cands);
        assert_eq!(got.path, profile.join("openfiles"));
        assert!(got.warning.is_none());

        let got = stable_exe(&exe, &store, None, &[]);
        assert_eq!(got.path, exe.canonicalize().unwrap());
        assert!(got.warning.unwrap().contains("garbage-collected"));
    }

    #[test]
    fn binary_outside_the_store_is_used_as_is() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("openfiles");
        std::fs::write(&exe, b"x").unwrap();
        let got = stable_exe(&exe, Path::new("/nix/store"), None, &[]);
        assert_eq!(got.path, exe.canonicalize().unwrap());
        assert!(got.warning.is_none());
    }
}
