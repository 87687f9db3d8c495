//! The stream rows through `NkArgs`, as Lua and JS call them: arguments, defaults, results and
//! errors, against a recording realtime layer.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use metafi_proto::realtime::{Envelope, Message, Stream, StreamData};
use uuid::Uuid;

use super::super::test_realtime::{Asked, Lang, call, harness, lua_error, map};
use super::super::{NkError, NkValue};
use crate::realtime_host::{StreamId, StreamJoin, StreamJoinError, StreamMeta, StreamPresence};

fn s(text: &str) -> NkValue {
    NkValue::from(text)
}

fn custom_stream() -> (NkValue, StreamId, Uuid) {
    let subject = Uuid::new_v4();
    (
        map(&[
            ("mode", NkValue::Int(123)),
            ("subject", s(&subject.to_string())),
            ("label", s("arena")),
        ]),
        StreamId {
            mode: 123,
            subject,
            subcontext: Uuid::nil(),
            label: "arena".into(),
        },
        subject,
    )
}

#[tokio::test]
async fn join_passes_nakamas_defaults_and_returns_whether_the_session_was_new() {
    let h = harness(true).await;
    let (stream, id, _) = custom_stream();
    let (user, session) = (Uuid::new_v4(), Uuid::new_v4());
    let joined = call(
        &h.nk,
        Lang::Lua,
        "stream_user_join",
        vec![
            s(&user.to_string()),
            s(&session.to_string()),
            stream.clone(),
        ],
    )
    .await
    .unwrap();
    assert_eq!(joined, NkValue::Bool(true));
    call(
        &h.nk,
        Lang::Js,
        "streamUserJoin",
        vec![
            s(&user.to_string()),
            s(&session.to_string()),
            stream,
            NkValue::Bool(true),
            NkValue::Bool(false),
            s("away"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        h.realtime.asked(),
        vec![
            Asked::Join(
                user,
                session,
                id.clone(),
                StreamJoin {
                    hidden: false,
                    persistence: true,
                    status: String::new()
                }
            ),
            Asked::Join(
                user,
                session,
                id,
                StreamJoin {
                    hidden: true,
                    persistence: false,
                    status: "away".into()
                }
            ),
        ]
    );
}

#[tokio::test]
async fn join_errors_are_nakamas_in_each_language() {
    let h = harness(true).await;
    let (stream, _, _) = custom_stream();
    let session = Uuid::new_v4().to_string();
    let user = Uuid::new_v4().to_string();
    let lua = |args| call(&h.nk, Lang::Lua, "stream_user_join", args);
    assert_eq!(
        lua_error(
            lua(vec![s(""), s(&session), stream.clone()]).await,
            "stream_user_join"
        ),
        "bad argument #1 to stream_user_join (expects user id)"
    );
    assert_eq!(
        lua_error(
            lua(vec![s("nope"), s(&session), stream.clone()]).await,
            "stream_user_join"
        ),
        "bad argument #1 to stream_user_join (expects valid user id)"
    );
    assert_eq!(
        lua_error(
            lua(vec![s(&user), s("x"), stream.clone()]).await,
            "stream_user_join"
        ),
        "bad argument #2 to stream_user_join (expects valid session id)"
    );
    assert_eq!(
        lua_error(
            lua(vec![s(&user), s(&session), s("stream")]).await,
            "stream_user_join"
        ),
        "bad argument #3 to stream_user_join (expects a valid stream)"
    );
    let bad_mode = map(&[("mode", s("one"))]);
    assert_eq!(
        lua_error(
            lua(vec![s(&user), s(&session), bad_mode]).await,
            "stream_user_join"
        ),
        "bad argument #3 to stream_user_join (stream mode must be a number)"
    );
    let bad_subject = map(&[("mode", NkValue::Int(2)), ("subject", s("x"))]);
    assert_eq!(
        lua_error(
            lua(vec![s(&user), s(&session), bad_subject]).await,
            "stream_user_join"
        ),
        "bad argument #3 to stream_user_join (stream subject must be a valid identifier)"
    );
    let js = call(
        &h.nk,
        Lang::Js,
        "streamUserJoin",
        vec![s("nope"), s(&session), stream.clone()],
    )
    .await;
    assert_eq!(
        js,
        Err(NkError::Arg {
            position: 1,
            message: "invalid user id".into()
        })
    );
    let js = call(
        &h.nk,
        Lang::Js,
        "streamUserJoin",
        vec![s(&user), s(&session), NkValue::Nil],
    )
    .await;
    assert_eq!(
        js,
        Err(NkError::Arg {
            position: 3,
            message: "expects stream object".into()
        })
    );
    assert!(
        h.realtime.asked().is_empty(),
        "no bad call reached the host"
    );

    *h.realtime.join.lock() = Some(StreamJoinError::NoSession);
    assert_eq!(
        lua_error(
            lua(vec![s(&user), s(&session), stream.clone()]).await,
            "stream_user_join"
        ),
        "bad argument #2 to stream_user_join (session id does not exist)"
    );
    let js = call(
        &h.nk,
        Lang::Js,
        "streamUserJoin",
        vec![s(&user), s(&session), stream.clone()],
    )
    .await;
    assert_eq!(js, Err(NkError::failed("session id does not exist")));
    // The session's node did not answer (a cluster): the host's text, as it is.
    let why = "the session's node \"n2\" did not answer the stream join (timed out)";
    *h.realtime.join.lock() = Some(StreamJoinError::Unanswered(why.into()));
    assert_eq!(
        lua_error(
            lua(vec![s(&user), s(&session), stream.clone()]).await,
            "stream_user_join"
        ),
        why
    );
    *h.realtime.join.lock() = Some(StreamJoinError::Closing);
    assert_eq!(
        lua_error(
            call(
                &h.nk,
                Lang::Lua,
                "stream_user_update",
                vec![s(&user), s(&session), stream]
            )
            .await,
            "stream_user_update"
        ),
        "tracker rejected updated presence, session is closing"
    );
}

#[tokio::test]
async fn list_and_get_shape_presences_as_nakama_does_per_language() {
    let h = harness(true).await;
    let (stream, id, _) = custom_stream();
    let (user, session) = (Uuid::new_v4(), Uuid::new_v4());
    *h.realtime.presences.lock() = vec![StreamPresence {
        user_id: user,
        session_id: session,
        node: "node-1".into(),
        meta: StreamMeta {
            hidden: false,
            persistence: true,
            username: "alice".into(),
            status: "ready".into(),
        },
    }];
    let lua = call(&h.nk, Lang::Lua, "stream_user_list", vec![stream.clone()])
        .await
        .unwrap();
    let lua = lua.to_json(super::super::Naming::Snake).unwrap();
    assert_eq!(
        lua,
        serde_json::json!([{
            "user_id": user.to_string(), "session_id": session.to_string(), "node": "node-1",
            "hidden": false, "persistence": true, "username": "alice", "status": "ready"
        }])
    );
    let js = call(
        &h.nk,
        Lang::Js,
        "streamUserList",
        vec![stream.clone(), NkValue::Bool(false)],
    )
    .await
    .unwrap();
    assert_eq!(
        js.to_json(super::super::Naming::Camel).unwrap(),
        serde_json::json!([{
            "userId": user.to_string(), "sessionId": session.to_string(), "nodeId": "node-1",
            "hidden": false, "persistence": true, "username": "alice", "status": "ready",
            "reason": 0
        }])
    );
    assert_eq!(
        h.realtime.asked(),
        vec![
            Asked::List(id.clone(), true, true),
            Asked::List(id.clone(), false, true)
        ]
    );

    let args = || {
        vec![
            s(&user.to_string()),
            s(&session.to_string()),
            stream.clone(),
        ]
    };
    let absent = call(&h.nk, Lang::Lua, "stream_user_get", args())
        .await
        .unwrap();
    assert_eq!(absent, NkValue::Nil, "not in the stream: nil");
    *h.realtime.meta.lock() = Some(StreamMeta {
        hidden: true,
        persistence: false,
        username: "alice".into(),
        status: String::new(),
    });
    let meta = call(&h.nk, Lang::Lua, "stream_user_get", args())
        .await
        .unwrap();
    assert_eq!(
        meta.to_json(super::super::Naming::Snake).unwrap(),
        serde_json::json!({"hidden": true, "persistence": false, "username": "alice", "status": ""})
    );
    let count = call(&h.nk, Lang::Js, "streamCount", vec![stream])
        .await
        .unwrap();
    assert_eq!(count, NkValue::Int(1));
}

#[tokio::test]
async fn send_builds_a_stream_data_envelope_with_no_sender_for_the_whole_stream_or_some() {
    let h = harness(true).await;
    let (stream, id, subject) = custom_stream();
    call(
        &h.nk,
        Lang::Lua,
        "stream_send",
        vec![stream.clone(), s("{\"hp\":3}")],
    )
    .await
    .unwrap();
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    call(
        &h.nk,
        Lang::Js,
        "streamSend",
        vec![
            stream.clone(),
            s("x"),
            NkValue::List(vec![
                map(&[("sessionId", s(&a.to_string()))]),
                map(&[
                    ("sessionId", s(&b.to_string())),
                    ("nodeId", s("other-node")),
                ]),
            ]),
            NkValue::Bool(false),
        ],
    )
    .await
    .unwrap();
    let data = |data: &str, reliable| {
        Envelope::new(
            "",
            Message::StreamData(StreamData {
                stream: Some(Stream {
                    mode: 123,
                    subject: subject.to_string(),
                    subcontext: String::new(),
                    label: "arena".into(),
                }),
                sender: None,
                data: data.into(),
                reliable,
            }),
        )
    };
    assert_eq!(
        h.realtime.asked(),
        vec![
            Asked::Send(id.clone(), Box::new(data("{\"hp\":3}", true)), None),
            // The presence on another node gets nothing from this one.
            Asked::Send(id, Box::new(data("x", false)), Some(vec![a])),
        ]
    );
    let bad = call(
        &h.nk,
        Lang::Lua,
        "stream_send",
        vec![
            stream,
            s("x"),
            NkValue::List(vec![map(&[("session_id", s("no"))])]),
        ],
    )
    .await;
    assert_eq!(
        lua_error(bad, "stream_send"),
        "bad argument #3 to stream_send (presence session id must be a valid identifier)"
    );
}

#[tokio::test]
async fn send_raw_parses_the_envelope_as_protobuf_json_and_refuses_one_without_a_message() {
    let h = harness(true).await;
    let (stream, id, _) = custom_stream();
    let envelope = map(&[(
        "channel_message",
        map(&[("channel_id", s("2...lobby")), ("content", s("{}"))]),
    )]);
    call(
        &h.nk,
        Lang::Lua,
        "stream_send_raw",
        vec![stream.clone(), envelope],
    )
    .await
    .unwrap();
    let asked = h.realtime.asked();
    let [Asked::Send(sent_to, sent, None)] = asked.as_slice() else {
        panic!("one send to the whole stream: {asked:?}");
    };
    assert_eq!(sent_to, &id);
    let Some(Message::ChannelMessage(message)) = &sent.message else {
        panic!("a channel message: {sent:?}");
    };
    assert_eq!(message.channel_id, "2...lobby");

    let empty = call(
        &h.nk,
        Lang::Lua,
        "stream_send_raw",
        vec![stream.clone(), map(&[("cid", s("1"))])],
    )
    .await;
    assert_eq!(
        lua_error(empty, "stream_send_raw"),
        "bad argument #2 to stream_send_raw (not a valid envelope: it has no message)"
    );
    let js = call(
        &h.nk,
        Lang::Js,
        "streamSendRaw",
        vec![stream, map(&[("ping", s("not an object"))])],
    )
    .await;
    assert!(
        matches!(&js, Err(NkError::Failed { message }) if message.starts_with("not a valid envelope: ")),
        "{js:?}"
    );
}

#[tokio::test]
async fn leave_kick_and_close_reach_the_host_and_kick_checks_the_presence() {
    let h = harness(true).await;
    let (stream, id, _) = custom_stream();
    let (user, session) = (Uuid::new_v4(), Uuid::new_v4());
    call(
        &h.nk,
        Lang::Lua,
        "stream_user_leave",
        vec![
            s(&user.to_string()),
            s(&session.to_string()),
            stream.clone(),
        ],
    )
    .await
    .unwrap();
    call(
        &h.nk,
        Lang::Lua,
        "stream_user_kick",
        vec![
            map(&[
                ("user_id", s(&user.to_string())),
                ("session_id", s(&session.to_string())),
            ]),
            stream.clone(),
        ],
    )
    .await
    .unwrap();
    call(
        &h.nk,
        Lang::Js,
        "streamUserKick",
        vec![
            map(&[
                ("userId", s(&user.to_string())),
                ("sessionId", s(&session.to_string())),
                ("node", s("another-node")),
            ]),
            stream.clone(),
        ],
    )
    .await
    .unwrap();
    call(&h.nk, Lang::Lua, "stream_close", vec![stream.clone()])
        .await
        .unwrap();
    assert_eq!(
        h.realtime.asked(),
        vec![
            Asked::Leave(user, session, id.clone()),
            Asked::Leave(user, session, id.clone()),
            Asked::Leave(user, session, id.clone()),
            Asked::Close(id),
        ],
        "a kick of a presence that names another node reaches the host too (it finds the \
         session's node)"
    );
    let no_session = call(
        &h.nk,
        Lang::Lua,
        "stream_user_kick",
        vec![map(&[("user_id", s(&user.to_string()))]), stream],
    )
    .await;
    assert_eq!(
        lua_error(no_session, "stream_user_kick"),
        "bad argument #1 to stream_user_kick (expects each presence to have a valid user_id, session_id, and node)"
    );
}

#[tokio::test]
async fn without_the_realtime_layer_each_function_fails_naming_itself() {
    let h = harness(false).await;
    let (stream, _, _) = custom_stream();
    assert_eq!(
        call(&h.nk, Lang::Js, "streamCount", vec![stream.clone()]).await,
        Err(NkError::failed(
            "nk.streamCount is not available: this server runs without the realtime layer"
        ))
    );
    assert_eq!(
        lua_error(
            call(&h.nk, Lang::Lua, "stream_close", vec![stream]).await,
            "stream_close"
        ),
        "nk.stream_close is not available: this server runs without the realtime layer"
    );
}
