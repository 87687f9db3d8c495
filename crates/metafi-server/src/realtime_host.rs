//! The runtime's [`RealtimeHost`] over the realtime layer's [`RealtimeControl`]: the two crates
//! are peers (each depends on core, match and storage, not on the other), so the adapter
//! lives where both meet. It only converts types; the rules are in `metafi-realtime`
//! (`control.rs`) and `metafi-core` (`channels.rs`).
//!
//! `RealtimeControl` is built from the realtime parts (registry, tracker, status, router) and
//! the channels, which exist before the runtime starts, so `nk` reaches sessions from the
//! first module load on, with no late binding.

use std::sync::Arc;

use async_trait::async_trait;
use metafi_core::{ChannelId, CoreError};
use metafi_match::PresenceReason;
use metafi_proto::api::{ChannelMessage, ChannelMessageList};
use metafi_proto::realtime::{Envelope, channel_type};
use metafi_realtime::{JoinRefused, RealtimeControl, ServerMessage, StreamKey, StreamMode};
use metafi_runtime::{
    ChannelEdit, ChannelSender, RealtimeHost, StreamId, StreamJoin, StreamJoinError, StreamMeta,
    StreamPresence,
};
use uuid::Uuid;

/// `nk`'s way into this node's sessions, streams, channels and follows.
#[derive(Debug)]
pub(crate) struct NodeRealtimeHost {
    control: RealtimeControl,
    /// This node's name, as presences show it.
    node: Arc<str>,
}

impl NodeRealtimeHost {
    pub(crate) fn new(control: RealtimeControl, node: Arc<str>) -> NodeRealtimeHost {
        NodeRealtimeHost { control, node }
    }
}

#[async_trait]
impl RealtimeHost for NodeRealtimeHost {
    fn stream_user_list(
        &self,
        stream: &StreamId,
        include_hidden: bool,
        include_not_hidden: bool,
    ) -> Vec<StreamPresence> {
        self.control
            .stream_list(&key(stream), include_hidden, include_not_hidden)
            .into_iter()
            .map(|p| StreamPresence {
                user_id: p.user_id,
                session_id: p.session_id,
                // In a cluster a presence may be another node's session: name that node.
                node: self
                    .control
                    .node_of(p.session_id)
                    .map_or_else(|| self.node.to_string(), |node| node.to_string()),
                meta: meta(p.meta),
            })
            .collect()
    }

    fn stream_user_get(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
    ) -> Option<StreamMeta> {
        self.control
            .stream_get(user_id, session_id, &key(stream))
            .map(meta)
    }

    async fn stream_user_join(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
        join: StreamJoin,
    ) -> Result<bool, StreamJoinError> {
        self.control
            .stream_join(user_id, session_id, &key(stream), stream_join(join))
            .await
            .map_err(join_error)
    }

    async fn stream_user_update(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
        join: StreamJoin,
    ) -> Result<(), StreamJoinError> {
        self.control
            .stream_update(user_id, session_id, &key(stream), stream_join(join))
            .await
            .map_err(join_error)
    }

    fn stream_user_leave(&self, user_id: Uuid, session_id: Uuid, stream: &StreamId) {
        self.control.stream_leave(user_id, session_id, &key(stream));
    }

    fn stream_count(&self, stream: &StreamId) -> usize {
        self.control.stream_count(&key(stream))
    }

    fn stream_close(&self, stream: &StreamId) {
        self.control.stream_close(&key(stream));
    }

    fn stream_send(&self, stream: &StreamId, envelope: Envelope, only: Option<&[Uuid]>) -> usize {
        self.control.stream_send(&key(stream), envelope, only)
    }

    fn session_disconnect(&self, session_id: Uuid, reason: Option<PresenceReason>) -> bool {
        self.control
            .disconnect(session_id, reason.unwrap_or(PresenceReason::Disconnect))
    }

    fn user_disconnect(&self, user_id: Uuid, reason: PresenceReason) -> usize {
        self.control.disconnect_user(user_id, reason)
    }

    fn status_follow(&self, session_id: Uuid, user_ids: &[Uuid]) -> Result<(), CoreError> {
        self.control.follow(session_id, user_ids)
    }

    fn status_unfollow(&self, session_id: Uuid, user_ids: &[Uuid]) {
        self.control.unfollow(session_id, user_ids);
    }

    async fn channel_message(
        &self,
        from: ChannelSender,
        edit: ChannelEdit,
    ) -> Result<ChannelMessage, CoreError> {
        let from = ServerMessage {
            channel: from.channel,
            sender: from.sender,
            username: from.username,
            persist: from.persist,
        };
        match edit {
            ChannelEdit::Send { content } => self.control.channel_send(&from, content).await,
            ChannelEdit::Update {
                message_id,
                content,
            } => {
                self.control
                    .channel_update(&from, &message_id, content)
                    .await
            }
            ChannelEdit::Remove { message_id } => {
                self.control.channel_remove(&from, &message_id).await
            }
        }
    }

    async fn channel_messages_list(
        &self,
        channel_id: &str,
        limit: i64,
        forward: bool,
        cursor: Option<&str>,
    ) -> Result<ChannelMessageList, CoreError> {
        self.control
            .channels()
            .list_messages_as(None, channel_id, Some(limit), Some(forward), cursor)
            .await
    }

    async fn channel_id_build(
        &self,
        sender: Uuid,
        target: &str,
        kind: i32,
    ) -> Result<String, CoreError> {
        // Nakama's types here: 1 room, 2 direct, 3 group (a join's `type` numbers).
        let kind = match kind {
            1 => channel_type::ROOM,
            2 => channel_type::DIRECT_MESSAGE,
            3 => channel_type::GROUP,
            _ => return Err(CoreError::invalid("Invalid channel type")),
        };
        if sender.is_nil() {
            // The system is no member of anything: a group id is taken as it is (Nakama skips
            // the membership check for the nil user); a direct chat needs a real sender.
            match kind {
                channel_type::GROUP => {
                    return Uuid::parse_str(target)
                        .map(|group_id| ChannelId::Group { group_id }.to_string())
                        .map_err(|_| {
                            CoreError::invalid(
                                "Invalid group ID in group channel join: Invalid channel target",
                            )
                        });
                }
                channel_type::DIRECT_MESSAGE => {
                    return Err(CoreError::invalid(
                        "A direct message channel needs a sender id: Invalid channel target",
                    ));
                }
                _ => {}
            }
        }
        self.control
            .channels()
            .resolve_join(sender, target, kind)
            .await
            .map(|channel| channel.to_string())
    }
}

fn key(stream: &StreamId) -> StreamKey {
    StreamKey {
        mode: StreamMode::from_number(stream.mode),
        subject: stream.subject,
        subcontext: stream.subcontext,
        label: stream.label.clone(),
    }
}

fn meta(meta: metafi_realtime::PresenceMeta) -> StreamMeta {
    StreamMeta {
        hidden: meta.hidden,
        persistence: meta.persistence,
        username: meta.username,
        status: meta.status.unwrap_or_default(),
    }
}

fn stream_join(join: StreamJoin) -> metafi_realtime::StreamJoin {
    metafi_realtime::StreamJoin {
        hidden: join.hidden,
        persistence: join.persistence,
        status: join.status,
    }
}

fn join_error(refused: JoinRefused) -> StreamJoinError {
    match refused {
        JoinRefused::NoSession => StreamJoinError::NoSession,
        JoinRefused::Closing => StreamJoinError::Closing,
        JoinRefused::Unanswered { node, why } => StreamJoinError::Unanswered(format!(
            "the session's node {node:?} did not answer the stream join or update ({why}); try again, or check that node"
        )),
    }
}

/// `DELETE /v2/account` closes the deleted user's sockets through the same control as
/// `nk.session_disconnect`.
impl metafi_core::UserSockets for NodeRealtimeHost {
    fn disconnect_user(&self, user_id: Uuid) -> usize {
        self.control
            .disconnect_user(user_id, PresenceReason::Disconnect)
    }
}
