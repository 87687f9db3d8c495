//! The realtime session over QUIC (`metafi-client`'s `QuicConnector` against the real server):
//! token refusal with a clear reason, RPC, chat with a WebSocket member, a relayed match whose
//! data keeps the sender's delivery class on its way to QUIC and WebSocket players, the
//! certificate kept across restarts, and shutdown.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::time::Duration;

use bytes::Bytes;
use metafi_client::{
    ClientError, DeliveryClass, Events, Fingerprint, QuicConfig, QuicConnector, SocketConfig,
};
use metafi_proto::realtime::{
    ChannelJoin, ChannelMessageSend, Envelope, Match, MatchCreate, MatchData, Message, channel_type,
};
use metafi_testkit::{Http, TestNode};
use support::quic::{connector, fingerprint, quic_socket, ws_socket};

const WAIT: Duration = Duration::from_secs(10);

/// The next pushed envelope that `pick` accepts (others are skipped).
async fn next_where<T>(events: &mut Events, what: &str, pick: impl Fn(Envelope) -> Option<T>) -> T {
    let found = tokio::time::timeout(WAIT, async {
        loop {
            let envelope = events.next().await.expect("socket open");
            if let Some(found) = pick(envelope) {
                return found;
            }
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("{what} did not arrive within {WAIT:?}"))
}

fn match_data(envelope: Envelope) -> Option<MatchData> {
    match envelope.message {
        Some(Message::MatchData(data)) => Some(data),
        _ => None,
    }
}

#[tokio::test]
async fn a_bad_token_is_refused_with_a_clear_reason() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let refused = connector(&server)
        .connect("not-a-token", &SocketConfig::default())
        .await
        .unwrap_err();
    match refused {
        ClientError::Api {
            status,
            code,
            message,
        } => {
            assert_eq!((status, code), (401, 16));
            assert!(message.contains("token"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let empty = connector(&server)
        .connect("", &SocketConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&empty, ClientError::Api { message, .. } if message.contains("Auth token required")),
        "{empty:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_wrong_pin_fails_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (token, _) = http.new_session().await;
    let wrong = Fingerprint([7; 32]);
    let connector = QuicConnector::new(&QuicConfig::pinned(server.quic.unwrap(), wrong)).unwrap();
    let error = connector
        .connect(&token, &SocketConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Quic { .. }), "{error:?}");
    server.stop().await;
}

#[tokio::test]
async fn rpc_and_chat_work_over_quic_with_websocket_members() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (quic_token, _) = http.new_session().await;
    let (ws_token, _) = http.new_session().await;
    let (quic, mut quic_events) = quic_socket(&server, &quic_token).await;
    assert!(quic.session_id().is_some(), "the welcome names the session");
    assert_eq!(
        quic.rpc("echo_native", "{\"a\":1}").await.unwrap(),
        "{\"a\":1}"
    );

    let (ws, mut ws_events) = ws_socket(&server, &ws_token).await;
    let join = || {
        Message::ChannelJoin(ChannelJoin {
            target: "lobby".into(),
            r#type: channel_type::ROOM,
            ..ChannelJoin::default()
        })
    };
    let channel = match quic.request(join()).await.unwrap().message {
        Some(Message::Channel(channel)) => channel,
        other => panic!("{other:?}"),
    };
    ws.request(join()).await.unwrap();
    quic.request(Message::ChannelMessageSend(ChannelMessageSend {
        channel_id: channel.id.clone(),
        content: "{\"hi\":\"from quic\"}".into(),
    }))
    .await
    .unwrap();
    for events in [&mut ws_events, &mut quic_events] {
        let content = next_where(events, "the chat message", |e| match e.message {
            Some(Message::ChannelMessage(m)) => Some(m.content),
            _ => None,
        })
        .await;
        assert_eq!(content, "{\"hi\":\"from quic\"}");
    }
    server.stop().await;
}

#[tokio::test]
async fn relayed_match_data_keeps_the_senders_delivery_class() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (a_token, _) = http.new_session().await;
    let (b_token, _) = http.new_session().await;
    let (c_token, _) = http.new_session().await;
    let (a, _a_events) = quic_socket(&server, &a_token).await;
    let (b, mut b_events) = quic_socket(&server, &b_token).await;
    let (c, mut c_events) = ws_socket(&server, &c_token).await;
    let created = match a
        .request(Message::MatchCreate(MatchCreate::default()))
        .await
        .unwrap()
        .message
    {
        Some(Message::Match(m)) => m,
        other => panic!("{other:?}"),
    };
    let Match { match_id, .. } = created;
    b.match_join(&match_id).await.unwrap();
    c.match_join(&match_id).await.unwrap();

    let classes = [
        DeliveryClass::default_stream(),
        DeliveryClass::ordered("talk"),
        DeliveryClass::ReliableUnordered,
        DeliveryClass::Unreliable,
        DeliveryClass::latest("pos"),
    ];
    for (op, class) in classes.iter().enumerate() {
        a.send_match_data(
            &match_id,
            op as i64 + 1,
            Bytes::from(format!("m{op}")),
            class.clone(),
        )
        .await
        .unwrap();
    }
    // Loopback loses nothing: every class arrives, each telling the class the sender chose.
    for events in [&mut b_events, &mut c_events] {
        let mut got = Vec::new();
        while got.len() < classes.len() {
            got.push(next_where(events, "match data", match_data).await);
        }
        got.sort_by_key(|d| d.op_code);
        for (data, class) in got.iter().zip(&classes) {
            let named = data
                .delivery
                .as_ref()
                .and_then(DeliveryClass::from_wire)
                .unwrap();
            assert_eq!(&named, class);
            assert_eq!(data.reliable, class.is_reliable());
            assert_eq!(data.data, Bytes::from(format!("m{}", data.op_code - 1)));
        }
    }

    // Nakama's flag alone still works: reliable=false travels as unreliable, no extension.
    a.match_data_send(&match_id, 9, Bytes::from_static(b"plain"), false)
        .await
        .unwrap();
    let plain = next_where(&mut b_events, "plain match data", match_data).await;
    assert_eq!((plain.op_code, plain.reliable), (9, false));
    assert_eq!(plain.delivery, None);
    server.stop().await;
}

#[tokio::test]
async fn the_generated_certificate_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let first = fingerprint(&server);
    server.stop().await;
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    assert_eq!(fingerprint(&server), first, "clients' pins stay valid");
    let http = Http::new(&server.base);
    let (token, _) = http.new_session().await;
    let (socket, _events) = quic_socket(&server, &token).await;
    assert_eq!(socket.rpc("echo_native", "[1]").await.unwrap(), "[1]");
    server.stop().await;
}

#[tokio::test]
async fn shutdown_closes_quic_sessions_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestNode::start_in(dir.path(), |raw| raw.shutdown.grace_period_sec = 2).await;
    let http = Http::new(&server.base);
    let (token, _) = http.new_session().await;
    let (socket, _events) = quic_socket(&server, &token).await;
    let stopping = server.begin_shutdown();
    let reason = tokio::time::timeout(WAIT, socket.closed()).await.unwrap();
    assert!(reason.contains("server shutting down"), "{reason}");
    assert!(reason.contains("1001"), "{reason}");
    stopping.await.unwrap();
}

#[tokio::test]
async fn quic_can_be_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| raw.quic.enabled = false).await;
    assert!(server.quic.is_none());
    server.stop().await;
}
