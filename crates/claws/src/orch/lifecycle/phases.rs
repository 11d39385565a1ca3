//! The lifecycle's phase machine: which phase may follow which, and the words a refused
//! transition is answered with.

use openfiles_wire::claws::Phase;

/// Legal next phases.
pub(super) fn transitions(from: Phase) -> &'static [Phase] {
    use Phase::*;
    match from {
        SessionBoot => &[Plan, Failed],
        Plan => &[Spawn, Failed],
        Spawn => &[Deploy, Recover, Failed],
        Deploy => &[Observe, Recover, Failed],
        Observe => &[Harvest, Recover, Failed],
        Recover => &[Deploy, Observe, Failed],
        Harvest => &[Cleanup, Failed],
        Cleanup => &[Reflect, Failed],
        Reflect => &[Plan, SessionEnd],
        Failed => &[Cleanup, SessionEnd],
        SessionEnd => &[],
    }
}

pub(super) fn can_transition(from: Phase, to: Phase) -> bool {
    from == to || transitions(from).contains(&to)
}

/// Outside a mission: before the first plan, after a reflection, at the session's end.
pub(super) fn between_missions(p: Phase) -> bool {
    matches!(p, Phase::SessionBoot | Phase::Reflect | Phase::SessionEnd)
}

/// Why REFLECT is refused: the workers' terminals still open (their ids). The text is the
/// wire's.
#[derive(Debug, thiserror::Error)]
#[error("{} terminal(s) still open: {}", .0.len(), .0.join(", "))]
pub(super) struct OpenTerminals(pub(super) Vec<String>);

/// Why `from` cannot go to `to` (as the client spelled it: it may name no phase).
pub(super) fn explain(from: Phase, to: &str) -> String {
    let allowed = transitions(from);
    if allowed.is_empty() {
        format!("phase {from} is terminal — no transitions allowed")
    } else {
        let allowed: Vec<&str> = allowed.iter().map(|p| p.as_str()).collect();
        format!(
            "cannot go from {from} to {to}; allowed: {}",
            allowed.join(", ")
        )
    }
}
