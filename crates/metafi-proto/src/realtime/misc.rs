//! The remaining realtime messages: errors, heartbeats, notifications and generic streams.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::api::Notification;
use crate::json::{self, is_false, is_zero_i32, nullable};
use crate::realtime::UserPresence;

/// An error answer. `code` is one of [`ErrorCode`](crate::realtime::ErrorCode).
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Error {
    #[prost(int32, tag = "1")]
    #[serde(with = "json::int32", skip_serializing_if = "is_zero_i32")]
    pub code: i32,
    /// English text for developers.
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub message: String,
    #[prost(map = "string, string", tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "HashMap::is_empty"
    )]
    pub context: HashMap<String, String>,
}

/// Application-level heartbeat request.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
pub struct Ping {}

/// Application-level heartbeat answer.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
pub struct Pong {}

/// Notifications pushed to a user.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Notifications {
    #[prost(message, repeated, tag = "1")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<Notification>,
}

/// Identifies a stream: `mode` as Nakama numbers them (0 notifications, 1 status, 2 room,
/// 3 group, 4 direct message, 5 relayed match, 6 authoritative match, 7 party).
#[derive(Clone, PartialEq, Eq, Hash, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Stream {
    #[prost(int32, tag = "1")]
    #[serde(with = "json::int32", skip_serializing_if = "is_zero_i32")]
    pub mode: i32,
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub subject: String,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub subcontext: String,
    #[prost(string, tag = "4")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub label: String,
}

/// Data sent on a generic stream by server code.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamData {
    #[prost(message, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<Stream>,
    #[prost(message, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<UserPresence>,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub data: String,
    #[prost(bool, tag = "4")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub reliable: bool,
}

/// Sessions that joined and left a generic stream.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamPresenceEvent {
    #[prost(message, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<Stream>,
    #[prost(message, repeated, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub joins: Vec<UserPresence>,
    #[prost(message, repeated, tag = "3")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub leaves: Vec<UserPresence>,
}
