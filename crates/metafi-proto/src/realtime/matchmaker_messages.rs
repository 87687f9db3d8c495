//! The matchmaker (`rtapi` `Matchmaker*`): defined here so the match engine needs no codec work.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::json::{self, is_zero_i32, nullable};
use crate::realtime::UserPresence;
use crate::wkt::Int32Value;

/// Start matchmaking.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchmakerAdd {
    #[prost(int32, tag = "1")]
    #[serde(
        alias = "minCount",
        with = "json::int32",
        skip_serializing_if = "is_zero_i32"
    )]
    pub min_count: i32,
    #[prost(int32, tag = "2")]
    #[serde(
        alias = "maxCount",
        with = "json::int32",
        skip_serializing_if = "is_zero_i32"
    )]
    pub max_count: i32,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub query: String,
    #[prost(map = "string, string", tag = "4")]
    #[serde(
        alias = "stringProperties",
        deserialize_with = "nullable",
        skip_serializing_if = "HashMap::is_empty"
    )]
    pub string_properties: HashMap<String, String>,
    #[prost(map = "string, double", tag = "5")]
    #[serde(
        alias = "numericProperties",
        with = "json::double_map",
        skip_serializing_if = "HashMap::is_empty"
    )]
    pub numeric_properties: HashMap<String, f64>,
    #[prost(message, optional, tag = "6")]
    #[serde(
        alias = "countMultiple",
        with = "json::int32_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub count_multiple: Option<Int32Value>,
}

/// A completed matchmaking: who was matched and which match to join.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MatchmakerMatched {
    #[prost(string, tag = "1")]
    pub ticket: String,
    #[prost(oneof = "MatchmakerMatchedId", tags = "2, 3")]
    pub id: Option<MatchmakerMatchedId>,
    #[prost(message, repeated, tag = "4")]
    pub users: Vec<MatchmakerUser>,
    #[prost(message, optional, tag = "5")]
    pub self_user: Option<MatchmakerUser>,
}

/// The match to join after matchmaking (a protobuf `oneof`).
#[derive(Clone, PartialEq, Eq, prost::Oneof)]
pub enum MatchmakerMatchedId {
    #[prost(string, tag = "2")]
    MatchId(String),
    #[prost(string, tag = "3")]
    Token(String),
}

/// One matched user and the properties it matched with.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchmakerUser {
    #[prost(message, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence: Option<UserPresence>,
    #[prost(string, tag = "2")]
    #[serde(
        alias = "partyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub party_id: String,
    #[prost(map = "string, string", tag = "5")]
    #[serde(
        alias = "stringProperties",
        deserialize_with = "nullable",
        skip_serializing_if = "HashMap::is_empty"
    )]
    pub string_properties: HashMap<String, String>,
    #[prost(map = "string, double", tag = "6")]
    #[serde(
        alias = "numericProperties",
        with = "json::double_map",
        skip_serializing_if = "HashMap::is_empty"
    )]
    pub numeric_properties: HashMap<String, f64>,
}

/// Cancel matchmaking.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchmakerRemove {
    #[prost(string, tag = "1")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ticket: String,
}

/// The ticket of a started matchmaking, to cancel it with.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchmakerTicket {
    #[prost(string, tag = "1")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub ticket: String,
}

/// The JSON shape of [`MatchmakerMatched`]: the `oneof` members are plain keys.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct MatchmakerMatchedJson {
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    ticket: String,
    #[serde(alias = "matchId", skip_serializing_if = "Option::is_none")]
    match_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    users: Vec<MatchmakerUser>,
    #[serde(rename = "self", skip_serializing_if = "Option::is_none")]
    self_user: Option<MatchmakerUser>,
}

impl Serialize for MatchmakerMatched {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (match_id, token) = match &self.id {
            Some(MatchmakerMatchedId::MatchId(id)) => (Some(id.clone()), None),
            Some(MatchmakerMatchedId::Token(token)) => (None, Some(token.clone())),
            None => (None, None),
        };
        MatchmakerMatchedJson {
            ticket: self.ticket.clone(),
            match_id,
            token,
            users: self.users.clone(),
            self_user: self.self_user.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for MatchmakerMatched {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = MatchmakerMatchedJson::deserialize(d)?;
        let id = match (json.match_id, json.token) {
            (Some(_), Some(_)) => {
                return Err(serde::de::Error::custom(
                    "matchmaker_matched: set either match_id or token, not both",
                ));
            }
            (Some(id), None) => Some(MatchmakerMatchedId::MatchId(id)),
            (None, Some(token)) => Some(MatchmakerMatchedId::Token(token)),
            (None, None) => None,
        };
        Ok(MatchmakerMatched {
            ticket: json.ticket,
            id,
            users: json.users,
            self_user: json.self_user,
        })
    }
}
