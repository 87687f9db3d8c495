//! Persistent notifications: all-or-nothing inserts, listing in `(create_time, id)` order from
//! a position, lookups and deletes scoped to the owner, partial updates, removal with the
//! account, and the text/code checks.

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{NotificationPosition, NotificationUpdate, Storage, StorageError, StoredNotification};

async fn user(store: &dyn Storage, name: &str) -> Uuid {
    let new = new_user(name, device(&format!("{name}-device-0000")));
    let id = new.id;
    store.create_user(new).await.expect("create user");
    id
}

fn notification(user_id: Uuid, create_time_ms: i64) -> StoredNotification {
    StoredNotification {
        id: Uuid::new_v4(),
        user_id,
        subject: format!("at {create_time_ms}"),
        content: format!("{{\"t\":{create_time_ms}}}"),
        code: 101,
        sender_id: Uuid::nil(),
        create_time_ms,
    }
}

fn ids(notifications: &[StoredNotification]) -> Vec<Uuid> {
    notifications.iter().map(|n| n.id).collect()
}

pub async fn notification_list_in_order_and_resume_after_a_position(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&*store, "alice").await;
    let bob = user(&*store, "bob").await;
    // Pairs share a create time so that the id breaks ties; inserted out of order.
    let mut all: Vec<StoredNotification> = (0..7)
        .rev()
        .map(|n| notification(alice, NOW + n / 2))
        .collect();
    store
        .insert_notifications(all.clone())
        .await
        .expect("insert");
    store
        .insert_notifications(vec![notification(bob, NOW)])
        .await
        .expect("insert bob's");
    all.sort_by_key(|n| (n.create_time_ms, n.id));

    let first = store
        .list_notifications(alice, None, 3)
        .await
        .expect("list");
    assert_eq!(ids(&first), ids(&all[..3]), "first page, oldest first");
    assert_eq!(first[0], all[0], "every field round-trips");
    let rest = store
        .list_notifications(alice, Some(first[2].position()), 10)
        .await
        .expect("list after");
    assert_eq!(
        ids(&rest),
        ids(&all[3..]),
        "strictly after the position, no gaps"
    );
    let none = store
        .list_notifications(alice, Some(all[6].position()), 10)
        .await
        .expect("list past the end");
    assert!(none.is_empty());
    // A position between rows (a later time, the nil id) resumes at the next row.
    let between = NotificationPosition {
        create_time_ms: all[4].create_time_ms,
        id: Uuid::nil(),
    };
    let from_between = store
        .list_notifications(alice, Some(between), 10)
        .await
        .expect("list from between");
    assert_eq!(ids(&from_between), ids(&all[4..]));
    let zero = store
        .list_notifications(alice, None, 0)
        .await
        .expect("zero");
    assert!(zero.is_empty());
    let bobs = store.list_notifications(bob, None, 10).await.expect("bob");
    assert_eq!(bobs.len(), 1, "each user lists only their own");
}

pub async fn notification_insert_is_all_or_nothing(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&*store, "alice").await;
    let stranger = Uuid::new_v4();
    let result = store
        .insert_notifications(vec![notification(alice, NOW), notification(stranger, NOW)])
        .await;
    assert!(
        matches!(result, Err(StorageError::NotFound { what: "user" })),
        "{result:?}"
    );
    let listed = store
        .list_notifications(alice, None, 10)
        .await
        .expect("list");
    assert!(
        listed.is_empty(),
        "nothing stored when one receiver is unknown"
    );

    let first = notification(alice, NOW);
    store
        .insert_notifications(vec![first.clone()])
        .await
        .expect("insert");
    let again = store
        .insert_notifications(vec![notification(alice, NOW + 1), first.clone()])
        .await;
    assert!(
        matches!(again, Err(StorageError::Invalid { .. })),
        "{again:?}"
    );
    let listed = store
        .list_notifications(alice, None, 10)
        .await
        .expect("list");
    assert_eq!(ids(&listed), vec![first.id], "a taken id stores nothing");
    store.insert_notifications(Vec::new()).await.expect("empty");
}

pub async fn notification_get_and_delete_by_id_scoped_to_owner(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&*store, "alice").await;
    let bob = user(&*store, "bob").await;
    let a1 = notification(alice, NOW);
    let a2 = notification(alice, NOW + 1);
    let b1 = notification(bob, NOW);
    store
        .insert_notifications(vec![a1.clone(), a2.clone(), b1.clone()])
        .await
        .expect("insert");
    let unknown = Uuid::new_v4();

    let mut any = store
        .notifications_by_id(&[a1.id, b1.id, unknown], None)
        .await
        .expect("by id");
    any.sort_by_key(|n| n.id);
    let mut expected = vec![a1.clone(), b1.clone()];
    expected.sort_by_key(|n| n.id);
    assert_eq!(
        any, expected,
        "any owner's without a user; unknown ids left out"
    );
    let alices = store
        .notifications_by_id(&[a1.id, b1.id], Some(alice))
        .await
        .expect("by id for alice");
    assert_eq!(alices, vec![a1.clone()], "only the owner's with a user");

    let by_bob = store
        .delete_notifications(&[a1.id, a2.id], Some(bob))
        .await
        .expect("bob deletes alice's");
    assert_eq!(by_bob, 0, "another user's ids delete nothing");
    let deleted = store
        .delete_notifications(&[a1.id, b1.id, unknown], Some(alice))
        .await
        .expect("alice deletes");
    assert_eq!(deleted, 1, "only alice's own, unknown ignored");
    let left = store
        .list_notifications(alice, None, 10)
        .await
        .expect("list");
    assert_eq!(ids(&left), vec![a2.id]);
    let deleted = store
        .delete_notifications(&[a2.id, b1.id], None)
        .await
        .expect("server deletes");
    assert_eq!(deleted, 2, "without a user, any owner's");
    let bobs = store.list_notifications(bob, None, 10).await.expect("list");
    assert!(bobs.is_empty());
}

pub async fn notification_update_changes_only_given_fields(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&*store, "alice").await;
    let one = notification(alice, NOW);
    let two = notification(alice, NOW + 1);
    store
        .insert_notifications(vec![one.clone(), two.clone()])
        .await
        .expect("insert");
    let sender = Uuid::new_v4();
    store
        .update_notifications(vec![
            NotificationUpdate {
                id: one.id,
                content: Some("{\"edited\":true}".into()),
                subject: None,
                sender_id: None,
            },
            NotificationUpdate {
                id: two.id,
                content: None,
                subject: Some("renamed".into()),
                sender_id: Some(sender),
            },
            // A later update of the same id wins where it sets a field.
            NotificationUpdate {
                id: one.id,
                content: None,
                subject: Some("one again".into()),
                sender_id: None,
            },
            NotificationUpdate {
                id: Uuid::new_v4(),
                content: Some("{}".into()),
                subject: None,
                sender_id: None,
            },
        ])
        .await
        .expect("update");
    let listed = store
        .list_notifications(alice, None, 10)
        .await
        .expect("list");
    assert_eq!(
        listed,
        vec![
            StoredNotification {
                content: "{\"edited\":true}".into(),
                subject: "one again".into(),
                ..one
            },
            StoredNotification {
                subject: "renamed".into(),
                sender_id: sender,
                ..two
            },
        ]
    );
}

pub async fn notification_goes_with_the_account(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&*store, "alice").await;
    let bob = user(&*store, "bob").await;
    let a = notification(alice, NOW);
    let b = notification(bob, NOW);
    store
        .insert_notifications(vec![a.clone(), b.clone()])
        .await
        .expect("insert");
    assert!(store.delete_user(alice).await.expect("delete user"));
    let found = store
        .notifications_by_id(&[a.id, b.id], None)
        .await
        .expect("by id");
    assert_eq!(
        ids(&found),
        vec![b.id],
        "the deleted user's notifications went with it"
    );
}

pub async fn notification_text_and_code_are_checked(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&*store, "alice").await;
    let nul_subject = StoredNotification {
        subject: "a\0b".into(),
        ..notification(alice, NOW)
    };
    let long_subject = StoredNotification {
        subject: "é".repeat(crate::MAX_SUBJECT_CHARS + 1),
        ..notification(alice, NOW)
    };
    let nul_content = StoredNotification {
        content: "{\"a\":\"\0\"}".into(),
        ..notification(alice, NOW)
    };
    let big_code = StoredNotification {
        code: 40_000,
        ..notification(alice, NOW)
    };
    for bad in [nul_subject, long_subject, nul_content, big_code] {
        let result = store
            .insert_notifications(vec![notification(alice, NOW), bad.clone()])
            .await;
        assert!(
            matches!(
                result,
                Err(StorageError::NulCharacter { .. }
                    | StorageError::TooLong { .. }
                    | StorageError::Invalid { .. })
            ),
            "{bad:?}: {result:?}"
        );
    }
    let fits = StoredNotification {
        subject: "é".repeat(crate::MAX_SUBJECT_CHARS),
        code: -32768,
        ..notification(alice, NOW)
    };
    store
        .insert_notifications(vec![fits.clone()])
        .await
        .expect("255 characters and a SMALLINT code fit");
    let listed = store
        .list_notifications(alice, None, 10)
        .await
        .expect("list");
    assert_eq!(
        listed,
        vec![fits.clone()],
        "only the one that fits was stored"
    );
    let bad_update = store
        .update_notifications(vec![NotificationUpdate {
            id: fits.id,
            content: None,
            subject: Some("\0".into()),
            sender_id: None,
        }])
        .await;
    assert!(
        matches!(bad_update, Err(StorageError::NulCharacter { .. })),
        "{bad_update:?}"
    );
}
