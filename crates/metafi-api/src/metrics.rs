//! Per-route request counts and latency histograms.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// Records `metafi_http_requests_total` and `metafi_http_request_duration_seconds`, labelled by
/// the route template (never the raw path, which would explode label cardinality).
///
/// Labels are built without copying per request where we can: methods and common statuses are
/// static strings, and the route template is one shared string for both metrics.
pub(crate) async fn record(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(request.method());
    let route: Arc<str> = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| Arc::from("unmatched"), |p| Arc::from(p.as_str()));
    let response = next.run(request).await;
    let status = status_label(response.status());
    metrics::counter!("metafi_http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("metafi_http_request_duration_seconds", "method" => method, "route" => route)
        .record(started.elapsed().as_secs_f64());
    response
}

fn method_label(method: &Method) -> metrics::SharedString {
    let known = match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        // Clients can send any token as a method: one shared label keeps the series bounded.
        _ => "OTHER",
    };
    metrics::SharedString::const_str(known)
}

fn status_label(status: StatusCode) -> metrics::SharedString {
    let known = match status.as_u16() {
        200 => "200",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        405 => "405",
        408 => "408",
        409 => "409",
        413 => "413",
        429 => "429",
        500 => "500",
        501 => "501",
        503 => "503",
        504 => "504",
        other => return metrics::SharedString::from(other.to_string()),
    };
    metrics::SharedString::const_str(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_match_the_request() {
        assert_eq!(&*method_label(&Method::POST), "POST");
        assert_eq!(
            &*method_label(&Method::from_bytes(b"PURGE").unwrap()),
            "OTHER"
        );
        assert_eq!(&*status_label(StatusCode::NOT_FOUND), "404");
        assert_eq!(&*status_label(StatusCode::IM_A_TEAPOT), "418");
    }
}
