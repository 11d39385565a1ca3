//! The one-shot `clientVersion` drift warning of one Claws server: a client a minor release
//! or more behind [`COMPATIBLE_EXTENSION_VERSION`] was written against an older protocol
//! text, and the spec asks the server to say so once.

use std::sync::atomic::{AtomicBool, Ordering};

use openfiles_wire::claws::{minor_behind, COMPATIBLE_EXTENSION_VERSION};

/// The one-shot `clientVersion` drift warning of one server.
#[derive(Default)]
pub struct DriftWarning {
    warned: AtomicBool,
}

impl DriftWarning {
    /// Check a request's `clientVersion`; logs a warning the first time a client is behind.
    /// Returns whether this call warned. Malformed versions are ignored (debug log).
    pub fn check(&self, client_name: Option<&str>, version: &str) -> bool {
        if self.warned.load(Ordering::Relaxed) {
            return false;
        }
        match minor_behind(version, COMPATIBLE_EXTENSION_VERSION) {
            None => {
                tracing::debug!(
                    client_version = version,
                    "clientVersion is not SemVer; ignored"
                );
                false
            }
            Some(false) => false,
            Some(true) => {
                if self.warned.swap(true, Ordering::Relaxed) {
                    return false;
                }
                tracing::warn!(
                    client = client_name.unwrap_or("unnamed"),
                    client_version = version,
                    server_compatible_with = COMPATIBLE_EXTENSION_VERSION,
                    "Claws client is at least one minor release behind the protocol this \
                     server implements; update the client (warned once per server)"
                );
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_warns_once() {
        let d = DriftWarning::default();
        assert!(!d.check(None, "not-a-version"));
        assert!(!d.check(None, COMPATIBLE_EXTENSION_VERSION));
        assert!(d.check(Some("claws-mcp"), "0.4.0"));
        assert!(!d.check(Some("claws-mcp"), "0.4.0"));
        assert!(!d.check(Some("other"), "0.1.0"));
    }
}
