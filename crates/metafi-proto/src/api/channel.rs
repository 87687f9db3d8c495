//! Channel messages as `api.proto` defines them: pushed over the socket (`channel_message`) and
//! listed by `GET /v2/channel/{channel_id}`.

use serde::{Deserialize, Serialize};

use crate::json::{self, nullable};
use crate::wkt::{BoolValue, Int32Value, Timestamp};

with_channel_target! {
    /// A message of a chat channel (`api.ChannelMessage`).
    #[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct ChannelMessage {
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
        /// 0 chat, 1 update, 2 remove, 3+ group events.
        #[prost(message, optional, tag = "3")]
        #[serde(with = "json::int32_value", skip_serializing_if = "Option::is_none")]
        pub code: Option<Int32Value>,
        #[prost(string, tag = "4")]
        #[serde(
            alias = "senderId",
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub sender_id: String,
        #[prost(string, tag = "5")]
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub username: String,
        /// A JSON object, as text.
        #[prost(string, tag = "6")]
        #[serde(
            deserialize_with = "nullable",
            skip_serializing_if = "String::is_empty"
        )]
        pub content: String,
        #[prost(message, optional, tag = "7")]
        #[serde(
            alias = "createTime",
            with = "json::timestamp",
            skip_serializing_if = "Option::is_none"
        )]
        pub create_time: Option<Timestamp>,
        #[prost(message, optional, tag = "8")]
        #[serde(
            alias = "updateTime",
            with = "json::timestamp",
            skip_serializing_if = "Option::is_none"
        )]
        pub update_time: Option<Timestamp>,
        #[prost(message, optional, tag = "9")]
        #[serde(with = "json::bool_value", skip_serializing_if = "Option::is_none")]
        pub persistent: Option<BoolValue>,
    }
    target_tags = ("10", "11", "12", "13");
}

/// A page of channel history (`api.ChannelMessageList`).
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelMessageList {
    #[prost(message, repeated, tag = "1")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<ChannelMessage>,
    #[prost(string, tag = "2")]
    #[serde(
        alias = "nextCursor",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub next_cursor: String,
    #[prost(string, tag = "3")]
    #[serde(
        alias = "prevCursor",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub prev_cursor: String,
    /// Where to resume later to see only newer messages; durable, unlike next/prev.
    #[prost(string, tag = "4")]
    #[serde(
        alias = "cacheableCursor",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub cacheable_cursor: String,
}
