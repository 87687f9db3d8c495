//! Google Play real-time developer notifications at Nakama's console paths, against a fake
//! Publisher API.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use axum::http::{Method, StatusCode};
use metafi_core::IapConfig;
use metafi_core::iap::test_google::{FakeGooglePlay, push};
use serde_json::json;
use support::Api;

const ENDPOINT: &str = "google-hook-1";

async fn api(play: &FakeGooglePlay) -> Api {
    let mut iap = IapConfig::default();
    play.configure(&mut iap.google);
    iap.google.notifications_endpoint_id = ENDPOINT.into();
    Api::with_iap(iap).await
}

fn rfc3339_in_days(days: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    metafi_proto::wkt::Timestamp::from_millis(now + days * 86_400_000).to_rfc3339()
}

fn renewal() -> serde_json::Value {
    push(&json!({
        "version": "1.0",
        "packageName": "com.example.game",
        "eventTimeMillis": "1700000000000",
        "subscriptionNotification": {
            "version": "1.0", "notificationType": 2, "purchaseToken": "sub-token-1"
        }
    }))
}

#[tokio::test]
async fn a_renewal_records_the_subscription_on_both_paths() {
    let play = FakeGooglePlay::start().await;
    let api = api(&play).await;
    let ada = api.sign_up("&username=ada").await;
    play.set_subscription(
        "sub-token-1",
        json!({
            "lineItems": [{"productId": "vip.monthly", "expiryTime": rfc3339_in_days(30)}],
            "externalAccountIdentifiers": {"obfuscatedExternalAccountId": ada.id.to_string()},
            "testPurchase": {},
        }),
    );
    for path in ["notifications", "subscriptions"] {
        let (status, _) = api
            .call(
                Method::POST,
                &format!("/v2/console/google/{path}/{ENDPOINT}"),
                None,
                Some(renewal()),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{path}");
    }
    let (status, sub) = api
        .as_user(&ada, Method::GET, "/v2/iap/subscription/vip.monthly", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{sub}");
    assert_eq!(sub["original_transaction_id"], "sub-token-1");
    assert_eq!(sub["store"], 1, "GOOGLE_PLAY_STORE");
    assert_eq!(sub["environment"], 1, "SANDBOX");
    assert_eq!(sub["active"], true);
    assert!(
        sub["provider_notification"]
            .as_str()
            .unwrap()
            .contains("subscriptions/play")
    );
}

#[tokio::test]
async fn bad_bodies_and_failed_lookups_are_retried_other_ids_not_found() {
    let play = FakeGooglePlay::start().await;
    let api = api(&play).await;
    let (status, _) = api
        .call(
            Method::POST,
            "/v2/console/google/notifications/someone-else",
            None,
            Some(renewal()),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // The token is unknown to the store: 500, so Pub/Sub sends it again.
    let (status, _) = api
        .call(
            Method::POST,
            &format!("/v2/console/google/notifications/{ENDPOINT}"),
            None,
            Some(renewal()),
        )
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    for body in [json!({}), json!({"message": {"data": "%%%"}}), json!([1])] {
        let (status, _) = api
            .call(
                Method::POST,
                &format!("/v2/console/google/notifications/{ENDPOINT}"),
                None,
                Some(body.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    }
    // A test notification is acknowledged.
    let test =
        push(&json!({"packageName": "com.example.game", "testNotification": {"version": "1.0"}}));
    let (status, _) = api
        .call(
            Method::POST,
            &format!("/v2/console/google/notifications/{ENDPOINT}"),
            None,
            Some(test),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn without_an_endpoint_id_nothing_is_served() {
    let play = FakeGooglePlay::start().await;
    let mut iap = IapConfig::default();
    play.configure(&mut iap.google);
    let api = Api::with_iap(iap).await;
    for path in [
        "/v2/console/google/notifications/x",
        "/v2/console/google/subscriptions/x",
    ] {
        let (status, _) = api.call(Method::POST, path, None, Some(renewal())).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
}
