//! `file://` URIs of absolute paths and back, as language servers name documents: bytes
//! other than unreserved ones and `/` percent-encoded, so any Unix path (spaces, `#`, `%`,
//! non-UTF-8) round-trips. The one copy the lsp and pyright plugins use.

use std::path::{Path, PathBuf};

/// The `file://` URI of an absolute path.
pub fn path_to_uri(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("file://");
    for &b in p.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// The path of a `file://` URI (`file://localhost/` too; `None` for other schemes or bad
/// escapes).
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let b = rest.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_with_odd_characters() {
        let p = Path::new("/tmp/a b/ü#%.py");
        let u = path_to_uri(p);
        assert_eq!(u, "file:///tmp/a%20b/%C3%BC%23%25.py");
        assert_eq!(uri_to_path(&u).unwrap(), p);
        for p in ["/w/x%y.py", "/plain/m.py"] {
            assert_eq!(
                uri_to_path(&path_to_uri(Path::new(p))),
                Some(PathBuf::from(p))
            );
        }
        assert_eq!(
            uri_to_path("file:///tmp/a%3Ab").unwrap(),
            Path::new("/tmp/a:b")
        );
        assert_eq!(
            uri_to_path("file://localhost/tmp/x.py").unwrap(),
            Path::new("/tmp/x.py")
        );
        assert!(uri_to_path("untitled:x").is_none());
        assert!(uri_to_path("http://x").is_none());
        assert!(uri_to_path("file:///tmp/a%2").is_none(), "a cut escape");
    }
}
