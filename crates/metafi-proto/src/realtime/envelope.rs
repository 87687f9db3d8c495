//! The envelope every realtime message travels in: a `cid` correlating a request with its answer,
//! and exactly one message (the protobuf `oneof`). In JSON the message is a key of the envelope
//! object named after the `oneof` member: `{"cid":"1","channel_join":{…}}`.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::api::{ChannelMessage, Rpc};
use crate::realtime::*;

/// A realtime envelope (`rtapi.Envelope`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Envelope {
    /// Set by the client on requests it wants answered; the answer carries the same `cid`.
    /// Empty on messages the server pushes.
    #[prost(string, tag = 1)]
    pub cid: String,
    #[prost(
        oneof = "Message",
        tags(
            2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
            26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47,
            48, 49, 50, 51
        )
    )]
    pub message: Option<Message>,
}

/// Declares the `oneof` once: its protobuf tags, Rust variants, and JSON names (the proto name
/// `snake_case`, and the `lowerCamelCase` JSON name that protobuf JSON also accepts).
macro_rules! messages {
    ($( $tag:tt $variant:ident($ty:ty) $snake:literal $camel:literal; )*) => {
        /// The message of an envelope.
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Message {
            $(
                #[prost(message, tag = $tag)]
                $variant($ty),
            )*
        }

        impl Message {
            /// The `oneof` member name, e.g. `channel_join`: for logs and metric labels.
            pub fn name(&self) -> &'static str {
                match self {
                    $( Message::$variant(_) => $snake, )*
                }
            }
        }

        fn serialize_message<M: SerializeMap>(map: &mut M, message: &Message) -> Result<(), M::Error> {
            match message {
                $( Message::$variant(value) => map.serialize_entry($snake, value), )*
            }
        }

        /// The protobuf tag of a JSON key naming a message, if it names one.
        // One-word names are their own camelCase form, so their second pattern never matches.
        #[allow(unreachable_patterns)]
        fn message_tag(key: &str) -> Option<u32> {
            match key {
                $( $snake | $camel => Some($tag), )*
                _ => None,
            }
        }

        fn read_message<'de, A: MapAccess<'de>>(tag: u32, map: &mut A) -> Result<Option<Message>, A::Error> {
            match tag {
                $( $tag => Ok(map.next_value::<Option<$ty>>()?.map(Message::$variant)), )*
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    Ok(None)
                }
            }
        }
    };
}

messages! {
    2 Channel(Channel) "channel" "channel";
    3 ChannelJoin(ChannelJoin) "channel_join" "channelJoin";
    4 ChannelLeave(ChannelLeave) "channel_leave" "channelLeave";
    5 ChannelMessage(ChannelMessage) "channel_message" "channelMessage";
    6 ChannelMessageAck(ChannelMessageAck) "channel_message_ack" "channelMessageAck";
    7 ChannelMessageSend(ChannelMessageSend) "channel_message_send" "channelMessageSend";
    8 ChannelMessageUpdate(ChannelMessageUpdate) "channel_message_update" "channelMessageUpdate";
    9 ChannelMessageRemove(ChannelMessageRemove) "channel_message_remove" "channelMessageRemove";
    10 ChannelPresenceEvent(ChannelPresenceEvent) "channel_presence_event" "channelPresenceEvent";
    11 Error(Error) "error" "error";
    12 Match(Match) "match" "match";
    13 MatchCreate(MatchCreate) "match_create" "matchCreate";
    14 MatchData(MatchData) "match_data" "matchData";
    15 MatchDataSend(MatchDataSend) "match_data_send" "matchDataSend";
    16 MatchJoin(MatchJoin) "match_join" "matchJoin";
    17 MatchLeave(MatchLeave) "match_leave" "matchLeave";
    18 MatchPresenceEvent(MatchPresenceEvent) "match_presence_event" "matchPresenceEvent";
    19 MatchmakerAdd(MatchmakerAdd) "matchmaker_add" "matchmakerAdd";
    20 MatchmakerMatched(MatchmakerMatched) "matchmaker_matched" "matchmakerMatched";
    21 MatchmakerRemove(MatchmakerRemove) "matchmaker_remove" "matchmakerRemove";
    22 MatchmakerTicket(MatchmakerTicket) "matchmaker_ticket" "matchmakerTicket";
    23 Notifications(Notifications) "notifications" "notifications";
    24 Rpc(Rpc) "rpc" "rpc";
    25 Status(Status) "status" "status";
    26 StatusFollow(StatusFollow) "status_follow" "statusFollow";
    27 StatusPresenceEvent(StatusPresenceEvent) "status_presence_event" "statusPresenceEvent";
    28 StatusUnfollow(StatusUnfollow) "status_unfollow" "statusUnfollow";
    29 StatusUpdate(StatusUpdate) "status_update" "statusUpdate";
    30 StreamData(StreamData) "stream_data" "streamData";
    31 StreamPresenceEvent(StreamPresenceEvent) "stream_presence_event" "streamPresenceEvent";
    32 Ping(Ping) "ping" "ping";
    33 Pong(Pong) "pong" "pong";
    34 Party(Party) "party" "party";
    35 PartyCreate(PartyCreate) "party_create" "partyCreate";
    36 PartyJoin(PartyJoin) "party_join" "partyJoin";
    37 PartyLeave(PartyLeave) "party_leave" "partyLeave";
    38 PartyPromote(PartyPromote) "party_promote" "partyPromote";
    39 PartyLeader(PartyLeader) "party_leader" "partyLeader";
    40 PartyAccept(PartyAccept) "party_accept" "partyAccept";
    41 PartyRemove(PartyRemove) "party_remove" "partyRemove";
    42 PartyClose(PartyClose) "party_close" "partyClose";
    43 PartyJoinRequestList(PartyJoinRequestList) "party_join_request_list" "partyJoinRequestList";
    44 PartyJoinRequest(PartyJoinRequest) "party_join_request" "partyJoinRequest";
    45 PartyMatchmakerAdd(PartyMatchmakerAdd) "party_matchmaker_add" "partyMatchmakerAdd";
    46 PartyMatchmakerRemove(PartyMatchmakerRemove) "party_matchmaker_remove" "partyMatchmakerRemove";
    47 PartyMatchmakerTicket(PartyMatchmakerTicket) "party_matchmaker_ticket" "partyMatchmakerTicket";
    48 PartyData(PartyData) "party_data" "partyData";
    49 PartyDataSend(PartyDataSend) "party_data_send" "partyDataSend";
    50 PartyPresenceEvent(PartyPresenceEvent) "party_presence_event" "partyPresenceEvent";
    51 PartyUpdate(PartyUpdate) "party_update" "partyUpdate";
}

impl Envelope {
    /// An envelope carrying `message`, answering `cid` (empty for pushes).
    pub fn new(cid: impl Into<String>, message: Message) -> Envelope {
        Envelope {
            cid: cid.into(),
            message: Some(message),
        }
    }

    /// A bare acknowledgement: only the `cid`, as Nakama answers leaves, unfollows and status
    /// updates.
    pub fn ack(cid: impl Into<String>) -> Envelope {
        Envelope {
            cid: cid.into(),
            message: None,
        }
    }

    /// An error answer.
    pub fn error(cid: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Envelope {
        Envelope::new(
            cid,
            Message::Error(Error {
                code: code as i32,
                message: message.into(),
                context: Default::default(),
            }),
        )
    }

    /// The message's name for logs and metrics; `"none"` for a bare acknowledgement.
    pub fn name(&self) -> &'static str {
        self.message.as_ref().map_or("none", Message::name)
    }
}

impl Serialize for Envelope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = usize::from(!self.cid.is_empty()) + usize::from(self.message.is_some());
        let mut map = serializer.serialize_map(Some(len))?;
        if !self.cid.is_empty() {
            map.serialize_entry("cid", &self.cid)?;
        }
        if let Some(message) = &self.message {
            serialize_message(&mut map, message)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

/// What a key of the envelope object names.
enum Key {
    Cid,
    Message(u32),
    Unknown,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an envelope field name")
            }
            fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "cid" => Key::Cid,
                    other => message_tag(other).map_or(Key::Unknown, Key::Message),
                })
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a realtime envelope object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut envelope = Envelope::default();
        let mut seen_message = false;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Cid => {
                    envelope.cid = map.next_value::<Option<String>>()?.unwrap_or_default();
                }
                Key::Message(tag) => {
                    if seen_message {
                        return Err(serde::de::Error::custom(
                            "an envelope carries one message, this one has several",
                        ));
                    }
                    seen_message = true;
                    envelope.message = read_message(tag, &mut map)?;
                }
                Key::Unknown => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(envelope)
    }
}
