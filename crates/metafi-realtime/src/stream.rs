//! Presence streams: what a presence is *in* (a chat channel, a user's status, a match, …),
//! keyed as Nakama keys them (mode, subject, subcontext, label).

use metafi_core::ChannelId;
use metafi_proto::realtime::Stream;
use uuid::Uuid;

/// The kind of a stream; the numbers are Nakama's and appear on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum StreamMode {
    Notifications = 0,
    /// One user's online status; subject is the user.
    Status = 1,
    /// A chat room; label is the room name.
    Room = 2,
    /// A group chat; subject is the group.
    Group = 3,
    /// A direct chat; subject and subcontext are the two users.
    Direct = 4,
    /// A relayed match; subject is the match id, label the node.
    MatchRelayed = 5,
    /// An authoritative match; subject is the match id, label the node.
    MatchAuthoritative = 6,
    Party = 7,
}

/// Identifies a stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamKey {
    pub mode: StreamMode,
    pub subject: Uuid,
    pub subcontext: Uuid,
    pub label: String,
}

impl StreamKey {
    /// The status stream of `user_id`.
    pub fn status(user_id: Uuid) -> StreamKey {
        StreamKey {
            mode: StreamMode::Status,
            subject: user_id,
            subcontext: Uuid::nil(),
            label: String::new(),
        }
    }

    /// The stream of a chat channel.
    pub fn channel(channel: &ChannelId) -> StreamKey {
        let (mode, subject, subcontext, label) = match channel {
            ChannelId::Room { name } => (StreamMode::Room, Uuid::nil(), Uuid::nil(), name.clone()),
            ChannelId::Group { group_id } => {
                (StreamMode::Group, *group_id, Uuid::nil(), String::new())
            }
            ChannelId::Direct { user_one, user_two } => {
                (StreamMode::Direct, *user_one, *user_two, String::new())
            }
        };
        StreamKey {
            mode,
            subject,
            subcontext,
            label,
        }
    }

    /// The chat channel this stream is, if it is one.
    pub fn channel_id(&self) -> Option<ChannelId> {
        match self.mode {
            StreamMode::Room => Some(ChannelId::Room {
                name: self.label.clone(),
            }),
            StreamMode::Group => Some(ChannelId::Group {
                group_id: self.subject,
            }),
            StreamMode::Direct => Some(ChannelId::Direct {
                user_one: self.subject,
                user_two: self.subcontext,
            }),
            _ => None,
        }
    }

    pub fn is_channel(&self) -> bool {
        matches!(
            self.mode,
            StreamMode::Room | StreamMode::Group | StreamMode::Direct
        )
    }

    /// The wire form (`rtapi.Stream`); nil UUIDs are empty.
    pub fn to_wire(&self) -> Stream {
        let text = |id: Uuid| {
            if id.is_nil() {
                String::new()
            } else {
                id.to_string()
            }
        };
        Stream {
            mode: self.mode as i32,
            subject: text(self.subject),
            subcontext: text(self.subcontext),
            label: self.label.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_streams_round_trip() {
        for channel in [
            ChannelId::Room {
                name: "lobby".into(),
            },
            ChannelId::Group {
                group_id: Uuid::new_v4(),
            },
            ChannelId::direct(Uuid::new_v4(), Uuid::new_v4()),
        ] {
            let stream = StreamKey::channel(&channel);
            assert!(stream.is_channel());
            assert_eq!(stream.channel_id(), Some(channel.clone()));
            assert_eq!(stream.mode as u8, channel.mode());
        }
        assert!(!StreamKey::status(Uuid::new_v4()).is_channel());
    }
}
