//! Accounts and sessions end to end over HTTP: races, logout across restarts, shutdown,
//! metrics (logout and refresh rules without a socket: `metafi-api` `tests/sessions.rs`).

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
