//! The REST edge's error contract: Nakama's body shape and status for every kind of bad request.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use metafi_testkit::{Http, TestNode, assert_error};

async fn server() -> (TestNode, Http, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.socket.max_request_size_bytes = 1024;
    })
    .await;
    let http = Http::new(&server.base);
    (server, http, dir)
}

#[tokio::test]
async fn healthcheck_answers_empty_object() {
    let (server, http, _dir) = server().await;
    let reply = http.send(http.get("/healthcheck")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, serde_json::json!({}));
    server.stop().await;
}

#[tokio::test]
async fn missing_and_wrong_server_keys_are_unauthenticated() {
    let (server, http, _dir) = server().await;
    let body = serde_json::json!({"id": "device-0123456789"});
    let missing = http
        .send(http.post("/v2/account/authenticate/device").json(&body))
        .await;
    assert_error(&missing, 401, 16);
    assert_eq!(missing.body["message"], "Server key required");
    let wrong = http
        .send(
            http.post("/v2/account/authenticate/device")
                .basic_auth("nope", Some(""))
                .json(&body),
        )
        .await;
    assert_error(&wrong, 401, 16);
    assert_eq!(wrong.body["message"], "Server key invalid");
    server.stop().await;
}

#[tokio::test]
async fn malformed_json_is_invalid_argument() {
    let (server, http, _dir) = server().await;
    for body in ["{", "[1,2]", r#"{"id": 12}"#, "\u{0}"] {
        let reply = http
            .send(
                http.post("/v2/account/authenticate/device")
                    .basic_auth("defaultkey", Some(""))
                    .header("content-type", "application/json")
                    .body(body),
            )
            .await;
        assert_error(&reply, 400, 3);
    }
    server.stop().await;
}

#[tokio::test]
async fn oversize_body_is_refused_with_413_and_the_limit_named() {
    let (server, http, _dir) = server().await;
    let reply = http
        .send(
            http.post("/v2/account/authenticate/device")
                .basic_auth("defaultkey", Some(""))
                .json(&serde_json::json!({"id": "x".repeat(4096)})),
        )
        .await;
    assert_error(&reply, 413, 3);
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("max_request_size_bytes")
    );
    server.stop().await;
}

#[tokio::test]
async fn unknown_route_is_404_and_wrong_method_is_405_not_nakamas_501() {
    let (server, http, _dir) = server().await;
    assert_error(&http.send(http.get("/v2/nope")).await, 404, 5);
    let wrong = http.send(http.get("/v2/account/authenticate/device")).await;
    // Nakama answers 501; a method the route lacks is the client's mistake (README).
    assert_error(&wrong, 405, 12);
    server.stop().await;
}

#[tokio::test]
async fn bad_create_parameter_is_invalid_argument() {
    let (server, http, _dir) = server().await;
    let reply = http
        .send(
            http.post("/v2/account/authenticate/device?create=maybe")
                .basic_auth("defaultkey", Some(""))
                .json(&serde_json::json!({"id": "device-0123456789"})),
        )
        .await;
    assert_error(&reply, 400, 3);
    server.stop().await;
}

#[tokio::test]
async fn bearer_token_is_required_and_checked() {
    let (server, http, _dir) = server().await;
    let missing = http.send(http.get("/v2/account")).await;
    assert_error(&missing, 401, 16);
    let garbage = http
        .send(http.get("/v2/account").bearer_auth("garbage"))
        .await;
    assert_error(&garbage, 401, 16);
    // A server key is not a session.
    let basic = http
        .send(http.get("/v2/account").basic_auth("defaultkey", Some("")))
        .await;
    assert_error(&basic, 401, 16);
    server.stop().await;
}

#[tokio::test]
async fn refresh_token_cannot_be_used_as_a_session_token() {
    let (server, http, _dir) = server().await;
    let (_token, refresh) = http.new_session().await;
    let reply = http
        .send(http.get("/v2/account").bearer_auth(&refresh))
        .await;
    assert_error(&reply, 401, 16);
    server.stop().await;
}

#[tokio::test]
async fn empty_account_update_is_invalid_argument() {
    let (server, http, _dir) = server().await;
    let (token, _) = http.new_session().await;
    let reply = http
        .send(
            http.put("/v2/account")
                .bearer_auth(&token)
                .json(&serde_json::json!({})),
        )
        .await;
    assert_error(&reply, 400, 3);
    let bad_name = http
        .send(
            http.put("/v2/account")
                .bearer_auth(&token)
                // A tab, not a space: Nakama accepts plain spaces in usernames.
                .json(&serde_json::json!({"username": "has\ttab"})),
        )
        .await;
    assert_error(&bad_name, 400, 3);
    server.stop().await;
}

#[tokio::test]
async fn empty_body_reads_as_empty_object() {
    let (server, http, _dir) = server().await;
    let reply = http
        .send(
            http.post("/v2/account/authenticate/device")
                .basic_auth("defaultkey", Some("")),
        )
        .await;
    assert_error(&reply, 400, 3);
    assert_eq!(reply.body["message"], "Device ID is required.");
    server.stop().await;
}
