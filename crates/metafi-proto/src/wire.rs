//! Field groups that several wire messages repeat, declared once. Each macro writes the whole
//! struct (fields cannot come from a macro), so a message reads as its own fields plus the
//! group it names; the wire format is the fields', pinned by the realtime tests.

/// A channel message whose last four fields name the channel: `room_name`, `group_id`,
/// `user_id_one` and `user_id_two` (JSON also accepts their `lowerCamelCase` names), with the
/// protobuf tags given, as `rtapi` and `api` repeat them.
macro_rules! with_channel_target {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($fields:tt)* }
        target_tags = ($room:tt, $group:tt, $one:tt, $two:tt);
    ) => {
        $(#[$meta])*
        pub struct $name {
            $($fields)*
            #[prost(string, tag = $room)]
            #[serde(
                alias = "roomName",
                deserialize_with = "crate::json::nullable",
                skip_serializing_if = "String::is_empty"
            )]
            pub room_name: String,
            #[prost(string, tag = $group)]
            #[serde(
                alias = "groupId",
                deserialize_with = "crate::json::nullable",
                skip_serializing_if = "String::is_empty"
            )]
            pub group_id: String,
            #[prost(string, tag = $one)]
            #[serde(
                alias = "userIdOne",
                deserialize_with = "crate::json::nullable",
                skip_serializing_if = "String::is_empty"
            )]
            pub user_id_one: String,
            #[prost(string, tag = $two)]
            #[serde(
                alias = "userIdTwo",
                deserialize_with = "crate::json::nullable",
                skip_serializing_if = "String::is_empty"
            )]
            pub user_id_two: String,
        }
    };
}
