//! `api.Tournament`, `api.TournamentList` and `api.TournamentRecordList`.

use serde::{Deserialize, Serialize};

use crate::api::LeaderboardRecord;
use crate::json::{self, is_false, is_zero_i32, is_zero_i64, nullable};
use crate::wkt::Timestamp;

fn is_zero_u32(value: &u32) -> bool {
    *value == 0
}

/// A tournament as clients see it.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Tournament {
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
    pub title: String,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[prost(uint32, tag = "4")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub category: u32,
    #[prost(uint32, tag = "5")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub sort_order: u32,
    #[prost(uint32, tag = "6")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub size: u32,
    #[prost(uint32, tag = "7")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub max_size: u32,
    #[prost(uint32, tag = "8")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub max_num_score: u32,
    #[prost(bool, tag = "9")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub can_enter: bool,
    #[prost(uint32, tag = "10")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub end_active: u32,
    #[prost(uint32, tag = "11")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub next_reset: u32,
    /// A JSON object, as text.
    #[prost(string, tag = "12")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub metadata: String,
    #[prost(message, optional, tag = "13")]
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub create_time: Option<Timestamp>,
    #[prost(message, optional, tag = "14")]
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Timestamp>,
    #[prost(message, optional, tag = "15")]
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Timestamp>,
    #[prost(uint32, tag = "16")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub duration: u32,
    #[prost(uint32, tag = "17")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub start_active: u32,
    #[prost(uint32, tag = "18")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_u32")]
    pub prev_reset: u32,
    /// `api.Operator` as a number: 1 best, 2 set, 3 increment, 4 decrement.
    #[prost(int32, tag = "19")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero_i32")]
    pub operator: i32,
    #[prost(bool, tag = "20")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub authoritative: bool,
    #[prost(bool, tag = "21")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub join_required: bool,
}

/// A page of tournaments.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct TournamentList {
    #[prost(message, repeated, tag = "1")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tournaments: Vec<Tournament>,
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub cursor: String,
}

/// A page of a tournament's records.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct TournamentRecordList {
    #[prost(message, repeated, tag = "1")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<LeaderboardRecord>,
    #[prost(message, repeated, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub owner_records: Vec<LeaderboardRecord>,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub next_cursor: String,
    #[prost(string, tag = "4")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub prev_cursor: String,
    #[prost(int64, tag = "5")]
    #[serde(with = "json::int64", skip_serializing_if = "is_zero_i64")]
    pub rank_count: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_follows_nakama() {
        let t = Tournament {
            id: "t".into(),
            max_size: 2_147_483_647,
            can_enter: true,
            operator: 1,
            start_time: Some(Timestamp {
                seconds: 1_700_000_000,
                nanos: 0,
            }),
            ..Tournament::default()
        };
        let json = serde_json::to_value(&t).expect("json");
        assert_eq!(
            json,
            serde_json::json!({
                "id": "t",
                "max_size": 2_147_483_647u32,
                "can_enter": true,
                "operator": 1,
                "start_time": "2023-11-14T22:13:20Z"
            })
        );
        let list = TournamentRecordList {
            rank_count: 3,
            ..TournamentRecordList::default()
        };
        assert_eq!(
            serde_json::to_value(&list).expect("json"),
            serde_json::json!({"rank_count": "3"})
        );
    }
}
