//! What is installed where: the systemd user units (searched where systemd looks for them:
//! the user's config folder, `/etc/systemd/user`, the data dirs, `/usr/lib/systemd/user`),
//! whether `sockets.target` wants the socket, whether the unit's `ExecStart` binary still
//! exists (a garbage-collected store path does not), and on macOS the LaunchAgent plist and
//! whether launchd has it loaded. Read-only; used by `service status` and `doctor`.

use std::path::{Path, PathBuf};

use super::places::{self, Platform};
use super::units::{LAUNCHD_LABEL, SERVICE_UNIT, SOCKET_UNIT};

/// What `service status` and `doctor` say about the installed units.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct UnitsReport {
    pub installed: bool,
    pub enabled: bool,
    pub lines: Vec<String>,
    pub problems: Vec<String>,
}

fn systemd_search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(d) = places::systemd_unit_dir() {
        dirs.push(d);
    }
    dirs.push(PathBuf::from("/etc/systemd/user"));
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        dirs.push(PathBuf::from(home).join(".local/share/systemd/user"));
    }
    let data =
        std::env::var("XDG_DATA_DIRS").unwrap_or_else(|_| "/usr/local/share:/usr/share".into());
    dirs.extend(
        data.split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join("systemd/user")),
    );
    dirs.push(PathBuf::from("/usr/lib/systemd/user"));
    dirs.push(PathBuf::from("/usr/local/lib/systemd/user"));
    dirs
}

/// The program an `ExecStart=` line runs (first word, unquoted, `-@:+!` prefixes dropped).
pub fn exec_start_program(unit: &str) -> Option<PathBuf> {
    let line = unit
        .lines()
        .find_map(|l| l.trim().strip_prefix("ExecStart="))?;
    let line = line.trim_start_matches(['-', '@', ':', '+', '!']);
    let word = if let Some(rest) = line.strip_prefix('"') {
        rest.split('"').next()?.replace("\\\\", "\\")
    } else {
        line.split_whitespace().next()?.to_owned()
    };
    Some(PathBuf::from(word.replace("%%", "%")))
}

/// Where the units (or the LaunchAgent) are, and whether they are enabled.
pub fn units_report(platform: Platform) -> UnitsReport {
    let mut r = UnitsReport::default();
    match platform {
        Platform::Systemd => {
            let dirs = systemd_search_dirs();
            let found = dirs
                .iter()
                .find(|d| d.join(SOCKET_UNIT).exists() && d.join(SERVICE_UNIT).exists());
            match found {
                Some(d) => {
                    r.installed = true;
                    r.lines.push(format!(
                        "units: {}/{{{SOCKET_UNIT},{SERVICE_UNIT}}}",
                        d.display()
                    ));
                    let text = std::fs::read_to_string(d.join(SERVICE_UNIT)).unwrap_or_default();
                    match exec_start_program(&text) {
                        Some(p) if p.exists() => {
                            r.lines.push(format!("runs: {}", p.display()))
                        }
                        Some(p) => r.problems.push(format!(
                            "{SERVICE_UNIT} runs {}, which does not exist (garbage-collected or moved?)",
                            p.display()
                        )),
                        None => r.problems.push(format!("{SERVICE_UNIT} has no ExecStart")),
                    }
                }
                None => r
                    .lines
                    .push(format!("units: not installed ({SOCKET_UNIT} not found)")),
            }
            r.enabled = dirs
                .iter()
                .any(|d| d.join("sockets.target.wants").join(SOCKET_UNIT).exists());
            r.lines.push(format!(
                "enabled: {}",
                if r.enabled {
                    "yes (sockets.target wants openfiles.socket)"
                } else {
                    "no"
                }
            ));
        }
        Platform::Launchd => {
            let mut cands = Vec::new();
            if let Ok(p) = places::launchd_plist_path() {
                cands.push(p);
            }
            cands.push(PathBuf::from(format!(
                "/Library/LaunchAgents/{LAUNCHD_LABEL}.plist"
            )));
            match cands.iter().find(|p| p.exists()) {
                Some(p) => {
                    r.installed = true;
                    r.lines.push(format!("agent: {}", p.display()));
                }
                None => r.lines.push("agent: not installed".into()),
            }
            let scope = openfiles_gate::Scope::user();
            let loaded = openfiles_gate::Program::find("launchctl", &scope, "service status")
                .ok()
                .and_then(|p| {
                    p.command([
                        "print",
                        &format!("gui/{}/{LAUNCHD_LABEL}", nix::unistd::getuid()),
                    ])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .ok()
                })
                .is_some_and(|s| s.success());
            r.enabled = loaded;
            r.lines
                .push(format!("loaded: {}", if loaded { "yes" } else { "no" }));
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_start_program_reads_plain_and_quoted_words() {
        assert_eq!(
            exec_start_program("[Service]\nExecStart=/usr/bin/openfiles serve\n"),
            Some(PathBuf::from("/usr/bin/openfiles"))
        );
        assert_eq!(
            exec_start_program("ExecStart=-\"/a b/open%%files\" serve"),
            Some(PathBuf::from("/a b/open%files"))
        );
    }
}
