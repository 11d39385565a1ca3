//! The per-field leniency of the Claws requests, as the editor extension's JavaScript reads
//! them: a value of the wrong type reads as absent (so the field's default applies), numbers
//! may come as strings.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::claws::Role;

/// An array of strings (other items skipped), else absent.
pub(super) fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(a) => Some(
            a.into_iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}

/// A string, or a number written out, else absent (terminal ids).
pub(super) fn id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// A role's string, else absent.
pub(super) fn role<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Role>, D::Error> {
    Ok(string(d)?.map(|s| Role::from(s.as_str())))
}

/// A string, else absent.
pub(super) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// A boolean, else absent.
pub(super) fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(d)?.as_bool())
}

/// A non-negative number (fractions truncated) or a string holding one, else absent.
pub(super) fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}
