//! Store notifications: App Store Server Notifications v2 at Nakama's console paths, signed at
//! test time by a chain the server is configured to trust.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use axum::http::{Method, StatusCode};
use metafi_core::IapConfig;
use metafi_core::iap::test_chain::TestChain;
use serde_json::{Value, json};
use support::Api;

const ENDPOINT: &str = "apple-hook-1";

async fn api(chain: &TestChain) -> Api {
    let mut iap = IapConfig::default();
    iap.apple.root_certificates = vec![chain.root.clone()];
    iap.apple.notifications_endpoint_id = ENDPOINT.into();
    Api::with_iap(iap).await
}

fn notification(chain: &TestChain, kind: &str, transaction: Value) -> Value {
    let payload = json!({
        "notificationType": kind,
        "notificationUUID": "6f0b0a53-4c5a-4c59-9a2e-4f7f2b1f0c11",
        "version": "2.0",
        "data": {
            "bundleId": "com.example.game",
            "signedTransactionInfo": chain.sign(&transaction.to_string()),
        },
    });
    json!({ "signedPayload": chain.sign(&payload.to_string()) })
}

fn subscription(user: &str) -> Value {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    json!({
        "transactionId": "3000000002",
        "originalTransactionId": "3000000001",
        "productId": "vip.monthly",
        "environment": "Sandbox",
        "purchaseDate": now_ms - 60_000,
        "originalPurchaseDate": now_ms - 60_000,
        "expiresDate": now_ms + 30 * 86_400_000,
        "appAccountToken": user,
        "type": "Auto-Renewable Subscription",
    })
}

#[tokio::test]
async fn a_signed_subscription_notification_records_the_subscription() {
    let chain = TestChain::new(2035);
    let api = api(&chain).await;
    let ada = api.sign_up("&username=ada").await;
    let body = notification(&chain, "SUBSCRIBED", subscription(&ada.id.to_string()));
    let (status, _) = api
        .call(
            Method::POST,
            &format!("/v2/console/apple/notifications/{ENDPOINT}"),
            None,
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, sub) = api
        .as_user(&ada, Method::GET, "/v2/iap/subscription/vip.monthly", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{sub}");
    assert_eq!(sub["original_transaction_id"], "3000000001");
    assert_eq!(sub["active"], true);
    assert_eq!(sub["environment"], 1, "SANDBOX");
    assert!(
        sub["provider_notification"]
            .as_str()
            .unwrap()
            .contains("signedPayload")
    );
    // The older path serves the same handler.
    let renewal = notification(&chain, "DID_RENEW", subscription(&ada.id.to_string()));
    let (status, _) = api
        .call(
            Method::POST,
            &format!("/v2/console/apple/subscriptions/{ENDPOINT}"),
            None,
            Some(renewal),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn another_id_is_not_found_and_a_bad_signature_is_retried() {
    let chain = TestChain::new(2035);
    let api = api(&chain).await;
    let ada = api.sign_up("&username=ada").await;
    let body = notification(&chain, "SUBSCRIBED", subscription(&ada.id.to_string()));
    let (status, _) = api
        .call(
            Method::POST,
            "/v2/console/apple/notifications/someone-else",
            None,
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Signed by a chain the server does not trust: 500, so Apple sends it again.
    let stranger = TestChain::new(2035);
    let body = notification(&stranger, "SUBSCRIBED", subscription(&ada.id.to_string()));
    let (status, _) = api
        .call(
            Method::POST,
            &format!("/v2/console/apple/notifications/{ENDPOINT}"),
            None,
            Some(body),
        )
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    let (status, _) = api
        .as_user(&ada, Method::GET, "/v2/iap/subscription/vip.monthly", None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nothing was recorded");
}

#[tokio::test]
async fn without_an_endpoint_id_nothing_is_served() {
    let chain = TestChain::new(2035);
    let mut iap = IapConfig::default();
    iap.apple.root_certificates = vec![chain.root.clone()];
    let api = Api::with_iap(iap).await;
    let (status, _) = api
        .call(
            Method::POST,
            "/v2/console/apple/notifications/",
            None,
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = api
        .call(
            Method::POST,
            "/v2/console/apple/notifications/x",
            None,
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
