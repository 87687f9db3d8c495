//! This node's side of the session directory: it announces its own sessions (opened, closed, and
//! a snapshot whenever a peer joins), applies the other nodes' announcements to the
//! [`SessionDirectory`], and enforces the single-socket rule across nodes.
//!
//! Repair: every `cluster.digest_interval_ms` a node queues a digest of what it announced
//! (`digest.rs`) behind its announcements; a receiver whose sums for that node differ (an
//! announcement was lost in transit) asks it for a snapshot, which replaces what it held.
//!
//! Single socket: every node sees every session open. A node that holds an older socket of the
//! same user closes it (with Nakama's `single_socket` notification, as on one node); "older"
//! compares the open times (each node's clock, milliseconds), then the session ids. Snapshots
//! apply the same rule, so sockets opened on both sides of a partition are settled once it heals.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_nats::Subject;
use bytes::Bytes;
use futures_util::StreamExt;
use metafi_core::Clock;
use metafi_realtime::{LocalRouter, Session, SessionListener, SessionRegistry};
use parking_lot::RwLock;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::{Instant, MissedTickBehavior};
use uuid::Uuid;

use crate::codec::{decode_session_message, encode_session_message, unbatch};
use crate::digest::{Sum, session_entry_hash};
use crate::membership::Peers;
use crate::metrics::Kind;
use crate::outgoing::Outgoing;
use crate::tracker::ClusterTracker;
use crate::wire::{DELIVER, SNAPSHOT_CHUNK, SessionEntry, SessionMessage};
use crate::{MembershipEvent, SessionDirectory, metrics};

/// This node's sessions as announced (with their open times).
#[derive(Debug, Default)]
pub(crate) struct LocalSessions {
    announced: RwLock<Announced>,
}

/// What the peers were told, changed only under the lock that orders the announcements.
#[derive(Debug, Default)]
struct Announced {
    sessions: HashMap<Uuid, SessionEntry>,
    /// `sessions` summed as the digest sums them, kept entry by entry so that a digest costs
    /// the same however many sockets the node holds (summing every session each digest
    /// interval was a cost per held socket and second).
    sum: Sum,
}

impl LocalSessions {
    /// The announced entries of `ids` (a user's sessions, from the registry's index by user:
    /// no scan of every local session per remote open).
    fn entries(&self, ids: &[Uuid]) -> Vec<SessionEntry> {
        let announced = self.announced.read();
        ids.iter()
            .filter_map(|id| announced.sessions.get(id).copied())
            .collect()
    }
}

/// Announces this node's sessions; the registry's [`SessionListener`].
#[derive(Debug)]
pub(crate) struct Announcer {
    pub(crate) node: String,
    /// Who is sent each announcement: every peer, each on its own sessions subject, where this
    /// node's deliveries to it go too (one order per sender across both). A node becoming a
    /// peer is sent a snapshot first (`MembershipEvent::Joined`).
    pub(crate) peers: Peers,
    pub(crate) local: Arc<LocalSessions>,
    pub(crate) outgoing: Outgoing,
    pub(crate) clock: Arc<dyn Clock>,
    /// Test seam: announcements (not digests) to drop as a lost NATS message would be.
    pub(crate) lose_next: AtomicUsize,
}

impl Announcer {
    /// Sends `message` to every peer.
    pub(crate) fn publish(&self, message: &SessionMessage) {
        self.publish_to(None, message);
    }

    /// Sends `message` to `to`, or to every peer.
    pub(crate) fn publish_to(&self, to: Option<&str>, message: &SessionMessage) {
        if !matches!(
            message,
            SessionMessage::Digest { .. } | SessionMessage::Ask { .. }
        ) && self
            .lose_next
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
        {
            return;
        }
        let payload = encode_session_message(message);
        let send = |subject: &Subject| {
            self.outgoing
                .send_batched(subject.clone(), payload.clone(), Kind::Sessions);
        };
        match to {
            Some(node) => send(&self.peers.sessions_subject(node)),
            None => self.peers.for_each_sessions_subject(send),
        }
    }

    /// Queues the digest of what this node announced: `presences` (summed by the tracker
    /// under its announcement lock, which is held meanwhile) and its sessions (summed here
    /// under their lock), so it lands behind every announcement it covers.
    pub(crate) fn publish_digest(&self, presences: Sum) {
        let local = self.local.announced.read();
        self.publish(&SessionMessage::Digest {
            node: self.node.clone(),
            sessions: local.sum,
            presences,
        });
    }

    /// Every local session, in chunks (the first replaces what the receivers knew of this
    /// node), to `to` or to every peer.
    pub(crate) fn publish_snapshot(&self, to: Option<&str>) {
        // Under the read lock until queued: an open or close announced meanwhile is queued
        // after the snapshot, never before it (a first chunk would undo it at the receivers).
        let local = self.local.announced.read();
        let all: Vec<SessionEntry> = local.sessions.values().copied().collect();
        let mut chunks = all.chunks(SNAPSHOT_CHUNK).peekable();
        if chunks.peek().is_none() {
            self.publish_to(
                to,
                &SessionMessage::Snapshot {
                    node: self.node.clone(),
                    first: true,
                    sessions: Vec::new(),
                },
            );
            return;
        }
        for (i, chunk) in chunks.enumerate() {
            self.publish_to(
                to,
                &SessionMessage::Snapshot {
                    node: self.node.clone(),
                    first: i == 0,
                    sessions: chunk.to_vec(),
                },
            );
        }
    }
}

impl SessionListener for Announcer {
    fn added(&self, session: &Arc<Session>) {
        let entry = SessionEntry {
            session_id: session.id(),
            user_id: session.user_id(),
            opened_ms: u64::try_from(self.clock.now_ms()).unwrap_or_default(),
        };
        // Under the lock until published: a snapshot taken meanwhile cannot miss it and a
        // close cannot overtake it.
        let mut local = self.local.announced.write();
        if let Some(replaced) = local.sessions.insert(entry.session_id, entry) {
            local.sum.remove(session_entry_hash(&replaced));
        }
        local.sum.add(session_entry_hash(&entry));
        self.publish(&SessionMessage::Open {
            node: self.node.clone(),
            session: entry,
        });
    }

    fn removed(&self, session_id: Uuid, user_id: Uuid) {
        let mut local = self.local.announced.write();
        if let Some(removed) = local.sessions.remove(&session_id) {
            local.sum.remove(session_entry_hash(&removed));
            self.publish(&SessionMessage::Close {
                node: self.node.clone(),
                session_id,
                user_id,
            });
        }
    }
}

/// An announcement, or None (logged) for one that is not.
fn decode(part: &Bytes) -> Option<SessionMessage> {
    let message = decode_session_message(part);
    if message.is_none() {
        tracing::debug!("cluster: ignored a malformed sessions message");
    }
    message
}

/// What the sessions task works with.
#[derive(Debug)]
pub(crate) struct SessionsTask {
    pub(crate) announcer: Arc<Announcer>,
    pub(crate) directory: Arc<SessionDirectory>,
    pub(crate) tracker: Arc<ClusterTracker>,
    pub(crate) registry: Arc<SessionRegistry>,
    pub(crate) single_socket: bool,
    pub(crate) peers: Peers,
    pub(crate) digest_interval: Duration,
}

/// What the sessions task remembers of the snapshots it asked for and sent.
#[derive(Debug, Default)]
struct Repairs {
    /// When this node last asked each peer for a snapshot.
    asked: HashMap<String, Instant>,
    /// When this node last sent its snapshot because a peer asked.
    answered: Option<Instant>,
}

impl SessionsTask {
    /// Applies the other nodes' announcements and hands their deliveries to this node's
    /// sessions (through `local`), both from this node's sessions subject (`incoming`), in the
    /// order each peer made them: a peer queues both for this node on that one subject through
    /// one queue and one connection, and NATS keeps that order. So a join event reaches a
    /// member before the newcomer's first message, and a message sent before a leave before the
    /// leave event, however the peer batched them.
    pub(crate) async fn run(
        self,
        mut incoming: async_nats::Subscriber,
        local: LocalRouter,
        mut events: broadcast::Receiver<MembershipEvent>,
    ) {
        let mut nodes: HashMap<String, Arc<str>> = HashMap::new();
        let mut repairs = Repairs::default();
        let mut digest =
            tokio::time::interval_at(Instant::now() + self.digest_interval, self.digest_interval);
        digest.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                message = incoming.next() => {
                    let Some(message) = message else { break };
                    self.receive(&message.payload, &local, &mut nodes, &mut repairs);
                }
                _ = digest.tick() => self.tracker.publish_digest(),
                event = events.recv() => match event {
                    Ok(MembershipEvent::Joined { node }) => {
                        tracing::debug!(peer = %node, "cluster: sending this node's sessions to a new peer");
                        metrics::snapshot_sent("joined");
                        self.announcer.publish_snapshot(Some(&node));
                        self.tracker.publish_snapshot(Some(&node));
                    }
                    Ok(MembershipEvent::Lost { node } | MembershipEvent::Left { node }) => {
                        let dropped = self.directory.drop_node(&node);
                        let presences = self.tracker.drop_node(&node);
                        tracing::info!(peer = %node, sessions = dropped, presences, "cluster: forgot the sessions of a peer that is gone");
                    }
                    Err(RecvError::Lagged(_)) => {
                        self.announcer.publish_snapshot(None);
                        self.tracker.publish_snapshot(None);
                    }
                    Err(RecvError::Closed) => break,
                },
            }
        }
    }

    /// One NATS message of this node's sessions subject: each announcement and delivery it
    /// carries, in order.
    fn receive(
        &self,
        payload: &Bytes,
        local: &LocalRouter,
        nodes: &mut HashMap<String, Arc<str>>,
        repairs: &mut Repairs,
    ) {
        metrics::received(Kind::Sessions);
        for part in unbatch(payload) {
            if part.first() == Some(&DELIVER) {
                crate::cluster::deliver(local, &part);
            } else {
                self.apply_part(&part, nodes, repairs);
            }
        }
    }

    /// Applies one announcement of a batch (a malformed one is logged and skipped).
    fn apply_part(
        &self,
        part: &Bytes,
        nodes: &mut HashMap<String, Arc<str>>,
        repairs: &mut Repairs,
    ) {
        if let Some(message) = decode(part) {
            self.apply(message, nodes, repairs);
        }
    }

    fn apply(
        &self,
        message: SessionMessage,
        nodes: &mut HashMap<String, Arc<str>>,
        repairs: &mut Repairs,
    ) {
        let mut intern = |node: String| -> Arc<str> {
            nodes
                .entry(node)
                .or_insert_with_key(|node| Arc::from(node.as_str()))
                .clone()
        };
        match message {
            SessionMessage::Open { node, session } => {
                if node == self.announcer.node {
                    return;
                }
                self.directory.open(&intern(node), session);
                self.enforce_single_socket(session);
            }
            SessionMessage::Close {
                node, session_id, ..
            } => {
                if node != self.announcer.node {
                    self.directory.close(&node, session_id);
                    self.tracker.remote_untrack_all(session_id);
                }
            }
            SessionMessage::Snapshot {
                node,
                first,
                sessions,
            } => {
                if node == self.announcer.node {
                    return;
                }
                self.directory.snapshot(&intern(node), first, &sessions);
                for session in sessions {
                    self.enforce_single_socket(session);
                }
            }
            SessionMessage::Track { node, entry } => {
                if node != self.announcer.node {
                    self.tracker.remote_track(&intern(node), entry);
                }
            }
            SessionMessage::Untrack {
                node,
                session_id,
                stream,
            } => {
                if node != self.announcer.node {
                    self.tracker.remote_untrack(session_id, &stream);
                }
            }
            SessionMessage::UntrackAll { node, session_id } => {
                if node != self.announcer.node {
                    self.tracker.remote_untrack_all(session_id);
                }
            }
            SessionMessage::Presences {
                node,
                first,
                presences,
            } => {
                if node != self.announcer.node {
                    self.tracker
                        .remote_snapshot(&intern(node), first, presences);
                }
            }
            SessionMessage::Digest {
                node,
                sessions,
                presences,
            } => {
                if node != self.announcer.node {
                    self.check_digest(&node, sessions, presences, repairs);
                }
                return;
            }
            SessionMessage::Ask { node, of } => {
                if of == self.announcer.node && node != of {
                    self.answer(&node, repairs);
                }
                return;
            }
        }
        metrics::remote_presences(self.tracker.remote_len());
    }

    /// Compares a peer's digest with what this node holds of it; asks for a snapshot when they
    /// differ (at most once per three digest intervals per peer, and only of a live peer: a
    /// lost one's late digest must not bring it back).
    fn check_digest(&self, node: &str, sessions: Sum, presences: Sum, repairs: &mut Repairs) {
        let sessions_ok = self.directory.sum(node) == sessions;
        let presences_ok = self.tracker.remote_sum(node) == presences;
        if sessions_ok && presences_ok {
            repairs.asked.remove(node);
            return;
        }
        if !sessions_ok {
            metrics::digest_mismatch("sessions");
        }
        if !presences_ok {
            metrics::digest_mismatch("presences");
        }
        if !self.peers.contains(node) {
            return;
        }
        let now = Instant::now();
        if repairs
            .asked
            .get(node)
            .is_some_and(|at| now.saturating_duration_since(*at) < self.digest_interval * 3)
        {
            return;
        }
        repairs.asked.insert(node.to_owned(), now);
        metrics::snapshot_asked("sessions");
        tracing::debug!(peer = %node, sessions_ok, presences_ok, "cluster: a peer's digest differs from what this node holds of it; asking for a snapshot");
        self.announcer.publish_to(
            Some(node),
            &SessionMessage::Ask {
                node: self.announcer.node.clone(),
                of: node.to_owned(),
            },
        );
    }

    /// A peer asked for this node's snapshot: sent (to every peer, so it repairs every
    /// peer that drifted), unless one was sent for an ask within half a digest interval (that
    /// one is still on its way to the asker).
    fn answer(&self, asker: &str, repairs: &mut Repairs) {
        let now = Instant::now();
        if repairs
            .answered
            .is_some_and(|at| now.saturating_duration_since(at) < self.digest_interval / 2)
        {
            return;
        }
        repairs.answered = Some(now);
        metrics::snapshot_sent("asked");
        tracing::debug!(peer = %asker, "cluster: a peer asked for this node's snapshot");
        self.announcer.publish_snapshot(None);
        self.tracker.publish_snapshot(None);
    }

    /// Closes this node's sockets of the user that are older than `remote`.
    fn enforce_single_socket(&self, remote: SessionEntry) {
        if !self.single_socket {
            return;
        }
        let ids = self.registry.user_session_ids(remote.user_id);
        if ids.is_empty() {
            return;
        }
        for local in self.announcer.local.entries(&ids) {
            if (local.opened_ms, local.session_id) >= (remote.opened_ms, remote.session_id) {
                continue;
            }
            if let Some(session) = self.registry.get(local.session_id) {
                tracing::debug!(sid = %local.session_id, uid = %local.user_id, newer = %remote.session_id, "cluster: single socket: a newer socket on another node replaces this one");
                metrics::single_socket_closed();
                metafi_realtime::replace_session(&session, self.announcer.clock.now_secs());
            }
        }
    }
}
