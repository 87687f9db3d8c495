//! Wallets, the wallet ledger and the multi-store update: the refusal below zero changes
//! nothing, concurrent changes lose nothing and never overdraw, a multi update is all or
//! nothing.

use std::sync::Arc;

use futures_util::future::join_all;
use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{
    AccountUpdate, Balances, LedgerCursor, MultiUpdate, ObjectDelete, ObjectId, ObjectWrite,
    Storage, StorageError, VersionCheck, WalletChange,
};

fn balances(pairs: &[(&str, i64)]) -> Balances {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

fn change(user_id: Uuid, pairs: &[(&str, i64)]) -> WalletChange {
    WalletChange {
        user_id,
        changeset: balances(pairs),
        metadata: "{}".to_owned(),
        ledger_id: Uuid::new_v4(),
    }
}

async fn user(store: &Arc<dyn Storage>, name: &str) -> Uuid {
    let new = new_user(name, device(&format!("dev-{name}")));
    store.create_user(new.clone()).await.expect("create user");
    new.id
}

async fn wallet(store: &Arc<dyn Storage>, user_id: Uuid) -> Balances {
    let account = store.account(user_id).await.expect("read").expect("user");
    crate::parse_balances(&account.user.wallet).expect("wallet json")
}

pub async fn wallet_update_applies_and_records_the_ledger(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    let mut first = change(alice, &[("gold", 10), ("gems", 2)]);
    first.metadata = r#"{"reason":"quest"}"#.to_owned();
    let results = store
        .update_wallets(vec![first.clone()], true, NOW)
        .await
        .expect("update");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].user_id, alice);
    assert_eq!(results[0].previous, Balances::new());
    assert_eq!(results[0].updated, balances(&[("gems", 2), ("gold", 10)]));
    let results = store
        .update_wallets(vec![change(alice, &[("gold", -4)])], false, NOW + 1)
        .await
        .expect("spend");
    assert_eq!(results[0].previous, balances(&[("gems", 2), ("gold", 10)]));
    assert_eq!(results[0].updated, balances(&[("gems", 2), ("gold", 6)]));
    assert_eq!(
        wallet(&store, alice).await,
        balances(&[("gems", 2), ("gold", 6)])
    );
    let account = store.account(alice).await.expect("read").expect("user");
    assert_eq!(account.user.wallet, r#"{"gems":2,"gold":6}"#);
    assert_eq!(account.user.update_time_ms, NOW + 1);
    // Only the first change asked for a ledger row.
    let page = store.list_ledger(alice, 10, None).await.expect("ledger");
    assert_eq!(page.items.len(), 1);
    let item = &page.items[0];
    assert_eq!(item.id, first.ledger_id);
    assert_eq!(item.user_id, alice);
    assert_eq!(item.changeset, first.changeset);
    assert_eq!(item.metadata, r#"{"reason":"quest"}"#);
    assert_eq!((item.create_time_ms, item.update_time_ms), (NOW, NOW));
    assert_eq!(page.next, None);
}

pub async fn wallet_below_zero_is_refused_and_changes_nothing(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    let bob = user(&store, "bob").await;
    store
        .update_wallets(vec![change(bob, &[("gold", 3)])], false, NOW)
        .await
        .expect("fund bob");
    let err = store
        .update_wallets(
            vec![change(alice, &[("gold", 5)]), change(bob, &[("gold", -4)])],
            true,
            NOW + 1,
        )
        .await
        .expect_err("bob would go negative");
    match err {
        StorageError::WalletNegative {
            user_id,
            path,
            current,
            amount,
        } => assert_eq!(
            (user_id, path.as_str(), current, amount),
            (bob, "gold", 3, -4)
        ),
        other => panic!("expected WalletNegative, got {other:?}"),
    }
    assert_eq!(wallet(&store, alice).await, Balances::new());
    assert_eq!(wallet(&store, bob).await, balances(&[("gold", 3)]));
    for id in [alice, bob] {
        let page = store.list_ledger(id, 10, None).await.expect("ledger");
        assert!(page.items.is_empty(), "no ledger row for a refused change");
    }
}

pub async fn wallet_changes_of_unknown_users_are_skipped(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    let ghost = Uuid::new_v4();
    let results = store
        .update_wallets(
            vec![change(ghost, &[("gold", 1)]), change(alice, &[("gold", 1)])],
            true,
            NOW,
        )
        .await
        .expect("update");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].user_id, alice);
    let page = store.list_ledger(ghost, 10, None).await.expect("ledger");
    assert!(page.items.is_empty());
}

/// 200 concurrent changes of one wallet (+2 and −1 alternately): every one is applied.
pub async fn wallet_concurrent_changes_lose_nothing(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    store
        .update_wallets(vec![change(alice, &[("gold", 100)])], false, NOW)
        .await
        .expect("fund");
    let tasks = (0..200).map(|i| {
        let store = Arc::clone(&store);
        let amount = if i % 2 == 0 { 2 } else { -1 };
        async move {
            store
                .update_wallets(vec![change(alice, &[("gold", amount)])], true, NOW)
                .await
        }
    });
    for result in join_all(tasks).await {
        result.expect("every change applies");
    }
    assert_eq!(wallet(&store, alice).await, balances(&[("gold", 200)]));
    let mut seen = 0;
    let mut cursor = None;
    loop {
        let page = store.list_ledger(alice, 64, cursor).await.expect("ledger");
        seen += page.items.len();
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, 200, "one ledger row per change");
}

/// 120 concurrent spends of 1 from a balance of 50: exactly 50 succeed, never below zero.
pub async fn wallet_concurrent_spends_never_overdraw(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    let bob = user(&store, "bob").await;
    store
        .update_wallets(vec![change(alice, &[("gold", 50)])], false, NOW)
        .await
        .expect("fund");
    // Half of the spends move the coin to bob in the same update (two users, both locked).
    let tasks = (0..120).map(|i| {
        let store = Arc::clone(&store);
        let mut changes = vec![change(alice, &[("gold", -1)])];
        if i % 2 == 0 {
            changes.insert(0, change(bob, &[("gold", 1)]));
        }
        async move { store.update_wallets(changes, false, NOW).await }
    });
    let mut succeeded = 0;
    let mut moved = 0;
    for (i, result) in join_all(tasks).await.into_iter().enumerate() {
        match result {
            Ok(_) => {
                succeeded += 1;
                if i % 2 == 0 {
                    moved += 1;
                }
            }
            Err(StorageError::WalletNegative { .. }) => {}
            Err(other) => panic!("unexpected error {other:?}"),
        }
    }
    assert_eq!(succeeded, 50);
    assert_eq!(wallet(&store, alice).await, balances(&[("gold", 0)]));
    let bob_gold = wallet(&store, bob).await.get("gold").copied().unwrap_or(0);
    assert_eq!(
        bob_gold, moved,
        "bob got a coin exactly for each applied transfer"
    );
}

pub async fn wallet_ledger_pages_newest_first(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    let bob = user(&store, "bob").await;
    let mut ids = Vec::new();
    for i in 0..7 {
        let c = change(alice, &[("gold", i + 1)]);
        ids.push((NOW + i / 2, c.ledger_id));
        store
            .update_wallets(vec![c, change(bob, &[("gold", 1)])], true, NOW + i / 2)
            .await
            .expect("update");
    }
    // Newest first; within one time, by id descending.
    ids.sort_by(|a, b| b.cmp(a));
    let mut listed = Vec::new();
    let mut cursor: Option<LedgerCursor> = None;
    loop {
        let page = store.list_ledger(alice, 3, cursor).await.expect("page");
        assert!(page.items.len() <= 3);
        assert!(page.items.iter().all(|item| item.user_id == alice));
        listed.extend(page.items.iter().map(|i| (i.create_time_ms, i.id)));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(listed, ids);
    let empty = store.list_ledger(alice, 0, None).await.expect("limit 0");
    assert!(empty.items.is_empty() && empty.next.is_none());
}

pub async fn wallet_ledger_update_merges_metadata(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    let mut c = change(alice, &[("gold", 1)]);
    c.metadata = r#"{"a":1,"b":2}"#.to_owned();
    store
        .update_wallets(vec![c.clone()], true, NOW)
        .await
        .expect("update");
    let item = store
        .update_ledger(c.ledger_id, r#"{"b":3,"c":4}"#.to_owned(), NOW + 5)
        .await
        .expect("update ledger")
        .expect("found");
    assert_eq!(item.metadata, r#"{"a":1,"b":3,"c":4}"#);
    assert_eq!((item.create_time_ms, item.update_time_ms), (NOW, NOW + 5));
    assert_eq!(item.changeset, c.changeset);
    let page = store.list_ledger(alice, 10, None).await.expect("ledger");
    assert_eq!(page.items[0].metadata, r#"{"a":1,"b":3,"c":4}"#);
    let missing = store
        .update_ledger(Uuid::new_v4(), "{}".to_owned(), NOW)
        .await
        .expect("unknown id");
    assert!(missing.is_none());
}

pub async fn wallet_ledger_goes_with_its_user(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    store
        .update_wallets(vec![change(alice, &[("gold", 1)])], true, NOW)
        .await
        .expect("update");
    assert!(store.delete_user(alice).await.expect("delete"));
    let page = store.list_ledger(alice, 10, None).await.expect("ledger");
    assert!(page.items.is_empty());
}

fn object(user_id: Uuid, key: &str, version: VersionCheck) -> ObjectWrite {
    ObjectWrite {
        collection: "inventory".to_owned(),
        key: key.to_owned(),
        user_id,
        value: r#"{"sword":1}"#.to_owned(),
        version,
        permission_read: 1,
        permission_write: 1,
    }
}

pub async fn multi_update_applies_everything_together(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    store
        .write_objects(
            crate::Caller::Server,
            vec![object(alice, "old", VersionCheck::Any)],
            NOW,
        )
        .await
        .expect("seed");
    let update = MultiUpdate {
        accounts: vec![
            (
                alice,
                AccountUpdate {
                    display_name: Some("Alice".to_owned()),
                    metadata: Some(r#"{"level":2}"#.to_owned()),
                    ..AccountUpdate::default()
                },
            ),
            // Unknown users are skipped, not refused.
            (
                Uuid::new_v4(),
                AccountUpdate {
                    display_name: Some("Nobody".to_owned()),
                    ..AccountUpdate::default()
                },
            ),
        ],
        writes: vec![object(alice, "new", VersionCheck::Absent)],
        deletes: vec![ObjectDelete {
            collection: "inventory".to_owned(),
            key: "old".to_owned(),
            user_id: alice,
            version: None,
        }],
        wallets: vec![change(alice, &[("gold", 7)])],
        ledger: true,
    };
    let result = store.multi_update(update, NOW + 1).await.expect("multi");
    assert_eq!(result.acks.len(), 1);
    assert_eq!(result.acks[0].key, "new");
    assert_eq!(result.wallets.len(), 1);
    assert_eq!(result.wallets[0].updated, balances(&[("gold", 7)]));
    let account = store.account(alice).await.expect("read").expect("user");
    assert_eq!(account.user.display_name, "Alice");
    assert_eq!(account.user.metadata, r#"{"level":2}"#);
    assert_eq!(account.user.wallet, r#"{"gold":7}"#);
    let ids = |key: &str| ObjectId {
        collection: "inventory".to_owned(),
        key: key.to_owned(),
        user_id: alice,
    };
    let objects = store
        .read_objects(crate::Caller::Server, &[ids("old"), ids("new")])
        .await
        .expect("read");
    let keys: Vec<&str> = objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, vec!["new"]);
    let page = store.list_ledger(alice, 10, None).await.expect("ledger");
    assert_eq!(page.items.len(), 1);
}

pub async fn multi_update_is_all_or_nothing(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    let bob = user(&store, "bob").await;
    let rename = |name: &str| {
        vec![(
            alice,
            AccountUpdate {
                display_name: Some(name.to_owned()),
                ..AccountUpdate::default()
            },
        )]
    };
    // The wallet change fails last: the account update and the write before it are undone.
    let err = store
        .multi_update(
            MultiUpdate {
                accounts: rename("Changed"),
                writes: vec![object(alice, "new", VersionCheck::Any)],
                wallets: vec![change(alice, &[("gold", -1)])],
                ledger: true,
                ..MultiUpdate::default()
            },
            NOW,
        )
        .await
        .expect_err("negative wallet");
    assert!(
        matches!(err, StorageError::WalletNegative { .. }),
        "{err:?}"
    );
    // A failed version check undoes the account update and stops the wallet change.
    let err = store
        .multi_update(
            MultiUpdate {
                accounts: rename("Changed"),
                writes: vec![object(alice, "new", VersionCheck::Matches("nope".into()))],
                wallets: vec![change(alice, &[("gold", 5)])],
                ..MultiUpdate::default()
            },
            NOW,
        )
        .await
        .expect_err("version check");
    assert!(
        matches!(err, StorageError::VersionMismatch { index: 0 }),
        "{err:?}"
    );
    // A taken username fails the whole.
    let err = store
        .multi_update(
            MultiUpdate {
                accounts: vec![(
                    alice,
                    AccountUpdate {
                        username: Some("bob".to_owned()),
                        ..AccountUpdate::default()
                    },
                )],
                wallets: vec![change(alice, &[("gold", 5)])],
                ..MultiUpdate::default()
            },
            NOW,
        )
        .await
        .expect_err("username taken");
    assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
    let account = store.account(alice).await.expect("read").expect("user");
    assert_eq!(account.user.display_name, "");
    assert_eq!(account.user.username, "alice");
    assert_eq!(account.user.wallet, "{}");
    let objects = store
        .read_objects(
            crate::Caller::Server,
            &[ObjectId {
                collection: "inventory".to_owned(),
                key: "new".to_owned(),
                user_id: alice,
            }],
        )
        .await
        .expect("read");
    assert!(objects.is_empty());
    assert!(
        store
            .list_ledger(alice, 10, None)
            .await
            .expect("ledger")
            .items
            .is_empty()
    );
    assert_eq!(wallet(&store, bob).await, Balances::new());
}
