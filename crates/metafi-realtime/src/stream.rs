//! Presence streams: what a presence is *in* (a chat channel, a user's status, a match, …),
//! keyed as Nakama keys them (mode, subject, subcontext, label).

use metafi_core::ChannelId;
use metafi_proto::realtime::Stream;
use uuid::Uuid;

/// The kind of a stream; the numbers are Nakama's and appear on the wire. Server code may use
/// any other number for streams of its own (`nk.stream_user_join`): [`StreamMode::Custom`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StreamMode {
    Notifications,
    /// One user's online status; subject is the user.
    Status,
    /// A chat room; label is the room name.
    Room,
    /// A group chat; subject is the group.
    Group,
    /// A direct chat; subject and subcontext are the two users.
    Direct,
    /// A relayed match; subject is the match id, label the node.
    MatchRelayed,
    /// An authoritative match; subject is the match id, label the node.
    MatchAuthoritative,
    Party,
    /// A mode Nakama does not name (8 and up): a stream of server code's own. Build it with
    /// [`StreamMode::from_number`], so a named mode is never `Custom`.
    Custom(u8),
}

impl StreamMode {
    /// The mode numbered `number` on the wire.
    pub fn from_number(number: u8) -> StreamMode {
        match number {
            0 => StreamMode::Notifications,
            1 => StreamMode::Status,
            2 => StreamMode::Room,
            3 => StreamMode::Group,
            4 => StreamMode::Direct,
            5 => StreamMode::MatchRelayed,
            6 => StreamMode::MatchAuthoritative,
            7 => StreamMode::Party,
            other => StreamMode::Custom(other),
        }
    }

    /// The wire number.
    pub fn number(self) -> u8 {
        match self {
            StreamMode::Notifications => 0,
            StreamMode::Status => 1,
            StreamMode::Room => 2,
            StreamMode::Group => 3,
            StreamMode::Direct => 4,
            StreamMode::MatchRelayed => 5,
            StreamMode::MatchAuthoritative => 6,
            StreamMode::Party => 7,
            StreamMode::Custom(number) => number,
        }
    }
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
            mode: i32::from(self.mode.number()),
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
            assert_eq!(stream.mode.number(), channel.mode());
        }
        assert!(!StreamKey::status(Uuid::new_v4()).is_channel());
    }

    #[test]
    fn every_mode_number_round_trips_and_named_modes_are_never_custom() {
        for number in 0..=u8::MAX {
            let mode = StreamMode::from_number(number);
            assert_eq!(mode.number(), number);
            assert_eq!(matches!(mode, StreamMode::Custom(_)), number >= 8);
        }
    }
}
