//! `POST /v2/account/session/refresh` and `POST /v2/session/logout`.

use axum::Json;
use axum::extract::State;
use metafi_proto::api::{Session, SessionLogoutRequest, SessionRefreshRequest};

use crate::body::JsonBody;
use crate::{ApiError, ApiState, ServerKeyAuth, SessionAuth};

pub(super) async fn refresh(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    JsonBody(body): JsonBody<SessionRefreshRequest>,
) -> Result<Json<Session>, ApiError> {
    Ok(Json(state.sessions.refresh(&body.token, body.vars).await?))
}

pub(super) async fn logout(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    JsonBody(body): JsonBody<SessionLogoutRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state
        .sessions
        .logout(&claims, &body.token, &body.refresh_token)
        .await?;
    Ok(Json(serde_json::json!({})))
}
