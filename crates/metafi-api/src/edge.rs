//! The one middleware every request meets after CORS and the panic guard: it times the request
//! and counts it per route ([`RequestMetrics`]) around the request limits
//! ([`request_limits::limit`]) and the route.
//!
//! One `from_fn` layer instead of one per concern: each layer boxes its inner service and its
//! future per request, and the futures are moved through every layer (docs/HTTP.md, "The REST
//! hot path").

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::ApiConfig;
use crate::metrics::RequestMetrics;
use crate::request_limits;

/// What the middleware needs: the limits and the metric handles.
#[derive(Debug)]
pub(crate) struct Edge {
    pub(crate) config: Arc<ApiConfig>,
    pub(crate) metrics: RequestMetrics,
}

/// Limits, then the route; the answer (a 413 from the limits too) is counted and timed.
pub(crate) async fn guard(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    // The template's shared string (an `Arc` clone), not the raw path.
    let route = request.extensions().get::<MatchedPath>().cloned();
    let response = match request_limits::limit(&edge.config, request) {
        Ok(request) => next.run(request).await,
        Err(refused) => refused.into_response(),
    };
    edge.metrics.observe(
        &method,
        route.as_ref().map_or("unmatched", MatchedPath::as_str),
        response.status(),
        started.elapsed().as_secs_f64(),
    );
    response
}
