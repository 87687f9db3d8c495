//! Realtime matches (`rtapi` `Match*`): defined here so the match engine needs no codec work.

use std::collections::HashMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::json::{self, is_false, is_zero_i32, is_zero_i64, nullable};
use crate::realtime::{Delivery, UserPresence};
use crate::wkt::StringValue;

/// A match as the server describes it to a client that created or joined it.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Match {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "matchId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub match_id: String,
    #[prost(bool, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub authoritative: bool,
    #[prost(message, optional, tag = "3")]
    #[serde(with = "json::string_value", skip_serializing_if = "Option::is_none")]
    pub label: Option<StringValue>,
    #[prost(int32, tag = "4")]
    #[serde(with = "json::int32", skip_serializing_if = "is_zero_i32")]
    pub size: i32,
    #[prost(message, repeated, tag = "5")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub presences: Vec<UserPresence>,
    #[prost(message, optional, tag = "6")]
    #[serde(rename = "self", skip_serializing_if = "Option::is_none")]
    pub self_presence: Option<UserPresence>,
}

/// Create a relayed match.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchCreate {
    #[prost(string, tag = "1")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
}

/// Match data delivered to a client. `op_code` is an int64: a string in JSON.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchData {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "matchId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub match_id: String,
    #[prost(message, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence: Option<UserPresence>,
    #[prost(int64, tag = "3")]
    #[serde(
        alias = "opCode",
        with = "json::int64",
        skip_serializing_if = "is_zero_i64"
    )]
    pub op_code: i64,
    /// Base64 in JSON.
    #[prost(bytes = "bytes", tag = "4")]
    #[serde(with = "json::base64_bytes", skip_serializing_if = "Bytes::is_empty")]
    pub data: Bytes,
    #[prost(bool, tag = "5")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub reliable: bool,
    /// MetaFi extension: the delivery class the sender chose (absent when it chose none).
    #[prost(message, optional, tag = "1000")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
}

/// Match data sent by a client, to everyone in the match or to `presences`.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchDataSend {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "matchId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub match_id: String,
    #[prost(int64, tag = "2")]
    #[serde(
        alias = "opCode",
        with = "json::int64",
        skip_serializing_if = "is_zero_i64"
    )]
    pub op_code: i64,
    #[prost(bytes = "bytes", tag = "3")]
    #[serde(with = "json::base64_bytes", skip_serializing_if = "Bytes::is_empty")]
    pub data: Bytes,
    #[prost(message, repeated, tag = "4")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub presences: Vec<UserPresence>,
    #[prost(bool, tag = "5")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub reliable: bool,
    /// MetaFi extension: how to deliver it (`docs/TRANSPORT.md`); absent → by `reliable`.
    #[prost(message, optional, tag = "1000")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
}

/// Join a match by id, or with a matchmaker token.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct MatchJoin {
    #[prost(oneof = "MatchJoinId", tags = "1, 2")]
    pub id: Option<MatchJoinId>,
    /// Passed to the match handler's join attempt.
    #[prost(map = "string, string", tag = "3")]
    pub metadata: HashMap<String, String>,
}

/// Which match to join (a protobuf `oneof`).
#[derive(Clone, PartialEq, Eq, prost::Oneof)]
pub enum MatchJoinId {
    #[prost(string, tag = "1")]
    MatchId(String),
    #[prost(string, tag = "2")]
    Token(String),
}

/// Leave a match.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchLeave {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "matchId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub match_id: String,
}

/// Sessions that joined and left a match.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchPresenceEvent {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "matchId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub match_id: String,
    #[prost(message, repeated, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub joins: Vec<UserPresence>,
    #[prost(message, repeated, tag = "3")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub leaves: Vec<UserPresence>,
}

/// The JSON shape of [`MatchJoin`]: the `oneof` members are plain keys of the object.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct MatchJoinJson {
    #[serde(alias = "matchId", skip_serializing_if = "Option::is_none")]
    match_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "HashMap::is_empty"
    )]
    metadata: HashMap<String, String>,
}

impl Serialize for MatchJoin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (match_id, token) = match &self.id {
            Some(MatchJoinId::MatchId(id)) => (Some(id.clone()), None),
            Some(MatchJoinId::Token(token)) => (None, Some(token.clone())),
            None => (None, None),
        };
        MatchJoinJson {
            match_id,
            token,
            metadata: self.metadata.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for MatchJoin {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = MatchJoinJson::deserialize(d)?;
        let id = match (json.match_id, json.token) {
            (Some(_), Some(_)) => {
                return Err(serde::de::Error::custom(
                    "match_join: set either match_id or token, not both",
                ));
            }
            (Some(id), None) => Some(MatchJoinId::MatchId(id)),
            (None, Some(token)) => Some(MatchJoinId::Token(token)),
            (None, None) => None,
        };
        Ok(MatchJoin {
            id,
            metadata: json.metadata,
        })
    }
}
