//! The sessions of the other nodes: which node holds each session, and each user's sessions
//! across the cluster. Built from the announcements on `<prefix>.cluster.node.NAME.sessions`; a
//! lost or departed node's sessions are dropped with it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::RwLock;
use rustc_hash::{FxHashMap, FxHashSet};
use uuid::Uuid;

use crate::digest::{Sum, session_hash};
use crate::metrics;
use crate::wire::SessionEntry;

/// A session on another node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSession {
    pub node: Arc<str>,
    pub session_id: Uuid,
    pub user_id: Uuid,
    /// When its socket opened (Unix milliseconds, the holding node's clock).
    pub opened_ms: u64,
}

/// The other nodes' sessions.
#[derive(Debug, Default)]
pub struct SessionDirectory {
    inner: RwLock<Inner>,
}

/// The maps keyed by session and user ids hash with Fx, not SipHash: the ids are made by the
/// servers (random version 4 UUIDs, or user ids from the database), never chosen by a client,
/// so there is no key an attacker could pick to collide; every delivery to another node's
/// session looks its id up here.
#[derive(Debug, Default)]
struct Inner {
    sessions: FxHashMap<Uuid, RemoteSession>,
    by_user: FxHashMap<Uuid, Vec<Uuid>>,
    by_node: HashMap<Arc<str>, FxHashSet<Uuid>>,
    /// Each node's sessions summed as its digest sums them (`digest.rs`).
    sums: HashMap<Arc<str>, Sum>,
    /// Sessions closed lately (at most [`RECENTLY_CLOSED`]), so a late hint cannot bring one
    /// back.
    closed: VecDeque<Uuid>,
    closed_set: FxHashSet<Uuid>,
}

/// Closed sessions remembered against late hints.
const RECENTLY_CLOSED: usize = 16_384;

impl Inner {
    fn insert(&mut self, node: &Arc<str>, entry: SessionEntry) {
        self.remove(entry.session_id);
        self.sums.entry(node.clone()).or_default().add(session_hash(
            &entry.session_id,
            &entry.user_id,
            entry.opened_ms,
        ));
        self.sessions.insert(
            entry.session_id,
            RemoteSession {
                node: node.clone(),
                session_id: entry.session_id,
                user_id: entry.user_id,
                opened_ms: entry.opened_ms,
            },
        );
        self.by_user
            .entry(entry.user_id)
            .or_default()
            .push(entry.session_id);
        self.by_node
            .entry(node.clone())
            .or_default()
            .insert(entry.session_id);
    }

    fn remove(&mut self, session_id: Uuid) -> Option<RemoteSession> {
        let removed = self.sessions.remove(&session_id)?;
        if let Some(sum) = self.sums.get_mut(&removed.node) {
            sum.remove(session_hash(
                &removed.session_id,
                &removed.user_id,
                removed.opened_ms,
            ));
        }
        if let Some(ids) = self.by_user.get_mut(&removed.user_id) {
            ids.retain(|id| *id != session_id);
            if ids.is_empty() {
                self.by_user.remove(&removed.user_id);
            }
        }
        if let Some(ids) = self.by_node.get_mut(&removed.node) {
            ids.remove(&session_id);
            if ids.is_empty() {
                self.by_node.remove(&removed.node);
            }
        }
        Some(removed)
    }

    fn drop_node(&mut self, node: &str) -> usize {
        self.sums.remove(node);
        let Some(ids) = self.by_node.remove(node) else {
            return 0;
        };
        for id in &ids {
            if let Some(removed) = self.sessions.remove(id)
                && let Some(user_ids) = self.by_user.get_mut(&removed.user_id)
            {
                user_ids.retain(|other| other != id);
                if user_ids.is_empty() {
                    self.by_user.remove(&removed.user_id);
                }
            }
        }
        ids.len()
    }
}

impl SessionDirectory {
    pub fn new() -> SessionDirectory {
        SessionDirectory::default()
    }

    pub(crate) fn open(&self, node: &Arc<str>, entry: SessionEntry) {
        let mut inner = self.inner.write();
        inner.insert(node, entry);
        metrics::remote_sessions(inner.sessions.len());
    }

    pub(crate) fn close(&self, node: &str, session_id: Uuid) {
        let mut inner = self.inner.write();
        // Only the node that holds a session may close it.
        if inner
            .sessions
            .get(&session_id)
            .is_some_and(|s| &*s.node == node)
        {
            inner.remove(session_id);
        }
        if inner.closed_set.insert(session_id) {
            inner.closed.push_back(session_id);
            if inner.closed.len() > RECENTLY_CLOSED
                && let Some(old) = inner.closed.pop_front()
            {
                inner.closed_set.remove(&old);
            }
        }
        metrics::remote_sessions(inner.sessions.len());
    }

    /// A request from `node` names its session `session_id`: the session is on that node even
    /// if its announcement has not been applied yet (announcements and requests travel on
    /// different subjects, handled by different tasks). Recorded provisionally (open time 0)
    /// unless known or closed lately; its announcement then replaces the entry.
    pub(crate) fn hint(&self, node: &Arc<str>, session_id: Uuid, user_id: Uuid) {
        if self.inner.read().sessions.contains_key(&session_id) {
            return;
        }
        let mut inner = self.inner.write();
        if inner.sessions.contains_key(&session_id) || inner.closed_set.contains(&session_id) {
            return;
        }
        inner.insert(
            node,
            SessionEntry {
                session_id,
                user_id,
                opened_ms: 0,
            },
        );
        metrics::remote_sessions(inner.sessions.len());
    }

    /// Applies a snapshot chunk of `node`: the first replaces what was known of it.
    pub(crate) fn snapshot(&self, node: &Arc<str>, first: bool, entries: &[SessionEntry]) {
        let mut inner = self.inner.write();
        if first {
            inner.drop_node(node);
        }
        for entry in entries {
            inner.insert(node, *entry);
        }
        metrics::remote_sessions(inner.sessions.len());
    }

    /// Forgets every session of a node (lost or gone); returns how many.
    pub fn drop_node(&self, node: &str) -> usize {
        let mut inner = self.inner.write();
        let dropped = inner.drop_node(node);
        metrics::remote_sessions(inner.sessions.len());
        dropped
    }

    /// The node holding a session, if another node does.
    /// Whether `session_id` is another node's session (the match outlet asks for each
    /// recipient it does not hold; no clone of the node's name).
    pub fn contains(&self, session_id: Uuid) -> bool {
        self.inner.read().sessions.contains_key(&session_id)
    }

    pub fn node_of(&self, session_id: Uuid) -> Option<Arc<str>> {
        self.inner
            .read()
            .sessions
            .get(&session_id)
            .map(|s| s.node.clone())
    }

    /// Splits `session_ids` by where they live, under one read of the directory: this node's
    /// (not in the directory) to `local`, the others' to `remote`, grouped by node in the order
    /// the nodes first appear. Nodes are few, so the groups are a list (a node's name is one
    /// shared `Arc`, compared by address first).
    pub(crate) fn split_by_node(
        &self,
        session_ids: &[Uuid],
        local: &mut Vec<Uuid>,
        remote: &mut Vec<(Arc<str>, Vec<Uuid>)>,
    ) {
        let inner = self.inner.read();
        for id in session_ids {
            let Some(session) = inner.sessions.get(id) else {
                local.push(*id);
                continue;
            };
            let node = &session.node;
            match remote
                .iter_mut()
                .find(|(n, _)| Arc::ptr_eq(n, node) || n == node)
            {
                Some((_, ids)) => ids.push(*id),
                None => remote.push((node.clone(), vec![*id])),
            }
        }
    }

    pub fn get(&self, session_id: Uuid) -> Option<RemoteSession> {
        self.inner.read().sessions.get(&session_id).cloned()
    }

    /// A user's sessions on other nodes.
    pub fn user_sessions(&self, user_id: Uuid) -> Vec<RemoteSession> {
        let inner = self.inner.read();
        inner
            .by_user
            .get(&user_id)
            .map(|ids| {
                ids.iter()
                    .filter_map(|id| inner.sessions.get(id).cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `node`'s sessions as this node holds them, summed as that node's digest sums them.
    pub(crate) fn sum(&self, node: &str) -> Sum {
        self.inner
            .read()
            .sums
            .get(node)
            .copied()
            .unwrap_or_default()
    }

    /// Sessions known on `node`.
    pub fn node_len(&self, node: &str) -> usize {
        self.inner
            .read()
            .by_node
            .get(node)
            .map_or(0, FxHashSet::len)
    }

    /// Sessions known on other nodes.
    pub fn len(&self) -> usize {
        self.inner.read().sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(user_id: Uuid) -> SessionEntry {
        SessionEntry {
            session_id: Uuid::new_v4(),
            user_id,
            opened_ms: 1,
        }
    }

    /// A fan-out's recipients split into this node's and each other node's, every recipient
    /// once, in order within a node, the same node's sessions together even when its name
    /// arrives as another `Arc`.
    #[test]
    fn recipients_split_by_node_in_order() {
        let directory = SessionDirectory::new();
        let n1: Arc<str> = Arc::from("n1");
        let n2: Arc<str> = Arc::from("n2");
        let (a, b, c) = (
            entry(Uuid::new_v4()),
            entry(Uuid::new_v4()),
            entry(Uuid::new_v4()),
        );
        directory.open(&n1, a);
        directory.open(&n2, b);
        directory.open(&Arc::from("n1"), c);
        let here = Uuid::new_v4();
        let mut local = Vec::new();
        let mut remote = Vec::new();
        directory.split_by_node(
            &[b.session_id, a.session_id, here, c.session_id],
            &mut local,
            &mut remote,
        );
        assert_eq!(local, vec![here]);
        let remote: Vec<(&str, Vec<Uuid>)> =
            remote.iter().map(|(n, ids)| (&**n, ids.clone())).collect();
        assert_eq!(
            remote,
            vec![
                ("n2", vec![b.session_id]),
                ("n1", vec![a.session_id, c.session_id])
            ]
        );
    }

    #[test]
    fn a_hint_places_a_session_until_its_announcement_and_never_revives_a_closed_one() {
        let directory = SessionDirectory::new();
        let n1: Arc<str> = Arc::from("n1");
        let user = Uuid::new_v4();
        let a = entry(user);
        // A request arrived before the announcement: the session is placed on its node.
        directory.hint(&n1, a.session_id, user);
        assert_eq!(directory.node_of(a.session_id).as_deref(), Some("n1"));
        assert_eq!(directory.get(a.session_id).map(|s| s.opened_ms), Some(0));
        // The announcement replaces the provisional entry.
        directory.open(&n1, a);
        assert_eq!(directory.get(a.session_id).map(|s| s.opened_ms), Some(1));
        assert_eq!(directory.user_sessions(user).len(), 1);
        // Closed, then a late request's hint: it stays closed.
        directory.close("n1", a.session_id);
        directory.hint(&n1, a.session_id, user);
        assert_eq!(directory.node_of(a.session_id), None);
        assert!(directory.is_empty());
    }

    #[test]
    fn sessions_are_found_by_id_user_and_node_and_dropped_with_their_node() {
        let directory = SessionDirectory::new();
        let (n1, n2): (Arc<str>, Arc<str>) = (Arc::from("n1"), Arc::from("n2"));
        let user = Uuid::new_v4();
        let (a, b, c) = (entry(user), entry(user), entry(Uuid::new_v4()));
        directory.open(&n1, a);
        directory.open(&n2, b);
        directory.open(&n2, c);
        assert_eq!(directory.node_of(a.session_id).as_deref(), Some("n1"));
        assert!(directory.contains(a.session_id) && directory.contains(c.session_id));
        assert_eq!(directory.user_sessions(user).len(), 2);
        // Only the holder closes a session.
        directory.close("n2", a.session_id);
        assert_eq!(directory.len(), 3);
        assert_eq!(directory.drop_node("n2"), 2);
        assert_eq!(directory.user_sessions(user).len(), 1);
        assert_eq!(directory.node_of(c.session_id), None);
        assert!(!directory.contains(c.session_id));
        directory.close("n1", a.session_id);
        assert!(directory.is_empty());
        assert!(directory.inner.read().by_user.is_empty());
        assert!(directory.inner.read().by_node.is_empty());
    }

    /// The kept sum equals the sum of the held sessions through opens, a hint and its
    /// announcement, closes and a snapshot.
    #[test]
    fn the_kept_sum_follows_every_change() {
        let directory = SessionDirectory::new();
        let n1: Arc<str> = Arc::from("n1");
        let held = |directory: &SessionDirectory| {
            let inner = directory.inner.read();
            let mut sum = Sum::default();
            for s in inner.sessions.values().filter(|s| &*s.node == "n1") {
                sum.add(session_hash(&s.session_id, &s.user_id, s.opened_ms));
            }
            sum
        };
        let (a, b) = (entry(Uuid::new_v4()), entry(Uuid::new_v4()));
        directory.open(&n1, a);
        directory.hint(&n1, b.session_id, b.user_id);
        assert_eq!(directory.sum("n1"), held(&directory));
        directory.open(&n1, b);
        assert_eq!(directory.sum("n1"), held(&directory));
        assert_eq!(directory.sum("n1").count, 2);
        directory.close("n1", a.session_id);
        assert_eq!(directory.sum("n1"), held(&directory));
        directory.snapshot(&n1, true, &[a]);
        assert_eq!(directory.sum("n1"), held(&directory));
        assert_eq!(directory.sum("n1").count, 1);
        directory.drop_node("n1");
        assert_eq!(directory.sum("n1"), Sum::default());
    }

    #[test]
    fn a_first_snapshot_chunk_replaces_the_node_and_later_chunks_add() {
        let directory = SessionDirectory::new();
        let n1: Arc<str> = Arc::from("n1");
        let stale = entry(Uuid::new_v4());
        directory.open(&n1, stale);
        let (x, y) = (entry(Uuid::new_v4()), entry(Uuid::new_v4()));
        directory.snapshot(&n1, true, &[x]);
        directory.snapshot(&n1, false, &[y]);
        assert_eq!(directory.node_len("n1"), 2);
        assert_eq!(directory.node_of(stale.session_id), None);
    }
}
