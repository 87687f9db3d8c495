//! The console's wallet edit: an account update that carries a wallet replaces it outright in
//! the same statement as the other fields (no ledger row; a refused update changes nothing),
//! and a concurrent `update_wallets` is applied wholly before or wholly on top of it.

use std::sync::Arc;

use futures_util::future::join_all;
use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{AccountUpdate, Balances, Conflict, Storage, StorageError, WalletChange};

fn balances(pairs: &[(&str, i64)]) -> Balances {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

fn add(user_id: Uuid, pairs: &[(&str, i64)]) -> WalletChange {
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

async fn stored(store: &Arc<dyn Storage>, user_id: Uuid) -> crate::User {
    store
        .account(user_id)
        .await
        .expect("read")
        .expect("user")
        .user
}

fn set_wallet(pairs: &[(&str, i64)]) -> AccountUpdate {
    AccountUpdate {
        wallet: Some(balances(pairs)),
        ..AccountUpdate::default()
    }
}

pub async fn account_update_replaces_the_wallet_without_a_ledger_row(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    store
        .update_wallets(vec![add(alice, &[("gold", 5), ("gems", 2)])], true, NOW)
        .await
        .expect("fund");
    // Replaced, not merged: `gems` goes, `gold` is set, `coins` appears; the profile field
    // given with it lands in the same update.
    let update = AccountUpdate {
        display_name: Some("Alice".to_owned()),
        ..set_wallet(&[("gold", 100), ("coins", 0)])
    };
    store
        .update_account(alice, update, NOW + 1)
        .await
        .expect("update");
    let user = stored(&store, alice).await;
    assert_eq!(user.wallet, r#"{"coins":0,"gold":100}"#);
    assert_eq!(user.display_name, "Alice");
    assert_eq!(user.update_time_ms, NOW + 1);
    let ledger = store.list_ledger(alice, 10, None).await.expect("ledger");
    assert_eq!(ledger.items.len(), 1, "only the funding change is recorded");
    // An update without a wallet leaves it alone; an empty wallet empties it.
    let rename = AccountUpdate {
        location: Some("Oslo".to_owned()),
        ..AccountUpdate::default()
    };
    store
        .update_account(alice, rename, NOW + 2)
        .await
        .expect("update");
    assert_eq!(
        stored(&store, alice).await.wallet,
        r#"{"coins":0,"gold":100}"#
    );
    store
        .update_account(alice, set_wallet(&[]), NOW + 3)
        .await
        .expect("empty");
    assert_eq!(stored(&store, alice).await.wallet, "{}");
    // Wallet changes carry on from the replaced wallet.
    let results = store
        .update_wallets(vec![add(alice, &[("gold", 1)])], false, NOW + 4)
        .await
        .expect("add");
    assert_eq!(results[0].previous, Balances::new());
    assert_eq!(results[0].updated, balances(&[("gold", 1)]));
}

pub async fn account_update_with_a_wallet_is_all_or_nothing(f: &dyn Fixture) {
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    user(&store, "bob").await;
    store
        .update_wallets(vec![add(alice, &[("gold", 5)])], false, NOW)
        .await
        .expect("fund");
    // A taken username refuses the whole update: the wallet stays as it was.
    let update = AccountUpdate {
        username: Some("bob".to_owned()),
        ..set_wallet(&[("gold", 1000)])
    };
    let err = store
        .update_account(alice, update, NOW + 1)
        .await
        .expect_err("taken");
    assert!(
        matches!(
            err,
            StorageError::Conflict {
                what: Conflict::Username
            }
        ),
        "{err:?}"
    );
    let user = stored(&store, alice).await;
    assert_eq!(
        (user.username.as_str(), user.wallet.as_str()),
        ("alice", r#"{"gold":5}"#)
    );
    assert_eq!(user.update_time_ms, NOW);
    let err = store
        .update_account(Uuid::new_v4(), set_wallet(&[("gold", 1)]), NOW + 1)
        .await
        .expect_err("unknown user");
    assert!(matches!(err, StorageError::NotFound { .. }), "{err:?}");
}

/// 120 concurrent +1 changes of one wallet with a replace to 1,000 among them. Whatever the
/// order, nothing is lost: the changes that saw the replaced wallet (their `previous` is at
/// least 1,000) are exactly the ones on top of it, and the others are gone with the replace.
pub async fn wallet_replace_and_concurrent_changes_lose_nothing(f: &dyn Fixture) {
    const CHANGES: usize = 120;
    let store = f.open().await;
    let alice = user(&store, "alice").await;
    let tasks = (0..=CHANGES).map(|i| {
        let store = Arc::clone(&store);
        async move {
            if i == CHANGES / 2 {
                store
                    .update_account(alice, set_wallet(&[("gold", 1000)]), NOW)
                    .await
                    .map(|()| None)
            } else {
                store
                    .update_wallets(vec![add(alice, &[("gold", 1)])], true, NOW)
                    .await
                    .map(|mut results| results.pop())
            }
        }
    });
    let mut after_replace = 0;
    let mut changes = 0;
    for result in join_all(tasks).await {
        if let Some(result) = result.expect("every write applies") {
            changes += 1;
            let before = result.previous.get("gold").copied().unwrap_or(0);
            let after = result.updated.get("gold").copied().unwrap_or(0);
            assert_eq!(after, before + 1, "each change sees the latest wallet");
            if before >= 1000 {
                after_replace += 1;
            }
        }
    }
    assert_eq!(changes, CHANGES);
    let wallet = crate::parse_balances(&stored(&store, alice).await.wallet).expect("wallet");
    assert_eq!(wallet, balances(&[("gold", 1000 + after_replace)]));
    // Every +1 change was recorded; the replace was not.
    let mut recorded = 0;
    let mut cursor = None;
    loop {
        let page = store.list_ledger(alice, 64, cursor).await.expect("ledger");
        recorded += page.items.len();
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(recorded, CHANGES);
}
