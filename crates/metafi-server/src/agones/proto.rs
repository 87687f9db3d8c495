//! The messages of Agones' SDK gRPC API that MetaFi sends and reads, written from Agones'
//! public `sdk.proto` (package `agones.dev.sdk`) and `beta.proto` (`agones.dev.sdk.beta`:
//! Counters and Lists, which older Agones releases served from `alpha.proto`).
//! Only the fields MetaFi uses are declared: protobuf skips the others when decoding.

/// `agones.dev.sdk.Empty` (and `beta.Empty`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Empty {}

/// `agones.dev.sdk.KeyValue`: SetLabel's argument.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `agones.dev.sdk.GameServer`, as far as MetaFi reads it (WatchGameServer).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GameServer {
    #[prost(message, optional, tag = "1")]
    pub object_meta: Option<ObjectMeta>,
    #[prost(message, optional, tag = "3")]
    pub status: Option<GameServerStatus>,
}

/// `GameServer.ObjectMeta`: its name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ObjectMeta {
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `GameServer.Status`: its state (`Scheduled`, `Ready`, `Allocated`, `Shutdown`, …).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GameServerStatus {
    #[prost(string, tag = "1")]
    pub state: String,
}

/// `google.protobuf.Int64Value`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Int64Value {
    #[prost(int64, tag = "1")]
    pub value: i64,
}

/// `agones.dev.sdk.beta.CounterUpdateRequest`: set `count` (absolute) and/or `capacity`, or
/// add `count_diff`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterUpdateRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, optional, tag = "2")]
    pub count: Option<Int64Value>,
    #[prost(message, optional, tag = "3")]
    pub capacity: Option<Int64Value>,
    #[prost(int64, tag = "4")]
    pub count_diff: i64,
}

/// `agones.dev.sdk.beta.UpdateCounterRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateCounterRequest {
    #[prost(message, optional, tag = "1")]
    pub counter_update_request: Option<CounterUpdateRequest>,
}

/// `agones.dev.sdk.beta.Counter`: UpdateCounter's answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Counter {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int64, tag = "2")]
    pub count: i64,
    #[prost(int64, tag = "3")]
    pub capacity: i64,
}

/// `agones.dev.sdk.beta.List`: a List's name, capacity (at most 1000) and values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct List {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int64, tag = "2")]
    pub capacity: i64,
    #[prost(string, repeated, tag = "3")]
    pub values: Vec<String>,
}

/// `agones.dev.sdk.beta.GetListRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetListRequest {
    #[prost(string, tag = "1")]
    pub name: String,
}

/// `google.protobuf.FieldMask`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FieldMask {
    #[prost(string, repeated, tag = "1")]
    pub paths: Vec<String>,
}

/// `agones.dev.sdk.beta.UpdateListRequest`: the fields of `list` named in `update_mask`
/// (`capacity`, `values`) replace the List's.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UpdateListRequest {
    #[prost(message, optional, tag = "1")]
    pub list: Option<List>,
    #[prost(message, optional, tag = "2")]
    pub update_mask: Option<FieldMask>,
}

/// `agones.dev.sdk.beta.AddListValueRequest` and `RemoveListValueRequest` (same fields).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListValueRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// Method paths (`/package.Service/Method`).
pub mod path {
    pub const READY: &str = "/agones.dev.sdk.SDK/Ready";
    pub const HEALTH: &str = "/agones.dev.sdk.SDK/Health";
    pub const SHUTDOWN: &str = "/agones.dev.sdk.SDK/Shutdown";
    pub const SET_LABEL: &str = "/agones.dev.sdk.SDK/SetLabel";
    pub const WATCH_GAME_SERVER: &str = "/agones.dev.sdk.SDK/WatchGameServer";
    pub const UPDATE_COUNTER: &str = "/agones.dev.sdk.beta.SDK/UpdateCounter";
    pub const GET_LIST: &str = "/agones.dev.sdk.beta.SDK/GetList";
    pub const UPDATE_LIST: &str = "/agones.dev.sdk.beta.SDK/UpdateList";
    pub const ADD_LIST_VALUE: &str = "/agones.dev.sdk.beta.SDK/AddListValue";
    pub const REMOVE_LIST_VALUE: &str = "/agones.dev.sdk.beta.SDK/RemoveListValue";
}
