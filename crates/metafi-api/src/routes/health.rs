//! `GET /healthcheck`: answers `{}` while the server accepts requests (load balancer probe).

use axum::Json;

pub(super) async fn healthcheck() -> Json<serde_json::Value> {
    Json(serde_json::json!({}))
}
