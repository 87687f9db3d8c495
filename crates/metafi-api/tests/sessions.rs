//! Sessions over the REST edge without a socket: logout rules and what a refresh carries
//! (moved here from server-booting tests; restarts and shutdown stay with the server's).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use axum::http::{Method, StatusCode};
use serde_json::json;
use support::{Api, SERVER_KEY};

/// Asserts Nakama's error shape with the given HTTP status and gRPC code.
#[track_caller]
fn assert_error(answer: &(StatusCode, serde_json::Value), status: u16, code: i64) {
    let (got, body) = answer;
    assert_eq!(got.as_u16(), status, "body: {body}");
    assert_eq!(body["code"], code, "body: {body}");
    assert!(body["message"].is_string(), "body: {body}");
    assert_eq!(body["error"], body["message"]);
}

async fn account(api: &Api, token: &str) -> (StatusCode, serde_json::Value) {
    api.call(
        Method::GET,
        "/v2/account",
        Some(&format!("Bearer {token}")),
        None,
    )
    .await
}

#[tokio::test]
async fn logout_without_tokens_ends_every_session_of_the_user() {
    let api = Api::new().await;
    let device = format!("device-{}", uuid::Uuid::new_v4());
    let a = api.sign_up_raw(&device, "").await.1["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let b = api.sign_up_raw(&device, "").await.1["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let stranger = api.sign_up("").await;
    let logout = api
        .call(
            Method::POST,
            "/v2/session/logout",
            Some(&format!("Bearer {a}")),
            Some(json!({})),
        )
        .await;
    assert_eq!(logout.0, StatusCode::OK);
    assert_error(&account(&api, &a).await, 401, 16);
    assert_error(&account(&api, &b).await, 401, 16);
    assert_eq!(
        account(&api, &stranger.token).await.0,
        StatusCode::OK,
        "other users keep their sessions"
    );
    // Signing in again, even within the same second, gives a working session.
    let c = api.sign_up_raw(&device, "").await.1["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(account(&api, &c).await.0, StatusCode::OK);
}

#[tokio::test]
async fn logout_refuses_tokens_of_another_user() {
    let api = Api::new().await;
    let mine = api.sign_up("").await;
    let theirs = api.sign_up("").await;
    let reply = api
        .as_user(
            &mine,
            Method::POST,
            "/v2/session/logout",
            Some(json!({"token": theirs.token})),
        )
        .await;
    assert_error(&reply, 400, 3);
    assert_eq!(account(&api, &theirs.token).await.0, StatusCode::OK);
}

#[tokio::test]
async fn refresh_carries_the_new_username() {
    let api = Api::new().await;
    let player = api.sign_up("").await;
    let name = format!("n{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let update = api
        .as_user(
            &player,
            Method::PUT,
            "/v2/account",
            Some(json!({"username": name})),
        )
        .await;
    assert_eq!(update.0, StatusCode::OK, "{}", update.1);
    let refreshed = api
        .call(
            Method::POST,
            "/v2/account/session/refresh",
            Some(SERVER_KEY),
            Some(json!({"token": player.refresh_token})),
        )
        .await;
    assert_eq!(refreshed.0, StatusCode::OK, "{}", refreshed.1);
    let claims = claims_of(refreshed.1["token"].as_str().unwrap());
    assert_eq!(claims["usn"], name.as_str());
}

fn claims_of(token: &str) -> serde_json::Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}
