//! Every live session of this node, by session id and by user.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use rustc_hash::FxBuildHasher;
use uuid::Uuid;

use crate::Session;

/// The sessions of this node. Local by nature: a session lives where its socket is; reaching a
/// session on another node goes through the [`MessageRouter`](crate::MessageRouter).
#[derive(Debug, Default)]
pub struct SessionRegistry {
    inner: RwLock<Inner>,
    /// Told of every session added and removed (a cluster's session directory); set once.
    listener: OnceLock<Arc<dyn SessionListener>>,
}

/// Told of every session a [`SessionRegistry`] adds or removes, after the registry changed and
/// outside its lock. A cluster announces this node's sessions to the others with it.
pub trait SessionListener: Send + Sync + fmt::Debug {
    fn added(&self, session: &Arc<Session>);
    fn removed(&self, session_id: Uuid, user_id: Uuid);
}

#[derive(Debug, Default)]
struct Inner {
    /// Hashed with Fx, not SipHash: every match message looks up each recipient here (SipHash
    /// was ≈ 200 instructions a lookup, a fiftieth of a delivered message's user-space cost),
    /// and the keys are session ids this node made (random v4 UUIDs), never chosen by a
    /// client, so a flooding attack on the hash has nothing to choose.
    sessions: HashMap<Uuid, Arc<Session>, FxBuildHasher>,
    /// The sessions of each user, for single-socket enforcement and per-user delivery.
    by_user: HashMap<Uuid, UserSessions>,
}

/// Most users hold one socket: no allocation for that case.
#[derive(Debug)]
enum UserSessions {
    One(Uuid),
    Many(Vec<Uuid>),
}

impl SessionRegistry {
    pub fn new() -> SessionRegistry {
        SessionRegistry::default()
    }

    /// Installs the listener told of every later add and remove; false if one was set already.
    pub fn set_listener(&self, listener: Arc<dyn SessionListener>) -> bool {
        self.listener.set(listener).is_ok()
    }

    pub fn add(&self, session: Arc<Session>) {
        let listener = self.listener.get();
        let announced = listener.map(|_| session.clone());
        self.insert(session);
        if let (Some(listener), Some(session)) = (listener, announced) {
            listener.added(&session);
        }
    }

    fn insert(&self, session: Arc<Session>) {
        let mut inner = self.inner.write();
        let (id, user) = (session.id(), session.user_id());
        inner.sessions.insert(id, session);
        match inner.by_user.remove(&user) {
            None => {
                inner.by_user.insert(user, UserSessions::One(id));
            }
            Some(UserSessions::One(other)) => {
                inner
                    .by_user
                    .insert(user, UserSessions::Many(vec![other, id]));
            }
            Some(UserSessions::Many(mut ids)) => {
                ids.push(id);
                inner.by_user.insert(user, UserSessions::Many(ids));
            }
        }
    }

    /// Removes a session; false when it was not registered.
    pub fn remove(&self, session_id: Uuid, user_id: Uuid) -> bool {
        let removed = self.delete(session_id, user_id);
        if removed && let Some(listener) = self.listener.get() {
            listener.removed(session_id, user_id);
        }
        removed
    }

    fn delete(&self, session_id: Uuid, user_id: Uuid) -> bool {
        let mut inner = self.inner.write();
        if inner.sessions.remove(&session_id).is_none() {
            return false;
        }
        match inner.by_user.remove(&user_id) {
            Some(UserSessions::Many(mut ids)) => {
                ids.retain(|id| *id != session_id);
                match ids.as_slice() {
                    [] => {}
                    [one] => {
                        inner.by_user.insert(user_id, UserSessions::One(*one));
                    }
                    _ => {
                        inner.by_user.insert(user_id, UserSessions::Many(ids));
                    }
                }
            }
            Some(UserSessions::One(id)) if id != session_id => {
                inner.by_user.insert(user_id, UserSessions::One(id));
            }
            Some(UserSessions::One(_)) | None => {}
        }
        true
    }

    pub fn get(&self, session_id: Uuid) -> Option<Arc<Session>> {
        self.inner.read().sessions.get(&session_id).cloned()
    }

    /// The ids of a user's sessions on this node.
    pub fn user_session_ids(&self, user_id: Uuid) -> Vec<Uuid> {
        match self.inner.read().by_user.get(&user_id) {
            None => Vec::new(),
            Some(UserSessions::One(id)) => vec![*id],
            Some(UserSessions::Many(ids)) => ids.clone(),
        }
    }

    /// Calls `f` with each of `ids` that is registered, under one read lock. `f` must not call
    /// back into the registry.
    pub fn for_each_of(&self, ids: &[Uuid], mut f: impl FnMut(&Arc<Session>)) {
        let inner = self.inner.read();
        for id in ids {
            if let Some(session) = inner.sessions.get(id) {
                f(session);
            }
        }
    }

    /// [`SessionRegistry::for_each_of`], collecting the ids that are not on this node.
    pub fn for_each_of_else(
        &self,
        ids: &[Uuid],
        mut f: impl FnMut(&Arc<Session>),
        missing: &mut Vec<Uuid>,
    ) {
        let inner = self.inner.read();
        for id in ids {
            match inner.sessions.get(id) {
                Some(session) => f(session),
                None => missing.push(*id),
            }
        }
    }

    /// Every session (for shutdown).
    pub fn all(&self) -> Vec<Arc<Session>> {
        self.inner.read().sessions.values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.inner.read().sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
