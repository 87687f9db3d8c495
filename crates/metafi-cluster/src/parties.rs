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
//!
//! Listings: every `cluster.party_listing_interval_ms` a node whose parties changed (created,
//! closed, updated) casts its whole listing to every peer, in chunks; every tenth time, and when
//! a peer joins, it casts it regardless (what repairs a chunk lost in transit). Each node lists
//! the others' latest ([`metafi_realtime::Parties::set_remote_listing`]), so `GET /v2/party` and
//! `nk.party_list` see every node's parties: this node's live, the others' at most the interval
//! (plus transit) old. A lost or departed node's parties leave the listing at once.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock, Weak};

use metafi_proto::realtime::{Envelope, Format, Message, PartyClose};
use metafi_realtime::party::{ListedParty, Member};
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
use crate::{ClusterConfig, MembershipEvent, SessionDirectory, metrics};

/// Parties per listing cast (a label is at most 2 KiB: a chunk stays well under NATS's 1 MiB).
const LISTING_CHUNK: usize = 256;

/// Every this many listing checks, the listing is sent even if it did not change.
const REFRESH_EVERY: u32 = 10;

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
    /// Other nodes' listings still arriving (chunks), by node.
    building: Mutex<HashMap<String, Vec<ListedParty>>>,
    /// The version of this node's listing sent last.
    published: Mutex<Option<u64>>,
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
            building: Mutex::new(HashMap::new()),
            published: Mutex::new(None),
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

    /// Sends this node's party listing to every peer, in chunks, when it changed since it was
    /// last sent (or always, `force`).
    pub(crate) fn publish_listing(&self, force: bool) {
        let Some(realtime) = self.realtime() else {
            return;
        };
        let Some(parties) = realtime.parties() else {
            return;
        };
        let mut published = self.published.lock();
        if !force && *published == Some(parties.listing_version()) {
            return;
        }
        let (version, listed) = parties.listed();
        let peers = self.calls.peers();
        let chunks: Vec<&[ListedParty]> = if listed.is_empty() {
            vec![&[]]
        } else {
            listed.chunks(LISTING_CHUNK).collect()
        };
        let count = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            let request = CallRequest::PartyListing {
                from: self.config.node.clone(),
                first: i == 0,
                last: i + 1 == count,
                parties: chunk.to_vec(),
            };
            for peer in &peers {
                self.calls.cast(peer, &request, &[]);
            }
        }
        *published = Some(version);
    }

    /// A chunk of another node's party listing.
    pub(crate) fn apply_listing(
        &self,
        from: String,
        first: bool,
        last: bool,
        parties: Vec<ListedParty>,
    ) {
        if from == self.config.node || !self.peers.contains(&from) {
            return;
        }
        let complete = {
            let mut building = self.building.lock();
            let list = building.entry(from.clone()).or_default();
            if first {
                list.clear();
            }
            list.extend(parties);
            if !last {
                return;
            }
            building.remove(&from).unwrap_or_default()
        };
        if let Some(realtime) = self.realtime()
            && let Some(registry) = realtime.parties()
        {
            registry.set_remote_listing(&from, complete);
            metrics::remote_parties(registry.remote_len());
        }
    }

    fn drop_listings_of_gone_nodes(&self) {
        if let Some(realtime) = self.realtime()
            && let Some(parties) = realtime.parties()
        {
            for node in parties.remote_nodes() {
                if !self.peers.contains(&node) {
                    parties.drop_remote_listing(&node);
                }
            }
            metrics::remote_parties(parties.remote_len());
        }
    }

    /// Other nodes' parties this node lists.
    pub(crate) fn remote_len(&self) -> usize {
        self.realtime()
            .and_then(|r| r.parties().map(|p| p.remote_len()))
            .unwrap_or(0)
    }

    /// A session of this node is no longer in another node's party `party_id` (that node said
    /// so): it is not told of the party's end when that node is lost, nor does its end leave it.
    pub(crate) fn left(&self, session_id: Uuid, party_id: &str) {
        let mut reached = self.reached.lock();
        if let Some(list) = reached.get_mut(&session_id) {
            list.retain(|(_, p)| p != party_id);
            if list.is_empty() {
                reached.remove(&session_id);
            }
        }
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
        self.building.lock().remove(node);
        if let Some(realtime) = self.realtime() {
            if let Some(parties) = realtime.parties() {
                parties.drop_remote_listing(node);
                metrics::remote_parties(parties.remote_len());
            }
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

    fn member_left(&self, session_id: Uuid, party_id: &str) {
        if let Some(node) = self.directory.node_of(session_id) {
            self.calls.cast(
                &node,
                &CallRequest::PartyMemberLeft {
                    session_id,
                    party_id: party_id.to_owned(),
                },
                &[],
            );
        }
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

/// Handles lost and departed nodes for the parties, and sends this node's party listing.
pub(crate) async fn run(
    this: Arc<ClusterParties>,
    mut events: broadcast::Receiver<MembershipEvent>,
) {
    let mut interval = tokio::time::interval(this.config.party_listing_interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks: u32 = 0;
    loop {
        tokio::select! {
            _ = interval.tick() => {
                ticks = ticks.wrapping_add(1);
                this.publish_listing(ticks.is_multiple_of(REFRESH_EVERY));
            }
            event = events.recv() => match event {
                Ok(MembershipEvent::Lost { node } | MembershipEvent::Left { node }) => {
                    this.node_gone(&node);
                }
                // A node that joins (or returns) gets the whole listing at once.
                Ok(MembershipEvent::Joined { .. }) => this.publish_listing(true),
                // Losses may have been missed: keep only live nodes' listings.
                Err(RecvError::Lagged(_)) => this.drop_listings_of_gone_nodes(),
                Err(RecvError::Closed) => break,
            },
        }
    }
}
