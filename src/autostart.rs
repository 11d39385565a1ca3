//! Start on first use: where nothing socket-activates the service (containers, CI runners,
//! SSH sessions without a user manager), the clients that need it — `hook`, `mcp`,
//! `claws`, `review`, `add`, `trust`, … — start `openfiles serve --autostarted` themselves,
//! as watchman's client starts watchman and gpg starts gpg-agent. Owns the decision (may we
//! start one here?), the start (detached, exactly once) and the wait for its socket.
//!
//! - **When**: only when connecting finds no service (no socket file, or nobody listening)
//!   and nothing else would start one there: `OPENFILES_AUTOSTART=0` (also `false`, `no`,
//!   `off`) or `[service] autostart = false` turns it off, and it never happens where a
//!   socket unit of ours exists for that socket — a systemd user unit `openfiles.socket`
//!   whose `Listen=` is the socket (asked of the running user manager with `systemctl
//!   --user show`; when it cannot be asked, any installed `openfiles.socket` file counts) or
//!   an installed LaunchAgent `org.openfiles.openfiles` — since a second service there would
//!   fight systemd/launchd for the socket. Without a running user manager no unit can
//!   activate anything, so its unit files do not stop an autostart.
//! - **Exactly once**: the starter holds an exclusive `flock` on `autostart.lock` in the
//!   socket's folder (the private 0700 runtime folder, made when missing; an existing one
//!   that is a symlink, someone else's or open to others is refused, never re-moded) from
//!   its second connection attempt until the new service listens; twenty hooks at once
//!   start one service, the other nineteen find it listening once they get the lock. A start that did not listen in time leaves
//!   `autostart.failed`: for 30 s clients say so instead of each waiting again.
//! - **Detached**: `serve` runs in its own session (`setsid`, then a second fork so it is
//!   nobody's child: no zombie in a long-lived client such as `openfiles mcp`), in `/`, with
//!   stdin from `/dev/null` and stdout/stderr appended to `<state dir>/serve.log`, the file
//!   `openfiles logs` reads; the service variables of the client's own service manager
//!   (`NOTIFY_SOCKET`, `LISTEN_*`, `JOURNAL_STREAM`, …) are not passed on.
//! - **Idle exit**: an autostarted service ends itself after `[service] idle_exit_seconds`
//!   (the service's `idle.rs`); the next client starts it again and it restores its sessions.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use openfiles_wire::control::{Client, ClientError};

/// The variable that turns autostart off (`0`, `false`, `no`, `off`).
pub const ENV: &str = "OPENFILES_AUTOSTART";
/// The lock file, next to the control socket.
pub const LOCK_NAME: &str = "autostart.lock";
/// Left next to the lock when a started service did not listen in time.
pub const FAILED_NAME: &str = "autostart.failed";
/// How long after a failed start clients do not try again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long a client waits for the lock and for the service it started to listen.
pub const LISTEN_BUDGET: Duration = Duration::from_secs(5);
/// The systemd socket unit and the LaunchAgent label `service install` writes (named here
/// once: `setup::units`, which ranks above this module, takes them from here).
pub const SOCKET_UNIT: &str = "openfiles.socket";
pub const LAUNCHD_LABEL: &str = "org.openfiles.openfiles";
/// Bound on asking the user manager about our socket unit.
const SYSTEMCTL_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether a client may start the service for `socket`, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// `OPENFILES_AUTOSTART=0` or `[service] autostart = false`.
    Off(&'static str),
    /// A socket unit of ours exists for this socket (which one, as a phrase).
    SocketUnit(String),
}

/// What the environment says: `Some(false)` for an off value, `Some(true)` for any other
/// non-empty value, `None` when unset.
pub fn env_setting(value: Option<&std::ffi::OsStr>) -> Option<bool> {
    let v = value?.to_str().unwrap_or("1").trim().to_ascii_lowercase();
    if v.is_empty() {
        return None;
    }
    Some(!matches!(v.as_str(), "0" | "false" | "no" | "off"))
}

/// The config file this client was given (`--config`, `OPENFILES_CONFIG`), set once by the
/// command line before any command runs: [`decide`] reads its `[service] autostart`, and a
/// service started here is given it too (`--config`), so `openfiles --config X add DIR`
/// never starts a service that ignores X. A fact of the client process, like its arguments.
static CONFIG: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// Record the config file the command line named (absolute: the service starts in `/`).
/// Only the first call counts.
pub fn use_config(path: Option<&Path>) {
    let path = path.map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_owned()));
    let _ = CONFIG.set(path);
}

/// The config file [`use_config`] recorded, if any.
pub fn config() -> Option<&'static Path> {
    CONFIG.get().and_then(|c| c.as_deref())
}

/// Decide for `socket` in this process's environment.
pub fn decide(socket: &Path) -> Decision {
    match env_setting(std::env::var_os(ENV).as_deref()) {
        Some(false) => return Decision::Off("OPENFILES_AUTOSTART is off"),
        Some(true) => {}
        None => {
            // A config that does not load is the service's to report, when it starts.
            let on =
                crate::config::Config::load(config()).map_or(true, |(c, _)| c.service.autostart);
            if !on {
                return Decision::Off("[service] autostart = false");
            }
        }
    }
    match socket_unit(socket) {
        Some(unit) => Decision::SocketUnit(unit),
        None => Decision::Allowed,
    }
}

/// Whether a connection error means "nobody serves there" (not "refused" or "broken").
pub fn is_absent(e: &ClientError) -> bool {
    matches!(e, ClientError::Unreachable { source, .. }
        if matches!(source.kind(), io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused))
}

/// Connect to the control socket; when no service answers there and [`decide`] allows it,
/// start one (once, whoever else is trying) and connect to it. `timeout` is the client's
/// (see [`Client::connect`]). When the start fails, the error is the first one, saying why.
pub fn connect(socket: &Path, timeout: Option<Duration>) -> Result<Client, ClientError> {
    match Client::connect(socket, timeout) {
        Err(e) if is_absent(&e) => {}
        other => return other,
    }
    let failed = |why: String| {
        Err(ClientError::Unreachable {
            path: socket.to_owned(),
            source: io::Error::new(io::ErrorKind::NotFound, why),
        })
    };
    match decide(socket) {
        Decision::Allowed => {}
        Decision::Off(why) => return failed(format!("no service answers ({why})")),
        Decision::SocketUnit(unit) => {
            return failed(format!(
                "no service answers and {unit}: start it there (`systemctl --user start \
                 openfiles.socket`), not here"
            ))
        }
    }
    match ensure_running(socket, LISTEN_BUDGET) {
        Ok(_) => Client::connect(socket, timeout),
        Err(e) => failed(format!("no service answers, and starting one failed: {e}")),
    }
}

/// Why a start did not give a listening service.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot use the runtime folder {dir}: {source}")]
    Dir { dir: PathBuf, source: io::Error },
    #[error("cannot lock {path}: {source}")]
    Lock { path: PathBuf, source: io::Error },
    #[error("another client held {0} for too long")]
    LockTimeout(PathBuf),
    #[error("cannot run {exe}: {source}")]
    Spawn { exe: PathBuf, source: io::Error },
    #[error("the service did not listen within {0:?} (see `openfiles logs`)")]
    NotListening(Duration),
    #[error("a start failed less than {0:?} ago (see `openfiles logs`); not trying again yet")]
    RecentlyFailed(Duration),
}

/// Who made the service answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// This call started it.
    ByUs,
    /// It answered once we had the lock (another client started it, or it was there).
    Found,
}

/// Make sure a service listens at `socket`, starting one if none does, within `budget`.
/// Does not ask [`decide`]: the caller did.
pub fn ensure_running(socket: &Path, budget: Duration) -> Result<Started, StartError> {
    let deadline = Instant::now() + budget;
    let socket = std::path::absolute(socket).unwrap_or_else(|_| socket.to_owned());
    let dir = socket.parent().unwrap_or(Path::new("/")).to_owned();
    private_dir(&dir).map_err(|source| StartError::Dir {
        dir: dir.clone(),
        source,
    })?;
    let lock_path = dir.join(LOCK_NAME);
    let lock = lock(&lock_path, deadline)?;
    if listening(&socket) {
        return Ok(Started::Found);
    }
    // A start that just failed (a broken config, a binary that cannot run) is not retried by
    // every hook for a while: each would wait the whole budget for nothing.
    let failed = dir.join(FAILED_NAME);
    let recent = std::fs::symlink_metadata(&failed)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < RETRY_AFTER);
    if recent {
        return Err(StartError::RecentlyFailed(RETRY_AFTER));
    }
    spawn_service(&socket)?;
    let mut pause = Duration::from_millis(1);
    while Instant::now() < deadline {
        if listening(&socket) {
            let _ = std::fs::remove_file(&failed);
            drop(lock);
            return Ok(Started::ByUs);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&failed);
    let _ = OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&failed);
    Err(StartError::NotListening(budget))
}

/// The socket's folder, made 0700 when missing; an existing one must already be a private
/// folder of the user's (never re-moded here: an explicit `--socket /tmp/x.sock` must not
/// make a client chmod `/tmp`).
fn private_dir(dir: &Path) -> io::Result<()> {
    match crate::paths::dir_facts(dir) {
        None => openfiles_os::fsutil::ensure_private_dir(dir, 0o700),
        Some(f) if f.is_dir && f.uid == nix::unistd::getuid().as_raw() && f.mode & 0o077 == 0 => {
            Ok(())
        }
        Some(_) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "not a private (0700) folder of yours; not starting a service there",
        )),
    }
}

/// Something accepts connections at `socket` (a service, or a socket unit holding it).
fn listening(socket: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(socket).is_ok()
}

/// The exclusive lock on `path`, waited for until `deadline`; released when dropped.
fn lock(path: &Path, deadline: Instant) -> Result<File, StartError> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|source| StartError::Lock {
            path: path.to_owned(),
            source,
        })?;
    loop {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(file);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::WouldBlock && err.raw_os_error() != Some(libc::EINTR) {
            return Err(StartError::Lock {
                path: path.to_owned(),
                source: err,
            });
        }
        if Instant::now() >= deadline {
            return Err(StartError::LockTimeout(path.to_owned()));
        }
        std::thread::sleep(Duration::from_millis(3));
    }
}

/// Variables of the client's own service manager (beyond the handshakes no child of ours
/// inherits, `openfiles_gate::child_env::PRIVATE_ENV`) that must not reach the service.
const MANAGER_VARS: &[&str] = &["JOURNAL_STREAM", "INVOCATION_ID", ENV];

/// Start `openfiles --socket SOCKET [--config FILE] serve --autostarted`, detached, through
/// the gate (`Program::this_exe`: recorded like every program openfiles starts).
fn spawn_service(socket: &Path) -> Result<(), StartError> {
    let program = openfiles_gate::Program::this_exe("the service, started on first use").map_err(
        |source| StartError::Spawn {
            exe: PathBuf::from("openfiles"),
            source,
        },
    )?;
    let exe = program.path().to_owned();
    let log = log_file();
    use std::ffi::OsStr;
    let mut args: Vec<&OsStr> = vec![OsStr::new("--socket"), socket.as_os_str()];
    if let Some(config) = config() {
        args.extend([OsStr::new("--config"), config.as_os_str()]);
    }
    args.extend([OsStr::new("serve"), OsStr::new("--autostarted")]);
    let mut cmd = program.command(args);
    cmd.current_dir("/").stdin(Stdio::null());
    match log {
        Some(f) => {
            let err = f.try_clone().map_or(Stdio::null(), Stdio::from);
            cmd.stdout(Stdio::from(f)).stderr(err);
        }
        None => {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
    }
    for var in MANAGER_VARS {
        cmd.env_remove(var);
    }
    // SAFETY: only async-signal-safe calls (setsid, fork, _exit) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(io::Error::last_os_error()),
                // The grandchild execs the service; it is nobody's child once we exit.
                0 => Ok(()),
                _ => libc::_exit(0),
            }
        });
    }
    let mut child = cmd.spawn().map_err(|source| StartError::Spawn {
        exe: exe.clone(),
        source,
    })?;
    // The intermediate process exits at once.
    let _ = child.wait();
    Ok(())
}

/// `<state dir>/serve.log`, opened for appending (the private state folder made if
/// missing); `None` when it cannot be.
fn log_file() -> Option<File> {
    let dir = crate::paths::state_dir();
    openfiles_os::fsutil::ensure_private_dir(&dir, 0o700).ok()?;
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.join(crate::paths::SERVICE_LOG))
        .ok()
}

/// A socket unit of ours for `socket`, as a phrase, if one exists (see the module doc).
pub fn socket_unit(socket: &Path) -> Option<String> {
    if cfg!(target_os = "macos") {
        return launch_agent();
    }
    let runtime = user_manager()?;
    match systemctl_listen(&runtime) {
        Some(None) => None,
        Some(Some(listens)) => listens
            .iter()
            .any(|l| same_path(l, socket))
            .then(|| "the systemd user unit openfiles.socket is set to listen there".to_owned()),
        // The manager runs but cannot be asked: an installed unit file counts.
        None => unit_files()
            .into_iter()
            .find(|f| f.exists())
            .map(|f| format!("a systemd user unit is installed ({})", f.display())),
    }
}

/// The runtime folder of a running systemd user manager of ours (`$XDG_RUNTIME_DIR`, else
/// `/run/user/<uid>`), when its private socket is there.
pub fn user_manager() -> Option<PathBuf> {
    let uid = nix::unistd::getuid().as_raw();
    let mut places: Vec<PathBuf> = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    places.push(PathBuf::from(format!("/run/user/{uid}")));
    places.into_iter().find(|run| {
        std::fs::symlink_metadata(run.join("systemd/private"))
            .is_ok_and(|m| m.file_type().is_socket())
    })
}

/// `Listen=` paths of `openfiles.socket` as the user manager at `runtime` has it loaded:
/// `Some(None)` when it has no such unit, `None` when it could not be asked.
fn systemctl_listen(runtime: &Path) -> Option<Option<Vec<PathBuf>>> {
    let systemctl = openfiles_gate::Program::find(
        "systemctl",
        &openfiles_gate::Scope::user(),
        "asking the user manager about openfiles.socket",
    )
    .ok()?;
    let mut child = systemctl
        .command([
            "--user",
            "show",
            SOCKET_UNIT,
            "-p",
            "LoadState",
            "-p",
            "Listen",
        ])
        .env("XDG_RUNTIME_DIR", runtime)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + SYSTEMCTL_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse_show(&String::from_utf8_lossy(&out.stdout))
}

/// Read `systemctl show -p LoadState -p Listen` output (see `systemctl_listen`).
pub fn parse_show(text: &str) -> Option<Option<Vec<PathBuf>>> {
    let mut loaded = None;
    let mut listen = Vec::new();
    for line in text.lines() {
        if let Some(state) = line.strip_prefix("LoadState=") {
            loaded = Some(state.trim() == "loaded");
        } else if let Some(l) = line.strip_prefix("Listen=") {
            // `/run/user/1000/openfiles/openfiles.sock (Stream)`; several are space-separated.
            for part in l.split(')') {
                if let Some((path, _kind)) = part.trim().rsplit_once(" (") {
                    listen.push(PathBuf::from(path.trim()));
                }
            }
        }
    }
    match loaded? {
        true => Some(Some(listen)),
        false => Some(None),
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    // Compare the folders as they resolve (the socket itself may not exist).
    let canon = |p: &Path| {
        let dir = p.parent()?.canonicalize().ok()?;
        Some(dir.join(p.file_name()?))
    };
    matches!((canon(a), canon(b)), (Some(x), Some(y)) if x == y)
}

/// Where a user's `openfiles.socket` may be installed.
fn unit_files() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(c) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(c).join("systemd/user"));
    }
    if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        let h = PathBuf::from(h);
        dirs.push(h.join(".config/systemd/user"));
        dirs.push(h.join(".local/share/systemd/user"));
        dirs.push(h.join(".nix-profile/lib/systemd/user"));
        dirs.push(h.join(".nix-profile/share/systemd/user"));
    }
    for d in [
        "/etc/systemd/user",
        "/run/systemd/user",
        "/usr/local/lib/systemd/user",
        "/usr/lib/systemd/user",
        "/lib/systemd/user",
        "/etc/profiles/per-user",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter().map(|d| d.join(SOCKET_UNIT)).collect()
}

/// An installed LaunchAgent of ours, as a phrase.
fn launch_agent() -> Option<String> {
    let name = format!("{}.plist", LAUNCHD_LABEL);
    let mut places = vec![PathBuf::from("/Library/LaunchAgents").join(&name)];
    if let Some(h) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        places.insert(0, PathBuf::from(h).join("Library/LaunchAgents").join(&name));
    }
    places
        .into_iter()
        .find(|p| p.exists())
        .map(|p| format!("the LaunchAgent {} is installed", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_turns_it_off_with_the_usual_words() {
        use std::ffi::OsStr;
        for off in ["0", "false", "NO", "off", " Off "] {
            assert_eq!(env_setting(Some(OsStr::new(off))), Some(false), "{off}");
        }
        for on in ["1", "yes", "true"] {
            assert_eq!(env_setting(Some(OsStr::new(on))), Some(true), "{on}");
        }
        assert_eq!(env_setting(Some(OsStr::new(""))), None);
        assert_eq!(env_setting(None), None);
    }

    #[test]
    fn systemctl_show_gives_the_listen_paths_of_a_loaded_unit_only() {
        let loaded = "LoadState=loaded\nListen=/run/user/1000/openfiles/openfiles.sock (Stream)\n";
        assert_eq!(
            parse_show(loaded),
            Some(Some(vec![PathBuf::from(
                "/run/user/1000/openfiles/openfiles.sock"
            )]))
        );
        let two = "Listen=/a b/x.sock (Stream) /c/y.sock (Datagram)\nLoadState=loaded\n";
        assert_eq!(
            parse_show(two),
            Some(Some(vec![
                PathBuf::from("/a b/x.sock"),
                PathBuf::from("/c/y.sock")
            ]))
        );
        assert_eq!(parse_show("LoadState=not-found\nListen=\n"), Some(None));
        assert_eq!(parse_show("garbage"), None);
    }
}
