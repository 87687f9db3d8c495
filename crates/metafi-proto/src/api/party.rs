//! `api.Party` and `api.PartyList`: the answer of `GET /v2/party`.

use serde::{Deserialize, Serialize};

use crate::api::is_false;
use crate::json::{self, is_zero_i32, nullable};

/// A party as listed (no members: listing does not join).
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Party {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "partyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub party_id: String,
    #[prost(bool, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub open: bool,
    #[prost(bool, tag = "3")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub hidden: bool,
    #[prost(int32, tag = "4")]
    #[serde(
        alias = "maxSize",
        with = "json::int32",
        skip_serializing_if = "is_zero_i32"
    )]
    pub max_size: i32,
    /// A JSON object, as text (`{}` when the party has no label).
    #[prost(string, tag = "5")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub label: String,
}

/// A page of parties and the cursor to the next one.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PartyList {
    #[prost(message, repeated, tag = "1")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub parties: Vec<Party>,
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub cursor: String,
}
