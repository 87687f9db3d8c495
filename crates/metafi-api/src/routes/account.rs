//! `GET /v2/account` and `PUT /v2/account`.

use axum::Json;
use axum::extract::State;
use metafi_proto::api::{Account, UpdateAccountRequest};

use crate::body::JsonBody;
use crate::{ApiError, ApiState, SessionAuth};

pub(super) async fn get(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
) -> Result<Json<Account>, ApiError> {
    let mut account = state.accounts.account(claims.user_id).await?;
    account.user.online = state.users.is_online(claims.user_id);
    Ok(Json(account))
}

pub(super) async fn update(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    JsonBody(body): JsonBody<UpdateAccountRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.accounts.update_account(claims.user_id, body).await?;
    Ok(Json(serde_json::json!({})))
}
