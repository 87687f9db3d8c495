//! `POST /v2/event`: a client reports an event (Nakama's `Event`). It is marked `external`
//! and queued for the event processors server code registered (`metafi_core::Events`); the
//! answer never waits for them, and an event that finds the queue full is dropped and counted.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use metafi_core::Hook;
use metafi_proto::api::Event;

use crate::body::JsonBody;
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new().route("/v2/event", post(event))
}

async fn event(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(event): JsonBody<Event>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let hook = Hook::Event;
    let ctx = || hooks::signed_in(&claims, &client);
    let mut event = hooks::before(&state, hook, ctx, event).await?;
    event.external = true;
    let kept = hooks::keep_for_after(&state, hook, &event);
    state.events.submit(ctx(), event);
    hooks::after::<()>(&state, hook, ctx, None, kept).await;
    Ok(Json(serde_json::json!({})))
}
