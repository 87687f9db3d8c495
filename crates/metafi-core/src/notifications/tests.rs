use std::sync::Arc;

use metafi_proto::api::Notification;
use metafi_storage::{NewIdentity, NewUser, NotificationUpdate, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use parking_lot::Mutex;
use uuid::Uuid;

use super::*;
use crate::ManualClock;
use crate::notify::codes;

/// Records every push instead of reaching sockets.
#[derive(Debug, Default)]
struct RecordingPush {
    pushed: Mutex<Vec<(Uuid, Vec<Notification>)>>,
    to_all: Mutex<Vec<Notification>>,
}

impl NotificationPush for RecordingPush {
    fn push(&self, user_id: Uuid, notifications: Vec<Notification>) -> usize {
        self.pushed.lock().push((user_id, notifications));
        1
    }

    fn push_all(&self, notification: Notification) -> usize {
        self.to_all.lock().push(notification);
        7
    }
}

struct Rig {
    _dir: tempfile::TempDir,
    store: Arc<dyn Storage>,
    clock: Arc<ManualClock>,
    push: Arc<RecordingPush>,
    service: Notifications,
}

const START_MS: i64 = 1_700_000_000_500;

fn rig(config: NotificationsConfig) -> Rig {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Storage> = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("metafi.db"),
            readers: 1,
            ..SqliteConfig::default()
        })
        .expect("open"),
    );
    let clock = Arc::new(ManualClock::new(START_MS));
    let push = Arc::new(RecordingPush::default());
    let service = Notifications::new(store.clone(), clock.clone(), push.clone(), config);
    Rig {
        _dir: dir,
        store,
        clock,
        push,
        service,
    }
}

async fn user(rig: &Rig, name: &str) -> Uuid {
    let id = Uuid::new_v4();
    rig.store
        .create_user(NewUser {
            id,
            username: name.to_owned(),
            identity: NewIdentity::Device {
                id: format!("{name}-device-00000"),
            },
            now_ms: START_MS,
        })
        .await
        .expect("create user");
    id
}

fn new(user_id: Uuid, subject: &str, persistent: bool) -> NewNotification {
    NewNotification {
        user_id,
        subject: subject.to_owned(),
        content: format!("{{\"s\":\"{subject}\"}}"),
        code: 1,
        sender_id: None,
        persistent,
    }
}

fn subjects(notifications: &[Notification]) -> Vec<&str> {
    notifications.iter().map(|n| n.subject.as_str()).collect()
}

#[tokio::test]
async fn persistent_ones_are_stored_and_every_one_is_pushed() {
    let rig = rig(NotificationsConfig::default());
    let alice = user(&rig, "alice").await;
    let bob = user(&rig, "bob").await;
    let sender = Uuid::new_v4();
    let sent = rig
        .service
        .send(vec![
            new(alice, "kept", true),
            NewNotification {
                sender_id: Some(sender),
                code: codes::FRIEND_REQUEST,
                ..new(bob, "for bob", true)
            },
            new(alice, "live only", false),
        ])
        .await
        .expect("send");
    assert_eq!(sent.len(), 3);
    assert!(sent[0].persistent && !sent[2].persistent);
    assert_eq!(sent[1].sender_id, sender.to_string());
    assert_eq!(
        sent[0].sender_id,
        Uuid::nil().to_string(),
        "the system's sender is the nil UUID, as Nakama's"
    );
    assert_eq!(
        sent[0].create_time.as_ref().map(|t| t.as_millis()),
        Some(START_MS - 500),
        "whole seconds, as Nakama"
    );

    let pushed = rig.push.pushed.lock().clone();
    assert_eq!(pushed.len(), 2, "one envelope per receiver");
    assert_eq!(pushed[0].0, alice);
    assert_eq!(
        subjects(&pushed[0].1),
        ["kept", "live only"],
        "in the order sent"
    );
    assert_eq!(pushed[1].0, bob);
    assert_eq!(pushed[1].1[0].code, codes::FRIEND_REQUEST);

    let listed = rig.service.list(alice, 100, "", true).await.expect("list");
    assert_eq!(
        subjects(&listed.notifications),
        ["kept"],
        "the live-only one is not stored"
    );
    assert_eq!(listed.notifications[0], sent[0], "listed as it was pushed");
    let bobs = rig.service.list(bob, 100, "", true).await.expect("list");
    assert_eq!(bobs.notifications[0].sender_id, sender.to_string());
}

#[tokio::test]
async fn a_refused_notification_sends_nothing() {
    let rig = rig(NotificationsConfig {
        max_per_send: 2,
        ..NotificationsConfig::default()
    });
    let alice = user(&rig, "alice").await;
    let empty_subject = new(alice, "", true);
    let not_an_object = NewNotification {
        content: "[1]".into(),
        ..new(alice, "array", true)
    };
    let not_json = NewNotification {
        content: "{".into(),
        ..new(alice, "broken", true)
    };
    for bad in [empty_subject, not_an_object, not_json] {
        let result = rig.service.send(vec![new(alice, "fine", true), bad]).await;
        assert!(
            matches!(result, Err(CoreError::InvalidArgument { .. })),
            "{result:?}"
        );
    }
    let too_many = rig
        .service
        .send(vec![
            new(alice, "a", true),
            new(alice, "b", true),
            new(alice, "c", true),
        ])
        .await;
    assert!(
        matches!(&too_many, Err(CoreError::InvalidArgument { message }) if message.contains("notification.max_per_send")),
        "{too_many:?}"
    );
    let unknown = rig
        .service
        .send(vec![
            new(alice, "fine", true),
            new(Uuid::new_v4(), "x", true),
        ])
        .await;
    assert!(
        matches!(unknown, Err(CoreError::NotFound { .. })),
        "{unknown:?}"
    );
    assert!(rig.push.pushed.lock().is_empty(), "nothing pushed");
    let listed = rig.service.list(alice, 100, "", true).await.expect("list");
    assert!(listed.notifications.is_empty(), "nothing stored");
}

#[tokio::test]
async fn a_kept_cacheable_cursor_later_lists_only_newer_ones() {
    let rig = rig(NotificationsConfig::default());
    let alice = user(&rig, "alice").await;

    // Nothing yet: a "from the start" cursor comes back.
    let empty = rig.service.list(alice, 10, "", true).await.expect("list");
    assert!(empty.notifications.is_empty());
    assert!(!empty.cursor.is_empty());

    rig.service
        .send(vec![new(alice, "one", true), new(alice, "two", true)])
        .await
        .expect("send");
    let first = rig
        .service
        .list(alice, 10, &empty.cursor, true)
        .await
        .expect("list");
    assert_eq!(
        subjects(&first.notifications),
        ["one", "two"],
        "same millisecond, sent order"
    );

    // Caught up: the same cursor comes back with nothing.
    let again = rig
        .service
        .list(alice, 10, &first.cursor, true)
        .await
        .expect("list");
    assert!(again.notifications.is_empty());
    assert_eq!(again.cursor, first.cursor);

    rig.clock.advance_ms(1);
    rig.service
        .send(vec![new(alice, "three", true)])
        .await
        .expect("send");
    let newer = rig
        .service
        .list(alice, 10, &again.cursor, true)
        .await
        .expect("list");
    assert_eq!(subjects(&newer.notifications), ["three"]);

    // Pages of one walk the whole list.
    let page1 = rig.service.list(alice, 1, "", true).await.expect("page");
    let page2 = rig
        .service
        .list(alice, 1, &page1.cursor, true)
        .await
        .expect("page");
    assert_eq!(subjects(&page1.notifications), ["one"]);
    assert_eq!(subjects(&page2.notifications), ["two"]);
}

#[tokio::test]
async fn server_listings_hand_out_a_cursor_only_when_more_follow() {
    let rig = rig(NotificationsConfig::default());
    let alice = user(&rig, "alice").await;
    let none = rig.service.list(alice, 10, "", false).await.expect("list");
    assert_eq!(none.cursor, "");
    rig.service
        .send(vec![new(alice, "one", true), new(alice, "two", true)])
        .await
        .expect("send");
    let page = rig.service.list(alice, 1, "", false).await.expect("list");
    assert_eq!(subjects(&page.notifications), ["one"]);
    assert!(!page.cursor.is_empty(), "more follow");
    let last = rig
        .service
        .list(alice, 1, &page.cursor, false)
        .await
        .expect("list");
    assert_eq!(subjects(&last.notifications), ["two"]);
    assert_eq!(last.cursor, "", "nothing follows");
}

#[tokio::test]
async fn a_malformed_cursor_is_refused() {
    let rig = rig(NotificationsConfig::default());
    let alice = user(&rig, "alice").await;
    for bad in ["nope!", "AAAA", "TgAB"] {
        let result = rig.service.list(alice, 10, bad, true).await;
        assert!(
            matches!(&result, Err(CoreError::InvalidArgument { message }) if message == "Malformed cursor was used."),
            "{bad}: {result:?}"
        );
    }
}

#[tokio::test]
async fn users_delete_only_their_own() {
    let rig = rig(NotificationsConfig::default());
    let alice = user(&rig, "alice").await;
    let bob = user(&rig, "bob").await;
    let sent = rig
        .service
        .send(vec![new(alice, "a", true), new(bob, "b", true)])
        .await
        .expect("send");
    let ids: Vec<Uuid> = sent
        .iter()
        .map(|n| Uuid::parse_str(&n.id).expect("id"))
        .collect();
    rig.service
        .delete(bob, &ids[..1])
        .await
        .expect("bob deletes");
    let alices = rig.service.list(alice, 10, "", true).await.expect("list");
    assert_eq!(alices.notifications.len(), 1, "bob cannot delete alice's");
    rig.service
        .delete(alice, &ids)
        .await
        .expect("alice deletes");
    let alices = rig.service.list(alice, 10, "", true).await.expect("list");
    assert!(alices.notifications.is_empty());
    let bobs = rig.service.list(bob, 10, "", true).await.expect("list");
    assert_eq!(bobs.notifications.len(), 1, "alice cannot delete bob's");
}

#[tokio::test]
async fn server_code_reads_updates_and_deletes_by_id() {
    let rig = rig(NotificationsConfig::default());
    let alice = user(&rig, "alice").await;
    let bob = user(&rig, "bob").await;
    let sent = rig
        .service
        .send(vec![new(alice, "a", true), new(bob, "b", true)])
        .await
        .expect("send");
    let a = Uuid::parse_str(&sent[0].id).expect("id");
    let b = Uuid::parse_str(&sent[1].id).expect("id");
    assert_eq!(
        rig.service.by_id(&[a, b], None).await.expect("get").len(),
        2
    );
    let only_bob = rig.service.by_id(&[a, b], Some(bob)).await.expect("get");
    assert_eq!(only_bob.len(), 1);
    assert_eq!(only_bob[0].user_id, bob);

    let refused = rig
        .service
        .update(vec![NotificationUpdate {
            id: a,
            content: Some("[]".into()),
            subject: None,
            sender_id: None,
        }])
        .await;
    assert!(matches!(refused, Err(CoreError::InvalidArgument { .. })));
    rig.service
        .update(vec![NotificationUpdate {
            id: a,
            content: Some("{\"v\":2}".into()),
            subject: Some("renamed".into()),
            sender_id: None,
        }])
        .await
        .expect("update");
    let listed = rig.service.list(alice, 10, "", true).await.expect("list");
    assert_eq!(listed.notifications[0].subject, "renamed");
    assert_eq!(listed.notifications[0].content, "{\"v\":2}");

    rig.service
        .delete_by_id(&[a], Some(bob))
        .await
        .expect("scoped");
    assert_eq!(rig.service.by_id(&[a], None).await.expect("get").len(), 1);
    rig.service.delete_by_id(&[a, b], None).await.expect("any");
    assert!(
        rig.service
            .by_id(&[a, b], None)
            .await
            .expect("get")
            .is_empty()
    );
}

#[tokio::test]
async fn send_all_stores_for_every_account_page_by_page() {
    let rig = rig(NotificationsConfig {
        send_all_batch: 2,
        ..NotificationsConfig::default()
    });
    let mut users = Vec::new();
    for n in 0..5 {
        users.push(user(&rig, &format!("user{n}")).await);
    }
    let reached = rig
        .service
        .send_all(Broadcast {
            subject: "maintenance".into(),
            content: "{\"at\":\"noon\"}".into(),
            code: 5,
            persistent: true,
        })
        .await
        .expect("send all");
    assert_eq!(reached, 5);
    for user in &users {
        let listed = rig.service.list(*user, 10, "", true).await.expect("list");
        assert_eq!(subjects(&listed.notifications), ["maintenance"], "{user}");
    }
    let pushed = rig.push.pushed.lock().clone();
    let mut pushed_to: Vec<Uuid> = pushed.iter().map(|(u, _)| *u).collect();
    pushed_to.sort();
    users.sort();
    assert_eq!(pushed_to, users, "each stored one is pushed to its user");
    assert!(rig.push.to_all.lock().is_empty());
}

#[tokio::test]
async fn send_all_not_persistent_only_pushes_to_every_socket() {
    let rig = rig(NotificationsConfig::default());
    let alice = user(&rig, "alice").await;
    let reached = rig
        .service
        .send_all(Broadcast {
            subject: "hello".into(),
            content: "{}".into(),
            code: 5,
            persistent: false,
        })
        .await
        .expect("send all");
    assert_eq!(reached, 7, "what the push reached");
    assert_eq!(rig.push.to_all.lock().len(), 1);
    let listed = rig.service.list(alice, 10, "", true).await.expect("list");
    assert!(listed.notifications.is_empty());
    let refused = rig
        .service
        .send_all(Broadcast {
            subject: String::new(),
            content: "{}".into(),
            code: 5,
            persistent: false,
        })
        .await;
    assert!(matches!(refused, Err(CoreError::InvalidArgument { .. })));
}
