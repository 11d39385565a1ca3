//! `file://` URIs of absolute paths and back, as the warm server's documents are named: bytes
//! other than unreserved ones and `/` percent-encoded, so any Unix path (spaces, non-UTF-8)
//! round-trips.

use std::path::{Path, PathBuf};

/// The `file://` URI of an absolute path (bytes other than unreserved ones and `/`
/// percent-encoded).
pub fn uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// The path of a `file://` URI.
pub fn path_of(uri: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://")?.as_bytes();
    let mut out = Vec::with_capacity(rest.len());
    let mut i = 0;
    while i < rest.len() {
        if rest[i] == b'%' && i + 2 < rest.len() {
            let hex = std::str::from_utf8(&rest[i + 1..i + 3]).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(rest[i]);
            i += 1;
        }
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip() {
        for p in ["/tmp/a b/ü.py", "/w/x%y.py", "/plain/m.py"] {
            let u = uri(Path::new(p));
            assert!(u.starts_with("file:///"), "{u}");
            assert_eq!(path_of(&u), Some(PathBuf::from(p)));
        }
        assert_eq!(uri(Path::new("/a b")), "file:///a%20b");
        assert_eq!(path_of("http://x"), None);
    }
}
