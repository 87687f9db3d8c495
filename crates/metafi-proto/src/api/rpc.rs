//! `api.Rpc`: a call of a server function and its result, over REST or the socket.

use serde::{Deserialize, Serialize};

use crate::json::nullable;

/// An RPC call (client to server) or its result (server to client).
#[derive(Clone, PartialEq, Eq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Rpc {
    /// The function's identifier.
    #[prost(string, tag = "1")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub id: String,
    /// The request or result payload.
    #[prost(string, tag = "2")]
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub payload: String,
    /// The HTTP key of server-to-server calls; ignored over the socket.
    #[prost(string, tag = "3")]
    #[serde(
        alias = "httpKey",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub http_key: String,
}
