//! `api.Event`: the body of `POST /v2/event`, and what event processors receive.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::api::is_false;
use crate::json::{self, nullable};
use crate::wkt::Timestamp;

/// An event a client (or server code, `nk.event`) reports.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Event {
    #[prost(string, tag = "1")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    #[prost(map = "string, string", tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "HashMap::is_empty"
    )]
    pub properties: HashMap<String, String>,
    #[prost(message, optional, tag = "3")]
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// True when a client sent it (`POST /v2/event` sets it whatever the body says).
    #[prost(bool, tag = "4")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub external: bool,
}
