//! The closed sets the claws/2 orchestration layer names on the wire, with their spellings:
//! the lifecycle's phases and the kinds of refusal (a refusal answer's `error`, beside its
//! `message`).

use serde::{Deserialize, Serialize};

macro_rules! spelled {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $v,)*
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$v,)*];

            /// The wire spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$v => $s,)*
                }
            }

            /// The value spelled `s` on the wire.
            pub fn parse(s: &str) -> Option<$name> {
                match s {
                    $($s => Some($name::$v),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

spelled! {
    /// A phase of the mission lifecycle (the editor extension's schema v3).
    Phase {
        SessionBoot = "SESSION-BOOT",
        Plan = "PLAN",
        Spawn = "SPAWN",
        Deploy = "DEPLOY",
        Recover = "RECOVER",
        Observe = "OBSERVE",
        Harvest = "HARVEST",
        Cleanup = "CLEANUP",
        Reflect = "REFLECT",
        Failed = "FAILED",
        SessionEnd = "SESSION-END",
    }
}

spelled! {
    /// Why an orchestration request was refused: a refusal answer's `error` (its `message`
    /// says more, in words).
    RefusalKind {
        PlanRequired = "lifecycle:plan-required",
        PlanEmpty = "lifecycle:plan-empty",
        WorkerModeRequired = "lifecycle:worker-mode-required",
        InvalidWorkerMode = "lifecycle:invalid-worker-mode",
        ExpectedWorkersRequired = "lifecycle:expected-workers-required",
        InvalidExpectedWorkers = "lifecycle:invalid-expected-workers",
        InvalidTransition = "lifecycle:invalid-transition",
        ReflectGate = "lifecycle:reflect-gate",
        ReflectEmpty = "lifecycle:reflect-empty",
        NoState = "lifecycle:no-state",
        RegisterSpawnArgs = "lifecycle:register-spawn-args",
        RegisterMonitorArgs = "lifecycle:register-monitor-args",
        CorrelationIdConflict = "lifecycle:correlation-id-conflict",
        MarkStatusArgs = "lifecycle:mark-status-args",
        /// A publish whose payload its topic's schema refuses.
        PayloadInvalid = "payload:invalid",
        /// `rpc.call` got no answer in time.
        RpcTimeout = "rpc.call:timeout",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_survive_the_wire_both_ways() {
        for p in Phase::ALL {
            let v = serde_json::to_value(p).unwrap();
            assert_eq!(v, p.as_str());
            assert_eq!(serde_json::from_value::<Phase>(v).unwrap(), *p);
            assert_eq!(Phase::parse(p.as_str()), Some(*p));
        }
        for k in RefusalKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
            assert_eq!(RefusalKind::parse(k.as_str()), Some(*k));
        }
        assert_eq!(Phase::parse("LUNCH"), None);
        assert_eq!(Phase::SessionBoot.to_string(), "SESSION-BOOT");
    }
}
