//! Notifications reaching sockets: `SessionPush` delivers each one to every open session of
//! its receiver (and only theirs), and a direct-chat request goes through the notifications
//! service, so it is stored as Nakama stores it.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use metafi_core::{
    Channels, CoreError, NewNotification, NoGroups, Notifications, NotificationsConfig, RpcContext,
    RpcDispatch, SystemClock,
};
use metafi_proto::realtime::{ChannelJoin, Envelope, Format, Message, channel_type};
use metafi_realtime::{
    Next, Realtime, RealtimeConfig, RealtimeParts, RealtimeServices, Session, SessionParams,
    SessionPush,
};
use metafi_storage::{NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

#[derive(Debug)]
struct NoRpcs;

#[async_trait]
impl RpcDispatch for NoRpcs {
    async fn call(&self, _: &str, _: RpcContext, _: String) -> Result<String, CoreError> {
        Err(CoreError::not_found("RPC function not found"))
    }
}

struct Rig {
    _dir: tempfile::TempDir,
    store: Arc<dyn Storage>,
    realtime: Realtime,
    notifications: Arc<Notifications>,
}

fn rig() -> Rig {
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
    let parts = RealtimeParts::local();
    let notifications = Arc::new(Notifications::new(
        store.clone(),
        clock.clone(),
        Arc::new(SessionPush::new(&parts)),
        NotificationsConfig::default(),
    ));
    let realtime = Realtime::with_parts(
        RealtimeConfig::default(),
        RealtimeServices {
            channels: Arc::new(Channels::new(
                store.clone(),
                Arc::new(NoGroups),
                clock.clone(),
            )),
            store: store.clone(),
            rpc: Arc::new(NoRpcs),
            clock,
        },
        parts,
    )
    .with_notifier(notifications.clone());
    Rig {
        _dir: dir,
        store,
        realtime,
        notifications,
    }
}

impl Rig {
    async fn user(&self, name: &str) -> Uuid {
        let id = Uuid::new_v4();
        self.store
            .create_user(NewUser {
                id,
                username: name.to_owned(),
                identity: NewIdentity::Device {
                    id: format!("device-{id}"),
                },
                now_ms: 0,
            })
            .await
            .unwrap();
        id
    }

    fn open(&self, user_id: Uuid, name: &str, format: Format) -> Arc<Session> {
        self.realtime.open(SessionParams {
            user_id,
            username: name.to_owned(),
            vars: HashMap::new(),
            expires_at: i64::MAX,
            client_addr: None,
            lang: None,
            format,
            appear_online: false,
        })
    }
}

/// The notifications queued for a session, decoded, one list per envelope.
fn notifications(session: &Session) -> Vec<Vec<metafi_proto::api::Notification>> {
    let mut out = Vec::new();
    while let Some(Next::Frame(frame)) = session.outbox().try_next() {
        let envelope: Envelope = session.format().decode(&frame).unwrap();
        if let Some(Message::Notifications(n)) = envelope.message {
            out.push(n.notifications);
        }
    }
    out
}

#[tokio::test]
async fn every_socket_of_the_receiver_gets_it_and_nobody_else() {
    let rig = rig();
    let alice = rig.user("alice").await;
    let bob = rig.user("bob").await;
    let phone = rig.open(alice, "alice", Format::Json);
    let laptop = rig.open(alice, "alice", Format::Protobuf);
    let bobs = rig.open(bob, "bob", Format::Json);
    rig.notifications
        .send(vec![
            NewNotification {
                user_id: alice,
                subject: "first".into(),
                content: r#"{"n":1}"#.into(),
                code: 5,
                sender_id: Some(bob),
                persistent: true,
            },
            NewNotification {
                user_id: alice,
                subject: "second".into(),
                content: "{}".into(),
                code: 6,
                sender_id: None,
                persistent: false,
            },
        ])
        .await
        .unwrap();
    for socket in [&phone, &laptop] {
        let got = notifications(socket);
        assert_eq!(got.len(), 1, "one envelope with both");
        let subjects: Vec<&str> = got[0].iter().map(|n| n.subject.as_str()).collect();
        assert_eq!(subjects, ["first", "second"]);
        assert_eq!(got[0][0].sender_id, bob.to_string());
        assert!(got[0][0].persistent && !got[0][1].persistent);
    }
    assert!(
        notifications(&bobs).is_empty(),
        "another user's sockets get nothing"
    );
    // A send to everyone reaches every socket of every user.
    rig.notifications
        .send_all(metafi_core::Broadcast {
            subject: "all".into(),
            content: "{}".into(),
            code: 1,
            persistent: false,
        })
        .await
        .unwrap();
    for socket in [&phone, &laptop, &bobs] {
        assert_eq!(notifications(socket)[0][0].subject, "all");
    }
}

#[tokio::test]
async fn a_direct_chat_request_is_stored_as_nakama_stores_it() {
    let rig = rig();
    let ann = rig.user("ann").await;
    let bob = rig.user("bob").await;
    let anns = rig.open(ann, "ann", Format::Json);
    rig.realtime
        .handle(
            &anns,
            Envelope::new(
                "1",
                Message::ChannelJoin(ChannelJoin {
                    target: bob.to_string(),
                    r#type: channel_type::DIRECT_MESSAGE,
                    persistence: None,
                    hidden: None,
                }),
            ),
        )
        .await
        .unwrap();
    // Bob was not connected; he finds the request when he lists his notifications.
    let page = rig.notifications.list(bob, 10, "", true).await.unwrap();
    assert_eq!(page.notifications.len(), 1);
    let request = &page.notifications[0];
    assert_eq!(request.subject, "ann wants to chat");
    assert_eq!(request.code, -1);
    assert_eq!(request.sender_id, ann.to_string());
    assert_eq!(request.content, r#"{"username":"ann"}"#);
}
