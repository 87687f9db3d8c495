//! This node's side of the session directory: it announces its own sessions (opened, closed, and
//! a snapshot whenever a peer joins), applies the other nodes' announcements to the
//! [`SessionDirectory`], and enforces the single-socket rule across nodes.
//!
//! Single socket: every node sees every session open. A node that holds an older socket of the
//! same user closes it (with Nakama's `single_socket` notification, as on one node); "older"
//! compares the open times (each node's clock, milliseconds), then the session ids. Snapshots
//! apply the same rule, so sockets opened on both sides of a partition are settled once it heals.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use metafi_core::Clock;
use metafi_realtime::{LocalRouter, Session, SessionListener, SessionRegistry};
use parking_lot::RwLock;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use crate::outgoing::Outgoing;
use crate::tracker::ClusterTracker;
use crate::wire::{SNAPSHOT_CHUNK, SessionEntry, SessionMessage};
use crate::{MembershipEvent, SessionDirectory, metrics};

/// This node's sessions as announced (with their open times).
#[derive(Debug, Default)]
pub(crate) struct LocalSessions {
    sessions: RwLock<HashMap<Uuid, SessionEntry>>,
}

impl LocalSessions {
    fn of_user(&self, user_id: Uuid) -> Vec<SessionEntry> {
        self.sessions
            .read()
            .values()
            .filter(|s| s.user_id == user_id)
            .copied()
            .collect()
    }
}

/// Announces this node's sessions; the registry's [`SessionListener`].
#[derive(Debug)]
pub(crate) struct Announcer {
    pub(crate) node: String,
    pub(crate) subject: String,
    pub(crate) local: Arc<LocalSessions>,
    pub(crate) outgoing: Outgoing,
    pub(crate) clock: Arc<dyn Clock>,
}

impl Announcer {
    pub(crate) fn publish(&self, message: &SessionMessage) {
        if let Ok(payload) = serde_json::to_vec(message) {
            self.outgoing
                .send(self.subject.clone(), Bytes::from(payload), "sessions");
        }
    }

    /// Every local session, in chunks (the first replaces what peers knew of this node).
    pub(crate) fn publish_snapshot(&self) {
        // Under the read lock until queued: an open or close announced meanwhile is queued
        // after the snapshot, never before it (a first chunk would undo it at the receivers).
        let local = self.local.sessions.read();
        let all: Vec<SessionEntry> = local.values().copied().collect();
        let mut chunks = all.chunks(SNAPSHOT_CHUNK).peekable();
        if chunks.peek().is_none() {
            self.publish(&SessionMessage::Snapshot {
                node: self.node.clone(),
                first: true,
                sessions: Vec::new(),
            });
            return;
        }
        for (i, chunk) in chunks.enumerate() {
            self.publish(&SessionMessage::Snapshot {
                node: self.node.clone(),
                first: i == 0,
                sessions: chunk.to_vec(),
            });
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
        let mut local = self.local.sessions.write();
        local.insert(entry.session_id, entry);
        self.publish(&SessionMessage::Open {
            node: self.node.clone(),
            session: entry,
        });
    }

    fn removed(&self, session_id: Uuid, user_id: Uuid) {
        let mut local = self.local.sessions.write();
        if local.remove(&session_id).is_some() {
            self.publish(&SessionMessage::Close {
                node: self.node.clone(),
                session_id,
                user_id,
            });
        }
    }
}

/// An announcement, or None (logged) for one that is not.
fn parse(payload: &[u8]) -> Option<SessionMessage> {
    metrics::received("sessions");
    match serde_json::from_slice::<SessionMessage>(payload) {
        Ok(message) => Some(message),
        Err(e) => {
            tracing::debug!(error = %e, "cluster: ignored a malformed sessions message");
            None
        }
    }
}

/// What the sessions task works with.
#[derive(Debug)]
pub(crate) struct SessionsTask {
    pub(crate) announcer: Arc<Announcer>,
    pub(crate) directory: Arc<SessionDirectory>,
    pub(crate) tracker: Arc<ClusterTracker>,
    pub(crate) registry: Arc<SessionRegistry>,
    pub(crate) single_socket: bool,
}

impl SessionsTask {
    /// Applies the other nodes' announcements (`subscriber`) and hands their deliveries to
    /// this node's sessions (`deliveries`, through `local`), in one task, in the order they
    /// arrived as far as it can tell: a node publishes both through one queue and one
    /// connection, and NATS hands this node's two subscriptions their messages one after the
    /// other in arrival order, so
    /// - taking announcements first (`biased`) applies every announcement before any delivery
    ///   that arrived after it: a join event (told on applying the announcement) reaches a
    ///   member before the newcomer's first message;
    /// - before a leave (an untrack) is applied, the deliveries already waiting are handed first
    ///   when no further announcement is waiting (then each of them arrived before the leave, or
    ///   after it with no join in between): a message sent just before a leave reaches members
    ///   before the leave event. With another announcement waiting the order is unknown and
    ///   the leave goes first.
    pub(crate) async fn run(
        self,
        mut subscriber: async_nats::Subscriber,
        mut deliveries: async_nats::Subscriber,
        local: LocalRouter,
        mut events: broadcast::Receiver<MembershipEvent>,
    ) {
        let mut nodes: HashMap<String, Arc<str>> = HashMap::new();
        // An announcement taken early (looking for one behind a leave), applied next.
        let mut waiting: Option<async_nats::Message> = None;
        loop {
            if let Some(message) = waiting.take() {
                if let Some(message) = parse(&message.payload) {
                    self.apply(message, &mut nodes);
                }
                continue;
            }
            tokio::select! {
                biased;
                message = subscriber.next() => {
                    let Some(message) = message else { break };
                    let Some(message) = parse(&message.payload) else { continue };
                    if matches!(message, SessionMessage::Untrack { .. } | SessionMessage::UntrackAll { .. }) {
                        match subscriber.next().now_or_never() {
                            Some(Some(next)) => waiting = Some(next),
                            Some(None) => {}
                            None => {
                                while let Some(Some(delivery)) = deliveries.next().now_or_never() {
                                    crate::cluster::deliver(&local, &delivery.payload);
                                }
                            }
                        }
                    }
                    self.apply(message, &mut nodes);
                }
                message = deliveries.next() => {
                    let Some(message) = message else { break };
                    crate::cluster::deliver(&local, &message.payload);
                }
                event = events.recv() => match event {
                    Ok(MembershipEvent::Joined { node }) => {
                        tracing::debug!(peer = %node, "cluster: sending this node's sessions to a new peer");
                        self.announcer.publish_snapshot();
                        self.tracker.publish_snapshot();
                    }
                    Ok(MembershipEvent::Lost { node } | MembershipEvent::Left { node }) => {
                        let dropped = self.directory.drop_node(&node);
                        let presences = self.tracker.drop_node(&node);
                        tracing::info!(peer = %node, sessions = dropped, presences, "cluster: forgot the sessions of a peer that is gone");
                    }
                    Err(RecvError::Lagged(_)) => {
                        self.announcer.publish_snapshot();
                        self.tracker.publish_snapshot();
                    }
                    Err(RecvError::Closed) => break,
                },
            }
        }
    }

    fn apply(&self, message: SessionMessage, nodes: &mut HashMap<String, Arc<str>>) {
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
        }
        metrics::remote_presences(self.tracker.remote_len());
    }

    /// Closes this node's sockets of the user that are older than `remote`.
    fn enforce_single_socket(&self, remote: SessionEntry) {
        if !self.single_socket {
            return;
        }
        for local in self.announcer.local.of_user(remote.user_id) {
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
