//! The service's rules over a real (SQLite) store: Nakama's texts, the cursor, multi update.

use std::sync::Arc;

use metafi_proto::Code;
use metafi_storage::{AccountUpdate, Balances, NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

use super::*;
use crate::ManualClock;
use crate::objects::{DeleteInput, WriteInput};

const T0: i64 = 1_700_000_000_000;

struct Setup {
    wallets: Wallets,
    store: Arc<dyn Storage>,
    clock: Arc<ManualClock>,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = SqliteConfig {
        path: dir.path().join("metafi.db"),
        ..SqliteConfig::default()
    };
    let store: Arc<dyn Storage> = Arc::new(SqliteStorage::open(config).expect("open"));
    let clock = Arc::new(ManualClock::new(T0));
    Setup {
        wallets: Wallets::new(store.clone(), clock.clone()),
        store,
        clock,
        _dir: dir,
    }
}

async fn user(store: &Arc<dyn Storage>, name: &str) -> Uuid {
    let id = Uuid::new_v4();
    store
        .create_user(NewUser {
            id,
            username: name.to_owned(),
            identity: NewIdentity::Device {
                id: format!("device-{name}"),
            },
            now_ms: T0,
        })
        .await
        .expect("create user");
    id
}

fn gold(user_id: Uuid, amount: i64) -> WalletUpdate {
    WalletUpdate {
        user_id,
        changeset: Balances::from([("gold".to_owned(), amount)]),
        metadata: "{}".to_owned(),
    }
}

#[tokio::test]
async fn negative_balances_and_unknown_users_get_nakamas_answers() {
    let s = setup().await;
    let alice = user(&s.store, "alice").await;
    let result = s
        .wallets
        .update_one(gold(alice, 5), false)
        .await
        .expect("fund");
    assert_eq!(result.updated.get("gold"), Some(&5));
    let err = s
        .wallets
        .update_one(gold(alice, -6), false)
        .await
        .expect_err("overdraw");
    assert_eq!(err.code(), Code::InvalidArgument);
    assert_eq!(
        err.client_message(),
        "wallet update rejected negative value at path 'gold'"
    );
    let err = s
        .wallets
        .update_one(gold(Uuid::new_v4(), 1), false)
        .await
        .expect_err("unknown user");
    assert_eq!(err.client_message(), "user not found");
    let mut bad = gold(alice, 1);
    bad.metadata = "[1]".to_owned();
    assert!(s.wallets.update_one(bad, true).await.is_err());
}

#[tokio::test]
async fn ledger_pages_with_cursors_bound_to_their_user() {
    let s = setup().await;
    let alice = user(&s.store, "alice").await;
    let bob = user(&s.store, "bob").await;
    for i in 0..5 {
        s.clock.advance_ms(1);
        s.wallets
            .update(vec![gold(alice, i), gold(bob, 1)], true)
            .await
            .expect("update");
    }
    let first = s.wallets.ledger_list(alice, 2, "").await.expect("page 1");
    assert_eq!(first.items.len(), 2);
    assert_eq!(
        first.items[0].changeset.get("gold"),
        Some(&4),
        "newest first"
    );
    let cursor = first.cursor.expect("more pages");
    let err = s
        .wallets
        .ledger_list(bob, 2, &cursor)
        .await
        .expect_err("another user's cursor");
    assert_eq!(err.client_message(), "wallet ledger cursor invalid");
    let second = s
        .wallets
        .ledger_list(alice, 2, &cursor)
        .await
        .expect("page 2");
    let third = s
        .wallets
        .ledger_list(alice, 2, &second.cursor.expect("page 3"))
        .await
        .expect("page 3");
    assert_eq!(third.items.len(), 1);
    assert_eq!(third.cursor, None);
    assert_eq!(third.items[0].changeset.get("gold"), Some(&0));
    let item = s
        .wallets
        .ledger_update(third.items[0].id, r#"{"note":"first"}"#.to_owned())
        .await
        .expect("ledger update");
    assert_eq!(item.metadata, r#"{"note":"first"}"#);
    let err = s
        .wallets
        .ledger_update(Uuid::new_v4(), "{}".to_owned())
        .await
        .expect_err("unknown item");
    assert_eq!(err.client_message(), "sql: no rows in result set");
}

fn write(user_id: Uuid, key: &str, version: &str) -> WriteInput {
    WriteInput {
        collection: "c".to_owned(),
        key: key.to_owned(),
        user_id,
        value: r#"{"v":1}"#.to_owned(),
        version: version.to_owned(),
        ..WriteInput::default()
    }
}

#[tokio::test]
async fn multi_update_refusals_use_nakamas_texts() {
    let s = setup().await;
    let alice = user(&s.store, "alice").await;
    user(&s.store, "bob").await;
    let message = |input: MultiUpdateInput| {
        let wallets = &s.wallets;
        async move {
            wallets
                .multi_update(input)
                .await
                .expect_err("refused")
                .client_message()
                .into_owned()
        }
    };
    assert_eq!(
        message(MultiUpdateInput {
            writes: vec![write(alice, "k", "not-the-version")],
            ..MultiUpdateInput::default()
        })
        .await,
        "Storage write rejected - version check failed."
    );
    assert_eq!(
        message(MultiUpdateInput {
            writes: vec![write(alice, "k", "")],
            deletes: vec![DeleteInput {
                collection: "c".to_owned(),
                key: "k".to_owned(),
                user_id: alice,
                version: "not-the-version".to_owned(),
            }],
            ..MultiUpdateInput::default()
        })
        .await,
        "Storage delete rejected - not found, version check failed, or permission denied."
    );
    assert_eq!(
        message(MultiUpdateInput {
            accounts: vec![(
                alice,
                AccountUpdate {
                    username: Some("bob".to_owned()),
                    ..AccountUpdate::default()
                }
            )],
            ..MultiUpdateInput::default()
        })
        .await,
        "Username is already in use."
    );
    assert_eq!(
        message(MultiUpdateInput {
            accounts: vec![(alice, AccountUpdate::default())],
            ..MultiUpdateInput::default()
        })
        .await,
        "No fields to update."
    );
    assert_eq!(
        message(MultiUpdateInput {
            writes: vec![write(alice, "k2", "")],
            wallets: vec![gold(alice, -1)],
            ..MultiUpdateInput::default()
        })
        .await,
        "wallet update rejected negative value at path 'gold'"
    );
    let done = s
        .wallets
        .multi_update(MultiUpdateInput {
            writes: vec![write(alice, "k3", "*")],
            wallets: vec![gold(alice, 3)],
            ledger: true,
            ..MultiUpdateInput::default()
        })
        .await
        .expect("applies");
    assert_eq!(done.acks.len(), 1);
    assert_eq!(done.wallets[0].updated.get("gold"), Some(&3));
    let account = s.store.account(alice).await.expect("read").expect("user");
    assert_eq!(account.user.wallet, r#"{"gold":3}"#);
}
