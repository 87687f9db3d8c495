//! `/v2/iap`: purchase validation (Facebook Instant, checked locally), Nakama's refusals of an
//! unconfigured store, subscription lookup and listing. Store calls are covered against fakes
//! in `metafi-core`'s unit tests.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use axum::http::{Method, StatusCode};
use metafi_core::IapConfig;
use metafi_core::iap::sign_facebook_instant;
use metafi_storage::NewSubscription;
use serde_json::json;
use support::{Api, assert_error};

const SECRET: &str = "fb-app-secret";

async fn api() -> Api {
    let mut iap = IapConfig::default();
    iap.facebook_instant.app_secret = SECRET.into();
    Api::with_iap(iap).await
}

#[tokio::test]
async fn facebook_instant_purchase_is_recorded_then_seen_before() {
    let api = api().await;
    let ada = api.sign_up("&username=ada").await;
    let payment = r#"{"algorithm":"HMAC-SHA256","product_id":"gems_10","purchase_time":1700000000,"purchase_token":"fb-token-1","payment_id":"p1"}"#;
    let body = json!({ "signed_request": sign_facebook_instant(SECRET, payment) });
    let (status, first) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/purchase/facebookinstant",
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let p = &first["validated_purchases"][0];
    assert_eq!(p["user_id"], ada.id.to_string());
    assert_eq!(p["product_id"], "gems_10");
    assert_eq!(p["transaction_id"], "fb-token-1");
    assert_eq!(p["store"], 3, "FACEBOOK_INSTANT_STORE as a number");
    assert_eq!(p["environment"], 2, "PRODUCTION");
    assert_eq!(p["purchase_time"], "2023-11-14T22:13:20Z");
    assert_eq!(p["provider_response"], payment);
    assert!(p["create_time"].is_string());
    assert_eq!(p.get("seen_before"), None, "false is omitted");

    let bob = api.sign_up("&username=bob").await;
    let (_, again) = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/iap/purchase/facebookinstant",
            Some(body),
        )
        .await;
    assert_eq!(
        again["validated_purchases"][0]["seen_before"], true,
        "{again}"
    );

    let not_kept = json!({
        "signed_request": sign_facebook_instant(SECRET, r#"{"product_id":"x","purchase_token":"fb-2"}"#),
        "persist": false,
    });
    let (_, answer) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/purchase/facebookinstant",
            Some(not_kept),
        )
        .await;
    assert_eq!(
        answer["validated_purchases"][0].get("create_time"),
        None,
        "{answer}"
    );
    assert!(
        api.store()
            .purchase_by_transaction_id("fb-2")
            .await
            .unwrap()
            .is_none(),
        "persist=false records nothing"
    );
}

#[tokio::test]
async fn forged_and_empty_requests_are_refused() {
    let api = api().await;
    let ada = api.sign_up("").await;
    let forged =
        json!({ "signed_request": sign_facebook_instant("guess", r#"{"purchase_token":"t"}"#) });
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/purchase/facebookinstant",
            Some(forged),
        )
        .await;
    assert_error(&answer, 500, 2, "signedRequest verification failed");
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/purchase/facebookinstant",
            Some(json!({})),
        )
        .await;
    assert_error(&answer, 400, 3, "SignedRequest cannot be empty.");
    let answer = api
        .call(
            Method::POST,
            "/v2/iap/purchase/facebookinstant",
            None,
            Some(json!({})),
        )
        .await;
    assert_eq!(answer.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn unconfigured_stores_answer_failed_precondition() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    for (path, body, message) in [
        (
            "apple",
            json!({"receipt": "cmVjZWlwdA=="}),
            "Apple IAP is not configured.",
        ),
        (
            "google",
            json!({"purchase": "{}"}),
            "Google IAP is not configured.",
        ),
        (
            "huawei",
            json!({"purchase": "{}", "signature": "s"}),
            "Huawei IAP is not configured.",
        ),
        (
            "facebookinstant",
            json!({"signed_request": "a.b"}),
            "Facebook Instant IAP is not configured.",
        ),
    ] {
        let answer = api
            .as_user(
                &ada,
                Method::POST,
                &format!("/v2/iap/purchase/{path}"),
                Some(body),
            )
            .await;
        assert_error(&answer, 400, 9, message);
    }
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/subscription/apple",
            Some(json!({"receipt": "r"})),
        )
        .await;
    assert_error(&answer, 400, 9, "Apple IAP is not configured.");
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/purchase/apple",
            Some(json!({})),
        )
        .await;
    assert_error(&answer, 400, 3, "Receipt cannot be empty.");
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/purchase/samsung",
            Some(json!({"purchase_id": ""})),
        )
        .await;
    // Samsung needs no credentials: only the purchase id is checked before Samsung is asked.
    assert_error(&answer, 400, 3, "Purchase ID cannot be empty.");
}

#[tokio::test]
async fn subscriptions_are_listed_and_found_by_product_for_their_owner_only() {
    let api = api().await;
    let ada = api.sign_up("").await;
    let bob = api.sign_up("").await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for (id, product, expire) in [("s1", "vip", now + 3_600_000), ("s2", "gold", now - 1)] {
        api.store()
            .upsert_subscription(
                NewSubscription {
                    user_id: ada.id,
                    store: 1,
                    product_id: product.into(),
                    original_transaction_id: id.into(),
                    raw_response: "{}".into(),
                    raw_notification: String::new(),
                    purchase_time_ms: if id == "s1" { now - 10 } else { now - 20 },
                    expire_time_ms: expire,
                    refund_time_ms: 0,
                    environment: 2,
                },
                now,
            )
            .await
            .unwrap();
    }
    let (status, vip) = api
        .as_user(&ada, Method::GET, "/v2/iap/subscription/vip", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{vip}");
    assert_eq!(vip["original_transaction_id"], "s1");
    assert_eq!(vip["active"], true);
    assert_eq!(vip["store"], 1);
    let (_, gold) = api
        .as_user(&ada, Method::GET, "/v2/iap/subscription/gold", None)
        .await;
    assert_eq!(
        gold.get("active"),
        None,
        "an expired subscription is not active"
    );
    let answer = api
        .as_user(&bob, Method::GET, "/v2/iap/subscription/vip", None)
        .await;
    assert_error(&answer, 404, 5, "subscription not found");

    let (status, page) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/subscription",
            Some(json!({"limit": 1})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(
        page["validated_subscriptions"][0]["original_transaction_id"],
        "s1"
    );
    let cursor = page["cursor"].as_str().unwrap().to_owned();
    let (_, rest) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/subscription",
            Some(json!({"limit": 1, "cursor": cursor})),
        )
        .await;
    assert_eq!(
        rest["validated_subscriptions"][0]["original_transaction_id"],
        "s2"
    );
    assert_eq!(rest.get("cursor"), None, "{rest}");
    let answer = api
        .as_user(
            &bob,
            Method::POST,
            "/v2/iap/subscription",
            Some(json!({"cursor": cursor})),
        )
        .await;
    assert_error(&answer, 500, 2, "subscriptions list cursor invalid");
    let (_, empty) = api
        .as_user(&bob, Method::POST, "/v2/iap/subscription", Some(json!({})))
        .await;
    assert_eq!(empty, json!({}));
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/subscription",
            Some(json!({"limit": 101})),
        )
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Invalid limit - limit must be between 1 and 1000.",
    );
}

#[tokio::test]
async fn samsung_purchase_is_checked_with_samsungs_receipt_api() {
    let app = axum::Router::new().route(
        "/iap/v6/receipt",
        axum::routing::get(
            |q: axum::extract::Query<std::collections::HashMap<String, String>>| async move {
                match q.get("purchaseID").map(String::as_str) {
                    Some("sp-1") => json!({"status": "success", "mode": "TEST",
                        "itemId": "coins", "purchaseDate": "2024-01-02 03:04:05"})
                    .to_string(),
                    _ => json!({"status": "fail", "errorCode": 9135,
                        "errorMessage": "Not found"})
                    .to_string(),
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut iap = IapConfig::default();
    iap.samsung.receipt_url = format!("{base}/iap/v6/receipt");
    let api = Api::with_iap(iap).await;
    let ada = api.sign_up("").await;
    let (status, body) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/purchase/samsung",
            Some(json!({"purchase_id": "sp-1"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let p = &body["validated_purchases"][0];
    assert_eq!(p["user_id"], ada.id.to_string());
    assert_eq!(p["product_id"], "coins");
    assert_eq!(p["transaction_id"], "sp-1");
    assert_eq!(p["store"], 4);
    assert_eq!(p["environment"], 1);
    assert_eq!(p["purchase_time"], "2024-01-02T03:04:05Z");
    let answer = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/iap/purchase/samsung",
            Some(json!({"purchase_id": "unknown"})),
        )
        .await;
    assert_error(
        &answer,
        500,
        2,
        "Samsung IAP: purchase validation failed: Not found (errorCode=9135), status=200",
    );
}
