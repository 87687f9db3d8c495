//! [`ChannelSessions`]: the realtime side of `metafi_core::ChannelPush`. Group system messages
//! reach the sessions present in the group's channel through the tracker and the message
//! router; a user removed from a group leaves the channel (the others see it leave) on
//! whichever node its sockets are, as server code's `stream_user_leave` takes it out.

use metafi_core::{ChannelId, ChannelPush};
use metafi_proto::api::ChannelMessage;
use metafi_proto::realtime::{Envelope, Message};
use uuid::Uuid;

use crate::control::{close_anywhere, leave_anywhere};
use crate::{NodeSessions, Outbound, RealtimeParts, StreamKey};

/// Channel delivery over this node's tracker and router.
#[derive(Debug, Clone)]
pub struct ChannelSessions {
    parts: RealtimeParts,
    /// This node's sessions; the others' are reached through `parts.remote`.
    node: NodeSessions,
}

impl ChannelSessions {
    pub fn new(parts: &RealtimeParts) -> ChannelSessions {
        ChannelSessions {
            parts: parts.clone(),
            node: NodeSessions::new(parts.clone()),
        }
    }
}

impl ChannelPush for ChannelSessions {
    fn deliver(&self, channel: &ChannelId, message: ChannelMessage) -> usize {
        let sessions = self.parts.tracker.session_ids(&StreamKey::channel(channel));
        if sessions.is_empty() {
            return 0;
        }
        self.parts.router.send_to_sessions(
            &sessions,
            &Outbound::new(Envelope::new("", Message::ChannelMessage(message))),
        )
    }

    fn remove_user(&self, channel: &ChannelId, user_id: Uuid) {
        let stream = StreamKey::channel(channel);
        // The tracker lists the user's presences on every node; each is taken out by its own.
        for presence in self.parts.tracker.list(&stream, true) {
            if presence.user_id == user_id {
                leave_anywhere(
                    &self.node,
                    self.parts.remote.as_ref(),
                    user_id,
                    presence.session_id,
                    &stream,
                );
            }
        }
    }

    fn close(&self, channel: &ChannelId) {
        close_anywhere(
            &self.node,
            self.parts.remote.as_ref(),
            &StreamKey::channel(channel),
        );
    }
}
