//! [`NodeSessions`]: what server code does to this node's own sessions — close them, put them
//! in streams or take them out, push to every socket — with Nakama's semantics. Server code on
//! this node comes here through [`crate::RealtimeControl`]; in a cluster, the same requests
//! from other nodes for this node's sessions come here too (`metafi-cluster`), so a session
//! sees exactly the same thing wherever the request was made.

use metafi_match::PresenceReason;
use uuid::Uuid;

use crate::{
    CloseReason, JoinRefused, LocalRouter, MessageRouter, Outbound, Presence, PresenceMeta,
    RealtimeParts, StreamJoin, StreamKey,
};

/// This node's sessions, as server code (of any node) acts on them.
#[derive(Debug, Clone)]
pub struct NodeSessions {
    parts: RealtimeParts,
}

impl NodeSessions {
    pub fn new(parts: RealtimeParts) -> NodeSessions {
        NodeSessions { parts }
    }

    /// Closes a session of this node (its client is told "server-side session disconnect";
    /// its matches and streams see it leave with `reason`); false when it is not here.
    pub fn disconnect(&self, session_id: Uuid, reason: PresenceReason) -> bool {
        let Some(session) = self.parts.registry.get(session_id) else {
            return false;
        };
        session.close(CloseReason::ServerDisconnect {
            presence_reason: reason,
        });
        true
    }

    /// Closes every session of `user_id` on this node; how many were closed.
    pub fn disconnect_user(&self, user_id: Uuid, reason: PresenceReason) -> usize {
        self.parts
            .registry
            .user_session_ids(user_id)
            .into_iter()
            .filter(|session_id| self.disconnect(*session_id, reason))
            .count()
    }

    /// Puts a session of this node in a stream as `user_id` (`update`: replaces its meta,
    /// joining if absent); true when it was not there before. Others in the stream see it join
    /// (unless hidden) or update.
    pub fn stream_join(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
        join: StreamJoin,
        update: bool,
    ) -> Result<bool, JoinRefused> {
        let presence = self.presence(user_id, session_id, join)?;
        let newly = if update {
            let newly = self.parts.tracker.presence(session_id, stream).is_none();
            let change = self.parts.tracker.update(stream, presence);
            self.parts.deliver(vec![change]);
            newly
        } else {
            let change = self.parts.tracker.track(stream, presence);
            let newly = change.is_some();
            self.parts.deliver(change.into_iter().collect());
            newly
        };
        self.forget_if_ended(session_id, stream)?;
        Ok(newly)
    }

    /// Takes a session of this node out of a stream; false when it is not there as `user_id`.
    pub fn stream_leave(&self, user_id: Uuid, session_id: Uuid, stream: &StreamKey) -> bool {
        let tracked_as_user = self
            .parts
            .tracker
            .presence(session_id, stream)
            .is_some_and(|p| p.user_id == user_id);
        if !tracked_as_user {
            return false;
        }
        let change = self.parts.tracker.untrack(session_id, stream);
        let left = change.is_some();
        self.parts.deliver(change.into_iter().collect());
        left
    }

    /// Takes every session of this node out of a stream; they (and the stream's members on
    /// other nodes, told by their nodes) see each other leave. Returns the stream's sessions
    /// that are not this node's (in a cluster, other nodes take those out).
    pub fn stream_close(&self, stream: &StreamKey) -> Vec<Uuid> {
        let mut elsewhere = Vec::new();
        let changes = self
            .parts
            .tracker
            .session_ids(stream)
            .into_iter()
            .filter_map(|session_id| {
                let change = self.parts.tracker.untrack(session_id, stream);
                if change.is_none() {
                    elsewhere.push(session_id);
                }
                change
            })
            .collect();
        self.parts.deliver(changes);
        elsewhere
    }

    /// Sends `outbound` to every session of this node; how many accepted it.
    pub fn push_all(&self, outbound: &Outbound) -> usize {
        let sessions: Vec<Uuid> = self.parts.registry.all().iter().map(|s| s.id()).collect();
        if sessions.is_empty() {
            return 0;
        }
        LocalRouter::new(self.parts.registry.clone()).send_to_sessions(&sessions, outbound)
    }

    /// Whether `session_id` is a session of this node.
    pub fn has(&self, session_id: Uuid) -> bool {
        self.parts.registry.get(session_id).is_some()
    }

    /// A session that ended while it was being tracked has already left every stream: its new
    /// presence would stay forever. (`Realtime::end` unregisters a session before it untracks
    /// it, so a session still registered now will be untracked later.)
    fn forget_if_ended(&self, session_id: Uuid, stream: &StreamKey) -> Result<(), JoinRefused> {
        if self.parts.registry.get(session_id).is_some() {
            return Ok(());
        }
        let change = self.parts.tracker.untrack(session_id, stream);
        self.parts.deliver(change.into_iter().collect());
        Err(JoinRefused::Closing)
    }

    /// The presence `session_id` would have, if it may join streams.
    fn presence(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        join: StreamJoin,
    ) -> Result<Presence, JoinRefused> {
        let session = self
            .parts
            .registry
            .get(session_id)
            .ok_or(JoinRefused::NoSession)?;
        if session.outbox().close_reason().is_some() {
            return Err(JoinRefused::Closing);
        }
        Ok(Presence {
            session_id,
            user_id,
            meta: PresenceMeta {
                username: session.username().to_owned(),
                persistence: join.persistence,
                hidden: join.hidden,
                status: Some(join.status),
            },
        })
    }
}
