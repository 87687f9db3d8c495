//! `api.LeaderboardRecord`, `api.LeaderboardRecordList` and the body of a record write
//! (`WriteLeaderboardRecordRequest.LeaderboardRecordWrite`).

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use crate::json::{self, is_zero_i32, is_zero_i64, nullable};
use crate::wkt::{StringValue, Timestamp};

/// One owner's record on a board.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaderboardRecord {
    #[prost(string, tag = "1")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub leaderboard_id: String,
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub owner_id: String,
    #[prost(message, optional, tag = "3")]
    #[serde(with = "json::string_value", skip_serializing_if = "Option::is_none")]
    pub username: Option<StringValue>,
    #[prost(int64, tag = "4")]
    #[serde(with = "json::int64", skip_serializing_if = "is_zero_i64")]
    pub score: i64,
    #[prost(int64, tag = "5")]
    #[serde(with = "json::int64", skip_serializing_if = "is_zero_i64")]
    pub subscore: i64,
    #[prost(int32, tag = "6")]
    #[serde(with = "json::int32", skip_serializing_if = "is_zero_i32")]
    pub num_score: i32,
    /// A JSON object, as text.
    #[prost(string, tag = "7")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub metadata: String,
    #[prost(message, optional, tag = "8")]
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub create_time: Option<Timestamp>,
    #[prost(message, optional, tag = "9")]
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub update_time: Option<Timestamp>,
    #[prost(message, optional, tag = "10")]
    #[serde(with = "json::timestamp", skip_serializing_if = "Option::is_none")]
    pub expiry_time: Option<Timestamp>,
    #[prost(int64, tag = "11")]
    #[serde(with = "json::int64", skip_serializing_if = "is_zero_i64")]
    pub rank: i64,
    #[prost(uint32, tag = "12")]
    #[serde(skip_serializing_if = "is_zero_u32", deserialize_with = "nullable")]
    pub max_num_score: u32,
}

/// A page of records, the requested owners' records, cursors and the ranked count.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaderboardRecordList {
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

/// The body of `POST /v2/leaderboard/{id}`.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaderboardRecordWrite {
    #[prost(int64, tag = "1")]
    #[serde(with = "json::int64", skip_serializing_if = "is_zero_i64")]
    pub score: i64,
    #[prost(int64, tag = "2")]
    #[serde(with = "json::int64", skip_serializing_if = "is_zero_i64")]
    pub subscore: i64,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub metadata: String,
    /// `api.Operator`: 0 no override, 1 best, 2 set, 3 increment, 4 decrement.
    #[prost(int32, tag = "4")]
    #[serde(deserialize_with = "operator", skip_serializing_if = "is_zero_i32")]
    pub operator: i32,
}

fn is_zero_u32(value: &u32) -> bool {
    *value == 0
}

/// An `api.Operator` as protobuf JSON reads enums: the number or the value's name.
fn operator<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Number(i64),
        Name(String),
        Null(()),
    }
    match Raw::deserialize(d)? {
        // Proto3 enums are open: an unknown number reads, and the call refuses it.
        Raw::Number(n) => i32::try_from(n)
            .map_err(|_| de::Error::custom("invalid value for enum type api.Operator")),
        Raw::Name(name) => match name.as_str() {
            "NO_OVERRIDE" => Ok(0),
            "BEST" => Ok(1),
            "SET" => Ok(2),
            "INCREMENT" => Ok(3),
            "DECREMENT" => Ok(4),
            _ => Err(de::Error::custom(
                "invalid value for enum type api.Operator",
            )),
        },
        Raw::Null(()) => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_json_is_nakamas() {
        let record = LeaderboardRecord {
            leaderboard_id: "b".into(),
            owner_id: "o".into(),
            score: 12,
            num_score: 1,
            metadata: "{}".into(),
            create_time: Some(Timestamp {
                seconds: 1_700_000_000,
                nanos: 0,
            }),
            rank: 3,
            ..LeaderboardRecord::default()
        };
        let json = serde_json::to_value(&record).unwrap_or_default();
        assert_eq!(
            json,
            serde_json::json!({
                "leaderboard_id": "b", "owner_id": "o", "score": "12", "num_score": 1,
                "metadata": "{}", "create_time": "2023-11-14T22:13:20Z", "rank": "3"
            })
        );
    }

    #[test]
    fn operators_read_as_numbers_or_names() {
        let write: LeaderboardRecordWrite =
            serde_json::from_str(r#"{"score":"5","operator":"INCREMENT"}"#).unwrap_or_default();
        assert_eq!((write.score, write.operator), (5, 3));
        let write: LeaderboardRecordWrite =
            serde_json::from_str(r#"{"score":5,"operator":4}"#).unwrap_or_default();
        assert_eq!((write.score, write.operator), (5, 4));
        assert!(serde_json::from_str::<LeaderboardRecordWrite>(r#"{"operator":"MAX"}"#).is_err());
    }
}
