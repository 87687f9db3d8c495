//! The realtime host: what `nk.stream_*`, `nk.channel_message_*`, `nk.channel_id_build`,
//! `nk.status_follow`/`unfollow` and `nk.session_disconnect` need from the realtime layer
//! ([`RealtimeHost`]), with the stream, presence and chat types as server code sees them.
//!
//! The runtime and `metafi-realtime` are peers (neither depends on the other), so the
//! implementation over the realtime layer lives where both meet: the server
//! (`metafi-server/src/realtime_host.rs`). A runtime built without it (`RuntimeServices`
//! without `with_realtime`) fails those functions at call time, naming them.

use async_trait::async_trait;
use metafi_core::{ChannelId, CoreError};
use metafi_match::PresenceReason;
use metafi_proto::api::{ChannelMessage, ChannelMessageList};
use metafi_proto::realtime::Envelope;
use uuid::Uuid;

/// A presence stream, identified as Nakama identifies it: mode, subject, subcontext, label
/// (nil UUIDs for an absent subject or subcontext).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct StreamId {
    pub mode: u8,
    pub subject: Uuid,
    pub subcontext: Uuid,
    pub label: String,
}

/// What others see of a presence in a stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamMeta {
    pub hidden: bool,
    pub persistence: bool,
    pub username: String,
    pub status: String,
}

/// One session in a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPresence {
    pub user_id: Uuid,
    pub session_id: Uuid,
    /// The node the session is connected to.
    pub node: String,
    pub meta: StreamMeta,
}

/// How a session joins a stream (`nk.stream_user_join`/`update`): Nakama's defaults are not
/// hidden, persistent, no status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamJoin {
    pub hidden: bool,
    pub persistence: bool,
    pub status: String,
}

impl Default for StreamJoin {
    fn default() -> Self {
        StreamJoin {
            hidden: false,
            persistence: true,
            status: String::new(),
        }
    }
}

/// Why a session could not join a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamJoinError {
    /// No session with that id (on any live node).
    NoSession,
    /// The session is closing.
    Closing,
    /// The node holding the session did not answer; the text says which and why.
    Unanswered(String),
}

/// Who a chat message from server code comes from, and whether it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSender {
    pub channel: ChannelId,
    /// The sender; nil for a system message.
    pub sender: Uuid,
    pub username: String,
    pub persist: bool,
}

/// What server code does to a chat channel's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelEdit {
    Send { content: String },
    Update { message_id: String, content: String },
    Remove { message_id: String },
}

/// The realtime layer as server code sees it. Single-node semantics today: a session id is
/// one of this node's sessions; a cluster implementation routes to the session's node.
#[async_trait]
pub trait RealtimeHost: Send + Sync + std::fmt::Debug {
    /// The presences of a stream: hidden ones, visible ones, or both.
    fn stream_user_list(
        &self,
        stream: &StreamId,
        include_hidden: bool,
        include_not_hidden: bool,
    ) -> Vec<StreamPresence>;

    /// The meta of a session's presence in a stream, if it is there as `user_id`.
    fn stream_user_get(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
    ) -> Option<StreamMeta>;

    /// Puts a session in a stream; true when it was not there before. A session of another
    /// node is put there by that node, whose answer this waits for.
    async fn stream_user_join(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
        join: StreamJoin,
    ) -> Result<bool, StreamJoinError>;

    /// Replaces a session's presence meta in a stream (joining it if absent). A session of
    /// another node is updated by that node, whose answer this waits for.
    async fn stream_user_update(
        &self,
        user_id: Uuid,
        session_id: Uuid,
        stream: &StreamId,
        join: StreamJoin,
    ) -> Result<(), StreamJoinError>;

    /// Takes a session out of a stream; nothing happens when it is not there.
    fn stream_user_leave(&self, user_id: Uuid, session_id: Uuid, stream: &StreamId);

    /// Presences in a stream, hidden ones included.
    fn stream_count(&self, stream: &StreamId) -> usize;

    /// Takes every session out of a stream.
    fn stream_close(&self, stream: &StreamId);

    /// Sends `envelope` to the stream's sessions, or to those of `only` (session ids) that are
    /// in it; returns how many accepted it.
    fn stream_send(&self, stream: &StreamId, envelope: Envelope, only: Option<&[Uuid]>) -> usize;

    /// Disconnects a session; `reason` is what match handlers see for its leave (default
    /// `Disconnect`). False when no such session is connected.
    fn session_disconnect(&self, session_id: Uuid, reason: Option<PresenceReason>) -> bool;

    /// Disconnects every session of a user, on any node (after a ban or an account deletion);
    /// returns how many were connected here plus how many elsewhere the close was sent to.
    fn user_disconnect(&self, user_id: Uuid, reason: PresenceReason) -> usize;

    /// Makes a session follow users' status (an unknown session: no effect, as in Nakama).
    fn status_follow(&self, session_id: Uuid, user_ids: &[Uuid]) -> Result<(), CoreError>;

    fn status_unfollow(&self, session_id: Uuid, user_ids: &[Uuid]);

    /// Sends, updates or removes a chat message, delivered to the channel's members; returns
    /// the message as they received it.
    async fn channel_message(
        &self,
        from: ChannelSender,
        edit: ChannelEdit,
    ) -> Result<ChannelMessage, CoreError>;

    /// A page of a channel's history, read as the server (no membership checks).
    async fn channel_messages_list(
        &self,
        channel_id: &str,
        limit: i64,
        forward: bool,
        cursor: Option<&str>,
    ) -> Result<ChannelMessageList, CoreError>;

    /// The id of the channel `sender` (nil: the system) would join for `target` and `kind`
    /// (1 room, 2 direct, 3 group), with Nakama's checks. Refusals are `InvalidArgument`.
    async fn channel_id_build(
        &self,
        sender: Uuid,
        target: &str,
        kind: i32,
    ) -> Result<String, CoreError>;
}
