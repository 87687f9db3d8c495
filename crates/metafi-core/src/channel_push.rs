//! [`ChannelPush`]: the seam through which services outside the realtime layer reach the
//! sessions present in a chat channel — group system messages (a user joined, was kicked…)
//! and taking a removed user's sessions out of the group's channel, as Nakama's
//! `router.SendToStream` and `streamManager.UserLeave` do.

use std::fmt;

use metafi_proto::api;
use uuid::Uuid;

use crate::ChannelId;

/// Reaches the sessions present in a channel, on whichever node (in a cluster) they are.
pub trait ChannelPush: Send + Sync + fmt::Debug {
    /// Sends `message` to every session present in `channel`; returns how many accepted it.
    fn deliver(&self, channel: &ChannelId, message: api::ChannelMessage) -> usize;

    /// Takes every session of `user_id` out of `channel` (the others see it leave), so it
    /// receives the channel's messages no more; a session on another node is taken out by its
    /// node.
    fn remove_user(&self, channel: &ChannelId, user_id: Uuid);

    /// Takes every session out of `channel`, on every node (its group was deleted).
    fn close(&self, channel: &ChannelId);
}

/// No sessions: nothing is delivered (services built without a realtime layer, tests).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoChannelPush;

impl ChannelPush for NoChannelPush {
    fn deliver(&self, _channel: &ChannelId, _message: api::ChannelMessage) -> usize {
        0
    }

    fn remove_user(&self, _channel: &ChannelId, _user_id: Uuid) {}

    fn close(&self, _channel: &ChannelId) {}
}
