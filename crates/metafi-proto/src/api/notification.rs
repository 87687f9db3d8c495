//! `api.Notification`: a message from the server to one user.

use serde::{Deserialize, Serialize};

use crate::json::{self, is_false, is_zero_i32, nullable};
use crate::wkt::Timestamp;

/// A notification. Codes below zero are reserved for the server (-7: another socket of the
/// same user replaced this one under `session.single_socket`).
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Notification {
    #[prost(string, tag = "1")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub subject: String,
    /// A JSON object, as text.
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub content: String,
    #[prost(int32, tag = "4")]
    #[serde(with = "json::int32", skip_serializing_if = "is_zero_i32")]
    pub code: i32,
    #[prost(string, tag = "5")]
    #[serde(
        alias = "senderId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub sender_id: String,
    #[prost(message, optional, tag = "6")]
    #[serde(
        alias = "createTime",
        with = "json::timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub create_time: Option<Timestamp>,
    #[prost(bool, tag = "7")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub persistent: bool,
}

/// `GET /v2/notification` response: a page of the user's notifications and the cursor to keep
/// (Nakama's `NotificationList`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NotificationList {
    // Omitted when empty, as Nakama's gateway omits unpopulated fields.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<Notification>,
    #[serde(alias = "cacheableCursor", skip_serializing_if = "String::is_empty")]
    pub cacheable_cursor: String,
}
