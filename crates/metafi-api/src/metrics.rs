//! Per-route request counts and latency histograms: `metafi_http_requests_total{method,route,
//! status}` and `metafi_http_request_duration_seconds{method,route}`, labelled by the route
//! template (never the raw path, which would explode label cardinality).
//!
//! The `counter!`/`histogram!` macros build a labelled key and look it up in the recorder's
//! registry on every call: two lookups (and a label vector) per request. [`RequestMetrics`]
//! resolves each series' handle once and keeps it, so a request costs one lookup by its route
//! in a small map.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use axum::http::{Method, StatusCode};

/// At most this many series are kept as handles (routes × methods × statuses). The API has
/// about 150 route templates and answers few statuses per route, so this is never reached in
/// practice; past it, a new series is recorded through the macros, as before, never dropped.
const MAX_SERIES: usize = 2048;

/// The request metrics' handles, per route template.
#[derive(Debug, Default)]
pub(crate) struct RequestMetrics {
    routes: RwLock<HashMap<Box<str>, RouteSeries>>,
}

/// One route's series: few methods and statuses each, so a short list is searched.
#[derive(Debug, Default)]
struct RouteSeries {
    durations: Vec<(&'static str, metrics::Histogram)>,
    counts: Vec<(&'static str, StatusCode, metrics::Counter)>,
}

impl RouteSeries {
    fn find(
        &self,
        method: &'static str,
        status: StatusCode,
    ) -> Option<(&metrics::Counter, &metrics::Histogram)> {
        let count = self
            .counts
            .iter()
            .find(|(m, s, _)| *m == method && *s == status)?;
        let duration = self.durations.iter().find(|(m, _)| *m == method)?;
        Some((&count.2, &duration.1))
    }
}

impl RequestMetrics {
    /// Counts one answered request of `method` on `route` (a template, or `unmatched`) that
    /// took `seconds`.
    pub(crate) fn observe(&self, method: &Method, route: &str, status: StatusCode, seconds: f64) {
        let method = method_label(method);
        {
            let routes = self.routes.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((count, duration)) = routes.get(route).and_then(|s| s.find(method, status))
            {
                count.increment(1);
                duration.record(seconds);
                return;
            }
        }
        let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        let held: usize = routes
            .values()
            .map(|s| s.counts.len() + s.durations.len())
            .sum();
        if held + 2 > MAX_SERIES
            && routes
                .get(route)
                .and_then(|s| s.find(method, status))
                .is_none()
        {
            counter(method, route, status).increment(1);
            histogram(method, route).record(seconds);
            return;
        }
        let series = routes.entry(route.into()).or_default();
        if !series.durations.iter().any(|(m, _)| *m == method) {
            series.durations.push((method, histogram(method, route)));
        }
        if !series
            .counts
            .iter()
            .any(|(m, s, _)| *m == method && *s == status)
        {
            series
                .counts
                .push((method, status, counter(method, route, status)));
        }
        // Both are there now (found or just added).
        if let Some((count, duration)) = series.find(method, status) {
            count.increment(1);
            duration.record(seconds);
        }
    }
}

fn counter(method: &'static str, route: &str, status: StatusCode) -> metrics::Counter {
    metrics::counter!(
        "metafi_http_requests_total",
        "method" => method,
        "route" => route.to_owned(),
        "status" => status_label(status),
    )
}

fn histogram(method: &'static str, route: &str) -> metrics::Histogram {
    metrics::histogram!(
        "metafi_http_request_duration_seconds",
        "method" => method,
        "route" => route.to_owned(),
    )
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        // Clients can send any token as a method: one shared label keeps the series bounded.
        _ => "OTHER",
    }
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
        assert_eq!(method_label(&Method::POST), "POST");
        assert_eq!(
            method_label(&Method::from_bytes(b"PURGE").unwrap()),
            "OTHER"
        );
        assert_eq!(&*status_label(StatusCode::NOT_FOUND), "404");
        assert_eq!(&*status_label(StatusCode::IM_A_TEAPOT), "418");
    }
}
