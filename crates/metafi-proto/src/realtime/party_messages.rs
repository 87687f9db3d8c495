//! Parties (`rtapi` `Party*`): a group of players that stays together across matches, with a
//! leader, optional join approval, data between members, and matchmaking as one unit.

use std::collections::HashMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::json::{self, is_false, is_zero_i32, is_zero_i64, nullable};
use crate::realtime::UserPresence;
use crate::wkt::Int32Value;

/// A party message: the party's id, and for some one member (`presence`) or the party's
/// matchmaker ticket (`ticket`). Doc comments before the name document the message; each is a
/// distinct type with the same fields and wire format.
macro_rules! party_message {
    ($(#[$doc:meta])* $name:ident) => {
        party_message!(@struct $(#[$doc])* $name {});
    };
    ($(#[$doc:meta])* $name:ident, presence) => {
        party_message!(@struct $(#[$doc])* $name {
            #[prost(message, optional, tag = "2")]
            #[serde(skip_serializing_if = "Option::is_none")]
            pub presence: Option<UserPresence>,
        });
    };
    ($(#[$doc:meta])* $name:ident, ticket) => {
        party_message!(@struct $(#[$doc])* $name {
            #[prost(string, tag = "2")]
            #[serde(deserialize_with = "nullable", skip_serializing_if = "String::is_empty")]
            pub ticket: String,
        });
    };
    (@struct $(#[$doc:meta])* $name:ident { $($fields:tt)* }) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
        #[serde(default)]
        pub struct $name {
            #[prost(string, tag = "1")]
            #[serde(
                alias = "partyId",
                deserialize_with = "nullable",
                skip_serializing_if = "String::is_empty"
            )]
            pub party_id: String,
            $($fields)*
        }
    };
}

/// A party as the server describes it to a member (the answer to `party_create`, and what a new member is sent).
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
    /// Anyone may join at once; otherwise the leader accepts join requests.
    #[prost(bool, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub open: bool,
    /// Left out of `GET /v2/party` listings.
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
    /// The receiving member.
    #[prost(message, optional, tag = "5")]
    #[serde(rename = "self", skip_serializing_if = "Option::is_none")]
    pub self_presence: Option<UserPresence>,
    #[prost(message, optional, tag = "6")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader: Option<UserPresence>,
    /// Every member, the receiver included.
    #[prost(message, repeated, tag = "7")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub presences: Vec<UserPresence>,
    #[prost(string, tag = "8")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub label: String,
}

/// Create a party; the creator is its first member and leader.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PartyCreate {
    #[prost(bool, tag = "1")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub open: bool,
    #[prost(int32, tag = "2")]
    #[serde(
        alias = "maxSize",
        with = "json::int32",
        skip_serializing_if = "is_zero_i32"
    )]
    pub max_size: i32,
    #[prost(string, tag = "3")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub label: String,
    #[prost(bool, tag = "4")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub hidden: bool,
}

/// Change a party's label, openness and visibility (leader only).
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PartyUpdate {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "partyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub party_id: String,
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub label: String,
    #[prost(bool, tag = "3")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub open: bool,
    #[prost(bool, tag = "4")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_false")]
    pub hidden: bool,
}

party_message!(
    /// Join a party, or ask to join a closed one.
    PartyJoin
);

party_message!(
    /// Leave a party.
    PartyLeave
);

party_message!(
    /// Make another member the leader (leader only).
    PartyPromote, presence
);

party_message!(
    /// Who leads a party now.
    PartyLeader, presence
);

party_message!(
    /// Accept a join request (leader only).
    PartyAccept, presence
);

party_message!(
    /// Remove a member or refuse a join request (leader only).
    PartyRemove, presence
);

party_message!(
    /// Close a party (leader only); also sent to members when the party closes or they are removed.
    PartyClose
);

party_message!(
    /// List a party's join requests (leader only).
    PartyJoinRequestList
);

/// Join requests: the answer to `party_join_request_list`, and what the leader is sent when one arrives.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PartyJoinRequest {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "partyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub party_id: String,
    #[prost(message, repeated, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub presences: Vec<UserPresence>,
}

/// Matchmake the whole party as one ticket (leader only).
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PartyMatchmakerAdd {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "partyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub party_id: String,
    #[prost(int32, tag = "2")]
    #[serde(
        alias = "minCount",
        with = "json::int32",
        skip_serializing_if = "is_zero_i32"
    )]
    pub min_count: i32,
    #[prost(int32, tag = "3")]
    #[serde(
        alias = "maxCount",
        with = "json::int32",
        skip_serializing_if = "is_zero_i32"
    )]
    pub max_count: i32,
    #[prost(string, tag = "4")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub query: String,
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
    #[prost(message, optional, tag = "7")]
    #[serde(
        alias = "countMultiple",
        with = "json::int32_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub count_multiple: Option<Int32Value>,
}

party_message!(
    /// Cancel a party's matchmaking (leader only).
    PartyMatchmakerRemove, ticket
);

party_message!(
    /// A party's matchmaker ticket, sent to the leader and every member.
    PartyMatchmakerTicket, ticket
);

/// Data from a member, delivered to the other members. `op_code` is an int64: a string in JSON.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PartyData {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "partyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub party_id: String,
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
}

/// Send data to the other members.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PartyDataSend {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "partyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub party_id: String,
    #[prost(int64, tag = "2")]
    #[serde(
        alias = "opCode",
        with = "json::int64",
        skip_serializing_if = "is_zero_i64"
    )]
    pub op_code: i64,
    /// Base64 in JSON.
    #[prost(bytes = "bytes", tag = "3")]
    #[serde(with = "json::base64_bytes", skip_serializing_if = "Bytes::is_empty")]
    pub data: Bytes,
}

/// Members that joined and left a party.
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PartyPresenceEvent {
    #[prost(string, tag = "1")]
    #[serde(
        alias = "partyId",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub party_id: String,
    #[prost(message, repeated, tag = "2")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub joins: Vec<UserPresence>,
    #[prost(message, repeated, tag = "3")]
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub leaves: Vec<UserPresence>,
}
