//! Identities after creation: linking a custom id or email, unlinking (never the last
//! identity), deleting a user, bans, random samples and an owner's objects.

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{
    Caller, Conflict, IdentityRef, NewIdentity, ObjectWrite, StorageError, Unlink, VersionCheck,
};

fn object(collection: &str, key: &str, owner: Uuid) -> ObjectWrite {
    ObjectWrite {
        collection: collection.into(),
        key: key.into(),
        user_id: owner,
        value: "{}".into(),
        version: VersionCheck::Any,
        permission_read: 1,
        permission_write: 1,
    }
}

pub async fn link_custom_and_email_conflicts_and_not_found(f: &dyn Fixture) {
    let store = f.open().await;
    let a = new_user("ann", device("device-ann"));
    let b = new_user("bob", device("device-bob"));
    store.create_user(a.clone()).await.expect("create");
    store.create_user(b.clone()).await.expect("create");
    store
        .link_custom(a.id, "custom-ann", NOW + 1)
        .await
        .expect("link custom");
    // Linking what one already has is fine; another user's id is a conflict.
    store
        .link_custom(a.id, "custom-ann", NOW + 2)
        .await
        .expect("relink");
    assert!(matches!(
        store.link_custom(b.id, "custom-ann", NOW).await,
        Err(StorageError::Conflict {
            what: Conflict::CustomId
        })
    ));
    store
        .link_email(a.id, "ann@example.com", "hash", NOW + 3)
        .await
        .expect("link email");
    assert!(matches!(
        store.link_email(b.id, "ann@example.com", "x", NOW).await,
        Err(StorageError::Conflict {
            what: Conflict::Email
        })
    ));
    assert!(matches!(
        store.link_custom(Uuid::new_v4(), "custom-zed", NOW).await,
        Err(StorageError::NotFound { .. })
    ));
    let found = store
        .find_user(IdentityRef::Email("ann@example.com"))
        .await
        .expect("find")
        .expect("linked");
    assert_eq!(found.id, a.id);
    assert_eq!(found.password_hash.as_deref(), Some("hash"));
    let account = store.account(a.id).await.expect("read").expect("exists");
    assert_eq!(account.user.custom_id.as_deref(), Some("custom-ann"));
    assert_eq!(account.user.update_time_ms, NOW + 3);
    store.close().await;
}

pub async fn unlink_never_removes_the_last_identity(f: &dyn Fixture) {
    let store = f.open().await;
    let a = new_user("cat", device("device-cat"));
    store.create_user(a.clone()).await.expect("create");
    let last = store.unlink(a.id, Unlink::Device("device-cat"), NOW).await;
    assert!(!last.expect("unlink"), "the only identity stays");
    store
        .link_custom(a.id, "custom-cat", NOW)
        .await
        .expect("link");
    // A custom id that is not the user's removes nothing.
    let other = store
        .unlink(a.id, Unlink::Custom(Some("custom-other")), NOW)
        .await;
    assert!(!other.expect("unlink"));
    assert!(
        store
            .unlink(a.id, Unlink::Device("device-cat"), NOW + 5)
            .await
            .expect("unlink")
    );
    assert!(
        !store
            .unlink(a.id, Unlink::Custom(None), NOW)
            .await
            .expect("unlink"),
        "now the custom id is the last"
    );
    let account = store.account(a.id).await.expect("read").expect("exists");
    assert!(account.device_ids.is_empty());
    assert_eq!(account.user.update_time_ms, NOW + 5);
    store
        .link_email(a.id, "cat@example.com", "hash", NOW)
        .await
        .expect("link");
    assert!(
        store
            .unlink(a.id, Unlink::Custom(Some("custom-cat")), NOW)
            .await
            .expect("unlink")
    );
    assert!(
        !store
            .unlink(a.id, Unlink::Email(None), NOW)
            .await
            .expect("unlink")
    );
    assert!(
        !store
            .unlink(Uuid::new_v4(), Unlink::Email(None), NOW)
            .await
            .expect("unlink of nobody")
    );
    let found = store
        .find_user(IdentityRef::Custom("custom-cat"))
        .await
        .expect("find");
    assert_eq!(found, None);
    store.close().await;
}

pub async fn delete_user_removes_identities_and_objects(f: &dyn Fixture) {
    let store = f.open().await;
    let a = new_user("dan", device("device-dan"));
    let b = new_user(
        "eve",
        NewIdentity::Custom {
            id: "custom-eve".into(),
        },
    );
    store.create_user(a.clone()).await.expect("create");
    store.create_user(b.clone()).await.expect("create");
    store
        .write_objects(
            Caller::Server,
            vec![object("saves", "one", a.id), object("saves", "one", b.id)],
            NOW,
        )
        .await
        .expect("write");
    assert!(store.delete_user(a.id).await.expect("delete"));
    assert!(!store.delete_user(a.id).await.expect("delete again"));
    assert_eq!(store.account(a.id).await.expect("read"), None);
    assert_eq!(
        store
            .find_user(IdentityRef::Device("device-dan"))
            .await
            .expect("find"),
        None
    );
    assert!(
        store
            .objects_of_user(a.id, 10)
            .await
            .expect("read")
            .is_empty()
    );
    let left = store.objects_of_user(b.id, 10).await.expect("read");
    assert_eq!(left.len(), 1, "other users keep their objects");
    // The device id is free for a new account.
    store
        .create_user(new_user("dan2", device("device-dan")))
        .await
        .expect("create again");
    store.close().await;
}

pub async fn disable_time_bans_and_clears(f: &dyn Fixture) {
    let store = f.open().await;
    let a = new_user("fay", device("device-fay"));
    store.create_user(a.clone()).await.expect("create");
    store
        .set_disable_time(&[a.id, Uuid::new_v4()], Some(NOW + 9))
        .await
        .expect("ban");
    let found = store
        .find_user(IdentityRef::Device("device-fay"))
        .await
        .expect("find")
        .expect("exists");
    assert!(found.disabled);
    let users = store.users_by_id(&[a.id]).await.expect("read");
    assert_eq!(users[0].disable_time_ms, Some(NOW + 9));
    store.set_disable_time(&[a.id], None).await.expect("unban");
    let users = store.users_by_id(&[a.id]).await.expect("read");
    assert_eq!(users[0].disable_time_ms, None);
    store.close().await;
}

pub async fn users_after_and_objects_of_user_in_order(f: &dyn Fixture) {
    let store = f.open().await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let new = new_user(&format!("user-{n}"), device(&format!("device-num-{n}")));
        ids.push(new.id);
        store.create_user(new).await.expect("create");
    }
    ids.sort();
    let all = store.users_after(Uuid::nil(), 10).await.expect("read");
    assert_eq!(all.iter().map(|u| u.id).collect::<Vec<_>>(), ids);
    let rest = store.users_after(ids[2], 2).await.expect("read");
    assert_eq!(rest.iter().map(|u| u.id).collect::<Vec<_>>(), ids[3..5]);
    store
        .write_objects(
            Caller::Server,
            vec![
                object("b", "k2", ids[0]),
                object("a", "k9", ids[0]),
                object("b", "k1", ids[0]),
                object("a", "k1", ids[1]),
            ],
            NOW,
        )
        .await
        .expect("write");
    let objects = store.objects_of_user(ids[0], 10).await.expect("read");
    let names: Vec<(String, String)> = objects.into_iter().map(|o| (o.collection, o.key)).collect();
    assert_eq!(
        names,
        [("a", "k9"), ("b", "k1"), ("b", "k2")].map(|(c, k)| (c.to_owned(), k.to_owned()))
    );
    assert_eq!(
        store.objects_of_user(ids[0], 1).await.expect("read").len(),
        1
    );
    store.close().await;
}
