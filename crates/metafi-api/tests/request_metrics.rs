//! `metafi_http_requests_total` and `metafi_http_request_duration_seconds`, as `/metrics` shows
//! them: one series per method, route template and status, each request counted once, whether
//! its answer came from a handler, an extractor, the request limits or the fallback.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use metrics_exporter_prometheus::PrometheusBuilder;
use support::Api;

/// The value of the series whose line starts with `series` (name and labels as rendered).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

// A current-thread runtime: the local recorder is the one of the thread that runs the router.
#[tokio::test(flavor = "current_thread")]
async fn requests_are_counted_per_route_method_and_status() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    let _recorder = metrics::set_default_local_recorder(&recorder);
    let api = Api::new().await;
    let player = api.sign_up("").await;
    for _ in 0..3 {
        let (status, _) = api.as_user(&player, Method::GET, "/v2/account", None).await;
        assert_eq!(status, StatusCode::OK);
    }
    for _ in 0..2 {
        let (status, _) = api.call(Method::GET, "/v2/account", None, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (status, _) = api.call(Method::GET, "/v2/nowhere", None, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let oversize = Request::builder()
        .method(Method::POST)
        .uri("/v2/rpc/echo")
        .header("content-length", "999999999")
        .body(Body::empty())
        .unwrap();
    let reply = support::call(&api.router, oversize).await;
    assert_eq!(reply.status, 413);

    let text = handle.render();
    let count = |labels: &str| value(&text, &format!("metafi_http_requests_total{{{labels}}}"));
    assert_eq!(
        count(r#"method="POST",route="/v2/account/authenticate/device",status="200""#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        count(r#"method="GET",route="/v2/account",status="200""#),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        count(r#"method="GET",route="/v2/account",status="401""#),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        count(r#"method="GET",route="unmatched",status="404""#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        count(r#"method="POST",route="/v2/rpc/{id}",status="413""#),
        Some(1.0),
        "{text}"
    );
    let timed = |labels: &str| {
        value(
            &text,
            &format!("metafi_http_request_duration_seconds_count{{{labels}}}"),
        )
    };
    assert_eq!(
        timed(r#"method="GET",route="/v2/account""#),
        Some(5.0),
        "{text}"
    );
    assert_eq!(
        timed(r#"method="POST",route="/v2/rpc/{id}""#),
        Some(1.0),
        "{text}"
    );
}
