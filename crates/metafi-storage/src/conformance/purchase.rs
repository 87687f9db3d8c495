//! Purchases and subscriptions: `seen_before` on re-validation, the first owner kept, rows
//! outliving their user, newest-first paging per user and for everyone, subscription upserts
//! that keep what a later validation leaves empty.

use std::sync::Arc;

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{
    IapCursor, NewPurchase, NewSubscription, Purchase, Storage, StorageError, Subscription,
};

/// Generates one `#[tokio::test]` per purchase conformance case (beside
/// [`conformance_tests!`](crate::conformance_tests), so the two lists merge apart).
#[macro_export]
macro_rules! purchase_conformance_tests {
    ($fixture:expr) => {
        $crate::conformance_tests!(@cases $fixture;
            purchase_revalidation_is_seen_before_and_keeps_the_owner,
            purchase_batch_keeps_the_last_of_each_transaction,
            purchase_get_by_transaction_id,
            purchase_list_pages_newest_first,
            purchase_outlives_its_user,
            purchase_text_is_checked,
            purchase_concurrent_validations_one_is_first,
            subscription_upsert_keeps_what_is_left_empty,
            subscription_by_product_and_listing,
        );
    };
}

async fn user(store: &dyn Storage, name: &str) -> Uuid {
    let new = new_user(name, device(&format!("{name}-device")));
    let id = new.id;
    store.create_user(new).await.expect("create user");
    id
}

fn purchase(user_id: Uuid, transaction_id: &str, purchase_time_ms: i64) -> NewPurchase {
    NewPurchase {
        user_id,
        store: 1,
        product_id: "gems_100".into(),
        transaction_id: transaction_id.into(),
        raw_response: r#"{"ok":true}"#.into(),
        purchase_time_ms,
        refund_time_ms: 0,
        environment: 2,
    }
}

fn subscription(user_id: Uuid, id: &str, product: &str, purchase_time_ms: i64) -> NewSubscription {
    NewSubscription {
        user_id,
        store: 0,
        product_id: product.into(),
        original_transaction_id: id.into(),
        raw_response: r#"{"r":1}"#.into(),
        raw_notification: String::new(),
        purchase_time_ms,
        expire_time_ms: purchase_time_ms + 1_000,
        refund_time_ms: 0,
        environment: 1,
    }
}

pub async fn purchase_revalidation_is_seen_before_and_keeps_the_owner(f: &dyn Fixture) {
    let store = f.open().await;
    let (a, b) = (user(&*store, "alice").await, user(&*store, "bob").await);
    let first = store
        .upsert_purchases(vec![purchase(a, "t1", NOW - 50)], NOW)
        .await
        .expect("first");
    assert_eq!(first.len(), 1);
    assert!(!first[0].seen_before);
    assert_eq!(first[0].purchase.user_id, Some(a));
    assert_eq!(first[0].purchase.create_time_ms, NOW);
    assert_eq!(first[0].purchase.update_time_ms, NOW);
    assert_eq!(first[0].purchase.raw_response, r#"{"ok":true}"#);

    let mut again = purchase(b, "t1", NOW - 10);
    again.product_id = "other".into();
    again.refund_time_ms = NOW + 5;
    let second = store
        .upsert_purchases(vec![again], NOW + 7)
        .await
        .expect("second");
    assert!(
        second[0].seen_before,
        "a known transaction id is seen before"
    );
    let p = &second[0].purchase;
    assert_eq!(p.user_id, Some(a), "the first owner is kept");
    assert_eq!(p.product_id, "gems_100");
    assert_eq!(p.purchase_time_ms, NOW - 50);
    assert_eq!(p.create_time_ms, NOW);
    assert_eq!(p.update_time_ms, NOW + 7);
    assert_eq!(
        p.refund_time_ms,
        NOW + 5,
        "the refund time follows the store"
    );
}

pub async fn purchase_batch_keeps_the_last_of_each_transaction(f: &dyn Fixture) {
    let store = f.open().await;
    let a = user(&*store, "alice").await;
    let mut last = purchase(a, "t1", NOW);
    last.product_id = "last".into();
    let out = store
        .upsert_purchases(
            vec![purchase(a, "t1", NOW), purchase(a, "t2", NOW), last],
            NOW,
        )
        .await
        .expect("batch");
    let ids: Vec<&str> = out
        .iter()
        .map(|u| u.purchase.transaction_id.as_str())
        .collect();
    assert_eq!(ids, ["t1", "t2"]);
    assert_eq!(out[0].purchase.product_id, "last");
    assert!(out.iter().all(|u| !u.seen_before));
    assert!(
        store
            .upsert_purchases(Vec::new(), NOW)
            .await
            .expect("empty")
            .is_empty()
    );
}

pub async fn purchase_get_by_transaction_id(f: &dyn Fixture) {
    let store = f.open().await;
    let a = user(&*store, "alice").await;
    store
        .upsert_purchases(vec![purchase(a, "t1", NOW)], NOW)
        .await
        .expect("upsert");
    let got = store
        .purchase_by_transaction_id("t1")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(got.user_id, Some(a));
    assert_eq!(got.store, 1);
    assert_eq!(got.environment, 2);
    assert_eq!(got.refund_time_ms, 0);
    assert_eq!(
        store.purchase_by_transaction_id("nope").await.expect("get"),
        None
    );
}

async fn walk(store: &dyn Storage, user_id: Option<Uuid>, limit: usize) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut after: Option<IapCursor> = None;
    loop {
        let page = store
            .list_purchases(user_id, limit, after.take())
            .await
            .expect("list");
        pages.push(
            page.items
                .iter()
                .map(|p: &Purchase| p.transaction_id.clone())
                .collect(),
        );
        match page.next {
            Some(next) => after = Some(next),
            None => return pages,
        }
    }
}

pub async fn purchase_list_pages_newest_first(f: &dyn Fixture) {
    let store = f.open().await;
    let (a, b) = (user(&*store, "alice").await, user(&*store, "bob").await);
    // t2 and t3 share a purchase time: the transaction id orders them.
    let batch = vec![
        purchase(a, "t1", NOW - 3),
        purchase(a, "t2", NOW - 2),
        purchase(a, "t3", NOW - 2),
        purchase(a, "t4", NOW - 1),
        purchase(a, "t5", NOW),
        purchase(b, "u1", NOW - 1),
    ];
    store.upsert_purchases(batch, NOW).await.expect("seed");
    assert_eq!(
        walk(&*store, Some(a), 2).await,
        [vec!["t5", "t4"], vec!["t3", "t2"], vec!["t1"]]
    );
    assert_eq!(
        walk(&*store, Some(a), 5).await,
        [vec!["t5", "t4", "t3", "t2", "t1"]],
        "an exact last page has no next cursor"
    );
    assert_eq!(walk(&*store, Some(b), 10).await, [vec!["u1"]]);
    assert_eq!(
        walk(&*store, None, 4).await,
        [vec!["t5", "u1", "t4", "t3"], vec!["t2", "t1"]]
    );
    assert_eq!(
        walk(&*store, Some(Uuid::new_v4()), 3).await,
        [Vec::<String>::new()]
    );
}

pub async fn purchase_outlives_its_user(f: &dyn Fixture) {
    let store = f.open().await;
    let a = user(&*store, "alice").await;
    store
        .upsert_purchases(vec![purchase(a, "t1", NOW)], NOW)
        .await
        .expect("upsert");
    store
        .upsert_subscription(subscription(a, "s1", "vip", NOW), NOW)
        .await
        .expect("subscription");
    assert!(store.delete_user(a).await.expect("delete"));
    let p = store
        .purchase_by_transaction_id("t1")
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(p.user_id, None, "the owner is cleared, the receipt stays");
    let s = store
        .subscription_by_original_transaction_id("s1")
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(s.user_id, None);
    let again = store
        .upsert_purchases(vec![purchase(a, "t1", NOW)], NOW + 1)
        .await;
    // A deleted user cannot own a new receipt; the known one is still recognised.
    match again {
        Ok(out) => assert!(out[0].seen_before && out[0].purchase.user_id.is_none()),
        Err(e) => panic!("re-validating a known receipt failed: {e}"),
    }
}

pub async fn purchase_text_is_checked(f: &dyn Fixture) {
    let store = f.open().await;
    let a = user(&*store, "alice").await;
    let empty = store
        .upsert_purchases(vec![purchase(a, "", NOW)], NOW)
        .await;
    assert!(matches!(empty, Err(StorageError::Invalid { .. })));
    let nul = store
        .upsert_purchases(vec![purchase(a, "t\0", NOW)], NOW)
        .await;
    assert!(matches!(nul, Err(StorageError::NulCharacter { .. })));
    let long = store
        .upsert_purchases(vec![purchase(a, &"x".repeat(513), NOW)], NOW)
        .await;
    assert!(matches!(long, Err(StorageError::TooLong { max: 512, .. })));
    assert!(
        store
            .list_purchases(None, 10, None)
            .await
            .expect("list")
            .items
            .is_empty(),
        "nothing was written"
    );
}

pub async fn purchase_concurrent_validations_one_is_first(f: &dyn Fixture) {
    let store: Arc<dyn Storage> = f.open().await;
    let a = user(&*store, "alice").await;
    let tasks: Vec<_> = (0..8)
        .map(|n| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                store
                    .upsert_purchases(vec![purchase(a, "race", NOW)], NOW + n)
                    .await
                    .expect("upsert")
            })
        })
        .collect();
    let mut first = 0;
    for task in tasks {
        let out = task.await.expect("join");
        if !out[0].seen_before {
            first += 1;
        }
    }
    assert_eq!(first, 1, "exactly one validation records the purchase");
}

pub async fn subscription_upsert_keeps_what_is_left_empty(f: &dyn Fixture) {
    let store = f.open().await;
    let (a, b) = (user(&*store, "alice").await, user(&*store, "bob").await);
    let first = store
        .upsert_subscription(subscription(a, "s1", "vip", NOW - 100), NOW)
        .await
        .expect("first");
    assert_eq!(first.user_id, Some(a));
    assert_eq!(first.raw_notification, "{}", "empty text is stored as {{}}");
    assert_eq!((first.create_time_ms, first.update_time_ms), (NOW, NOW));

    let mut refunded = subscription(b, "s1", "vip_plus", NOW - 1);
    refunded.raw_response = String::new();
    refunded.raw_notification = r#"{"n":1}"#.into();
    refunded.refund_time_ms = NOW + 3;
    refunded.expire_time_ms = NOW + 9_000;
    let second = store
        .upsert_subscription(refunded, NOW + 5)
        .await
        .expect("second");
    assert_eq!(second.user_id, Some(a), "the first owner is kept");
    assert_eq!(second.product_id, "vip_plus");
    assert_eq!(second.purchase_time_ms, NOW - 100);
    assert_eq!(second.expire_time_ms, NOW + 9_000);
    assert_eq!(
        second.raw_response, r#"{"r":1}"#,
        "an empty response keeps the stored one"
    );
    assert_eq!(second.raw_notification, r#"{"n":1}"#);
    assert_eq!(second.refund_time_ms, NOW + 3);
    assert_eq!(second.update_time_ms, NOW + 5);

    let third = store
        .upsert_subscription(subscription(a, "s1", "vip_plus", NOW), NOW + 6)
        .await
        .expect("third");
    assert_eq!(third.refund_time_ms, NOW + 3, "a refund is never undone");
}

pub async fn subscription_by_product_and_listing(f: &dyn Fixture) {
    let store = f.open().await;
    let (a, b) = (user(&*store, "alice").await, user(&*store, "bob").await);
    for s in [
        subscription(a, "s1", "vip", NOW - 3),
        subscription(a, "s2", "gold", NOW - 2),
        subscription(a, "s3", "vip", NOW - 1),
        subscription(b, "s4", "vip", NOW),
    ] {
        store.upsert_subscription(s, NOW).await.expect("upsert");
    }
    let vip = store
        .subscription_by_product_id(a, "vip")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(vip.original_transaction_id, "s3", "the latest one");
    assert_eq!(
        store
            .subscription_by_product_id(a, "none")
            .await
            .expect("get"),
        None
    );
    let page = store
        .list_subscriptions(Some(a), 2, None)
        .await
        .expect("list");
    let ids = |items: &[Subscription]| {
        items
            .iter()
            .map(|s| s.original_transaction_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&page.items), ["s3", "s2"]);
    let rest = store
        .list_subscriptions(Some(a), 2, page.next)
        .await
        .expect("list");
    assert_eq!(ids(&rest.items), ["s1"]);
    assert_eq!(rest.next, None);
    let all = store.list_subscriptions(None, 10, None).await.expect("all");
    assert_eq!(ids(&all.items), ["s4", "s3", "s2", "s1"]);
}
