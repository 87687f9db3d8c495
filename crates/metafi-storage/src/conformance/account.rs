//! Accounts: creation by each identity, conflicts, racing creates, reads and updates.

use std::collections::BTreeSet;
use std::sync::Arc;

use uuid::Uuid;

use super::{Fixture, NOW};
use crate::{AccountUpdate, AuthUser, Conflict, IdentityRef, NewIdentity, NewUser, StorageError};

/// A new user with a fresh id.
pub fn new_user(username: &str, identity: NewIdentity) -> NewUser {
    NewUser {
        id: Uuid::new_v4(),
        username: username.to_owned(),
        identity,
        now_ms: NOW,
    }
}

/// A device identity.
pub fn device(id: &str) -> NewIdentity {
    NewIdentity::Device { id: id.to_owned() }
}

fn custom(id: &str) -> NewIdentity {
    NewIdentity::Custom { id: id.to_owned() }
}

fn email(address: &str) -> NewIdentity {
    NewIdentity::Email {
        email: address.to_owned(),
        password_hash: format!("hash-of-{address}"),
    }
}

fn conflict(result: Result<(), StorageError>) -> Conflict {
    match result {
        Err(StorageError::Conflict { what }) => what,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

pub async fn create_and_find_device(f: &dyn Fixture) {
    let store = f.open().await;
    let new = new_user("alice", device("dev-a"));
    store.create_user(new.clone()).await.expect("create");
    let found = store
        .find_user(IdentityRef::Device("dev-a"))
        .await
        .expect("find");
    let expected = AuthUser {
        id: new.id,
        username: "alice".into(),
        disabled: false,
        password_hash: None,
    };
    assert_eq!(found, Some(expected));
    // Identity kinds are separate namespaces.
    assert_eq!(
        store
            .find_user(IdentityRef::Custom("dev-a"))
            .await
            .expect("find"),
        None
    );
    let account = store
        .account(new.id)
        .await
        .expect("account")
        .expect("exists");
    assert_eq!(account.device_ids, vec!["dev-a".to_owned()]);
    let user = account.user;
    assert_eq!((user.id, user.username.as_str()), (new.id, "alice"));
    assert_eq!((user.create_time_ms, user.update_time_ms), (NOW, NOW));
    assert_eq!((user.metadata.as_str(), user.wallet.as_str()), ("{}", "{}"));
    assert_eq!((user.email, user.custom_id), (None, None));
    assert_eq!(user.display_name, "");
    assert_eq!((user.verify_time_ms, user.disable_time_ms), (None, None));
    store.close().await;
}

pub async fn create_and_find_custom(f: &dyn Fixture) {
    let store = f.open().await;
    let new = new_user("carol", custom("custom-1"));
    store.create_user(new.clone()).await.expect("create");
    let found = store
        .find_user(IdentityRef::Custom("custom-1"))
        .await
        .expect("find");
    assert_eq!(found.map(|u| (u.id, u.password_hash)), Some((new.id, None)));
    let account = store
        .account(new.id)
        .await
        .expect("account")
        .expect("exists");
    assert_eq!(account.user.custom_id.as_deref(), Some("custom-1"));
    assert!(account.device_ids.is_empty());
    store.close().await;
}

pub async fn create_and_find_email(f: &dyn Fixture) {
    let store = f.open().await;
    let new = new_user("erin", email("erin@example.com"));
    store.create_user(new.clone()).await.expect("create");
    let found = store
        .find_user(IdentityRef::Email("erin@example.com"))
        .await
        .expect("find")
        .expect("exists");
    assert_eq!(found.id, new.id);
    assert_eq!(
        found.password_hash.as_deref(),
        Some("hash-of-erin@example.com")
    );
    let account = store
        .account(new.id)
        .await
        .expect("account")
        .expect("exists");
    assert_eq!(account.user.email.as_deref(), Some("erin@example.com"));
    store.close().await;
}

pub async fn find_by_username(f: &dyn Fixture) {
    let store = f.open().await;
    let new = new_user("Frank", email("frank@example.com"));
    store.create_user(new.clone()).await.expect("create");
    let found = store
        .find_user(IdentityRef::Username("Frank"))
        .await
        .expect("find");
    assert_eq!(
        found.map(|u| (u.id, u.password_hash)),
        Some((new.id, Some("hash-of-frank@example.com".to_owned())))
    );
    // Usernames are unique exactly as written: another case is another name.
    assert_eq!(
        store
            .find_user(IdentityRef::Username("frank"))
            .await
            .expect("find"),
        None
    );
    store.close().await;
}

pub async fn find_unknown_is_none(f: &dyn Fixture) {
    let store = f.open().await;
    for identity in [
        IdentityRef::Device("nope"),
        IdentityRef::Custom("nope"),
        IdentityRef::Email("nope@example.com"),
        IdentityRef::Username("nope"),
    ] {
        assert_eq!(store.find_user(identity).await.expect("find"), None);
    }
    assert_eq!(store.account(Uuid::new_v4()).await.expect("account"), None);
    store.close().await;
}

pub async fn username_conflict_writes_nothing(f: &dyn Fixture) {
    let store = f.open().await;
    store
        .create_user(new_user("alice", device("dev-a")))
        .await
        .expect("create");
    for identity in [device("dev-b"), custom("c-b"), email("b@example.com")] {
        let second = new_user("alice", identity);
        assert_eq!(
            conflict(store.create_user(second.clone()).await),
            Conflict::Username
        );
        assert_eq!(store.account(second.id).await.expect("account"), None);
    }
    assert_eq!(
        store
            .find_user(IdentityRef::Device("dev-b"))
            .await
            .expect("find"),
        None
    );
    assert_eq!(
        store
            .find_user(IdentityRef::Custom("c-b"))
            .await
            .expect("find"),
        None
    );
    let email_user = store.find_user(IdentityRef::Email("b@example.com")).await;
    assert_eq!(email_user.expect("find"), None);
    store.close().await;
}

pub async fn device_conflict_writes_nothing(f: &dyn Fixture) {
    identity_conflict(f, device("dev-x"), Conflict::DeviceId).await;
}

pub async fn custom_conflict_writes_nothing(f: &dyn Fixture) {
    identity_conflict(f, custom("custom-x"), Conflict::CustomId).await;
}

pub async fn email_conflict_writes_nothing(f: &dyn Fixture) {
    identity_conflict(f, email("x@example.com"), Conflict::Email).await;
}

async fn identity_conflict(f: &dyn Fixture, identity: NewIdentity, what: Conflict) {
    let store = f.open().await;
    store
        .create_user(new_user("first", identity.clone()))
        .await
        .expect("create");
    let second = new_user("second", identity);
    assert_eq!(conflict(store.create_user(second.clone()).await), what);
    assert_eq!(store.account(second.id).await.expect("account"), None);
    assert_eq!(
        store
            .find_user(IdentityRef::Username("second"))
            .await
            .expect("find"),
        None
    );
    // The name stays free: the failed create left nothing behind.
    store
        .create_user(new_user("second", device("other")))
        .await
        .expect("create");
    store.close().await;
}

pub async fn identity_conflict_wins_over_username_conflict(f: &dyn Fixture) {
    let store = f.open().await;
    store
        .create_user(new_user("alice", device("dev-a")))
        .await
        .expect("create");
    let again = store.create_user(new_user("alice", device("dev-a"))).await;
    assert_eq!(conflict(again), Conflict::DeviceId);
    store.close().await;
}

pub async fn concurrent_creates_same_device_one_wins(f: &dyn Fixture) {
    let store = f.open().await;
    let mut tasks = Vec::new();
    for n in 0..32 {
        let store = Arc::clone(&store);
        let new = new_user(&format!("racer-{n}"), device("contested"));
        tasks.push(tokio::spawn(async move {
            let id = new.id;
            (id, store.create_user(new).await)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (id, result) = task.await.expect("task");
        match result {
            Ok(()) => winners.push(id),
            Err(StorageError::Conflict {
                what: Conflict::DeviceId,
            }) => {}
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one create must win");
    let owner = store
        .find_user(IdentityRef::Device("contested"))
        .await
        .expect("find");
    assert_eq!(owner.map(|u| u.id), Some(winners[0]));
    let names: Vec<String> = (0..32).map(|n| format!("racer-{n}")).collect();
    let users = store.users_by_username(&names).await.expect("users");
    assert_eq!(users.len(), 1, "losers left no user row");
    store.close().await;
}

pub async fn account_device_ids_are_sorted(f: &dyn Fixture) {
    let store = f.open().await;
    let new = new_user("dana", device("m-device"));
    store.create_user(new.clone()).await.expect("create");
    for id in ["z-device", "a-device", "m-device", "B-device"] {
        store.link_device(new.id, id).await.expect("link");
    }
    let account = store
        .account(new.id)
        .await
        .expect("account")
        .expect("exists");
    assert_eq!(
        account.device_ids,
        vec!["B-device", "a-device", "m-device", "z-device"]
    );
    let found = store
        .find_user(IdentityRef::Device("z-device"))
        .await
        .expect("find");
    assert_eq!(found.map(|u| u.id), Some(new.id));
    store.close().await;
}

pub async fn link_device_conflicts_and_not_found(f: &dyn Fixture) {
    let store = f.open().await;
    let a = new_user("a", device("dev-a"));
    let b = new_user("b", device("dev-b"));
    store.create_user(a.clone()).await.expect("create");
    store.create_user(b.clone()).await.expect("create");
    assert_eq!(
        conflict(store.link_device(b.id, "dev-a").await),
        Conflict::DeviceId
    );
    let missing = store.link_device(Uuid::new_v4(), "dev-new").await;
    assert!(
        matches!(missing, Err(StorageError::NotFound { .. })),
        "{missing:?}"
    );
    assert_eq!(
        store
            .find_user(IdentityRef::Device("dev-new"))
            .await
            .expect("find"),
        None
    );
    store.close().await;
}

pub async fn update_account_partial_fields(f: &dyn Fixture) {
    let store = f.open().await;
    let new = new_user("gina", device("dev-g"));
    store.create_user(new.clone()).await.expect("create");
    let update = AccountUpdate {
        display_name: Some("Gina".into()),
        lang_tag: Some("fr".into()),
        metadata: Some("{\"level\":3}".into()),
        ..AccountUpdate::default()
    };
    store
        .update_account(new.id, update, NOW + 5)
        .await
        .expect("update");
    let user = store
        .account(new.id)
        .await
        .expect("account")
        .expect("exists")
        .user;
    assert_eq!(
        (user.display_name.as_str(), user.lang_tag.as_str()),
        ("Gina", "fr")
    );
    assert_eq!(user.metadata, "{\"level\":3}");
    assert_eq!(
        (user.username.as_str(), user.avatar_url.as_str()),
        ("gina", "")
    );
    assert_eq!((user.create_time_ms, user.update_time_ms), (NOW, NOW + 5));

    let rename = AccountUpdate {
        username: Some("gina2".into()),
        ..AccountUpdate::default()
    };
    store
        .update_account(new.id, rename, NOW + 6)
        .await
        .expect("rename");
    assert_eq!(
        store
            .find_user(IdentityRef::Username("gina"))
            .await
            .expect("find"),
        None
    );
    let found = store
        .find_user(IdentityRef::Username("gina2"))
        .await
        .expect("find");
    assert_eq!(found.map(|u| u.id), Some(new.id));
    let user = store
        .account(new.id)
        .await
        .expect("account")
        .expect("exists")
        .user;
    assert_eq!(
        user.display_name, "Gina",
        "fields left out keep their value"
    );
    store.close().await;
}

pub async fn update_account_username_conflict(f: &dyn Fixture) {
    let store = f.open().await;
    let a = new_user("hank", device("dev-h"));
    let b = new_user("ivy", device("dev-i"));
    store.create_user(a.clone()).await.expect("create");
    store.create_user(b.clone()).await.expect("create");
    let update = AccountUpdate {
        username: Some("hank".into()),
        display_name: Some("Ivy".into()),
        ..AccountUpdate::default()
    };
    let result = store.update_account(b.id, update, NOW + 1).await;
    assert_eq!(conflict(result), Conflict::Username);
    let user = store
        .account(b.id)
        .await
        .expect("account")
        .expect("exists")
        .user;
    assert_eq!(
        (user.username.as_str(), user.display_name.as_str()),
        ("ivy", "")
    );
    assert_eq!(user.update_time_ms, NOW);
    // Keeping one's own name is no conflict.
    let same = AccountUpdate {
        username: Some("ivy".into()),
        ..AccountUpdate::default()
    };
    store
        .update_account(b.id, same, NOW + 2)
        .await
        .expect("same name");
    store.close().await;
}

pub async fn update_account_not_found(f: &dyn Fixture) {
    let store = f.open().await;
    let update = AccountUpdate {
        display_name: Some("ghost".into()),
        ..AccountUpdate::default()
    };
    let result = store.update_account(Uuid::new_v4(), update, NOW).await;
    assert!(
        matches!(result, Err(StorageError::NotFound { .. })),
        "{result:?}"
    );
    store.close().await;
}

pub async fn users_by_id_and_username(f: &dyn Fixture) {
    let store = f.open().await;
    let users: Vec<_> = ["u1", "u2", "u3"]
        .iter()
        .map(|name| new_user(name, device(&format!("dev-{name}"))))
        .collect();
    for user in &users {
        store.create_user(user.clone()).await.expect("create");
    }
    let ids = [users[0].id, Uuid::new_v4(), users[2].id];
    let found: BTreeSet<Uuid> = store
        .users_by_id(&ids)
        .await
        .expect("by id")
        .into_iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(found, BTreeSet::from([users[0].id, users[2].id]));
    let names = ["u2".to_owned(), "nobody".to_owned(), "u3".to_owned()];
    let found: BTreeSet<String> = store
        .users_by_username(&names)
        .await
        .expect("by name")
        .into_iter()
        .map(|u| u.username)
        .collect();
    assert_eq!(found, BTreeSet::from(["u2".to_owned(), "u3".to_owned()]));
    assert!(store.users_by_id(&[]).await.expect("empty").is_empty());
    store.close().await;
}
