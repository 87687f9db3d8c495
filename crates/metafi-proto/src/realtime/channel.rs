//! Chat channels and the presences of the users in them (`rtapi` `Channel*`, `UserPresence`).

use serde::{Deserialize, Serialize};

use crate::json::{self, is_false, is_zero_i32, nullable};
use crate::wkt::{BoolValue, Int32Value, StringValue, Timestamp};

/// One session of a user in a stream (a channel, a match, the status stream, …).
#[derive(Clone, PartialEq, Eq, Hash, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct UserPresence {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "userId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub user_id: String,
    /// The socket session; a user may have several.
    #[prost(string, tag = "2")]
    #[serde(
        alias = "sessionId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub session_id: String,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub username: String,
    /// Whether this presence's channel messages are stored.
    #[prost(bool, tag = "4")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub persistence: bool,
    /// The user's status text; only set in the status stream.
    #[prost(message, optional, tag = "5")]
    #[serde(with = "json::string_value", skip_serializing_if = "Option::is_none")]
    pub status: Option<StringValue>,
}

with_channel_target! {
    /// The answer to a channel join: the channel and who is in it.
    #[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Channel {
        #[prost(string, tag = "1")]
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub id: String,
        /// The other presences (not hidden ones).
        #[prost(message, repeated, tag = "2")]
        #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
        pub presences: Vec<UserPresence>,
        /// The joining session's own presence.
        #[prost(message, optional, tag = "3")]
        #[serde(rename = "self", skip_serializing_if = "Option::is_none")]
        pub self_presence: Option<UserPresence>,
    }
    target_tags = ("4", "5", "6", "7");
}

/// Join a chat channel. `type`: 0 or 1 room, 2 direct message, 3 group.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelJoin {
    /// Room name, the other user's id, or the group id.
    #[prost(string, tag = "1")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub target: String,
    #[prost(int32, tag = "2")]
    #[serde(with = "json::int32", skip_serializing_if = "is_zero_i32")]
    pub r#type: i32,
    /// Store this session's messages (default true).
    #[prost(message, optional, tag = "3")]
    #[serde(with = "json::bool_value", skip_serializing_if = "Option::is_none")]
    pub persistence: Option<BoolValue>,
    /// Stay out of the presence list and events (default false).
    #[prost(message, optional, tag = "4")]
    #[serde(with = "json::bool_value", skip_serializing_if = "Option::is_none")]
    pub hidden: Option<BoolValue>,
}

/// Leave a chat channel.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelLeave {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "channelId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub channel_id: String,
}

with_channel_target! {
    /// The receipt of a sent, updated or removed message.
    #[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct ChannelMessageAck {
        #[prost(string, tag = "1")]
        #[serde(
            alias = "channelId",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub channel_id: String,
        #[prost(string, tag = "2")]
        #[serde(
            alias = "messageId",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub message_id: String,
        #[prost(message, optional, tag = "3")]
        #[serde(with = "json::int32_value", skip_serializing_if = "Option::is_none")]
        pub code: Option<Int32Value>,
        #[prost(string, tag = "4")]
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub username: String,
        #[prost(message, optional, tag = "5")]
        #[serde(
            alias = "createTime",
            with = "json::timestamp",
            skip_serializing_if = "Option::is_none"
        )]
        pub create_time: Option<Timestamp>,
        #[prost(message, optional, tag = "6")]
        #[serde(
            alias = "updateTime",
            with = "json::timestamp",
            skip_serializing_if = "Option::is_none"
        )]
        pub update_time: Option<Timestamp>,
        #[prost(message, optional, tag = "7")]
        #[serde(with = "json::bool_value", skip_serializing_if = "Option::is_none")]
        pub persistent: Option<BoolValue>,
    }
    target_tags = ("8", "9", "10", "11");
}

/// Send a message to a joined channel.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelMessageSend {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "channelId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub channel_id: String,
    /// A JSON object, as text.
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub content: String,
}

/// Replace the content of a message this user sent.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelMessageUpdate {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "channelId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub channel_id: String,
    #[prost(string, tag = "2")]
    #[serde(
        alias = "messageId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub message_id: String,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub content: String,
}

/// Remove a message this user sent.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelMessageRemove {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "channelId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub channel_id: String,
    #[prost(string, tag = "2")]
    #[serde(
        alias = "messageId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub message_id: String,
}

with_channel_target! {
    /// Sessions that joined and left a channel.
    #[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct ChannelPresenceEvent {
        #[prost(string, tag = "1")]
        #[serde(
            alias = "channelId",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub channel_id: String,
        #[prost(message, repeated, tag = "2")]
        #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
        pub joins: Vec<UserPresence>,
        #[prost(message, repeated, tag = "3")]
        #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
        pub leaves: Vec<UserPresence>,
    }
    target_tags = ("4", "5", "6", "7");
}
