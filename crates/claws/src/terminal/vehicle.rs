//! The editor extension's vehicle-state machine of a terminal, as clients written against it
//! read it from `vehicle.<id>.state` and from `list`'s `vehicleState`: PROVISIONING (from
//! null) and BOOTING at `create`, READY at the shell's first prompt (a shell without
//! integration: its first output), BUSY while a command runs, IDLE at the prompt after one,
//! CLOSING when the terminal is closed or its shell exits, CLOSED once the shell is gone.
//! A change the extension's table does not allow is ignored, as the extension ignores it.

/// One state of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vehicle {
    Provisioning,
    Booting,
    Ready,
    Busy,
    Idle,
    Closing,
    Closed,
}

impl Vehicle {
    /// The extension's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Vehicle::Provisioning => "PROVISIONING",
            Vehicle::Booting => "BOOTING",
            Vehicle::Ready => "READY",
            Vehicle::Busy => "BUSY",
            Vehicle::Idle => "IDLE",
            Vehicle::Closing => "CLOSING",
            Vehicle::Closed => "CLOSED",
        }
    }

    /// The extension's transition table.
    pub fn allows(self, to: Vehicle) -> bool {
        use Vehicle::*;
        matches!(
            (self, to),
            (Provisioning, Booting | Closing)
                | (Booting, Ready | Closing)
                | (Ready, Busy | Idle | Closing)
                | (Busy, Idle | Closing)
                | (Idle, Busy | Closing)
                | (Closing, Closed)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Vehicle::*;

    #[test]
    fn the_extensions_table() {
        let all = [Provisioning, Booting, Ready, Busy, Idle, Closing, Closed];
        let allowed: Vec<(&str, &str)> = all
            .iter()
            .flat_map(|a| all.iter().map(move |b| (*a, *b)))
            .filter(|(a, b)| a.allows(*b))
            .map(|(a, b)| (a.name(), b.name()))
            .collect();
        assert_eq!(
            allowed,
            [
                ("PROVISIONING", "BOOTING"),
                ("PROVISIONING", "CLOSING"),
                ("BOOTING", "READY"),
                ("BOOTING", "CLOSING"),
                ("READY", "BUSY"),
                ("READY", "IDLE"),
                ("READY", "CLOSING"),
                ("BUSY", "IDLE"),
                ("BUSY", "CLOSING"),
                ("IDLE", "BUSY"),
                ("IDLE", "CLOSING"),
                ("CLOSING", "CLOSED"),
            ]
        );
    }
}
