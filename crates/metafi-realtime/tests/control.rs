//! [`RealtimeControl`], what server code does to sessions, driven without a transport: what
//! each client would receive is read back from its outbox.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::{ChannelId, Channels, NoGroups, NoRpcs, SystemClock};
use metafi_match::PresenceReason;
use metafi_proto::realtime::{Envelope, Format, Message, StreamData};
use metafi_realtime::{
    CloseReason, JoinRefused, Next, Realtime, RealtimeConfig, RealtimeControl, RealtimeParts,
    RealtimeServices, ServerMessage, Session, SessionParams, StreamJoin, StreamKey, StreamMode,
};
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

struct Fixture {
    _dir: tempfile::TempDir,
    realtime: Realtime,
    control: RealtimeControl,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Storage> = Arc::new(
            SqliteStorage::open(SqliteConfig {
                path: dir.path().join("metafi.db"),
                readers: 1,
                ..SqliteConfig::default()
            })
            .unwrap(),
        );
        let clock = Arc::new(SystemClock);
        let channels = Arc::new(Channels::new(
            store.clone(),
            Arc::new(NoGroups),
            clock.clone(),
        ));
        let parts = RealtimeParts::local();
        let control = RealtimeControl::new(parts.clone(), channels.clone(), 2);
        let realtime = Realtime::with_parts(
            RealtimeConfig::default(),
            RealtimeServices {
                channels,
                store,
                rpc: Arc::new(NoRpcs),
                clock,
            },
            parts,
        );
        Fixture {
            _dir: dir,
            realtime,
            control,
        }
    }

    fn open(&self, name: &str) -> Arc<Session> {
        self.realtime.open(SessionParams {
            user_id: Uuid::new_v4(),
            username: name.to_owned(),
            vars: HashMap::new(),
            expires_at: i64::MAX,
            client_addr: None,
            lang: None,
            format: Format::Json,
            appear_online: false,
        })
    }
}

fn received(session: &Session) -> Vec<Envelope> {
    let mut out = Vec::new();
    while let Some(Next::Frame(frame)) = session.outbox().try_next() {
        out.push(session.format().decode(&frame).unwrap());
    }
    out
}

fn arena() -> StreamKey {
    StreamKey {
        mode: StreamMode::from_number(123),
        subject: Uuid::nil(),
        subcontext: Uuid::nil(),
        label: "arena".into(),
    }
}

fn visible() -> StreamJoin {
    StreamJoin {
        hidden: false,
        persistence: true,
        status: String::new(),
    }
}

fn data(text: &str) -> Envelope {
    Envelope::new(
        "",
        Message::StreamData(StreamData {
            stream: Some(arena().to_wire()),
            sender: None,
            data: text.into(),
            reliable: true,
        }),
    )
}

#[tokio::test]
async fn custom_streams_tell_members_of_joins_and_leaves_and_hidden_joins_stay_silent() {
    let f = Fixture::new();
    let (a, b) = (f.open("a"), f.open("b"));
    assert_eq!(
        f.control
            .stream_join(a.user_id(), a.id(), &arena(), visible())
            .await,
        Ok(true)
    );
    let to_a = received(&a);
    assert!(
        matches!(&to_a[..], [e] if matches!(&e.message, Some(Message::StreamPresenceEvent(ev))
            if ev.joins.len() == 1 && ev.stream.as_ref().unwrap().mode == 123)),
        "{to_a:?}"
    );
    let hidden = StreamJoin {
        hidden: true,
        ..visible()
    };
    assert_eq!(
        f.control
            .stream_join(b.user_id(), b.id(), &arena(), hidden)
            .await,
        Ok(true)
    );
    assert!(received(&a).is_empty(), "a hidden join is no event");
    assert_eq!(f.control.stream_count(&arena()), 2);
    assert_eq!(f.control.stream_list(&arena(), false, true).len(), 1);
    assert_eq!(f.control.stream_list(&arena(), true, false).len(), 1);
    assert_eq!(
        f.control
            .stream_get(b.user_id(), b.id(), &arena())
            .unwrap()
            .username,
        "b"
    );
    assert_eq!(
        f.control.stream_get(a.user_id(), b.id(), &arena()),
        None,
        "a presence is found only as the user it was tracked for"
    );

    // Leaving as another user changes nothing; closing the stream empties it.
    f.control.stream_leave(b.user_id(), a.id(), &arena());
    assert_eq!(f.control.stream_count(&arena()), 2);
    f.control.stream_close(&arena());
    assert_eq!(f.control.stream_count(&arena()), 0);
    assert!(
        received(&a).is_empty(),
        "a left the stream before its leave event"
    );
}

#[tokio::test]
async fn send_reaches_the_stream_or_only_the_named_sessions_in_it() {
    let f = Fixture::new();
    let (a, b, outsider) = (f.open("a"), f.open("b"), f.open("c"));
    for s in [&a, &b] {
        f.control
            .stream_join(s.user_id(), s.id(), &arena(), visible())
            .await
            .unwrap();
    }
    received(&a);
    received(&b);
    assert_eq!(f.control.stream_send(&arena(), data("all"), None), 2);
    assert_eq!(
        f.control
            .stream_send(&arena(), data("only b"), Some(&[b.id(), outsider.id()])),
        1,
        "a session outside the stream is sent nothing"
    );
    let texts = |s: &Session| {
        received(s)
            .into_iter()
            .filter_map(|e| match e.message {
                Some(Message::StreamData(d)) => Some(d.data),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&a), vec!["all"]);
    assert_eq!(texts(&b), vec!["all", "only b"]);
    assert!(texts(&outsider).is_empty());
}

#[tokio::test]
async fn joins_need_a_live_session_and_an_ended_one_leaves_nothing_behind() {
    let f = Fixture::new();
    let a = f.open("a");
    assert_eq!(
        f.control
            .stream_join(a.user_id(), Uuid::new_v4(), &arena(), visible())
            .await,
        Err(JoinRefused::NoSession)
    );
    assert!(f.control.disconnect(a.id(), PresenceReason::Leave));
    assert_eq!(
        a.outbox().close_reason(),
        Some(CloseReason::ServerDisconnect {
            presence_reason: PresenceReason::Leave
        })
    );
    assert_eq!(
        f.control
            .stream_join(a.user_id(), a.id(), &arena(), visible())
            .await,
        Err(JoinRefused::Closing)
    );
    f.realtime.end(&a, CloseReason::ClientClosed);
    assert!(!f.control.disconnect(a.id(), PresenceReason::Leave));
    assert_eq!(f.control.stream_count(&arena()), 0);
}

#[tokio::test]
async fn follows_count_against_the_socket_limit_and_skip_unknown_sessions() {
    let f = Fixture::new();
    let a = f.open("a");
    let users: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    f.control.follow(a.id(), &users[..2]).unwrap();
    let refused = f.control.follow(a.id(), &users[2..]).unwrap_err();
    assert!(
        refused
            .client_message()
            .contains("socket.max_followed_users"),
        "{refused}"
    );
    assert_eq!(f.realtime.status().following_count(a.id()), 2);
    f.control.follow(Uuid::new_v4(), &users).unwrap();
    f.control.unfollow(a.id(), &users[..1]);
    assert_eq!(f.realtime.status().following_count(a.id()), 1);
}

#[tokio::test]
async fn server_chat_messages_reach_the_channel_members_from_any_sender() {
    let f = Fixture::new();
    let a = f.open("a");
    let lobby = ChannelId::Room {
        name: "lobby".into(),
    };
    // a is in the room's stream (as a channel join makes it).
    f.control
        .stream_join(a.user_id(), a.id(), &StreamKey::channel(&lobby), visible())
        .await
        .unwrap();
    received(&a);
    let from = ServerMessage {
        channel: lobby,
        sender: Uuid::nil(),
        username: "system".into(),
        persist: true,
    };
    let sent = f
        .control
        .channel_send(&from, r#"{"n":1}"#.into())
        .await
        .unwrap();
    let got = received(&a);
    assert!(
        matches!(&got[..], [e] if e.message == Some(Message::ChannelMessage(sent.clone()))),
        "{got:?}"
    );
    let history = f
        .control
        .channels()
        .list_messages_as(None, "2...lobby", Some(10), None, None)
        .await
        .unwrap();
    assert_eq!(history.messages.len(), 1, "a persisted system message");
    let removed = f
        .control
        .channel_remove(&from, &sent.message_id)
        .await
        .unwrap();
    assert_eq!(removed.code.unwrap().value, 2);
}
