//! Storage objects: versions, permissions, visibility, listing, deletes, batch atomicity.

use std::collections::BTreeSet;

use uuid::Uuid;

use super::{Fixture, NOW};
use crate::support::object_version;
use crate::{
    Caller, ObjectDelete, ObjectId, ObjectWrite, StorageError, StorageObject, VersionCheck,
};

const C: &str = "collection";

fn write(key: &str, owner: Uuid, value: &str, version: VersionCheck) -> ObjectWrite {
    ObjectWrite {
        collection: C.into(),
        key: key.into(),
        user_id: owner,
        value: value.into(),
        version,
        permission_read: 1,
        permission_write: 1,
    }
}

fn with_perms(mut write: ObjectWrite, read: u8, write_perm: u8) -> ObjectWrite {
    write.permission_read = read;
    write.permission_write = write_perm;
    write
}

fn id(key: &str, owner: Uuid) -> ObjectId {
    ObjectId {
        collection: C.into(),
        key: key.into(),
        user_id: owner,
    }
}

fn delete(key: &str, owner: Uuid, version: Option<String>) -> ObjectDelete {
    ObjectDelete {
        collection: C.into(),
        key: key.into(),
        user_id: owner,
        version,
    }
}

fn keys(objects: &[StorageObject]) -> Vec<String> {
    objects.iter().map(|o| o.key.clone()).collect()
}

pub async fn object_version_is_md5_of_value(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    let value = "{\"coins\": 10}";
    let acks = store
        .write_objects(
            Caller::User(owner),
            vec![write("k", owner, value, VersionCheck::Any)],
            NOW,
        )
        .await
        .expect("write");
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].version, object_version(value));
    assert_eq!((acks[0].create_time_ms, acks[0].update_time_ms), (NOW, NOW));
    assert_eq!((acks[0].key.as_str(), acks[0].user_id), ("k", owner));
    let objects = store
        .read_objects(Caller::User(owner), &[id("k", owner)])
        .await
        .expect("read");
    let expected = StorageObject {
        collection: C.into(),
        key: "k".into(),
        user_id: owner,
        value: value.into(),
        version: object_version(value),
        permission_read: 1,
        permission_write: 1,
        create_time_ms: NOW,
        update_time_ms: NOW,
    };
    assert_eq!(objects, vec![expected]);
    // System-owned objects (nil owner) are written by the server.
    let system = write("sys", Uuid::nil(), "{}", VersionCheck::Any);
    store
        .write_objects(Caller::Server, vec![system], NOW)
        .await
        .expect("system write");
    let read = store
        .read_objects(Caller::Server, &[id("sys", Uuid::nil())])
        .await;
    assert_eq!(read.expect("read").len(), 1);
    store.close().await;
}

pub async fn object_version_checks(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    let me = Caller::User(owner);
    let v1 = "{\"v\":1}";
    let first = write("k", owner, v1, VersionCheck::Absent);
    store
        .write_objects(me, vec![first.clone()], NOW)
        .await
        .expect("absent on new");
    let again = store.write_objects(me, vec![first], NOW).await;
    assert!(
        matches!(again, Err(StorageError::VersionMismatch { index: 0 })),
        "{again:?}"
    );

    let wrong = write("k", owner, "{}", VersionCheck::Matches("0000".into()));
    let result = store.write_objects(me, vec![wrong], NOW).await;
    assert!(
        matches!(result, Err(StorageError::VersionMismatch { index: 0 })),
        "{result:?}"
    );

    let v2 = "{\"v\":2}";
    let right = write("k", owner, v2, VersionCheck::Matches(object_version(v1)));
    let acks = store
        .write_objects(me, vec![right], NOW + 10)
        .await
        .expect("matching version");
    assert_eq!(acks[0].version, object_version(v2));
    assert_eq!(
        (acks[0].create_time_ms, acks[0].update_time_ms),
        (NOW, NOW + 10)
    );

    let missing = write(
        "nope",
        owner,
        "{}",
        VersionCheck::Matches(object_version("{}")),
    );
    let result = store.write_objects(me, vec![missing], NOW).await;
    assert!(
        matches!(result, Err(StorageError::VersionMismatch { index: 0 })),
        "{result:?}"
    );

    let v3 = "{\"v\":3}";
    let any = write("k", owner, v3, VersionCheck::Any);
    let acks = store
        .write_objects(me, vec![any], NOW + 20)
        .await
        .expect("any");
    assert_eq!(
        (acks[0].create_time_ms, acks[0].update_time_ms),
        (NOW, NOW + 20)
    );
    let objects = store
        .read_objects(me, &[id("k", owner), id("nope", owner)])
        .await;
    let objects = objects.expect("read");
    assert_eq!(objects.len(), 1);
    assert_eq!(
        (objects[0].value.as_str(), objects[0].version.clone()),
        (v3, object_version(v3))
    );
    store.close().await;
}

pub async fn object_user_cannot_write_others(f: &dyn Fixture) {
    let store = f.open().await;
    let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
    let theirs = write("k", bob, "{}", VersionCheck::Any);
    let result = store
        .write_objects(Caller::User(alice), vec![theirs.clone()], NOW)
        .await;
    assert!(
        matches!(result, Err(StorageError::PermissionDenied { index: 0 })),
        "{result:?}"
    );
    assert!(
        store
            .read_objects(Caller::Server, &[id("k", bob)])
            .await
            .expect("read")
            .is_empty()
    );
    let result = store
        .delete_objects(Caller::User(alice), vec![delete("k", bob, None)])
        .await;
    assert!(
        matches!(result, Err(StorageError::PermissionDenied { index: 0 })),
        "{result:?}"
    );
    // The server writes on anyone's behalf.
    store
        .write_objects(Caller::Server, vec![theirs], NOW)
        .await
        .expect("server write");
    store.close().await;
}

pub async fn object_write_permission_zero_blocks_clients(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    let me = Caller::User(owner);
    let locked = with_perms(write("k", owner, "{}", VersionCheck::Any), 1, 0);
    store
        .write_objects(Caller::Server, vec![locked], NOW)
        .await
        .expect("server write");
    for check in [
        VersionCheck::Any,
        VersionCheck::Matches(object_version("{}")),
    ] {
        let attempt = write("k", owner, "{\"x\":1}", check);
        let result = store.write_objects(me, vec![attempt], NOW).await;
        assert!(
            matches!(result, Err(StorageError::PermissionDenied { index: 0 })),
            "{result:?}"
        );
    }
    let result = store
        .delete_objects(me, vec![delete("k", owner, None)])
        .await;
    assert!(
        matches!(result, Err(StorageError::PermissionDenied { index: 0 })),
        "{result:?}"
    );
    let objects = store
        .read_objects(me, &[id("k", owner)])
        .await
        .expect("read");
    assert_eq!(objects[0].value, "{}", "the locked object is unchanged");
    let server = write("k", owner, "{\"x\":2}", VersionCheck::Any);
    store
        .write_objects(Caller::Server, vec![server], NOW)
        .await
        .expect("server write");
    store
        .delete_objects(Caller::Server, vec![delete("k", owner, None)])
        .await
        .expect("delete");
    assert!(
        store
            .read_objects(Caller::Server, &[id("k", owner)])
            .await
            .expect("read")
            .is_empty()
    );
    store.close().await;
}

pub async fn object_read_visibility(f: &dyn Fixture) {
    let store = f.open().await;
    let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
    let writes = vec![
        with_perms(write("r0", alice, "{}", VersionCheck::Any), 0, 1),
        with_perms(write("r1", alice, "{}", VersionCheck::Any), 1, 1),
        with_perms(write("r2", alice, "{}", VersionCheck::Any), 2, 1),
    ];
    store
        .write_objects(Caller::Server, writes, NOW)
        .await
        .expect("write");
    let ids = [
        id("r2", alice),
        id("r0", alice),
        id("missing", alice),
        id("r1", alice),
    ];
    let seen = |objects: Vec<StorageObject>| keys(&objects);
    let owner = store
        .read_objects(Caller::User(alice), &ids)
        .await
        .expect("read");
    assert_eq!(seen(owner), vec!["r2", "r1"]);
    let other = store
        .read_objects(Caller::User(bob), &ids)
        .await
        .expect("read");
    assert_eq!(seen(other), vec!["r2"]);
    let server = store
        .read_objects(Caller::Server, &ids)
        .await
        .expect("read");
    assert_eq!(seen(server), vec!["r2", "r0", "r1"]);
    store.close().await;
}

pub async fn object_list_pages_without_gaps_or_dupes(f: &dyn Fixture) {
    let store = f.open().await;
    let mut owners = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    owners.sort();
    let mut expected = Vec::new();
    for owner in owners {
        let writes: Vec<_> = (0..40)
            .map(|n| {
                with_perms(
                    write(&format!("key-{n:03}"), owner, "{}", VersionCheck::Any),
                    2,
                    1,
                )
            })
            .collect();
        store
            .write_objects(Caller::Server, writes, NOW)
            .await
            .expect("write");
        expected.extend((0..40).map(|n| (owner, format!("key-{n:03}"))));
    }
    // Nakama's order: read, key, user_id (all are read 2 here).
    expected.sort_by(|a, b| (&a.1, a.0).cmp(&(&b.1, b.0)));
    for caller in [Caller::Server, Caller::User(Uuid::new_v4())] {
        let mut listed = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let page = store
                .list_objects(caller, C, None, 7, cursor.as_deref())
                .await
                .expect("list");
            assert!(page.objects.len() <= 7);
            listed.extend(page.objects.iter().map(|o| (o.user_id, o.key.clone())));
            pages += 1;
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
            assert!(pages < 100, "listing does not terminate");
        }
        assert_eq!(
            listed, expected,
            "ordered by (read, key, user_id), no gaps, no dupes"
        );
    }
    let empty = store
        .list_objects(Caller::Server, "other", None, 10, None)
        .await;
    let empty = empty.expect("list");
    assert!(empty.objects.is_empty() && empty.cursor.is_none());
    store.close().await;
}

pub async fn object_list_owner_filter_and_visibility(f: &dyn Fixture) {
    let store = f.open().await;
    let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
    let writes = vec![
        with_perms(write("a0", alice, "{}", VersionCheck::Any), 0, 1),
        with_perms(write("a1", alice, "{}", VersionCheck::Any), 1, 1),
        with_perms(write("a2", alice, "{}", VersionCheck::Any), 2, 1),
        with_perms(write("b1", bob, "{}", VersionCheck::Any), 1, 1),
        with_perms(write("b2", bob, "{}", VersionCheck::Any), 2, 1),
    ];
    store
        .write_objects(Caller::Server, writes, NOW)
        .await
        .expect("write");
    let list = |caller, owner| {
        let store = store.clone();
        async move {
            let page = store
                .list_objects(caller, C, owner, 100, None)
                .await
                .expect("list");
            keys(&page.objects).into_iter().collect::<BTreeSet<_>>()
        }
    };
    let set = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        list(Caller::User(alice), Some(alice)).await,
        set(&["a1", "a2"])
    );
    assert_eq!(list(Caller::User(alice), Some(bob)).await, set(&["b2"]));
    assert_eq!(list(Caller::User(alice), None).await, set(&["a2", "b2"]));
    assert_eq!(
        list(Caller::Server, Some(alice)).await,
        set(&["a0", "a1", "a2"])
    );
    assert_eq!(
        list(Caller::Server, None).await,
        set(&["a0", "a1", "a2", "b1", "b2"])
    );
    store.close().await;
}

pub async fn object_list_invalid_cursor(f: &dyn Fixture) {
    let store = f.open().await;
    for cursor in ["not a cursor!", "AAAA"] {
        let result = store
            .list_objects(Caller::Server, C, None, 10, Some(cursor))
            .await;
        assert!(
            matches!(result, Err(StorageError::Invalid { .. })),
            "{cursor}: {result:?}"
        );
    }
    store.close().await;
}

pub async fn object_delete_rules(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    let me = Caller::User(owner);
    // Server code may delete what is not there; with a version it is a version mismatch.
    store
        .delete_objects(Caller::Server, vec![delete("ghost", owner, None)])
        .await
        .expect("absent delete by server code");
    let result = store
        .delete_objects(
            Caller::Server,
            vec![delete("ghost", owner, Some("abc".into()))],
        )
        .await;
    assert!(
        matches!(result, Err(StorageError::VersionMismatch { index: 0 })),
        "{result:?}"
    );
    let result = store
        .delete_objects(me, vec![delete("ghost", owner, Some("abc".into()))])
        .await;
    assert!(
        matches!(result, Err(StorageError::VersionMismatch { index: 0 })),
        "{result:?}"
    );

    let value = "{\"a\":1}";
    store
        .write_objects(me, vec![write("k", owner, value, VersionCheck::Any)], NOW)
        .await
        .expect("write");
    let result = store
        .delete_objects(me, vec![delete("k", owner, Some("abc".into()))])
        .await;
    assert!(
        matches!(result, Err(StorageError::VersionMismatch { index: 0 })),
        "{result:?}"
    );
    assert_eq!(
        store
            .read_objects(me, &[id("k", owner)])
            .await
            .expect("read")
            .len(),
        1
    );
    let exact = delete("k", owner, Some(object_version(value)));
    store
        .delete_objects(me, vec![exact])
        .await
        .expect("delete by version");
    assert!(
        store
            .read_objects(me, &[id("k", owner)])
            .await
            .expect("read")
            .is_empty()
    );

    store
        .write_objects(me, vec![write("k2", owner, value, VersionCheck::Any)], NOW)
        .await
        .expect("write");
    store
        .delete_objects(me, vec![delete("k2", owner, None)])
        .await
        .expect("delete");
    assert!(
        store
            .read_objects(me, &[id("k2", owner)])
            .await
            .expect("read")
            .is_empty()
    );
    store.close().await;
}

pub async fn object_write_batch_is_atomic(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    let me = Caller::User(owner);
    let setup = vec![
        write("existing", owner, "{\"old\":1}", VersionCheck::Any),
        write("guard", owner, "{}", VersionCheck::Any),
    ];
    store.write_objects(me, setup, NOW).await.expect("write");
    let batch = vec![
        write("fresh", owner, "{}", VersionCheck::Any),
        write("existing", owner, "{\"new\":1}", VersionCheck::Any),
        write("guard", owner, "{}", VersionCheck::Absent),
    ];
    let result = store.write_objects(me, batch, NOW + 1).await;
    assert!(
        matches!(result, Err(StorageError::VersionMismatch { index: 2 })),
        "{result:?}"
    );
    let ids = [id("fresh", owner), id("existing", owner)];
    let objects = store.read_objects(me, &ids).await.expect("read");
    assert_eq!(
        keys(&objects),
        vec!["existing"],
        "the first write was rolled back"
    );
    assert_eq!(
        objects[0].value, "{\"old\":1}",
        "the second write was rolled back"
    );
    assert_eq!(objects[0].update_time_ms, NOW);
    store.close().await;
}

pub async fn object_delete_batch_is_atomic(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    let me = Caller::User(owner);
    let writes = vec![
        write("x", owner, "{}", VersionCheck::Any),
        write("y", owner, "{}", VersionCheck::Any),
    ];
    store.write_objects(me, writes, NOW).await.expect("write");
    let batch = vec![
        delete("x", owner, None),
        delete("y", owner, Some("wrong".into())),
    ];
    let result = store.delete_objects(me, batch).await;
    assert!(
        matches!(result, Err(StorageError::VersionMismatch { index: 1 })),
        "{result:?}"
    );
    let objects = store
        .read_objects(me, &[id("x", owner), id("y", owner)])
        .await
        .expect("read");
    assert_eq!(
        keys(&objects),
        vec!["x", "y"],
        "nothing of the batch was deleted"
    );
    store.close().await;
}

pub async fn object_batch_validation(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    for (read, write_perm) in [(3, 1), (1, 2)] {
        let bad = with_perms(write("k", owner, "{}", VersionCheck::Any), read, write_perm);
        let result = store.write_objects(Caller::Server, vec![bad], NOW).await;
        assert!(
            matches!(result, Err(StorageError::Invalid { .. })),
            "{result:?}"
        );
    }
    let twice = vec![
        write("k", owner, "{}", VersionCheck::Any),
        write("k", owner, "{}", VersionCheck::Any),
    ];
    let result = store.write_objects(Caller::Server, twice, NOW).await;
    assert!(
        matches!(result, Err(StorageError::Invalid { .. })),
        "{result:?}"
    );
    let twice = vec![delete("k", owner, None), delete("k", owner, None)];
    let result = store.delete_objects(Caller::Server, twice).await;
    assert!(
        matches!(result, Err(StorageError::Invalid { .. })),
        "{result:?}"
    );
    assert!(
        store
            .write_objects(Caller::Server, vec![], NOW)
            .await
            .expect("empty")
            .is_empty()
    );
    store
        .delete_objects(Caller::Server, vec![])
        .await
        .expect("empty");
    store.close().await;
}

/// Nakama refuses a client's delete that deletes nothing (it checks the rows affected); the
/// batch is all or nothing, so the objects before the missing one stay.
pub async fn object_client_delete_of_missing_object_is_refused(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    let me = Caller::User(owner);
    store
        .write_objects(me, vec![write("here", owner, "{}", VersionCheck::Any)], NOW)
        .await
        .expect("write");
    let result = store
        .delete_objects(
            me,
            vec![delete("here", owner, None), delete("ghost", owner, None)],
        )
        .await;
    assert!(
        matches!(result, Err(StorageError::NotFound { .. })),
        "{result:?}"
    );
    let still = store
        .read_objects(me, &[id("here", owner)])
        .await
        .expect("read");
    assert_eq!(
        keys(&still),
        vec!["here"],
        "nothing of the batch was deleted"
    );
    store.close().await;
}

/// Listings come in Nakama's order: read permission, then key, then owner; an owner's listing
/// (read, key). Paging with a cursor continues that order without gaps.
pub async fn object_list_in_nakama_order(f: &dyn Fixture) {
    let store = f.open().await;
    let mut owners = [Uuid::new_v4(), Uuid::new_v4()];
    owners.sort();
    let [low, high] = owners;
    let writes = vec![
        with_perms(write("b", high, "{}", VersionCheck::Any), 2, 1),
        with_perms(write("b", low, "{}", VersionCheck::Any), 2, 1),
        with_perms(write("a", high, "{}", VersionCheck::Any), 2, 1),
        with_perms(write("z", high, "{}", VersionCheck::Any), 1, 1),
        with_perms(write("c", high, "{}", VersionCheck::Any), 0, 1),
        with_perms(write("y", low, "{}", VersionCheck::Any), 1, 1),
    ];
    store
        .write_objects(Caller::Server, writes, NOW)
        .await
        .expect("write");
    let listed = |caller, owner, limit| {
        let store = store.clone();
        async move {
            let mut out = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..20 {
                let page = store
                    .list_objects(caller, C, owner, limit, cursor.as_deref())
                    .await
                    .expect("list");
                out.extend(page.objects.iter().map(|o| (o.key.clone(), o.user_id)));
                match page.cursor {
                    Some(next) => cursor = Some(next),
                    None => return out,
                }
            }
            panic!("listing does not terminate");
        }
    };
    let entries = |items: &[(&str, Uuid)]| {
        items
            .iter()
            .map(|(k, u)| (k.to_string(), *u))
            .collect::<Vec<_>>()
    };
    for limit in [1, 2, 100] {
        assert_eq!(
            listed(Caller::Server, None, limit).await,
            entries(&[
                ("c", high),
                ("y", low),
                ("z", high),
                ("a", high),
                ("b", low),
                ("b", high),
            ]),
            "all objects, limit {limit}"
        );
        assert_eq!(
            listed(Caller::User(high), Some(high), limit).await,
            entries(&[("z", high), ("a", high), ("b", high)]),
            "the owner's own listing, limit {limit}"
        );
        assert_eq!(
            listed(Caller::User(low), None, limit).await,
            entries(&[("a", high), ("b", low), ("b", high)]),
            "public objects, limit {limit}"
        );
    }
    store.close().await;
}
