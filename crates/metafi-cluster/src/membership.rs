//! Who is in the cluster, from heartbeats on `<prefix>.cluster.members`.
//!
//! Each node beats every `heartbeat_interval` (its first beat says `hello`, and every peer
//! beats back at once, so a starting node knows its peers within one round trip). A peer whose
//! beat has not been heard for `peer_lost_timeout` is lost; peers are checked every
//! [`ClusterConfig::check_period`], so a lost peer is noticed within
//! [`ClusterConfig::lost_bound`]. A node stopping on purpose says `bye` and is forgotten at once.
//! A lost peer that beats again, or a peer that restarted (a new incarnation under the same
//! name), joins again.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use async_nats::{Client, Subject};
use futures_util::StreamExt;
use parking_lot::RwLock;
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use crate::metrics::Kind;
use crate::wire::{MemberMessage, WIRE_VERSION};
use crate::{ClusterConfig, ClusterError, metrics};

/// A change in the set of peers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MembershipEvent {
    /// A peer was heard for the first time, came back after it was lost, or restarted.
    Joined { node: String },
    /// A peer was silent for `peer_lost_timeout` (or restarted: its previous run is lost).
    Lost { node: String },
    /// A peer stopped on purpose.
    Left { node: String },
}

impl MembershipEvent {
    pub fn node(&self) -> &str {
        match self {
            MembershipEvent::Joined { node }
            | MembershipEvent::Lost { node }
            | MembershipEvent::Left { node } => node,
        }
    }
}

#[derive(Debug)]
struct Peer {
    incarnation: u64,
    last_seq: u64,
    last_seen: Instant,
    /// Its subjects, made once when it joins rather than formatted for every message sent to
    /// it (a `Subject` clone is a reference count).
    subjects: PeerSubjects,
}

/// The subjects this node publishes to one peer on.
#[derive(Debug, Clone)]
struct PeerSubjects {
    /// `<prefix>.cluster.node.NAME.sessions`: announcements and deliveries.
    sessions: Subject,
    /// `<prefix>.cluster.node.NAME.call`: calls and casts.
    call: Subject,
}

impl PeerSubjects {
    fn new(config: &ClusterConfig, node: &str) -> PeerSubjects {
        PeerSubjects {
            sessions: config.sessions_subject(node).into(),
            call: config.call_subject(node).into(),
        }
    }
}

#[derive(Debug)]
struct Shared {
    config: ClusterConfig,
    incarnation: u64,
    peers: RwLock<BTreeMap<String, Peer>>,
    events: broadcast::Sender<MembershipEvent>,
}

/// A live view of a node's peers.
#[derive(Debug, Clone)]
pub(crate) struct Peers(Arc<Shared>);

impl Peers {
    pub(crate) fn contains(&self, node: &str) -> bool {
        self.0.peers.read().contains_key(node)
    }

    /// `node`'s sessions subject: the peer's own copy, or made now for a node that is not (or
    /// not yet) a peer — its sessions may be known before its first heartbeat is read, since
    /// NATS orders messages per subject only.
    pub(crate) fn sessions_subject(&self, node: &str) -> Subject {
        match self.0.peers.read().get(node) {
            Some(peer) => peer.subjects.sessions.clone(),
            None => self.0.config.sessions_subject(node).into(),
        }
    }

    /// `node`'s call subject if it is a peer (calls and casts go to peers only).
    pub(crate) fn call_subject(&self, node: &str) -> Option<Subject> {
        self.0
            .peers
            .read()
            .get(node)
            .map(|peer| peer.subjects.call.clone())
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.0.peers.read().keys().cloned().collect()
    }

    /// Calls `f` with each peer's sessions subject, under the peers' read lock (no list is
    /// built: this runs for every announcement).
    pub(crate) fn for_each_sessions_subject(&self, mut f: impl FnMut(&Subject)) {
        for peer in self.0.peers.read().values() {
            f(&peer.subjects.sessions);
        }
    }
}

/// This node's membership: its heartbeats and its view of the peers.
#[derive(Debug)]
pub struct Membership {
    shared: Arc<Shared>,
    /// `true`: say bye before stopping; `false`: stop silently, as a crashed node would.
    stop: Option<oneshot::Sender<bool>>,
    task: Option<JoinHandle<()>>,
}

impl Membership {
    /// Subscribes to the members subject, announces this node and starts heartbeating.
    pub async fn start(client: Client, config: ClusterConfig) -> Result<Membership, ClusterError> {
        Ok(Membership::start_subscribed(client, config).await?.0)
    }

    /// [`Membership::start`], with a receiver of every event from the very first (the peers
    /// that answer this node's hello included).
    pub async fn start_subscribed(
        client: Client,
        config: ClusterConfig,
    ) -> Result<(Membership, broadcast::Receiver<MembershipEvent>), ClusterError> {
        let subscriber = client
            .subscribe(config.members_subject())
            .await
            .map_err(|e| ClusterError::Nats(format!("subscribing to the members subject: {e}")))?;
        let (events, first_events) = broadcast::channel(1024);
        let shared = Arc::new(Shared {
            incarnation: uuid::Uuid::new_v4().as_u64_pair().0,
            config,
            peers: RwLock::new(BTreeMap::new()),
            events,
        });
        let (stop, stop_rx) = oneshot::channel();
        let task = tokio::spawn(run(shared.clone(), client, subscriber, stop_rx));
        Ok((
            Membership {
                shared,
                stop: Some(stop),
                task: Some(task),
            },
            first_events,
        ))
    }

    /// This node's name.
    pub fn node(&self) -> &str {
        &self.shared.config.node
    }

    /// The peers heard from within `peer_lost_timeout`, by name.
    pub fn peers(&self) -> Vec<String> {
        self.shared.peers.read().keys().cloned().collect()
    }

    /// A live view of the peers, for other parts of the cluster.
    pub(crate) fn peers_view(&self) -> Peers {
        Peers(self.shared.clone())
    }

    /// Joins, losses and leaves from now on.
    pub fn events(&self) -> broadcast::Receiver<MembershipEvent> {
        self.shared.events.subscribe()
    }

    /// Stops heartbeating after telling the peers (`bye`): they forget this node at once.
    pub async fn leave(mut self) {
        self.finish(true).await;
    }

    /// Stops heartbeating without a word, as a crashed node would: peers notice within
    /// [`ClusterConfig::lost_bound`]. For tests and for a node cut off from NATS.
    pub async fn halt(mut self) {
        self.finish(false).await;
    }

    async fn finish(&mut self, say_bye: bool) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(say_bye);
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn run(
    shared: Arc<Shared>,
    client: Client,
    mut subscriber: async_nats::Subscriber,
    mut stop: oneshot::Receiver<bool>,
) {
    let config = &shared.config;
    let subject = config.members_subject();
    let mut seq = 0u64;
    let beat = |seq: &mut u64, hello: bool| {
        *seq += 1;
        MemberMessage::Heartbeat {
            node: config.node.clone(),
            incarnation: shared.incarnation,
            seq: *seq,
            hello,
            wire: WIRE_VERSION,
        }
    };
    publish(&client, &subject, &beat(&mut seq, true)).await;
    tracing::info!(node = %config.node, subject = %subject, "cluster: announced this node");
    let mut heartbeat = tokio::time::interval_at(
        Instant::now() + config.heartbeat_interval,
        config.heartbeat_interval,
    );
    heartbeat.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut check = tokio::time::interval(config.check_period());
    check.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut warned_duplicates = HashSet::new();
    loop {
        tokio::select! {
            biased;
            say_bye = &mut stop => {
                if say_bye.unwrap_or(false) {
                    let bye = MemberMessage::Bye {
                        node: config.node.clone(),
                        incarnation: shared.incarnation,
                    };
                    publish(&client, &subject, &bye).await;
                    let _ = client.flush().await;
                    tracing::info!(node = %config.node, "cluster: left");
                }
                break;
            }
            message = subscriber.next() => {
                let Some(message) = message else {
                    tracing::warn!("cluster: the members subscription ended");
                    break;
                };
                metrics::received(Kind::Heartbeat);
                let Ok(message) = serde_json::from_slice::<MemberMessage>(&message.payload) else {
                    tracing::debug!("cluster: ignored a malformed members message");
                    continue;
                };
                if shared.heard(message, Instant::now(), &mut warned_duplicates) {
                    publish(&client, &subject, &beat(&mut seq, false)).await;
                }
            }
            _ = heartbeat.tick() => {
                publish(&client, &subject, &beat(&mut seq, false)).await;
            }
            _ = check.tick() => shared.expire(Instant::now()),
        }
    }
    let _ = subscriber.unsubscribe().await;
}

async fn publish(client: &Client, subject: &str, message: &MemberMessage) {
    let Ok(payload) = serde_json::to_vec(message) else {
        return;
    };
    match client.publish(subject.to_owned(), payload.into()).await {
        Ok(()) => metrics::sent(Kind::Heartbeat),
        Err(e) => {
            metrics::dropped(Kind::Heartbeat);
            tracing::warn!(error = %e, "cluster: cannot publish a heartbeat");
        }
    }
}

impl Shared {
    /// Applies a members message heard at `now`; true when this node should beat back at once
    /// (a hello).
    fn heard(&self, message: MemberMessage, now: Instant, warned: &mut HashSet<u64>) -> bool {
        match message {
            MemberMessage::Heartbeat {
                node,
                incarnation,
                seq,
                hello,
                wire,
            } => {
                if node == self.config.node {
                    if incarnation != self.incarnation && warned.insert(incarnation) {
                        tracing::error!(node = %node, "cluster: another node runs under this node's name; give every node its own name");
                    }
                    return false;
                }
                if wire != WIRE_VERSION {
                    // It would hear none of this node's announcements and deliveries, nor this
                    // node its: not a peer, rather than a peer that silently half works.
                    if warned.insert(incarnation) {
                        tracing::error!(peer = %node, peer_wire = wire, wire = WIRE_VERSION, "cluster: a node of another MetaFi version (cluster wire version) is on this cluster's subjects; it is not taken as a peer: run one MetaFi version on every node");
                    }
                    return false;
                }
                self.beat(node, incarnation, seq, now);
                hello
            }
            MemberMessage::Bye { node, incarnation } => {
                let mut peers = self.peers.write();
                if peers
                    .get(&node)
                    .is_some_and(|peer| peer.incarnation == incarnation)
                {
                    peers.remove(&node);
                    let count = peers.len();
                    drop(peers);
                    metrics::peers(count);
                    metrics::peer_event("left");
                    tracing::info!(peer = %node, peers = count, "cluster: peer left");
                    let _ = self.events.send(MembershipEvent::Left { node });
                }
                false
            }
        }
    }

    fn beat(&self, node: String, incarnation: u64, seq: u64, now: Instant) {
        let mut peers = self.peers.write();
        let mut events = Vec::new();
        match peers.get_mut(&node) {
            Some(peer) if peer.incarnation == incarnation => {
                if seq > peer.last_seq {
                    metrics::heartbeats_missed(seq - peer.last_seq - 1);
                    peer.last_seq = seq;
                }
                peer.last_seen = now;
            }
            known => {
                if known.is_some() {
                    // Restarted under the same name: its previous run is gone.
                    metrics::peer_event("lost");
                    tracing::warn!(peer = %node, "cluster: peer restarted");
                    events.push(MembershipEvent::Lost { node: node.clone() });
                }
                let subjects = match known {
                    Some(peer) => peer.subjects.clone(),
                    None => PeerSubjects::new(&self.config, &node),
                };
                peers.insert(
                    node.clone(),
                    Peer {
                        incarnation,
                        last_seq: seq,
                        last_seen: now,
                        subjects,
                    },
                );
                metrics::peer_event("joined");
                tracing::info!(peer = %node, peers = peers.len(), "cluster: peer joined");
                events.push(MembershipEvent::Joined { node });
            }
        }
        let count = peers.len();
        drop(peers);
        metrics::peers(count);
        for event in events {
            let _ = self.events.send(event);
        }
    }

    /// Declares lost every peer silent for longer than `peer_lost_timeout`.
    fn expire(&self, now: Instant) {
        let timeout = self.config.peer_lost_timeout;
        let mut lost = Vec::new();
        let mut peers = self.peers.write();
        peers.retain(|node, peer| {
            let silent = now.saturating_duration_since(peer.last_seen);
            if silent <= timeout {
                return true;
            }
            let missed = silent.as_millis() / self.config.heartbeat_interval.as_millis().max(1);
            metrics::heartbeats_missed(u64::try_from(missed).unwrap_or(u64::MAX));
            lost.push((node.clone(), silent));
            false
        });
        let count = peers.len();
        drop(peers);
        if lost.is_empty() {
            return;
        }
        metrics::peers(count);
        for (node, silent) in lost {
            metrics::peer_event("lost");
            tracing::warn!(peer = %node, silent_ms = silent.as_millis() as u64, peers = count, "cluster: peer lost");
            let _ = self.events.send(MembershipEvent::Lost { node });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn shared() -> (Shared, broadcast::Receiver<MembershipEvent>) {
        let mut config = ClusterConfig::new("nats://127.0.0.1:4222", "self");
        config.heartbeat_interval = Duration::from_millis(100);
        config.peer_lost_timeout = Duration::from_millis(400);
        let (events, rx) = broadcast::channel(16);
        let shared = Shared {
            config,
            incarnation: 1,
            peers: RwLock::new(BTreeMap::new()),
            events,
        };
        (shared, rx)
    }

    fn heartbeat(node: &str, incarnation: u64, seq: u64) -> MemberMessage {
        MemberMessage::Heartbeat {
            node: node.into(),
            incarnation,
            seq,
            hello: false,
            wire: WIRE_VERSION,
        }
    }

    /// The timeout rule on explicit instants (no wall clock): a peer is kept while its
    /// silence is at most `peer_lost_timeout`, lost once it is longer, and joins again when it
    /// beats after that.
    #[test]
    fn a_peer_is_lost_only_after_the_timeout_and_rejoins_when_heard_again() {
        let (shared, mut events) = shared();
        let mut warned = HashSet::new();
        let t0 = Instant::now();
        shared.heard(heartbeat("a", 7, 1), t0, &mut warned);
        assert_eq!(
            events.try_recv().unwrap(),
            MembershipEvent::Joined { node: "a".into() }
        );

        let timeout = shared.config.peer_lost_timeout;
        shared.expire(t0 + timeout);
        assert!(
            events.try_recv().is_err(),
            "silent exactly the timeout: kept"
        );
        assert_eq!(shared.peers.read().len(), 1);

        // A beat in time resets the silence.
        shared.heard(heartbeat("a", 7, 2), t0 + timeout, &mut warned);
        shared.expire(t0 + timeout + timeout);
        assert!(events.try_recv().is_err());

        shared.expire(t0 + timeout + timeout + Duration::from_millis(1));
        assert_eq!(
            events.try_recv().unwrap(),
            MembershipEvent::Lost { node: "a".into() }
        );
        assert!(shared.peers.read().is_empty());

        shared.heard(heartbeat("a", 7, 3), t0 + timeout * 3, &mut warned);
        assert_eq!(
            events.try_recv().unwrap(),
            MembershipEvent::Joined { node: "a".into() }
        );
    }

    #[test]
    fn a_new_incarnation_under_a_known_name_is_lost_then_joined() {
        let (shared, mut events) = shared();
        let mut warned = HashSet::new();
        let t0 = Instant::now();
        shared.heard(heartbeat("a", 7, 1), t0, &mut warned);
        let _ = events.try_recv();
        shared.heard(heartbeat("a", 8, 1), t0, &mut warned);
        assert_eq!(
            events.try_recv().unwrap(),
            MembershipEvent::Lost { node: "a".into() }
        );
        assert_eq!(
            events.try_recv().unwrap(),
            MembershipEvent::Joined { node: "a".into() }
        );
    }

    /// A node of cluster wire version 1 hears nothing a version 2 node sends (announcements
    /// and deliveries moved to each node's sessions subject), so it is refused, and said so once.
    #[test]
    fn a_node_of_another_wire_version_is_not_a_peer() {
        let (shared, mut events) = shared();
        let mut warned = HashSet::new();
        let old = MemberMessage::Heartbeat {
            node: "old".into(),
            incarnation: 5,
            seq: 1,
            hello: true,
            wire: 0,
        };
        assert!(!shared.heard(old.clone(), Instant::now(), &mut warned));
        assert!(!shared.heard(old, Instant::now(), &mut warned));
        assert!(events.try_recv().is_err());
        assert!(shared.peers.read().is_empty());
        assert!(warned.contains(&5), "the refusal is logged once");
    }

    #[test]
    fn this_nodes_own_beats_are_not_a_peer() {
        let (shared, mut events) = shared();
        let mut warned = HashSet::new();
        shared.heard(heartbeat("self", 1, 1), Instant::now(), &mut warned);
        shared.heard(heartbeat("self", 2, 1), Instant::now(), &mut warned);
        assert!(events.try_recv().is_err());
        assert!(shared.peers.read().is_empty());
        assert!(
            warned.contains(&2),
            "another node under this name is reported once"
        );
    }
}
