//! Adding our hook entries to an agent's JSON configuration and taking them out again,
//! without disturbing anything else: other keys keep their values and order
//! (serde_json's `preserve_order`), other hooks stay where they are, and only entries
//! whose command carries [`MARKER`] are ever removed. Pure: documents in, documents out.

use serde_json::{Map, Value};

use super::agents::{JsonHook, MARKER};

/// Why a configuration cannot be changed safely.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MergeError {
    #[error("the file is not a JSON object")]
    NotAnObject,
    #[error("`{0}` is not a JSON object")]
    NotObject(String),
    #[error("`{0}` is not a JSON array")]
    NotArray(String),
}

/// Make `doc` hold exactly our `hooks` (added, or replaced when they differ) and
/// `version` when it has none. Returns whether anything changed.
pub fn install(
    doc: &mut Value,
    hooks: &[JsonHook],
    version: Option<u64>,
) -> Result<bool, MergeError> {
    let Value::Object(root) = doc else {
        return Err(MergeError::NotAnObject);
    };
    let mut changed = false;
    if let Some(v) = version {
        if !root.contains_key("version") {
            root.insert("version".into(), Value::from(v));
            changed = true;
        }
    }
    let table = root.entry("hooks").or_insert_with(|| {
        changed = true;
        Value::Object(Map::new())
    });
    let Value::Object(table) = table else {
        return Err(MergeError::NotObject("hooks".into()));
    };
    for hook in hooks {
        let list = table.entry(hook.event).or_insert_with(|| {
            changed = true;
            Value::Array(Vec::new())
        });
        let Value::Array(list) = list else {
            return Err(MergeError::NotArray(format!("hooks.{}", hook.event)));
        };
        if list.contains(&hook.entry) && count_ours(list) == 1 {
            continue;
        }
        strip(list);
        list.push(hook.entry.clone());
        changed = true;
    }
    Ok(changed)
}

/// Remove every entry of ours from `doc`'s `hooks`, then what that left empty (a group
/// with no hooks, an event with no entries, an empty `hooks`). Returns whether anything
/// changed. A document left with nothing but `version` is reported by [`is_empty`].
pub fn uninstall(doc: &mut Value) -> Result<bool, MergeError> {
    let Value::Object(root) = doc else {
        return Err(MergeError::NotAnObject);
    };
    let Some(table) = root.get_mut("hooks") else {
        return Ok(false);
    };
    let Value::Object(table) = table else {
        return Ok(false);
    };
    let mut changed = false;
    let events: Vec<String> = table.keys().cloned().collect();
    for event in events {
        if let Some(Value::Array(list)) = table.get_mut(&event) {
            if strip(list) {
                changed = true;
                if list.is_empty() {
                    table.remove(&event);
                }
            }
        }
    }
    if changed && table.is_empty() {
        root.remove("hooks");
    }
    Ok(changed)
}

/// True when `doc` holds nothing of the user's: `{}` or only `version`.
pub fn is_empty(doc: &Value) -> bool {
    match doc {
        Value::Object(m) => m.keys().all(|k| k == "version"),
        _ => false,
    }
}

/// How many of our entries `doc` holds, per event name.
pub fn installed_events(doc: &Value) -> Vec<String> {
    let Some(Value::Object(table)) = doc.get("hooks") else {
        return Vec::new();
    };
    table
        .iter()
        .filter(|(_, v)| matches!(v, Value::Array(list) if count_ours(list) > 0))
        .map(|(k, _)| k.clone())
        .collect()
}

fn is_ours(entry: &Value) -> bool {
    ["command", "bash"].iter().any(|k| {
        entry
            .get(*k)
            .and_then(Value::as_str)
            .is_some_and(|c| c.contains(MARKER))
    })
}

fn count_ours(list: &[Value]) -> usize {
    list.iter()
        .map(|e| match e.get("hooks") {
            Some(Value::Array(inner)) => inner.iter().filter(|h| is_ours(h)).count(),
            _ => usize::from(is_ours(e)),
        })
        .sum()
}

/// Remove our entries from `list` (directly, or inside a matcher group's `hooks`; a group
/// left empty goes too). Returns whether anything was removed.
fn strip(list: &mut Vec<Value>) -> bool {
    let before = list.len();
    let mut changed = false;
    list.retain_mut(|entry| {
        if let Some(Value::Array(inner)) = entry.get_mut("hooks") {
            let n = inner.len();
            inner.retain(|h| !is_ours(h));
            if inner.len() != n {
                changed = true;
                return !inner.is_empty();
            }
            return true;
        }
        !is_ours(entry)
    });
    changed || list.len() != before
}
