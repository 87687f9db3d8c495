//! Parties across nodes. A party lives on the node that created it (its id is
//! `<uuid>.<node>`); a party message from a socket of another node is forwarded to the party's
//! node as a cast (in order, behind the sender node's other messages), handled there as if the
//! member were local, and answered through the router, so the answer and the events it causes
//! reach the member's socket in the order they were made. Party events reach members on any
//! node through the router as every delivery does.
//!
//! A member's session that ends leaves the parties it reached on other nodes (a cast to each);
//! a lost (or departed) node's members leave this node's parties, and this node's sessions in
//! the lost node's parties get a `party_close` for each (the party is gone with its node).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock, Weak};

use metafi_proto::realtime::{Envelope, Format, Message, PartyClose};
use metafi_realtime::party::Member;
use metafi_realtime::{
    LocalRouter, MessageRouter, Outbound, PartyForwarder, Realtime, SessionRegistry,
};
use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use bytes::Bytes;

use crate::calls::Calls;
use crate::membership::Peers;
use crate::wire::{CallRequest, WireMember};
use crate::{ClusterConfig, MembershipEvent, SessionDirectory};

/// A party of another node a session of this node joined: (the party's node, its id).
type Reached = (Arc<str>, String);

/// The cluster's side of this node's parties.
#[derive(Debug)]
pub(crate) struct ClusterParties {
    config: Arc<ClusterConfig>,
    calls: Calls,
    registry: Arc<SessionRegistry>,
    /// The other nodes' sessions: a member's session is hinted there (see
    /// [`SessionDirectory::hint`]) so answers and events reach it however new it is.
    directory: Arc<SessionDirectory>,
    peers: Peers,
    /// This node's realtime layer, once built (`Cluster::serve_parties`).
    realtime: OnceLock<Weak<Realtime>>,
    /// This node's sessions in other nodes' parties (as far as their joins and leaves say):
    /// what to leave when a session ends, what to tell it when that node is lost.
    reached: Mutex<HashMap<Uuid, Vec<Reached>>>,
    /// Other nodes' sessions that asked to join this node's parties, by node.
    guests: Mutex<HashMap<String, HashSet<Uuid>>>,
}

impl ClusterParties {
    pub(crate) fn new(
        config: Arc<ClusterConfig>,
        calls: Calls,
        registry: Arc<SessionRegistry>,
        directory: Arc<SessionDirectory>,
        peers: Peers,
    ) -> ClusterParties {
        ClusterParties {
            config,
            calls,
            registry,
            directory,
            peers,
            realtime: OnceLock::new(),
            reached: Mutex::new(HashMap::new()),
            guests: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn serve(&self, realtime: &Arc<Realtime>) -> bool {
        self.realtime.set(Arc::downgrade(realtime)).is_ok()
    }

    fn realtime(&self) -> Option<Arc<Realtime>> {
        self.realtime.get().and_then(Weak::upgrade)
    }

    /// A forwarded party message from a member on `from`.
    pub(crate) fn handle(&self, from: String, member: WireMember, envelope: &[u8]) {
        let Some(realtime) = self.realtime() else {
            return;
        };
        let Ok(envelope) = Format::Protobuf.decode(envelope) else {
            tracing::debug!("cluster: ignored a forwarded party message that is no envelope");
            return;
        };
        let Some(message) = envelope.message else {
            return;
        };
        if !self.peers.contains(&from) {
            return;
        }
        self.directory
            .hint(&Arc::from(from.as_str()), member.session_id, member.user_id);
        // Only joins are remembered: the member's node remembers the same (and tells when the
        // session ends); other messages come from members already known or are refused.
        if matches!(message, Message::PartyJoin(_)) {
            self.guests
                .lock()
                .entry(from)
                .or_default()
                .insert(member.session_id);
        }
        realtime.handle_forwarded_party_message(
            Member {
                session_id: member.session_id,
                user_id: member.user_id,
                username: member.username,
            },
            envelope.cid,
            message,
        );
    }

    /// A member on another node is gone.
    pub(crate) fn member_gone(&self, session_id: Uuid) {
        for sessions in self.guests.lock().values_mut() {
            sessions.remove(&session_id);
        }
        if let Some(realtime) = self.realtime() {
            realtime.party_member_gone(session_id);
        }
    }

    fn node_gone(&self, node: &str) {
        let guests = self.guests.lock().remove(node).unwrap_or_default();
        if let Some(realtime) = self.realtime() {
            for session in &guests {
                realtime.party_member_gone(*session);
            }
        }
        let mut closed = Vec::new();
        self.reached.lock().retain(|session, list| {
            list.retain(|(n, party_id)| {
                let gone = &**n == node;
                if gone {
                    closed.push((*session, party_id.clone()));
                }
                !gone
            });
            !list.is_empty()
        });
        let local = LocalRouter::new(self.registry.clone());
        for (session, party_id) in closed {
            let close = Envelope::new("", Message::PartyClose(PartyClose { party_id }));
            local.send_to_sessions(&[session], &Outbound::new(close));
        }
    }
}

impl PartyForwarder for ClusterParties {
    fn forward(&self, node: &str, member: &Member, cid: &str, message: &Message) -> bool {
        let envelope = Envelope::new(cid, message.clone());
        let request = CallRequest::PartyMessage {
            from: self.config.node.clone(),
            member: WireMember {
                session_id: member.session_id,
                user_id: member.user_id,
                username: member.username.clone(),
            },
        };
        if !self
            .calls
            .cast(node, &request, &Format::Protobuf.encode(&envelope))
        {
            return false;
        }
        match message {
            Message::PartyJoin(join) => {
                let mut reached = self.reached.lock();
                let list = reached.entry(member.session_id).or_default();
                if !list.iter().any(|(_, p)| *p == join.party_id) {
                    list.push((Arc::from(node), join.party_id.clone()));
                }
            }
            Message::PartyLeave(leave) => {
                let mut reached = self.reached.lock();
                if let Some(list) = reached.get_mut(&member.session_id) {
                    list.retain(|(_, p)| *p != leave.party_id);
                    if list.is_empty() {
                        reached.remove(&member.session_id);
                    }
                }
            }
            _ => {}
        }
        true
    }

    fn session_ended(&self, session_id: Uuid) {
        let Some(list) = self.reached.lock().remove(&session_id) else {
            return;
        };
        let nodes: HashSet<Arc<str>> = list.into_iter().map(|(n, _)| n).collect();
        for node in nodes {
            self.calls.cast(
                &node,
                &CallRequest::PartySessionEnded { session_id },
                &Bytes::new(),
            );
        }
    }
}

/// Handles lost and departed nodes for the parties.
pub(crate) async fn run(
    this: Arc<ClusterParties>,
    mut events: broadcast::Receiver<MembershipEvent>,
) {
    loop {
        match events.recv().await {
            Ok(MembershipEvent::Lost { node } | MembershipEvent::Left { node }) => {
                this.node_gone(&node);
            }
            Ok(MembershipEvent::Joined { .. }) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => break,
        }
    }
}
