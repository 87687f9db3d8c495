//! Server code reaching sessions, end to end: `nk` rows called on a running node through
//! `nk_api::call` (as a native module calls them; Lua and JS bind the same rows) and what real socket clients receive — `stream_data` exactly as Nakama
//! sends it, a `channel_message` from the server, a status follow made for a session, and the
//! close of `session_disconnect`.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use metafi_proto::realtime::{ChannelJoin, Message, channel_type};
use metafi_runtime::nk_api::{self, Naming, NkKey, NkMap, NkValue};
use metafi_testkit::{Http, Socket, TestNode, User, user};
use tokio_tungstenite::tungstenite::Message as WsMessage;

/// A hang guard only: every wait below ends as soon as what it waits for arrives.
const GUARD: Duration = Duration::from_secs(10);

fn table(entries: &[(&str, NkValue)]) -> NkValue {
    NkValue::Map(NkMap(
        entries
            .iter()
            .map(|(k, v)| (NkKey::Data((*k).to_owned()), v.clone()))
            .collect(),
    ))
}

fn arena() -> NkValue {
    table(&[("mode", NkValue::Int(123)), ("label", "arena".into())])
}

/// The session id of a socket, from its own presence in a room it joins.
async fn session_of(socket: &mut Socket) -> String {
    let reply = socket
        .request(Message::ChannelJoin(ChannelJoin {
            target: "lobby".into(),
            r#type: channel_type::ROOM,
            persistence: None,
            hidden: None,
        }))
        .await;
    match reply.message {
        Some(Message::Channel(channel)) => channel.self_presence.unwrap().session_id,
        other => panic!("expected a channel, got {other:?}"),
    }
}

/// A client on a plain WebSocket, to see the server's JSON text exactly as sent.
struct RawClient {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
}

impl RawClient {
    async fn connect(base: &str, who: &User) -> RawClient {
        let url = metafi_testkit::ws_url(base, &who.token, "");
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        RawClient { ws }
    }

    async fn send(&mut self, json: serde_json::Value) {
        self.ws
            .send(WsMessage::Text(json.to_string().into()))
            .await
            .unwrap();
    }

    /// The next text frame whose JSON has `key` at the top, as JSON.
    async fn next_with(&mut self, key: &str) -> serde_json::Value {
        tokio::time::timeout(GUARD, async {
            loop {
                match self.ws.next().await {
                    Some(Ok(WsMessage::Text(text))) => {
                        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
                        if json.get(key).is_some() {
                            return json;
                        }
                    }
                    Some(Ok(_)) => {}
                    other => panic!("socket ended waiting for {key}: {other:?}"),
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {key} within the guard"))
    }

    /// The close frame (code, reason) the server ends the connection with.
    async fn close_frame(&mut self) -> (u16, String) {
        tokio::time::timeout(GUARD, async {
            loop {
                match self.ws.next().await {
                    Some(Ok(WsMessage::Close(Some(frame)))) => {
                        return (u16::from(frame.code), frame.reason.to_string());
                    }
                    Some(Ok(_)) => {}
                    other => panic!("the server ended the socket without a close frame: {other:?}"),
                }
            }
        })
        .await
        .expect("the server closes the socket")
    }
}

#[tokio::test]
async fn server_code_streams_chats_follows_and_disconnects_real_clients() {
    let server = TestNode::start(|_| {}).await;
    let nk = server.nk();
    let http = Http::new(&server.base);
    let (ann, bob) = (user(&http).await, user(&http).await);
    let mut a = Socket::connect(&server.base, &ann.token, "").await;
    let ann_session = session_of(&mut a).await;
    let mut b = RawClient::connect(&server.base, &bob).await;
    b.send(serde_json::json!({"cid": "1", "channel_join": {"target": "lobby", "type": 1}}))
        .await;
    let joined = b.next_with("channel").await;
    let bob_session = joined["channel"]["self"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Bob's session joins a stream of the module's own; a second join changes nothing.
    let join = || vec![bob.id.as_str().into(), bob_session.as_str().into(), arena()];
    assert_eq!(
        nk_api::call(&nk, "stream_user_join", join()).await.unwrap(),
        NkValue::Bool(true)
    );
    assert_eq!(
        nk_api::call(&nk, "stream_user_join", join()).await.unwrap(),
        NkValue::Bool(false)
    );
    let event = b.next_with("stream_presence_event").await;
    assert_eq!(
        event["stream_presence_event"]["stream"],
        serde_json::json!({"mode": 123, "label": "arena"})
    );
    assert_eq!(
        event["stream_presence_event"]["joins"][0]["session_id"],
        bob_session
    );
    assert_eq!(
        nk_api::call(&nk, "stream_count", vec![arena()])
            .await
            .unwrap(),
        NkValue::Int(1)
    );
    let listed = nk_api::call(&nk, "stream_user_list", vec![arena()])
        .await
        .unwrap()
        .to_json(Naming::Snake)
        .unwrap();
    assert_eq!(listed[0]["username"], bob.username.as_str());
    assert_eq!(listed[0]["user_id"], bob.id.as_str());

    // stream_send: Bob gets Nakama's stream_data, byte for byte the fields Nakama sends.
    nk_api::call(&nk, "stream_send", vec![arena(), "hello".into()])
        .await
        .unwrap();
    let data = b.next_with("stream_data").await;
    assert_eq!(
        data,
        serde_json::json!({"stream_data": {
            "stream": {"mode": 123, "label": "arena"}, "data": "hello", "reliable": true
        }})
    );
    // stream_send_raw: any envelope, as given.
    nk_api::call(
        &nk,
        "stream_send_raw",
        vec![
            arena(),
            table(&[(
                "notifications",
                table(&[(
                    "notifications",
                    NkValue::List(vec![table(&[
                        ("id", "n1".into()),
                        ("subject", "raw".into()),
                        ("content", "{}".into()),
                        ("code", NkValue::Int(101)),
                    ])]),
                )]),
            )]),
        ],
    )
    .await
    .unwrap();
    let raw = b.next_with("notifications").await;
    assert_eq!(raw["notifications"]["notifications"][0]["subject"], "raw");
    // Ann is not in the stream: nothing of it reached her.
    a.assert_no_event(Duration::from_millis(200), |e| {
        matches!(
            e.message,
            Some(Message::StreamData(_) | Message::StreamPresenceEvent(_))
        )
    })
    .await;

    // channel_message_send as the system: both members of the room get it.
    let ack = nk_api::call(
        &nk,
        "channel_message_send",
        vec![
            "2...lobby".into(),
            table(&[("text", "welcome".into())]),
            NkValue::Nil,
            "system".into(),
        ],
    )
    .await
    .unwrap()
    .to_json(Naming::Snake)
    .unwrap();
    assert_eq!(ack["channelId"], "2...lobby");
    assert_eq!(ack["persistent"], false);
    let to_bob = b.next_with("channel_message").await;
    assert_eq!(
        to_bob["channel_message"]["content"],
        r#"{"text":"welcome"}"#
    );
    assert_eq!(to_bob["channel_message"]["username"], "system");
    assert_eq!(
        to_bob["channel_message"]["message_id"], ack["messageId"],
        "the ack names the message members received"
    );
    let to_ann = a
        .event(|e| matches!(e.message, Some(Message::ChannelMessage(_))))
        .await;
    let Some(Message::ChannelMessage(message)) = to_ann.message else {
        unreachable!()
    };
    assert_eq!(message.sender_id, uuid::Uuid::nil().to_string());

    // status_follow for Ann's session: she hears Bob come online on another socket.
    nk_api::call(
        &nk,
        "status_follow",
        vec![
            ann_session.as_str().into(),
            NkValue::List(vec![bob.id.as_str().into()]),
        ],
    )
    .await
    .unwrap();
    let _bob_online = Socket::connect(&server.base, &bob.token, "status=true").await;
    let online = a
        .event(|e| matches!(&e.message, Some(Message::StatusPresenceEvent(ev)) if !ev.joins.is_empty()))
        .await;
    let Some(Message::StatusPresenceEvent(online)) = online.message else {
        unreachable!()
    };
    assert_eq!(online.joins[0].user_id, bob.id);

    // session_disconnect: Bob's first socket is closed with Nakama's reason, and leaves the
    // stream.
    nk_api::call(&nk, "session_disconnect", vec![bob_session.as_str().into()])
        .await
        .unwrap();
    assert_eq!(
        b.close_frame().await,
        (1000, "server-side session disconnect".to_owned())
    );
    tokio::time::timeout(GUARD, async {
        while nk_api::call(&nk, "stream_count", vec![arena()])
            .await
            .unwrap()
            != NkValue::Int(0)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the disconnected session leaves the stream");
    // An unknown session is no error, as with Nakama.
    nk_api::call(&nk, "session_disconnect", vec![bob_session.as_str().into()])
        .await
        .unwrap();
    server.stop().await;
}

/// A ban from server code ends what the user has open, not only their tokens: their socket is
/// closed as a server-side disconnect, and other users' sockets stay.
#[tokio::test]
async fn banning_a_user_from_server_code_closes_their_open_sockets() {
    let server = TestNode::start(|_| {}).await;
    let nk = server.nk();
    let http = Http::new(&server.base);
    let (ann, bob) = (user(&http).await, user(&http).await);
    let mut a = RawClient::connect(&server.base, &ann).await;
    let mut b = RawClient::connect(&server.base, &bob).await;
    b.send(serde_json::json!({"cid": "1", "channel_join": {"target": "lobby", "type": 1}}))
        .await;
    b.next_with("channel").await;
    nk_api::call(
        &nk,
        "users_ban_id",
        vec![NkValue::List(vec![bob.id.as_str().into()])],
    )
    .await
    .unwrap();
    assert_eq!(
        b.close_frame().await,
        (1000, "server-side session disconnect".to_owned())
    );
    a.send(serde_json::json!({"cid": "2", "channel_join": {"target": "lobby", "type": 1}}))
        .await;
    a.next_with("channel").await;
    server.stop().await;
}
