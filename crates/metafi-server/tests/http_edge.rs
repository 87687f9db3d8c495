//! The HTTP edge of the whole server: the realtime socket's `/ws` shares the REST edge's CORS,
//! and an upgraded WebSocket is not cut by the HTTP idle deadline.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_proto::realtime::{Message, Ping};
use metafi_testkit::{Http, TestNode, assert_error};
use metafi_testkit::{Socket, user};

#[tokio::test]
async fn websocket_upgrade_answers_preflight_and_carries_cors_headers() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |_| {}).await;
    let client = reqwest::Client::new();
    let preflight = client
        .request(reqwest::Method::OPTIONS, format!("{}/ws", server.base))
        .header("origin", "http://game.example")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 200);
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "*",
        "{:?}",
        preflight.headers()
    );
    let refused = client
        .get(format!("{}/ws", server.base))
        .header("origin", "http://game.example")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["access-control-allow-origin"], "*");
    server.stop().await;
}

#[tokio::test]
async fn upgraded_websocket_is_not_cut_by_the_http_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.http.idle_timeout_ms = 100;
        raw.http.header_read_timeout_ms = 100;
        // No pings while we wait: only the HTTP deadlines could close the socket.
        raw.socket.ping_period_ms = 60_000;
        raw.socket.pong_wait_ms = 120_000;
    })
    .await;
    let http = Http::new(&server.base);
    let alice = user(&http).await;
    let mut socket = Socket::connect(&server.base, &alice.token, "").await;
    socket
        .assert_no_event(Duration::from_millis(1000), |_| true)
        .await;
    let answer = socket.request(Message::Ping(Ping {})).await;
    assert!(
        matches!(answer.message, Some(Message::Pong(_))),
        "still open"
    );
    // REST on the same server still works with those short deadlines.
    let reply = http.send(http.get("/healthcheck")).await;
    assert_eq!(reply.status, 200);
    assert_error(&http.send(http.put("/v2/rpc/x")).await, 405, 12);
    server.stop().await;
}
