//! The HTTP edge without a socket: CORS on every route, 405 for wrong methods, 413 for a
//! declared oversize body before it is read, 408 for a body that does not arrive, and the
//! sign-in throttle.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use metafi_api::{CorsConfig, HttpConfig};
use metafi_core::SignInThrottleConfig;
use support::{SERVER_KEY, TestApi, api_config, call};

/// A body that never sends a byte: a client that declared a length and went quiet.
struct Silent;

impl HttpBody for Silent {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        Poll::Pending
    }
}

/// Hang guard: generous, never a timing assertion.
async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the server answered")
}

fn preflight(path: &str, method: &str) -> Request<Body> {
    Request::builder()
        .method("OPTIONS")
        .uri(path)
        .header("origin", "http://game.example")
        .header("access-control-request-method", method)
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn browser_preflight_was_refused_now_every_route_answers_it() {
    let api = TestApi::start(api_config(HttpConfig::default()), None).await;
    // A stand-in for the realtime socket's /ws, merged the way the server merges it.
    let ws = Router::new().route("/ws", get(|| async { StatusCode::UNAUTHORIZED }));
    let router = metafi_api::router_with(api.state.clone(), ws);
    for (path, method) in [
        ("/v2/account/authenticate/device", "POST"),
        ("/v2/account", "PUT"),
        ("/v2/rpc/echo", "POST"),
        ("/healthcheck", "GET"),
        ("/ws", "GET"),
        ("/v2/no-such-route", "GET"),
    ] {
        let reply = call(&router, preflight(path, method)).await;
        assert_eq!(reply.status, 200, "preflight of {path}");
        assert_eq!(
            reply.header("access-control-allow-origin"),
            Some("*"),
            "{path}"
        );
        let methods = reply.header("access-control-allow-methods").unwrap();
        assert!(methods.contains(method), "{path}: {methods}");
        let headers = reply
            .header("access-control-allow-headers")
            .unwrap()
            .to_ascii_lowercase();
        for needed in ["authorization", "content-type", "user-agent"] {
            assert!(headers.contains(needed), "{path}: {headers}");
        }
        assert_eq!(reply.header("access-control-max-age"), Some("600"));
    }
    api.close().await;
}

#[tokio::test]
async fn answers_and_errors_carry_the_allow_origin_header() {
    let api = TestApi::start(api_config(HttpConfig::default()), None).await;
    let ws = Router::new().route("/ws", get(|| async { StatusCode::UNAUTHORIZED }));
    let router = metafi_api::router_with(api.state.clone(), ws);
    for (method, path, status) in [
        ("GET", "/healthcheck", 200),
        ("GET", "/v2/account", 401),
        ("GET", "/v2/nope", 404),
        ("GET", "/ws", 401),
        ("PATCH", "/v2/account", 405),
    ] {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("origin", "http://game.example")
            .body(Body::empty())
            .unwrap();
        let reply = call(&router, request).await;
        assert_eq!(reply.status, status, "{method} {path}");
        assert_eq!(
            reply.header("access-control-allow-origin"),
            Some("*"),
            "{method} {path}"
        );
    }
    api.close().await;
}

#[tokio::test]
async fn configured_origins_are_the_only_ones_allowed() {
    let http = HttpConfig {
        cors: CorsConfig {
            allowed_origins: Some(vec!["https://game.example".parse().unwrap()]),
            ..CorsConfig::default()
        },
        ..HttpConfig::default()
    };
    let api = TestApi::start(api_config(http), None).await;
    let router = api.router();
    let mut allowed = preflight("/v2/account", "GET");
    allowed
        .headers_mut()
        .insert("origin", "https://game.example".parse().unwrap());
    let reply = call(&router, allowed).await;
    assert_eq!(
        reply.header("access-control-allow-origin"),
        Some("https://game.example")
    );
    let reply = call(&router, preflight("/v2/account", "GET")).await;
    assert_eq!(reply.header("access-control-allow-origin"), None);
    api.close().await;
}

#[tokio::test]
async fn wrong_method_was_501_now_405_with_allow_and_nakamas_body() {
    let api = TestApi::start(api_config(HttpConfig::default()), None).await;
    let router = api.router();
    for (method, path, allow) in [
        ("GET", "/v2/account/authenticate/device", "POST"),
        ("PATCH", "/v2/account", "GET"),
        ("PURGE", "/v2/account", "PUT"),
        ("DELETE", "/healthcheck", "GET"),
    ] {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        let reply = call(&router, request).await;
        assert_eq!(reply.status, 405, "{method} {path}");
        assert!(
            reply.header("allow").unwrap().contains(allow),
            "{method} {path}: {:?}",
            reply.header("allow")
        );
        assert_eq!(reply.body["code"], 12);
        assert_eq!(reply.body["message"], "Method Not Allowed");
        assert_eq!(reply.body["error"], "Method Not Allowed");
    }
    api.close().await;
}

#[tokio::test]
async fn declared_oversize_body_is_refused_before_it_is_read() {
    let api = TestApi::start(api_config(HttpConfig::default()), None).await;
    let router = api.router();
    // The body never arrives: answering proves the server did not wait for it.
    let request = Request::builder()
        .method("POST")
        .uri("/v2/account/authenticate/device")
        .header("authorization", SERVER_KEY)
        .header("content-length", "1000000")
        .body(Body::new(Silent))
        .unwrap();
    let reply = bounded(call(&router, request)).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.body["code"], 3);
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("max_request_size_bytes")
    );
    assert_eq!(reply.header("connection"), Some("close"));
    api.close().await;
}

#[tokio::test]
async fn body_shorter_than_its_length_was_held_forever_now_408() {
    let http = HttpConfig {
        body_read_timeout: Duration::from_millis(200),
        ..HttpConfig::default()
    };
    let api = TestApi::start(api_config(http), None).await;
    let router = api.router();
    for path in [
        "/v2/account/authenticate/device",
        "/v2/rpc/echo?http_key=defaulthttpkey",
    ] {
        let request = Request::builder()
            .method("POST")
            .uri(path)
            .header("authorization", SERVER_KEY)
            .header("content-length", "100")
            .body(Body::new(Silent))
            .unwrap();
        let reply = bounded(call(&router, request)).await;
        assert_eq!(reply.status, 408, "{path}");
        assert_eq!(reply.body["code"], 4, "{path}");
        assert!(
            reply.body["message"]
                .as_str()
                .unwrap()
                .contains("http.body_read_timeout_ms"),
            "{path}"
        );
    }
    api.close().await;
}

fn sign_in(path: &str, body: serde_json::Value, from: Option<&str>) -> Request<Body> {
    let mut request = Request::builder()
        .method("POST")
        .uri(path)
        .header("authorization", SERVER_KEY)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    if let Some(ip) = from {
        let addr: SocketAddr = format!("{ip}:40000").parse().unwrap();
        request.extensions_mut().insert(ConnectInfo(addr));
    }
    request
}

fn throttle(account: u32, address: u32) -> Option<SignInThrottleConfig> {
    Some(SignInThrottleConfig {
        max_failures_per_account: account,
        max_failures_per_address: address,
        window: Duration::from_secs(300),
        max_entries: 1000,
    })
}

const EMAIL: &str = "/v2/account/authenticate/email";

#[tokio::test]
async fn password_guessing_met_no_throttle_now_the_account_is_refused() {
    let api = TestApi::start(api_config(HttpConfig::default()), throttle(3, 0)).await;
    let router = api.router();
    let good = serde_json::json!({"email": "victim@example.com", "password": "correct-horse"});
    let wrong = serde_json::json!({"email": "victim@example.com", "password": "wrong-guess"});
    assert_eq!(
        call(&router, sign_in(EMAIL, good.clone(), None))
            .await
            .status,
        200
    );
    for _ in 0..3 {
        let reply = call(&router, sign_in(EMAIL, wrong.clone(), None)).await;
        assert_eq!(reply.status, 401);
    }
    // Past the limit even the right password is refused until the window ends.
    for body in [&wrong, &good] {
        let reply = call(&router, sign_in(EMAIL, body.clone(), None)).await;
        assert_eq!(reply.status, 429);
        assert_eq!(reply.body["code"], 8);
        let message = reply.body["message"].as_str().unwrap();
        assert!(message.contains("retry in"), "{message}");
    }
    // Another account is not affected.
    let other = serde_json::json!({"email": "other@example.com", "password": "another-pass"});
    assert_eq!(call(&router, sign_in(EMAIL, other, None)).await.status, 200);
    api.close().await;
}

#[tokio::test]
async fn successful_sign_in_resets_the_account_count() {
    let api = TestApi::start(api_config(HttpConfig::default()), throttle(3, 0)).await;
    let router = api.router();
    let good = serde_json::json!({"email": "user@example.com", "password": "correct-horse"});
    let wrong = serde_json::json!({"email": "user@example.com", "password": "wrong-guess"});
    assert_eq!(
        call(&router, sign_in(EMAIL, good.clone(), None))
            .await
            .status,
        200
    );
    for _ in 0..3 {
        for _ in 0..2 {
            assert_eq!(
                call(&router, sign_in(EMAIL, wrong.clone(), None))
                    .await
                    .status,
                401
            );
        }
        assert_eq!(
            call(&router, sign_in(EMAIL, good.clone(), None))
                .await
                .status,
            200
        );
    }
    api.close().await;
}

#[tokio::test]
async fn unknown_device_guessing_with_create_false_is_throttled() {
    let api = TestApi::start(api_config(HttpConfig::default()), throttle(2, 0)).await;
    let router = api.router();
    let path = "/v2/account/authenticate/device?create=false";
    let guess = serde_json::json!({"id": "guessed-device-0001"});
    for _ in 0..2 {
        assert_eq!(
            call(&router, sign_in(path, guess.clone(), None))
                .await
                .status,
            404
        );
    }
    let reply = call(&router, sign_in(path, guess.clone(), None)).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.body["code"], 8);
    // Creating devices never fails on a secret, so it is never throttled.
    let create = "/v2/account/authenticate/device";
    for i in 0..5 {
        let body = serde_json::json!({"id": format!("new-device-000{i}")});
        assert_eq!(call(&router, sign_in(create, body, None)).await.status, 200);
    }
    api.close().await;
}

#[tokio::test]
async fn one_address_guessing_many_accounts_is_refused() {
    let api = TestApi::start(api_config(HttpConfig::default()), throttle(0, 4)).await;
    let router = api.router();
    let custom = "/v2/account/authenticate/custom?create=false";
    for i in 0..4 {
        let body = serde_json::json!({"id": format!("guess-custom-{i:04}")});
        let reply = call(&router, sign_in(custom, body, Some("203.0.113.7"))).await;
        assert_eq!(reply.status, 404);
    }
    let body = serde_json::json!({"id": "guess-custom-9999"});
    let reply = call(&router, sign_in(custom, body.clone(), Some("203.0.113.7"))).await;
    assert_eq!(reply.status, 429);
    assert!(
        reply.body["message"]
            .as_str()
            .unwrap()
            .contains("from this address")
    );
    // Another address is not.
    let reply = call(&router, sign_in(custom, body, Some("203.0.113.8"))).await;
    assert_eq!(reply.status, 404);
    api.close().await;
}

/// A native function that panics on the id `boom` and echoes any other.
#[derive(Debug)]
struct PanicsOnBoom;

#[async_trait::async_trait]
impl metafi_core::RpcDispatch for PanicsOnBoom {
    async fn call(
        &self,
        id: &str,
        _ctx: metafi_core::RpcContext,
        payload: String,
    ) -> Result<String, metafi_core::CoreError> {
        assert_ne!(id, "boom", "the handler panics");
        Ok(payload)
    }
}

#[tokio::test]
async fn a_panicking_handler_answers_500_with_cors_and_the_next_call_is_served() {
    let api = TestApi::start(api_config(HttpConfig::default()), None).await;
    let mut state = api.state.clone();
    state.services_mut().rpc = std::sync::Arc::new(PanicsOnBoom);
    let router = metafi_api::router(state);
    let rpc = |id: &str| {
        Request::builder()
            .method("POST")
            .uri(format!("/v2/rpc/{id}?http_key=defaulthttpkey"))
            .header("origin", "http://game.example")
            .body(Body::from(r#""{}""#))
            .unwrap()
    };
    let reply = call(&router, rpc("boom")).await;
    assert_eq!(reply.status, 500);
    assert_eq!(
        reply.body,
        serde_json::json!({"error": "Internal server error.", "code": 13, "message": "Internal server error."})
    );
    assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
    assert!(reply.header("vary").is_some());
    let reply = call(&router, rpc("echo")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, serde_json::json!({"payload": "{}"}));
    api.close().await;
}
