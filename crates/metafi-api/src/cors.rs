//! CORS for every route of the edge (REST, RPC, `/healthcheck`, the `/ws` upgrade): browsers
//! send a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-*`) before calls with
//! an `Authorization` header or a JSON body, and read no answer that lacks
//! `Access-Control-Allow-Origin`. Nakama allows any origin with the headers `Authorization`,
//! `Content-Type` and `User-Agent` and the methods below; so do our defaults.

use axum::http::Method;
use tower_http::cors::{AllowOrigin, Any, CorsLayer};

use crate::CorsConfig;

/// The methods a page may use: Nakama's list.
const METHODS: [Method; 5] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::DELETE,
];

/// The layer answering preflights and adding the headers to every other answer (errors too).
pub(crate) fn layer(config: &CorsConfig) -> CorsLayer {
    let mut layer = CorsLayer::new()
        .allow_methods(METHODS)
        .allow_headers(config.allowed_headers.clone());
    if !config.max_age.is_zero() {
        layer = layer.max_age(config.max_age);
    }
    match &config.allowed_origins {
        None => layer.allow_origin(Any),
        Some(origins) => layer.allow_origin(AllowOrigin::list(origins.clone())),
    }
}
