//! One matchmaker across the cluster, without consensus (docs/CLUSTER.md, "Matchmaker").
//!
//! The live node with the lowest name (this node and the peers its membership hears) runs the
//! pool. Every node keeps its own tickets (the source of truth: limits, removal, cleanup when a
//! session ends) and forwards each add and remove to the pool node, which holds copies under
//! the same ids and runs the passes over its own tickets and the copies. A group formed there
//! runs the `matchmaker_matched` hook once, on the pool node, and each node of the group's
//! players is sent the group: it takes its tickets out of its pool and tells its sessions.
//!
//! When a node's view of the pool node changes it drops every copy it holds; the new pool node
//! claims the pool (a broadcast) and every node whose view agrees resubmits all its tickets to
//! it (the first chunk replaces what it held from that node); a node that comes to the same
//! view later resubmits then. A pool node that hears a node is gone drops that node's copies.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use metafi_match::{
    Formed, MatchTarget, MatchedEntry, Matchmaking, PoolListener, Presence, TicketCopy,
    TicketRequest,
};
use metafi_realtime::MessageRouter;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use crate::membership::Peers;
use crate::metrics::Kind;
use crate::outgoing::Outgoing;
use crate::{ClusterConfig, MembershipEvent, metrics};

/// Tickets per resubmission message.
const SYNC_CHUNK: usize = 256;

/// On `<prefix>.cluster.matchmaker` (claims) and `<prefix>.cluster.node.NAME.matchmaker`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum MatchmakerMessage {
    /// `node` runs the pool now (broadcast): nodes that agree resubmit their tickets to it.
    Claim { node: String },
    /// All of `node`'s tickets, in chunks; the `first` replaces the copies held from `node`.
    Sync {
        node: String,
        first: bool,
        tickets: Vec<WireTicket>,
    },
    /// A ticket `node` added.
    Add { node: String, ticket: WireTicket },
    /// Tickets `node` removed (by the client, a party change, a session that ended).
    Remove { node: String, tickets: Vec<Uuid> },
    /// A group the pool node (`node`) formed with players of the receiving node.
    Matched {
        node: String,
        entries: Vec<WireEntry>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        match_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WirePresence {
    user_id: Uuid,
    session_id: Uuid,
    username: String,
    node: String,
}

impl WirePresence {
    fn new(p: &Presence) -> WirePresence {
        WirePresence {
            user_id: p.user_id,
            session_id: p.session_id,
            username: p.username.to_string(),
            node: p.node.to_string(),
        }
    }

    fn presence(self) -> Arc<Presence> {
        Arc::new(Presence {
            user_id: self.user_id,
            session_id: self.session_id,
            username: Arc::from(self.username),
            node: Arc::from(self.node),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireTicket {
    id: Uuid,
    created_ms: i64,
    presences: Vec<WirePresence>,
    #[serde(default)]
    party_id: String,
    query: String,
    min_count: u32,
    max_count: u32,
    count_multiple: u32,
    #[serde(default)]
    string_properties: HashMap<String, String>,
    #[serde(default)]
    numeric_properties: HashMap<String, f64>,
}

impl WireTicket {
    fn new(t: &TicketCopy) -> WireTicket {
        WireTicket {
            id: t.id,
            created_ms: t.created_ms,
            presences: t.presences.iter().map(|p| WirePresence::new(p)).collect(),
            party_id: t.party_id.clone(),
            query: t.request.query.clone(),
            min_count: t.request.min_count,
            max_count: t.request.max_count,
            count_multiple: t.request.count_multiple,
            string_properties: t.request.string_properties.clone(),
            numeric_properties: t.request.numeric_properties.clone(),
        }
    }

    fn copy(self) -> TicketCopy {
        TicketCopy {
            id: self.id,
            created_ms: self.created_ms,
            presences: self
                .presences
                .into_iter()
                .map(WirePresence::presence)
                .collect(),
            party_id: self.party_id,
            request: TicketRequest {
                query: self.query,
                min_count: self.min_count,
                max_count: self.max_count,
                count_multiple: self.count_multiple,
                string_properties: self.string_properties,
                numeric_properties: self.numeric_properties,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireEntry {
    ticket: String,
    presence: WirePresence,
    #[serde(default)]
    party_id: String,
    #[serde(default)]
    string_properties: HashMap<String, String>,
    #[serde(default)]
    numeric_properties: HashMap<String, f64>,
    created_ms: i64,
}

impl WireEntry {
    fn new(e: &MatchedEntry) -> WireEntry {
        WireEntry {
            ticket: e.ticket.clone(),
            presence: WirePresence::new(&e.presence),
            party_id: e.party_id.clone(),
            string_properties: e.string_properties.clone(),
            numeric_properties: e.numeric_properties.clone(),
            created_ms: e.created_ms,
        }
    }

    fn entry(self) -> MatchedEntry {
        MatchedEntry {
            ticket: self.ticket,
            presence: self.presence.presence(),
            party_id: self.party_id,
            string_properties: self.string_properties,
            numeric_properties: self.numeric_properties,
            created_ms: self.created_ms,
        }
    }
}

/// This node's view of which node runs the pool, shared by the listener and the task.
#[derive(Debug)]
struct View {
    node: String,
    pool: RwLock<String>,
}

impl View {
    fn pool(&self) -> String {
        self.pool.read().clone()
    }

    fn runs_pool(&self) -> bool {
        *self.pool.read() == self.node
    }
}

/// Publishes the matchmaker's messages.
#[derive(Debug, Clone)]
struct Sender {
    config: Arc<ClusterConfig>,
    outgoing: Outgoing,
}

impl Sender {
    fn send(&self, subject: String, message: &MatchmakerMessage) {
        if let Ok(payload) = serde_json::to_vec(message) {
            self.outgoing
                .send(subject, Bytes::from(payload), Kind::Matchmaker);
        }
    }

    fn to_node(&self, node: &str, message: &MatchmakerMessage) {
        self.send(self.config.node_matchmaker_subject(node), message);
    }

    /// All of this node's tickets to `pool` (called under the pool's lock).
    fn sync(&self, node: &str, pool: &str, tickets: Vec<TicketCopy>) {
        metrics::matchmaker_resubmitted(tickets.len());
        let wire: Vec<WireTicket> = tickets.iter().map(WireTicket::new).collect();
        if wire.is_empty() {
            self.to_node(
                pool,
                &MatchmakerMessage::Sync {
                    node: node.to_owned(),
                    first: true,
                    tickets: Vec::new(),
                },
            );
            return;
        }
        for (i, chunk) in wire.chunks(SYNC_CHUNK).enumerate() {
            self.to_node(
                pool,
                &MatchmakerMessage::Sync {
                    node: node.to_owned(),
                    first: i == 0,
                    tickets: chunk.to_vec(),
                },
            );
        }
    }
}

/// The [`PoolListener`]: forwards this node's ticket changes to the pool node, and a formed
/// group to the nodes of its players.
#[derive(Debug)]
struct Forwarder {
    view: Arc<View>,
    sender: Sender,
}

impl PoolListener for Forwarder {
    fn added(&self, ticket: &TicketCopy) {
        let pool = self.view.pool();
        if pool != self.view.node {
            self.sender.to_node(
                &pool,
                &MatchmakerMessage::Add {
                    node: self.view.node.clone(),
                    ticket: WireTicket::new(ticket),
                },
            );
        }
    }

    fn removed(&self, tickets: &[Uuid]) {
        let pool = self.view.pool();
        if pool != self.view.node {
            self.sender.to_node(
                &pool,
                &MatchmakerMessage::Remove {
                    node: self.view.node.clone(),
                    tickets: tickets.to_vec(),
                },
            );
        }
    }

    fn formed(&self, formed: &Formed) {
        let nodes: BTreeSet<&str> = formed
            .entries
            .iter()
            .map(|e| &*e.presence.node)
            .filter(|n| *n != self.view.node)
            .collect();
        if nodes.is_empty() {
            return;
        }
        let (match_id, token) = match &formed.target {
            MatchTarget::MatchId(id) => (Some(id.clone()), None),
            MatchTarget::Token(token) => (None, Some(token.clone())),
        };
        let message = MatchmakerMessage::Matched {
            node: self.view.node.clone(),
            entries: formed.entries.iter().map(WireEntry::new).collect(),
            match_id,
            token,
        };
        for node in nodes {
            self.sender.to_node(node, &message);
        }
    }
}

/// The matchmaker's task on one node.
pub(crate) struct MatchmakerTask {
    view: Arc<View>,
    sender: Sender,
    matchmaking: Arc<Matchmaking>,
    /// Tells the players of this node's tickets, a party's members on any node included.
    router: Arc<dyn MessageRouter>,
    peers: Peers,
}

impl MatchmakerTask {
    /// Installs the listener on `matchmaking`; [`MatchmakerTask::run`] does the rest.
    pub(crate) fn new(
        config: Arc<ClusterConfig>,
        outgoing: Outgoing,
        matchmaking: Arc<Matchmaking>,
        router: Arc<dyn MessageRouter>,
        peers: Peers,
    ) -> MatchmakerTask {
        let node = config.node.clone();
        let view = Arc::new(View {
            pool: RwLock::new(node.clone()),
            node,
        });
        let sender = Sender { config, outgoing };
        matchmaking.set_listener(Arc::new(Forwarder {
            view: view.clone(),
            sender: sender.clone(),
        }));
        MatchmakerTask {
            view,
            sender,
            matchmaking,
            router,
            peers,
        }
    }

    pub(crate) async fn run(
        self,
        mut direct: async_nats::Subscriber,
        mut claims: async_nats::Subscriber,
        mut events: broadcast::Receiver<MembershipEvent>,
    ) {
        // This node starts as its own pool (it knows no peer yet), then follows its view.
        self.became(&self.view.node.clone(), None);
        self.check_view();
        loop {
            tokio::select! {
                message = direct.next() => {
                    let Some(message) = message else { break };
                    self.received(&message.payload);
                }
                message = claims.next() => {
                    let Some(message) = message else { break };
                    self.received(&message.payload);
                }
                event = events.recv() => match event {
                    Ok(event) => {
                        if let MembershipEvent::Lost { node } | MembershipEvent::Left { node } = &event
                            && self.view.runs_pool()
                        {
                            self.matchmaking.drop_copies(Some(node));
                            metrics::matchmaker_remote_tickets(self.matchmaking.copies());
                        }
                        self.check_view();
                    }
                    Err(RecvError::Lagged(_)) => {
                        // Losses may have been missed: keep only live nodes' copies.
                        if self.view.runs_pool() {
                            self.matchmaking.drop_copies_except(&self.peers.names());
                        }
                        self.check_view();
                    }
                    Err(RecvError::Closed) => break,
                },
            }
        }
    }

    /// The pool node in this node's view: the lowest name among itself and its live peers.
    fn wanted(&self) -> String {
        self.peers
            .names()
            .into_iter()
            .chain(std::iter::once(self.view.node.clone()))
            .min()
            .unwrap_or_else(|| self.view.node.clone())
    }

    fn check_view(&self) {
        let wanted = self.wanted();
        let current = self.view.pool();
        if wanted != current {
            self.became(&wanted, Some(&current));
        }
    }

    /// This node's view of the pool node changes to `pool`.
    fn became(&self, pool: &str, previous: Option<&str>) {
        let node = self.view.node.clone();
        *self.view.pool.write() = pool.to_owned();
        let runs = pool == node;
        self.matchmaking.set_runs_pool(runs);
        // Copies are never carried over: a new pool rebuilds from the owners' resubmissions.
        self.matchmaking.drop_copies(None);
        metrics::matchmaker_pool(runs);
        metrics::matchmaker_remote_tickets(0);
        if let Some(previous) = previous {
            metrics::matchmaker_pool_changed();
            tracing::info!(%node, pool, previous, "cluster: the matchmaker pool moved");
        }
        if runs {
            self.sender.send(
                self.sender.config.matchmaker_subject(),
                &MatchmakerMessage::Claim { node },
            );
        } else {
            self.resubmit(pool);
        }
    }

    /// All of this node's tickets to `pool`, under the pool's lock: a change made after is
    /// forwarded after them.
    fn resubmit(&self, pool: &str) {
        let node = self.view.node.clone();
        self.matchmaking
            .with_own_tickets(|tickets| self.sender.sync(&node, pool, tickets));
    }

    fn received(&self, payload: &[u8]) {
        metrics::received(Kind::Matchmaker);
        let message = match serde_json::from_slice::<MatchmakerMessage>(payload) {
            Ok(message) => message,
            Err(e) => {
                tracing::debug!(error = %e, "cluster: ignored a malformed matchmaker message");
                return;
            }
        };
        let me = self.view.node.as_str();
        match message {
            MatchmakerMessage::Claim { node } => {
                if node != me && node == self.view.pool() {
                    self.resubmit(&node);
                }
            }
            // Tickets are taken only by the node that runs the pool in its own view; a node
            // that comes to run it later claims it and gets every ticket again.
            MatchmakerMessage::Sync {
                node,
                first,
                tickets,
            } => {
                if node == me || !self.view.runs_pool() {
                    return;
                }
                if first {
                    self.matchmaking.drop_copies(Some(&node));
                }
                let owner: Arc<str> = Arc::from(node.as_str());
                for ticket in tickets {
                    self.hold(&owner, ticket);
                }
            }
            MatchmakerMessage::Add { node, ticket } => {
                if node != me && self.view.runs_pool() {
                    self.hold(&Arc::from(node.as_str()), ticket);
                }
            }
            MatchmakerMessage::Remove { node, tickets } => {
                if node != me {
                    for id in tickets {
                        self.matchmaking.remove_copy(&node, id);
                    }
                }
            }
            MatchmakerMessage::Matched {
                node,
                entries,
                match_id,
                token,
            } => {
                if node == me {
                    return;
                }
                self.matched(entries, match_id, token);
            }
        }
        metrics::matchmaker_remote_tickets(self.matchmaking.copies());
    }

    fn hold(&self, owner: &Arc<str>, ticket: WireTicket) {
        if let Err(e) = self.matchmaking.insert_copy(owner.clone(), ticket.copy()) {
            tracing::debug!(error = %e, owner = %owner, "cluster: ignored a forwarded ticket");
        }
    }

    /// A group formed on the pool node with players of this node: their tickets leave this
    /// node's pool, and the players whose tickets were still held are told (a party's members
    /// wherever their sockets are: the party's node holds its ticket).
    fn matched(&self, entries: Vec<WireEntry>, match_id: Option<String>, token: Option<String>) {
        let target = match (match_id, token) {
            (Some(id), _) => MatchTarget::MatchId(id),
            (None, Some(token)) => MatchTarget::Token(token),
            (None, None) => return,
        };
        let formed = Formed {
            entries: entries.into_iter().map(WireEntry::entry).collect(),
            target,
        };
        let mine: Vec<Uuid> = formed
            .entries
            .iter()
            .filter(|e| *e.presence.node == *self.view.node)
            .filter_map(|e| Uuid::parse_str(&e.ticket).ok())
            .collect::<BTreeSet<Uuid>>()
            .into_iter()
            .collect();
        let held: BTreeSet<String> = self
            .matchmaking
            .take_own(&mine)
            .into_iter()
            .map(|id| id.to_string())
            .collect();
        metrics::matchmaker_stale(mine.len() - held.len());
        metafi_realtime::send_matched(&*self.router, &self.view.node, &formed, |ticket| {
            held.contains(ticket)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_json() {
        let ticket = WireTicket {
            id: Uuid::new_v4(),
            created_ms: 5,
            presences: vec![WirePresence {
                user_id: Uuid::new_v4(),
                session_id: Uuid::new_v4(),
                username: "alice".into(),
                node: "n2".into(),
            }],
            party_id: String::new(),
            query: "+properties.mode:duel".into(),
            min_count: 2,
            max_count: 4,
            count_multiple: 2,
            string_properties: HashMap::from([("mode".into(), "duel".into())]),
            numeric_properties: HashMap::from([("skill".into(), 3.5)]),
        };
        let copy = ticket.clone().copy();
        assert_eq!(WireTicket::new(&copy), ticket);
        for message in [
            MatchmakerMessage::Claim { node: "n1".into() },
            MatchmakerMessage::Add {
                node: "n2".into(),
                ticket: ticket.clone(),
            },
            MatchmakerMessage::Sync {
                node: "n2".into(),
                first: true,
                tickets: vec![ticket],
            },
            MatchmakerMessage::Remove {
                node: "n2".into(),
                tickets: vec![Uuid::new_v4()],
            },
        ] {
            let bytes = serde_json::to_vec(&message).unwrap();
            assert_eq!(
                serde_json::from_slice::<MatchmakerMessage>(&bytes).unwrap(),
                message
            );
        }
        assert!(serde_json::from_slice::<MatchmakerMessage>(b"{\"type\":\"nope\"}").is_err());
    }
}
