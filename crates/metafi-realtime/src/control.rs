//! [`RealtimeControl`]: what server code (`nk.stream_*`, `nk.channel_message_*`,
//! `nk.status_follow`, `nk.session_disconnect`) does to sessions, streams, channels and follows,
//! with Nakama's semantics.
//!
//! It is built from the [`RealtimeParts`] and [`Channels`] alone, not from [`crate::Realtime`]:
//! the script runtime needs it before `Realtime` exists (`Realtime` dispatches RPCs to the
//! runtime), and the parts are what both share, so there is no late binding to get wrong.
//!
//! A session of this node is acted on here ([`NodeSessions`]); a session of another node is
//! sent to its node through [`crate::RemoteSessions`] (`parts.remote`), which does the same
//! there, so server code never asks where a session is.

use std::sync::Arc;

use metafi_core::{ChannelId, Channels, CoreError};
use metafi_match::PresenceReason;
use metafi_proto::api::ChannelMessage;
use metafi_proto::realtime::{Envelope, Message};
use uuid::Uuid;

use crate::{
    NodeSessions, Outbound, Presence, PresenceMeta, RealtimeParts, RemoteSessions, StreamKey,
};

/// Sessions, streams, channels and follows as server code drives them.
#[derive(Debug, Clone)]
pub struct RealtimeControl {
    parts: RealtimeParts,
    /// What is done to this node's own sessions (the rest goes to `parts.remote`).
    node: NodeSessions,
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinRefused {
    /// No session with that id (on any live node).
    NoSession,
    /// The session is closing.
    Closing,
    /// The session's node did not answer (`why` says how: timed out, busy).
    Unanswered { node: Arc<str>, why: String },
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
            node: NodeSessions::new(parts.clone()),
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

    /// The node holding `session_id` when it is another node; `None` for this node's own
    /// sessions (and sessions no node has).
    pub fn node_of(&self, session_id: Uuid) -> Option<Arc<str>> {
        self.parts.remote.node_of(session_id)
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
    /// the stream see it join (unless hidden). A session of another node is put there by its
    /// node, which answers (a call bounded by `cluster.call_timeout_ms`).
    pub async fn stream_join(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
        join: StreamJoin,
    ) -> Result<bool, JoinRefused> {
        self.join_anywhere(user_id, session_id, stream, join, false)
            .await
    }

    /// Replaces a session's presence meta in a stream (joining it if absent). A session of
    /// another node is updated by its node, which answers (a call, as for
    /// [`RealtimeControl::stream_join`]), so a session gone or closing there is refused as here.
    pub async fn stream_update(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
        join: StreamJoin,
    ) -> Result<(), JoinRefused> {
        self.join_anywhere(user_id, session_id, stream, join, true)
            .await
            .map(|_| ())
    }

    /// A join or update on the session's node: this one, or another that answers.
    async fn join_anywhere(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamKey,
        join: StreamJoin,
        update: bool,
    ) -> Result<bool, JoinRefused> {
        if !self.node.has(session_id)
            && let Some(answer) = self
                .parts
                .remote
                .stream_join(user_id, session_id, stream, &join, update)
        {
            return answer.await;
        }
        self.node
            .stream_join(user_id, session_id, stream, join, update)
    }

    /// Takes a session out of a stream, on its node; nothing happens when it is not there (as
    /// `user_id`).
    pub fn stream_leave(&self, user_id: Uuid, session_id: Uuid, stream: &StreamKey) {
        leave_anywhere(
            &self.node,
            self.parts.remote.as_ref(),
            user_id,
            session_id,
            stream,
        );
    }

    /// Presences in a stream, hidden ones included.
    pub fn stream_count(&self, stream: &StreamKey) -> usize {
        self.parts.tracker.session_ids(stream).len()
    }

    /// Takes every session out of a stream, on every node; they see each other leave.
    pub fn stream_close(&self, stream: &StreamKey) {
        close_anywhere(&self.node, self.parts.remote.as_ref(), stream);
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

    /// Closes a session on whichever node holds it (its client is told "server-side session
    /// disconnect"; its matches and streams see it leave with `reason`); false when no node
    /// has it. For a session of another node, true means the close was sent (see
    /// [`crate::RemoteSessions`]).
    pub fn disconnect(&self, session_id: Uuid, reason: PresenceReason) -> bool {
        self.node.disconnect(session_id, reason) || self.parts.remote.disconnect(session_id, reason)
    }

    /// Closes every session of `user_id` on every node, as [`RealtimeControl::disconnect`]
    /// does one (a ban or an account deletion); returns how many were closed here plus how
    /// many the close was sent towards on other nodes.
    pub fn disconnect_user(&self, user_id: Uuid, reason: PresenceReason) -> usize {
        self.node.disconnect_user(user_id, reason)
            + self.parts.remote.disconnect_user(user_id, reason)
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
}

/// Takes a session out of a stream on whichever node holds it (this node's directly, another
/// node's through `remote`); nothing happens when it is not there as `user_id`. The one rule for
/// server code's `stream_user_leave` and for a user removed from a group's channel.
pub(crate) fn leave_anywhere(
    node: &NodeSessions,
    remote: &dyn RemoteSessions,
    user_id: Uuid,
    session_id: Uuid,
    stream: &StreamKey,
) {
    if !node.stream_leave(user_id, session_id, stream) && !node.has(session_id) {
        remote.stream_leave(user_id, session_id, stream);
    }
}

/// Takes every session out of a stream, on every node holding one (each node takes its own
/// out and tells its own members): server code's `stream_close` and a deleted group's channel.
pub(crate) fn close_anywhere(node: &NodeSessions, remote: &dyn RemoteSessions, stream: &StreamKey) {
    let elsewhere = node.stream_close(stream);
    if !elsewhere.is_empty() {
        remote.stream_close(stream, &elsewhere);
    }
}
