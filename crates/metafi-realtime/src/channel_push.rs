//! [`ChannelSessions`]: the realtime side of `metafi_core::ChannelPush`. Group system messages
//! reach the sessions present in the group's channel through the tracker and the message
//! router; a user removed from a group leaves the channel (the others see it leave).

use metafi_core::{ChannelId, ChannelPush};
use metafi_proto::api::ChannelMessage;
use metafi_proto::realtime::{Envelope, Message};
use uuid::Uuid;

use crate::{Outbound, RealtimeParts, StreamKey};

/// Channel delivery over this node's tracker and router.
#[derive(Debug, Clone)]
pub struct ChannelSessions {
    parts: RealtimeParts,
}

impl ChannelSessions {
    pub fn new(parts: &RealtimeParts) -> ChannelSessions {
        ChannelSessions {
            parts: parts.clone(),
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
        let changes = self
            .parts
            .tracker
            .list(&stream, true)
            .into_iter()
            .filter(|p| p.user_id == user_id)
            .filter_map(|p| self.parts.tracker.untrack(p.session_id, &stream))
            .collect();
        self.parts.deliver(changes);
    }

    fn close(&self, channel: &ChannelId) {
        let stream = StreamKey::channel(channel);
        let changes = self
            .parts
            .tracker
            .session_ids(&stream)
            .into_iter()
            .filter_map(|session_id| self.parts.tracker.untrack(session_id, &stream))
            .collect();
        self.parts.deliver(changes);
    }
}
