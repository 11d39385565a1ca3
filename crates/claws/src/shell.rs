//! Which shell a terminal runs and how: the program (`shellPath`, else `$SHELL`, else bash,
//! else sh), its arguments with the shell integration injected for bash, zsh and fish, and
//! the environment (the service's, minus socket-activation and editor variables, plus
//! `TERM`, `CLAWS_*` and the request's `env`). The integration scripts are compiled in
//! (`crates/claws/shell-integration/`) and written under `.claws/shell/` when the server starts.
//!
//! Login shells: a shell is interactive, and a login shell where the user has a login
//! profile (the terminal's `HOME`, or zsh's `ZDOTDIR`): bash with `~/.bash_profile`,
//! `~/.bash_login` or `~/.profile` — bash ignores `--rcfile` as a login shell, so the
//! integration script reads `/etc/profile` and the first of those itself, as bash would
//! (`CLAWS_SI_LOGIN`; `shopt login_shell` stays off); zsh with `.zprofile` or `.zlogin` runs
//! with `-l` (the integration's `.zprofile` reads the user's). fish has no login-only files
//! (config.fish and conf.d always run; only `status is-login` differs), so fish always runs
//! with `-l`, the way a login terminal would start it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

const BASHRC: &str = include_str!("../shell-integration/bashrc");
const ZSHENV: &str = include_str!("../shell-integration/zshenv");
const ZSHRC: &str = include_str!("../shell-integration/zshrc");
const ZPROFILE: &str = include_str!("../shell-integration/zprofile");
const FISH: &str = include_str!("../shell-integration/claws.fish");

/// Shells that get integration marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bash,
    Zsh,
    Fish,
}

/// Write the scripts into `dir` (`.claws/shell`, created 0700, never through a symlink).
pub fn install_scripts(dir: &Path) -> io::Result<()> {
    openfiles_os::fsutil::ensure_private_dir(dir, 0o700)?;
    // Scratch files of shells from an earlier run (bash keeps `history 1` there).
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_name().to_string_lossy().starts_with(".hist.") {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let zdir = dir.join("zsh");
    openfiles_os::fsutil::ensure_own_dir(&zdir, 0o700)?;
    openfiles_os::fsutil::write_atomic(&dir.join("bashrc"), BASHRC.as_bytes(), 0o600)?;
    openfiles_os::fsutil::write_atomic(&dir.join("claws.fish"), FISH.as_bytes(), 0o600)?;
    openfiles_os::fsutil::write_atomic(&zdir.join(".zshenv"), ZSHENV.as_bytes(), 0o600)?;
    openfiles_os::fsutil::write_atomic(&zdir.join(".zshrc"), ZSHRC.as_bytes(), 0o600)?;
    openfiles_os::fsutil::write_atomic(&zdir.join(".zprofile"), ZPROFILE.as_bytes(), 0o600)?;
    Ok(())
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The shell to run when the request names none.
pub fn default_shell() -> PathBuf {
    if let Some(s) = std::env::var_os("SHELL").filter(|s| !s.is_empty()) {
        return PathBuf::from(s);
    }
    on_path("bash")
        .or_else(|| on_path("sh"))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

pub fn kind_of(program: &Path) -> Option<Kind> {
    match program.file_name()?.to_str()? {
        "bash" => Some(Kind::Bash),
        "zsh" => Some(Kind::Zsh),
        "fish" => Some(Kind::Fish),
        _ => None,
    }
}

/// Login profiles that make bash a login shell, in the order bash reads them (`$HOME`).
const BASH_PROFILES: [&str; 3] = [".bash_profile", ".bash_login", ".profile"];
/// Login profiles that make zsh a login shell (`$ZDOTDIR`, else `$HOME`).
const ZSH_PROFILES: [&str; 2] = [".zprofile", ".zlogin"];

fn has_profile(dir: Option<&String>, names: &[&str]) -> bool {
    dir.filter(|d| !d.is_empty())
        .is_some_and(|d| names.iter().any(|n| Path::new(d).join(n).is_file()))
}

/// Hand the nonce to the shell through a private file (0600, in the 0700 scripts folder,
/// named at random) that the integration reads and deletes before it runs anything else.
/// Not through the environment: `/proc/<shell>/environ` keeps the initial environment for
/// the shell's whole life, so any program it runs could read a nonce put there and forge
/// marks. The variable set here names the file, which is gone by the time a command runs.
fn nonce_file(
    scripts: &Path,
    nonce: &str,
    env: &mut BTreeMap<String, String>,
) -> std::io::Result<()> {
    let path = scripts.join(format!(".n-{}", unique_hex()));
    openfiles_os::fsutil::write_atomic(&path, nonce.as_bytes(), 0o600)?;
    env.insert(
        "CLAWS_SI_NONCE_FILE".into(),
        path.to_string_lossy().into_owned(),
    );
    Ok(())
}

/// The hang-up marker of a terminal whose integration got `env` (see `Terminal::hang_up`):
/// the nonce file's path plus `.hup`, in the private scripts folder.
pub fn hangup_marker(env: &BTreeMap<String, String>) -> Option<std::path::PathBuf> {
    env.get("CLAWS_SI_NONCE_FILE")
        .map(|f| std::path::PathBuf::from(format!("{f}.hup")))
}

/// Arguments for `program`, and extra environment for the integration.
pub fn args_for(
    program: &Path,
    kind: Option<Kind>,
    scripts: &Path,
    nonce: &str,
    env: &mut BTreeMap<String, String>,
) -> std::io::Result<Vec<String>> {
    if kind.is_some() {
        nonce_file(scripts, nonce, env)?;
    }
    Ok(match kind {
        Some(Kind::Bash) => {
            if has_profile(env.get("HOME"), &BASH_PROFILES) {
                env.insert("CLAWS_SI_LOGIN".into(), "1".into());
            }
            vec![
                "--rcfile".into(),
                scripts.join("bashrc").to_string_lossy().into_owned(),
                "-i".into(),
            ]
        }
        Some(Kind::Zsh) => {
            // The user's own ZDOTDIR (or HOME) as this terminal will see them.
            let user = env
                .get("ZDOTDIR")
                .filter(|v| !v.is_empty())
                .or_else(|| env.get("HOME"))
                .cloned()
                .unwrap_or_default();
            let login = has_profile(Some(&user), &ZSH_PROFILES);
            env.insert("CLAWS_USER_ZDOTDIR".into(), user);
            env.insert(
                "ZDOTDIR".into(),
                scripts.join("zsh").to_string_lossy().into_owned(),
            );
            if login {
                vec!["-i".into(), "-l".into()]
            } else {
                vec!["-i".into()]
            }
        }
        Some(Kind::Fish) => {
            env.insert(
                "CLAWS_SI_SCRIPT".into(),
                scripts.join("claws.fish").to_string_lossy().into_owned(),
            );
            vec![
                "-i".into(),
                "-l".into(),
                "--init-command".into(),
                "source \"$CLAWS_SI_SCRIPT\"".into(),
            ]
        }
        None => match program.file_name().and_then(|n| n.to_str()) {
            Some("sh" | "dash" | "ksh" | "mksh" | "tcsh" | "csh") => vec!["-i".into()],
            _ => Vec::new(),
        },
    })
}

/// Variables a terminal must not inherit from the service.
fn inherited(name: &str) -> bool {
    // The service-manager handshakes (openfiles_gate::child_env::PRIVATE_ENV) and editor leftovers.
    // OPENFILES_SOCKET stays: an agent in a terminal runs `openfiles hook`, which must reach
    // this service.
    const EXACT: &[&str] = &[
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
        "CLAWS_SI_NONCE",
        "CLAWS_SI_NONCE_FILE",
        "CLAWS_SI_SCRIPT",
        "CLAWS_SI_LOGIN",
        "CLAWS_USER_ZDOTDIR",
        "CLAWS_WRAPPED",
        "CLAWS_TERMINAL_ID",
        "INVOCATION_ID",
        "JOURNAL_STREAM",
    ];
    const PREFIX: &[&str] = &[
        "WATCHDOG_",
        "VSCODE_",
        "ELECTRON_",
        "npm_",
        "NPM_CONFIG_",
        "CURSOR_",
        "GIT_ASKPASS",
    ];
    !openfiles_gate::child_env::PRIVATE_ENV.contains(&name)
        && !EXACT.contains(&name)
        && !PREFIX.iter().any(|p| name.starts_with(p))
}

/// The environment of a new terminal, before the integration variables.
pub fn base_env(
    id: u64,
    wrapped: bool,
    extra: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| inherited(k))
        .collect();
    env.insert("TERM".into(), "xterm-256color".into());
    env.insert("CLAWS_TERMINAL_ID".into(), id.to_string());
    if wrapped {
        env.insert("CLAWS_WRAPPED".into(), "1".into());
    }
    for (k, v) in extra {
        env.insert(k.clone(), v.clone());
    }
    env
}

/// 16 hex digits from the operating system's random source (`getentropy`). An error when it
/// cannot give them: a shell-integration nonce is a secret (it tells our marks from a
/// program's forged ones), so it is never made up from the clock.
pub fn nonce() -> std::io::Result<String> {
    let mut b = [0u8; 8];
    // SAFETY: `b` is a writable buffer of `b.len()` bytes, within getentropy's 256-byte limit.
    let r = unsafe { libc::getentropy(b.as_mut_ptr().cast(), b.len()) };
    if r != 0 {
        return Err(std::io::Error::other(format!(
            "the system's random source failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// 16 hex digits for identifiers (peer ids, file names): random when the system gives it,
/// else from the clock and pid — unique, not secret.
pub fn unique_hex() -> String {
    nonce().unwrap_or_else(|_| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let v = (t as u64) ^ (u64::from(std::process::id()) << 32);
        format!("{v:016x}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_come_from_the_system_random_source() {
        let (a, b) = (nonce().unwrap(), nonce().unwrap());
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(unique_hex().len(), 16);
    }
}
