//! Where the `[claws.auth]` secret lives, how it is made and how it is read. Secrets come
//! from the user, never from a workspace: a repository can commit `.claws/auth.token` (the
//! editor extension's default), and whoever reads the repository — another local user, or
//! anyone on the network with `host = "0.0.0.0"` — could then sign a `hello` with it.
//!
//! - The default home is the user's state folder, one secret per workspace:
//!   `<state>/claws/<folder name>-<16 hex digits of SHA-256 of the canonical root>/auth.token`
//!   (`<state>`: `openfiles_os::dirs::state_dir`, `~/.local/state/openfiles` by default).
//!   Per workspace rather than per user because the WebSocket listener is shared by every
//!   workspace (routed by path): a client handed one workspace's secret — a worker in a
//!   container, another machine — reaches that workspace's terminals only, and rotating one
//!   disturbs no other. The id is stable (SHA-256 of the path, not a process hash), so
//!   clients find it again: `openfiles claws token [--workspace DIR]` prints the path, and
//!   `openfiles claws` and `openfiles mcp` sign with it on their own.
//! - It is made when missing, by the server at start with auth on ([`ensure_default`]):
//!   32 random bytes as hex, a file of mode 0600 in folders of mode 0700 that are ours.
//! - `token_path` in the user's own config names another file: it must be absolute and lie
//!   outside every workspace (a workspace's `.openfiles/config.toml` cannot set it at all).
//! - Every read ([`read`]) is bounded, never follows a symlink in the last component, never
//!   blocks on a FIFO, and refuses a file that is not ours or that the group or others may
//!   read or write (as ssh does for private keys), or one that resolves inside a workspace.
//!   A refused secret refuses every `hello` (`auth:invalid`), never accepts one.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::ClawsAuthConfig;
use openfiles_wire::claws::auth::hello_token;
use openfiles_wire::claws::request::Hello;
use openfiles_wire::claws::Role;

/// The secret's file name in its folder.
pub const TOKEN_FILE: &str = "auth.token";
/// The extension's default, inside the workspace: never read, only named in warnings.
pub const WORKSPACE_TOKEN: &str = ".claws/auth.token";
/// Largest secret file read.
pub const MAX_SECRET_BYTES: u64 = 64 << 10;

/// Why a secret was not used.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "{} is inside the workspace {}: a repository can supply that file, so it is never \
         the secret; {}",
        path.display(),
        workspace.display(),
        WHERE
    )]
    InWorkspace { path: PathBuf, workspace: PathBuf },
    #[error("{}: a relative [claws.auth] token_path; {}", path.display(), WHERE)]
    Relative { path: PathBuf },
    #[error("{}: {why}; refused (a secret must be a regular file of yours, mode 0600)", path.display())]
    Unsafe { path: PathBuf, why: String },
    #[error("{}: empty or blank; an empty secret is no key", path.display())]
    Blank { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the secret must live, said in every refusal.
const WHERE: &str = "the [claws.auth] secret must live in your state folder (the default, \
                     made for you: `openfiles claws token` prints its path) or at an absolute \
                     path outside every workspace named by `token_path` in your own config.toml";

/// The stable name of a workspace's folder under `<state>/claws/`.
pub fn workspace_id(root: &Path) -> String {
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    format!("{name}-{hex}")
}

/// The default secret of the workspace at `root` (canonical), under `state_dir`.
pub fn default_token_path(state_dir: &Path, root: &Path) -> PathBuf {
    state_dir
        .join("claws")
        .join(workspace_id(root))
        .join(TOKEN_FILE)
}

/// The secret's file for the workspace at `root` (canonical): `token_path` from the user's
/// config when set, else the default in the user's state folder.
pub fn token_path(cfg: &ClawsAuthConfig, root: &Path) -> PathBuf {
    match &cfg.token_path {
        Some(p) => p.clone(),
        None => default_token_path(&openfiles_os::dirs::state_dir(), root),
    }
}

/// Make the default secret at `path` if it is missing: 32 random bytes as hex, mode 0600,
/// its folder and `<state>/claws` mode 0700 and ours. An existing file is left as it is
/// (read and judged by [`read`]).
pub fn ensure_default(path: &Path) -> Result<(), SecretError> {
    let io = |source| SecretError::Io {
        path: path.to_owned(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    if let Some(claws) = dir.parent() {
        openfiles_os::fsutil::ensure_private_dir(claws, 0o700).map_err(io)?;
    }
    openfiles_os::fsutil::ensure_private_dir(dir, 0o700).map_err(io)?;
    let mut bytes = [0u8; 32];
    // SAFETY: `bytes` is a writable buffer of 32 bytes, within getentropy's 256-byte limit.
    if unsafe { libc::getentropy(bytes.as_mut_ptr().cast(), bytes.len()) } != 0 {
        return Err(io(std::io::Error::last_os_error()));
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(mut f) => {
            f.write_all(format!("{hex}\n").as_bytes()).map_err(io)?;
            f.sync_all().map_err(io)?;
            tracing::info!(path = %path.display(), "[claws.auth] secret made");
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e)),
    }
}

/// Whether `path` lies in one of `workspaces` (canonical roots), as written or once its
/// folders' symlinks are resolved: the workspace it lies in.
fn inside<'a>(path: &Path, workspaces: &'a [PathBuf]) -> Option<&'a PathBuf> {
    let real = std::fs::canonicalize(path)
        .ok()
        .or_else(|| {
            let parent = std::fs::canonicalize(path.parent()?).ok()?;
            Some(parent.join(path.file_name()?))
        })
        .unwrap_or_else(|| path.to_owned());
    workspaces
        .iter()
        .find(|ws| path.starts_with(ws) || real.starts_with(ws))
}

/// Which file a read is for, and so how strict it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The `[claws.auth]` secret: ours, mode 0600 or stricter, never through a symlink.
    Token,
    /// The WebSocket's TLS key (`key_path`): ours or root's, no access for others and no
    /// group write (a group such as `ssl-cert` may read it); a symlink is followed
    /// (certificate tools link `live/` to `archive/`), its target judged.
    TlsKey,
    /// The certificate chain (`cert_path`): public, any owner; a symlink is followed.
    TlsCert,
}

/// The secret in `path`, trimmed, judged by this module's rules: absolute, outside every one
/// of `workspaces` (canonical roots), a regular file (no symlink, FIFO or device), ours, not
/// readable or writable by group or others, at most [`MAX_SECRET_BYTES`], not blank.
pub fn read(path: &Path, workspaces: &[PathBuf]) -> Result<Vec<u8>, SecretError> {
    let bytes = read_file(path, workspaces, Kind::Token, MAX_SECRET_BYTES)?;
    let unsafe_ = |why: String| SecretError::Unsafe {
        path: path.to_owned(),
        why,
    };
    // Trimmed as clients trim it (`auth::hello_token`).
    let text = std::str::from_utf8(&bytes).map_err(|_| unsafe_("not UTF-8 text".into()))?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(SecretError::Blank {
            path: path.to_owned(),
        });
    }
    Ok(secret.as_bytes().to_vec())
}

/// A file the user's config names (`kind`), at most `cap` bytes: absolute, outside every
/// one of `workspaces` (canonical roots; also once symlinks are resolved), a regular file
/// (the open never blocks on a FIFO), owned and moded as `kind` requires.
pub fn read_file(
    path: &Path,
    workspaces: &[PathBuf],
    kind: Kind,
    cap: u64,
) -> Result<Vec<u8>, SecretError> {
    if !path.is_absolute() {
        return Err(SecretError::Relative {
            path: path.to_owned(),
        });
    }
    if let Some(ws) = inside(path, workspaces) {
        return Err(SecretError::InWorkspace {
            path: path.to_owned(),
            workspace: ws.clone(),
        });
    }
    let unsafe_ = |why: String| SecretError::Unsafe {
        path: path.to_owned(),
        why,
    };
    let io = |source| SecretError::Io {
        path: path.to_owned(),
        source,
    };
    let nofollow = if kind == Kind::Token {
        libc::O_NOFOLLOW
    } else {
        0
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nofollow | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                unsafe_("a symlink (name the file itself)".into())
            } else {
                io(e)
            }
        })?;
    let meta = file.metadata().map_err(io)?;
    if let Some(why) = unsafe_metadata(&meta, kind) {
        return Err(unsafe_(why));
    }
    let too_large = || unsafe_(format!("larger than {cap} bytes"));
    if meta.len() > cap {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Why a file `kind` must not be read, from its metadata: not a regular file, someone
/// else's, or readable or writable by the group or others.
fn unsafe_metadata(meta: &std::fs::Metadata, kind: Kind) -> Option<String> {
    if !meta.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else {
            "a socket or other special file"
        };
        return Some(format!("{what}, not a regular file"));
    }
    let uid = nix::unistd::getuid().as_raw();
    let (owner_ok, mask) = match kind {
        Kind::Token => (meta.uid() == uid, 0o077),
        Kind::TlsKey => (meta.uid() == uid || meta.uid() == 0, 0o027),
        Kind::TlsCert => (true, 0),
    };
    if !owner_ok {
        return Some(format!(
            "owned by uid {}, not by you (uid {uid})",
            meta.uid()
        ));
    }
    (meta.mode() & mask != 0).then(|| {
        format!(
            "mode {:04o}: the group or others may read or write it",
            meta.mode() & 0o7777
        )
    })
}

/// The canonical folder of the workspace whose Claws socket is `sock`
/// (`<root>/.claws/claws.sock`).
pub fn root_of_socket(sock: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(sock.parent()?.parent()?).ok()
}

/// Sign `hello` for the workspace at `root` (canonical) with the secret the server reads
/// there (`auth`: the user's `[claws.auth]`), unless it carries a token already: a fresh
/// random nonce, the clock, and the HMAC. What clients (`openfiles claws`, `openfiles mcp`)
/// call before every `hello`; with auth off the server ignores the fields.
pub fn sign_hello(
    hello: &mut Hello,
    root: &Path,
    auth: &ClawsAuthConfig,
) -> Result<(), SecretError> {
    if hello.token.is_some() {
        return Ok(());
    }
    let path = token_path(auth, root);
    let secret = read(&path, &[root.to_owned()])?;
    let secret = String::from_utf8_lossy(&secret).into_owned();
    let mut b = [0u8; 16];
    // SAFETY: `b` is a writable buffer of 16 bytes, within getentropy's 256-byte limit.
    if unsafe { libc::getentropy(b.as_mut_ptr().cast(), b.len()) } != 0 {
        return Err(SecretError::Io {
            path,
            source: std::io::Error::last_os_error(),
        });
    }
    let nonce: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let ts = crate::now_ms();
    let role = hello.role.as_ref().map_or("undefined", Role::as_str);
    let peer = hello.peer_name.as_deref().unwrap_or("undefined");
    hello.token = Some(hello_token(&secret, peer, role, &nonce, ts));
    hello.nonce = Some(nonce);
    hello.timestamp = Some(ts);
    Ok(())
}

/// The warning for a workspace that carries the extension's `.claws/auth.token`: it is not
/// read (`None` when there is none).
pub fn workspace_token_warning(root: &Path, secret: &Path) -> Option<String> {
    let planted = root.join(WORKSPACE_TOKEN);
    std::fs::symlink_metadata(&planted).ok()?;
    Some(format!(
        "{} is not read: a repository can supply it, so it is never the [claws.auth] secret; \
         this workspace's secret is {} (clients: `openfiles claws token`)",
        planted.display(),
        secret.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write(p: &Path, text: &str, mode: u32) {
        std::fs::write(p, text).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_default_is_made_private_and_read_back() {
        let t = tempfile::tempdir().unwrap();
        let state = t.path().join("state");
        let root = Path::new("/home/me/my repo");
        let path = default_token_path(&state, root);
        assert!(path.starts_with(state.join("claws")));
        assert!(
            path.parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("my_repo-"),
            "{path:?}"
        );
        assert_eq!(path, default_token_path(&state, root), "stable");
        ensure_default(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(mode(&state.join("claws")), 0o700);
        let secret = read(&path, &[]).unwrap();
        assert_eq!(secret.len(), 64);
        // Made once: a second call keeps it.
        ensure_default(&path).unwrap();
        assert_eq!(read(&path, &[]).unwrap(), secret);
    }

    #[test]
    fn a_workspace_file_a_shared_file_a_link_and_a_relative_path_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let ws = base.join("repo");
        std::fs::create_dir_all(ws.join(".claws")).unwrap();
        let planted = ws.join(".claws/auth.token");
        write(&planted, "repo-secret", 0o600);
        let e = read(&planted, std::slice::from_ref(&ws)).unwrap_err();
        assert!(matches!(e, SecretError::InWorkspace { .. }), "{e}");
        assert!(e.to_string().contains("openfiles claws token"), "{e}");
        // Reached through a symlinked folder outside the workspace.
        std::os::unix::fs::symlink(ws.join(".claws"), base.join("via")).unwrap();
        let e = read(&base.join("via/auth.token"), std::slice::from_ref(&ws)).unwrap_err();
        assert!(matches!(e, SecretError::InWorkspace { .. }), "{e}");
        let own = base.join("own.token");
        write(&own, "s3cret\n", 0o644);
        let e = read(&own, &[]).unwrap_err();
        assert!(e.to_string().contains("mode 0644"), "{e}");
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(&own, &[]).unwrap(), b"s3cret");
        std::os::unix::fs::symlink(&own, base.join("link.token")).unwrap();
        let e = read(&base.join("link.token"), &[]).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        let e = read(Path::new(".claws/auth.token"), &[]).unwrap_err();
        assert!(matches!(e, SecretError::Relative { .. }), "{e}");
        write(&own, "  \n", 0o600);
        assert!(matches!(read(&own, &[]), Err(SecretError::Blank { .. })));
        if nix::unistd::getuid().is_root() {
            std::os::unix::fs::chown(&own, Some(65534), None).unwrap();
            let e = read(&own, &[]).unwrap_err();
            assert!(e.to_string().contains("owned by uid 65534"), "{e}");
        }
    }

    #[test]
    fn a_tls_key_is_private_and_neither_lies_in_a_workspace() {
        let t = tempfile::tempdir().unwrap();
        let base = t.path().canonicalize().unwrap();
        let ws = base.join("repo");
        std::fs::create_dir_all(&ws).unwrap();
        let key = base.join("k.pem");
        write(&key, "KEY", 0o644);
        let e = read_file(&key, &[], Kind::TlsKey, 100).unwrap_err();
        assert!(e.to_string().contains("mode 0644"), "{e}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(read_file(&key, &[], Kind::TlsKey, 100).unwrap(), b"KEY");
        // Certificate tools link `live/` to `archive/`: followed for TLS files.
        std::os::unix::fs::symlink(&key, base.join("live.pem")).unwrap();
        assert!(read_file(&base.join("live.pem"), &[], Kind::TlsKey, 100).is_ok());
        let cert = ws.join("c.pem");
        write(&cert, "CERT", 0o644);
        let e = read_file(&cert, std::slice::from_ref(&ws), Kind::TlsCert, 100).unwrap_err();
        assert!(matches!(e, SecretError::InWorkspace { .. }), "{e}");
        // A link outside every workspace that leads into one.
        std::os::unix::fs::symlink(&cert, base.join("c-link.pem")).unwrap();
        let e = read_file(
            &base.join("c-link.pem"),
            std::slice::from_ref(&ws),
            Kind::TlsCert,
            100,
        )
        .unwrap_err();
        assert!(matches!(e, SecretError::InWorkspace { .. }), "{e}");
        assert!(read_file(&cert, &[], Kind::TlsCert, 100).is_ok());
    }
}
