//! The console's store: users seeded once (a second seed keeps the stored password and role),
//! the audit log newest first with paging by id, and the collections that hold objects.

use uuid::Uuid;

use super::{Fixture, NOW};
use crate::{AuditEntry, Caller, ConsoleUser, ObjectWrite, VersionCheck};

fn user(name: &str, hash: &str, role: u8) -> ConsoleUser {
    ConsoleUser {
        id: format!("id-{name}"),
        username: name.to_owned(),
        password_hash: hash.to_owned(),
        role,
        session_key: "k".to_owned(),
        create_time_ms: NOW,
        update_time_ms: NOW,
        ..ConsoleUser::default()
    }
}

pub async fn console_users_are_seeded_once(fixture: &dyn Fixture) {
    let store = fixture.open().await;
    assert!(
        store
            .seed_console_user(user("ops", "h1", 1))
            .await
            .expect("store")
    );
    // A second start with another password or role keeps what is stored.
    assert!(
        !store
            .seed_console_user(user("ops", "h2", 4))
            .await
            .expect("store")
    );
    assert!(
        store
            .seed_console_user(user("viewer", "h3", 4))
            .await
            .expect("store")
    );
    assert_eq!(
        store.console_user("ops").await.expect("store"),
        Some(user("ops", "h1", 1))
    );
    assert_eq!(
        store
            .console_user("viewer")
            .await
            .expect("store")
            .map(|u| u.role),
        Some(4)
    );
    assert_eq!(store.console_user("nobody").await.expect("store"), None);
}

pub async fn audit_log_pages_newest_first(fixture: &dyn Fixture) {
    let store = fixture.open().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = store
            .append_audit(AuditEntry {
                id: 0,
                time_ms: NOW + i,
                username: "ops".into(),
                action: format!("action{i}"),
                target: format!("target{i}"),
                detail: "{}".into(),
            })
            .await
            .expect("store");
        ids.push(id);
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let first = store.audit_log(None, 2).await.expect("store");
    let actions: Vec<&str> = first.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["action4", "action3"]);
    assert_eq!(first[0].time_ms, NOW + 4);
    assert_eq!(first[0].target, "target4");
    let rest = store.audit_log(Some(first[1].id), 10).await.expect("store");
    let actions: Vec<&str> = rest.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["action2", "action1", "action0"]);
}

pub async fn storage_collections_are_listed_once_each(fixture: &dyn Fixture) {
    let store = fixture.open().await;
    assert!(
        store
            .storage_collections(10)
            .await
            .expect("store")
            .is_empty()
    );
    let write = |collection: &str, key: &str| ObjectWrite {
        collection: collection.to_owned(),
        key: key.to_owned(),
        user_id: Uuid::nil(),
        value: "{}".into(),
        version: VersionCheck::Any,
        permission_read: 1,
        permission_write: 1,
    };
    store
        .write_objects(
            Caller::Server,
            vec![write("b", "1"), write("a", "1"), write("b", "2")],
            NOW,
        )
        .await
        .expect("store");
    assert_eq!(
        store.storage_collections(10).await.expect("store"),
        ["a", "b"]
    );
    assert_eq!(store.storage_collections(1).await.expect("store"), ["a"]);
}
