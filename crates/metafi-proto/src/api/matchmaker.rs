//! `api.MatchmakerStats`: the answer of `GET /v2/matchmaker/stats`.

use serde::{Deserialize, Serialize};

use crate::json::{self, is_zero_i32, nullable};
use crate::wkt::Timestamp;

/// When one matched player's ticket was made and when it was matched.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchmakerCompletionStats {
    #[prost(message, optional, tag = "1")]
    #[serde(
        alias = "createTime",
        with = "json::timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub create_time: Option<Timestamp>,
    #[prost(message, optional, tag = "2")]
    #[serde(
        alias = "completeTime",
        with = "json::timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub complete_time: Option<Timestamp>,
}

/// The matchmaker as of its last pass: tickets waiting, the oldest one's age, and the most
/// recent completions.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MatchmakerStats {
    #[prost(int32, tag = "1")]
    #[serde(
        alias = "ticketCount",
        with = "json::int32",
        skip_serializing_if = "is_zero_i32"
    )]
    pub ticket_count: i32,
    #[prost(message, optional, tag = "2")]
    #[serde(
        alias = "oldestTicketCreateTime",
        with = "json::timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub oldest_ticket_create_time: Option<Timestamp>,
    #[prost(message, repeated, tag = "3")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub completions: Vec<MatchmakerCompletionStats>,
}
