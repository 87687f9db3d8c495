//! [`ClusterTracker`]: the presence books of the whole cluster. This node's presences live in a
//! [`LocalTracker`] and are announced (track, untrack, a snapshot when a peer joins); the other
//! nodes' presences are kept from their announcements. Lists and stream members span every
//! node, so a chat message or a stream message reaches members on any node through the
//! [`crate::ClusterRouter`]. A presence event is told by every node to its own members: the node
//! where a presence changes tells its members, every other node tells its own when it applies
//! the announcement; a node that is lost has its presences removed everywhere, and each node
//! tells its own members of the leaves.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use metafi_realtime::{
    LocalRouter, LocalTracker, Presence, PresenceChange, PresenceMeta, RealtimeParts, StreamKey,
    StreamMode, Tracker,
};
use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::digest::{Sum, presence_hash};
use crate::metrics;
use crate::sessions::Announcer;
use crate::wire::{PRESENCE_CHUNK, PresenceEntry, SessionMessage, WireStream};

/// The cluster's presences (see the module documentation).
#[derive(Debug)]
pub struct ClusterTracker {
    local: LocalTracker,
    /// Held while a local change is made and announced, and while a snapshot is taken and
    /// queued: receivers never see a snapshot older than an announcement after it. It guards
    /// this node's presences summed as the digest sums them, kept change by change (summing
    /// every presence each digest interval copied them all: a cost per held socket and second).
    announce: Mutex<LocalSum>,
    remote: RwLock<Remote>,
    announcer: Arc<Announcer>,
    /// The node's realtime parts, to tell local members of a lost node's leaves.
    parts: OnceLock<RealtimeParts>,
}

#[derive(Debug, Default)]
struct Remote {
    by_stream: HashMap<StreamKey, HashMap<Uuid, Presence>>,
    /// Each remote session's node and streams.
    by_session: HashMap<Uuid, (Arc<str>, Vec<StreamKey>)>,
    count: usize,
    /// What this node held of each node when that node's latest snapshot began: presences of
    /// the snapshot not in it are new here (members are told of them as joins).
    baselines: HashMap<Arc<str>, HashSet<(Uuid, StreamKey)>>,
    /// Each node's presences summed as its digest sums them (`digest.rs`).
    sums: HashMap<Arc<str>, Sum>,
}

impl Remote {
    /// Holds a presence; returns the one it replaced (an update).
    fn insert(
        &mut self,
        node: &Arc<str>,
        stream: StreamKey,
        presence: Presence,
    ) -> Option<Presence> {
        let session_id = presence.session_id;
        let hash = presence_hash(&stream, &presence);
        let previous = self
            .by_stream
            .entry(stream.clone())
            .or_default()
            .insert(session_id, presence);
        let holder = match &previous {
            Some(previous) => {
                let holder = self.by_session.get(&session_id).map(|(n, _)| n.clone());
                if let Some(sum) = holder.as_ref().and_then(|n| self.sums.get_mut(n)) {
                    sum.remove(presence_hash(&stream, previous));
                }
                holder.unwrap_or_else(|| node.clone())
            }
            None => {
                let entry = self
                    .by_session
                    .entry(session_id)
                    .or_insert_with(|| (node.clone(), Vec::new()));
                entry.1.push(stream);
                self.count += 1;
                entry.0.clone()
            }
        };
        self.sums.entry(holder).or_default().add(hash);
        previous
    }

    fn remove(&mut self, session_id: Uuid, stream: &StreamKey) -> Option<Presence> {
        let members = self.by_stream.get_mut(stream)?;
        let removed = members.remove(&session_id)?;
        if members.is_empty() {
            self.by_stream.remove(stream);
        }
        if let Some((node, streams)) = self.by_session.get_mut(&session_id) {
            if let Some(sum) = self.sums.get_mut(node) {
                sum.remove(presence_hash(stream, &removed));
            }
            streams.retain(|s| s != stream);
            if streams.is_empty() {
                self.by_session.remove(&session_id);
            }
        }
        self.count -= 1;
        Some(removed)
    }

    fn remove_session(&mut self, session_id: Uuid) -> Vec<(StreamKey, Presence)> {
        let Some((node, streams)) = self.by_session.remove(&session_id) else {
            return Vec::new();
        };
        let mut removed = Vec::with_capacity(streams.len());
        for stream in streams {
            let Some(members) = self.by_stream.get_mut(&stream) else {
                continue;
            };
            if let Some(presence) = members.remove(&session_id) {
                if let Some(sum) = self.sums.get_mut(&node) {
                    sum.remove(presence_hash(&stream, &presence));
                }
                self.count -= 1;
                if members.is_empty() {
                    self.by_stream.remove(&stream);
                }
                removed.push((stream, presence));
            }
        }
        removed
    }

    /// Applies a chunk of `node`'s snapshot (the `first` replaces what was held of it);
    /// returns the presences that are new here.
    fn snapshot(
        &mut self,
        node: &Arc<str>,
        first: bool,
        entries: Vec<(StreamKey, Presence)>,
    ) -> Vec<(StreamKey, Presence)> {
        if first {
            let before: HashSet<(Uuid, StreamKey)> = self
                .by_session
                .iter()
                .filter(|(_, (n, _))| n == node)
                .flat_map(|(id, (_, streams))| streams.iter().map(|s| (*id, s.clone())))
                .collect();
            self.drop_node(node);
            self.baselines.insert(node.clone(), before);
        }
        let mut joined = Vec::new();
        for (stream, presence) in entries {
            // Without a baseline (its first chunk never arrived) nothing counts as new.
            let new = self
                .baselines
                .get(node)
                .is_some_and(|b| !b.contains(&(presence.session_id, stream.clone())));
            let told = new.then(|| (stream.clone(), presence.clone()));
            if self.insert(node, stream, presence).is_none()
                && let Some(told) = told
            {
                joined.push(told);
            }
        }
        joined
    }

    fn drop_node(&mut self, node: &str) -> Vec<(StreamKey, Presence)> {
        self.baselines.remove(node);
        self.sums.remove(node);
        let sessions: Vec<Uuid> = self
            .by_session
            .iter()
            .filter(|(_, (n, _))| &**n == node)
            .map(|(id, _)| *id)
            .collect();
        sessions
            .into_iter()
            .flat_map(|id| self.remove_session(id))
            .collect()
    }
}

impl ClusterTracker {
    pub(crate) fn new(announcer: Arc<Announcer>) -> ClusterTracker {
        ClusterTracker {
            local: LocalTracker::new(),
            announce: Mutex::new(LocalSum::default()),
            remote: RwLock::new(Remote::default()),
            announcer,
            parts: OnceLock::new(),
        }
    }

    /// The node's realtime parts (built with this tracker), for the leaves of a lost node.
    pub(crate) fn set_parts(&self, parts: RealtimeParts) {
        let _ = self.parts.set(parts);
    }

    /// Presences of other nodes' sessions.
    pub fn remote_len(&self) -> usize {
        self.remote.read().count
    }

    fn node(&self) -> String {
        self.announcer.node.clone()
    }

    /// `node`'s presences as this node holds them, summed as that node's digest sums them.
    pub(crate) fn remote_sum(&self, node: &str) -> Sum {
        self.remote
            .read()
            .sums
            .get(node)
            .copied()
            .unwrap_or_default()
    }

    /// Queues this node's digest (`digest.rs`) behind every announcement it covers: summed
    /// under the announcement lock (presences) and the sessions' lock (see
    /// [`Announcer::publish_digest`]).
    pub(crate) fn publish_digest(&self) {
        let presences = self.announce.lock();
        self.announcer.publish_digest(presences.0);
    }

    /// Every local presence, in chunks (the first replaces what the receivers knew of this
    /// node), to `to` or to every peer.
    pub(crate) fn publish_snapshot(&self, to: Option<&str>) {
        let _order = self.announce.lock();
        let all: Vec<PresenceEntry> = self
            .local
            .all()
            .iter()
            .map(|(stream, presence)| PresenceEntry::new(stream, presence))
            .collect();
        if all.is_empty() {
            self.announcer.publish_to(
                to,
                &SessionMessage::Presences {
                    node: self.node(),
                    first: true,
                    presences: Vec::new(),
                },
            );
            return;
        }
        for (i, chunk) in all.chunks(PRESENCE_CHUNK).enumerate() {
            self.announcer.publish_to(
                to,
                &SessionMessage::Presences {
                    node: self.node(),
                    first: i == 0,
                    presences: chunk.to_vec(),
                },
            );
        }
    }

    /// Applies another node's track (or update), and tells this node's members of the stream
    /// (a status presence: this node's followers of the user) of the change: every node tells
    /// its own members, so a member hears of a presence once its own node holds it, including
    /// presences the changing node did not know were there (see `ClusterTracker::tell_here`).
    pub(crate) fn remote_track(&self, node: &Arc<str>, entry: PresenceEntry) {
        let (stream, presence) = entry.split();
        let told = (stream.clone(), presence.clone());
        let previous = self.remote.write().insert(node, stream, presence);
        let (stream, presence) = told;
        let mut change = PresenceChange {
            stream,
            joins: Vec::new(),
            leaves: Vec::new(),
        };
        if !presence.meta.hidden {
            change.joins.push(presence);
        }
        if let Some(previous) = previous.filter(|p| !p.meta.hidden) {
            change.leaves.push(previous);
        }
        self.tell_here(vec![change]);
    }

    pub(crate) fn remote_untrack(&self, session_id: Uuid, stream: &WireStream) {
        let stream = stream.key();
        let removed = self.remote.write().remove(session_id, &stream);
        if let Some(presence) = removed {
            self.tell_here(grouped(vec![(stream, presence)], false));
        }
    }

    pub(crate) fn remote_untrack_all(&self, session_id: Uuid) {
        let removed = self.remote.write().remove_session(session_id);
        self.tell_here(grouped(removed, false));
    }

    /// Tells this node's sessions of presence changes it learnt from another node. The node
    /// where a presence changes tells only its own members (and, for a status presence, its
    /// own followers: its status registry holds only its sessions' follows); every other node
    /// tells its own here, when it applies the announcement. So each member hears each change
    /// once, in the order the changing node made them, and only once its own node's books hold
    /// it: two members joining on two nodes at once each hear of the other (whichever
    /// announcement arrives after the other's join), and a member that hears of a join can
    /// reach the newcomer at once. Presences a snapshot brought that were new here are told the
    /// same way.
    fn tell_here(&self, changes: Vec<PresenceChange>) {
        // A stream without members here has nobody to tell (status: the followers are in the
        // status registry, asked when delivering).
        let changes: Vec<PresenceChange> = changes
            .into_iter()
            .filter(|c| !c.is_empty())
            .filter(|c| {
                c.stream.mode == StreamMode::Status || !self.local.session_ids(&c.stream).is_empty()
            })
            .collect();
        if changes.is_empty() {
            return;
        }
        if let Some(parts) = self.parts.get() {
            self.local_parts(parts).deliver(changes);
        }
    }

    /// The node's parts delivering to this node's sessions only.
    fn local_parts(&self, parts: &RealtimeParts) -> RealtimeParts {
        RealtimeParts {
            router: Arc::new(LocalRouter::new(parts.registry.clone())),
            ..parts.clone()
        }
    }

    pub(crate) fn remote_snapshot(
        &self,
        node: &Arc<str>,
        first: bool,
        entries: Vec<PresenceEntry>,
    ) {
        let joined = self.remote.write().snapshot(
            node,
            first,
            entries.into_iter().map(PresenceEntry::split).collect(),
        );
        // Presences new here (a node back after a partition, an announcement that was lost):
        // this node tells its own members and followers, as every other node does for its own.
        self.tell_here(grouped(joined, true));
    }

    /// Forgets a lost or departed node's presences and tells this node's members of each
    /// visible one leaving (every other node tells its own).
    pub(crate) fn drop_node(&self, node: &str) -> usize {
        let removed = self.remote.write().drop_node(node);
        let count = removed.len();
        let changes = grouped(removed, false);
        if let Some(parts) = self.parts.get()
            && !changes.is_empty()
        {
            // Delivered to this node's sessions only (status followers included): the other
            // nodes do the same for theirs.
            self.local_parts(parts).deliver(changes);
        }
        metrics::remote_presences(self.remote_len());
        count
    }

    fn announce_track(&self, stream: &StreamKey, presence: &Presence) {
        self.announcer.publish(&SessionMessage::Track {
            node: self.node(),
            entry: PresenceEntry::new(stream, presence),
        });
    }
}

/// The visible presences, as joins (or leaves) grouped by stream.
fn grouped(presences: Vec<(StreamKey, Presence)>, joins: bool) -> Vec<PresenceChange> {
    let mut changes: HashMap<StreamKey, PresenceChange> = HashMap::new();
    for (stream, presence) in presences {
        if presence.meta.hidden {
            continue;
        }
        let change = changes
            .entry(stream.clone())
            .or_insert_with(|| PresenceChange {
                stream,
                joins: Vec::new(),
                leaves: Vec::new(),
            });
        if joins {
            change.joins.push(presence);
        } else {
            change.leaves.push(presence);
        }
    }
    changes.into_values().collect()
}

/// This node's presences summed as its digest sums them (`digest.rs`), kept change by change:
/// each method makes the change in the local books and in the sum together. (Summing every
/// presence each digest interval copied them all: a cost per held socket and second.)
#[derive(Debug, Default)]
struct LocalSum(Sum);

impl LocalSum {
    fn track(
        &mut self,
        local: &LocalTracker,
        stream: &StreamKey,
        presence: Presence,
    ) -> Option<PresenceChange> {
        let hash = presence_hash(stream, &presence);
        let change = local.track(stream, presence)?;
        self.0.add(hash);
        Some(change)
    }

    fn update(
        &mut self,
        local: &LocalTracker,
        stream: &StreamKey,
        presence: Presence,
    ) -> PresenceChange {
        // The presence it replaces, hidden or not (a change names no hidden presence).
        if let Some(previous) = local.presence(presence.session_id, stream) {
            self.0.remove(presence_hash(stream, &previous));
        }
        self.0.add(presence_hash(stream, &presence));
        local.update(stream, presence)
    }

    fn untrack(
        &mut self,
        local: &LocalTracker,
        session_id: Uuid,
        stream: &StreamKey,
    ) -> Option<PresenceChange> {
        let removed = local.presence(session_id, stream)?;
        let change = local.untrack(session_id, stream)?;
        self.0.remove(presence_hash(stream, &removed));
        Some(change)
    }

    fn untrack_all(&mut self, local: &LocalTracker, session_id: Uuid) -> Vec<PresenceChange> {
        for stream in local.streams_of(session_id) {
            if let Some(removed) = local.presence(session_id, &stream) {
                self.0.remove(presence_hash(&stream, &removed));
            }
        }
        local.untrack_all(session_id)
    }
}

impl Tracker for ClusterTracker {
    fn track(&self, stream: &StreamKey, presence: Presence) -> Option<PresenceChange> {
        let mut sum = self.announce.lock();
        let announced = presence.clone();
        let change = sum.track(&self.local, stream, presence)?;
        self.announce_track(stream, &announced);
        Some(change)
    }

    fn update(&self, stream: &StreamKey, presence: Presence) -> PresenceChange {
        let mut sum = self.announce.lock();
        let announced = presence.clone();
        let change = sum.update(&self.local, stream, presence);
        self.announce_track(stream, &announced);
        change
    }

    fn untrack(&self, session_id: Uuid, stream: &StreamKey) -> Option<PresenceChange> {
        let mut sum = self.announce.lock();
        let change = sum.untrack(&self.local, session_id, stream)?;
        self.announcer.publish(&SessionMessage::Untrack {
            node: self.node(),
            session_id,
            stream: WireStream::from_key(stream),
        });
        Some(change)
    }

    fn untrack_all(&self, session_id: Uuid) -> Vec<PresenceChange> {
        let mut sum = self.announce.lock();
        let changes = sum.untrack_all(&self.local, session_id);
        if !changes.is_empty() {
            self.announcer.publish(&SessionMessage::UntrackAll {
                node: self.node(),
                session_id,
            });
        }
        changes
    }

    fn get(&self, session_id: Uuid, stream: &StreamKey) -> Option<PresenceMeta> {
        self.local.get(session_id, stream).or_else(|| {
            self.remote
                .read()
                .by_stream
                .get(stream)?
                .get(&session_id)
                .map(|p| p.meta.clone())
        })
    }

    fn presence(&self, session_id: Uuid, stream: &StreamKey) -> Option<Presence> {
        self.local.presence(session_id, stream).or_else(|| {
            self.remote
                .read()
                .by_stream
                .get(stream)?
                .get(&session_id)
                .cloned()
        })
    }

    fn list(&self, stream: &StreamKey, include_hidden: bool) -> Vec<Presence> {
        let mut list = self.local.list(stream, include_hidden);
        if let Some(members) = self.remote.read().by_stream.get(stream) {
            list.extend(
                members
                    .values()
                    .filter(|p| include_hidden || !p.meta.hidden)
                    .cloned(),
            );
        }
        list
    }

    fn session_ids(&self, stream: &StreamKey) -> Vec<Uuid> {
        let mut ids = self.local.session_ids(stream);
        if let Some(members) = self.remote.read().by_stream.get(stream) {
            ids.extend(members.keys().copied());
        }
        ids
    }

    fn streams_of(&self, session_id: Uuid) -> Vec<StreamKey> {
        let local = self.local.streams_of(session_id);
        if !local.is_empty() {
            return local;
        }
        self.remote
            .read()
            .by_session
            .get(&session_id)
            .map(|(_, streams)| streams.clone())
            .unwrap_or_default()
    }

    /// This node's presences (the realtime metrics count what each node holds).
    fn len(&self) -> usize {
        self.local.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn presence(session_id: Uuid) -> Presence {
        Presence {
            session_id,
            user_id: Uuid::new_v4(),
            meta: PresenceMeta {
                username: "u".into(),
                persistence: false,
                hidden: false,
                status: Some(String::new()),
            },
        }
    }

    /// The sum kept entry by entry equals the sum of what is held, through inserts, updates,
    /// removals, a session's end and a snapshot; another node's presences do not count.
    #[test]
    fn the_kept_sum_follows_every_change() {
        let mut remote = Remote::default();
        let (n1, n2): (Arc<str>, Arc<str>) = (Arc::from("n1"), Arc::from("n2"));
        let held = |remote: &Remote, node: &str| {
            let mut sum = Sum::default();
            for (stream, members) in &remote.by_stream {
                for presence in members.values() {
                    if remote
                        .by_session
                        .get(&presence.session_id)
                        .is_some_and(|(n, _)| &**n == node)
                    {
                        sum.add(presence_hash(stream, presence));
                    }
                }
            }
            sum
        };
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let room = StreamKey {
            mode: StreamMode::Room,
            subject: Uuid::nil(),
            subcontext: Uuid::nil(),
            label: "r".into(),
        };
        let _ = remote.insert(&n1, StreamKey::status(a), presence(a));
        let _ = remote.insert(&n1, room.clone(), presence(a));
        let _ = remote.insert(&n1, room.clone(), presence(b));
        let _ = remote.insert(&n2, room.clone(), presence(c));
        let mut away = presence(b);
        away.meta.status = Some("away".into());
        assert!(remote.insert(&n1, room.clone(), away).is_some());
        assert_eq!(remote.sums[&n1], held(&remote, "n1"));
        assert_eq!(remote.sums[&n1].count, 3);
        let _ = remote.remove(a, &room);
        assert_eq!(remote.sums[&n1], held(&remote, "n1"));
        let _ = remote.remove_session(b);
        assert_eq!(remote.sums[&n1], held(&remote, "n1"));
        let _ = remote.snapshot(&n1, true, vec![(room.clone(), presence(b))]);
        assert_eq!(remote.sums[&n1], held(&remote, "n1"));
        assert_eq!(remote.sums[&n1].count, 1);
        assert_eq!(remote.sums[&n2], held(&remote, "n2"));
        let _ = remote.drop_node("n1");
        assert!(!remote.sums.contains_key("n1"));
    }

    /// The sum every digest sends, kept change by change, equals the sum of every presence
    /// this node holds, through tracks (one refused), updates, untracks and a session's end,
    /// hidden presences included (their changes name no presence).
    #[test]
    fn the_local_sum_follows_every_change_hidden_presences_too() {
        let local = LocalTracker::new();
        let mut sum = LocalSum::default();
        let held = |local: &LocalTracker| {
            let mut held = Sum::default();
            for (stream, presence) in local.all() {
                held.add(presence_hash(&stream, &presence));
            }
            held
        };
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let room = StreamKey {
            mode: StreamMode::Room,
            subject: Uuid::nil(),
            subcontext: Uuid::nil(),
            label: "r".into(),
        };
        let mut hidden = presence(b);
        hidden.meta.hidden = true;
        assert!(
            sum.track(&local, &StreamKey::status(a), presence(a))
                .is_some()
        );
        assert!(sum.track(&local, &room, presence(a)).is_some());
        assert!(sum.track(&local, &room, hidden.clone()).is_some());
        assert!(
            sum.track(&local, &room, presence(a)).is_none(),
            "already there"
        );
        assert_eq!(sum.0, held(&local));
        assert_eq!(sum.0.count, 3);
        let mut away = hidden.clone();
        away.meta.status = Some("away".into());
        let _ = sum.update(&local, &room, away);
        assert_eq!(sum.0, held(&local));
        let _ = sum.update(&local, &StreamKey::status(b), presence(b));
        assert_eq!(sum.0, held(&local));
        assert!(sum.untrack(&local, b, &room).is_some());
        assert!(sum.untrack(&local, b, &room).is_none(), "gone already");
        assert_eq!(sum.0, held(&local));
        let _ = sum.track(&local, &room, hidden);
        assert_eq!(sum.untrack_all(&local, b).len(), 2);
        assert_eq!(sum.0, held(&local));
        assert_eq!(sum.untrack_all(&local, a).len(), 2);
        assert_eq!(sum.0, Sum::default());
    }

    #[test]
    fn a_snapshot_names_only_the_presences_new_here() {
        let mut remote = Remote::default();
        let node: Arc<str> = Arc::from("n2");
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let status = |id: Uuid| (StreamKey::status(id), presence(id));
        // Known from announcements: a and b.
        let _ = remote.insert(&node, status(a).0, status(a).1);
        let _ = remote.insert(&node, status(b).0, status(b).1);
        // A snapshot in two chunks repeats a and b and brings c (its announcement was lost).
        assert!(remote.snapshot(&node, true, vec![status(a)]).is_empty());
        let joined = remote.snapshot(&node, false, vec![status(b), status(c)]);
        assert_eq!(joined.len(), 1);
        assert_eq!(joined[0].1.session_id, c);
        assert_eq!(remote.count, 3);

        // The node is lost (leaves told elsewhere), then back after a partition: its snapshot's
        // presences are all new here.
        assert_eq!(remote.drop_node("n2").len(), 3);
        let joined = remote.snapshot(&node, true, vec![status(a), status(c)]);
        assert_eq!(joined.len(), 2);

        // Without the first chunk nothing counts as new.
        let other: Arc<str> = Arc::from("n3");
        let d = Uuid::new_v4();
        assert!(remote.snapshot(&other, false, vec![status(d)]).is_empty());
    }
}
