//! The REST half of MetaFi's Nakama-compatible client API: `/v2/...` routes and `/healthcheck`.
//!
//! Handlers are thin: they parse and authenticate the request, call a `metafi-core` service and
//! render its answer. Every error leaves through [`ApiError`], the one place where service
//! errors, body rejections and routing failures become Nakama's `{"error","message","code"}`
//! body with the matching HTTP status.
//!
//! Must not depend on: a storage backend, the realtime socket, the script engines. Key types:
//! [`ApiState`], [`router`], [`ApiError`].

mod auth;
mod body;
mod error;
mod metrics;
mod routes;
mod state;

pub use auth::{ServerKeyAuth, SessionAuth};
pub use error::ApiError;
pub use state::{ApiConfig, ApiState};

use axum::Router;

/// The complete REST router with its middleware: request metrics, a panic guard and Nakama's
/// routing errors for unknown paths and methods.
pub fn router(state: ApiState) -> Router {
    let body_limit = state.config.max_request_size_bytes;
    routes::routes()
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(axum::middleware::from_fn(metrics::record))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            error::panic_response,
        ))
        .with_state(state)
}
