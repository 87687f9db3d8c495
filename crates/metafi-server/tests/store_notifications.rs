//! App Store notifications on a real node: the trusted root comes from a PEM file
//! (`iap.apple.root_certificates`), the endpoint from `iap.apple.notifications_endpoint_id`,
//! and a JavaScript module's `registerSubscriptionNotificationApple` function runs with the
//! subscription, the provider payload and the notification type, as Nakama calls it.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_core::iap::test_chain::TestChain;
use metafi_testkit::{Http, TestNode};
use serde_json::json;

const JS: &str = r#"
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerSubscriptionNotificationApple(function (ctx, logger, nk, subscription, providerPayload, notificationType) {
    var payload = JSON.parse(providerPayload);
    nk.storageWrite([{ collection: "notified", key: "apple", userId: subscription.userId, value: {
      type: notificationType, mode: ctx.executionMode, product: subscription.productId,
      original: subscription.originalTransactionId, active: subscription.active,
      bundle: payload.bundleId, transaction_product: payload.transactionInfo.productId
    }, permissionRead: 2, permissionWrite: 0 }]);
  });
}
"#;

#[tokio::test]
async fn the_subscription_notification_function_runs_with_nakamas_arguments() {
    let chain = TestChain::new(2035);
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("notify.js"), JS).unwrap();
    let root = dir.path().join("root.pem");
    std::fs::write(&root, chain.root_pem()).unwrap();
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules.display().to_string();
        raw.iap.apple.root_certificates = vec![root.display().to_string()];
        raw.iap.apple.notifications_endpoint_id = "hook".into();
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
    let transaction = json!({
        "transactionId": "1", "originalTransactionId": "100", "productId": "vip",
        "environment": "Sandbox", "purchaseDate": now_ms, "originalPurchaseDate": now_ms,
        "expiresDate": now_ms + 86_400_000, "appAccountToken": user,
    });
    let payload = json!({
        "notificationType": "DID_RENEW",
        "data": { "bundleId": "com.example", "signedTransactionInfo": chain.sign(&transaction.to_string()) },
    });
    let body = json!({ "signedPayload": chain.sign(&payload.to_string()) });
    let answer = http
        .send(
            console
                .post("/v2/console/apple/notifications/hook")
                .json(&body),
        )
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    // The client API's port does not serve them.
    let on_api = http
        .send(
            http.post("/v2/console/apple/notifications/hook")
                .json(&body),
        )
        .await;
    assert_eq!(on_api.status, 404);
    let mut value = None;
    for _ in 0..100 {
        let read = http
            .send(http.post("/v2/storage").bearer_auth(&token).json(
                &json!({ "object_ids": [{ "collection": "notified", "key": "apple", "user_id": user }] }),
            ))
            .await;
        if let Some(text) = read.body["objects"][0]["value"].as_str() {
            value = Some(serde_json::from_str::<serde_json::Value>(text).unwrap());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let value = value.expect("the notification function never ran");
    assert_eq!(value["type"], "RENEWED");
    assert_eq!(value["mode"], "subscription_notification_apple");
    assert_eq!(value["product"], "vip");
    assert_eq!(value["original"], "100");
    assert_eq!(value["active"], true);
    assert_eq!(value["bundle"], "com.example");
    assert_eq!(value["transaction_product"], "vip");
    s.stop().await;
}
