//! Google Play real-time developer notifications on a real node: the service account and the
//! Publisher API from `[iap.google]` (a fake Play), the endpoint from
//! `iap.google.notifications_endpoint_id`, and a JavaScript module's
//! `registerSubscriptionNotificationGoogle` / `registerPurchaseNotificationGoogle` functions
//! run with the subscription or purchase, the provider payload and the notification type, as
//! Nakama calls them.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_core::iap::test_google::{FakeGooglePlay, push};
use metafi_testkit::{Http, TestNode};
use serde_json::json;

const JS: &str = r#"
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerSubscriptionNotificationGoogle(function (ctx, logger, nk, subscription, providerPayload, notificationType) {
    var payload = JSON.parse(providerPayload);
    nk.storageWrite([{ collection: "notified", key: "google_sub", userId: subscription.userId, value: {
      type: notificationType, mode: ctx.executionMode, product: subscription.productId,
      original: subscription.originalTransactionId, active: subscription.active,
      store: subscription.store, line_product: payload.lineItems[0].productId
    }, permissionRead: 2, permissionWrite: 0 }]);
  });
  initializer.registerPurchaseNotificationGoogle(function (ctx, logger, nk, purchase, providerPayload, notificationType) {
    var payload = JSON.parse(providerPayload);
    nk.storageWrite([{ collection: "notified", key: "google_buy", userId: purchase.userId, value: {
      type: notificationType, mode: ctx.executionMode, product: purchase.productId,
      transaction: purchase.transactionId, refunded: !!purchase.refundTime,
      line_product: payload.productLineItem[0].productId
    }, permissionRead: 2, permissionWrite: 0 }]);
  });
}
"#;

async fn read_own(http: &Http, token: &str, user: &str, key: &str) -> serde_json::Value {
    for _ in 0..100 {
        let read = http
            .send(http.post("/v2/storage").bearer_auth(token).json(
                &json!({ "object_ids": [{ "collection": "notified", "key": key, "user_id": user }] }),
            ))
            .await;
        if let Some(text) = read.body["objects"][0]["value"].as_str() {
            return serde_json::from_str(text).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the notification function never wrote {key}");
}

#[tokio::test]
async fn the_google_notification_functions_run_with_nakamas_arguments() {
    let play = FakeGooglePlay::start().await;
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("notify.js"), JS).unwrap();
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules.display().to_string();
        raw.iap.google.client_email = "svc@example.iam".into();
        raw.iap.google.private_key = play.private_key().to_owned();
        raw.iap.google.token_url = format!("{}/token", play.base);
        raw.iap.google.publisher_url = play.base.clone();
        raw.iap.google.notifications_endpoint_id = "hook".into();
    })
    .await;
    let http = Http::new(&s.base);
    // Store notifications arrive on the console listener, as on Nakama's console port.
    let console = Http::new(s.console.as_deref().expect("the console listens"));
    let (token, _) = http.new_session().await;
    let account = http.send(http.get("/v2/account").bearer_auth(&token)).await;
    let user = account.body["user"]["id"].as_str().unwrap().to_owned();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let expiry = metafi_proto::wkt::Timestamp::from_millis(now_ms + 86_400_000).to_rfc3339();
    play.set_subscription(
        "sub-1",
        json!({
            "lineItems": [{"productId": "vip", "expiryTime": expiry}],
            "externalAccountIdentifiers": {"obfuscatedExternalAccountId": user},
        }),
    );
    let body = push(&json!({
        "packageName": "com.example",
        "subscriptionNotification": {"notificationType": 4, "purchaseToken": "sub-1"},
    }));
    let answer = http
        .send(
            console
                .post("/v2/console/google/notifications/hook")
                .json(&body),
        )
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let value = read_own(&http, &token, &user, "google_sub").await;
    assert_eq!(value["type"], "SUBSCRIBED");
    assert_eq!(value["mode"], "subscription_notification_google");
    assert_eq!(value["product"], "vip");
    assert_eq!(value["original"], "sub-1");
    assert_eq!(value["active"], true);
    assert_eq!(value["store"], "GOOGLE_PLAY_STORE");
    assert_eq!(value["line_product"], "vip");

    play.set_product(
        "buy-1",
        json!({
            "productLineItem": [{"productId": "gems"}],
            "obfuscatedExternalAccountId": user,
            "purchaseCompletionTime": "2023-11-14T22:13:20Z",
        }),
    );
    let body = push(&json!({
        "packageName": "com.example",
        "voidedPurchaseNotification": {"purchaseToken": "buy-1", "productType": 2, "refundType": 1},
    }));
    let answer = http
        .send(
            console
                .post("/v2/console/google/subscriptions/hook")
                .json(&body),
        )
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let value = read_own(&http, &token, &user, "google_buy").await;
    assert_eq!(value["type"], "REFUNDED");
    assert_eq!(value["mode"], "purchase_notification_google");
    assert_eq!(value["product"], "gems");
    assert_eq!(value["transaction"], "buy-1");
    assert_eq!(value["refunded"], true);
    assert_eq!(value["line_product"], "gems");
    s.stop().await;
}
