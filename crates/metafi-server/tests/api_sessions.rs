//! Accounts and sessions end to end over HTTP: races, logout across restarts, refresh rules.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use metafi_testkit::{Http, TestNode, assert_error};

#[tokio::test]
async fn concurrent_sign_ups_of_one_device_create_one_account() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let device = format!("device-{}", uuid::Uuid::new_v4());
    let replies =
        futures_util::future::join_all((0..50).map(|_| http.auth_device(&device, true))).await;
    let mut created = 0;
    let mut user_ids = std::collections::HashSet::new();
    for reply in &replies {
        assert_eq!(reply.status, 200, "{}", reply.body);
        if reply.body["created"] == true {
            created += 1;
        }
        user_ids.insert(user_id_of(reply.body["token"].as_str().unwrap()));
    }
    assert_eq!(created, 1, "exactly one request created the account");
    assert_eq!(
        user_ids.len(),
        1,
        "every request signed in to the same user"
    );
    server.stop().await;
}

#[tokio::test]
async fn logout_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (token, refresh) = http.new_session().await;
    let logout = http
        .send(
            http.post("/v2/session/logout")
                .bearer_auth(&token)
                .json(&serde_json::json!({"token": token, "refresh_token": refresh})),
        )
        .await;
    assert_eq!(logout.status, 200, "{}", logout.body);
    server.stop().await;

    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    assert_error(
        &http.send(http.get("/v2/account").bearer_auth(&token)).await,
        401,
        16,
    );
    let refreshed = http
        .send(
            http.post("/v2/account/session/refresh")
                .basic_auth("defaultkey", Some(""))
                .json(&serde_json::json!({"token": refresh})),
        )
        .await;
    assert_error(&refreshed, 401, 16);
    server.stop().await;
}

#[tokio::test]
async fn logout_without_tokens_ends_every_session_of_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let device = format!("device-{}", uuid::Uuid::new_v4());
    let a = http.auth_device(&device, true).await.body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let b = http.auth_device(&device, true).await.body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (stranger, _) = http.new_session().await;
    let logout = http
        .send(
            http.post("/v2/session/logout")
                .bearer_auth(&a)
                .json(&serde_json::json!({})),
        )
        .await;
    assert_eq!(logout.status, 200);
    assert_error(
        &http.send(http.get("/v2/account").bearer_auth(&a)).await,
        401,
        16,
    );
    assert_error(
        &http.send(http.get("/v2/account").bearer_auth(&b)).await,
        401,
        16,
    );
    assert_eq!(
        http.send(http.get("/v2/account").bearer_auth(&stranger))
            .await
            .status,
        200,
        "other users keep their sessions"
    );
    // Signing in again, even within the same second, gives a working session.
    let c = http.auth_device(&device, true).await.body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        http.send(http.get("/v2/account").bearer_auth(&c))
            .await
            .status,
        200
    );
    server.stop().await;
}

#[tokio::test]
async fn logout_refuses_tokens_of_another_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (mine, _) = http.new_session().await;
    let (theirs, _) = http.new_session().await;
    let reply = http
        .send(
            http.post("/v2/session/logout")
                .bearer_auth(&mine)
                .json(&serde_json::json!({"token": theirs})),
        )
        .await;
    assert_error(&reply, 400, 3);
    assert_eq!(
        http.send(http.get("/v2/account").bearer_auth(&theirs))
            .await
            .status,
        200
    );
    server.stop().await;
}

#[tokio::test]
async fn refresh_carries_the_new_username() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    let (token, refresh) = http.new_session().await;
    let name = format!("n{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let update = http
        .send(
            http.put("/v2/account")
                .bearer_auth(&token)
                .json(&serde_json::json!({"username": name})),
        )
        .await;
    assert_eq!(update.status, 200, "{}", update.body);
    let refreshed = http
        .send(
            http.post("/v2/account/session/refresh")
                .basic_auth("defaultkey", Some(""))
                .json(&serde_json::json!({"token": refresh})),
        )
        .await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let claims = claims_of(refreshed.body["token"].as_str().unwrap());
    assert_eq!(claims["usn"], name.as_str());
    server.stop().await;
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_requests() {
    let dir = tempfile::tempdir().unwrap();
    // A costly hash makes the email sign-up long enough to be in flight when shutdown starts.
    let mut server = TestNode::start_in(dir.path(), |raw| raw.accounts.bcrypt_cost = 13).await;
    let http = Http::new(&server.base);
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let in_flight = tokio::spawn({
        let http = http.clone();
        async move {
            http.send(
                http.post("/v2/account/authenticate/email?create=true")
                    .basic_auth("defaultkey", Some(""))
                    .json(&serde_json::json!({"email": email, "password": "password123"})),
            )
            .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let stopping = server.begin_shutdown();
    let reply = in_flight.await.unwrap();
    assert_eq!(
        reply.status, 200,
        "in-flight request completed: {}",
        reply.body
    );
    assert_eq!(reply.body["created"], true);
    stopping.await.unwrap();
    // And nothing listens any more.
    assert!(
        reqwest::get(format!("{}/healthcheck", http.base))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn metrics_count_requests_per_route() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let http = Http::new(&server.base);
    http.new_session().await;
    let text = reqwest::get(format!("{}/metrics", server.metrics.clone().unwrap()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("metafi_http_requests_total")
                && l.contains(r#"route="/v2/account/authenticate/device""#)),
        "{text}"
    );
    assert!(
        text.contains("metafi_http_request_duration_seconds_bucket"),
        "{text}"
    );
    server.stop().await;
}

fn claims_of(token: &str) -> serde_json::Value {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn user_id_of(token: &str) -> String {
    claims_of(token)["uid"].as_str().unwrap().to_owned()
}
