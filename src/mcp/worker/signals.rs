//! What a worker's output says: markers alone on a line, `[CLAWS_PUB]` lines (published for
//! the worker), the completion decision in Claws's order, and ISO timestamps for payloads.

use serde_json::{json, Value};

use crate::mcp::agent::DONE_MARKER;
use crate::mcp::server::Ctx;

/// A marker alone on its line (after optional blanks and a `⏺`/`⎿`): that line.
pub fn standalone(text: &str, marker: &str) -> Option<String> {
    standalone_lines(text, marker).next()
}

/// Every line holding `marker` alone, in order.
fn standalone_lines<'a>(text: &'a str, marker: &'a str) -> impl Iterator<Item = String> + 'a {
    text.split(['\n', '\r']).filter_map(move |line| {
        if marker.is_empty() {
            return None;
        }
        let l = line.trim_start_matches([' ', '\t']);
        let l = l
            .strip_prefix(['⏺', '⎿'])
            .unwrap_or(l)
            .trim_start_matches([' ', '\t']);
        let rest = l.strip_prefix(marker)?;
        (rest.is_empty() || rest.starts_with([' ', '\t'])).then(|| line.trim().to_owned())
    })
}

/// The marker's line in `text`, not counting the times the typed `echoed` text itself holds
/// it alone on a line (the terminal echoes what was typed).
fn after_echo(text: &str, marker: &str, echoed: &str) -> Option<String> {
    let skip = standalone_lines(echoed, marker).count();
    standalone_lines(text, marker).nth(skip)
}

/// `[CLAWS_PUB] topic=T k=v k2="quoted v" …` → (topic, payload).
pub fn claws_pub(line: &str) -> Option<(String, Value)> {
    let rest = line.trim().strip_prefix("[CLAWS_PUB]")?.trim_start();
    let rest = rest.strip_prefix("topic=")?;
    let (topic, mut rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let mut payload = serde_json::Map::new();
    loop {
        rest = rest.trim_start();
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let (raw, tail) = if let Some(q) = after.strip_prefix('"') {
            q.split_once('"').unwrap_or((q, ""))
        } else {
            after.split_once(char::is_whitespace).unwrap_or((after, ""))
        };
        let quoted = after.starts_with('"');
        let v = match raw {
            "true" if !quoted => json!(true),
            "false" if !quoted => json!(false),
            n if !quoted && n.parse::<f64>().is_ok() => serde_json::from_str(n).unwrap_or(json!(n)),
            s => json!(s),
        };
        if !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_') {
            payload.insert(key.to_owned(), v);
        }
        rest = tail;
    }
    (!topic.is_empty()).then(|| (topic.to_owned(), Value::Object(payload)))
}

/// The error markers a call names (`error_markers`), else `MISSION_FAILED`.
pub fn error_markers(v: Option<&Value>) -> Vec<String> {
    match v.and_then(Value::as_array) {
        Some(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        None => vec!["MISSION_FAILED".into()],
    }
}

/// What ended a worker: (status, marker line, signal).
pub fn detect(
    ctx: &Ctx,
    text: &str,
    id: &str,
    complete: &str,
    errors: &[String],
    echoed: &str,
) -> Option<(String, Option<String>, String)> {
    if let Some(bus) = ctx.bus_if_any(None) {
        let ev = bus.events.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = ev.completed.get(id) {
            let status = if p["status"] == "failed" {
                "failed"
            } else {
                "completed"
            };
            return Some((
                status.into(),
                p["summary"].as_str().map(str::to_owned),
                "pub_complete_v2".into(),
            ));
        }
    }
    for m in [complete, DONE_MARKER] {
        if let Some(l) = after_echo(text, m, echoed) {
            return Some(("completed".into(), Some(l), "marker".into()));
        }
    }
    for m in errors {
        if let Some(l) = after_echo(text, m, echoed) {
            return Some(("failed".into(), Some(l), "error".into()));
        }
    }
    if let Some(l) = standalone(text, &format!("[CLAWS_PUB] topic=worker.{id}.complete")) {
        return Some(("completed".into(), Some(l), "pub_complete".into()));
    }
    if let Some(bus) = ctx.bus_if_any(None) {
        if bus
            .events
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .terminated
            .contains(id)
        {
            return Some(("terminated".into(), None, "terminated".into()));
        }
    }
    None
}

pub fn publish_pub_lines(ctx: &Ctx, before: &str, new: &str) {
    if !new.contains("[CLAWS_PUB]") {
        return;
    }
    // Complete lines only: the part of the last old line plus the new text.
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let joined = format!("{}{new}", &before[start..]);
    let Some(bus) = ctx.bus_if_any(None) else {
        return;
    };
    let complete = joined.rfind('\n').map_or("", |i| &joined[..i]);
    for line in complete.split('\n') {
        if let Some((topic, payload)) = claws_pub(line) {
            bus.publish(&topic, payload);
        }
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub use openfiles_wire::spec::iso_now;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_count_only_alone_on_a_line() {
        assert_eq!(
            standalone("a\nMISSION_COMPLETE\n", "MISSION_COMPLETE").as_deref(),
            Some("MISSION_COMPLETE")
        );
        assert_eq!(
            standalone("x\r\n  ⏺ DONE  \r\n", "DONE").as_deref(),
            Some("⏺ DONE")
        );
        assert!(standalone("$ echo MISSION_COMPLETE\n", "MISSION_COMPLETE").is_none());
        assert!(standalone("MISSION_COMPLETED\n", "MISSION_COMPLETE").is_none());
        assert!(standalone("anything", "").is_none());
        // The echo of a mission that names the marker alone on a line does not count.
        let mission = "do it, then print:\nDONE\n";
        let out = format!("{mission}working\n");
        assert!(after_echo(&out, "DONE", mission).is_none());
        assert_eq!(
            after_echo(&format!("{out}DONE\n"), "DONE", mission).as_deref(),
            Some("DONE")
        );
    }

    #[test]
    fn claws_pub_lines_parse() {
        let (t, p) =
            claws_pub(r#"[CLAWS_PUB] topic=worker.3.progress pct=40 ok=true note="half way" x"#)
                .expect("parses");
        assert_eq!(t, "worker.3.progress");
        assert_eq!(p, json!({"pct": 40, "ok": true, "note": "half way"}));
        assert!(claws_pub("[CLAWS_PUB] nothing").is_none());
    }

    #[test]
    fn iso_dates() {
        let s = iso_now();
        assert_eq!(s.len(), 24, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'), "{s}");
    }
}
