//! Online status (`rtapi` `Status*`): following users and their status presences.

use serde::{Deserialize, Serialize};

use crate::json::{self, nullable};
use crate::realtime::UserPresence;
use crate::wkt::StringValue;

/// The current status presences of the followed users.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Status {
    #[prost(message, repeated, tag = "1")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub presences: Vec<UserPresence>,
}

/// Follow users by id or username.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusFollow {
    #[prost(string, repeated, tag = "1")]
    #[serde(
        alias = "userIds",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub user_ids: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub usernames: Vec<String>,
}

/// Status changes of a followed user: new statuses in `joins`, replaced ones in `leaves`.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusPresenceEvent {
    #[prost(message, repeated, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub joins: Vec<UserPresence>,
    #[prost(message, repeated, tag = "3")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub leaves: Vec<UserPresence>,
}

/// Stop following users.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusUnfollow {
    #[prost(string, repeated, tag = "1")]
    #[serde(
        alias = "userIds",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub user_ids: Vec<String>,
}

/// Set this session's status; absent means "appear offline".
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusUpdate {
    #[prost(message, optional, tag = "1")]
    #[serde(with = "json::string_value", skip_serializing_if = "Option::is_none")]
    pub status: Option<StringValue>,
}
