//! Who is in which stream: the presences of sessions in chat channels and status streams (and,
//! for the match engine, matches). A presence is one session in one stream.
//!
//! The tracker only keeps the books: each call returns the visible change (hidden presences
//! never appear in events) and the caller routes it, after answering its own client — so a
//! joining client sees its join answer before the presence events it caused, as with Nakama.

use std::collections::HashMap;
use std::fmt;

use parking_lot::RwLock;
use uuid::Uuid;

use crate::StreamKey;

/// What others see of a presence.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PresenceMeta {
    pub username: String,
    /// Whether this session's channel messages are stored.
    pub persistence: bool,
    /// Kept out of presence lists and events.
    pub hidden: bool,
    /// Status text; only in status streams.
    pub status: Option<String>,
}

/// One session in one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presence {
    pub session_id: Uuid,
    pub user_id: Uuid,
    pub meta: PresenceMeta,
}

/// The visible joins and leaves of one stream caused by one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresenceChange {
    pub stream: StreamKey,
    pub joins: Vec<Presence>,
    pub leaves: Vec<Presence>,
}

impl PresenceChange {
    fn new(stream: StreamKey) -> PresenceChange {
        PresenceChange {
            stream,
            joins: Vec::new(),
            leaves: Vec::new(),
        }
    }

    /// Nothing others can see changed.
    pub fn is_empty(&self) -> bool {
        self.joins.is_empty() && self.leaves.is_empty()
    }
}

/// The presence books. Cross-node: the first implementation is [`LocalTracker`]; a cluster
/// implementation shares presences between nodes. Implementations must not call back into the
/// caller (no routing here) so callers may hold no locks of theirs and still be safe.
pub trait Tracker: Send + Sync + fmt::Debug {
    /// Adds a presence. `None` when this session was already in the stream (nothing changed);
    /// otherwise the change, whose `joins` is empty for a hidden presence.
    fn track(&self, stream: &StreamKey, presence: Presence) -> Option<PresenceChange>;

    /// Replaces (or adds) a presence's meta: the new one joins, the previous one leaves.
    fn update(&self, stream: &StreamKey, presence: Presence) -> PresenceChange;

    /// Removes a session from a stream. `None` when it was not there.
    fn untrack(&self, session_id: Uuid, stream: &StreamKey) -> Option<PresenceChange>;

    /// Removes a session from every stream (it disconnected).
    fn untrack_all(&self, session_id: Uuid) -> Vec<PresenceChange>;

    /// The meta of a session's presence in a stream.
    fn get(&self, session_id: Uuid, stream: &StreamKey) -> Option<PresenceMeta>;

    /// A session's presence in a stream, with the user it was tracked for.
    fn presence(&self, session_id: Uuid, stream: &StreamKey) -> Option<Presence>;

    /// The presences of a stream, optionally with the hidden ones.
    fn list(&self, stream: &StreamKey, include_hidden: bool) -> Vec<Presence>;

    /// The sessions in a stream (hidden ones too: they still receive the stream's messages).
    fn session_ids(&self, stream: &StreamKey) -> Vec<Uuid>;

    /// The streams a session is in.
    fn streams_of(&self, session_id: Uuid) -> Vec<StreamKey>;

    /// Number of presences tracked, for metrics.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Presences of this node only.
#[derive(Debug, Default)]
pub struct LocalTracker {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    by_stream: HashMap<StreamKey, HashMap<Uuid, Presence>>,
    /// The streams of each session, to untrack everything on disconnect.
    by_session: HashMap<Uuid, Vec<StreamKey>>,
    count: usize,
}

impl LocalTracker {
    pub fn new() -> LocalTracker {
        LocalTracker::default()
    }

    /// Every presence with its stream (a cluster's snapshot of this node's presences).
    pub fn all(&self) -> Vec<(StreamKey, Presence)> {
        let inner = self.inner.read();
        let mut all = Vec::with_capacity(inner.count);
        for (stream, members) in &inner.by_stream {
            for presence in members.values() {
                all.push((stream.clone(), presence.clone()));
            }
        }
        all
    }
}

impl Inner {
    /// Inserts or replaces; returns the previous presence.
    fn insert(&mut self, stream: &StreamKey, presence: Presence) -> Option<Presence> {
        let session_id = presence.session_id;
        let previous = self
            .by_stream
            .entry(stream.clone())
            .or_default()
            .insert(session_id, presence);
        if previous.is_none() {
            self.by_session
                .entry(session_id)
                .or_default()
                .push(stream.clone());
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
        if let Some(streams) = self.by_session.get_mut(&session_id) {
            streams.retain(|s| s != stream);
            if streams.is_empty() {
                self.by_session.remove(&session_id);
            }
        }
        self.count -= 1;
        Some(removed)
    }
}

impl Tracker for LocalTracker {
    fn track(&self, stream: &StreamKey, presence: Presence) -> Option<PresenceChange> {
        let mut inner = self.inner.write();
        if inner
            .by_stream
            .get(stream)
            .is_some_and(|members| members.contains_key(&presence.session_id))
        {
            return None;
        }
        let mut change = PresenceChange::new(stream.clone());
        if !presence.meta.hidden {
            change.joins.push(presence.clone());
        }
        inner.insert(stream, presence);
        Some(change)
    }

    fn update(&self, stream: &StreamKey, presence: Presence) -> PresenceChange {
        let mut change = PresenceChange::new(stream.clone());
        if !presence.meta.hidden {
            change.joins.push(presence.clone());
        }
        let previous = self.inner.write().insert(stream, presence);
        if let Some(previous) = previous.filter(|p| !p.meta.hidden) {
            change.leaves.push(previous);
        }
        change
    }

    fn untrack(&self, session_id: Uuid, stream: &StreamKey) -> Option<PresenceChange> {
        let removed = self.inner.write().remove(session_id, stream)?;
        let mut change = PresenceChange::new(stream.clone());
        if !removed.meta.hidden {
            change.leaves.push(removed);
        }
        Some(change)
    }

    fn untrack_all(&self, session_id: Uuid) -> Vec<PresenceChange> {
        let mut inner = self.inner.write();
        let streams = inner.by_session.remove(&session_id).unwrap_or_default();
        let mut changes = Vec::with_capacity(streams.len());
        for stream in streams {
            let Some(members) = inner.by_stream.get_mut(&stream) else {
                continue;
            };
            let Some(removed) = members.remove(&session_id) else {
                continue;
            };
            if members.is_empty() {
                inner.by_stream.remove(&stream);
            }
            inner.count -= 1;
            let mut change = PresenceChange::new(stream);
            if !removed.meta.hidden {
                change.leaves.push(removed);
            }
            changes.push(change);
        }
        changes
    }

    fn get(&self, session_id: Uuid, stream: &StreamKey) -> Option<PresenceMeta> {
        self.inner
            .read()
            .by_stream
            .get(stream)?
            .get(&session_id)
            .map(|p| p.meta.clone())
    }

    fn presence(&self, session_id: Uuid, stream: &StreamKey) -> Option<Presence> {
        self.inner
            .read()
            .by_stream
            .get(stream)?
            .get(&session_id)
            .cloned()
    }

    fn list(&self, stream: &StreamKey, include_hidden: bool) -> Vec<Presence> {
        self.inner
            .read()
            .by_stream
            .get(stream)
            .map(|members| {
                members
                    .values()
                    .filter(|p| include_hidden || !p.meta.hidden)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    fn session_ids(&self, stream: &StreamKey) -> Vec<Uuid> {
        self.inner
            .read()
            .by_stream
            .get(stream)
            .map(|members| members.keys().copied().collect())
            .unwrap_or_default()
    }

    fn streams_of(&self, session_id: Uuid) -> Vec<StreamKey> {
        self.inner
            .read()
            .by_session
            .get(&session_id)
            .cloned()
            .unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.inner.read().count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StreamMode;

    fn room(name: &str) -> StreamKey {
        StreamKey {
            mode: StreamMode::Room,
            subject: Uuid::nil(),
            subcontext: Uuid::nil(),
            label: name.into(),
        }
    }

    fn presence(session_id: Uuid, hidden: bool) -> Presence {
        Presence {
            session_id,
            user_id: Uuid::new_v4(),
            meta: PresenceMeta {
                username: "u".into(),
                persistence: true,
                hidden,
                status: None,
            },
        }
    }

    #[test]
    fn track_is_idempotent_and_hidden_presences_are_silent() {
        let tracker = LocalTracker::new();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let change = tracker.track(&room("r"), presence(a, false)).unwrap();
        assert_eq!(change.joins.len(), 1);
        assert_eq!(tracker.track(&room("r"), presence(a, false)), None);
        let hidden = tracker.track(&room("r"), presence(b, true)).unwrap();
        assert!(hidden.is_empty(), "a hidden join is no event");
        assert_eq!(tracker.list(&room("r"), false).len(), 1);
        assert_eq!(tracker.list(&room("r"), true).len(), 2);
        assert_eq!(tracker.session_ids(&room("r")).len(), 2);
        assert_eq!(tracker.len(), 2);
    }

    #[test]
    fn untrack_all_leaves_every_stream_and_forgets_the_session() {
        let tracker = LocalTracker::new();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        tracker.track(&room("r1"), presence(a, false));
        tracker.track(&room("r2"), presence(a, false));
        tracker.track(&room("r2"), presence(b, false));
        let mut changes = tracker.untrack_all(a);
        changes.sort_by(|x, y| x.stream.cmp(&y.stream));
        assert_eq!(changes.len(), 2);
        assert!(
            changes
                .iter()
                .all(|c| c.leaves.len() == 1 && c.joins.is_empty())
        );
        assert!(tracker.streams_of(a).is_empty());
        assert_eq!(tracker.session_ids(&room("r1")), Vec::<Uuid>::new());
        assert_eq!(tracker.session_ids(&room("r2")), vec![b]);
        assert_eq!(tracker.len(), 1);
        assert!(tracker.untrack_all(a).is_empty());
        assert_eq!(tracker.untrack(b, &room("r2")).unwrap().leaves.len(), 1);
        assert!(tracker.is_empty());
        assert!(
            tracker.inner.read().by_stream.is_empty(),
            "no empty streams left behind"
        );
    }

    #[test]
    fn update_replaces_with_a_join_and_a_leave() {
        let tracker = LocalTracker::new();
        let a = Uuid::new_v4();
        let first = tracker.update(&room("s"), presence(a, false));
        assert_eq!((first.joins.len(), first.leaves.len()), (1, 0));
        let second = tracker.update(&room("s"), presence(a, false));
        assert_eq!((second.joins.len(), second.leaves.len()), (1, 1));
        assert_eq!(tracker.len(), 1);
    }
}
