//! The REST half of MetaFi's Nakama-compatible client API: `/v2/...` routes and `/healthcheck`,
//! and the HTTP edge they share with the realtime socket's `/ws` upgrade: CORS, request limits,
//! and the accept loop with its connection timeouts ([`serve`]; docs/HTTP.md).
//!
//! Handlers are thin: they parse and authenticate the request, call a `metafi-core` service and
//! render its answer. Every error leaves through [`ApiError`], the one place where service
//! errors, body rejections and routing failures become Nakama's `{"error","message","code"}`
//! body with the matching HTTP status.
//!
//! Must not depend on: a storage backend, the realtime socket, the script engines. Key types:
//! [`ApiState`], [`router`], [`ApiError`], [`HttpConfig`], [`serve`].

mod auth;
mod body;
mod client_address;
mod conn_deadline;
mod cors;
mod edge;
mod error;
mod hooks;
mod http_config;
mod metrics;
mod panic_guard;
mod request_limits;
mod routes;
mod serve;
mod state;

pub use auth::{ServerKeyAuth, SessionAuth};
pub use error::ApiError;
pub use http_config::{CorsConfig, HttpConfig};
pub use serve::serve;
pub use state::{ApiConfig, ApiServices, ApiState};

use axum::Router;

/// The complete REST router with its middleware: CORS, request limits, request metrics, a
/// panic guard and Nakama's routing errors for unknown paths and methods.
pub fn router(state: ApiState) -> Router {
    router_with(state, Router::new())
}

/// The App Store and Google Play notification endpoints (`/v2/console/apple/…`,
/// `/v2/console/google/…`). Nakama serves them on its console port, so the console listener
/// merges this router; the client API does not serve them.
pub fn store_notifications(state: ApiState) -> Router {
    routes::store_notification::routes().with_state(state)
}

/// The REST routes and `extra` (the realtime socket's `/ws`) behind the same edge: every route
/// answers CORS preflights, carries the CORS headers (errors too), and meets the same limits.
pub fn router_with(state: ApiState, extra: Router) -> Router {
    let config = state.config.clone();
    // One stack applied once: axum wraps each `layer` call's service around every route in its
    // own boxed `Route`, cloned per request at every level, so four calls cost four boxes, four
    // clones and four boxed futures per request (docs/HTTP.md, "The REST hot path"). Outermost
    // first: CORS, the panic guard, the edge (limits, metrics), axum's body limit.
    let stack = tower::ServiceBuilder::new()
        .layer(cors::layer(&config.http.cors))
        .layer(panic_guard::PanicGuardLayer)
        .layer(edge::EdgeLayer::new(edge::Edge {
            config: config.clone(),
            metrics: metrics::RequestMetrics::default(),
        }))
        .layer(axum::extract::DefaultBodyLimit::max(
            config.max_request_size_bytes,
        ));
    routes::routes()
        .with_state(state)
        .merge(extra)
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(stack)
}
