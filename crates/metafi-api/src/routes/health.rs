//! `GET /healthcheck`: answers `{}` while the server accepts requests (load balancer probe), as
//! Nakama does. MetaFi adds what a fleet needs: a node that would refuse a new match (the
//! latency objective, `docs/MATCHES.md`) still answers 200 — it serves its players — with
//! `{"full": "<why>"}`; a draining node answers 503 `{"draining": true}` so load balancers stop
//! sending it players.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::ApiState;

pub(super) async fn healthcheck(
    State(state): State<ApiState>,
) -> (StatusCode, Json<serde_json::Value>) {
    if state.matches.is_draining() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({ "draining": true })),
        );
    }
    let load = state.matches.load();
    match load.full {
        Some(reason) => (StatusCode::OK, Json(serde_json::json!({ "full": reason }))),
        None => (StatusCode::OK, Json(serde_json::json!({}))),
    }
}
