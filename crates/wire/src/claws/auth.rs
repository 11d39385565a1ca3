//! claws/2 `hello` authentication, as both sides compute it: the token is the lowercase hex of
//! HMAC-SHA256 over `peerName:role:nonce:timestamp` keyed with the shared secret (the token
//! file's text, trimmed). The server additionally refuses reused nonces and stale timestamps.

use sha2::{Digest, Sha256};

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(k.map(|b| b ^ 0x36));
    inner.update(msg);
    let mut outer = Sha256::new();
    outer.update(k.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// Hex of bytes, lowercase.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The text a `hello` token signs.
pub fn hello_message(peer_name: &str, role: &str, nonce: &str, timestamp: u64) -> String {
    format!("{peer_name}:{role}:{nonce}:{timestamp}")
}

/// The `token` of a `hello` from `peer_name` in `role`, with `nonce` (single use) and
/// `timestamp` (the client's clock, ms since the epoch).
pub fn hello_token(
    secret: &str,
    peer_name: &str,
    role: &str,
    nonce: &str,
    timestamp: u64,
) -> String {
    let msg = hello_message(peer_name, role, nonce, timestamp);
    hex(&hmac_sha256(secret.trim().as_bytes(), msg.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
