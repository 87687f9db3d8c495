//! Durability across close/reopen, behaviour after close, and group commit.

use std::sync::Arc;

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{
    Caller, ChannelMessage, Direction, IdentityRef, ObjectId, ObjectWrite, Revocation,
    StorageError, VersionCheck,
};

pub async fn data_survives_close_and_reopen(f: &dyn Fixture) {
    let store = f.open().await;
    let new = new_user("durable", device("dev-durable"));
    store.create_user(new.clone()).await.expect("create");
    let revocation = Revocation {
        session_id: Uuid::new_v4(),
        user_id: new.id,
        expires_at_ms: NOW + 60_000,
    };
    store
        .revoke_sessions(std::slice::from_ref(&revocation))
        .await
        .expect("revoke");
    let write = ObjectWrite {
        collection: "saves".into(),
        key: "slot1".into(),
        user_id: new.id,
        value: "{\"hp\":10}".into(),
        version: VersionCheck::Any,
        permission_read: 1,
        permission_write: 1,
    };
    store
        .write_objects(Caller::Server, vec![write], NOW)
        .await
        .expect("write");
    let message = ChannelMessage {
        id: Uuid::new_v4(),
        channel_id: "2...lobby".into(),
        code: 0,
        sender_id: new.id,
        username: "durable".into(),
        content: "{\"text\":\"hi\"}".into(),
        create_time_ms: NOW,
        update_time_ms: NOW,
    };
    store.insert_message(message.clone()).await.expect("insert");
    store.close().await;
    drop(store);

    let store = f.open().await;
    let found = store
        .find_user(IdentityRef::Device("dev-durable"))
        .await
        .expect("find");
    assert_eq!(found.map(|u| u.id), Some(new.id));
    let active = store.active_revocations(NOW).await.expect("active");
    assert_eq!(active, vec![revocation]);
    let id = ObjectId {
        collection: "saves".into(),
        key: "slot1".into(),
        user_id: new.id,
    };
    let objects = store
        .read_objects(Caller::Server, &[id])
        .await
        .expect("read");
    assert_eq!(objects.len(), 1);
    let page = store
        .list_messages("2...lobby", Direction::Forward, 10, None)
        .await
        .expect("list");
    assert_eq!(page.messages, vec![message]);
    store.close().await;
}

pub async fn writes_after_close_fail(f: &dyn Fixture) {
    let store = f.open().await;
    store.close().await;
    let result = store
        .create_user(new_user("late", device("dev-late")))
        .await;
    assert!(matches!(result, Err(StorageError::Closed)), "{result:?}");
    // Closing twice is harmless.
    store.close().await;
}

pub async fn group_commit_shares_commits(f: &dyn Fixture) {
    let store = f.open().await;
    let before = store.stats();
    let mut tasks = Vec::new();
    for n in 0..500 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let new = new_user(&format!("group-{n}"), device(&format!("group-dev-{n}")));
            store.create_user(new).await
        }));
    }
    for task in tasks {
        task.await.expect("task").expect("create");
    }
    let after = store.stats();
    let writes = after.writes - before.writes;
    let commits = after.commits - before.commits;
    assert!(writes >= 500, "every write counted: {writes}");
    assert!(
        commits < writes,
        "500 concurrent writes must share commits: {commits} commits for {writes} writes"
    );
    store.close().await;
}
