//! The realtime socket as a client sees it: authentication before the upgrade, both wire
//! formats, cid correlation, RPC, and every way the server ends a connection (limits,
//! timeouts, slow readers, single socket, shutdown).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::time::Duration;

use futures_util::SinkExt;
use metafi_core::{SessionClaims, TokenKeys, TokenKind};
use metafi_proto::api::Rpc;
use metafi_proto::realtime::{
    ChannelJoin, ChannelMessageSend, Envelope, ErrorCode, Message, Ping, channel_type,
};
use metafi_proto::wkt::bool_value;
use metafi_testkit::raw_ws::{self, RawWs};
use metafi_testkit::{Http, TestNode};
use metafi_testkit::{Socket, user, ws_url};
use tokio_tungstenite::tungstenite::Message as WsMessage;

fn rpc(id: &str, payload: &str) -> Message {
    Message::Rpc(Rpc {
        id: id.into(),
        payload: payload.into(),
        http_key: String::new(),
    })
}

fn join(room: &str, persistence: bool) -> Message {
    Message::ChannelJoin(ChannelJoin {
        target: room.into(),
        r#type: channel_type::ROOM,
        persistence: bool_value(persistence),
        hidden: None,
    })
}

#[tokio::test]
async fn bad_missing_and_expired_tokens_are_refused_before_the_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let refused = |url: String| async move { Socket::try_connect(&url).await.err().unwrap() };

    let missing = refused(ws_url(&server.base, "", "")).await;
    assert_eq!(missing.status, 401);
    assert_eq!(missing.body["code"], 16);
    assert_eq!(missing.body["error"], missing.body["message"]);

    let garbage = refused(ws_url(&server.base, "not.a.token", "")).await;
    assert_eq!(
        (garbage.status, garbage.body["code"].as_i64()),
        (401, Some(16))
    );

    let keys = TokenKeys::new(b"defaultencryptionkey", b"defaultrefreshencryptionkey");
    let expired = keys
        .sign(
            TokenKind::Session,
            &SessionClaims {
                session_id: uuid::Uuid::new_v4(),
                user_id: uuid::Uuid::new_v4(),
                username: "late".into(),
                vars: HashMap::new(),
                expires_at: 1_000,
                issued_at: 900,
            },
        )
        .unwrap();
    let expired = refused(ws_url(&server.base, &expired, "")).await;
    assert_eq!(expired.status, 401);
    assert!(
        expired.body["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{:?}",
        expired.body
    );

    let alice = user(&http).await;
    let format = refused(ws_url(&server.base, &alice.token, "format=xml")).await;
    assert_eq!(
        (format.status, format.body["code"].as_i64()),
        (400, Some(3))
    );

    // A language tag is kept for the socket's lifetime: a huge one is refused, not held.
    let long = format!("lang={}", "x".repeat(65));
    let lang = refused(ws_url(&server.base, &alice.token, &long)).await;
    assert_eq!((lang.status, lang.body["code"].as_i64()), (400, Some(3)));

    // A plain GET is not an upgrade.
    let plain = http
        .send(http.get(&format!("/ws?token={}", alice.token)))
        .await;
    assert_eq!(plain.status, 400, "{:?}", plain.body);
    assert_eq!(plain.body["code"], 3);
    server.stop().await;
}

#[tokio::test]
async fn both_formats_answer_with_the_requests_cid() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;

    // JSON on the wire, checked as text: protobuf JSON with proto names.
    let mut json = Socket::connect(&server.base, &alice.token, "").await;
    json.send_raw(WsMessage::text(r#"{"cid":"7","ping":{}}"#))
        .await;
    let pong = json.wait_for(|e| e.cid == "7").await;
    assert!(matches!(pong.message, Some(Message::Pong(_))));

    // Several requests in flight: each answer carries its own cid.
    for cid in ["a", "b", "c"] {
        json.send(&Envelope::new(cid, Message::Ping(Ping {}))).await;
    }
    json.send(&Envelope::new("d", rpc("nope", "{}"))).await;
    for cid in ["a", "b", "c", "d"] {
        json.wait_for(|e| e.cid == cid).await;
    }

    let mut proto = Socket::connect(&server.base, &alice.token, "format=protobuf").await;
    let answer = proto.request(Message::Ping(Ping {})).await;
    assert!(matches!(answer.message, Some(Message::Pong(_))));
    server.stop().await;
}

#[tokio::test]
async fn rpc_over_the_socket_reaches_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;
    for extra in ["", "format=protobuf"] {
        let mut socket = Socket::connect(&server.base, &alice.token, extra).await;
        let answer = socket.request(rpc("echo_native", r#"{"b":2,"a":1}"#)).await;
        assert_eq!(
            answer.message,
            Some(rpc("echo_native", r#"{"a":1,"b":2}"#)),
            "{extra}"
        );
        let (code, message) = socket.request_error(rpc("no_such_rpc", "{}")).await;
        assert_eq!(
            (code, message.as_str()),
            (
                ErrorCode::RuntimeFunctionNotFound as i32,
                "RPC function not found"
            )
        );
        let (code, _) = socket.request_error(rpc("echo_native", "{nope")).await;
        assert_eq!(code, ErrorCode::RuntimeFunctionException as i32);
        let (code, _) = socket.request_error(rpc("", "{}")).await;
        assert_eq!(code, ErrorCode::BadInput as i32);
    }
    server.stop().await;
}

#[tokio::test]
async fn oversize_and_malformed_messages_close_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.socket.max_message_size_bytes = 1024;
    })
    .await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;

    let mut socket = Socket::connect(&server.base, &alice.token, "").await;
    let big = format!(
        r#"{{"cid":"1","rpc":{{"id":"x","payload":"{}"}}}}"#,
        "y".repeat(2000)
    );
    socket.send_raw(WsMessage::text(big)).await;
    let frame = socket.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1009);
    assert!(
        frame.reason.contains("socket.max_message_size_bytes"),
        "{frame:?}"
    );

    let mut socket = Socket::connect(&server.base, &alice.token, "").await;
    socket.send_raw(WsMessage::binary(vec![1u8, 2, 3])).await;
    let frame = socket.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1003, "binary frame on a JSON socket");

    let mut socket = Socket::connect(&server.base, &alice.token, "").await;
    socket.send_raw(WsMessage::text("not json")).await;
    let frame = socket.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1007);
    assert_eq!(frame.reason.as_str(), "received malformed payload");

    // An envelope without a known message: Nakama's MISSING_PAYLOAD answer, then a close.
    let mut socket = Socket::connect(&server.base, &alice.token, "").await;
    socket
        .send_raw(WsMessage::text(r#"{"cid":"5","no_such_message":{}}"#))
        .await;
    let frame = socket.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1008);
    let error = socket
        .backlog()
        .iter()
        .find(|e| e.cid == "5")
        .cloned()
        .unwrap();
    assert!(
        matches!(error.message, Some(Message::Error(e)) if e.code == ErrorCode::MissingPayload as i32)
    );
    server.stop().await;
}

#[tokio::test]
async fn a_silent_client_is_closed_after_pong_wait_and_a_live_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.socket.ping_period_ms = 100;
        raw.socket.pong_wait_ms = 400;
    })
    .await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;

    // This client never reads, so it never answers the server's pings.
    let mut silent = Socket::connect(&server.base, &alice.token, "").await;
    // This one reads (tungstenite answers pings while reading) but sends nothing itself.
    let mut live = Socket::connect(&server.base, &alice.token, "").await;
    live.assert_no_event(Duration::from_millis(1200), |_| true)
        .await;
    let answer = live.request(Message::Ping(Ping {})).await;
    assert!(
        matches!(answer.message, Some(Message::Pong(_))),
        "still open"
    );

    let frame = silent.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1001);
    assert!(frame.reason.contains("pong_wait_ms"), "{frame:?}");
    server.stop().await;
}

#[tokio::test]
async fn idle_timeout_closes_a_client_that_sends_no_messages() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.socket.idle_timeout_ms = 400;
    })
    .await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;
    let mut idle = Socket::connect(&server.base, &alice.token, "").await;
    let mut busy = Socket::connect(&server.base, &alice.token, "").await;
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        busy.request(Message::Ping(Ping {})).await;
    }
    let frame = idle.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1000);
    assert!(frame.reason.contains("idle_timeout_ms"), "{frame:?}");
    busy.request(Message::Ping(Ping {})).await;
    server.stop().await;
}

#[tokio::test]
async fn single_socket_closes_the_older_socket_with_a_notification() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.session.single_socket = true;
    })
    .await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;
    let mut first = Socket::connect(&server.base, &alice.token, "").await;
    first.request(Message::Ping(Ping {})).await;
    let mut second = Socket::connect(&server.base, &alice.token, "format=protobuf").await;
    let frame = first.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1000);
    assert!(
        frame.reason.contains("server-side session disconnect"),
        "{frame:?}"
    );
    assert!(
        first.backlog().iter().any(|e| matches!(&e.message,
            Some(Message::Notifications(n)) if n.notifications[0].code == -7)),
        "{:?}",
        first.backlog()
    );
    second.request(Message::Ping(Ping {})).await;

    // Without single_socket, several sockets of one user coexist (checked in the other tests).
    server.stop().await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_disconnected_by_the_byte_bound_and_others_are_not() {
    let frame = flood_a_client_that_stops_reading(|raw| {
        raw.socket.outgoing_queue_bytes = 256 * 1024;
    })
    .await;
    assert_eq!(u16::from(frame.code), 1008);
    assert!(frame.reason.contains("outgoing queue full"), "{frame:?}");
    assert!(
        frame.reason.contains("socket.outgoing_queue_bytes"),
        "{frame:?}"
    );
}

#[tokio::test]
async fn a_client_whose_writer_makes_no_progress_is_disconnected_by_age_and_others_are_not() {
    let frame = flood_a_client_that_stops_reading(|raw| {
        raw.socket.outgoing_queue_bytes = 1 << 30;
        raw.socket.outgoing_queue_max_age_ms = 300;
    })
    .await;
    assert_eq!(u16::from(frame.code), 1008);
    assert!(
        frame.reason.contains("socket.outgoing_queue_max_age_ms"),
        "{frame:?}"
    );
}

/// One client stops reading while another floods their room with 60 KB messages: the reader
/// sees the silent one leave and stays connected. Returns the close frame the silent client
/// finds once it reads again.
async fn flood_a_client_that_stops_reading(
    tweak: impl FnOnce(&mut metafi_server::config::RawConfig),
) -> tokio_tungstenite::tungstenite::protocol::CloseFrame {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.socket.max_message_size_bytes = 128 * 1024;
        raw.socket.write_wait_ms = 10_000;
        tweak(raw);
    })
    .await;
    let http = Http::new(&server.base);
    let (slow_user, fast_user) = (user(&http).await, user(&http).await);
    let mut slow = Socket::connect(&server.base, &slow_user.token, "").await;
    let mut fast = Socket::connect(&server.base, &fast_user.token, "").await;
    let channel = match slow.request(join("flood", false)).await.message {
        Some(Message::Channel(c)) => c.id,
        other => panic!("{other:?}"),
    };
    let slow_presence = match fast.request(join("flood", false)).await.message {
        Some(Message::Channel(c)) => c
            .presences
            .into_iter()
            .find(|p| p.user_id == slow_user.id)
            .unwrap(),
        other => panic!("{other:?}"),
    };

    // `slow` reads nothing from now on; `fast` floods the room with 60 KB messages.
    let content = format!(r#"{{"blob":"{}"}}"#, "z".repeat(60_000));
    let mut sent = 0;
    loop {
        fast.request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: channel.clone(),
            content: content.clone(),
        }))
        .await;
        sent += 1;
        let slow_left = fast.backlog().iter().any(|e| {
            matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
                if ev.leaves.iter().any(|p| p.session_id == slow_presence.session_id))
        });
        if slow_left {
            break;
        }
        fast.discard_backlog();
        assert!(sent < 5000, "the slow client was never disconnected");
    }
    // The fast client is unaffected.
    fast.request(Message::Ping(Ping {})).await;

    // Reading again, the slow client finds its queued messages, then the close reason.
    let frame = slow.closed(Duration::from_secs(20)).await.unwrap();
    server.stop().await;
    frame
}

#[tokio::test]
async fn shutdown_closes_sockets_with_going_away() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;
    let mut socket = Socket::connect(&server.base, &alice.token, "").await;
    socket.request(Message::Ping(Ping {})).await;
    let stopping = server.begin_shutdown();
    let frame = socket.closed(Duration::from_secs(10)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1001);
    assert_eq!(frame.reason.as_str(), "server shutting down");
    stopping.await.unwrap();
}

#[tokio::test]
async fn websocket_protocol_violations_close_with_their_status_codes() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.socket.max_message_size_bytes = 1024;
    })
    .await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;
    let ping = br#"{"cid":"1","ping":{}}"#;
    let cases: [(&str, Vec<u8>, u16); 7] = [
        (
            "invalid UTF-8 in a text frame",
            raw_ws::frame(0x80 | raw_ws::TEXT, b"{\"cid\":\"\xff\xfe\"}", true, None),
            1007,
        ),
        (
            "reserved data opcode 0x3",
            raw_ws::frame(0x83, ping, true, None),
            1002,
        ),
        (
            "reserved control opcode 0xB",
            raw_ws::frame(0x8b, b"", true, None),
            1002,
        ),
        (
            "unmasked client frame",
            raw_ws::frame(0x80 | raw_ws::TEXT, ping, false, None),
            1002,
        ),
        (
            "reserved bit RSV1 without an extension",
            raw_ws::frame(0xc0 | raw_ws::TEXT, ping, true, None),
            1002,
        ),
        (
            "continuation with nothing to continue",
            raw_ws::frame(0x80, ping, true, None),
            1002,
        ),
        (
            "a frame over socket.max_message_size_bytes",
            raw_ws::frame(0x80 | raw_ws::TEXT, b"{", true, Some(1 << 20)),
            1009,
        ),
    ];
    for (what, bytes, code) in cases {
        let mut ws = RawWs::connect(&server.base, &alice.token).await;
        // A valid request first: the violation ends a working session.
        ws.write(&raw_ws::frame(0x80 | raw_ws::TEXT, ping, true, None))
            .await;
        ws.write(&bytes).await;
        assert_eq!(
            ws.close_code(Duration::from_secs(10)).await,
            Some(code),
            "{what}"
        );
    }
    // A well-formed binary frame on a JSON socket still gets its own code.
    let mut ws = RawWs::connect(&server.base, &alice.token).await;
    ws.write(&raw_ws::frame(0x80 | raw_ws::BINARY, b"x", true, None))
        .await;
    assert_eq!(ws.close_code(Duration::from_secs(10)).await, Some(1003));
    server.stop().await;
}

#[tokio::test]
async fn two_hundred_requests_in_one_write_are_all_answered() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;
    for extra in ["", "format=protobuf"] {
        let mut socket = Socket::connect(&server.base, &alice.token, extra).await;
        let format = socket.format;
        for cid in 0..200 {
            let bytes = format.encode(&Envelope::new(cid.to_string(), Message::Ping(Ping {})));
            let frame = match format {
                metafi_proto::realtime::Format::Json => {
                    WsMessage::text(String::from_utf8(bytes).unwrap())
                }
                metafi_proto::realtime::Format::Protobuf => WsMessage::binary(bytes),
            };
            // Buffered, then written at once by the flush.
            socket.ws.feed(frame).await.unwrap();
        }
        socket.ws.flush().await.unwrap();
        for cid in 0..200 {
            let answer = socket.wait_for(|e| e.cid == cid.to_string()).await;
            assert!(
                matches!(answer.message, Some(Message::Pong(_))),
                "{extra}: {answer:?}"
            );
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn forty_channel_joins_in_one_write_are_all_answered() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;
    let mut socket = Socket::connect(&server.base, &alice.token, "").await;
    for cid in 0..40 {
        let envelope = Envelope::new(cid.to_string(), join(&format!("room-{cid}"), false));
        let text = String::from_utf8(socket.format.encode(&envelope)).unwrap();
        socket.ws.feed(WsMessage::text(text)).await.unwrap();
    }
    socket.ws.flush().await.unwrap();
    for cid in 0..40 {
        let answer = socket.wait_for(|e| e.cid == cid.to_string()).await;
        let Some(Message::Channel(channel)) = answer.message else {
            panic!("{answer:?}")
        };
        assert_eq!(channel.room_name, format!("room-{cid}"));
    }
    socket.request(Message::Ping(Ping {})).await;
    server.stop().await;
}

#[tokio::test]
async fn when_150_members_leave_a_room_at_once_the_others_stay_and_see_every_leave() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let mut stayers = Vec::new();
    for _ in 0..3 {
        let member = user(&http).await;
        let mut socket = Socket::connect(&server.base, &member.token, "").await;
        socket.request(join("exodus", false)).await;
        stayers.push(socket);
    }
    let mut leavers = Vec::new();
    let mut left = std::collections::HashSet::new();
    for _ in 0..150 {
        let member = user(&http).await;
        let mut socket = Socket::connect(&server.base, &member.token, "").await;
        let Some(Message::Channel(channel)) = socket.request(join("exodus", false)).await.message
        else {
            panic!("join refused")
        };
        left.insert(channel.self_presence.unwrap().session_id);
        leavers.push(socket);
    }
    // Everyone has seen every join before the exodus.
    for socket in &mut stayers {
        socket.request(Message::Ping(Ping {})).await;
        socket.discard_backlog();
    }
    // All 150 leave at once (their connections end without a goodbye).
    drop(leavers);
    for socket in &mut stayers {
        let mut seen = std::collections::HashSet::new();
        while seen.len() < left.len() {
            let event = socket
                .event(|e| matches!(e.message, Some(Message::ChannelPresenceEvent(_))))
                .await;
            if let Some(Message::ChannelPresenceEvent(event)) = event.message {
                assert!(event.joins.is_empty(), "{event:?}");
                seen.extend(event.leaves.into_iter().map(|p| p.session_id));
            }
        }
        assert_eq!(seen, left, "every leave, seen by every member who stays");
        // Still connected: a request is answered.
        socket.request(Message::Ping(Ping {})).await;
    }
    server.stop().await;
}
