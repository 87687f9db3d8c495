//! [`ClusterTracker`]: the presence books of the whole cluster. This node's presences live in a
//! [`LocalTracker`] and are announced (track, untrack, a snapshot when a peer joins); the other
//! nodes' presences are kept from their announcements. Lists and stream members span every
//! node, so a chat message, a presence event or a stream message reaches members on any node
//! through the [`crate::ClusterRouter`]. The node where a presence changes tells every member of
//! the stream; a node that is lost has its presences removed everywhere, and each node tells its
//! own members of the leaves.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use metafi_realtime::{
    LocalRouter, LocalTracker, Presence, PresenceChange, PresenceMeta, RealtimeParts, StreamKey,
    StreamMode, Tracker,
};
use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::metrics;
use crate::sessions::Announcer;
use crate::wire::{PRESENCE_CHUNK, PresenceEntry, SessionMessage, WireStream};

/// The cluster's presences (see the module documentation).
#[derive(Debug)]
pub struct ClusterTracker {
    local: LocalTracker,
    /// Held while a local change is made and announced, and while a snapshot is taken and
    /// queued: receivers never see a snapshot older than an announcement after it.
    announce: Mutex<()>,
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
        let previous = self
            .by_stream
            .entry(stream.clone())
            .or_default()
            .insert(session_id, presence);
        if previous.is_none() {
            self.by_session
                .entry(session_id)
                .or_insert_with(|| (node.clone(), Vec::new()))
                .1
                .push(stream);
            self.count += 1;
        }
        previous
    }

    fn remove(&mut self, session_id: Uuid, stream: &StreamKey) -> Option<Presence> {
        let members = self.by_stream.get_mut(stream)?;
        let removed = members.remove(&session_id)?;
        if members.is_empty() {
            self.by_stream.remove(stream);
        }
        if let Some((_, streams)) = self.by_session.get_mut(&session_id) {
            streams.retain(|s| s != stream);
            if streams.is_empty() {
                self.by_session.remove(&session_id);
            }
        }
        self.count -= 1;
        Some(removed)
    }

    fn remove_session(&mut self, session_id: Uuid) -> Vec<(StreamKey, Presence)> {
        let Some((_, streams)) = self.by_session.remove(&session_id) else {
            return Vec::new();
        };
        let mut removed = Vec::with_capacity(streams.len());
        for stream in streams {
            let Some(members) = self.by_stream.get_mut(&stream) else {
                continue;
            };
            if let Some(presence) = members.remove(&session_id) {
                self.count -= 1;
                if members.is_empty() {
                    self.by_stream.remove(&stream);
                }
                removed.push((stream, presence));
            }
        }
        removed
    }

    fn drop_node(&mut self, node: &str) -> Vec<(StreamKey, Presence)> {
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
            announce: Mutex::new(()),
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

    /// Every local presence, in chunks (the first replaces what peers knew of this node).
    pub(crate) fn publish_snapshot(&self) {
        let _order = self.announce.lock();
        let all: Vec<PresenceEntry> = self
            .local
            .all()
            .iter()
            .map(|(stream, presence)| PresenceEntry::new(stream, presence))
            .collect();
        if all.is_empty() {
            self.announcer.publish(&SessionMessage::Presences {
                node: self.node(),
                first: true,
                presences: Vec::new(),
            });
            return;
        }
        for (i, chunk) in all.chunks(PRESENCE_CHUNK).enumerate() {
            self.announcer.publish(&SessionMessage::Presences {
                node: self.node(),
                first: i == 0,
                presences: chunk.to_vec(),
            });
        }
    }

    /// Applies another node's track (or update). A status presence is told to this node's
    /// followers of the user (see [`ClusterTracker::tell_followers`]).
    pub(crate) fn remote_track(&self, node: &Arc<str>, entry: PresenceEntry) {
        let (stream, presence) = entry.split();
        let status =
            (stream.mode == StreamMode::Status).then(|| (stream.clone(), presence.clone()));
        let previous = self.remote.write().insert(node, stream, presence);
        if let Some((stream, presence)) = status {
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
            self.tell_followers(vec![change]);
        }
    }

    pub(crate) fn remote_untrack(&self, session_id: Uuid, stream: &WireStream) {
        let stream = stream.key();
        let removed = self.remote.write().remove(session_id, &stream);
        if let Some(presence) = removed.filter(|_| stream.mode == StreamMode::Status) {
            self.tell_followers(leaves(vec![(stream, presence)]));
        }
    }

    pub(crate) fn remote_untrack_all(&self, session_id: Uuid) {
        let removed = self.remote.write().remove_session(session_id);
        let status = removed
            .into_iter()
            .filter(|(stream, _)| stream.mode == StreamMode::Status)
            .collect();
        self.tell_followers(leaves(status));
    }

    /// Status follows across nodes: the node where a user's status presence changes tells its
    /// own followers (its status registry holds only its sessions' follows); every other node
    /// tells its own when it applies the announcement, here. So each follower hears each change
    /// once, in the order its user's node made them.
    fn tell_followers(&self, changes: Vec<PresenceChange>) {
        let changes: Vec<PresenceChange> = changes.into_iter().filter(|c| !c.is_empty()).collect();
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
        let mut remote = self.remote.write();
        if first {
            remote.drop_node(node);
        }
        for entry in entries {
            let (stream, presence) = entry.split();
            let _ = remote.insert(node, stream, presence);
        }
    }

    /// Forgets a lost or departed node's presences and tells this node's members of each
    /// visible one leaving (every other node tells its own).
    pub(crate) fn drop_node(&self, node: &str) -> usize {
        let removed = self.remote.write().drop_node(node);
        let count = removed.len();
        let changes = leaves(removed);
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

/// The visible presences removed, as leaves grouped by stream.
fn leaves(removed: Vec<(StreamKey, Presence)>) -> Vec<PresenceChange> {
    let mut changes: HashMap<StreamKey, PresenceChange> = HashMap::new();
    for (stream, presence) in removed {
        if presence.meta.hidden {
            continue;
        }
        changes
            .entry(stream.clone())
            .or_insert_with(|| PresenceChange {
                stream,
                joins: Vec::new(),
                leaves: Vec::new(),
            })
            .leaves
            .push(presence);
    }
    changes.into_values().collect()
}

impl Tracker for ClusterTracker {
    fn track(&self, stream: &StreamKey, presence: Presence) -> Option<PresenceChange> {
        let _order = self.announce.lock();
        let announced = presence.clone();
        let change = self.local.track(stream, presence)?;
        self.announce_track(stream, &announced);
        Some(change)
    }

    fn update(&self, stream: &StreamKey, presence: Presence) -> PresenceChange {
        let _order = self.announce.lock();
        let announced = presence.clone();
        let change = self.local.update(stream, presence);
        self.announce_track(stream, &announced);
        change
    }

    fn untrack(&self, session_id: Uuid, stream: &StreamKey) -> Option<PresenceChange> {
        let _order = self.announce.lock();
        let change = self.local.untrack(session_id, stream)?;
        self.announcer.publish(&SessionMessage::Untrack {
            node: self.node(),
            session_id,
            stream: WireStream::from_key(stream),
        });
        Some(change)
    }

    fn untrack_all(&self, session_id: Uuid) -> Vec<PresenceChange> {
        let _order = self.announce.lock();
        let changes = self.local.untrack_all(session_id);
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
