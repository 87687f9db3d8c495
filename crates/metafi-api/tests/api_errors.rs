//! The REST edge's error contract: Nakama's body shape and status for every kind of bad request,
//! through the router without a socket (moved here from a server-booting test).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::http::Request;
use metafi_api::HttpConfig;
use support::{Reply, SERVER_KEY, TestApi, api_config, call};

/// The router as the server serves it, with a 1,024-byte body limit.
async fn api() -> TestApi {
    TestApi::start(api_config(HttpConfig::default()), None).await
}

/// A request as an HTTP client sends it: `Content-Length` and `Content-Type` with a body.
fn request(method: &str, path: &str, auth: Option<&str>, json: Option<&str>) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    if let Some(auth) = auth {
        builder = builder.header("authorization", auth);
    }
    match json {
        Some(body) => builder
            .header("content-type", "application/json")
            .header("content-length", body.len())
            .body(Body::from(body.to_owned()))
            .unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    }
}

/// Asserts Nakama's error shape with the given HTTP status and gRPC code.
#[track_caller]
fn assert_error(reply: &Reply, status: u16, code: i64) {
    assert_eq!(reply.status, status, "body: {}", reply.body);
    assert_eq!(reply.body["code"], code, "body: {}", reply.body);
    assert!(reply.body["message"].is_string(), "body: {}", reply.body);
    assert_eq!(reply.body["error"], reply.body["message"]);
}

/// Signs up a new device account: its session and refresh tokens.
async fn new_session(api: &TestApi) -> (String, String) {
    let body = format!(r#"{{"id":"device-{}"}}"#, uuid::Uuid::new_v4());
    let reply = call(
        &api.router(),
        request(
            "POST",
            "/v2/account/authenticate/device?create=true",
            Some(SERVER_KEY),
            Some(&body),
        ),
    )
    .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    (
        reply.body["token"].as_str().unwrap().to_owned(),
        reply.body["refresh_token"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn healthcheck_answers_empty_object() {
    let api = api().await;
    let reply = call(&api.router(), request("GET", "/healthcheck", None, None)).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, serde_json::json!({}));
    api.close().await;
}

#[tokio::test]
async fn missing_and_wrong_server_keys_are_unauthenticated() {
    let api = api().await;
    let body = r#"{"id":"device-0123456789"}"#;
    let path = "/v2/account/authenticate/device";
    let missing = call(&api.router(), request("POST", path, None, Some(body))).await;
    assert_error(&missing, 401, 16);
    assert_eq!(missing.body["message"], "Server key required");
    // `Basic base64(nope:)`.
    let wrong = call(
        &api.router(),
        request("POST", path, Some("Basic bm9wZTo="), Some(body)),
    )
    .await;
    assert_error(&wrong, 401, 16);
    assert_eq!(wrong.body["message"], "Server key invalid");
    api.close().await;
}

#[tokio::test]
async fn malformed_json_is_invalid_argument() {
    let api = api().await;
    for body in ["{", "[1,2]", r#"{"id": 12}"#, "\u{0}"] {
        let reply = call(
            &api.router(),
            request(
                "POST",
                "/v2/account/authenticate/device",
                Some(SERVER_KEY),
                Some(body),
            ),
        )
        .await;
        assert_error(&reply, 400, 3);
    }
    api.close().await;
}

#[tokio::test]
async fn oversize_body_is_refused_with_413_and_the_limit_named() {
    let api = api().await;
    let body = serde_json::json!({"id": "x".repeat(4096)}).to_string();
    let path = "/v2/account/authenticate/device";
    // As a client sends it (its length declared), and with no length: the body is read and
    // found too long.
    let declared = request("POST", path, Some(SERVER_KEY), Some(&body));
    let undeclared = Request::builder()
        .method("POST")
        .uri(path)
        .header("authorization", SERVER_KEY)
        .header("content-type", "application/json")
        .body(Body::new(Chunked(Some(Bytes::from(body.clone())))))
        .unwrap();
    for request in [declared, undeclared] {
        let reply = call(&api.router(), request).await;
        assert_error(&reply, 413, 3);
        assert!(
            reply.body["message"]
                .as_str()
                .unwrap()
                .contains("max_request_size_bytes"),
            "{}",
            reply.body
        );
    }
    api.close().await;
}

#[tokio::test]
async fn unknown_route_is_404_and_wrong_method_is_405_not_nakamas_501() {
    let api = api().await;
    let unknown = call(&api.router(), request("GET", "/v2/nope", None, None)).await;
    assert_error(&unknown, 404, 5);
    let wrong = call(
        &api.router(),
        request("GET", "/v2/account/authenticate/device", None, None),
    )
    .await;
    // Nakama answers 501; a method the route lacks is the client's mistake (README).
    assert_error(&wrong, 405, 12);
    api.close().await;
}

#[tokio::test]
async fn bad_create_parameter_is_invalid_argument() {
    let api = api().await;
    let reply = call(
        &api.router(),
        request(
            "POST",
            "/v2/account/authenticate/device?create=maybe",
            Some(SERVER_KEY),
            Some(r#"{"id":"device-0123456789"}"#),
        ),
    )
    .await;
    assert_error(&reply, 400, 3);
    api.close().await;
}

#[tokio::test]
async fn bearer_token_is_required_and_checked() {
    let api = api().await;
    let missing = call(&api.router(), request("GET", "/v2/account", None, None)).await;
    assert_error(&missing, 401, 16);
    let garbage = call(
        &api.router(),
        request("GET", "/v2/account", Some("Bearer garbage"), None),
    )
    .await;
    assert_error(&garbage, 401, 16);
    // A server key is not a session.
    let basic = call(
        &api.router(),
        request("GET", "/v2/account", Some(SERVER_KEY), None),
    )
    .await;
    assert_error(&basic, 401, 16);
    api.close().await;
}

#[tokio::test]
async fn refresh_token_cannot_be_used_as_a_session_token() {
    let api = api().await;
    let (_token, refresh) = new_session(&api).await;
    let reply = call(
        &api.router(),
        request(
            "GET",
            "/v2/account",
            Some(&format!("Bearer {refresh}")),
            None,
        ),
    )
    .await;
    assert_error(&reply, 401, 16);
    api.close().await;
}

#[tokio::test]
async fn empty_account_update_is_invalid_argument() {
    let api = api().await;
    let (token, _) = new_session(&api).await;
    let bearer = format!("Bearer {token}");
    let reply = call(
        &api.router(),
        request("PUT", "/v2/account", Some(&bearer), Some("{}")),
    )
    .await;
    assert_error(&reply, 400, 3);
    // A tab, not a space: Nakama accepts plain spaces in usernames.
    let bad_name = serde_json::json!({"username": "has\ttab"}).to_string();
    let bad_name = call(
        &api.router(),
        request("PUT", "/v2/account", Some(&bearer), Some(&bad_name)),
    )
    .await;
    assert_error(&bad_name, 400, 3);
    api.close().await;
}

#[tokio::test]
async fn empty_body_reads_as_empty_object() {
    let api = api().await;
    let reply = call(
        &api.router(),
        request(
            "POST",
            "/v2/account/authenticate/device",
            Some(SERVER_KEY),
            None,
        ),
    )
    .await;
    assert_error(&reply, 400, 3);
    assert_eq!(reply.body["message"], "Device ID is required.");
    api.close().await;
}

/// A body of unknown length (no size hint): one chunk, as a chunked upload sends it.
struct Chunked(Option<Bytes>);

impl HttpBody for Chunked {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.take().map(|data| Ok(http_body::Frame::data(data))))
    }
}
