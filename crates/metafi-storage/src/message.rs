//! Persisted chat messages of channels (rooms, groups, direct messages).

use async_trait::async_trait;
use uuid::Uuid;

use crate::StorageError;

/// A stored channel message. `channel_id` is the realtime channel id string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelMessage {
    pub id: Uuid,
    pub channel_id: String,
    /// Nakama's message code: 0 chat, 1 update, 2 remove, 3+ joins/leaves and system codes.
    pub code: i32,
    pub sender_id: Uuid,
    pub username: String,
    /// JSON object text.
    pub content: String,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
}

/// Which way a listing walks from its cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Oldest first.
    Forward,
    /// Newest first.
    Backward,
}

/// A page of channel history with cursors to walk on in either direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessagePage {
    pub messages: Vec<ChannelMessage>,
    pub next_cursor: Option<String>,
    pub prev_cursor: Option<String>,
}

/// Persistent channel history.
#[async_trait]
pub trait MessageStore: Send + Sync {
    /// Stores a new message.
    async fn insert_message(&self, message: ChannelMessage) -> Result<(), StorageError>;

    /// Replaces a message's content, only if `sender_id` sent it. Errors with `NotFound` when no
    /// such message of that sender exists in that channel. Returns the updated message.
    async fn update_message(
        &self,
        channel_id: &str,
        message_id: Uuid,
        sender_id: Uuid,
        content: String,
        now_ms: i64,
    ) -> Result<ChannelMessage, StorageError>;

    /// Deletes a message, only if `sender_id` sent it. Errors with `NotFound` otherwise.
    /// Returns the removed message.
    async fn remove_message(
        &self,
        channel_id: &str,
        message_id: Uuid,
        sender_id: Uuid,
    ) -> Result<ChannelMessage, StorageError>;

    /// Lists a channel's history ordered by `(create_time, id)`.
    async fn list_messages(
        &self,
        channel_id: &str,
        direction: Direction,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<MessagePage, StorageError>;
}
