//! [`ClusterRouter`]: delivery to a session on any node.

use std::sync::Arc;

use metafi_proto::realtime::Format;
use metafi_realtime::{LocalRouter, MessageRouter, Outbound, SessionRegistry};
use uuid::Uuid;

use crate::SessionDirectory;
use crate::membership::Peers;
use crate::metrics::Kind;
use crate::outgoing::Outgoing;
use crate::wire::{DELIVERY_CHUNK, Encoded, encode_delivery};

/// Delivers to this node's sessions directly and to other nodes' sessions through NATS: the
/// recipients are grouped by node and each node gets one message (the session ids, the
/// delivery class, and the envelope's protobuf bytes, encoded once for all nodes, with its JSON
/// if this node had encoded that), which it hands to its own sessions with that class.
///
/// Never waits: a remote delivery is queued for NATS (bounded by
/// `cluster.outgoing_queue_size`; past it, dropped and counted). The count returned includes
/// remote sessions the message was sent towards (whether their outbox accepted it is known
/// only on their node).
#[derive(Debug)]
pub struct ClusterRouter {
    local: LocalRouter,
    registry: Arc<SessionRegistry>,
    directory: Arc<SessionDirectory>,
    outgoing: Outgoing,
    /// Where each node's sessions subject is kept (made once per peer, not per delivery).
    peers: Peers,
}

impl ClusterRouter {
    pub(crate) fn new(
        registry: Arc<SessionRegistry>,
        directory: Arc<SessionDirectory>,
        outgoing: Outgoing,
        peers: Peers,
    ) -> ClusterRouter {
        ClusterRouter {
            local: LocalRouter::new(registry.clone()),
            registry,
            directory,
            outgoing,
            peers,
        }
    }

    /// Sends to each node its recipients; returns how many recipients were sent towards.
    fn send_remote(&self, by_node: Vec<(Arc<str>, Vec<Uuid>)>, outbound: &Outbound) -> usize {
        if by_node.is_empty() {
            return 0;
        }
        let protobuf = outbound.bytes(Format::Protobuf);
        // This node's JSON sessions among the recipients encoded it already (the match outlet
        // queues here first): sent along, the other node need not encode it again. Not made
        // for the other node: it encodes only if a session of its own wants JSON.
        let json = outbound
            .is_encoded(Format::Json)
            .then(|| outbound.bytes(Format::Json));
        let envelope = Encoded {
            class: outbound.class(),
            protobuf: &protobuf,
            json: json.as_deref(),
        };
        let mut sent = 0;
        for (node, ids) in by_node {
            let subject = self.peers.sessions_subject(&node);
            for chunk in ids.chunks(DELIVERY_CHUNK) {
                if self.outgoing.send_batched(
                    subject.clone(),
                    encode_delivery(chunk, envelope),
                    Kind::Deliver,
                ) {
                    sent += chunk.len();
                }
            }
        }
        sent
    }
}

impl MessageRouter for ClusterRouter {
    fn send_to_sessions(&self, session_ids: &[Uuid], outbound: &Outbound) -> usize {
        let mut local = Vec::new();
        let mut remote = Vec::new();
        self.directory
            .split_by_node(session_ids, &mut local, &mut remote);
        let delivered = if local.is_empty() {
            0
        } else {
            self.local.send_to_sessions(&local, outbound)
        };
        delivered + self.send_remote(remote, outbound)
    }

    fn send_to_user(&self, user_id: Uuid, outbound: &Outbound) -> usize {
        let local = self.registry.user_session_ids(user_id);
        let delivered = if local.is_empty() {
            0
        } else {
            self.local.send_to_sessions(&local, outbound)
        };
        let mut remote: Vec<(Arc<str>, Vec<Uuid>)> = Vec::new();
        for session in self.directory.user_sessions(user_id) {
            match remote.iter_mut().find(|(node, _)| *node == session.node) {
                Some((_, ids)) => ids.push(session.session_id),
                None => remote.push((session.node, vec![session.session_id])),
            }
        }
        delivered + self.send_remote(remote, outbound)
    }

    fn is_remote_session(&self, session_id: Uuid) -> bool {
        self.directory.contains(session_id)
    }
}
