//! Store notifications (Nakama's console endpoints, `console.go`): App Store Server
//! Notifications v2 at `/v2/console/apple/notifications/{id}` and the older
//! `/v2/console/apple/subscriptions/{id}`, served when `iap.apple.notifications_endpoint_id`
//! is set and `{id}` is it; Google Play real-time developer notifications (Pub/Sub push) at
//! `/v2/console/google/notifications/{id}` and the older `/v2/console/google/subscriptions/{id}`
//! when `iap.google.notifications_endpoint_id` is set. No session: the signed payload (Apple)
//! or the store lookup of the purchase token (Google) is the proof. Answers are empty, 200 when
//! handled (or deliberately ignored) and 500 when the store should send it again.
//!
//! Served on the console listener (`metafi-console` merges [`crate::store_notifications`]),
//! as Nakama serves them on its console port; the client API's port does not answer them.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::any;

use crate::ApiState;

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/v2/console/apple/notifications/{id}", any(apple))
        .route("/v2/console/apple/subscriptions/{id}", any(apple))
        .route("/v2/console/google/notifications/{id}", any(google))
        .route("/v2/console/google/subscriptions/{id}", any(google))
}

async fn apple(State(state): State<ApiState>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let configured = &state.purchases.config().apple.notifications_endpoint_id;
    if configured.is_empty() || *configured != id {
        return StatusCode::NOT_FOUND;
    }
    if state.purchases.serve_apple_notification(&body).await {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    }
}

async fn google(State(state): State<ApiState>, Path(id): Path<String>, body: Bytes) -> StatusCode {
    let configured = &state.purchases.config().google.notifications_endpoint_id;
    if configured.is_empty() || *configured != id {
        return StatusCode::NOT_FOUND;
    }
    if state.purchases.serve_google_notification(&body).await {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    }
}
