//! Codec tests: golden encodings taken from Nakama's `.proto` field numbers and protobuf-JSON
//! rules, round trips of every message in both formats, and garbage that must not panic.

use std::collections::HashMap;

use bytes::Bytes;
use proptest::prelude::*;
use proptest::strategy::Union;
use serde_json::json;

use super::*;
use crate::api::{ChannelMessage, Notification, Rpc};
use crate::wkt::{BoolValue, Int32Value, StringValue, Timestamp, bool_value, int32_value};

fn json_of(envelope: &Envelope) -> serde_json::Value {
    serde_json::from_slice(&Format::Json.encode(envelope)).unwrap()
}

fn from_json(value: serde_json::Value) -> Envelope {
    Format::Json
        .decode(value.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("{value} did not decode: {e}"))
}

#[test]
fn json_renders_proto_names_and_omits_empty_fields() {
    let envelope = Envelope::new(
        "7",
        Message::Channel(Channel {
            id: "2...lobby".into(),
            presences: vec![],
            self_presence: Some(UserPresence {
                user_id: "u1".into(),
                session_id: "s1".into(),
                username: "alice".into(),
                persistence: true,
                status: None,
            }),
            room_name: "lobby".into(),
            ..Channel::default()
        }),
    );
    assert_eq!(
        json_of(&envelope),
        json!({"cid": "7", "channel": {
            "id": "2...lobby",
            "self": {"user_id": "u1", "session_id": "s1", "username": "alice", "persistence": true},
            "room_name": "lobby"
        }})
    );
}

/// The messages `party_message!` and `with_channel_target!` declare keep their field names,
/// tags and `lowerCamelCase` aliases.
#[test]
fn macro_declared_messages_keep_their_wire_format() {
    use prost::Message as _;
    let presence = UserPresence {
        user_id: "u".into(),
        ..UserPresence::default()
    };
    let leader = PartyLeader {
        party_id: "p".into(),
        presence: Some(presence.clone()),
    };
    let envelope = Envelope::new("", Message::PartyLeader(leader.clone()));
    assert_eq!(
        json_of(&envelope),
        json!({"party_leader": {"party_id": "p", "presence": {"user_id": "u"}}})
    );
    // Field 1 (string) "p", then field 2 (message).
    assert_eq!(&leader.encode_to_vec()[..4], &[0x0a, 1, b'p', 0x12]);
    let ticket: PartyMatchmakerTicket =
        serde_json::from_value(json!({"partyId": "p", "ticket": "t"})).unwrap();
    assert_eq!(ticket.encode_to_vec(), [0x0a, 1, b'p', 0x12, 1, b't']);
    let join: PartyJoin = serde_json::from_value(json!({"partyId": null})).unwrap();
    assert_eq!(join, PartyJoin::default());

    let event: ChannelPresenceEvent = serde_json::from_value(json!({
        "channelId": "c", "roomName": "r", "groupId": "g", "userIdOne": "a", "userIdTwo": "b"
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({"channel_id": "c", "room_name": "r", "group_id": "g", "user_id_one": "a",
               "user_id_two": "b"})
    );
    // Tags 4 to 7 after channel_id (1); joins and leaves (2, 3) are empty.
    let bytes = event.encode_to_vec();
    assert_eq!(
        bytes[3..],
        [0x22, 1, b'r', 0x2a, 1, b'g', 0x32, 1, b'a', 0x3a, 1, b'b']
    );
    let ack = ChannelMessageAck {
        room_name: "r".into(),
        ..ChannelMessageAck::default()
    };
    assert_eq!(ack.encode_to_vec(), [0x42, 1, b'r']);
    let message = ChannelMessage {
        user_id_two: "b".into(),
        ..ChannelMessage::default()
    };
    assert_eq!(message.encode_to_vec(), [0x6a, 1, b'b']);
    let channel = Channel {
        group_id: "g".into(),
        ..Channel::default()
    };
    assert_eq!(channel.encode_to_vec(), [0x2a, 1, b'g']);
}

#[test]
fn json_wrappers_are_present_even_when_zero() {
    let message = ChannelMessage {
        channel_id: "2...r".into(),
        code: int32_value(0),
        persistent: bool_value(false),
        create_time: Some(Timestamp::from_millis(1_700_000_000_123)),
        ..ChannelMessage::default()
    };
    let value = json_of(&Envelope::new("", Message::ChannelMessage(message)));
    assert_eq!(
        value,
        json!({"channel_message": {
            "channel_id": "2...r", "code": 0, "persistent": false,
            "create_time": "2023-11-14T22:13:20.123Z"
        }})
    );
}

#[test]
fn json_int64_is_a_string_and_bytes_are_base64() {
    let data = MatchData {
        match_id: "m.node".into(),
        op_code: 9_007_199_254_740_993,
        data: Bytes::from_static(b"\x00\xffhi"),
        reliable: true,
        ..MatchData::default()
    };
    let value = json_of(&Envelope::new("", Message::MatchData(data.clone())));
    assert_eq!(
        value,
        json!({"match_data": {"match_id": "m.node", "op_code": "9007199254740993", "data": "AP9oaQ==", "reliable": true}})
    );
    assert_eq!(
        from_json(value).message,
        Some(Message::MatchData(data)),
        "decodes back"
    );
}

#[test]
fn the_delivery_extension_is_field_1000_and_a_json_object() {
    let send = MatchDataSend {
        match_id: "m.".into(),
        op_code: 1,
        delivery: Some(DeliveryClass::latest("pos").to_wire()),
        ..MatchDataSend::default()
    };
    let bytes = Format::Protobuf.encode(&Envelope::new("", Message::MatchDataSend(send.clone())));
    // Field 1000, wire type 2 (length-delimited): varint key 8002 = 0xc2 0x3e.
    let key = [0xc2, 0x3e];
    assert!(bytes.windows(2).any(|w| w == key), "{bytes:02x?}");
    let value = json_of(&Envelope::new("", Message::MatchDataSend(send)));
    assert_eq!(
        value["match_data_send"]["delivery"],
        json!({"class": 4, "lane": "pos"})
    );
    // A sender that names no class sends no extension: Nakama's bytes, unchanged.
    let plain = MatchDataSend {
        match_id: "m.".into(),
        reliable: true,
        ..MatchDataSend::default()
    };
    let value = json_of(&Envelope::new("", Message::MatchDataSend(plain)));
    assert!(
        value["match_data_send"].get("delivery").is_none(),
        "{value}"
    );
}

#[test]
fn json_input_as_nakama_js_sends_it() {
    // WebSocketAdapterText turns op_code into a string and data into base64.
    let envelope = from_json(json!({
        "match_data_send": {"match_id": "m", "op_code": "3", "data": "aGVsbG8=", "presences": []}
    }));
    let Some(Message::MatchDataSend(send)) = envelope.message else {
        panic!("{envelope:?}")
    };
    assert_eq!(send.op_code, 3);
    assert_eq!(send.data, Bytes::from_static(b"hello"));
    // Numbers are accepted for int64 too, and URL-safe unpadded base64 for bytes.
    let envelope = from_json(json!({"match_data_send": {"op_code": 4, "data": "-_8"}}));
    let Some(Message::MatchDataSend(send)) = envelope.message else {
        panic!("{envelope:?}")
    };
    assert_eq!((send.op_code, send.data.as_ref()), (4, &[0xfb, 0xff][..]));
}

#[test]
fn json_accepts_camel_case_nulls_and_ignores_unknown_fields() {
    let envelope = from_json(json!({
        "cid": "1",
        "channelJoin": {"target": "room", "type": "1", "persistence": null, "hidden": true, "extra": [1]},
        "unknown_top_level": {"x": 1}
    }));
    assert_eq!(envelope.cid, "1");
    assert_eq!(
        envelope.message,
        Some(Message::ChannelJoin(ChannelJoin {
            target: "room".into(),
            r#type: 1,
            persistence: None,
            hidden: bool_value(true),
        }))
    );
    let envelope = from_json(json!({"cid": null, "status_update": {}}));
    assert_eq!(envelope.cid, "");
    assert_eq!(
        envelope.message,
        Some(Message::StatusUpdate(StatusUpdate { status: None }))
    );
}

#[test]
fn json_without_a_known_message_decodes_to_none() {
    assert_eq!(from_json(json!({"cid": "2"})).message, None);
    assert_eq!(
        from_json(json!({"cid": "2", "future_message": {"open": true}})).message,
        None
    );
}

#[test]
fn party_messages_decode_from_both_formats() {
    let create = Some(Message::PartyCreate(PartyCreate {
        open: true,
        max_size: 4,
        label: String::new(),
        hidden: false,
    }));
    assert_eq!(
        from_json(json!({"cid": "2", "party_create": {"open": true, "max_size": 4}})).message,
        create
    );
    assert_eq!(
        from_json(json!({"cid": "2", "partyCreate": {"open": true, "maxSize": 4}})).message,
        create
    );
    // Field 35 (party_create): open = true, max_size = 4.
    let bytes = [0x0a, 0x01, b'9', 0x9a, 0x02, 0x04, 0x08, 0x01, 0x10, 0x04];
    assert_eq!(Format::Protobuf.decode(&bytes).unwrap().message, create);
    // op_code is an int64: a string in JSON; data is base64.
    let data =
        from_json(json!({"party_data_send": {"party_id": "p", "op_code": "7", "data": "aGk="}}));
    assert_eq!(
        data.message,
        Some(Message::PartyDataSend(PartyDataSend {
            party_id: "p".into(),
            op_code: 7,
            data: bytes::Bytes::from_static(b"hi"),
        }))
    );
}

#[test]
fn json_rejects_two_messages_and_non_objects() {
    for bad in [
        r#"{"ping":{},"pong":{}}"#,
        "[]",
        "\"ping\"",
        "",
        r#"{"channel_join":{"type":1.5}}"#,
        r#"{"channel_join":{"type":"x"}}"#,
        r#"{"match_data_send":{"data":"***"}}"#,
        r#"{"channel_message":{"create_time":"yesterday"}}"#,
    ] {
        assert!(Format::Json.decode(bad.as_bytes()).is_err(), "{bad}");
    }
}

#[test]
fn json_error_omits_code_zero_like_protojson() {
    let value = json_of(&Envelope::error("3", ErrorCode::RuntimeException, "boom"));
    assert_eq!(value, json!({"cid": "3", "error": {"message": "boom"}}));
    let value = json_of(&Envelope::error(
        "4",
        ErrorCode::RuntimeFunctionNotFound,
        "RPC function not found",
    ));
    assert_eq!(
        value,
        json!({"cid": "4", "error": {"code": 6, "message": "RPC function not found"}})
    );
    assert_eq!(json_of(&Envelope::ack("5")), json!({"cid": "5"}));
}

#[test]
fn json_non_finite_doubles_are_strings() {
    let add = MatchmakerAdd {
        numeric_properties: HashMap::from([("skill".to_owned(), f64::INFINITY)]),
        ..MatchmakerAdd::default()
    };
    let value = json_of(&Envelope::new("", Message::MatchmakerAdd(add.clone())));
    assert_eq!(
        value,
        json!({"matchmaker_add": {"numeric_properties": {"skill": "Infinity"}}})
    );
    assert_eq!(from_json(value).message, Some(Message::MatchmakerAdd(add)));
}

#[test]
fn json_oneof_members_are_plain_keys() {
    let join = MatchJoin {
        id: Some(MatchJoinId::Token("tok".into())),
        metadata: HashMap::from([("k".to_owned(), "v".to_owned())]),
    };
    let value = json_of(&Envelope::new("1", Message::MatchJoin(join.clone())));
    assert_eq!(
        value,
        json!({"cid": "1", "match_join": {"token": "tok", "metadata": {"k": "v"}}})
    );
    assert_eq!(from_json(value).message, Some(Message::MatchJoin(join)));
    assert!(
        Format::Json
            .decode(br#"{"match_join":{"match_id":"a","token":"b"}}"#)
            .is_err()
    );
}

#[test]
fn protobuf_uses_nakamas_field_numbers() {
    // Envelope.cid = 1; Envelope.ping = 32 (tag 32, wire type 2 -> varint 0x82 0x02), empty.
    let ping = Envelope::new("1", Message::Ping(Ping {}));
    assert_eq!(
        Format::Protobuf.encode(&ping),
        vec![0x0a, 0x01, b'1', 0x82, 0x02, 0x00]
    );
    // Envelope.rpc = 24 (0xc2 0x01); Rpc.id = 1, Rpc.payload = 2.
    let rpc = Envelope::new(
        "",
        Message::Rpc(Rpc {
            id: "f".into(),
            payload: "{}".into(),
            http_key: String::new(),
        }),
    );
    assert_eq!(
        Format::Protobuf.encode(&rpc),
        vec![0xc2, 0x01, 0x07, 0x0a, 0x01, b'f', 0x12, 0x02, b'{', b'}']
    );
    // ChannelJoin (3): target = 1, type = 2, persistence = BoolValue at 3 holding false.
    let join = Envelope::new(
        "",
        Message::ChannelJoin(ChannelJoin {
            target: "r".into(),
            r#type: 1,
            persistence: bool_value(false),
            hidden: None,
        }),
    );
    assert_eq!(
        Format::Protobuf.encode(&join),
        vec![0x1a, 0x07, 0x0a, 0x01, b'r', 0x10, 0x01, 0x1a, 0x00]
    );
    // StatusPresenceEvent (27 -> 0xda 0x01) starts its fields at 2 (joins).
    let event = Envelope::new(
        "",
        Message::StatusPresenceEvent(StatusPresenceEvent {
            joins: vec![UserPresence {
                user_id: "u".into(),
                ..UserPresence::default()
            }],
            leaves: vec![],
        }),
    );
    assert_eq!(
        Format::Protobuf.encode(&event),
        vec![0xda, 0x01, 0x05, 0x12, 0x03, 0x0a, 0x01, b'u']
    );
}

#[test]
fn protobuf_skips_unknown_fields() {
    // Envelope.cid = "9", then field 99 (no such message) with an empty body.
    let bytes = [0x0a, 0x01, b'9', 0x9a, 0x06, 0x00];
    let envelope = Format::Protobuf.decode(&bytes).unwrap();
    assert_eq!(envelope, Envelope::ack("9"));
}

#[test]
fn format_query_values() {
    assert_eq!(Format::from_query(""), Some(Format::Json));
    assert_eq!(Format::from_query("json"), Some(Format::Json));
    assert_eq!(Format::from_query("protobuf"), Some(Format::Protobuf));
    assert_eq!(Format::from_query("xml"), None);
}

// ---- strategies -------------------------------------------------------------------------

fn text() -> impl Strategy<Value = String> {
    "\\PC{0,10}"
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(text(), 0..3)
}

fn string_map() -> impl Strategy<Value = HashMap<String, String>> {
    prop::collection::hash_map(text(), text(), 0..3)
}

fn double_map() -> impl Strategy<Value = HashMap<String, f64>> {
    // Values with short exact decimal forms, so JSON round trips bit for bit.
    prop::collection::hash_map(text(), any::<i32>().prop_map(|n| f64::from(n) / 8.0), 0..3)
}

fn data() -> impl Strategy<Value = Bytes> {
    prop::collection::vec(any::<u8>(), 0..16).prop_map(Bytes::from)
}

fn opt_bool() -> impl Strategy<Value = Option<BoolValue>> {
    prop::option::of(any::<bool>().prop_map(|value| BoolValue { value }))
}

fn opt_i32() -> impl Strategy<Value = Option<Int32Value>> {
    prop::option::of(any::<i32>().prop_map(|value| Int32Value { value }))
}

fn opt_string() -> impl Strategy<Value = Option<StringValue>> {
    prop::option::of(text().prop_map(|value| StringValue { value }))
}

fn opt_time() -> impl Strategy<Value = Option<Timestamp>> {
    prop::option::of(
        (-62_135_596_800i64..=253_402_300_799, 0i32..1_000_000_000)
            .prop_map(|(seconds, nanos)| Timestamp { seconds, nanos }),
    )
}

prop_compose! {
    fn presence()(user_id in text(), session_id in text(), username in text(),
                  persistence in any::<bool>(), status in opt_string()) -> UserPresence {
        UserPresence { user_id, session_id, username, persistence, status }
    }
}

/// MetaFi's delivery extension, sometimes absent, with any class number (unknown ones too).
fn delivery() -> impl Strategy<Value = Option<Delivery>> {
    prop::option::of((-1..6i32, text()).prop_map(|(class, lane)| Delivery { class, lane }))
}

fn presences() -> impl Strategy<Value = Vec<UserPresence>> {
    prop::collection::vec(presence(), 0..3)
}

prop_compose! {
    fn channel_message()(ids in (text(), text(), text(), text()), code in opt_i32(),
                         content in text(), times in (opt_time(), opt_time()),
                         persistent in opt_bool(), names in (text(), text(), text(), text()))
                         -> ChannelMessage {
        ChannelMessage {
            channel_id: ids.0, message_id: ids.1, code, sender_id: ids.2, username: ids.3,
            content, create_time: times.0, update_time: times.1, persistent,
            room_name: names.0, group_id: names.1, user_id_one: names.2, user_id_two: names.3,
        }
    }
}

prop_compose! {
    fn matchmaker_user()(presence in prop::option::of(presence()), party_id in text(),
                         string_properties in string_map(), numeric_properties in double_map())
                         -> MatchmakerUser {
        MatchmakerUser { presence, party_id, string_properties, numeric_properties }
    }
}

prop_compose! {
    fn stream()(mode in any::<i32>(), subject in text(), subcontext in text(), label in text())
                -> Stream {
        Stream { mode, subject, subcontext, label }
    }
}

prop_compose! {
    fn notification()(id in text(), subject in text(), content in text(), code in any::<i32>(),
                      sender_id in text(), create_time in opt_time(), persistent in any::<bool>())
                      -> Notification {
        Notification { id, subject, content, code, sender_id, create_time, persistent }
    }
}

fn message() -> impl Strategy<Value = Message> {
    Union::new(vec![
        (
            text(),
            presences(),
            prop::option::of(presence()),
            (text(), text(), text(), text()),
        )
            .prop_map(|(id, presences, self_presence, n)| {
                Message::Channel(Channel {
                    id,
                    presences,
                    self_presence,
                    room_name: n.0,
                    group_id: n.1,
                    user_id_one: n.2,
                    user_id_two: n.3,
                })
            })
            .boxed(),
        (text(), any::<i32>(), opt_bool(), opt_bool())
            .prop_map(|(target, r#type, persistence, hidden)| {
                Message::ChannelJoin(ChannelJoin {
                    target,
                    r#type,
                    persistence,
                    hidden,
                })
            })
            .boxed(),
        text()
            .prop_map(|channel_id| Message::ChannelLeave(ChannelLeave { channel_id }))
            .boxed(),
        channel_message().prop_map(Message::ChannelMessage).boxed(),
        (
            (text(), text(), text()),
            opt_i32(),
            (opt_time(), opt_time()),
            opt_bool(),
            (text(), text(), text(), text()),
        )
            .prop_map(|(ids, code, times, persistent, n)| {
                Message::ChannelMessageAck(ChannelMessageAck {
                    channel_id: ids.0,
                    message_id: ids.1,
                    code,
                    username: ids.2,
                    create_time: times.0,
                    update_time: times.1,
                    persistent,
                    room_name: n.0,
                    group_id: n.1,
                    user_id_one: n.2,
                    user_id_two: n.3,
                })
            })
            .boxed(),
        (text(), text())
            .prop_map(|(channel_id, content)| {
                Message::ChannelMessageSend(ChannelMessageSend {
                    channel_id,
                    content,
                })
            })
            .boxed(),
        (text(), text(), text())
            .prop_map(|(channel_id, message_id, content)| {
                Message::ChannelMessageUpdate(ChannelMessageUpdate {
                    channel_id,
                    message_id,
                    content,
                })
            })
            .boxed(),
        (text(), text())
            .prop_map(|(channel_id, message_id)| {
                Message::ChannelMessageRemove(ChannelMessageRemove {
                    channel_id,
                    message_id,
                })
            })
            .boxed(),
        (
            text(),
            presences(),
            presences(),
            (text(), text(), text(), text()),
        )
            .prop_map(|(channel_id, joins, leaves, n)| {
                Message::ChannelPresenceEvent(ChannelPresenceEvent {
                    channel_id,
                    joins,
                    leaves,
                    room_name: n.0,
                    group_id: n.1,
                    user_id_one: n.2,
                    user_id_two: n.3,
                })
            })
            .boxed(),
        (any::<i32>(), text(), string_map())
            .prop_map(|(code, message, context)| {
                Message::Error(Error {
                    code,
                    message,
                    context,
                })
            })
            .boxed(),
        (
            text(),
            any::<bool>(),
            opt_string(),
            any::<i32>(),
            presences(),
            prop::option::of(presence()),
        )
            .prop_map(
                |(match_id, authoritative, label, size, presences, self_presence)| {
                    Message::Match(Match {
                        match_id,
                        authoritative,
                        label,
                        size,
                        presences,
                        self_presence,
                    })
                },
            )
            .boxed(),
        text()
            .prop_map(|name| Message::MatchCreate(MatchCreate { name }))
            .boxed(),
        (
            text(),
            prop::option::of(presence()),
            any::<i64>(),
            data(),
            any::<bool>(),
            delivery(),
        )
            .prop_map(|(match_id, presence, op_code, data, reliable, delivery)| {
                Message::MatchData(MatchData {
                    match_id,
                    presence,
                    op_code,
                    data,
                    reliable,
                    delivery,
                })
            })
            .boxed(),
        (
            text(),
            any::<i64>(),
            data(),
            presences(),
            any::<bool>(),
            delivery(),
        )
            .prop_map(|(match_id, op_code, data, presences, reliable, delivery)| {
                Message::MatchDataSend(MatchDataSend {
                    match_id,
                    op_code,
                    data,
                    presences,
                    reliable,
                    delivery,
                })
            })
            .boxed(),
        (
            prop::option::of(prop_oneof![
                text().prop_map(MatchJoinId::MatchId),
                text().prop_map(MatchJoinId::Token)
            ]),
            string_map(),
        )
            .prop_map(|(id, metadata)| Message::MatchJoin(MatchJoin { id, metadata }))
            .boxed(),
        text()
            .prop_map(|match_id| Message::MatchLeave(MatchLeave { match_id }))
            .boxed(),
        (text(), presences(), presences())
            .prop_map(|(match_id, joins, leaves)| {
                Message::MatchPresenceEvent(MatchPresenceEvent {
                    match_id,
                    joins,
                    leaves,
                })
            })
            .boxed(),
        (
            any::<i32>(),
            any::<i32>(),
            text(),
            string_map(),
            double_map(),
            opt_i32(),
        )
            .prop_map(
                |(
                    min_count,
                    max_count,
                    query,
                    string_properties,
                    numeric_properties,
                    count_multiple,
                )| {
                    Message::MatchmakerAdd(MatchmakerAdd {
                        min_count,
                        max_count,
                        query,
                        string_properties,
                        numeric_properties,
                        count_multiple,
                    })
                },
            )
            .boxed(),
        (
            text(),
            prop::option::of(prop_oneof![
                text().prop_map(MatchmakerMatchedId::MatchId),
                text().prop_map(MatchmakerMatchedId::Token)
            ]),
            prop::collection::vec(matchmaker_user(), 0..3),
            prop::option::of(matchmaker_user()),
        )
            .prop_map(|(ticket, id, users, self_user)| {
                Message::MatchmakerMatched(MatchmakerMatched {
                    ticket,
                    id,
                    users,
                    self_user,
                })
            })
            .boxed(),
        text()
            .prop_map(|ticket| Message::MatchmakerRemove(MatchmakerRemove { ticket }))
            .boxed(),
        text()
            .prop_map(|ticket| Message::MatchmakerTicket(MatchmakerTicket { ticket }))
            .boxed(),
        prop::collection::vec(notification(), 0..3)
            .prop_map(|notifications| Message::Notifications(Notifications { notifications }))
            .boxed(),
        (text(), text(), text())
            .prop_map(|(id, payload, http_key)| {
                Message::Rpc(Rpc {
                    id,
                    payload,
                    http_key,
                })
            })
            .boxed(),
        presences()
            .prop_map(|presences| Message::Status(Status { presences }))
            .boxed(),
        (texts(), texts())
            .prop_map(|(user_ids, usernames)| {
                Message::StatusFollow(StatusFollow {
                    user_ids,
                    usernames,
                })
            })
            .boxed(),
        (presences(), presences())
            .prop_map(|(joins, leaves)| {
                Message::StatusPresenceEvent(StatusPresenceEvent { joins, leaves })
            })
            .boxed(),
        texts()
            .prop_map(|user_ids| Message::StatusUnfollow(StatusUnfollow { user_ids }))
            .boxed(),
        opt_string()
            .prop_map(|status| Message::StatusUpdate(StatusUpdate { status }))
            .boxed(),
        (
            prop::option::of(stream()),
            prop::option::of(presence()),
            text(),
            any::<bool>(),
        )
            .prop_map(|(stream, sender, data, reliable)| {
                Message::StreamData(StreamData {
                    stream,
                    sender,
                    data,
                    reliable,
                })
            })
            .boxed(),
        (prop::option::of(stream()), presences(), presences())
            .prop_map(|(stream, joins, leaves)| {
                Message::StreamPresenceEvent(StreamPresenceEvent {
                    stream,
                    joins,
                    leaves,
                })
            })
            .boxed(),
        Just(Message::Ping(Ping {})).boxed(),
        Just(Message::Pong(Pong {})).boxed(),
        party_message(),
    ])
}

/// Every party message, so both codecs carry each of them.
fn party_message() -> BoxedStrategy<Message> {
    let id = text;
    Union::new(vec![
        (
            id(),
            (any::<bool>(), any::<bool>(), any::<i32>()),
            prop::option::of(presence()),
            prop::option::of(presence()),
            presences(),
            text(),
        )
            .prop_map(
                |(party_id, (open, hidden, max_size), me, leader, presences, label)| {
                    Message::Party(Party {
                        party_id,
                        open,
                        hidden,
                        max_size,
                        self_presence: me,
                        leader,
                        presences,
                        label,
                    })
                },
            )
            .boxed(),
        (any::<bool>(), any::<i32>(), text(), any::<bool>())
            .prop_map(|(open, max_size, label, hidden)| {
                Message::PartyCreate(PartyCreate {
                    open,
                    max_size,
                    label,
                    hidden,
                })
            })
            .boxed(),
        id().prop_map(|party_id| Message::PartyJoin(PartyJoin { party_id }))
            .boxed(),
        id().prop_map(|party_id| Message::PartyLeave(PartyLeave { party_id }))
            .boxed(),
        id().prop_map(|party_id| Message::PartyClose(PartyClose { party_id }))
            .boxed(),
        id().prop_map(|party_id| Message::PartyJoinRequestList(PartyJoinRequestList { party_id }))
            .boxed(),
        (id(), prop::option::of(presence()))
            .prop_map(|(party_id, presence)| {
                Message::PartyPromote(PartyPromote { party_id, presence })
            })
            .boxed(),
        (id(), prop::option::of(presence()))
            .prop_map(|(party_id, presence)| {
                Message::PartyLeader(PartyLeader { party_id, presence })
            })
            .boxed(),
        (id(), prop::option::of(presence()))
            .prop_map(|(party_id, presence)| {
                Message::PartyAccept(PartyAccept { party_id, presence })
            })
            .boxed(),
        (id(), prop::option::of(presence()))
            .prop_map(|(party_id, presence)| {
                Message::PartyRemove(PartyRemove { party_id, presence })
            })
            .boxed(),
        (id(), presences())
            .prop_map(|(party_id, presences)| {
                Message::PartyJoinRequest(PartyJoinRequest {
                    party_id,
                    presences,
                })
            })
            .boxed(),
        (
            id(),
            any::<i32>(),
            any::<i32>(),
            text(),
            prop::option::of(any::<i32>()),
        )
            .prop_map(|(party_id, min_count, max_count, query, multiple)| {
                Message::PartyMatchmakerAdd(PartyMatchmakerAdd {
                    party_id,
                    min_count,
                    max_count,
                    query,
                    string_properties: HashMap::from([("region".into(), "eu".into())]),
                    numeric_properties: HashMap::from([("skill".into(), 1.5)]),
                    count_multiple: multiple.map(|value| Int32Value { value }),
                })
            })
            .boxed(),
        (id(), text())
            .prop_map(|(party_id, ticket)| {
                Message::PartyMatchmakerRemove(PartyMatchmakerRemove { party_id, ticket })
            })
            .boxed(),
        (id(), text())
            .prop_map(|(party_id, ticket)| {
                Message::PartyMatchmakerTicket(PartyMatchmakerTicket { party_id, ticket })
            })
            .boxed(),
        (
            id(),
            prop::option::of(presence()),
            any::<i64>(),
            prop::collection::vec(any::<u8>(), 0..16),
        )
            .prop_map(|(party_id, presence, op_code, data)| {
                Message::PartyData(PartyData {
                    party_id,
                    presence,
                    op_code,
                    data: Bytes::from(data),
                })
            })
            .boxed(),
        (
            id(),
            any::<i64>(),
            prop::collection::vec(any::<u8>(), 0..16),
        )
            .prop_map(|(party_id, op_code, data)| {
                Message::PartyDataSend(PartyDataSend {
                    party_id,
                    op_code,
                    data: Bytes::from(data),
                })
            })
            .boxed(),
        (id(), presences(), presences())
            .prop_map(|(party_id, joins, leaves)| {
                Message::PartyPresenceEvent(PartyPresenceEvent {
                    party_id,
                    joins,
                    leaves,
                })
            })
            .boxed(),
        (id(), text(), any::<bool>(), any::<bool>())
            .prop_map(|(party_id, label, open, hidden)| {
                Message::PartyUpdate(PartyUpdate {
                    party_id,
                    label,
                    open,
                    hidden,
                })
            })
            .boxed(),
    ])
    .boxed()
}

prop_compose! {
    fn envelope()(cid in text(), message in prop::option::of(message())) -> Envelope {
        Envelope { cid, message }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn json_round_trips(envelope in envelope()) {
        let bytes = Format::Json.encode(&envelope);
        prop_assert!(std::str::from_utf8(&bytes).is_ok());
        let back = Format::Json.decode(&bytes);
        prop_assert_eq!(back.ok(), Some(envelope));
    }

    #[test]
    fn protobuf_round_trips(envelope in envelope()) {
        let back = Format::Protobuf.decode(&Format::Protobuf.encode(&envelope));
        prop_assert_eq!(back.ok(), Some(envelope));
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = Format::Json.decode(&bytes);
        let _ = Format::Protobuf.decode(&bytes);
    }

    #[test]
    fn mutated_encodings_never_panic(envelope in envelope(), flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        for format in [Format::Json, Format::Protobuf] {
            let mut bytes = format.encode(&envelope);
            if bytes.is_empty() {
                continue;
            }
            for (at, value) in &flips {
                let len = bytes.len();
                bytes[at % len] ^= value;
            }
            let _ = format.decode(&bytes);
            let truncated = &bytes[..bytes.len() / 2];
            let _ = format.decode(truncated);
        }
    }

    #[test]
    fn json_like_garbage_never_panics(text in r#"\{("[a-z_]{1,12}":(\{[^{}]{0,20}\}|"[^"]{0,8}"|-?[0-9]{1,20}|null|true|\[\]),?){0,4}\}"#) {
        let _ = Format::Json.decode(text.as_bytes());
    }
}
