//! `hello` on the bus: registering a connection as a peer (its id, stable across reconnects
//! with an `instanceNonce`; its subscriptions restored; a worker's own command channel) and
//! the announcements that follow.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::time::Instant;

use super::{body, deliver, id_text, topic, with_push, Bus, Peer, PeerInfo, State, Sub};
use super::{Connection, CAPABILITIES};
use openfiles_wire::claws::request::{self, HelloReply, Subscription};
use openfiles_wire::claws::{Failure, Role};

impl State {
    fn orchestrator_present(&self) -> bool {
        self.peers
            .values()
            .any(|p| p.info.role == Role::Orchestrator)
    }

    /// The single orchestrator the extension allows is the root one: a wave's lead registers
    /// as orchestrator with its `waveId`.
    fn root_orchestrator_present(&self) -> bool {
        self.peers
            .values()
            .any(|p| p.info.role == Role::Orchestrator && p.info.wave_id.is_none())
    }

    /// A stable peer's subscriptions: those saved when it left, and those of an old
    /// connection of it that lingers (taken over). Whether there were any.
    fn take_subscriptions(&mut self, peer_id: &str) -> (Vec<Sub>, bool) {
        let mut subs = Vec::new();
        let mut restored_any = false;
        if let Some(s) = self.saved.remove(peer_id) {
            subs = s;
            restored_any = true;
        }
        for p in self.peers.values_mut() {
            if p.info.peer_id == peer_id {
                subs.append(&mut p.subs);
                restored_any = true;
            }
        }
        (subs, restored_any)
    }

    /// A worker is subscribed to its command channel `cmd.<peerId>.**`.
    fn subscribe_own_channel(&mut self, peer_id: &str, subs: &mut Vec<Sub>) {
        let own = format!("cmd.{peer_id}.**");
        if !subs.iter().any(|s| s.pattern == own) {
            self.next_sub += 1;
            subs.push(Sub {
                id: format!("s_{:04}", self.next_sub),
                segs: topic::segments(&own),
                pattern: own,
            });
        }
    }
}

/// A peer's id: derived from its name, role and `instanceNonce` when it gave one (so it
/// is the same after a reconnect), else random.
fn peer_id(name: &str, role: &Role, nonce: Option<&str>) -> String {
    match nonce {
        Some(n) => {
            let h = Sha256::digest(format!("{name}\0{role}\0{n}").as_bytes());
            let hex: String = h[..6].iter().map(|b| format!("{b:02x}")).collect();
            format!("fp_{hex}")
        }
        None => format!("p_{}", &crate::shell::unique_hex()[..6]),
    }
}

impl Bus {
    /// Register the connection as a peer (`hello`, after the caller checked the protocol and
    /// any auth token). One orchestrator per server; workers are subscribed to their command
    /// channel `cmd.<peerId>.**`. A second `hello` on the same connection updates the
    /// capabilities, wave and sub-worker role and answers `idempotent: true`.
    pub fn hello(
        &self,
        conn: &Connection,
        req: request::Hello,
    ) -> Result<(Map<String, Value>, PeerInfo), Failure> {
        let mut st = self.lock();
        if let Some(p) = st.peers.get_mut(&conn.conn_id) {
            p.info.update(req);
            let info = p.info.clone();
            return Ok((again(&st, &info), info));
        }
        let role = req.role.unwrap_or(Role::Observer);
        if role == Role::Orchestrator && req.wave_id.is_none() && st.root_orchestrator_present() {
            return Err("root orchestrator already registered".into());
        }
        let name = req.peer_name.unwrap_or_else(|| "unnamed".to_owned());
        let nonce = req.instance_nonce.as_deref().filter(|n| !n.is_empty());
        let peer_id = peer_id(&name, &role, nonce);
        let (mut subs, restored_any) = match nonce {
            Some(_) => st.take_subscriptions(&peer_id),
            None => (Vec::new(), false),
        };
        let restored: Vec<Subscription> = subs
            .iter()
            .map(|s| Subscription {
                subscription_id: s.id.clone(),
                topic: s.pattern.clone(),
            })
            .collect();
        if role == Role::Worker {
            st.subscribe_own_channel(&peer_id, &mut subs);
        }
        let info = PeerInfo {
            peer_id: peer_id.clone(),
            role: role.clone(),
            name: name.clone(),
            stable: nonce.is_some(),
            terminal_id: req.terminal_id.as_ref().and_then(id_text),
            capabilities: with_push(req.capabilities.unwrap_or_default()),
            wave_id: req.wave_id,
            sub_worker_role: req.sub_worker_role,
            monitor_correlation_id: req.monitor_correlation_id,
        };
        st.peers.insert(
            conn.conn_id,
            Peer {
                info: info.clone(),
                outbox: conn.outbox.clone(),
                subs,
                window: (0, Instant::now()),
                rate_hits: 0,
            },
        );
        let reply = reply(&HelloReply {
            peer_id: peer_id.clone(),
            server_capabilities: capabilities(),
            root_orchestrator_present: st.root_orchestrator_present(),
            orchestrator_present: st.orchestrator_present(),
            restored: restored_any,
            idempotent: false,
            restored_subscriptions: Some(restored),
        });
        let payload = json!({"peerId": peer_id, "role": role, "peerName": name,
                             "correlationId": req.correlation_id,
                             "terminalId": req.terminal_id});
        deliver(
            &mut st,
            "server",
            "system.peer.connected",
            payload,
            None,
            true,
        );
        let joined =
            json!({"peerId": peer_id, "role": role, "peerName": name, "ts": crate::iso_now()});
        deliver(&mut st, "server", "system.peer.joined", joined, None, true);
        Ok((reply, info))
    }
}

impl PeerInfo {
    /// A second `hello` on a connection: capabilities, wave and sub-worker role updated.
    fn update(&mut self, req: request::Hello) {
        if let Some(caps) = req.capabilities {
            self.capabilities = with_push(caps);
        }
        if req.wave_id.is_some() {
            self.wave_id = req.wave_id;
        }
        if req.sub_worker_role.is_some() {
            self.sub_worker_role = req.sub_worker_role;
        }
    }
}

/// The answer to a second `hello` on a connection.
fn again(st: &State, info: &PeerInfo) -> Map<String, Value> {
    reply(&HelloReply {
        peer_id: info.peer_id.clone(),
        server_capabilities: capabilities(),
        root_orchestrator_present: st.root_orchestrator_present(),
        orchestrator_present: st.orchestrator_present(),
        restored: false,
        idempotent: true,
        restored_subscriptions: None,
    })
}

fn capabilities() -> Vec<String> {
    CAPABILITIES.iter().map(|c| (*c).to_owned()).collect()
}

/// An answer body from its typed reply (plain structs: serializing cannot fail).
pub(super) fn reply<T: serde::Serialize>(t: &T) -> Map<String, Value> {
    body(serde_json::to_value(t).unwrap_or_default())
}
