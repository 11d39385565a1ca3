//! What an agent's hooks file holds, compared with what `hooks install` writes there: for
//! each hook the installer renders for the agent ([`super::agents::Agent::content`], the one
//! table), whether the file has it exactly (and for which program), has an openfiles hook
//! for that event that is something else (and what differs), or lacks it; openfiles hooks
//! under events the installer does not use are listed too. Text in, findings out: a command
//! found in a file is data, never run (`doctor` reports from this).

use serde_json::Value;

use super::agents::{opencode_plugin, quote_bin, unquote_bin, Agent, Content, MARKER};

/// The marker a hand-written openfiles hook command holds.
pub const HOOK_WORDS: &str = "openfiles hook";

/// One finding about one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The agent's event name (`PostToolUse`), or what the hook hangs on.
    pub event: String,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Exactly what `hooks install --bin BIN` writes (`tagged`: with our marker; without it,
    /// written by hand the same way).
    Same { bin: String, tagged: bool },
    /// An openfiles hook for this event that is not what `hooks install` writes.
    Different {
        found: String,
        expected: String,
        what: String,
    },
    /// An openfiles hook under an event `hooks install` does not write.
    Stray { found: String },
    /// `hooks install` writes this hook; the file does not have it.
    Missing { expected: String },
}

/// A hooks file that is not in its agent's format.
#[derive(Debug, thiserror::Error)]
#[error("not valid JSON: {0}")]
pub struct NotItsFormat(#[from] serde_json::Error);

/// The findings for `agent`'s hooks file with `text`; `bin` is the program `hooks install`
/// would write (used in what is expected when the file's own program cannot be told).
/// `Err`: the file is not in the agent's format.
pub fn compare(agent: &Agent, text: &str, bin: &str) -> Result<Vec<Finding>, NotItsFormat> {
    match agent.content(bin) {
        Content::OwnFile(_) => Ok(compare_own_file(text, bin)),
        Content::Json { hooks, .. } => {
            let doc: Value = serde_json::from_str(text)?;
            let mut out = Vec::new();
            for hook in &hooks {
                let mut expected = Vec::new();
                commands(&hook.entry, &mut |c| expected.push(c.to_owned()));
                let mut found = Vec::new();
                commands(&doc["hooks"][hook.event], &mut |c| {
                    if is_ours(c) {
                        found.push(c.to_owned())
                    }
                });
                for want in &expected {
                    out.extend(judge_event(hook.event, want, bin, &found));
                }
            }
            if let Some(events) = doc["hooks"].as_object() {
                for (event, v) in events {
                    if hooks.iter().any(|h| h.event == event) {
                        continue;
                    }
                    commands(v, &mut |c| {
                        if is_ours(c) {
                            out.push(Finding {
                                event: event.clone(),
                                kind: Kind::Stray {
                                    found: c.to_owned(),
                                },
                            })
                        }
                    });
                }
            }
            Ok(out)
        }
    }
}

/// Whether a command line looks like an openfiles hook.
fn is_ours(cmd: &str) -> bool {
    cmd.contains(HOOK_WORDS) || cmd.contains(MARKER)
}

/// Every `command` or `bash` string under `v`.
fn commands(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match v.as_str() {
                    Some(cmd) if k == "command" || k == "bash" => f(cmd),
                    _ => commands(v, f),
                }
            }
        }
        Value::Array(list) => list.iter().for_each(|v| commands(v, f)),
        _ => {}
    }
}

/// The findings for one event: `want` is what `hooks install` writes for program `bin`;
/// each openfiles hook `found` there is the same for its own program, or different.
fn judge_event(event: &str, want: &str, bin: &str, found: &[String]) -> Vec<Finding> {
    let at = |kind| Finding {
        event: event.to_owned(),
        kind,
    };
    // The command less its program: ` hook --agent ID … --tag openfiles-hook`.
    let tail = &want[quote_bin(bin).len().min(want.len())..];
    let untagged = tail.strip_suffix(&format!(" {MARKER}")).unwrap_or(tail);
    if found.is_empty() {
        return vec![at(Kind::Missing {
            expected: want.to_owned(),
        })];
    }
    found
        .iter()
        .map(|cmd| {
            let same = [(tail, true), (untagged, false)]
                .into_iter()
                .find_map(|(t, tagged)| {
                    let prog = cmd.strip_suffix(t)?;
                    unquote_bin(prog).map(|bin| Kind::Same { bin, tagged })
                });
            at(same.unwrap_or_else(|| {
                // Expected with the file's own program, when its first word is one.
                let expected = cmd
                    .split(' ')
                    .next()
                    .and_then(unquote_bin)
                    .map(|b| format!("{}{tail}", quote_bin(&b)))
                    .unwrap_or_else(|| want.to_owned());
                Kind::Different {
                    found: cmd.clone(),
                    what: what_differs(cmd, &expected),
                    expected,
                }
            }))
        })
        .collect()
}

/// Where `found` leaves `expected`, in a few words.
pub fn what_differs(found: &str, expected: &str) -> String {
    let mut common = 0;
    for ((i, a), b) in found.char_indices().zip(expected.chars()) {
        if a != b {
            break;
        }
        common = i + a.len_utf8();
    }
    let cut = |s: &str| -> String {
        let s: String = s.chars().take(80).collect();
        if s.is_empty() {
            "nothing".to_owned()
        } else {
            format!("`{s}`")
        }
    };
    let (f, e) = (&found[common..], &expected[common..]);
    if common == 0 {
        format!(
            "the file has {} where `hooks install` writes {}",
            cut(f),
            cut(e)
        )
    } else {
        format!(
            "after `{}` the file has {} where `hooks install` writes {}",
            &found[..common],
            cut(f),
            cut(e)
        )
    }
}

/// OpenCode's plugin file: ours exactly (for the program it spawns), or something else.
fn compare_own_file(text: &str, bin: &str) -> Vec<Finding> {
    const EVENT: &str = "tool.execute.after";
    let spawned = text.find("Bun.spawn([").and_then(|at| {
        let rest = &text[at + "Bun.spawn([".len()..];
        serde_json::Deserializer::from_str(rest)
            .into_iter::<String>()
            .next()
            .and_then(Result::ok)
    });
    let kind = match spawned {
        Some(b) if opencode_plugin(&b) == text => Kind::Same {
            bin: b,
            tagged: true,
        },
        _ if !is_ours(text) && !text.contains("openfiles") => Kind::Missing {
            expected: opencode_plugin(bin),
        },
        spawned => {
            let expected = opencode_plugin(spawned.as_deref().unwrap_or(bin));
            let line = text
                .lines()
                .zip(expected.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(text.lines().count().min(expected.lines().count()));
            Kind::Different {
                found: format!("{} lines", text.lines().count()),
                expected: format!("{} lines", expected.lines().count()),
                what: format!(
                    "the plugin differs from what `hooks install` writes from line {}",
                    line + 1
                ),
            }
        }
    };
    vec![Finding {
        event: EVENT.to_owned(),
        kind,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::install::agents::{agent, target, Scope, AGENTS};

    fn text_of(content: Content) -> String {
        match content {
            Content::OwnFile(t) => t,
            Content::Json { hooks, .. } => {
                let mut doc = serde_json::json!({ "hooks": {} });
                for h in hooks {
                    doc["hooks"][h.event] = serde_json::json!([h.entry]);
                }
                doc.to_string()
            }
        }
    }

    /// What `hooks install` writes is recognised as itself for every agent, whatever the
    /// program's name (one needing quotes too).
    #[test]
    fn what_the_installer_writes_is_the_same_for_every_agent() {
        for a in &AGENTS {
            for bin in [
                "openfiles",
                "/opt/of bin/openfiles",
                "/nix/store/x-o'f/bin/openfiles",
            ] {
                let t = target(a.id, &Scope::Workspace("/w".into()), bin).unwrap();
                let found = compare(a, &text_of(t.content), "openfiles").unwrap();
                assert!(!found.is_empty(), "{}", a.id);
                for f in found {
                    assert_eq!(
                        f.kind,
                        Kind::Same {
                            bin: bin.into(),
                            tagged: true
                        },
                        "{}: {bin}",
                        a.id
                    );
                }
            }
        }
    }

    #[test]
    fn a_command_that_runs_more_is_different_and_says_what() {
        let claude = agent("claude").unwrap();
        let text = r#"{"hooks":{
            "PostToolUse":[{"hooks":[{"command":"openfiles hook --agent claude; touch /tmp/x"}]}],
            "Stop":[{"hooks":[{"command":"openfiles hook --agent claude"}]}]}}"#;
        let found = compare(claude, text, "/usr/bin/openfiles").unwrap();
        let Kind::Different { what, .. } = &found[0].kind else {
            panic!("{found:?}")
        };
        assert_eq!(
            what,
            "after `openfiles hook --agent claude` the file has `; touch /tmp/x` where `hooks install` writes ` --tag openfiles-hook`"
        );
        assert!(matches!(found[1].kind, Kind::Missing { .. }), "{found:?}");
        assert_eq!(found[1].event, "SessionStart");
        assert_eq!(found[2].event, "Stop");
        assert!(matches!(found[2].kind, Kind::Stray { .. }), "{found:?}");
        // Written by hand, the same command without our tag.
        let text = r#"{"hooks":{"PostToolUse":[{"hooks":[{"command":"openfiles hook --agent claude"}]}]}}"#;
        assert_eq!(
            compare(claude, text, "x").unwrap()[0].kind,
            Kind::Same {
                bin: "openfiles".into(),
                tagged: false
            }
        );
        assert!(compare(claude, "{", "x").is_err());
    }
}
