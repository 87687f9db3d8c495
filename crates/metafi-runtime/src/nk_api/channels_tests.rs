//! The chat channel rows through `NkArgs`, as Lua and JS call them.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use metafi_core::ChannelId;
use metafi_proto::api::{ChannelMessage, ChannelMessageList};
use metafi_proto::wkt::{Timestamp, bool_value, int32_value};
use uuid::Uuid;

use super::super::test_realtime::{Asked, Lang, call, harness, lua_error, map};
use super::super::{Naming, NkError, NkValue};
use crate::realtime_host::{ChannelEdit, ChannelSender};

fn s(text: &str) -> NkValue {
    NkValue::from(text)
}

fn lobby() -> ChannelId {
    ChannelId::Room {
        name: "lobby".into(),
    }
}

#[tokio::test]
async fn send_defaults_to_a_system_message_persisted_in_js_only_and_returns_the_ack() {
    let h = harness(true).await;
    let ack = call(
        &h.nk,
        Lang::Lua,
        "channel_message_send",
        vec![s("2...lobby"), map(&[("text", s("hi"))])],
    )
    .await
    .unwrap();
    assert_eq!(
        ack.to_json(Naming::Snake).unwrap(),
        serde_json::json!({
            "channelId": "2...lobby", "messageId": Uuid::nil().to_string(), "code": 0,
            "username": "", "createTime": 1_700_000_000, "updateTime": 1_700_000_001,
            "persistent": false
        }),
        "Nakama's camelCase ack keys, times in seconds, in Lua too"
    );
    let sender = Uuid::new_v4();
    call(
        &h.nk,
        Lang::Js,
        "channelMessageSend",
        vec![
            s("2...lobby"),
            NkValue::Nil,
            s(&sender.to_string()),
            s("bot"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        h.realtime.asked(),
        vec![
            Asked::Channel(
                ChannelSender {
                    channel: lobby(),
                    sender: Uuid::nil(),
                    username: String::new(),
                    persist: false,
                },
                ChannelEdit::Send {
                    content: r#"{"text":"hi"}"#.into()
                }
            ),
            Asked::Channel(
                ChannelSender {
                    channel: lobby(),
                    sender,
                    username: "bot".into(),
                    persist: true,
                },
                ChannelEdit::Send {
                    content: "{}".into()
                }
            ),
        ]
    );
}

#[tokio::test]
async fn send_update_and_remove_refuse_bad_arguments_with_nakamas_texts() {
    let h = harness(true).await;
    assert_eq!(
        lua_error(
            call(&h.nk, Lang::Lua, "channel_message_send", vec![s("lobby")]).await,
            "channel_message_send"
        ),
        "error converting channel identifier to stream: invalid channel id"
    );
    assert_eq!(
        call(&h.nk, Lang::Js, "channelMessageSend", vec![s("lobby")]).await,
        Err(NkError::Arg {
            position: 1,
            message: "invalid channel id".into()
        })
    );
    assert_eq!(
        lua_error(
            call(
                &h.nk,
                Lang::Lua,
                "channel_message_send",
                vec![s("2...lobby"), NkValue::List(vec![NkValue::Int(1)])]
            )
            .await,
            "channel_message_send"
        ),
        "bad argument #2 to channel_message_send (expects message content to be a valid JSON object)"
    );
    assert_eq!(
        lua_error(
            call(
                &h.nk,
                Lang::Lua,
                "channel_message_send",
                vec![s("2...lobby"), NkValue::Nil, s("not-a-uuid")]
            )
            .await,
            "channel_message_send"
        ),
        "bad argument #3 to channel_message_send (expects sender id to either be not set, empty string or a valid UUID)"
    );
    assert_eq!(
        lua_error(
            call(
                &h.nk,
                Lang::Lua,
                "channel_message_update",
                vec![s("2...lobby"), s("42")]
            )
            .await,
            "channel_message_update"
        ),
        "bad argument #2 to channel_message_update (Invalid message identifier)"
    );
    assert!(h.realtime.asked().is_empty());
}

#[tokio::test]
async fn update_and_remove_name_the_message_write_whole_numbers_as_integers_and_say_what_failed() {
    let h = harness(true).await;
    let id = Uuid::new_v4().to_string();
    let ack = call(
        &h.nk,
        Lang::Js,
        "channelMessageUpdate",
        vec![
            s("2...lobby"),
            s(&id),
            map(&[("v", NkValue::Float(2.0)), ("f", NkValue::Float(0.5))]),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        ack.as_map().unwrap().get("code"),
        Some(&NkValue::Int(1)),
        "an update's code"
    );
    let removed = call(
        &h.nk,
        Lang::Lua,
        "channel_message_remove",
        vec![s("2...lobby"), s(&id)],
    )
    .await
    .unwrap();
    assert_eq!(
        removed.as_map().unwrap().get("code"),
        Some(&NkValue::Int(2))
    );
    let missing = call(
        &h.nk,
        Lang::Js,
        "channelMessageRemove",
        vec![
            s("2...lobby"),
            s(&id),
            NkValue::Nil,
            NkValue::Nil,
            NkValue::Bool(true),
        ],
    )
    .await;
    assert_eq!(
        missing,
        Err(NkError::failed(
            "failed to remove channel message: Could not find message to remove in channel history"
        ))
    );
    let asked = h.realtime.asked();
    assert_eq!(
        asked[0],
        Asked::Channel(
            ChannelSender {
                channel: lobby(),
                sender: Uuid::nil(),
                username: String::new(),
                persist: true,
            },
            ChannelEdit::Update {
                message_id: id.clone(),
                content: r#"{"f":0.5,"v":2}"#.into()
            }
        )
    );
}

#[tokio::test]
async fn list_returns_three_values_in_lua_and_an_object_in_js() {
    let h = harness(true).await;
    *h.realtime.messages.lock() = ChannelMessageList {
        messages: vec![ChannelMessage {
            channel_id: "2...lobby".into(),
            message_id: "m".into(),
            code: int32_value(0),
            sender_id: "s".into(),
            username: "alice".into(),
            content: "{}".into(),
            create_time: Some(Timestamp::from_millis(5_000)),
            update_time: Some(Timestamp::from_millis(6_000)),
            persistent: bool_value(true),
            room_name: "lobby".into(),
            ..ChannelMessage::default()
        }],
        next_cursor: "next".into(),
        prev_cursor: String::new(),
        cacheable_cursor: String::new(),
    };
    let lua = call(
        &h.nk,
        Lang::Lua,
        "channel_messages_list",
        vec![s("2...lobby")],
    )
    .await
    .unwrap();
    let NkValue::Multi(values) = &lua else {
        panic!("three results: {lua:?}");
    };
    assert_eq!(values.len(), 3);
    assert_eq!(values[1], s("next"));
    assert_eq!(values[2], NkValue::Nil, "no previous page: nil");
    assert_eq!(
        values[0].to_json(Naming::Snake).unwrap(),
        serde_json::json!([{
            "channelId": "2...lobby", "messageId": "m", "code": 0, "senderId": "s",
            "username": "alice", "content": "{}", "createTime": 5, "updateTime": 6,
            "persistent": true, "roomName": "lobby", "groupId": "", "userIdOne": "",
            "userIdTwo": ""
        }])
    );
    let js = call(
        &h.nk,
        Lang::Js,
        "channelMessagesList",
        vec![
            s("2...lobby"),
            NkValue::Int(10),
            NkValue::Bool(false),
            s("c"),
        ],
    )
    .await
    .unwrap();
    let js = js.to_json(Naming::Camel).unwrap();
    assert_eq!(js["nextCursor"], "next");
    assert_eq!(js["messages"][0]["senderId"], "s");
    assert_eq!(
        h.realtime.asked(),
        vec![
            Asked::ListMessages("2...lobby".into(), 100, true, None),
            Asked::ListMessages("2...lobby".into(), 10, false, Some("c".into())),
        ],
        "Nakama's defaults: 100 forward from the start"
    );
    assert_eq!(
        lua_error(
            call(
                &h.nk,
                Lang::Lua,
                "channel_messages_list",
                vec![s("2...lobby"), NkValue::Int(101)]
            )
            .await,
            "channel_messages_list"
        ),
        "bad argument #2 to channel_messages_list (limit must be 1-100)"
    );
}

#[tokio::test]
async fn id_build_checks_the_type_and_reports_a_bad_target_as_an_argument_error() {
    let h = harness(true).await;
    let id = call(
        &h.nk,
        Lang::Lua,
        "channel_id_build",
        vec![s(""), s("lobby"), NkValue::Int(1)],
    )
    .await
    .unwrap();
    assert_eq!(id, s("2...lobby"));
    assert_eq!(
        lua_error(
            call(
                &h.nk,
                Lang::Lua,
                "channel_id_build",
                vec![s(""), s("lobby"), NkValue::Int(4)]
            )
            .await,
            "channel_id_build"
        ),
        "bad argument #3 to channel_id_build (invalid channel type: expects value 1-3)"
    );
    let sender = Uuid::new_v4();
    assert_eq!(
        call(
            &h.nk,
            Lang::Js,
            "channelIdBuild",
            vec![s(&sender.to_string()), s("nobody"), NkValue::Int(2)]
        )
        .await,
        Err(NkError::Arg {
            position: 1,
            message: "User ID not found: Invalid channel target".into()
        })
    );
    assert_eq!(
        h.realtime.asked(),
        vec![
            Asked::Build(Uuid::nil(), "lobby".into(), 1),
            Asked::Build(sender, "nobody".into(), 2),
        ]
    );
}
