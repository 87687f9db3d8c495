//! Text every backend refuses alike: NUL characters (PostgreSQL cannot store them) and text
//! longer than Nakama's columns (PostgreSQL's indexes cannot hold very long keys). Before these
//! cases, PostgreSQL failed such input with an internal error while SQLite stored it.

use uuid::Uuid;

use super::account::{device, new_user};
use super::{Fixture, NOW};
use crate::{
    AccountUpdate, Caller, ChannelMessage, IdentityRef, NewIdentity, ObjectDelete, ObjectId,
    ObjectWrite, StorageError, VersionCheck,
};

fn object(collection: &str, key: &str, value: &str) -> ObjectWrite {
    ObjectWrite {
        collection: collection.into(),
        key: key.into(),
        user_id: Uuid::nil(),
        value: value.into(),
        version: VersionCheck::Any,
        permission_read: 2,
        permission_write: 1,
    }
}

#[track_caller]
fn assert_nul<T: std::fmt::Debug>(result: Result<T, StorageError>, expected: &str) {
    match result {
        Err(StorageError::NulCharacter { field }) => assert_eq!(field, expected),
        other => panic!("expected a NUL refusal of {expected}, got {other:?}"),
    }
}

#[track_caller]
fn assert_too_long<T: std::fmt::Debug>(result: Result<T, StorageError>, expected: &str) {
    match result {
        Err(StorageError::TooLong { field, .. }) => assert_eq!(field, expected),
        other => panic!("expected {expected} to be refused as too long, got {other:?}"),
    }
}

pub async fn object_text_with_nul_is_refused(f: &dyn Fixture) {
    let store = f.open().await;
    for (write, field) in [
        (object("c\0", "k", "{}"), "collection"),
        (object("c", "k\0", "{}"), "key"),
        (object("c", "k", "{\"a\":\"\0\"}"), "value"),
    ] {
        assert_nul(
            store.write_objects(Caller::Server, vec![write], NOW).await,
            field,
        );
    }
    let mut versioned = object("c", "k", "{}");
    versioned.version = VersionCheck::Matches("v\0".into());
    assert_nul(
        store
            .write_objects(Caller::Server, vec![versioned], NOW)
            .await,
        "version",
    );
    let page = store
        .list_objects(Caller::Server, "c", None, 10, None)
        .await
        .expect("list");
    assert!(page.objects.is_empty(), "nothing was stored: {page:?}");
    let id = |collection: &str, key: &str| ObjectId {
        collection: collection.into(),
        key: key.into(),
        user_id: Uuid::nil(),
    };
    assert_nul(
        store.read_objects(Caller::Server, &[id("c", "k\0")]).await,
        "key",
    );
    assert_nul(
        store
            .list_objects(Caller::Server, "c\0", None, 10, None)
            .await,
        "collection",
    );
    let delete = ObjectDelete {
        collection: "c\0".into(),
        key: "k".into(),
        user_id: Uuid::nil(),
        version: None,
    };
    assert_nul(
        store.delete_objects(Caller::Server, vec![delete]).await,
        "collection",
    );
    store.close().await;
}

pub async fn object_text_over_nakama_columns_is_refused(f: &dyn Fixture) {
    let store = f.open().await;
    assert_too_long(
        store
            .write_objects(
                Caller::Server,
                vec![object("c", &"k".repeat(129), "{}")],
                NOW,
            )
            .await,
        "key",
    );
    // Past PostgreSQL's index row limit (~2.7 kB): the case that answered 500 there.
    assert_too_long(
        store
            .write_objects(
                Caller::Server,
                vec![object("c", &"k".repeat(3000), "{}")],
                NOW,
            )
            .await,
        "key",
    );
    assert_too_long(
        store
            .write_objects(
                Caller::Server,
                vec![object(&"c".repeat(129), "k", "{}")],
                NOW,
            )
            .await,
        "collection",
    );
    // The limit counts characters, as Nakama's VARCHAR(128): 128 four-byte characters fit.
    let (collection, key) = ("🎲".repeat(128), "🔑".repeat(128));
    store
        .write_objects(Caller::Server, vec![object(&collection, &key, "{}")], NOW)
        .await
        .expect("128 characters fit");
    let read = store
        .read_objects(
            Caller::Server,
            &[ObjectId {
                collection: collection.clone(),
                key: key.clone(),
                user_id: Uuid::nil(),
            }],
        )
        .await
        .expect("read");
    assert_eq!(read.len(), 1);
    assert_eq!((&read[0].collection, &read[0].key), (&collection, &key));
    store.close().await;
}

pub async fn account_text_with_nul_is_refused(f: &dyn Fixture) {
    let store = f.open().await;
    assert_nul(
        store
            .create_user(new_user("bad\0name", device("device-nul-1")))
            .await,
        "username",
    );
    assert_nul(
        store
            .create_user(new_user("fine", device("device\0nul")))
            .await,
        "device id",
    );
    assert_nul(
        store
            .create_user(new_user(
                "fine",
                NewIdentity::Custom {
                    id: "custom\0id".into(),
                },
            ))
            .await,
        "custom id",
    );
    assert_nul(
        store
            .create_user(new_user(
                "fine",
                NewIdentity::Email {
                    email: "a\0@example.com".into(),
                    password_hash: "hash".into(),
                },
            ))
            .await,
        "email",
    );
    assert!(
        store
            .find_user(IdentityRef::Username("fine"))
            .await
            .expect("find")
            .is_none(),
        "no refused account was created"
    );
    assert_nul(
        store.find_user(IdentityRef::Device("device\0nul")).await,
        "device id",
    );
    assert_nul(
        store.users_by_username(&["a\0".to_owned()]).await,
        "username",
    );

    let user = new_user("holder", device("device-nul-2"));
    let user_id = user.id;
    store.create_user(user).await.expect("create");
    let before = store.account(user_id).await.expect("account");
    let updates: [(AccountUpdate, &str); 7] = [
        (
            AccountUpdate {
                username: Some("x\0".into()),
                ..AccountUpdate::default()
            },
            "username",
        ),
        (
            AccountUpdate {
                display_name: Some("x\0".into()),
                ..AccountUpdate::default()
            },
            "display name",
        ),
        (
            AccountUpdate {
                avatar_url: Some("x\0".into()),
                ..AccountUpdate::default()
            },
            "avatar url",
        ),
        (
            AccountUpdate {
                lang_tag: Some("x\0".into()),
                ..AccountUpdate::default()
            },
            "lang tag",
        ),
        (
            AccountUpdate {
                location: Some("x\0".into()),
                ..AccountUpdate::default()
            },
            "location",
        ),
        (
            AccountUpdate {
                timezone: Some("x\0".into()),
                ..AccountUpdate::default()
            },
            "timezone",
        ),
        (
            AccountUpdate {
                display_name: Some("fine".into()),
                metadata: Some("{\"a\":\"\0\"}".into()),
                ..AccountUpdate::default()
            },
            "metadata",
        ),
    ];
    for (update, field) in updates {
        assert_nul(store.update_account(user_id, update, NOW).await, field);
    }
    assert_nul(store.link_device(user_id, "dev\0ice-id").await, "device id");
    assert_eq!(
        store.account(user_id).await.expect("account"),
        before,
        "no refused update changed the account"
    );
    store.close().await;
}

pub async fn account_text_over_nakama_columns_is_refused(f: &dyn Fixture) {
    let store = f.open().await;
    assert_too_long(
        store
            .create_user(new_user(&"u".repeat(129), device("device-long-1")))
            .await,
        "username",
    );
    assert_too_long(
        store
            .create_user(new_user("fine", device(&"d".repeat(3000))))
            .await,
        "device id",
    );
    let user = new_user("holder", device("device-long-2"));
    let user_id = user.id;
    store.create_user(user).await.expect("create");
    for (update, field) in [
        (
            AccountUpdate {
                display_name: Some("n".repeat(256)),
                ..AccountUpdate::default()
            },
            "display name",
        ),
        (
            AccountUpdate {
                lang_tag: Some("l".repeat(19)),
                ..AccountUpdate::default()
            },
            "lang tag",
        ),
        (
            AccountUpdate {
                avatar_url: Some("a".repeat(513)),
                ..AccountUpdate::default()
            },
            "avatar url",
        ),
    ] {
        assert_too_long(store.update_account(user_id, update, NOW).await, field);
    }
    let name = "ñ".repeat(255);
    store
        .update_account(
            user_id,
            AccountUpdate {
                display_name: Some(name.clone()),
                ..AccountUpdate::default()
            },
            NOW,
        )
        .await
        .expect("255 characters fit");
    let account = store.account(user_id).await.expect("account");
    assert_eq!(account.map(|a| a.user.display_name), Some(name));
    store.close().await;
}

pub async fn message_text_with_nul_is_refused(f: &dyn Fixture) {
    let store = f.open().await;
    let message = ChannelMessage {
        id: Uuid::new_v4(),
        channel_id: "2...room".into(),
        code: 0,
        sender_id: Uuid::new_v4(),
        username: "sender".into(),
        content: "{\"t\":\"\0\"}".into(),
        create_time_ms: NOW,
        update_time_ms: NOW,
    };
    assert_nul(store.insert_message(message).await, "content");
    let page = store
        .list_messages("2...room", crate::Direction::Forward, 10, None)
        .await
        .expect("list");
    assert!(page.messages.is_empty(), "nothing was stored");
    store.close().await;
}
