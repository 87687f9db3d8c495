//! [`RealtimeControl`]: what server code (`nk.stream_*`, `nk.channel_message_*`,
//! `nk.status_follow`, `nk.session_disconnect`) does to sessions, streams, channels and follows,
//! with Nakama's semantics.
//!
//! It is built from the [`RealtimeParts`] and [`Channels`] alone, not from [`crate::Realtime`]:
//! the script runtime needs it before `Realtime` exists (`Realtime` dispatches RPCs to the
//! runtime), and the parts are what both share, so there is no late binding to get wrong.

use std::sync::Arc;

use metafi_core::{ChannelId, Channels, CoreError};
use metafi_match::PresenceReason;
use metafi_proto::api::ChannelMessage;
use metafi_proto::realtime::{Envelope, Message};
use uuid::Uuid;

use crate::{CloseReason, Outbound, Presence, PresenceMeta, RealtimeParts, StreamKey};

/// Sessions, streams, channels and follows as server code drives them.
#[derive(Debug, Clone)]
pub struct RealtimeControl {
    parts: RealtimeParts,
    channels: Arc<Channels>,
    /// `socket.max_followed_users`: server code's follows count against the socket's limit.
    max_followed_users: usize,
}

/// How a presence joins (or is updated in) a stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamJoin {
    pub hidden: bool,
    pub persistence: bool,
    pub status: String,
}

/// Why server code could not put a session in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinRefused {
    /// No session with that id on this node.
    NoSession,
    /// The session is closing.
    Closing,
}

/// A chat message sent, updated or removed by server code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMessage {
    pub channel: ChannelId,
    /// The sender; nil for a system message.
    pub sender: Uuid,
    pub username: String,
    pub persist: bool,
}

impl RealtimeControl {
    pub fn new(
        parts: RealtimeParts,
        channels: Arc<Channels>,
        max_followed_users: usize,
    ) -> RealtimeControl {
        RealtimeControl {
            parts,
            channels,
            max_followed_users,
        }
    }

    pub fn channels(&self) -> &Arc<Channels> {
        &self.channels
    }

    /// The presences of a stream: hidden ones, visible ones, or both.
    pub fn stream_list(
        &self,
        stream: &StreamKey,
        include_hidden: bool,
        include_not_hidden: bool,
    ) -> Vec<Presence> {
        let mut presences = self.parts.tracker.list(stream, include_hidden);
        presences.retain(|p| {
            if p.meta.hidden {
                include_hidden
            } else {
                include_not_hidden
            }
        });
        presences
    }

    /// The meta of `session_id`'s presence in a stream, if it is there as `user_id`.
    pub fn stream_get(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
    ) -> Option<PresenceMeta> {
        self.parts
            .tracker
            .presence(session_id, stream)
            .filter(|p| p.user_id == user_id)
            .map(|p| p.meta)
    }

    /// Puts a session in a stream as `user_id`; true when it was not there before. Others in
    /// the stream see it join (unless hidden).
    pub fn stream_join(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
        join: StreamJoin,
    ) -> Result<bool, JoinRefused> {
        let presence = self.presence(user_id, session_id, join)?;
        let change = self.parts.tracker.track(stream, presence);
        let newly = change.is_some();
        self.parts.deliver(change.into_iter().collect());
        self.forget_if_ended(session_id, stream)?;
        Ok(newly)
    }

    /// Replaces a session's presence meta in a stream (joining it if absent).
    pub fn stream_update(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
        join: StreamJoin,
    ) -> Result<(), JoinRefused> {
        let presence = self.presence(user_id, session_id, join)?;
        let change = self.parts.tracker.update(stream, presence);
        self.parts.deliver(vec![change]);
        self.forget_if_ended(session_id, stream)
    }

    /// Takes a session out of a stream; nothing happens when it is not there (as `user_id`).
    pub fn stream_leave(&self, user_id: Uuid, session_id: Uuid, stream: &StreamKey) {
        let tracked_as_user = self
            .parts
            .tracker
            .presence(session_id, stream)
            .is_some_and(|p| p.user_id == user_id);
        if !tracked_as_user {
            return;
        }
        let change = self.parts.tracker.untrack(session_id, stream);
        self.parts.deliver(change.into_iter().collect());
    }

    /// Presences in a stream, hidden ones included.
    pub fn stream_count(&self, stream: &StreamKey) -> usize {
        self.parts.tracker.session_ids(stream).len()
    }

    /// Takes every session out of a stream; they see each other leave.
    pub fn stream_close(&self, stream: &StreamKey) {
        let changes = self
            .parts
            .tracker
            .session_ids(stream)
            .into_iter()
            .filter_map(|session_id| self.parts.tracker.untrack(session_id, stream))
            .collect();
        self.parts.deliver(changes);
    }

    /// Sends an envelope to a stream's sessions, or to `only` of them (session ids; sessions
    /// not in the stream are sent nothing). Returns how many accepted it.
    pub fn stream_send(
        &self,
        stream: &StreamKey,
        envelope: Envelope,
        only: Option<&[Uuid]>,
    ) -> usize {
        let mut sessions = self.parts.tracker.session_ids(stream);
        if let Some(only) = only {
            sessions.retain(|id| only.contains(id));
        }
        if sessions.is_empty() {
            return 0;
        }
        self.parts
            .router
            .send_to_sessions(&sessions, &Outbound::new(envelope))
    }

    /// Closes a session (its client is told "server-side session disconnect"; its matches see
    /// it leave with `reason`); false when no such session is on this node.
    pub fn disconnect(&self, session_id: Uuid, reason: PresenceReason) -> bool {
        let Some(session) = self.parts.registry.get(session_id) else {
            return false;
        };
        session.close(CloseReason::ServerDisconnect {
            presence_reason: reason,
        });
        true
    }

    /// Closes every session of `user_id` on this node, as [`RealtimeControl::disconnect`] does
    /// one (a ban or an account deletion from server code); returns how many were closed.
    pub fn disconnect_user(&self, user_id: Uuid, reason: PresenceReason) -> usize {
        self.parts
            .registry
            .user_session_ids(user_id)
            .into_iter()
            .filter(|session_id| self.disconnect(*session_id, reason))
            .count()
    }

    /// Makes a session follow users' status. Nothing for an unknown session (as with Nakama,
    /// where such follows have no effect); an error past `socket.max_followed_users`.
    pub fn follow(&self, session_id: Uuid, user_ids: &[Uuid]) -> Result<(), CoreError> {
        let Some(session) = self.parts.registry.get(session_id) else {
            return Ok(());
        };
        let ids: Vec<Uuid> = user_ids
            .iter()
            .copied()
            .filter(|id| *id != session.user_id() && !id.is_nil())
            .collect();
        self.parts
            .status
            .follow(session_id, &ids, self.max_followed_users)
            .map_err(|limit| {
                CoreError::invalid(format!(
                    "Cannot follow more than {} users from one socket (socket.max_followed_users).",
                    limit.limit
                ))
            })
    }

    pub fn unfollow(&self, session_id: Uuid, user_ids: &[Uuid]) {
        self.parts.status.unfollow(session_id, user_ids);
    }

    /// Sends a chat message as `from` (stored when `from.persist`) to every member of the
    /// channel, joined or not by the sender. Returns the message as members received it.
    pub async fn channel_send(
        &self,
        from: &ServerMessage,
        content: String,
    ) -> Result<ChannelMessage, CoreError> {
        let message = self
            .channels
            .send(
                &from.channel,
                from.sender,
                &from.username,
                content,
                from.persist,
            )
            .await?;
        Ok(self.relay(&from.channel, message))
    }

    /// Replaces a message's content (with `persist`, the stored message must be the sender's).
    pub async fn channel_update(
        &self,
        from: &ServerMessage,
        message_id: &str,
        content: String,
    ) -> Result<ChannelMessage, CoreError> {
        let message = self
            .channels
            .update(
                &from.channel,
                message_id,
                from.sender,
                &from.username,
                content,
                from.persist,
            )
            .await?;
        Ok(self.relay(&from.channel, message))
    }

    /// Removes a message (with `persist`, the stored message must be the sender's).
    pub async fn channel_remove(
        &self,
        from: &ServerMessage,
        message_id: &str,
    ) -> Result<ChannelMessage, CoreError> {
        let message = self
            .channels
            .remove(
                &from.channel,
                message_id,
                from.sender,
                &from.username,
                from.persist,
            )
            .await?;
        Ok(self.relay(&from.channel, message))
    }

    fn relay(&self, channel: &ChannelId, message: ChannelMessage) -> ChannelMessage {
        let members = self.parts.tracker.session_ids(&StreamKey::channel(channel));
        if !members.is_empty() {
            self.parts.router.send_to_sessions(
                &members,
                &Outbound::new(Envelope::new("", Message::ChannelMessage(message.clone()))),
            );
        }
        message
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
