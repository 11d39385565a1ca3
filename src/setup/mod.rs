//! Setting openfiles up on a machine without a Nix module: `openfiles service` writes and
//! removes the systemd user units or the launchd agent ([`service`], rendered by [`units`]
//! from the templates in `packaging/`), and `openfiles doctor` ([`doctor`], using the
//! read-only probes in [`probe`]) reports what works and what to fix.

pub mod doctor;
pub mod probe;
pub mod service;
pub mod units;
