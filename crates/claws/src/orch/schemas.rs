//! The event schema registry (`schema.list`, `schema.get`) and validation of published
//! events: the extension's named schemas (`worker-boot-v1` … `rpc-response-v1`), the topics
//! they govern (`worker.*.boot` → worker-boot-v1, …) and the universal envelope. A schema is
//! a static description ([`Ty`]); `schema.get` renders it in the extension's form
//! (`{type:"object", fields:{…}}`, `optional`/`nullable` flags, enums with `values`), and
//! [`check`] validates a value against it, collecting issues (`{code, path, message}`).

use serde_json::{json, Map, Value};

use super::{obj, Body};
use crate::bus::topic;
use openfiles_wire::claws::request::SchemaGet;

/// A field type.
#[derive(Clone, Copy)]
pub enum Ty {
    Str,
    NonEmpty,
    Uuid,
    DateTime,
    Num,
    NonNeg,
    Int,
    IntNonNeg,
    Bool,
    One,
    Unknown,
    Record,
    Enum(&'static [&'static str]),
    Array(&'static Ty),
    Obj(&'static [(&'static str, Ty)]),
    Opt(&'static Ty),
    Null(&'static Ty),
}

use Ty::*;

const PHASES: &[&str] = &[
    "PLAN", "SPAWN", "DEPLOY", "OBSERVE", "RECOVER", "HARVEST", "CLEANUP", "REFLECT", "FAILED",
];
const KINDS: &[&str] = &[
    "BLOCKED", "REQUEST", "HARVEST", "ERROR", "DECISION", "PROGRESS", "LOG",
];
const ROLES: &[&str] = &["orchestrator", "worker", "observer"];
const SEVERITY: &[&str] = &["info", "warn", "error", "fatal"];
const VEHICLE: &[&str] = &[
    "PROVISIONING",
    "BOOTING",
    "READY",
    "BUSY",
    "IDLE",
    "CLOSING",
    "CLOSED",
];
const CONTENT: &[&str] = &[
    "shell", "claude", "python", "node", "vim", "htop", "unknown",
];
const SUB_ROLES: &[&str] = &["lead", "tester", "reviewer", "auditor", "bench", "doc"];
const LEVELS: &[&str] = &["CRITICAL", "HIGH", "MEDIUM", "LOW"];
const ARTIFACT: Ty = Obj(&[
    ("path", NonEmpty),
    ("type", NonEmpty),
    ("size_bytes", Opt(&NonNeg)),
]);

pub const ENVELOPE: Ty = Obj(&[
    ("v", One),
    ("id", Uuid),
    ("correlation_id", Opt(&Null(&Uuid))),
    ("parent_id", Opt(&Null(&Str))),
    ("from_peer", NonEmpty),
    ("from_name", NonEmpty),
    ("terminal_id", Opt(&Null(&Str))),
    ("ts_published", DateTime),
    ("ts_server", Opt(&DateTime)),
    ("sequence", Opt(&IntNonNeg)),
    ("schema", NonEmpty),
    ("data", Unknown),
]);

const VEHICLE_STATE: Ty = Obj(&[
    ("terminalId", NonEmpty),
    ("from", Null(&Enum(VEHICLE))),
    ("to", Enum(VEHICLE)),
    ("ts", DateTime),
]);
const COMMAND_END: Ty = Obj(&[
    ("terminalId", NonEmpty),
    ("command", NonEmpty),
    ("exitCode", Null(&Int)),
    ("durationMs", NonNeg),
    ("degraded", Opt(&Bool)),
    ("endedAt", DateTime),
]);
const CMD_ACK: Ty = Obj(&[
    ("seq", IntNonNeg),
    ("status", Enum(&["executed", "rejected", "duplicate"])),
    ("correlation_id", Opt(&Uuid)),
]);

/// Every named schema, sorted by name.
pub const SCHEMAS: &[(&str, Ty)] = &[
    ("cmd-abort-v1", Obj(&[("reason", NonEmpty)])),
    ("cmd-ack-v1", CMD_ACK),
    (
        "cmd-approve-v1",
        Obj(&[("correlation_id", Uuid), ("payload", Opt(&Record))]),
    ),
    (
        "cmd-deliver-v1",
        Obj(&[
            ("targetPeerId", NonEmpty),
            ("cmdTopic", NonEmpty),
            ("payload", ENVELOPE),
            ("idempotencyKey", Uuid),
            ("seq", IntNonNeg),
        ]),
    ),
    (
        "cmd-inject-text-v1",
        Obj(&[("text", Str), ("paste", Opt(&Bool))]),
    ),
    ("cmd-pause-v1", Obj(&[])),
    (
        "cmd-reject-v1",
        Obj(&[("correlation_id", Uuid), ("reason", NonEmpty)]),
    ),
    ("cmd-resume-v1", Obj(&[])),
    (
        "cmd-set-phase-v1",
        Obj(&[("phase", Enum(PHASES)), ("reason", NonEmpty)]),
    ),
    (
        "cmd-spawn-v1",
        Obj(&[
            ("name", NonEmpty),
            ("mission", NonEmpty),
            ("model", Opt(&Str)),
        ]),
    ),
    ("command-end-v1", COMMAND_END),
    (
        "command-start-v1",
        Obj(&[
            ("terminalId", NonEmpty),
            ("command", NonEmpty),
            ("startedAt", DateTime),
        ]),
    ),
    (
        "pipeline-step-v1",
        Obj(&[
            ("pipelineId", NonEmpty),
            ("stepId", NonEmpty),
            ("role", Enum(&["source", "sink"])),
            ("terminalId", NonEmpty),
            ("state", Enum(&["active", "degraded", "closed"])),
            ("ts", DateTime),
        ]),
    ),
    (
        "rpc-request-v1",
        Obj(&[
            ("requestId", Uuid),
            ("method", NonEmpty),
            ("params", Opt(&Record)),
            ("callerPeerId", NonEmpty),
        ]),
    ),
    (
        "rpc-response-v1",
        Obj(&[
            ("requestId", Uuid),
            ("ok", Bool),
            ("result", Opt(&Unknown)),
            ("error", Opt(&Str)),
        ]),
    ),
    (
        "system-budget-warning-v1",
        Obj(&[("current_usd", NonNeg), ("threshold_usd", NonNeg)]),
    ),
    (
        "system-gate-fired-v1",
        Obj(&[
            ("tool", NonEmpty),
            ("reason", NonEmpty),
            ("peerId", NonEmpty),
        ]),
    ),
    (
        "system-malformed-received-v1",
        Obj(&[("from", NonEmpty), ("topic", NonEmpty), ("error", Unknown)]),
    ),
    (
        "system-peer-joined-v1",
        Obj(&[
            ("peerId", NonEmpty),
            ("role", Enum(ROLES)),
            ("peerName", NonEmpty),
            ("ts", DateTime),
        ]),
    ),
    (
        "system-peer-left-v1",
        Obj(&[
            ("peerId", NonEmpty),
            ("role", Enum(ROLES)),
            ("reason", Enum(&["clean", "crash", "timeout"])),
        ]),
    ),
    (
        "system-peer-stale-v1",
        Obj(&[
            ("peerId", NonEmpty),
            ("last_seen", NonNeg),
            ("missed_heartbeats", NonNeg),
        ]),
    ),
    (
        "vehicle-content-v1",
        Obj(&[
            ("terminalId", NonEmpty),
            ("contentType", Enum(CONTENT)),
            ("foregroundPid", Null(&IntNonNeg)),
            ("basename", Opt(&Null(&Str))),
            ("detectedAt", DateTime),
            ("confidence", Opt(&Enum(&["high", "low", "unknown"]))),
        ]),
    ),
    ("vehicle-state-v1", VEHICLE_STATE),
    (
        "wave-audit-finding-v1",
        Obj(&[
            ("waveId", NonEmpty),
            ("severity", Enum(LEVELS)),
            (
                "category",
                Enum(&[
                    "race_condition",
                    "schema",
                    "error_handling",
                    "regression",
                    "security",
                ]),
            ),
            ("file", NonEmpty),
            ("finding", NonEmpty),
            ("recommendation", Opt(&Str)),
        ]),
    ),
    (
        "wave-bench-metric-v1",
        Obj(&[
            ("waveId", NonEmpty),
            ("name", NonEmpty),
            ("value", Num),
            ("unit", NonEmpty),
            ("baseline", Opt(&Num)),
        ]),
    ),
    (
        "wave-doc-complete-v1",
        Obj(&[
            ("waveId", NonEmpty),
            ("files_updated", Array(&Str)),
            ("ts", DateTime),
        ]),
    ),
    (
        "wave-lead-boot-v1",
        Obj(&[
            ("waveId", NonEmpty),
            ("peerName", NonEmpty),
            ("layers", Array(&Str)),
            ("manifest", Array(&Enum(SUB_ROLES))),
            ("started_at", DateTime),
        ]),
    ),
    (
        "wave-lead-complete-v1",
        Obj(&[
            ("waveId", NonEmpty),
            ("status", Enum(&["ok", "failed", "partial"])),
            ("commits", Array(&Str)),
            ("regression_clean", Bool),
            ("duration_sec", Opt(&NonNeg)),
        ]),
    ),
    (
        "wave-review-finding-v1",
        Obj(&[
            ("waveId", NonEmpty),
            ("severity", Enum(LEVELS)),
            ("file", NonEmpty),
            ("line", Opt(&IntNonNeg)),
            ("message", NonEmpty),
            ("suggested_fix", Opt(&Str)),
        ]),
    ),
    (
        "wave-tester-red-complete-v1",
        Obj(&[
            ("waveId", NonEmpty),
            ("test_file", NonEmpty),
            ("failing_tests", NonNeg),
            ("ts", DateTime),
        ]),
    ),
    (
        "worker-boot-v1",
        Obj(&[
            ("model", NonEmpty),
            ("role", Enum(ROLES)),
            ("parent_peer_id", Null(&Str)),
            ("mission_summary", NonEmpty),
            ("capabilities", Array(&Str)),
            ("cwd", NonEmpty),
            ("terminal_id", Str),
        ]),
    ),
    (
        "worker-complete-v1",
        Obj(&[
            ("result", Enum(&["ok", "failed", "cancelled"])),
            ("summary", NonEmpty),
            ("artifacts", Array(&ARTIFACT)),
            ("phases_completed", Array(&Enum(PHASES))),
            ("total_tokens", NonNeg),
            ("total_cost_usd", NonNeg),
            ("duration_ms", NonNeg),
        ]),
    ),
    (
        "worker-event-v1",
        Obj(&[
            ("kind", Enum(KINDS)),
            ("severity", Enum(SEVERITY)),
            ("message", NonEmpty),
            ("request_id", Opt(&Uuid)),
            ("data", Opt(&Record)),
        ]),
    ),
    (
        "worker-heartbeat-v1",
        Obj(&[
            ("current_phase", Enum(PHASES)),
            ("time_in_phase_ms", NonNeg),
            ("tokens_used", NonNeg),
            ("cost_usd", NonNeg),
            ("last_event_id", Null(&Uuid)),
            ("active_sub_workers", Array(&Str)),
        ]),
    ),
    (
        "worker-phase-v1",
        Obj(&[
            ("phase", Enum(PHASES)),
            ("prev", Null(&Enum(PHASES))),
            ("transition_reason", NonEmpty),
            ("phases_completed", Array(&Enum(PHASES))),
            ("metadata", Opt(&Record)),
        ]),
    ),
];

/// Topic patterns with the data schema their events must carry, first match wins.
const TOPICS: &[(&str, &str)] = &[
    ("worker.*.boot", "worker-boot-v1"),
    ("worker.*.phase", "worker-phase-v1"),
    ("worker.*.event", "worker-event-v1"),
    ("worker.*.heartbeat", "worker-heartbeat-v1"),
    ("worker.*.complete", "worker-complete-v1"),
    ("cmd.*.approve", "cmd-approve-v1"),
    ("cmd.*.reject", "cmd-reject-v1"),
    ("cmd.*.abort", "cmd-abort-v1"),
    ("cmd.*.pause", "cmd-pause-v1"),
    ("cmd.*.resume", "cmd-resume-v1"),
    ("cmd.*.set_phase", "cmd-set-phase-v1"),
    ("cmd.*.spawn", "cmd-spawn-v1"),
    ("cmd.*.inject_text", "cmd-inject-text-v1"),
    ("vehicle.*.state", "vehicle-state-v1"),
    ("vehicle.*.content", "vehicle-content-v1"),
    ("command.*.start", "command-start-v1"),
    ("command.*.end", "command-end-v1"),
    ("command.*.timeout", "command-end-v1"),
    ("cmd.*.ack", "cmd-ack-v1"),
];

pub fn named(name: &str) -> Option<Ty> {
    SCHEMAS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The data schema governing `topic`, if any (`wave.**` accepts any object).
pub fn for_topic(t: &str) -> Option<Ty> {
    let segs: Vec<&str> = t.split('.').collect();
    for (pattern, name) in TOPICS {
        if topic::matches(&topic::segments(pattern), &segs) {
            return named(name);
        }
    }
    topic::matches(&topic::segments("wave.**"), &segs).then_some(Record)
}

/// The extension's rendering of a schema.
pub fn render(t: Ty) -> Value {
    match t {
        Str | NonEmpty | Uuid | DateTime => json!({"type": "string"}),
        Num | NonNeg | Int | IntNonNeg => json!({"type": "number"}),
        Bool => json!({"type": "boolean"}),
        One => json!({"type": "literal", "value": 1}),
        Unknown => json!({"type": "unknown"}),
        Record => json!({"type": "record", "values": {"type": "unknown"}}),
        Enum(v) => json!({"type": "enum", "values": v}),
        Array(i) => json!({"type": "array", "items": render(*i)}),
        Obj(fields) => {
            let f: Map<String, Value> = fields
                .iter()
                .map(|(k, t)| ((*k).to_owned(), render(*t)))
                .collect();
            json!({"type": "object", "fields": f})
        }
        Opt(i) => flag(render(*i), "optional"),
        Null(i) => flag(render(*i), "nullable"),
    }
}

fn flag(mut v: Value, name: &str) -> Value {
    v[name] = Value::Bool(true);
    v
}

/// Validate `v` against `t`; issues found (empty: valid). `None` is an absent field.
pub fn check(t: Ty, v: Option<&Value>, path: &mut Vec<String>, out: &mut Vec<Value>) {
    let mut bad = |code: &str, msg: String, path: &[String]| {
        out.push(json!({"code": code, "path": path, "message": msg}));
    };
    let Some(v) = v else {
        if !matches!(t, Opt(_) | Unknown) {
            bad("invalid_type", "Required".into(), path);
        }
        return;
    };
    let num = v.as_f64();
    let ok = match t {
        Opt(i) => return check(*i, Some(v), path, out),
        Null(i) => {
            if !v.is_null() {
                check(*i, Some(v), path, out);
            }
            return;
        }
        Unknown => true,
        Str => v.is_string(),
        NonEmpty => v.as_str().is_some_and(|s| !s.is_empty()),
        Uuid => v.as_str().is_some_and(is_uuid),
        DateTime => v.as_str().is_some_and(is_datetime),
        Num => num.is_some(),
        NonNeg => num.is_some_and(|n| n >= 0.0),
        Int => num.is_some_and(|n| n.fract() == 0.0),
        IntNonNeg => num.is_some_and(|n| n.fract() == 0.0 && n >= 0.0),
        Bool => v.is_boolean(),
        One => v.as_f64() == Some(1.0),
        Record => v.is_object(),
        Enum(vals) => v.as_str().is_some_and(|s| vals.contains(&s)),
        Array(i) => {
            let Some(a) = v.as_array() else {
                bad("invalid_type", "Expected array".into(), path);
                return;
            };
            for (k, x) in a.iter().enumerate() {
                path.push(k.to_string());
                check(*i, Some(x), path, out);
                path.pop();
            }
            return;
        }
        Obj(fields) => {
            let Some(m) = v.as_object() else {
                bad("invalid_type", "Expected object".into(), path);
                return;
            };
            for (k, ft) in fields {
                path.push((*k).to_owned());
                check(*ft, m.get(*k), path, out);
                path.pop();
            }
            return;
        }
    };
    if !ok {
        bad("invalid_value", format!("Invalid value: {v}"), path);
    }
}

/// Issues of `v` against `t` from the top.
pub fn issues(t: Ty, v: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    check(t, Some(v), &mut Vec::new(), &mut out);
    out
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `YYYY-MM-DDTHH:MM:SS[.fff…]Z`.
fn is_datetime(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
    if b.len() < 20 || !s.ends_with('Z') {
        return false;
    }
    let head = digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    let tail = &b[19..b.len() - 1];
    head && (tail.is_empty()
        || (tail[0] == b'.' && tail.len() > 1 && tail[1..].iter().all(u8::is_ascii_digit)))
}

pub fn list() -> Body {
    let names: Vec<&str> = SCHEMAS.iter().map(|(n, _)| *n).collect();
    Ok(obj(json!({ "schemas": names })))
}

pub fn get(req: SchemaGet) -> Body {
    let Some(name) = req.name.filter(|s| !s.is_empty()) else {
        return Err("schema.get:missing-name".into());
    };
    let Some(t) = named(&name) else {
        return Err(format!("schema.get:not-found:{name}").into());
    };
    Ok(obj(json!({"name": name, "schema": render(t)})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_and_topics_resolve() {
        assert!(SCHEMAS.windows(2).all(|w| w[0].0 < w[1].0));
        for (_, name) in TOPICS {
            assert!(named(name).is_some(), "{name}");
        }
        assert!(for_topic("worker.p_1.boot").is_some());
        assert!(for_topic("wave.w1.anything.deep").is_some());
        assert!(for_topic("a.b").is_none());
    }

    #[test]
    fn validation_reports_paths() {
        let t = named("cmd-ack-v1").unwrap();
        assert!(issues(t, &json!({"seq": 1, "status": "executed"})).is_empty());
        let bad = issues(t, &json!({"seq": -1, "status": "nope"}));
        let paths: Vec<&Value> = bad.iter().map(|i| &i["path"]).collect();
        assert_eq!(paths, vec![&json!(["seq"]), &json!(["status"])]);
        assert!(is_datetime("2026-04-27T12:00:00.123Z") && !is_datetime("2026-04-27 12:00"));
        assert!(is_uuid("123e4567-e89b-12d3-a456-426614174000") && !is_uuid("x"));
        assert_eq!(
            render(named("cmd-abort-v1").unwrap()),
            json!({"type":"object","fields":{"reason":{"type":"string"}}})
        );
    }
}
