//! `update_friend_metadata`: replaces one edge's metadata (any state), nothing else.

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::Storage;

async fn user(store: &dyn Storage, name: &str) -> Uuid {
    let new = new_user(name, device(&format!("device-{name}")));
    let id = new.id;
    store.create_user(new).await.expect("create user");
    id
}

pub async fn friend_metadata_update_replaces_one_edge(f: &dyn Fixture) {
    let store = f.open().await;
    let (a, b, c) = (
        user(&*store, "a").await,
        user(&*store, "b").await,
        user(&*store, "c").await,
    );
    store
        .add_friends(a, &[b], r#"{"old":1}"#, NOW, 100)
        .await
        .expect("invite");
    store
        .block_friends(a, &[c], NOW + 1, 100)
        .await
        .expect("block");
    let before = store.list_friends(a, None, 10, None).await.expect("list");
    assert!(
        store
            .update_friend_metadata(a, b, r#"{"new":true}"#)
            .await
            .expect("update invite")
    );
    assert!(
        store
            .update_friend_metadata(a, c, r#"{"why":"spam"}"#)
            .await
            .expect("update block")
    );
    let after = store.list_friends(a, None, 10, None).await.expect("list");
    let metadata: Vec<(Uuid, &str)> = after
        .friends
        .iter()
        .map(|f| (f.user.id, f.metadata.as_str()))
        .collect();
    assert_eq!(
        metadata,
        vec![(b, r#"{"new":true}"#), (c, r#"{"why":"spam"}"#)],
        "replaced, whatever the state"
    );
    for (old, new) in before.friends.iter().zip(&after.friends) {
        assert_eq!(
            (old.state, old.position, old.update_time_ms),
            (new.state, new.position, new.update_time_ms),
            "only the metadata changes"
        );
    }
    let theirs = store.list_friends(b, None, 10, None).await.expect("list");
    assert_eq!(
        theirs.friends[0].metadata, "{}",
        "the other side's edge is its own"
    );
    assert!(
        !store
            .update_friend_metadata(b, c, "{}")
            .await
            .expect("no edge"),
        "no edge: nothing changes, no error"
    );
}
